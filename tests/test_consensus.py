"""In-link consensus (``focused.ranking.consensus``) and its use by ``learning``."""

from __future__ import annotations

import numpy as np
import pytest

from focused import meta
from focused.meta import PageFacts
from focused.ranking.consensus import LinkConsensus, url_key
from focused.ranking.learning import decode_evidence
from focused.ranking.relevance import term_counts
from focused.strategies import Link, Parent
from focused.strategies.learning import LearningStrategy

CHEM = {"chemistry": 5.0, "chemical": 4.0, "acid": 3.0}


def test_a_url_linked_by_topic_pages_only_beats_one_every_page_links_to():
    c = LinkConsensus(prior=1.0)
    topic_only, everywhere, unseen = c.keys(["http://h/Acid", "http://h/USA", "http://h/New"])
    for _ in range(3):  # three topic pages link to both
        c.add(np.array([topic_only, everywhere]), 0.8)
    for _ in range(20):  # twenty other pages link to the popular one only
        c.add(np.array([everywhere]), 0.05)
    mean = 0.1
    got = c.values(np.array([topic_only, everywhere, unseen]), mean).tolist()
    assert got[0] == pytest.approx((3 * 0.8 + mean) / 4, rel=1e-6)
    assert got[1] == pytest.approx((3 * 0.8 + 20 * 0.05 + mean) / 24, rel=1e-6)
    assert got[2] == pytest.approx(mean)  # nothing known: the crawl's mean
    assert got[0] > got[1]  # the count of in-links is not what ranks


def test_a_page_counts_once_for_a_url_it_links_to_twice():
    c = LinkConsensus(prior=1.0)
    k = url_key("http://h/Acid")
    c.add(np.array([k, k, k]), 1.0)
    assert c.n[k] == 1.0 and c.links == 1


def test_the_saved_consensus_is_the_same_after_loading():
    c = LinkConsensus(prior=2.0)
    keys = c.keys([f"http://h/{i}" for i in range(50)])
    rng = np.random.default_rng(3)
    for _ in range(40):
        c.add(rng.choice(keys, 5, replace=False), float(rng.random()))
    d = LinkConsensus(prior=2.0)
    d.load_state(c.state())
    assert d.values(keys, 0.2).tolist() == c.values(keys, 0.2).tolist()
    assert d.links == c.links


def facts(page_relevance: float, relevant: bool, text: str) -> PageFacts:
    return PageFacts(
        page_relevance=page_relevance, relevant=relevant, terms=tuple(term_counts(text))
    )


def parent(url: str, relevance: float) -> Parent:
    return Parent(url, relevance, relevance > 1.0, relevance / 5, 100.0, 0, 1, 2)


def test_learning_moves_up_the_waiting_link_topic_pages_agree_on():
    """Two links of one page with alike anchors wait with equal values; then two more
    topic pages link to Iron and a football page to Tin. Rescored, Iron is above Tin
    with the consensus on, and they stay equal with it off."""
    for share in (0.0, 0.3):
        s = LearningStrategy(keywords=CHEM, consensus=share)
        s.observe("http://h/Chemistry", facts(3.0, True, "chemistry acid"), {})
        s.observe("http://h/Football", facts(0.0, False, "football goal"), {})
        iron = Link("http://h/wiki/Iron", 0.0, "iron", "")
        tin = Link("http://h/wiki/Tin", 0.0, "tin", "")
        first = s.score_links(parent("http://h/Metal", 2.0), [iron, tin])
        assert first[0] is not None and first[1] is not None
        assert first[0].value == pytest.approx(first[1].value)
        blobs = [first[0].meta[meta.EVIDENCE], first[1].meta[meta.EVIDENCE]]
        _terms, _parents, _ids, keys = decode_evidence(blobs)
        want_keys = [url_key(iron.url), url_key(tin.url)] if share else [0, 0]
        assert keys.tolist() == want_keys
        _prios, values = s.rescore(blobs)  # nothing new: the same values
        assert values == pytest.approx([first[0].value, first[1].value])
        for name in ("Acid", "Oxide"):
            s.score_links(parent(f"http://h/{name}", 3.0), [iron])
        s.score_links(parent("http://h/Football", 0.0), [tin])
        _prios, (iron_value, tin_value) = s.rescore(blobs)
        if share:
            assert iron_value > tin_value
        else:
            assert iron_value == pytest.approx(tin_value)


def test_a_waste_page_adds_nothing_to_the_consensus():
    s = LearningStrategy(keywords=CHEM, consensus=0.3)
    link = [Link("http://h/wiki/Iron", 0.0, "iron", "")]
    waste = Parent("http://h/Talk:Iron", 3.0, True, 0.6, 100.0, 0, 1, 1, waste=True)
    s.score_links(waste, link)
    assert s.consensus_model is not None and s.consensus_model.links == 0
    s.score_links(parent("http://h/Acid", 3.0), link)
    assert s.consensus_model.links == 1
