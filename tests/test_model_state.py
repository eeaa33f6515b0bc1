"""The learnt model as plain data: merged in any order, saved under JOBDIR, resumed."""

from __future__ import annotations

import random
import re
from urllib.parse import urlsplit

import numpy as np
import pytest

from focused.meta import PageFacts
from focused.ranking.learning import LinkEvidence
from focused.ranking.modelstate import (
    DeltaRecorder,
    decode_delta,
    dumps_state,
    encode_delta,
    loads_state,
)
from focused.strategies.learning import LearningStrategy
from focused.web.sandbox import generate_site
from tests.crawling import CHEMISTRY, SANDBOX_PAGES, SANDBOX_SEED, run_crawl

KEYWORDS = {"chemistry": 1.0, "element": 0.6, "acid": 0.5}
WORDS = [
    w.encode()
    for w in [
        "acid",
        "base",
        "element",
        "metal",
        "river",
        "music",
        "saturn",
        "cobalt",
        "iron",
        "gold",
    ]
]


def pages(n: int, seed: int) -> list[tuple[str, PageFacts]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        terms = tuple(rng.sample(WORDS, rng.randint(1, 6)))
        relevance = rng.random() * (2.0 if b"acid" in terms else 0.2)
        out.append(
            (
                f"http://s/p{seed}-{i}",
                PageFacts(page_relevance=relevance, terms=terms, relevant=relevance > 1.0),
            )
        )
    return out


def links() -> list[LinkEvidence]:
    return [
        LinkEvidence(f"http://s/{w.decode()}", w.decode(), "an acid and a metal") for w in WORDS
    ]


def test_deltas_commute_and_round_trip_through_bytes():
    a, b = LearningStrategy(KEYWORDS), LearningStrategy(KEYWORDS)
    one = LearningStrategy(KEYWORDS)  # learns every page itself
    for s in (a, b):
        s.share()
    for url, page in pages(40, 1):
        a.observe(url, page, {})
        one.observe(url, page, {})
    for url, page in pages(40, 2):
        b.observe(url, page, {})
        one.observe(url, page, {})
    da, db = a.take_delta(), b.take_delta()
    assert da is not None and db is not None and da.pages == 40
    da, db = decode_delta(encode_delta(da)), decode_delta(encode_delta(db))
    x, y = LearningStrategy(KEYWORDS), LearningStrategy(KEYWORDS)
    x.merge(da)
    x.merge(db)
    y.merge(db)
    y.merge(da)
    for merged in (x, y):
        assert merged.terms.pages == one.terms.pages == 80
        assert merged.exploration.relevant == one.exploration.relevant
        assert merged.expander.df_rel == one.expander.df_rel
        np.testing.assert_allclose(merged.terms.counts, one.terms.counts)
        np.testing.assert_allclose(merged.terms.sums, one.terms.sums)
        np.testing.assert_allclose(
            merged.terms.score(links()), one.terms.score(links()), rtol=1e-12
        )
    assert a.take_delta().empty  # taken: nothing new since


def test_a_saved_state_scores_links_as_the_model_it_came_from():
    s = LearningStrategy(KEYWORDS, expand_every=1)
    for url, page in pages(60, 3):
        s.observe(url, page, {})
    state = loads_state(dumps_state(s.model_state()))
    fresh = LearningStrategy(KEYWORDS, expand_every=1)
    fresh.load_model_state(state)
    assert fresh.terms.pages == s.terms.pages == 60
    assert fresh.relevant_pages == s.relevant_pages
    np.testing.assert_allclose(fresh.terms.score(links()), s.terms.score(links()))
    evidence = links()
    got = fresh.exploration.blend(fresh.terms.score(evidence), fresh.terms.link_terms(evidence))
    want = s.exploration.blend(s.terms.score(evidence), s.terms.link_terms(evidence))
    np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError):
        loads_state(b"not a model")
    with pytest.raises(ValueError):
        decode_delta(encode_delta(DeltaRecorder().take())[:-1])


def _recall(rows: list, targets: set[str]) -> float:
    return len({urlsplit(r["url"]).path for r in rows} & targets) / len(targets)


LOADED = re.compile(r"'focused/model/loaded_pages': (\d+)")


def test_a_stopped_learning_crawl_resumes_with_its_saved_model(tmp_path):
    targets = generate_site(seed=SANDBOX_SEED, pages=SANDBOX_PAGES).targets(CHEMISTRY)
    common = ("FOCUSED_STRATEGY=learning", "CONCURRENT_REQUESTS=1", "FOCUSED_MODEL_SAVE_EVERY=10")
    whole = run_crawl(tmp_path / "whole", *common, "CLOSESPIDER_ITEMCOUNT=80")
    job = tmp_path / "job"
    first = run_crawl(tmp_path / "out", *common, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=30")
    saved = loads_state((job / "learning-model.npz").read_bytes())
    assert saved["pages"] >= len(first.rows()) >= 30
    second = run_crawl(tmp_path / "out", *common, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=50")
    assert [int(n) for n in LOADED.findall(second.log)] == [saved["pages"]]
    rows = second.rows()
    paths = [urlsplit(r["url"]).path for r in rows]
    assert len(paths) == len(set(paths))
    resumed = loads_state((job / "learning-model.npz").read_bytes())
    assert resumed["pages"] > saved["pages"]  # it went on learning from the saved count
    assert abs(_recall(rows, targets) - _recall(whole.rows(), targets)) <= 0.05
