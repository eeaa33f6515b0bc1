"""Where a link stands: the slot of its block (``FOCUSED_LEARNING_SLOT_SHARE``)."""

from __future__ import annotations

import numpy as np
import pytest
from scrapy.http import HtmlResponse

from focused import meta
from focused.meta import PageFacts
from focused.ranking.learning import (
    TermModel,
    decode_evidence,
    encode_evidence,
    evidence_priors,
    evidence_slots,
)
from focused.ranking.relevance import term_counts
from focused.strategies import Link, Parent
from focused.strategies.learning import LearningStrategy
from focused.web.template import HostTemplates, link_slots, split_page

CHEM = {"chemistry": 5.0, "chemical": 4.0, "acid": 3.0}
PARENT = Parent("http://h/p", 2.0, True, 0.4, 100.0, 0, 1, 4)


def news_page(name: str, prose: list[str], related: list[str]) -> HtmlResponse:
    """A news article: links in its prose, and a "Related articles" list after it."""
    inline = " ".join(f"<a href='/story/{p}'>{p}</a> and" for p in prose)
    items = "".join(f"<li><a href='/story/{r}'>{r}</a></li>" for r in related)
    body = (
        f"<html><head><title>{name}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<div class='main'><article><h1>{name}</h1><p>About {inline} more.</p></article>"
        f"<h3>Related articles</h3><ul class='list'>{items}</ul></div></body></html>"
    )
    return HtmlResponse(f"http://news.test/story/{name}", body=body.encode(), encoding="utf-8")


def slots_of(response: HtmlResponse) -> dict[str, int]:
    page = HostTemplates().classify("news.test", split_page(response.selector.root))
    return link_slots(page, lambda h: "http://news.test" + h)


def test_prose_links_and_a_related_list_stand_in_two_slots_the_same_on_every_page() -> None:
    a = slots_of(news_page("Acid", ["Base", "Salt"], ["Tennis", "Opera"]))
    b = slots_of(news_page("Base", ["Ion"], ["Volcano", "Piano", "Cricket"]))
    prose = {a["http://news.test/story/Base"], a["http://news.test/story/Salt"]}
    assert len(prose) == 1 and 0 not in prose
    related = {a["http://news.test/story/Tennis"], b["http://news.test/story/Piano"]}
    assert len(related) == 1 and related != prose  # another slot, whatever it lists
    assert b["http://news.test/story/Ion"] in prose  # the prose slot of every article
    assert "http://news.test/" not in a  # a chrome link has no slot


def test_a_link_in_prose_and_in_a_list_takes_its_first_block() -> None:
    page = slots_of(news_page("Acid", ["Base"], ["Base", "Opera"]))
    assert page["http://news.test/story/Base"] != page["http://news.test/story/Opera"]


def test_a_slot_learns_the_mean_label_of_its_pages_shrunk_to_the_crawl_s() -> None:
    t = TermModel(shrinkage=3.0)
    for _ in range(4):
        t.learn_page(["acid"], 0.8)
    for _ in range(6):
        t.learn_slot(7, 0.1)
    low, unknown, none = t.slot_scores(np.array([7, 8, 0])).tolist()
    assert unknown == pytest.approx(t.mean) and none == pytest.approx(t.mean)
    assert low == pytest.approx((6 * 0.1 + 3 * t.mean) / 9)
    # a slot is no term: the word scores and the page count do not move
    assert t.pages == 4 and t.document_frequency("acid") == 4


def test_evidence_carries_the_slot_with_or_without_a_prior() -> None:
    t = TermModel()
    links = t.terms_of(["http://h/a", "http://h/b"], ["acid", ""], ["strong acid", ""])
    slots = np.array([0xFFFFFFF0, 5])
    priors = np.array([0.25, 0.75])
    for with_prior in (False, True):
        records = encode_evidence(links, 0.5, 0, priors if with_prior else None, slots)
        assert evidence_slots(records).tolist() == slots.tolist()
        got = evidence_priors(records)
        if with_prior:
            assert got == pytest.approx(priors, abs=1e-4)
        else:
            assert np.isnan(got).all()
        terms, parents, _ = decode_evidence(records)
        assert terms.buckets.tolist() == links.buckets.tolist()
        assert parents.tolist() == [0.5, 0.5]
    # a record of before (no slot) is read as slot 0
    assert evidence_slots(encode_evidence(links, 0.5)).tolist() == [0, 0]


def _page(s: LearningStrategy, url: str, relevance: float, text: str, *, slot: int, parent: float):
    terms = tuple(term_counts(text))
    link = {meta.LINK_SLOT: slot, meta.PARENT_RELEVANCE: parent}
    s.observe(url, PageFacts(relevance, relevance > 2.0, terms=terms), link)


def _taught(share: float) -> LearningStrategy:
    """Acid pages reached through prose (slot 1) from good pages; random pages reached
    through a related list (slot 2) from the same good pages."""
    s = LearningStrategy(keywords=CHEM, slot_share=share)
    for i in range(6):
        _page(s, f"http://h/c{i}", 3.0, "acid chemistry salt", slot=1, parent=0.6)
        _page(s, f"http://h/r{i}", 0.01, "tennis opera volcano", slot=2, parent=0.6)
    return s


