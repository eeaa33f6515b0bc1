"""Exploration of the ``learning`` strategy: keyword optimism while the crawl knows
nothing of its topic, shrinking as it finds relevant pages."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from focused import meta
from focused.meta import PageFacts
from focused.ranking.learning import Exploration, LinkEvidence, TermModel
from focused.ranking.relevance import term_counts
from focused.strategies import Link, Parent
from focused.strategies.learning import LearningStrategy

CHEM = {"chemistry": 5.0, "chemical": 4.0, "acid": 3.0, "元素": 3.0}
PARENT = Parent("http://h/p", 0.0, False, 0.0, 100.0, 0, 1, 4)


def _terms(model: TermModel, *links: tuple[str, str, str]):
    return model.link_terms([LinkEvidence(u, a, c) for u, a, c in links])


def test_exploration_weight_is_one_until_relevant_pages_then_shrinks() -> None:
    e = Exploration(CHEM, prior=2.0)
    assert e.weight == 1.0
    for _ in range(10):
        e.observe(relevant=False)  # off-topic so far: no evidence, still exploring
    assert e.weight == 1.0
    weights = []
    for _ in range(6):
        e.observe(relevant=True)
        weights.append(e.weight)
    assert all(a > b for a, b in zip(weights, weights[1:], strict=False))
    assert weights[0] == pytest.approx(2 / 3) and weights[-1] == pytest.approx(2 / 8)
    assert Exploration(CHEM, prior=0.0).weight == 0.0


def test_keyword_scores_name_the_keyword_links_and_blend_fades() -> None:
    model = TermModel(CHEM)
    e = Exploration(CHEM, prior=1.0, context_share=0.3)
    links = _terms(
        model,
        ("http://h/wiki/Acid.html", "acid", ""),
        ("http://h/wiki/Striker.html", "striker", "an acid test"),
        ("http://h/wiki/Goal.html", "goal", "of the match"),
        ("http://h/wiki/X.html", "", ""),
    )
    scores = e.keyword_scores(links)
    assert scores[0] == pytest.approx(0.7 * 3 / 5)  # best name keyword, weight / max
    assert 0 < scores[1] < scores[0]  # a keyword in the context only
    assert scores[2] == 0 and scores[3] == 0
    learnt = np.array([0.1, 0.3, 0.2, 0.1])
    # w = 1: as much as the keywords promise, never less than the model says
    assert e.blend(learnt, links) == pytest.approx(np.maximum(scores, learnt))
    e.observe(relevant=True)
    half = e.blend(learnt, links)
    assert half == pytest.approx(0.5 * learnt + 0.5 * np.maximum(scores, learnt))
    for _ in range(99):
        e.observe(relevant=True)
    assert e.blend(learnt, links) == pytest.approx(learnt, abs=0.01 * scores.max())


def test_optimism_lifts_rarely_seen_terms_and_shrinks_with_the_weight() -> None:
    s = LearningStrategy(keywords=CHEM, explore_prior=1.0, optimism=0.5)
    links = [
        Link("http://h/wiki/Striker.html", 0.0, "striker", ""),
        Link("http://h/wiki/Zircon.html", 0.0, "zircon", ""),  # never seen
    ]
    for i in range(5):
        _learn(s, f"http://h/f{i}", 0.02, False, "striker goal")
    off = s.score_links(PARENT, links)
    assert off[1].value > off[0].value  # type: ignore[union-attr]  novelty first
    bonus = s.terms.optimism
    assert bonus == pytest.approx(0.5)
    for i in range(9):
        _learn(s, f"http://h/s{i}", 0.02, True, "striker goal")
    assert s.terms.optimism == pytest.approx(0.05)
    assert s.terms.optimism < bonus


def _learn(s: LearningStrategy, url: str, a: float, relevant: bool, text: str) -> None:
    s.observe(
        url, PageFacts(page_relevance=a, relevant=relevant, terms=tuple(term_counts(text))), {}
    )


def test_an_off_topic_start_follows_keyword_links_first_then_the_model() -> None:
    links = [
        Link("http://h/wiki/Striker.html", 0.0, "striker", "scored a goal"),
        Link("http://h/wiki/Acid.html", 0.6, "acid", "a strong acid"),
    ]
    plain = LearningStrategy(keywords=CHEM, explore_prior=0.0, optimism=0.0)
    explore = LearningStrategy(keywords=CHEM, explore_prior=1.0, optimism=0.0)
    for s in (plain, explore):
        for i in range(5):  # the off-topic pages of the start: striker pages a bit better
            _learn(s, f"http://h/f{i}", 0.02 if i % 2 else 0.002, False, "striker goal")
            _learn(s, f"http://h/g{i}", 0.001, False, "acid rain league")
    p, x = plain.score_links(PARENT, links), explore.score_links(PARENT, links)
    assert p[0].value > p[1].value  # type: ignore[union-attr]  greedy on noise
    assert x[1].value > x[0].value  # type: ignore[union-attr]  the keyword link first
    # rescoring agrees with scoring while nothing changed, and follows the weight
    blobs = [sc.meta[meta.EVIDENCE] for sc in x]  # type: ignore[union-attr]
    assert explore.rescore(blobs)[1] == [sc.value for sc in x]  # type: ignore[union-attr]
    for i in range(30):  # the topic found: striker pages turn out relevant
        _learn(explore, f"http://h/s{i}", 2.0, True, "striker chemistry")
    assert explore.exploration.weight < 0.05
    later = explore.rescore(blobs)[1]
    assert later[0] > later[1]  # the model decides now
    assert explore.stats()["explore_weight"] == pytest.approx(1 / 31, abs=1e-4)


def test_explore_prior_setting_reaches_the_strategy() -> None:
    from scrapy.settings import Settings

    from focused import config
    from focused.web.topics import load_topic

    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    settings.set("FOCUSED_STRATEGY", "learning")
    settings.set("FOCUSED_LEARNING_EXPLORE_PRIOR", 0.5)
    s = config.strategy(settings, load_topic("chemistry"))
    assert isinstance(s, LearningStrategy) and s.explore_prior == 0.5
    assert s.exploration.weight == 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_sandbox_crawl_from_an_off_topic_seed_reaches_the_topic(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from crawling import run_crawl

    from focused.web.sandbox.generator import generate_site

    site = generate_site(seed=7, pages=600)
    seed = "/sports/p0001.html"  # a sports page: no chemistry label
    assert not site.labels[seed][0].startswith("subject.Science.Chemistry")
    port = _free_port()
    crawl = run_crawl(
        tmp_path / "explore",
        "FOCUSED_STRATEGY=learning",
        "FOCUSED_LEARNING_EXPLORE_PRIOR=1",
        "CLOSESPIDER_ITEMCOUNT=60",
        "CONCURRENT_REQUESTS=1",
        "CONCURRENT_REQUESTS_PER_DOMAIN=1",
        f"FOCUSED_SANDBOX_PORT={port}",
        f"FOCUSED_SEEDS=http://127.0.0.1:{port}{seed}",
    )
    rows = crawl.rows()
    assert urlsplit(rows[0]["url"]).path == seed and not rows[0]["is_target"]
    first = next(i for i, r in enumerate(rows) if r["is_target"])
    assert first <= 10  # out of the sports pages within a few pages
    later = rows[first:]
    assert sum(bool(r["is_target"]) for r in later) >= 0.7 * len(later)  # and stays there
