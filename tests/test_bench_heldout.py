"""The frozen held-out set of the quality benchmark and the report's headline."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import quality
from focused.output.metrics import HarvestCurve
from focused.web.topics import load_topic

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wikispeedia-site"


def test_the_held_out_set_names_twelve_topics_none_tuned_on() -> None:
    frozen = quality.held_out_set()
    names = {load_topic(arg).name for arg in frozen}
    assert len(names) >= 12
    assert not names & {"chemistry", "physics", "biology", "it", "religion"}
    assert all(len(sets) == 2 for sets in frozen.values())


@pytest.mark.skipif(not (DATA / "labels.tsv").is_file(), reason=f"no site at {DATA}")
def test_held_out_set_plans_its_own_seed_sets_as_held_out_rows() -> None:
    site = quality.Site.load(DATA)
    args = quality.build_parser().parse_args(["--topic", "chemistry", "--held-out-set"])
    groups = quality.plan(args, site)
    held = [g for g in groups if g.held_out]
    assert [g.held_out for g in groups[:2]] == [False, False]
    assert len(held) == 2 * len(quality.held_out_set())
    geology = [g.seeds for g in held if g.topic.name == "geology"]
    assert geology == [("Geology.html",), ("Jazz.html",)]
    assert any(g.off_topic_start for g in held) and not all(g.off_topic_start for g in held)


def _group(name: str, *, held: bool, off: bool, index: int) -> quality.Group:
    topic = load_topic("chemistry")
    seeds = ("S.html",)
    targets = frozenset({"T.html"} if off else {"S.html", "T.html"})
    return quality.Group(topic, name, "c", seeds, targets, 4, held, index)


def _row(group: quality.Group, strategy: str, ratio: float) -> dict[str, object]:
    return {
        "strategy": strategy,
        "recall_over_oracle": ratio,
        "_group": group,
        "_held_out": group.held_out,
        "_error": "",
        "_curve": HarvestCurve(frozenset()),
    }


def test_headline_puts_held_out_means_by_start_beside_the_main_topics() -> None:
    main = _group("m", held=False, off=False, index=0)
    on = _group("a", held=True, off=False, index=1)
    off = _group("b", held=True, off=True, index=2)
    rows = [
        _row(main, "learning", 0.9),
        _row(on, "learning", 0.8),
        _row(off, "learning", 0.2),
        _row(main, "annealing", 0.5),
        _row(on, "annealing", 0.6),
        _row(off, "annealing", 0.4),
    ]
    numbers = quality.headline_numbers(rows)["learning"]
    assert numbers["held_out"] == pytest.approx(0.5)
    assert numbers["held_on"] == pytest.approx(0.8)
    assert numbers["held_off"] == pytest.approx(0.2)
    assert numbers["held_worst"] == pytest.approx(0.2)
    assert numbers["vs_annealing"] == 1 and numbers["vs_rows"] == 2
    assert numbers["main"] == pytest.approx(0.9)
    text = "\n".join(quality._headline(rows))
    assert "held-out topics first" in text
    assert "| learning | 0.500 | 0.800 | 0.200 | 0.200 | 1 / 2 | 0.900 |" in text


def test_headline_of_a_run_without_held_out_topics_says_so() -> None:
    main = _group("m", held=False, off=False, index=0)
    text = "\n".join(quality._headline([_row(main, "learning", 0.9)]))
    assert "No held-out topic" in text
