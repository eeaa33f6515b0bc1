"""The self-trained page model (focused.ranking.pagemodel) and its use by `learning`."""

from __future__ import annotations

import random

from focused.meta import PageFacts
from focused.ranking.learning import degree, label
from focused.ranking.modelstate import dumps_state, loads_state
from focused.ranking.pagemodel import PageModel
from focused.strategies.learning import LearningStrategy

THRESHOLD = 0.3
TOPIC = [f"chem{i}" for i in range(40)]  # topic words the keyword list does not hold
OTHER = [f"word{i}" for i in range(400)]  # the rest of the vocabulary
LISTED = "chemistry"  # the one listed keyword


def _page(rng: random.Random, topic: bool) -> list[str]:
    words = rng.sample(OTHER, 30)
    if topic:
        words += [*rng.sample(TOPIC, 10), LISTED]
    return words


def _stream(model: PageModel, n: int = 300, seed: int = 7) -> None:
    """Topic pages (clearly relevant by their keyword) among off-topic ones."""
    rng = random.Random(seed)
    for i in range(n):
        topic = i % 5 == 0
        relevance = 0.5 * THRESHOLD if topic else 0.001
        model.learn(PageModel.features(_page(rng, topic)), relevance)


def test_recognises_a_topic_page_with_few_listed_keywords() -> None:
    model = PageModel(THRESHOLD, cap=0.3)
    assert not model.ready
    _stream(model)
    assert model.ready
    rng = random.Random(99)
    # a topic page that does not use the listed keyword: the keywords judge it ambiguous
    unlisted = PageModel.features([*rng.sample(OTHER, 30), *rng.sample(TOPIC, 6)])
    off = PageModel.features(rng.sample(OTHER, 36))
    assert model.probability(unlisted) > 0.8
    assert model.probability(off) < 0.5
    low = label(degree(0.0))  # no listed keyword at all
    assert model.label(low, unlisted) > 0.2
    assert model.label(low, unlisted) <= 0.3  # bounded by the cap
    assert model.label(low, off) == low  # an off-topic page is not raised
    # the classes stay the keywords': no feedback from the model's own guesses
    assert model.learn(unlisted, 0.0) == 0


def test_never_relabels_a_keyword_rich_seed_as_negative() -> None:
    model = PageModel(THRESHOLD, cap=0.3)
    rng = random.Random(3)
    seed_terms = [*rng.sample(OTHER, 30), LISTED]
    # the crawl then sees many off-topic pages that share the seed's words
    for _ in range(200):
        model.learn(PageModel.features(rng.sample(seed_terms[:-1], 25)), 0.0)
    for _ in range(5):
        model.learn(PageModel.features(_page(rng, True)), THRESHOLD)
    assert model.ready
    seed = PageModel.features(seed_terms)
    relevance = 2.0 * THRESHOLD  # the seed: keyword-rich
    keyword_label = label(degree(relevance))
    assert model.label(keyword_label, seed) == keyword_label  # never lowered
    assert model.learn(seed, relevance) == 1  # learnt as a positive, whatever the model says
    assert model.label(0.01, seed) >= 0.01


def test_learning_strategy_labels_through_the_page_model() -> None:
    strategy = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.3, page_threshold=THRESHOLD, rescore_links=False
    )
    off = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.0, page_threshold=THRESHOLD, rescore_links=False
    )
    assert off.page_judge is None
    rng = random.Random(5)
    for i in range(300):
        topic = i % 5 == 0
        a = 0.5 * THRESHOLD if topic else 0.001
        facts = PageFacts(
            page_relevance=a,
            relevant=a > THRESHOLD,
            terms=tuple(w.encode() for w in _page(rng, topic)),
        )
        for s in (strategy, off):
            s.observe(f"http://h/{i}", facts, {})
    assert strategy.page_judge is not None and strategy.page_judge.ready
    word = b"chem1"
    # the unlisted topic word is learnt with a higher label through the page model
    assert (
        strategy.terms.sums[strategy.terms.feature(word)] >= off.terms.sums[off.terms.feature(word)]
    )


def test_a_saved_learning_state_keeps_the_page_model() -> None:
    """A crawl resumed from its saved model (JOBDIR) judges pages as before it stopped."""
    strategy = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.3, page_threshold=THRESHOLD, rescore_links=False
    )
    rng = random.Random(11)
    for i in range(200):
        topic = i % 5 == 0
        a = 0.5 * THRESHOLD if topic else 0.001
        terms = tuple(w.encode() for w in _page(rng, topic))
        strategy.observe(f"http://h/{i}", PageFacts(page_relevance=a, terms=terms), {})
    judge = strategy.page_judge
    assert judge is not None and judge.ready
    state = loads_state(dumps_state(strategy.model_state()))
    fresh = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.3, page_threshold=THRESHOLD, rescore_links=False
    )
    assert fresh.page_judge is not None and not fresh.page_judge.ready
    fresh.load_model_state(state)
    loaded = fresh.page_judge
    assert loaded.ready
    assert (loaded.positives, loaded.negatives) == (judge.positives, judge.negatives)
    unlisted = PageModel.features([*rng.sample(OTHER, 30), *rng.sample(TOPIC, 6)])
    assert loaded.probability(unlisted) == judge.probability(unlisted) > 0.8
    # a state saved with the model off leaves a fresh model as it is
    off = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.0, page_threshold=THRESHOLD, rescore_links=False
    )
    off.observe("http://h/x", PageFacts(page_relevance=0.001, terms=(b"word1",)), {})
    again = LearningStrategy(
        keywords={LISTED: 1.0}, page_model=0.3, page_threshold=THRESHOLD, rescore_links=False
    )
    again.load_model_state(loads_state(dumps_state(off.model_state())))
    assert again.page_judge is not None and again.page_judge.positives == 0
