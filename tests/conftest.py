"""Shared fixtures: the project root, how to run Scrapy, and throw-away topic files."""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# `.venv/bin/pytest` (unlike `python -m pytest`) does not put the checkout on sys.path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The DNS guard (tests/dnsguard/focused_dns_guard.py): from here on, a lookup of a name
# that is no IP literal raises, in this process and in every Python process it starts;
# each refusal is appended to this process's log, which fails the test that made it.
sys.path.insert(0, str(ROOT / "tests" / "dnsguard"))
import focused_dns_guard  # noqa: E402

_fd, _DNS_LOG = tempfile.mkstemp(prefix="focused-dns-guard-", suffix=".log")
os.close(_fd)
atexit.register(lambda: Path(_DNS_LOG).unlink(missing_ok=True))
focused_dns_guard.install(_DNS_LOG)

# A crawl always runs on the project's Twisted reactor (TWISTED_REACTOR); so do the spiders,
# crawlers and components that tests build in this process with Scrapy's ``get_crawler``.
# Without one installed, ``get_crawler`` would switch to Scrapy's reactorless mode, which the
# project refuses (focused.config.check_reactor). Installed, not run: nothing here waits on it.
from scrapy.utils.reactor import install_reactor, is_reactor_installed  # noqa: E402

if not is_reactor_installed():
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

#: A minimal valid topic file; tests replace parts of it.
VALID_TOPIC = """\
name = "tiny"
category = "subject.Science.Chemistry"
seeds = ["http://127.0.0.1:1/start"]

[keywords]
chemistry = 3
acid = 4
"""


@pytest.fixture(scope="session")
def project_root() -> Path:
    """The checkout (where scrapy.cfg is): the cwd for ``scrapy`` subprocesses."""
    return ROOT


@pytest.fixture(scope="session")
def venv_scrapy() -> list[str]:
    """Command prefix that runs this venv's Scrapy: ``[python, "-m", "scrapy"]``."""
    return [sys.executable, "-m", "scrapy"]


@pytest.fixture
def tmp_topic(tmp_path: Path) -> Callable[..., Path]:
    """``tmp_topic(text, name="tiny")`` writes ``tmp_path/<name>.toml`` and returns its path."""

    def write(text: str = VALID_TOPIC, name: str = "tiny") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def own_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """jieba's dictionary without the words an earlier test's topic added to this
    process (a topic's keywords inside a word are terms too: a test whose terms must not
    depend on the tests run before it); put back afterwards."""
    from focused.ranking import relevance

    for name, value in [
        ("_holders", 0),
        ("_held", []),
        ("_kept", []),
        ("_dictionary", None),
        ("_inside", frozenset()),
        ("_inside_lengths", ()),
        ("_inner", {}),
    ]:
        monkeypatch.setattr(relevance, name, value)


@pytest.fixture(autouse=True)
def dns_refusals() -> Iterator[focused_dns_guard.Refusals]:
    """Fails the test when the DNS guard refused a lookup during it, in this process or
    in a child (even one whose caller took the refusal for a name that does not
    resolve); a test of the guard takes the refusals it expects (``take()``)."""
    refusals = focused_dns_guard.Refusals(Path(_DNS_LOG))
    yield refusals
    left = refusals.take()
    if left:
        pytest.fail("the DNS guard refused a name lookup during this test:\n" + "\n".join(left))
