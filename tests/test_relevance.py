"""Tokenizer and vector-space cosine (ALGORITHMS.md section 1), checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from focused.ranking.relevance import TopicVector, page_relevance, tokenize

# The hand-made topic used below: |R| = sqrt(3^2 + 4^2 + 2^2) = sqrt(29).
TOPIC = {"chemistry": 3, "acid": 4, "化学": 2}
NORM_R = math.sqrt(29)


@pytest.fixture(scope="module")
def topic() -> TopicVector:
    return TopicVector(TOPIC)


# --- tokenizer ---------------------------------------------------------------------


def test_tokenize_english_lowercases_and_splits_on_punctuation() -> None:
    # "the" is a stop word; "ACID-base" splits at the hyphen; "!" and "," vanish.
    assert tokenize("Chemistry, the ACID-base reaction!") == [
        "chemistry",
        "acid",
        "base",
        "reaction",
    ]


def test_tokenize_keeps_digits_and_accents_splits_underscores() -> None:
    assert tokenize("H2O état snake_case") == ["h2o", "état", "snake", "case"]


def test_tokenize_chinese_is_segmented_by_jieba_without_stop_words() -> None:
    # 化学/是/研究/物质/的/科学: "是" and "的" are stop words.
    assert tokenize("化学是研究物质的科学") == ["化学", "研究", "物质", "科学"]


def test_tokenize_mixed_text_without_spaces_between_scripts() -> None:
    # "和" is a stop word; the Latin/CJK boundary splits "acid化学".
    assert tokenize("化学和酸 acid化学") == ["化学", "酸", "acid", "化学"]


def test_tokenize_punctuation_and_stop_words_only_give_nothing() -> None:
    assert tokenize("！！！……，。 ... --- ___") == []
    assert tokenize("The of AND 的 了 是") == []
    assert tokenize("") == []


# --- cosine --------------------------------------------------------------------------


def test_cosine_english_by_hand(topic: TopicVector) -> None:
    # text tf (chemistry 1, acid 1): dot = 3*1 + 4*1 = 7, |t| = sqrt(2)
    assert topic.cosine("chemistry acid") == pytest.approx(7 / (math.sqrt(2) * NORM_R))


def test_cosine_uses_term_frequency(topic: TopicVector) -> None:
    # tf (chemistry 2, acid 1): dot = 3*2 + 4*1 = 10, |t| = sqrt(2^2 + 1^2) = sqrt(5)
    expected = 10 / (math.sqrt(5) * NORM_R)
    assert topic.cosine("chemistry chemistry acid") == pytest.approx(expected)
    # Order, case and stop words do not matter.
    assert topic.cosine("The ACID of Chemistry, chemistry!") == pytest.approx(expected)


def test_cosine_off_topic_words_lower_the_score(topic: TopicVector) -> None:
    # tf (chemistry 1, football 1, match 1): dot = 3, |t| = sqrt(3)
    assert topic.cosine("chemistry football match") == pytest.approx(3 / (math.sqrt(3) * NORM_R))
    assert topic.cosine("football match") == 0.0


def test_cosine_chinese_by_hand(topic: TopicVector) -> None:
    # 化学的化学 -> [化学, 化学]: dot = 2*2 = 4, |t| = 2 -> 4 / (2 sqrt 29)
    assert topic.cosine("化学的化学") == pytest.approx(2 / NORM_R)
    # mixed: [化学, acid]: dot = 2 + 4 = 6, |t| = sqrt(2)
    assert topic.cosine("化学 acid") == pytest.approx(6 / (math.sqrt(2) * NORM_R))


def test_cosine_of_a_chinese_topic() -> None:
    vector = TopicVector({"化学": 2, "酸": 1})
    # 化学和酸 -> [化学, 酸]: dot = 2 + 1 = 3, |t| = sqrt(2), |R| = sqrt(5)
    assert vector.cosine("化学和酸") == pytest.approx(3 / math.sqrt(10))


def test_cosine_text_parallel_to_topic_is_one() -> None:
    vector = TopicVector({"chemistry": 3, "acid": 4})
    assert vector.cosine("chemistry " * 3 + "acid " * 4) == pytest.approx(1.0)


def test_cosine_of_empty_or_stop_word_text_is_zero(topic: TopicVector) -> None:
    assert topic.cosine("") == 0.0
    assert topic.cosine("the of and 的") == 0.0
    assert topic.cosine("... !!!") == 0.0


def test_chinese_keyword_stays_one_term() -> None:
    # jieba alone splits this coined compound (量子化学 / 反应器); the topic adds it.
    vector = TopicVector({"量子化学反应器": 1})
    assert tokenize("量子化学反应器") == ["量子化学反应器"]
    assert vector.cosine("量子化学反应器") == pytest.approx(1.0)


def test_multi_word_keywords_weigh_each_word() -> None:
    vector = TopicVector({"organic chemistry": 2, "chemistry": 3})
    # "organic chemistry" = 2 gives organic 2 and chemistry 2; plus chemistry 3 -> 5.
    assert vector.weights == {"organic": 2.0, "chemistry": 5.0}
    # text [organic]: dot = 2, |R| = sqrt(4 + 25) = sqrt(29)
    assert vector.cosine("organic") == pytest.approx(2 / math.sqrt(29))


def test_topic_of_stop_words_only_is_refused() -> None:
    with pytest.raises(ValueError):
        TopicVector({"the": 1, "的": 2})


def test_batch_cosines_equal_single_cosines(topic: TopicVector) -> None:
    texts = ["chemistry acid", "", "化学的化学", "football", "acid acid 化学 chemistry"]
    batch = topic.cosines(texts)
    assert isinstance(batch, np.ndarray)
    assert batch.shape == (5,)
    assert batch.tolist() == pytest.approx([topic.cosine(t) for t in texts])
    assert batch[0] == pytest.approx(7 / (math.sqrt(2) * NORM_R))
    # a generator works as well as a list
    assert topic.cosines(t for t in texts).tolist() == pytest.approx(batch.tolist())
    assert topic.cosines([]).shape == (0,)


def test_cosines_lie_in_unit_interval(topic: TopicVector) -> None:
    values = topic.cosines(["acid " * 50, "chemistry", "x y z", "化学"])
    assert ((values >= 0.0) & (values <= 1.0)).all()


# --- page relevance (seed 002) -------------------------------------------------------


def test_page_relevance_is_four_b_plus_c() -> None:
    assert page_relevance(0.5, 0.3) == pytest.approx(2.3)  # 4*0.5 + 0.3
    assert page_relevance(0.0, 0.9) == pytest.approx(0.9)  # 4*0 + 0.9
    assert page_relevance(0.5, 0.3, title_weight=2) == pytest.approx(1.3)  # 2*0.5 + 0.3
    # seed 002: relevant when A > 2; a title cosine of 0.5 alone is exactly 2, not above.
    assert page_relevance(0.5, 0.0) == pytest.approx(2.0)


# --- the same vectors as scikit-learn's (which the crawl itself no longer imports) ---


def _words(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    pool = ["chemistry", "acid", "化学", "élément", "Säure", "x", "元素周期表", "a_b", "2024"]
    pool += [f"term{i}" for i in range(3000)]
    return [pool[i] for i in rng.integers(0, len(pool), n)]


def test_features_are_scikit_learns_feature_hasher_indices() -> None:
    from sklearn.feature_extraction import FeatureHasher

    from focused.ranking.relevance import N_FEATURES, feature, hashed_features

    terms = sorted(set(_words(2000))) + ["", "a" * 300]
    hasher = FeatureHasher(n_features=N_FEATURES, input_type="string", alternate_sign=False)
    for term in terms:
        expected = hasher.transform([[term]]).indices.tolist()
        assert [feature(term)] == [feature(term.encode("utf-8"))] == expected, term
    assert hashed_features(terms).tolist() == [feature(t) for t in terms]
    assert hashed_features(t.encode("utf-8") for t in terms).tolist() == [feature(t) for t in terms]


@pytest.mark.parametrize(
    "keywords",
    [TOPIC, {"chemistry": 0.0, "acid": 2.5, "Acid": 1.25, "元素": 0.1}, {"physics": 1e-9}],
)
def test_topic_vector_is_scikit_learns_normalised_hashed_vector(keywords: dict) -> None:
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.preprocessing import normalize

    from focused.ranking.relevance import N_FEATURES

    vector = TopicVector(keywords)
    hasher = FeatureHasher(n_features=N_FEATURES, input_type="dict", alternate_sign=False)
    expected = normalize(hasher.transform([vector.weights]))
    assert vector._columns.tolist() == expected.indices.tolist()
    assert vector._values.tolist() == expected.data.tolist()  # bit for bit


def test_cosines_are_scikit_learns_hashing_vectorizer_products() -> None:
    from sklearn.feature_extraction.text import HashingVectorizer

    from focused.ranking.relevance import HASH_IN_C_FROM, N_FEATURES, term_counts

    vector = TopicVector({"chemistry": 3, "acid": 4, "化学": 2, "term7": 1.5})
    texts = [" ".join(_words(n, seed=n)) for n in (0, 1, 5, 40, 300, 2000, 6000)]
    texts += ["Chemistry, acid! 化学实验 and the acid", "no topic here at all"]
    assert any(len(term_counts(t)) > HASH_IN_C_FROM for t in texts)  # the long-text path
    matrix = HashingVectorizer(
        analyzer=tokenize, n_features=N_FEATURES, alternate_sign=False, norm="l2"
    ).transform(texts)
    expected = np.asarray(matrix[:, vector._columns] @ vector._values).ravel().clip(0.0, 1.0)
    assert vector.cosines(texts).tolist() == expected.tolist()
    assert [vector.cosine_of_counts(term_counts(t)) for t in texts] == expected.tolist()


def test_a_long_page_learns_the_buckets_scikit_learn_would_give() -> None:
    from sklearn.feature_extraction import FeatureHasher

    from focused.ranking.learning import TermModel
    from focused.ranking.relevance import HASH_IN_C_FROM, N_FEATURES

    terms = sorted(set(_words(5000)))
    assert len(terms) >= HASH_IN_C_FROM
    model = TermModel({})
    model.learn_page(terms, 0.5)
    hasher = FeatureHasher(n_features=N_FEATURES, input_type="string", alternate_sign=False)
    assert np.flatnonzero(model.counts).tolist() == hasher.transform([terms]).indices.tolist()


def test_chinese_check_in_c_agrees_with_the_regular_expression() -> None:
    import random
    import re

    from focused.ranking import relevance

    cjk = re.compile(f"[{relevance._CJK}]")
    # the edges of the ranges, their UTF-8 neighbours (same lead byte, not Chinese),
    # punctuation that shares no lead byte, and a lone surrogate
    alphabet = list("ab Z,—•’éß\u00a0\u3001\u33ff\u3400\u4dbf\u4e00\u9fff\uf8ff\uf900")
    alphabet += list("\ufaff\ufb00\uff0c\u2fff\ud800元素")
    rng = random.Random(5)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert relevance._has_cjk(text) == (cjk.search(text) is not None), repr(text)


def test_jieba_cuts_a_run_by_its_dictionary_and_its_hmm() -> None:
    """Known segmentations of jieba's default mode: dictionary words by the most
    probable path, and an unknown name kept whole by the HMM (not split per character)."""
    from focused.ranking import relevance

    assert relevance._cut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]
    assert relevance._cut("他来到了网易杭研大厦") == ["他", "来到", "了", "网易", "杭研", "大厦"]
    assert relevance._cut("乒乓球拍卖完了") == ["乒乓球", "拍卖", "完", "了"]


def test_english_text_gives_the_same_terms_without_jieba(monkeypatch) -> None:
    """Text without Chinese never reaches jieba, whatever its mode: its terms are the
    lower-cased words outside the stop words, as before (wikispeedia is English)."""
    from collections import Counter

    from focused.ranking import relevance

    def no_jieba() -> None:
        raise AssertionError("jieba consulted for a text without Chinese")

    monkeypatch.setattr(relevance, "_segmenter", no_jieba)
    texts = [
        "Chemistry, the ACID-base reaction!",
        "Café Müller — l'état «naïf», İstanbul’s H2O\u00a0ions: co-operate; x_y",
        "The Periodic Table of the Elements (1869) is a tabular arrangement.",
    ]
    expected = [
        ["chemistry", "acid", "base", "reaction"],
        ["café", "müller", "l", "état", "naïf", "i̇stanbul", "s", "h2o", "ions"]
        + ["co", "operate", "x", "y"],
        ["periodic", "table", "elements", "1869", "tabular", "arrangement"],
    ]
    for text, terms in zip(texts, expected, strict=True):
        assert tokenize(text) == terms
        assert relevance.joined_terms(text) == " ".join(terms)
        counts = Counter(t.encode() for t in terms)
        assert relevance.term_counts(text) == counts
        assert relevance.joined_and_counts(text) == (" ".join(terms), counts)
    assert relevance.tokenize_many(texts) == expected


def test_a_page_of_compounds_holding_the_topics_keywords_is_relevant(own_words: None) -> None:
    """jieba keeps a dictionary compound whole (化学元素, 化学家, 化学物质, 生物化学):
    the topic's keywords inside each word are terms of the text too (the word stays
    one), so a chemistry page written in such compounds is over the page threshold. A
    keyword of one character counts at a word's end only (硫酸, sulphuric acid; not
    不酸不甜, neither sour nor sweet); a word that is a keyword is not taken apart."""
    from collections import Counter

    from focused.ranking import relevance
    from focused.web.topics import load_topic

    topic = load_topic("chemistry")
    threshold = topic.thresholds.get("page", 0.3)
    relevance.hold_words()  # a crawl of the topic
    try:
        vector = TopicVector(topic.keywords)
        # the topic's vector: its keywords, none taken apart
        assert set(vector.weights) == set(relevance.jieba_words(topic.keywords)) | {
            t for k in topic.keywords if not relevance._has_cjk(k) for t in tokenize(k)
        }
        title, body = "化学元素", "化学家用化学物质研究生物化学。"
        assert tokenize(title) == ["化学元素", "化学", "元素"]
        a = page_relevance(vector.cosine(title), vector.cosine(body))
        assert a > threshold  # 0 when only jieba's words were terms
        assert tokenize("有机化学家") == ["有机化学家", "有机化学"]  # not 化学 again
        assert tokenize("硫酸和不酸不甜的酸奶") == ["硫酸", "酸", "不酸不甜", "酸奶"]
        assert tokenize("化学反应") == ["化学反应"]
        # every cut of the text agrees: counts, joined terms, the fast paths
        text = f"{title} {body} Acid"
        terms = tokenize(text)
        assert relevance.joined_terms(text) == " ".join(terms)
        counts = Counter(t.encode() for t in terms)
        assert relevance.term_counts(text) == counts
        assert relevance.joined_and_counts(text) == (" ".join(terms), counts)
        # a page that is one keyword keeps its score
        assert vector.cosine("催化剂") == pytest.approx(
            vector.weights["催化剂"] / math.sqrt(sum(w * w for w in vector.weights.values()))
        )
    finally:
        relevance.release_words()
    # the crawl's words gone: its keywords are no longer looked for inside words
    assert tokenize(title) == ["化学元素"]
    assert tokenize("硫酸") == ["硫酸"]


def test_crawls_one_after_another_cut_with_their_own_words_only(monkeypatch) -> None:
    """A crawl holds jieba's dictionary while it runs; when it ends its topic's words
    go, and the next crawl cuts with its own words only."""
    from focused.ranking import relevance

    # no crawl of this test process holds the dictionary here (a spider an earlier
    # test made and never closed would; its words are kept aside and put back)
    monkeypatch.setattr(relevance, "_holders", 0)
    monkeypatch.setattr(relevance, "_held", [])
    monkeypatch.setattr(relevance, "_dictionary", None)

    assert tokenize("的鑫淼的") == ["鑫", "淼"]
    relevance.hold_words()
    try:
        relevance.TopicVector({"x": 1.0, "鑫淼": 1.0})
        assert tokenize("的鑫淼的") == ["鑫淼"]
        relevance.hold_words()  # a second crawl of the same topic, beside it
        relevance.TopicVector({"x": 1.0, "鑫淼": 1.0})
        relevance.release_words()
        assert tokenize("的鑫淼的") == ["鑫淼"]  # the first still runs
    finally:
        relevance.release_words()
    assert tokenize("的鑫淼的") == ["鑫", "淼"]
    relevance.hold_words()
    try:
        relevance.TopicVector({"x": 1.0, "淼鑫": 1.0})
        assert tokenize("的淼鑫的") == ["淼鑫"]
        assert tokenize("的鑫淼的") == ["鑫", "淼"]
    finally:
        relevance.release_words()
    assert tokenize("的淼鑫的") == ["淼", "鑫"]


_LAZY_DICTIONARY = """
from focused.ranking import relevance
relevance.hold_words()
vector = relevance.TopicVector({"acid": 1.0, "chemistry": 1.0})
assert relevance.tokenize("An acid and a base") == ["acid", "base"]
print(relevance._dictionary is None)
relevance.TopicVector({"acid": 1.0, "化学": 1.0, "鑫淼": 1.0})
print(relevance._dictionary is None)
print("化学" in relevance.tokenize("的化学的"))
print(relevance.tokenize("的鑫淼的"))
relevance.release_words()
print(relevance._dictionary is None, relevance.tokenize("的鑫淼的"))
"""


def test_a_topic_without_chinese_does_not_load_jiebas_dictionary() -> None:
    """jieba's dictionary is built when Chinese text is first cut (a Chinese keyword's
    too), not for a crawl whose topic and pages have none; it is built again without
    the crawl's words when the crawl ends. (A fresh interpreter: this test process may
    have built it already.)"""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _LAZY_DICTIONARY], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:5] == ["True", "False", "True", "['鑫淼']", "True ['鑫', '淼']"]


@pytest.mark.parametrize("scale", [1e160, 1e200, 1e308 / 5, 1e-160, 1e-300, 5e-324])
def test_the_scale_of_the_weights_does_not_change_the_cosine(scale: float) -> None:
    """Only the ratios of a topic's weights count: weights over ~1e154 made the sum of
    their squares ``inf``, so every unit weight was 0 and every text scored 0; tiny
    weights lost precision in subnormal numbers (5e-324 scored ~1e-323)."""
    from focused.ranking.learning import TermWeights

    text = "Chemistry: an acid and a base, 化学 reaction"
    plain = TopicVector(TOPIC)._cosine(text)
    scaled = {term: weight * scale if scale > 1 else scale for term, weight in TOPIC.items()}
    if scale > 1:
        assert TopicVector(scaled)._cosine(text) == pytest.approx(plain, rel=1e-12)
        assert TermWeights(scaled).cosine(text) == pytest.approx(
            TermWeights(TOPIC).cosine(text), rel=1e-12
        )
    else:  # every keyword the same tiny weight: the topic of weights 1
        even = {term: 1.0 for term in TOPIC}
        assert TopicVector(scaled)._cosine(text) == pytest.approx(
            TopicVector(even)._cosine(text), rel=1e-12
        )
        assert TermWeights(scaled).cosine(text) == pytest.approx(
            TermWeights(even).cosine(text), rel=1e-12
        )


def test_two_huge_weights_of_one_term_are_no_nan() -> None:
    """``Acid`` and ``acid`` are one term: 1e308 + 1e308 summed to ``inf`` and the cosine
    was NaN."""
    vector = TopicVector({"Acid": 1e308, "acid": 1e308, "base": 1e308})
    assert vector._cosine("acid") == pytest.approx(2 / math.sqrt(5), rel=1e-12)
    assert np.isfinite(vector._values).all()
