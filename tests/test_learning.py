"""The online learners of the ``learning`` strategy, on hand-made examples.

Everything here is deterministic: no wall clock, SGD seeded, no network.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from parsel import Selector
from scrapy import Request
from scrapy.http import HtmlResponse

from focused import meta
from focused.meta import PageFacts
from focused.middlewares import FocusedPriorityMiddleware
from focused.ranking.learning import (
    HubModel,
    LinkClassifier,
    LinkEvidence,
    TermModel,
    TermWeights,
    VocabularyExpander,
    context_window,
    decode_evidence,
    degree,
    label,
    link_contexts,
    page_name,
    same_page_name,
    url_words,
)
from focused.ranking.relevance import TopicVector, term_counts
from focused.strategies import Link, LinkScore, Parent, build, strategy_class
from focused.strategies.learning import SEED_VALUE, LearningStrategy

CHEM = {"chemistry": 5.0, "chemical": 4.0, "acid": 3.0, "元素": 3.0}


def facts(page_relevance: float, relevant: bool, text: str = "") -> PageFacts:
    """What the spider tells about a page of ``text`` (its distinct terms)."""
    terms = tuple(term_counts(text))
    return PageFacts(page_relevance=page_relevance, relevant=relevant, terms=terms)


def learn(
    s: LearningStrategy,
    url: str,
    page_relevance: float,
    relevant: bool,
    text: str = "",
    *,
    link: dict | None = None,
) -> None:
    s.observe(url, facts(page_relevance, relevant, text), link or {})


def ev(url: str, anchor: str = "", context: str = "", **kw: float) -> LinkEvidence:
    return LinkEvidence(url, anchor, context, **kw)  # type: ignore[arg-type]


# --- labels ----------------------------------------------------------------------------
def test_label_is_a_monotone_log_scale_from_0_to_1():
    assert label(0.0) == 0.0
    assert label(1.0) == pytest.approx(1.0)
    values = [label(d) for d in (0.0, 0.001, 0.01, 0.05, 0.2, 1.0)]
    assert values == sorted(values) and len(set(values)) == len(values)
    # the log scale keeps the contrast of small relevances: a page 10x more relevant than
    # the background is far up the scale, not at 1 % of it as on a linear scale
    assert label(0.02) > 0.35 > label(0.002) > 0.1
    assert label(-3.0) == 0.0 and label(7.0) == pytest.approx(1.0)
    assert label(0.01, floor=0.01) < label(0.01, floor=0.001)


def test_degree_scales_page_relevance_by_the_title_weight():
    assert degree(2.5, 4.0) == pytest.approx(0.5)
    assert degree(9.0, 4.0) == 1.0
    assert degree(-1.0) == 0.0
    assert degree(float("nan")) == 0.0


# --- link evidence ---------------------------------------------------------------------
def test_url_words_are_the_last_path_segments_without_extension():
    assert url_words("http://h/wiki/Sodium_chloride.html") == ["sodium", "chloride"]
    assert url_words("http://h/wiki/AT%26T.html?x=1#top") == ["t"]  # "at": a stop word
    assert url_words("http://h/a/b/c/Iron-oxide/") == ["iron", "oxide"]
    assert url_words("http://h/") == []


def test_context_window_keeps_words_on_each_side():
    before = "one two three four five six seven eight nine ten"
    after = "alpha beta gamma"
    assert context_window(before, after, words=3) == "eight nine ten alpha beta gamma"
    assert len(context_window("x " * 500, "y " * 500)) <= 160


def test_link_contexts_by_absolute_url_first_link_wins():
    html = (
        "<html><body><p>Iron reacts with <a href='Oxygen.html'>oxygen</a> to form rust, "
        "and with <a href='Sulfur.html'>sulfur</a> when heated.</p>"
        "<p>See <a href='Oxygen.html'>oxygen</a> again.</p><a href='Top.html'>top</a>"
        "<a>no href</a></body></html>"
    )
    root = Selector(text=html).root
    contexts = link_contexts(root, lambda href: "http://h/wiki/" + href.strip())
    assert set(contexts) == {
        "http://h/wiki/Oxygen.html",
        "http://h/wiki/Sulfur.html",
        "http://h/wiki/Top.html",
    }
    oxygen = contexts["http://h/wiki/Oxygen.html"]
    assert oxygen.startswith("Iron reacts with") and "rust" in oxygen and "again" not in oxygen
    assert "heated" in contexts["http://h/wiki/Sulfur.html"]
    assert contexts["http://h/wiki/Top.html"] == ""  # no text run next to it


# --- the term model --------------------------------------------------------------------
def test_term_model_scores_links_by_what_pages_using_their_words_were():
    model = TermModel()
    assert model.mean == 0.0
    for _ in range(5):
        model.learn_text("Cobalt is a metal; its oxide and its salts", 0.9)
        model.learn_text("Football is a game with a ball and a goal", 0.1)
    assert model.mean == pytest.approx(0.5)
    scores = model.score(
        [
            ev("http://h/wiki/Cobalt.html", "cobalt"),
            ev("http://h/wiki/Goal.html", "goal"),
            ev("http://h/wiki/Zzz.html", "zzz"),  # never seen: the mean
            ev("http://h/wiki/X.html", ""),  # "x" never seen either
        ]
    )
    assert scores[0] > scores[2] > scores[1]
    assert scores[2] == pytest.approx(0.5) and scores[3] == pytest.approx(0.5)


def test_term_model_shrinks_rare_terms_to_the_mean():
    model = TermModel(shrinkage=3.0)
    model.learn_text("common rare", 1.0)
    for _ in range(9):
        model.learn_text("common", 1.0)
    for _ in range(10):
        model.learn_text("other", 0.0)
    once, ten = model.score([ev("http://h/a", "rare"), ev("http://h/b", "common")])
    assert model.mean == pytest.approx(0.5)
    assert 0.5 < once < ten < 1.0
    assert once == pytest.approx((1.0 + 3 * 0.5) / (1 + 3))


def test_term_model_url_words_count_when_the_anchor_says_nothing():
    model = TermModel(context_share=0.0)
    model.learn_text("sodium chemistry", 1.0)
    model.learn_text("click here for more", 0.0)
    here, url = model.score(
        [ev("http://h/page1", "click here"), ev("http://h/wiki/Sodium.html", "click here")]
    )
    assert url > here


def test_term_model_mixes_in_the_context():
    model = TermModel(context_share=0.5)
    for _ in range(3):
        model.learn_text("acid base salt", 1.0)
        model.learn_text("goal ball", 0.0)
    plain, with_ctx = model.score(
        [ev("http://h/n", "neutral"), ev("http://h/n", "neutral", "an acid and a base")]
    )
    assert with_ctx > plain


def test_keyword_pseudo_pages_bootstrap_the_term_model():
    cold = TermModel(CHEM, keyword_pages=0.0)
    warm = TermModel(CHEM, keyword_pages=3.0)
    links = [ev("http://h/a", "acid"), ev("http://h/b", "football")]
    assert cold.score(links)[0] == cold.score(links)[1]
    acid, football = warm.score(links)
    assert acid > football


def test_term_model_same_bucket_for_str_and_utf8():
    model = TermModel()
    assert model.feature("élément") == model.feature("élément".encode())
    model.learn_page([b"\xc3\xa9l\xc3\xa9ment"], 1.0)
    model.learn_page(["other"], 0.0)
    assert model.score([ev("http://h/a", "élément")])[0] > model.mean


# --- relevance feedback ----------------------------------------------------------------
def _pages(expander: VocabularyExpander) -> None:
    for i in range(6):
        expander.add_page(["chemistry", "reaction", "oxide", f"rare{i}", "the"], True)
        expander.add_page(["football", "goal", "the"], False)


def test_vocabulary_expansion_is_bounded_and_keeps_the_topic():
    expander = VocabularyExpander(CHEM, max_terms=1, weight_cap=0.5, min_pages=3)
    assert expander.expansion() == {}  # nothing learnt yet
    _pages(expander)
    added = expander.expansion()
    assert len(added) == 1  # at most max_terms
    term, weight = next(iter(added.items()))
    assert term in {"reaction", "oxide"}
    mean = sum(CHEM.values()) / len(CHEM)
    assert 0 < weight <= 0.5 * mean + 1e-9
    merged = expander.keywords()
    assert {k: merged[k] for k in CHEM} == CHEM  # the original keywords never change


def test_vocabulary_expansion_ignores_terms_everywhere_or_rare_or_known():
    expander = VocabularyExpander(CHEM, max_terms=10, min_pages=3)
    _pages(expander)
    added = expander.expansion()
    assert set(added) == {"reaction", "oxide"}  # not "the" (everywhere), "rare3" (once),
    # "chemistry" (a keyword already) nor football (irrelevant pages only)


def test_vocabulary_expansion_with_background_frequencies():
    model = TermModel()
    expander = VocabularyExpander(CHEM, max_terms=10, min_pages=3)
    for _ in range(4):
        model.learn_page(["oxide", "the"], 1.0)
        expander.add_relevant(["oxide", "the"])
        for _ in range(3):
            model.learn_page(["the", "goal"], 0.0)
    added = expander.expansion(model.document_frequency, model.pages)
    assert set(added) == {"oxide"}


def test_term_weights_agree_with_the_topic_vector():
    weights = {"acid": 3.0, "base": 2.0, "salt water": 1.0}
    mine, topic = TermWeights(weights), TopicVector(weights)
    texts = ["acid", "an acid and a base", "salt", "nothing here", "", "acid acid salt"]
    np.testing.assert_allclose(mine.cosines(texts), topic.cosines(texts), atol=1e-9)


def test_a_learnt_compound_adds_no_weight_to_the_keywords_inside_it(own_words: None) -> None:
    """A crawl of the chemistry topic learns 化学元素 (a page's term: jieba keeps it
    whole). Its page terms are 化学元素 化学 元素, but as a keyword of the expanded topic
    it is one term, as the topic's vector cuts its keywords: 元素 keeps its own weight
    (it had 4.0 for 3.0, the compound's 1.0 added), and so do the term model's keyword
    pseudo-pages."""
    from focused.ranking import relevance
    from focused.web.topics import load_topic

    topic = dict(load_topic("chemistry").keywords)
    relevance.hold_words()  # the crawl
    try:
        TopicVector(topic)
        assert relevance.tokenize("化学元素") == ["化学元素", "化学", "元素"]  # page text
        expanded = {**topic, "化学元素": 1.0, "化学家": 1.0}
        weights = TermWeights(expanded).weights
        for keyword in ("元素", "化学", "化合物", "化学反应"):
            assert weights[keyword] / weights["化学元素"] == pytest.approx(topic[keyword])
        pseudo = TermModel(expanded, keyword_pages=3.0)
        assert pseudo.counts[pseudo.feature("元素")] == 3.0
        assert pseudo.counts[pseudo.feature("化学元素")] == 3.0
        # English terms of the expanded topic: the same weights as before
        english = {"acid": 3.0, "base": 2.0, "salt water": 1.0}
        np.testing.assert_allclose(
            TermWeights(english).cosines(["acid", "salt", "an acid and a base"]),
            TopicVector(english).cosines(["acid", "salt", "an acid and a base"]),
            atol=1e-9,
        )
    finally:
        relevance.release_words()


# --- the link classifier ---------------------------------------------------------------
def _train(seed: int) -> LinkClassifier:
    clf = LinkClassifier(batch_size=8, seed=seed)
    for i in range(120):
        good = i % 3 == 0
        name = f"alpha{i}" if good else f"beta{i}"
        context = "strong acid reaction" if good else "league season goal"
        clf.learn(
            LinkEvidence(f"http://h/{name}", name, context, 0.5, 0.1, 0, 0.3), 0.9 if good else 0.1
        )
    clf.flush()
    return clf


def test_link_classifier_learns_from_link_evidence_and_is_repeatable():
    untrained = LinkClassifier()
    probe = [
        LinkEvidence("http://h/a", "x", "an acid reaction", 0.5, 0.1, 0, 0.3),
        LinkEvidence("http://h/b", "y", "the goal of the season", 0.5, 0.1, 0, 0.3),
    ]
    np.testing.assert_allclose(untrained.predict(probe), [0.3, 0.3])  # term scores
    one, two = _train(7).predict(probe), _train(7).predict(probe)
    np.testing.assert_array_equal(one, two)
    assert one[0] > one[1] + 0.05
    assert ((one >= 0.0) & (one <= 1.0)).all()


# --- the strategy ----------------------------------------------------------------------
PARENT = Parent("http://h/wiki/Iron.html", 0.5, True, 0.1, 100.0, 0, 1, 3)


def test_learning_is_registered_and_built_with_the_topic_keywords():
    assert strategy_class("learning") is LearningStrategy
    s = build("learning", keywords=CHEM, seed=3, options={"shrinkage": 5.0})
    assert isinstance(s, LearningStrategy)
    assert s.keywords == CHEM and s.shrinkage == 5.0 and s.random_seed == 3
    assert s.link_evidence is True and s.learns is True and s.anneal is False


def test_the_parent_label_discounts_links_of_irrelevant_pages():
    s = LearningStrategy(keywords=CHEM, parent_share=0.5)
    for i in range(3):
        learn(s, f"http://h/c{i}", 1.0, True, "acid base salt")
    link = [Link("http://h/wiki/Acid.html", 0.5, "acid", "")]
    good = s.score_links(PARENT, link)[0]
    poor = s.score_links(Parent("http://h/p", 0.0, False, 0.0, 100.0, 0, 1, 1), link)[0]
    alone = LearningStrategy(keywords=CHEM, parent_share=0.0)
    for i in range(3):
        learn(alone, f"http://h/c{i}", 1.0, True, "acid base salt")
    assert good.value > poor.value > 0  # type: ignore[union-attr]
    # the value mixes the learnt score with the parent's own label: s**0.5 * label**0.5
    learnt = alone.score_links(PARENT, link)[0].value  # type: ignore[union-attr]
    parent_label = label(degree(PARENT.page_relevance))
    assert good.value == pytest.approx(learnt**0.5 * parent_label**0.5, rel=1e-9)  # type: ignore[union-attr]


def _talk_page(s: LearningStrategy, waste: bool) -> None:
    """A thread's second page: its title names the topic (A high), its own words are a
    user's name and a line of talk."""
    own = tuple(term_counts("Alder wrote: I read about it too."))
    terms = own + tuple(term_counts("Acid - page 2"))
    facts = PageFacts(2.5, True, 0.0, 3, terms, waste, own if waste else None)
    s.observe("http://f/thread/Acid?page=2", facts, {})


def test_a_waste_page_is_never_a_positive_label():
    """A page the spider judged waste teaches its words a label of 0, however relevant
    its title made it; the same page not judged waste teaches them its high label."""
    waste, plain = LearningStrategy(keywords=CHEM), LearningStrategy(keywords=CHEM)
    for s in (waste, plain):
        learn(s, "http://h/c", 1.5, True, "acid base salt chemistry")
        learn(s, "http://h/f", 0.01, False, "striker goal football")
    _talk_page(waste, waste=True)
    _talk_page(plain, waste=False)
    user = [Link("http://f/user/Alder", 0.0, "Alder", "")]
    on = waste.score_links(PARENT, user)[0]
    off = plain.score_links(PARENT, user)[0]
    assert on is not None and off is not None
    assert on.value < off.value
    # the label of 0 puts the user's name below a word never seen
    t = waste.terms
    alder, unseen = t.score_terms(
        t.terms_of(["http://f/", "http://f/"], ["alder", "zyx"], ["", ""])
    )
    assert alder < unseen
    assert waste.exploration.relevant == 1 and plain.exploration.relevant == 2
    assert waste.stats()["waste_pages"] == 1.0 and plain.stats()["waste_pages"] == 0.0
    assert waste.expander.relevant_pages == 1  # no relevance feedback from it
    # a waste page's links have a parent worth nothing: discounted like those of an
    # irrelevant page
    link = [Link("http://h/wiki/Acid.html", 0.5, "acid", "")]
    talk = Parent("http://f/thread/Acid?page=2", 2.5, True, 0.0, 100.0, 0, 1, 3, True)
    article = Parent("http://f/thread/Acid?page=2", 2.5, True, 0.0, 100.0, 0, 1, 3)
    assert waste.score_links(talk, link)[0].value < waste.score_links(article, link)[0].value  # type: ignore[union-attr]
    # FOCUSED_LEARNING_WASTE_LABEL=False: the page's keyword label as before
    old = LearningStrategy(keywords=CHEM, waste_label=False)
    learn(old, "http://h/c", 1.5, True, "acid base salt chemistry")
    learn(old, "http://h/f", 0.01, False, "striker goal football")
    _talk_page(old, waste=True)
    assert old.score_links(PARENT, user)[0].value == pytest.approx(off.value)  # type: ignore[union-attr]


def test_page_name_is_shared_by_a_page_s_variants():
    iron = page_name("http://w/wiki/Iron")
    assert iron == ("wiki", "iron")
    for url in (
        "http://w/wiki/Talk:Iron",
        "http://w/wiki/Iron?printable=yes",
        "http://w/m/wiki/Iron",
        "http://x/wiki/Iron.html?oldid=3",
    ):
        assert same_page_name(page_name(url), iron), url
    thread = page_name("http://f/thread/Iron")
    assert same_page_name(page_name("http://f/thread/Iron?page=2"), thread)
    assert same_page_name(page_name("http://f/m/thread/Iron"), thread)
    assert not same_page_name(page_name("http://w/wiki/Iron_oxide"), iron)
    # the same file name in another folder is another page
    assert not same_page_name(page_name("http://s/physics/p20.html"), page_name("http://s/c/p20"))
    assert page_name("http://w/") == () and not same_page_name((), ())


def test_a_link_to_a_variant_of_its_page_is_not_valued_by_the_page_s_name():
    """On the Acid page, the links to its talk page and its second page carry "acid" in
    their URLs, the page's own name: they are valued by their anchors ("Talk", "2")
    alone, below a link to another acid article; from another page the same talk link
    keeps its URL's words. FOCUSED_LEARNING_OWN_NAME=False: valued by them."""
    on, off = LearningStrategy(keywords=CHEM), LearningStrategy(keywords=CHEM, own_name=False)
    for s in (on, off):
        learn(s, "http://h/wiki/Acid", 2.0, True, "acid base salt chemistry")
        learn(s, "http://h/wiki/Goal", 0.01, False, "striker goal football")
    acid = Parent("http://h/wiki/Acid", 2.0, True, 0.4, 100.0, 0, 1, 3)
    salt = Parent("http://h/wiki/Salt", 2.0, True, 0.4, 100.0, 0, 1, 3)
    links = [
        Link("http://h/wiki/Talk:Acid", 0.0, "Talk", ""),
        Link("http://h/wiki/Acid?page=2", 0.0, "2", ""),
        Link("http://h/wiki/Acid_rain", 0.0, "Acid rain", ""),
    ]
    talk, second, rain = (x.value for x in on.score_links(acid, links))  # type: ignore[union-attr]
    assert talk < rain and second < rain
    elsewhere = on.score_links(salt, links[:1])[0].value  # type: ignore[union-attr]
    assert talk < elsewhere
    assert on.stats()["own_name_links"] == 2.0  # the talk page and the second page
    old = [x.value for x in off.score_links(acid, links)]  # type: ignore[union-attr]
    assert old[0] == pytest.approx(elsewhere) and old[2] == pytest.approx(rain)


def test_seed_outranks_every_link():
    s = LearningStrategy(keywords=CHEM)
    learn(s, "http://h/wiki/Acid.html", 5.0, True, "acid acid acid chemistry")
    links = s.score_links(PARENT, [Link("http://h/wiki/Acid.html", 1.0, "acid", "acid")])
    assert links[0] is not None and links[0].value <= 1.0
    assert s.seed().priority > links[0].priority
    assert s.seed().value == 1.0 and s.seed().m == s.m0 and SEED_VALUE > 1.0


def test_observed_pages_teach_which_links_to_follow():
    s = LearningStrategy(keywords=CHEM)
    links = [
        Link("http://h/wiki/Cobalt.html", 0.0, "cobalt", "a metal like iron"),
        Link("http://h/wiki/Striker.html", 0.0, "striker", "scored a goal"),
    ]
    before = s.score_links(PARENT, links)
    assert before[0].value == before[1].value  # type: ignore[union-attr]
    for i in range(4):
        learn(s, f"http://h/c{i}", 1.5, True, "cobalt nickel iron metal oxide chemistry")
        learn(s, f"http://h/f{i}", 0.01, False, "striker goal league football season")
    after = s.score_links(PARENT, links)
    assert after[0].value > after[1].value  # type: ignore[union-attr]
    assert isinstance(after[0], LinkScore)
    # requests carry the link's rescoring evidence only, without the classifier
    assert set(after[0].meta) == {meta.EVIDENCE}
    with_classifier = LearningStrategy(keywords=CHEM, link_model=True)
    extra = with_classifier.score_links(PARENT, links)[0].meta  # type: ignore[union-attr]
    assert set(extra) == {meta.PARENT_RELEVANCE, meta.TERM_SCORE}
    assert s.stats()["pages"] == 8


def test_side_channels_are_dropped_past_max_hops():
    s = LearningStrategy(keywords=CHEM, max_hops=2, ratio=0.5)
    deep = Parent("http://h/x", 0.0, False, 0.0, 100.0 * 0.5**2, 2, 5, 2)
    scores = s.score_links(
        deep, [Link("http://h/a", 0.0, "nothing", ""), Link("http://h/b", 0.9, "acid", "")]
    )
    assert scores[0] is None  # a third irrelevant hop
    assert scores[1] is not None and scores[1].m == s.m0  # a relevant anchor restores M0


def test_relevance_feedback_expands_the_topic_for_the_channel():
    s = LearningStrategy(keywords=CHEM, expand_terms=5, expand_every=3)
    for i in range(6):
        learn(s, f"http://h/c{i}", 2.0, True, "chemistry titration burette reagent")
        learn(s, f"http://h/f{i}", 0.0, False, "football goal")
    assert 0 < s.stats()["expanded_terms"] <= 5
    # "titration" is not a keyword, yet its anchor now counts as relevant: main channel
    side = Parent("http://h/x", 0.0, False, 0.0, 80.0, 1, 3, 2)
    score = s.score_links(side, [Link("http://h/t", 0.0, "titration", "")])[0]
    assert score is not None and score.m == s.m0


def test_the_learning_strategy_is_repeatable():
    def crawl() -> list[float]:
        s = LearningStrategy(keywords=CHEM, link_model=True, batch_size=4, classifier_prior=1.0)
        out = []
        for i in range(30):
            learn(
                s,
                f"http://h/p{i}",
                (i % 4) * 0.5,
                i % 4 == 3,
                f"word{i % 7} acid goal {i}",
                link={
                    meta.ANCHOR_TEXT: f"word{i % 5}",
                    meta.LINK_CONTEXT: "acid",
                    meta.PARENT_RELEVANCE: 0.2,
                },
            )
            scores = s.score_links(PARENT, [Link(f"http://h/q{i}", 0.1, f"word{i % 7}", "acid")])
            out.append(scores[0].value)  # type: ignore[union-attr]
        return out

    first = crawl()
    assert first == crawl()
    assert not math.isnan(sum(first))


# --- the middleware hook (a real Scrapy response through the real middleware) ----------
def test_middleware_learns_from_a_page_before_scoring_its_links():
    strategy = LearningStrategy(keywords=CHEM)
    for i in range(3):  # what the crawl saw before: football pages, label ~0
        learn(strategy, f"http://h/f{i}", 0.0, False, "striker goal league football")
    mw = FocusedPriorityMiddleware(strategy)
    response = HtmlResponse(
        "http://h/wiki/Iron.html",
        body=b"<html><body>iron</body></html>",
        request=Request("http://h/wiki/Iron.html", meta={meta.M: 100.0, meta.DEPTH: 1}),
    )
    response.meta[meta.PAGE] = facts(2.0, True, "cobalt nickel manganese oxide chemistry")
    requests = [
        Request("http://h/wiki/Striker.html", meta={meta.ANCHOR_TEXT: "striker"}),
        Request("http://h/wiki/Cobalt.html", meta={meta.ANCHOR_TEXT: "cobalt"}),
        Request("http://h/wiki/Known.html", meta={meta.LINK_VALUE: 0.25}),  # scored before
    ]
    item, second = {"url": response.url}, {"url": response.url, "again": True}
    out = list(mw.process_spider_output(response, [*requests, item, second]))
    # spider order, requests before the item
    assert out[:3] == requests and out[3] is item and out[4] is second
    assert strategy.pages == 4  # the page was observed once, whatever it yields
    striker, cobalt, known = requests
    # had the links been scored before the page was learnt, "cobalt" would be unknown and
    # score the mean label (0): the same as "striker"
    assert cobalt.priority > striker.priority
    assert cobalt.meta[meta.LINK_VALUE] > striker.meta[meta.LINK_VALUE] > 0
    assert known.meta[meta.LINK_VALUE] == 0.25 and known.priority == 0  # left alone
    assert meta.TERM_SCORE not in cobalt.meta  # no classifier: nothing more in the request
    assert cobalt.meta[meta.M] == strategy.m0 * strategy.ratio  # "cobalt" is no keyword: side


def test_middleware_scores_a_strategy_that_does_not_learn_the_same_way():
    mw = FocusedPriorityMiddleware(build("best_first"))
    response = HtmlResponse("http://h/a", body=b"<html></html>", request=Request("http://h/a"))
    response.meta[meta.PAGE] = PageFacts(page_relevance=2.5, relevant=True)
    user = {"m": "mine", "hops": [1], "link_value": "kept"}  # a spider's own meta keys
    request = Request("http://h/b", meta=dict(user))
    out = list(mw.process_spider_output(response, [request, {"url": "http://h/a"}]))
    assert out[0] is request and request.meta[meta.LINK_VALUE] == pytest.approx(0.5)
    assert {k: request.meta[k] for k in user} == user  # returned as given


# --- rescoring the waiting links --------------------------------------------------------
def test_rescoring_evidence_gives_the_same_values_until_the_model_changes():
    s = LearningStrategy(keywords=CHEM)
    learn(s, "http://h/c", 1.5, True, "cobalt nickel metal oxide chemistry 元素")
    learn(s, "http://h/f", 0.01, False, "striker goal football")
    links = [
        Link("http://h/wiki/Cobalt.html", 0.0, "cobalt", "a metal like iron"),
        Link("http://h/wiki/Striker.html", 0.0, "striker", ""),
        Link("http://h/wiki/%E5%85%83%E7%B4%A0", 0.0, "", "元素 和 化学"),
        Link("http://h/", 0.0, "", ""),  # no words at all: the mean
    ]
    parent = Parent("http://h/p", 0.2, False, 0.1, 100.0, 0, 1, 4)
    scores = s.score_links(parent, links)
    blobs = [sc.meta[meta.EVIDENCE] for sc in scores]  # type: ignore[union-attr]
    assert all(len(b) < 44 for b in blobs)  # 18 bytes and 3 per term
    terms, parents, parent_ids = decode_evidence(blobs)
    assert terms.n_names.tolist()[:2] == [2, 2] and terms.n_contexts.tolist()[1] == 0
    assert parents.tolist() == [label(degree(0.2))] * 4 and parent_ids.tolist() == [0] * 4
    prios, values = s.rescore(blobs)
    assert prios == [sc.priority for sc in scores]  # type: ignore[union-attr]
    assert values == [sc.value for sc in scores]  # type: ignore[union-attr]
    # the model learns that striker pages are relevant after all: the waiting link moves
    for i in range(5):
        learn(s, f"http://h/s{i}", 2.0, True, "striker chemistry")
    prios2, _ = s.rescore(blobs)
    assert prios2[1] > prios[1] and prios2[1] - prios2[0] > prios[1] - prios[0]
    assert s.rescorings == 2 and s.rescored == 8
    # a damaged record is a link without terms (the mean), not an error
    assert len(s.rescore([b"", b"\x05\x00"])[0]) == 2


def test_no_rescoring_evidence_with_the_classifier_or_when_rescoring_is_off():
    links = [Link("http://h/wiki/Cobalt.html", 0.0, "cobalt", "metal")]
    for s in (LearningStrategy(keywords=CHEM, rescore_links=False),):
        assert s.score_links(PARENT, links)[0].meta == {}  # type: ignore[union-attr]
        assert not s.rescores and not s.keeps_link_text
    s = LearningStrategy(keywords=CHEM, link_model=True)
    assert not s.rescores and s.keeps_link_text


def test_middleware_asks_for_a_rescore_per_page_and_says_once_when_nobody_listens(caplog):
    from scrapy.utils.test import get_crawler

    from focused import signals as focused_signals

    crawler = get_crawler(settings_dict={})
    heard = []
    mw = FocusedPriorityMiddleware(LearningStrategy(keywords=CHEM))
    mw.crawler = crawler

    def page(i: int) -> HtmlResponse:
        url = f"http://h/wiki/P{i}.html"
        response = HtmlResponse(url, body=b"<html></html>", request=Request(url))
        response.meta[meta.PAGE] = facts(1.0, True, "acid")
        return response

    with caplog.at_level("INFO", logger="focused.middlewares"):
        for i in range(2):  # no scheduler listens (the Redis frontier): said once
            list(mw.process_spider_output(page(i), [{"url": i}]))
    assert caplog.text.count("does not rescore waiting links") == 1

    def listener(rescorer):  # kept alive: signals hold weak references
        heard.append(rescorer)

    crawler.signals.connect(listener, focused_signals.frontier_rescore)
    list(mw.process_spider_output(page(3), [{"url": 3}]))
    assert heard == [mw.strategy.rescore]


def test_hub_evidence_lifts_the_waiting_links_of_a_page_whose_children_were_relevant():
    # hub evidence alone (no exploration: its optimism fades as the relevant pages come)
    s = LearningStrategy(keywords=CHEM, hub_prior=2.0, explore_prior=0.0)
    hub, other = (Parent(f"http://h/{n}", 0.05, False, 0.01, 100.0, 0, 1, 3) for n in "ho")
    for p in (hub, other):  # two pages that look alike (low relevance), both fetched
        learn(s, p.url, 0.05, False, "list of things")
    links = [Link("http://h/wiki/X.html", 0.0, "x", "")]
    blobs = [sc.meta[meta.EVIDENCE] for p in (hub, other) for sc in s.score_links(p, links)]
    before, _ = s.rescore(blobs)
    assert before[0] == before[1]  # nothing known yet about their children
    for i in range(3):  # the hub's children turn out relevant, the other's do not
        learn(s, f"http://h/c{i}", 2.0, True, "acid", link={meta.PARENT_URL: hub.url})
        learn(s, f"http://h/d{i}", 0.0, False, "goal", link={meta.PARENT_URL: other.url})
    after, _ = s.rescore(blobs)
    assert after[0] > before[0] and after[0] > after[1]
    bounded = HubModel(max_pages=2)
    for i in range(5):
        bounded.add(f"http://h/{i}", 1.0)
    assert bounded.page_id("http://h/1") == 2 and bounded.page_id("http://h/4") == 0


# --- leaving the parent page out -------------------------------------------------------
def test_the_parent_page_does_not_vote_for_its_own_links_words():
    """A page holds the words of its links: left out (``leave_parent_out``), its label
    no longer lifts them, so a word only it uses scores as a word no page used; the
    waiting links' evidence gives the same values when rescored."""
    seed = Parent("http://h/Chemistry", 3.0, True, 0.6, 100.0, 0, 0, 2)
    links = [
        Link("http://h/wiki/Oceania", 0.0, "oceania", ""),
        Link("http://h/wiki/Zebra", 0.0, "zebra", ""),  # no page used the word
    ]
    got = {}
    for out in (False, True):
        s = LearningStrategy(keywords=CHEM, explore_prior=0.0, leave_parent_out=out)
        learn(s, "http://h/Football", 0.0, False, "football goal striker")
        learn(s, seed.url, 3.0, True, "chemistry acid oceania")
        scores = s.score_links(seed, links)
        values = [sc.value for sc in scores]  # type: ignore[union-attr]
        got[out] = values
        blobs = [sc.meta[meta.EVIDENCE] for sc in scores]  # type: ignore[union-attr]
        assert s.rescore(blobs)[1] == pytest.approx(values)
        # links of another page than the one learnt last are scored with every page
        other = Parent("http://h/Elsewhere", 3.0, True, 0.6, 100.0, 0, 0, 2)
        assert [sc.value for sc in s.score_links(other, links)] == pytest.approx(got[False])  # type: ignore[union-attr]
    assert got[False][0] > got[False][1]  # the seed's own label lifted "oceania"
    assert got[True][0] == pytest.approx(got[True][1])  # left out: nothing known of it
