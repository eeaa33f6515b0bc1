"""The ``learning`` strategy in a real crawl of the sandbox (``python -m scrapy crawl``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from crawling import run_crawl

BUDGET = 100
#: One request at a time: the crawl order is repeatable, so are the numbers below.
SERIAL = ("CONCURRENT_REQUESTS=1", "CONCURRENT_REQUESTS_PER_DOMAIN=1")


def _targets_in_first(crawl, n: int) -> int:
    return sum(bool(r["is_target"]) for r in crawl.rows()[:n])


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("learning")
    out = {}
    for name, strategy, *extra in (
        ("learning", "learning"),
        ("best_first", "best_first"),
        ("learning, no rescoring", "learning", "FOCUSED_RESCORE_EVERY=0"),
    ):
        out[name] = run_crawl(
            base / name.replace(", ", "-").replace(" ", "_"),
            f"FOCUSED_STRATEGY={strategy}",
            f"CLOSESPIDER_ITEMCOUNT={BUDGET}",
            "FOCUSED_RESCORE_BUDGET=250",
            *SERIAL,
            *extra,
        )
    return out


def _stat(log: str, key: str) -> float:
    match = re.search(rf"'{re.escape(key)}': ([0-9.]+)", log)
    assert match, f"{key} not in the stats dump"
    return float(match.group(1))


def test_learning_crawl_learns_from_every_page(crawls):
    crawl = crawls["learning"]
    pages = len(crawl.rows())
    assert pages >= BUDGET
    # every stored page was heard by the strategy, from its own relevance
    assert _stat(crawl.log, "focused/learning/pages") >= pages
    assert 0.0 < _stat(crawl.log, "focused/learning/mean_label") < 1.0
    # relevance feedback added terms, within the bound
    assert 0 < _stat(crawl.log, "focused/learning/expanded_terms") <= 30
    # the spider gave the links their slots, and pages of good parents taught them
    assert 0 < _stat(crawl.log, "focused/learning/slot_pages") < pages
    assert {r["strategy"] for r in crawl.rows()} == {"learning"}
    values = [r["link_value"] for r in crawl.rows()[1:]]
    assert all(0.0 <= v <= 1.0 for v in values) and len(set(values)) > 10


def test_learning_beats_best_first_early_on_the_sandbox(crawls):
    learnt = _targets_in_first(crawls["learning"], BUDGET)
    best_first = _targets_in_first(crawls["best_first"], BUDGET)
    assert learnt > best_first, (learnt, best_first)


def test_learning_settings_are_checked_before_any_fetch(tmp_path: Path):
    crawl = run_crawl(
        tmp_path / "bad",
        "FOCUSED_STRATEGY=learning",
        "FOCUSED_LEARNING_CONTEXT_SHARE=1.5",
        check=False,
    )
    assert crawl.returncode != 0
    assert "FOCUSED_LEARNING_CONTEXT_SHARE must be in [0.0, 1.0], got 1.5" in crawl.log
    assert not (tmp_path / "bad" / "pages.sqlite3").exists()


def test_rescoring_reorders_the_waiting_links_from_the_first_rescore_on(crawls):
    """Every 16 learnt pages (FOCUSED_RESCORE_EVERY) the waiting links are scored again
    with what was learnt since they were found: the same crawl until the first rescore,
    another order after it (the sandbox's frontier is small: the budget never delays it)."""
    rescored, fixed = crawls["learning"], crawls["learning, no rescoring"]
    pages = len(rescored.rows())
    assert _stat(rescored.log, "focused/frontier/rescores") >= pages // 16 - 1
    assert _stat(rescored.log, "focused/frontier/rescore_moved") > 0
    assert "focused/frontier/rescores" not in fixed.log
    # without rescoring evidence the slot comes back in the request's meta, and teaches
    assert _stat(fixed.log, "focused/learning/slot_pages") > 0
    paths = [crawl.paths_in_order() for crawl in (rescored, fixed)]
    assert paths[0][:16] == paths[1][:16]
    assert paths[0] != paths[1]
