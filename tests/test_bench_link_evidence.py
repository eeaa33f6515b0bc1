"""The link-evidence measurement (`bench.link_evidence`): its metrics and predictors."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

from bench import quality
from bench.judgement import PageText
from bench.link_evidence import auc, paragraph_keywords, predictors, recall_at
from focused.ranking.relevance import TopicVector
from focused.web.topics import load_topic

ROOT = Path(__file__).resolve().parents[1]


def test_auc_counts_pairs_and_ties() -> None:
    assert auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert auc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    # a tie between a positive and a negative is half a pair: (1 + 0.5) / 2
    assert auc([0.5, 0.5, 0.1], [True, False, False]) == 0.75
    assert math.isnan(auc([0.3, 0.4], [True, True]))


def test_recall_at_takes_the_best_n() -> None:
    scores = [0.1, 0.9, 0.5, 0.7]
    positive = [True, True, False, True]
    assert recall_at(scores, positive, 1) == 1 / 3
    assert recall_at(scores, positive, 2) == 2 / 3
    assert recall_at(scores, positive, 4) == 1.0


def test_predictors_use_only_what_the_fetched_pages_show() -> None:
    graph = {
        "Seed.html": ["Good_name.html", "Plain.html"],
        "Hub.html": ["Good_name.html", "Other.html"],
        "Good_name.html": [],
        "Plain.html": [],
        "Other.html": [],
    }
    texts = {
        "Seed.html": PageText("Seed", Counter({b"good": 1})),
        "Hub.html": PageText("Hub", Counter({b"other": 1})),
    }
    labels = {"Seed.html": 0.9, "Hub.html": 0.1}
    relevance = {"Good_name.html": 3.0, "Plain.html": 0.0, "Other.html": 0.5}
    waiting, scores = predictors(graph, texts, labels, relevance, ["Seed.html", "Hub.html"])
    assert waiting == ["Good_name.html", "Plain.html", "Other.html"]
    assert scores["parent_first"] == [0.9, 0.9, 0.1]
    # two parents (0.9, 0.1) and a crawl mean of 0.5 with 2 pseudo-parents
    assert scores["parents_mean"][0] == (0.9 + 0.1 + 2 * 0.5) / 4
    # "good" was learnt from the good page, "other" from the poor one
    assert scores["name_best"][0] > scores["name_best"][2]
    assert scores["own_relevance"] == [3.0, 0.0, 0.5]


def test_development_topics_are_no_held_out_category() -> None:
    held = {load_topic(arg).category for arg in quality.held_out_set()}
    dev = [load_topic(str(p)) for p in sorted((ROOT / "docs" / "dev-topics").glob("*.toml"))]
    assert len(dev) >= 8
    for topic in dev:
        assert topic.category and not any(
            topic.category.startswith(h) or h.startswith(topic.category) for h in held
        ), topic.name


def test_a_link_gets_the_keywords_of_the_best_paragraph_it_stands_in(tmp_path: Path) -> None:
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "Seed.html").write_text(
        "<html><body><p>Atoms and molecules react: see <a href='Good.html'>Good</a>.</p>"
        "<p>Football and cricket, <a href='Plain.html'>Plain</a> and "
        "<a href='Good.html'>Good</a>.</p><ul><li><a href='List.html'>List</a></li></ul>"
        "</body></html>",
        encoding="utf-8",
    )
    (wiki / "Hub.html").write_text(
        "<html><body><p>A chemical <a href='Plain%20two.html'>Plain two</a>.</p></body></html>",
        encoding="utf-8",
    )
    vector = TopicVector({"atoms": 2.0, "molecules": 2.0, "chemical": 1.0})
    best = paragraph_keywords(tmp_path, ["Seed.html", "Hub.html", "Missing.html"], vector)
    # the better of Good's two paragraphs; a link outside any paragraph has none
    assert best["Good.html"] > 0.3 and best["Plain.html"] == 0.0
    assert "List.html" not in best
    # hrefs are decoded like the site's page names
    assert best["Plain two.html"] > 0.0
    graph = {"Seed.html": ["Good.html", "Plain.html"], "Good.html": [], "Plain.html": []}
    texts = {"Seed.html": PageText("Seed", Counter({b"atoms": 1}))}
    _waiting, scores = predictors(
        graph, texts, {"Seed.html": 0.5}, {}, ["Seed.html"], paragraphs=best
    )
    assert scores["paragraph_keywords"] == [best["Good.html"], 0.0]
    assert scores["learning_like_paragraph"][0] > scores["learning_like_paragraph"][1]
