"""A page model over the whole vocabulary, self-trained on the crawl's clear cases.

The keyword judgement (A = 4B + C, the page-relevance rule of the web-crawler thesis,
Binzhou University 2010) only sees the topic's listed keywords: a topic page that uses
few of them scores low. Self-training (Yarowsky 1995; Blum & Mitchell 1998 for the
co-training view) widens it: the pages the keywords judge *clearly* on the topic
(A at least ``positive`` x the page threshold) are positives, the pages they judge
clearly off it (A at most ``negative`` x the threshold) are negatives, the ambiguous
middle is not learnt from. An online logistic regression over the page's distinct
terms, hashed into the same buckets as :mod:`focused.ranking.relevance` (presence
features scaled by ``1 / sqrt(terms)``, classes balanced), then judges any page.

Bounded so that the topic cannot drift to what the crawl happens to see:

- it acts only once it has seen ``min_positives`` positives and ``min_negatives``
  negatives (before that :meth:`PageModel.label` is the keyword label);
- it can only *raise* a page's label, and at most to ``cap`` (the label of a page right
  at the positive bound): a page the keywords judge clearly relevant, a seed among them,
  keeps its keyword label and is always learnt as a positive;
- the positives are judged by the keywords alone, never by the model itself (no
  feedback loop from its own guesses).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from focused.ranking.relevance import N_FEATURES, hashed_features


class PageModel:
    """Online logistic regression over hashed terms, trained on clear keyword cases."""

    def __init__(
        self,
        threshold: float,
        *,
        positive: float = 0.2,
        negative: float = 0.02,
        min_positives: int = 5,
        min_negatives: int = 20,
        cap: float = 0.3,
        rate: float = 0.5,
        l2: float = 1e-4,
    ) -> None:
        self.threshold = max(0.0, threshold)
        self.positive = positive
        self.negative = negative
        self.min_positives = min_positives
        self.min_negatives = min_negatives
        self.cap = min(1.0, max(0.0, cap))
        self.rate = rate
        self.l2 = l2
        self.weights = np.zeros(N_FEATURES, dtype=np.float64)
        self.bias = 0.0
        self.positives = 0
        self.negatives = 0

    @property
    def ready(self) -> bool:
        """Whether the model has seen enough clear pages to act."""
        return self.positives >= self.min_positives and self.negatives >= self.min_negatives

    @staticmethod
    def features(terms: Sequence[str | bytes]) -> np.ndarray:
        """Distinct buckets of a page's distinct terms."""
        if not terms:
            return np.zeros(0, dtype=np.int64)
        return np.unique(hashed_features(terms, len(terms)))

    def _margin(self, buckets: np.ndarray) -> float:
        if not len(buckets):
            return self.bias
        return float(self.weights[buckets].sum()) / math.sqrt(len(buckets)) + self.bias

    def probability(self, buckets: np.ndarray) -> float:
        """P(on the topic) of a page's buckets."""
        z = max(-30.0, min(30.0, self._margin(buckets)))
        return 1.0 / (1.0 + math.exp(-z))

    def clear_class(self, relevance: float) -> int | None:
        """1: clearly on the topic by the keywords, 0: clearly off, None: ambiguous."""
        if relevance >= self.positive * self.threshold and relevance > 0.0:
            return 1
        if relevance <= self.negative * self.threshold:
            return 0
        return None

    def learn(self, buckets: np.ndarray, relevance: float) -> int | None:
        """One fetched page of keyword relevance A: learnt from when it is a clear case.
        Returns its class (or None)."""
        y = self.clear_class(relevance)
        if y is None or not len(buckets):
            return y
        if y:
            self.positives += 1
        else:
            self.negatives += 1
        # balanced classes: the rarer class weighs as much as the other in all
        weight = (
            max(1.0, self.negatives / self.positives)
            if y
            else max(1.0, self.positives / self.negatives)
        )
        error = y - self.probability(buckets)
        step = self.rate * weight * error
        scale = 1.0 / math.sqrt(len(buckets))
        if self.l2:
            self.weights[buckets] *= 1.0 - self.rate * self.l2
        self.weights[buckets] += step * scale
        self.bias += 0.1 * step
        return y

    def label(self, keyword_label: float, buckets: np.ndarray) -> float:
        """The label a learner uses: the keyword label, raised towards ``cap`` by the
        model's probability once it is :attr:`ready` (never lowered)."""
        if not self.ready or keyword_label >= self.cap:
            return keyword_label
        return max(keyword_label, self.cap * self.probability(buckets))
