"""A page's terms are hashed once: the spider hands a learning strategy their buckets."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from focused import meta
from focused.ranking.pagemodel import PageModel
from focused.ranking.relevance import HASH_IN_C_FROM, TopicVector, term_buckets, term_counts
from focused.spiders.focused import FocusedSpider
from focused.strategies.learning import LearningStrategy

CHEM = {"chemistry": 3.0, "acid": 2.0, "molecule": 1.0}


def _words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("abcdefghij") for _ in range(7)) for _ in range(n)]


@pytest.mark.parametrize("n", [0, 5, HASH_IN_C_FROM - 1, HASH_IN_C_FROM + 1, 3000])
def test_cosine_and_buckets_are_the_cosine_and_the_buckets(n: int) -> None:
    vector = TopicVector(CHEM)
    counts = term_counts(" ".join(_words(n, n) * 2 + ["acid", "chemistry"] * (n % 3)))
    cos, buckets = vector.cosine_and_buckets(counts)
    assert cos == vector.cosine_of_counts(counts)
    assert np.array_equal(buckets, term_buckets(counts))
    assert np.array_equal(term_buckets(counts), PageModel.features(tuple(counts)))


def _spider(tmp_path: Path, strategy: str) -> FocusedSpider:
    settings = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path / strategy),
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": "http://127.0.0.1:9/",
        "FOCUSED_STRATEGY": strategy,
    }
    crawler = get_crawler(FocusedSpider, settings)
    crawler.spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    return crawler.spider


@pytest.mark.parametrize("distinct", [30, 2 * HASH_IN_C_FROM])
def test_the_spider_hands_the_buckets_of_the_page_terms_to_a_strategy_that_learns(
    tmp_path: Path, distinct: int
) -> None:
    body = " ".join(_words(distinct, 7) + ["acid chemistry molecule"])
    # title words the body lacks: their buckets join the body's
    html = f"<html><head><title>Zymurgy quixotic acid</title></head><body><p>{body}</p>"
    html += '<p><a href="/next.html">chemistry next</a></p></body></html>'
    url = "http://127.0.0.1:9/wiki/Page.html"
    spider = _spider(tmp_path, "learning")
    response = HtmlResponse(url, body=html.encode(), encoding="utf-8", request=Request(url))
    list(spider.parse(response))
    facts = response.meta[meta.PAGE]
    assert facts.terms and b"zymurgy" in facts.terms
    assert facts.buckets is not None
    assert np.array_equal(facts.buckets, PageModel.features(facts.terms))
    # a strategy that does not learn gets neither
    other = _spider(tmp_path, "bfs")
    response = HtmlResponse(url, body=html.encode(), encoding="utf-8", request=Request(url))
    list(other.parse(response))
    assert response.meta[meta.PAGE].buckets is None


def test_learning_from_the_handed_buckets_is_learning_from_the_terms() -> None:
    terms = tuple(Counter(w.encode() for w in _words(500, 3) + ["acid"]))
    a, b, c = (LearningStrategy(keywords=CHEM) for _ in range(3))
    for i in range(3):
        url = f"http://h/{i}"
        a.observe(url, meta.PageFacts(2.5, True, 0.4, 3, terms), {})
        b.observe(url, meta.PageFacts(2.5, True, 0.4, 3, terms, buckets=term_buckets(terms)), {})
        # the handed buckets are the ones learnt (the terms are not hashed again)
        c.observe(url, meta.PageFacts(2.5, True, 0.4, 3, terms, buckets=np.arange(3)), {})
    assert np.array_equal(a.terms.counts, b.terms.counts)
    assert a.terms.pages == b.terms.pages and a.terms.total == b.terms.total
    assert c.terms.counts[:3].all() and not c.terms.counts[3:].any()
