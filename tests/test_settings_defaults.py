"""``scrapy settings --get FOCUSED_...`` and ``get_project_settings()`` show every default of
``focused/defaults.py`` (the one place they live: the project's settings.py pulls them in),
while ``-s`` and settings.py edits still win."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings

from focused import config
from focused.cli import seed_from_command_line
from focused.defaults import DEFAULTS, get
from tests.crawling import run_scrapy

PROJECT = Path(__file__).resolve().parent.parent
SETTINGS_PY = PROJECT / "focused" / "settings.py"


def _scrapy_settings(*args: str) -> str:
    result = run_scrapy([sys.executable, "-m", "scrapy", "settings", *args])
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_get_project_settings_holds_every_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT)
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "focused.settings")
    settings = get_project_settings()
    for name, default in DEFAULTS.items():
        assert settings.get(name) == default, name
        assert get(settings, name) == default, name
        assert settings.getpriority(name) == 20, name  # settings.py's: -s and jobs win
        if isinstance(default, list | dict):  # a copy: a crawl cannot change the defaults
            assert settings.get(name) is not default, name


@pytest.mark.parametrize(
    "name",
    ["FOCUSED_STRATEGY", "FOCUSED_OUTPUT_DIR", "FOCUSED_STORE_COMMIT_EVERY", "FOCUSED_HOST_AWARE"],
)
def test_scrapy_settings_get_prints_the_default(name: str) -> None:
    assert _scrapy_settings("--get", name) == str(DEFAULTS[name])


def test_scrapy_settings_get_a_list_default() -> None:
    assert _scrapy_settings("--getlist", "FOCUSED_SESSION_PARAMS") == str(
        DEFAULTS["FOCUSED_SESSION_PARAMS"]
    )


def test_a_command_line_setting_still_wins() -> None:
    assert _scrapy_settings("--get", "FOCUSED_STRATEGY", "-s", "FOCUSED_STRATEGY=bfs") == "bfs"


def _edited_settings_module(tmp_path: Path, text: str) -> ModuleType:
    path = tmp_path / "edited_settings.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("edited_settings", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("where", ["top", "bottom"])
def test_a_value_set_in_settings_py_wins_above_or_below_the_defaults(
    tmp_path: Path, where: str
) -> None:
    text = SETTINGS_PY.read_text(encoding="utf-8")
    edit = 'FOCUSED_STRATEGY = "bfs"\nFOCUSED_SEEDS = ["http://127.0.0.1:8000/"]\n'
    body = edit + text if where == "top" else text + "\n" + edit
    settings = Settings()
    settings.setmodule(_edited_settings_module(tmp_path, body), priority="project")
    assert settings.get("FOCUSED_STRATEGY") == "bfs"
    assert get(settings, "FOCUSED_SEEDS") == ["http://127.0.0.1:8000/"]
    assert settings.get("FOCUSED_SA_K") == DEFAULTS["FOCUSED_SA_K"]
    # a seed of settings.py is the user's: scrapy fetch's URL does not replace it
    seed_from_command_line(settings, "http://127.0.0.2:9000/")
    assert get(settings, "FOCUSED_SEEDS") == ["http://127.0.0.1:8000/"]


def test_validate_and_the_fetch_seed_with_the_defaults_in_settings_py(tmp_path: Path) -> None:
    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    settings.set("FOCUSED_OUTPUT_DIR", str(tmp_path / "out"), priority="cmdline")
    config.validate(settings)
    settings.set("FOCUSED_SA_K", 0, priority="cmdline")
    with pytest.raises(config.ConfigError, match="FOCUSED_SA_K"):
        config.validate(settings)
    # settings.py's default (no seeds) is not the user's: the URL of scrapy fetch/shell
    # becomes the seed, unless -s gave seeds
    seed_from_command_line(settings, "http://127.0.0.1:8000/page")
    assert get(settings, "FOCUSED_SEEDS") == ["http://127.0.0.1:8000/page"]
    given = Settings()
    given.setmodule("focused.settings", priority="project")
    given.set("FOCUSED_SEEDS", "http://127.0.0.3/", priority="cmdline")
    seed_from_command_line(given, "http://127.0.0.1:8000/page")
    assert get(given, "FOCUSED_SEEDS") == ["http://127.0.0.3/"]
