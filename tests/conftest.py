"""Shared fixtures: the project root, how to run Scrapy, and throw-away topic files."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# `.venv/bin/pytest` (unlike `python -m pytest`) does not put the checkout on sys.path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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
