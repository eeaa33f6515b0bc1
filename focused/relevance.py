"""Topic relevance in the vector space model (ALGORITHMS.md section 1).

``sim(p, R) = sum_i w_ip * w_iR / (|w_p| * |w_R|)``: the cosine between the term
frequencies of a text and the keyword weights of a topic. Chinese runs are segmented with
jieba, Latin text is split into lower-cased words; mixed text works. Vectors are hashed
with scikit-learn's ``HashingVectorizer`` (2**20 features), so a batch of anchors is
scored with one sparse matrix product.

- anchor relevance ``r = sim(anchor, topic)`` (seed 000);
- page relevance ``A = 4B + C``, B the title's cosine, C the body's (seed 002).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence

import jieba
import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.preprocessing import normalize

jieba.setLogLevel(logging.WARNING)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")

#: Function words that carry no topic (kept small on purpose).
STOP_WORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to "
    "was were with 的 了 和 是 在 与 及 或 也 就 都 而 之 其 这 那 有 为 把 被".split()
)

N_FEATURES = 2**20


def tokenize(text: str) -> list[str]:
    """Terms of ``text``: jieba words for Chinese runs, lower-cased words for the rest."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        run = match.group()
        if _CJK_RUN.match(run):
            tokens.extend(w for w in jieba.lcut(run) if w not in STOP_WORDS)
        else:
            word = run.lower()
            if word not in STOP_WORDS:
                tokens.append(word)
    return tokens


def _has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


class TopicVector:
    """A topic's weighted keywords as a unit vector; scores texts by cosine.

    Chinese keywords are added to jieba's dictionary so that a keyword such as
    ``元素周期表`` is one term in the topic and in the texts alike.
    """

    def __init__(self, keywords: Mapping[str, float]) -> None:
        for term in keywords:
            if _has_cjk(term):
                jieba.add_word(term)
        weights: dict[str, float] = {}
        for term, weight in keywords.items():
            for token in tokenize(term):
                weights[token] = weights.get(token, 0.0) + float(weight)
        if not weights:
            raise ValueError("the topic has no usable keyword")
        self.weights = weights
        self._vectorizer = HashingVectorizer(
            analyzer=tokenize, n_features=N_FEATURES, alternate_sign=False, norm="l2"
        )
        hasher = FeatureHasher(n_features=N_FEATURES, input_type="dict", alternate_sign=False)
        topic = normalize(hasher.transform([weights]))
        # Dense column over the topic's few features keeps the product cheap.
        self._columns = topic.indices
        self._values = topic.data

    def cosines(self, texts: Sequence[str] | Iterable[str]) -> np.ndarray:
        """Cosine of each text with the topic, in [0, 1]."""
        texts = list(texts)
        if not texts:
            return np.zeros(0)
        matrix = self._vectorizer.transform(texts)
        return np.asarray(matrix[:, self._columns] @ self._values).ravel().clip(0.0, 1.0)

    def cosine(self, text: str) -> float:
        """Cosine of one text with the topic."""
        return float(self.cosines([text])[0])


def page_relevance(title_cosine: float, body_cosine: float, title_weight: float = 4.0) -> float:
    """A = 4B + C (seed 002): the title counts four times the body."""
    return title_weight * title_cosine + body_cosine
