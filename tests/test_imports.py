"""What a module drags in when it is imported, each in a fresh interpreter.

Pure modules (the algorithms, the frontier, the output, the meta keys, the defaults, the
topic files, URL sanitising) never import Scrapy or Twisted; a crawl that does not learn
never imports scikit-learn or SciPy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE_FOLDERS = ("focused/ranking", "focused/strategies", "focused/frontier", "focused/output")
PURE_FILES = (
    "focused/meta.py",
    "focused/bounded.py",
    "focused/defaults.py",
    "focused/web/topics.py",
    "focused/web/sanitize.py",
    "focused/web/codings.py",
)
#: Scrapy glue that lives in a pure folder (none today; e.g. a pipeline next to its store)
GLUE: frozenset[str] = frozenset()


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def pure_modules() -> list[str]:
    paths = [p for folder in PURE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    paths += [ROOT / f for f in PURE_FILES]
    return [m for m in map(_module, paths) if m not in GLUE]


def loaded_after(code: str, *names: str) -> list[str]:
    """Which of ``names`` are in ``sys.modules`` after ``code`` runs in a new interpreter."""
    probe = f"{code}\nimport sys\nprint(sorted(n for n in {names!r} if n in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return eval(out.stdout.strip().splitlines()[-1])  # a list of str literals


def test_the_walk_finds_the_pure_modules() -> None:
    found = pure_modules()
    assert "focused.ranking.relevance" in found and "focused.strategies.learning" in found
    assert "focused.frontier.memory" in found and "focused.meta" in found
    assert "focused.scheduler" not in found and "focused.middlewares" not in found


@pytest.mark.parametrize("module", pure_modules())
def test_a_pure_module_imports_neither_scrapy_nor_twisted(module: str) -> None:
    assert loaded_after(f"import {module}", "scrapy", "twisted") == []


def test_the_spider_and_a_bfs_strategy_load_no_scikit_learn_nor_scipy() -> None:
    code = (
        "import focused.spiders.focused, focused.middlewares, focused.scheduler\n"
        "from focused.strategies import build\n"
        "build('bfs').seed()"
    )
    assert loaded_after(code, "sklearn", "scipy") == []


def test_the_learning_strategy_loads_scikit_learn_only_for_its_link_classifier() -> None:
    code = "from focused.strategies import build\nbuild('learning', keywords={'acid': 1.0}).seed()"
    assert loaded_after(code, "sklearn", "scipy") == []
    code = (
        "from focused.strategies import build\n"
        "build('learning', keywords={'acid': 1.0}, options={'link_model': True}).seed()"
    )
    assert loaded_after(code, "sklearn") == ["sklearn"]