def test_a_slot_whose_links_led_off_topic_costs_its_links_and_a_good_one_costs_nothing() -> None:
    s, off = _taught(0.5), _taught(0.0)
    same = ("http://h/story/Salt", 0.0, "salt", "")
    prose, listed, unknown = s.score_links(
        PARENT, [Link(*same, slot=1), Link(*same, slot=2), Link(*same, slot=3)]
    )
    plain = off.score_links(PARENT, [Link(*same, slot=1)])[0]
    assert prose is not None and listed is not None and unknown is not None and plain
    assert listed.value < prose.value
    # the prose slot is better than the mean, an unknown slot is the mean: both free
    assert prose.value == pytest.approx(plain.value)
    assert unknown.value == pytest.approx(plain.value)
    ratio = min(1.0, float(s.terms.slot_scores(np.array([2]))[0]) / s.terms.mean)
    assert listed.value == pytest.approx(plain.value * ratio**0.5)
    # waiting links are rescored with their slot: the same values while nothing changed
    blobs = [sc.meta[meta.EVIDENCE] for sc in (prose, listed, unknown)]
    assert s.rescore(blobs)[1] == pytest.approx([prose.value, listed.value, unknown.value])


def test_links_of_an_off_topic_page_do_not_teach_their_slot() -> None:
    """From an off-topic page every slot leads off-topic, and a random list looks best:
    only links of pages at least as good as the crawl's mean label teach a slot."""
    s = LearningStrategy(keywords=CHEM, slot_share=0.5)
    for i in range(4):
        _page(s, f"http://h/c{i}", 3.0, "acid chemistry", slot=9, parent=0.6)
    before = s.terms.slot_scores(np.array([2, 1])).tolist()
    _page(s, "http://h/x", 0.01, "tennis", slot=2, parent=0.0)  # from a poor page
    _page(s, "http://h/y", 0.01, "tennis", slot=1, parent=0.6)  # from a good page
    after = s.terms.slot_scores(np.array([2, 1])).tolist()
    assert after[0] == pytest.approx(s.terms.mean) and before[0] != after[0]  # mean moved only
    assert after[1] < s.terms.mean  # the good page's link taught slot 1


def test_links_without_a_slot_are_scored_as_before() -> None:
    s, off = _taught(0.5), _taught(0.0)
    links = [Link("http://h/story/Salt", 0.0, "salt", ""), Link("http://h/x", 0.0, "opera", "")]
    got, plain = s.score_links(PARENT, links), off.score_links(PARENT, links)
    assert [g.value for g in got] == [p.value for p in plain]  # type: ignore[union-attr]
    assert [g.meta for g in got] == [p.meta for p in plain]  # type: ignore[union-attr]


def test_with_rescoring_the_slot_comes_back_in_the_evidence_alone() -> None:
    """The frontier keeps a link's evidence packed: the slot and the parent's label
    travel in it, so no other meta key gives the waiting link an extra."""
    s = _taught(0.5)
    assert s.rescores and s.link_slots
    (score,) = s.score_links(PARENT, [Link("http://h/story/Salt", 0.0, "salt", "", slot=7)])
    assert score is not None and set(score.meta) == {meta.EVIDENCE}
    before = float(s.terms.slot_scores(np.array([7]))[0])
    tennis = tuple(term_counts("tennis opera"))
    s.observe("http://h/z", PageFacts(0.01, False, terms=tennis), score.meta)
    assert s.slot_pages == 13  # the 12 of _taught, then this one, from its evidence
    assert float(s.terms.slot_scores(np.array([7]))[0]) < before


def test_a_slot_past_32_bits_is_the_same_slot_when_rescored() -> None:
    s = _taught(0.5)
    links = [Link("http://h/story/Salt", 0.0, "salt", "", slot=2 + (1 << 32))]
    (wide,) = s.score_links(PARENT, links)
    (same,) = s.score_links(PARENT, [Link("http://h/story/Salt", 0.0, "salt", "", slot=2)])
    (wrapped,) = s.score_links(PARENT, [Link("http://h/story/Salt", 0.0, "salt", "", slot=1 << 32)])
    assert wide is not None and same is not None and wrapped is not None
    assert wide.value == pytest.approx(same.value)
    assert evidence_slots([wrapped.meta[meta.EVIDENCE]]).tolist() == [1]  # never "no slot"
    assert s.rescore([wide.meta[meta.EVIDENCE]])[1] == pytest.approx([wide.value])


def test_a_strategy_without_slots_asks_the_spider_for_none() -> None:
    assert not LearningStrategy(keywords=CHEM, slot_share=0.0).link_slots
    assert LearningStrategy(keywords=CHEM).link_slots


def test_a_scored_link_leaves_the_middleware_with_packed_meta_only() -> None:
    """Slot and text are read once: what waits in the frontier is packed (no extra)."""
    from scrapy import Request

    from focused.middlewares import FocusedPriorityMiddleware
    from focused.scheduler import PACKED_META

    strategy = _taught(0.5)
    mw = FocusedPriorityMiddleware(strategy)
    response = HtmlResponse(
        "http://h/wiki/Iron.html",
        body=b"<html><body>iron</body></html>",
        request=Request("http://h/wiki/Iron.html", meta={meta.M: 100.0, meta.DEPTH: 1}),
    )
    response.meta[meta.PAGE] = PageFacts(2.5, True, terms=tuple(term_counts("acid salt")))
    links = [
        Request(
            f"http://h/wiki/{name}.html",
            meta={meta.ANCHOR_TEXT: name, meta.LINK_CONTEXT: "", meta.LINK_SLOT: slot},
        )
        for name, slot in (("Salt", 1), ("Opera", 2))
    ]
    out = list(mw.process_spider_output(response, links))
    assert out == links
    for request in out:
        assert set(request.meta) <= PACKED_META, set(request.meta) - PACKED_META
    assert links[1].meta[meta.LINK_VALUE] < links[0].meta[meta.LINK_VALUE]  # slot 2 costs
