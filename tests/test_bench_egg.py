"""The egg that ``make deploy`` sends to scrapyd carries the crawler, not the benchmarks.

The whole checkout (less ``.git``, ``.venv`` and outputs) is copied to a temporary folder
and the egg is built there the way ``make deploy`` builds it: ``scrapyd-deploy`` (which
runs ``setup.py clean -a`` then ``setup.py bdist_egg``), here with ``--build-egg FILE``
so that nothing is uploaded. The build leaves ``build/`` and ``*.egg-info`` in the copy,
never in the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NOT_COPIED = (".git", ".venv", "out", "build", "dist", "*.egg-info", "__pycache__", "*.pyc")


def _build_products() -> set[str]:
    return {p.name for p in PROJECT.iterdir() if p.name == "build" or p.name.endswith("egg-info")}


@pytest.fixture(scope="module")
def egg_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    before = _build_products()
    tmp = tmp_path_factory.mktemp("egg")
    copy = tmp / "project"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
    egg = tmp / "focused.egg"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCRAPY_SETTINGS_MODULE")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")  # no user scrapy.cfg
    if (BIN / "scrapyd-deploy").exists():
        cmd = [str(BIN / "scrapyd-deploy"), "--build-egg", str(egg)]
    else:  # what scrapyd-deploy runs
        cmd = [sys.executable, "setup.py", "-q", "bdist_egg", "-d", str(tmp / "dist")]
    proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    if not egg.exists():
        (egg,) = (tmp / "dist").glob("*.egg")
    assert _build_products() == before, "the build wrote into the checkout"
    with zipfile.ZipFile(egg) as zf:
        names = set(zf.namelist())
        assert zf.read("EGG-INFO/top_level.txt").decode().split() == ["focused"]
    return names


def test_the_egg_has_the_crawler_and_its_topics(egg_names: set[str]) -> None:
    assert {"focused/__init__.py", "focused/settings.py", "focused/spiders/focused.py"} <= (
        egg_names
    )
    topics = sorted(p.name for p in (PROJECT / "topics").glob("*.toml"))
    assert topics and {f"focused/topics/{t}" for t in topics} <= egg_names, sorted(egg_names)


def test_the_egg_has_no_benchmark_and_no_test(egg_names: set[str]) -> None:
    assert (PROJECT / "bench" / "quality.py").is_file()  # in the checkout, so it was copied
    assert not [n for n in egg_names if n.startswith(("bench/", "tests/"))]
    assert not [n for n in egg_names if "/bench/" in n or n.startswith("focused/bench")]


def test_the_egg_has_no_oracle(egg_names: set[str]) -> None:
    assert not [n for n in egg_names if "oracle" in n.rsplit("/", 1)[-1]], sorted(egg_names)
