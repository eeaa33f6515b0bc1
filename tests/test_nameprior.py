"""The name prior of the learning strategy (focused.ranking.nameprior), with the real
pre-trained model (skipped where requirements-prior.txt is not installed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from focused import meta
from focused.meta import PageFacts
from focused.ranking.learning import decode_evidence, encode_evidence, evidence_priors
from focused.ranking.nameprior import NEUTRAL, NamePrior, missing_packages, topic_text
from focused.ranking.relevance import term_counts
from focused.strategies import Link, Parent
from focused.strategies.learning import LearningStrategy

WRITERS = {
    "writer": 5.0,
    "novelist": 5.0,
    "poet": 5.0,
    "author": 4.0,
    "novel": 4.0,
    "poetry": 4.0,
    "literature": 4.0,
    "作家": 5.0,
}

needs_model = pytest.mark.skipif(
    bool(missing_packages()), reason="requirements-prior.txt is not installed"
)


@pytest.fixture(scope="module")
def prior() -> NamePrior:
    return NamePrior.load(WRITERS)


def test_topic_text_is_the_english_keywords_heaviest_first() -> None:
    assert topic_text({"b": 1.0, "a": 3.0, "元素": 9.0, "c": 0.0}) == "a b"
    assert topic_text({"元素": 1.0}) == ""


@needs_model
def test_the_model_knows_names_no_keyword_matches(prior: NamePrior) -> None:
    names = [
        "Charles Dickens",
        "Jane Austen",
        "William Wordsworth",
        "Volcano",
        "Carbon dioxide",
        "Railway signal",
    ]
    cos = prior.cosines(names)
    # none of the names holds a keyword, yet the writers are closer to the topic
    assert min(cos[:3]) > max(cos[3:])


@needs_model
def test_scores_are_ranks_among_the_names_met(prior: NamePrior) -> None:
    fresh = NamePrior(WRITERS, prior.encode)
    scores = fresh.scores(["Jane Austen", "Volcano", "Carbon dioxide", "Poetry"])
    assert ((scores > 0) & (scores <= 1)).all()
    assert scores[0] > scores[1] and scores[3] > scores[2]
    # a name without a Latin letter, and a topic without English keywords: neutral
    assert fresh.scores(["火山"]).tolist() == [NEUTRAL]
    assert NamePrior({"作家": 1.0}, prior.encode).scores(["Jane Austen"]).tolist() == [NEUTRAL]
    # each distinct name is embedded once
    before = fresh.embedded
    fresh.scores(["Jane Austen", "Jane Austen", "Volcano"])
    assert fresh.embedded == before


def test_evidence_carries_the_prior_and_reads_without_it() -> None:
    s = LearningStrategy(keywords={"acid": 1.0})
    links = [
        Link("http://h/wiki/Acid.html", 0.0, "acid", "a base"),
        Link("http://h/x", 0.0, "", ""),
    ]
    terms = s.terms.terms_of(
        [k.url for k in links], [k.anchor_text for k in links], [k.context for k in links]
    )
    plain = encode_evidence(terms, 0.4)
    with_prior = encode_evidence(terms, 0.4, 7, np.array([0.25, np.nan]))
    assert [len(b) for b in with_prior] == [len(b) + 2 for b in plain]
    got = evidence_priors(with_prior)
    assert got[0] == pytest.approx(0.25, abs=1 / 65535) and math.isnan(got[1])
    assert np.isnan(evidence_priors(plain)).all()
    assert np.isnan(evidence_priors([b"", b"\x05"])).all()
    # the terms read the same with the prior behind them
    a, b = decode_evidence(plain)[0], decode_evidence(with_prior)[0]
    np.testing.assert_array_equal(a.buckets, b.buckets)
    np.testing.assert_array_equal(a.n_names, b.n_names)


@needs_model
def test_the_prior_orders_unknown_names_and_rescoring_keeps_it() -> None:
    parent = Parent("http://h/wiki/Books.html", 0.2, False, 0.1, 100.0, 0, 1, 4)
    links = [
        Link("http://h/wiki/Volcano.html", 0.0, "Volcano", ""),
        Link("http://h/wiki/Charles_Dickens.html", 0.0, "Charles Dickens", ""),
    ]
    off = LearningStrategy(keywords=WRITERS)
    on = LearningStrategy(keywords=WRITERS, name_prior=0.5)
    # nothing learnt: without the prior the two unknown names are worth the same
    v_off = [sc.value for sc in off.score_links(parent, links)]  # type: ignore[union-attr]
    assert v_off[0] == v_off[1]
    scores = on.score_links(parent, links)
    values = [sc.value for sc in scores]  # type: ignore[union-attr]
    assert values[1] > values[0]
    blobs = [sc.meta[meta.EVIDENCE] for sc in scores]  # type: ignore[union-attr]
    prios, again = on.rescore(blobs)
    assert prios == [sc.priority for sc in scores]  # type: ignore[union-attr]
    assert again == pytest.approx(values, abs=1e-4)
    assert on.stats()["name_prior_embedded"] == 2


def test_name_evidence_is_the_most_used_word_of_the_name() -> None:
    s = LearningStrategy(keywords={"acid": 1.0})
    for i in range(4):
        s.observe(f"http://h/{i}", _facts("carbon dioxide gas"), {})
    s.observe("http://h/x", _facts("carbon monoxide"), {})
    links = [
        Link("http://h/a", 0.0, "carbon dioxide", ""),
        Link("http://h/b", 0.0, "carbon nanotube", ""),
        Link("http://h/c", 0.0, "", ""),
        Link("http://h/d", 0.0, "monoxide nanotube", ""),
        Link("http://h/e", 0.0, "nanotube fullerene", ""),
    ]
    n = len(links)
    terms = s.terms.terms_of([""] * n, [k.anchor_text for k in links], [""] * n)
    # carbon: 5 pages; monoxide: 1; nanotube and fullerene: none
    assert s.terms.name_evidence(terms).tolist() == [5.0, 5.0, 0.0, 1.0, 0.0]


def _facts(text: str) -> PageFacts:
    return PageFacts(1.0, True, 0.0, 1, tuple(term_counts(text)), False, None)
