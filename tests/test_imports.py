"""What a module drags in when it is imported, each in a fresh interpreter.

Pure modules (the algorithms, the frontier, the output, the meta keys, the defaults, the
topic files, URL sanitising) never import Scrapy or Twisted; a crawl that does not learn
never imports scikit-learn or SciPy.
"""

from __future__ import annotations

import json
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


#: ``scrapy crawl`` run by ``runpy`` (as ``python -m scrapy`` does), then the names of
#: ``sys.argv[1]`` (a JSON list) that are in ``sys.modules``, on the last line
SCRAPY_THEN_MODULES = """
import json, runpy, sys
names = json.loads(sys.argv.pop(1))
sys.argv[0] = "scrapy"
try:
    runpy.run_module("scrapy", run_name="__main__")
finally:
    print(json.dumps(sorted(n for n in names if n in sys.modules)))
"""


def test_a_crawl_with_the_remote_control_off_never_imports_it_nor_aiohttp(
    tmp_path: Path,
) -> None:
    """Scrapy imported its ``RemoteControl`` extension, and aiohttp with it (0.1-0.15 s
    of every crawl's start), only for it to find ``REMOTE_CONTROL_ENABLED`` off (and the
    spider's check of the project's components imported it even earlier). A real
    ``scrapy crawl focused`` of the sandbox, then what it imported."""
    from tests.crawling import sandbox_crawl_command

    cmd = sandbox_crawl_command(tmp_path / "out", "CLOSESPIDER_PAGECOUNT=1")
    assert cmd[1:4] == ["-m", "scrapy", "crawl"]
    names = ["aiohttp", "scrapy.extensions.remote_control", "focused.pipelines"]
    cmd[1:3] = ["-c", SCRAPY_THEN_MODULES, json.dumps(names)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Spider closed (closespider_pagecount)" in out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == ["focused.pipelines"]


@pytest.mark.parametrize("enabled", [False, True])
def test_the_remote_control_is_an_extension_exactly_when_enabled(enabled: bool) -> None:
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.project import get_project_settings
    from scrapy.utils.test import get_crawler

    from focused.habits import REMOTE_CONTROL
    from focused.spiders.focused import FocusedSpider

    settings = get_project_settings().copy_to_dict()
    settings["REMOTE_CONTROL_ENABLED"] = enabled
    crawler = get_crawler(FocusedSpider, settings)
    crawler._apply_settings()
    extensions = build_component_list(crawler.settings.getwithbase("EXTENSIONS"))
    assert (REMOTE_CONTROL in extensions) is enabled
    assert "scrapy.extensions.closespider.CloseSpider" in extensions


def test_a_crawl_stopped_by_bad_input_never_imports_the_chinese_segmenter(
    tmp_path: Path,
) -> None:
    """rjieba was imported with :mod:`focused.ranking.relevance` (0.13 s of every
    ``scrapy`` command's start, a one-line error included); now only at the first cut
    of Chinese text, which the crawl's chemistry topic (Chinese keywords) still makes."""
    from tests.crawling import sandbox_crawl_command

    names = ["rjieba", "focused.ranking.relevance"]
    for topic, returncode, loaded in (("nosuch", 2, []), ("chemistry", 0, ["rjieba"])):
        cmd = sandbox_crawl_command(tmp_path / topic, "CLOSESPIDER_PAGECOUNT=1", topic=topic)
        cmd[1:3] = ["-c", SCRAPY_THEN_MODULES, json.dumps(names)]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == returncode, out.stderr[-3000:]
        assert json.loads(out.stdout.splitlines()[-1]) == ["focused.ranking.relevance", *loaded]
        if returncode == 2:
            assert "focused: error: " in out.stderr and "nosuch" in out.stderr
