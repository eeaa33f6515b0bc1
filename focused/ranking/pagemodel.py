"""A page model over the whole vocabulary, self-trained on the crawl's clear cases.

The keyword judgement (A = 4B + C, the page-relevance rule of the web-crawler thesis,
Binzhou University 2010) only sees the topic's listed keywords: a topic page that uses
few of them scores low. Self-training (Yarowsky 1995; Blum & Mitchell 1998 for the
co-training view) widens it: the pages the keywords judge *clearly* on the topic
(A at least ``positive`` x the page threshold) are positives, the pages they judge
clearly off it (A at most ``negative`` x the threshold) are negatives, the ambiguous
middle is not learnt from. A Bernoulli naive Bayes over the page's distinct terms
(McCallum & Nigam 1998), hashed into the same buckets as :mod:`focused.ranking.relevance`,
classes weighed equally, then judges any page.

Bounded so that the topic cannot drift to what the crawl happens to see:

- it acts only once it has seen ``min_positives`` positives and ``min_negatives``
  negatives (before that :meth:`PageModel.label` is the keyword label);
- it can only *raise* a page's label, and at most to ``cap`` (the label of a page right
  at the positive bound): a page the keywords judge clearly relevant, a seed among them,
  keeps its keyword label and is always learnt as a positive;
- both classes are judged by the keywords alone, never by the model itself: no feedback
  loop from its own guesses (letting the model keep the pages it judges on the topic
  out of the negatives was tried: on physics it then called 3,900 of 4,600 pages on
  the topic).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from focused.ranking.relevance import N_FEATURES, term_buckets


class PageModel:
    """Naive Bayes over hashed term presence, trained on clear keyword cases."""

    def __init__(
        self,
        threshold: float,
        *,
        positive: float = 0.2,
        negative: float = 0.1,
        min_positives: int = 5,
        min_negatives: int = 20,
        cap: float = 0.3,
        smoothing: float = 2.0,
    ) -> None:
        self.threshold = max(0.0, threshold)
        self.positive = positive
        self.negative = negative
        self.min_positives = min_positives
        self.min_negatives = min_negatives
        self.cap = min(1.0, max(0.0, cap))
        self.smoothing = smoothing
        #: pages of each class (negatives, positives) that hold each bucket
        self.counts = np.zeros((2, N_FEATURES), dtype=np.float32)
        self.positives = 0
        self.negatives = 0

    @property
    def ready(self) -> bool:
        """Whether the model has seen enough clear pages to act."""
        return self.positives >= self.min_positives and self.negatives >= self.min_negatives

    @staticmethod
    def features(terms: Sequence[str | bytes]) -> np.ndarray:
        """Distinct buckets of a page's distinct terms."""
        return term_buckets(terms)

    def margin(self, buckets: np.ndarray) -> float:
        """Log-odds of the topic, classes weighed equally: the sum of each seen term's
        log ratio of its rates in the two classes, over sqrt(seen terms) (naive Bayes is
        overconfident on long pages); terms neither class holds are left out."""
        if not len(buckets) or not self.ready:
            return 0.0
        neg = self.counts[0, buckets].astype(np.float64)
        pos = self.counts[1, buckets].astype(np.float64)
        seen = (neg + pos) > 0
        n = int(seen.sum())
        if not n:
            return 0.0
        # each class's rate shrunk to the pooled rate with ``smoothing`` pseudo-pages: a
        # term as common in both classes weighs 0, whatever the classes' sizes
        k = self.smoothing
        neg, pos = neg[seen], pos[seen]
        pooled = (neg + pos) / (self.negatives + self.positives)
        ratio = np.log((pos + k * pooled) / (self.positives + k)) - np.log(
            (neg + k * pooled) / (self.negatives + k)
        )
        return float(ratio.sum()) / math.sqrt(n)

    def probability(self, buckets: np.ndarray) -> float:
        """P(on the topic) of a page's buckets (0.5 before the model is ready)."""
        z = max(-30.0, min(30.0, self.margin(buckets)))
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
        self.counts[y, buckets] += 1.0
        return y

    def state(self) -> dict[str, Any]:
        """What it learnt as plain data (the buckets either class holds, their counts and
        the class sizes), for :meth:`load_state` (a crawl saved under JOBDIR)."""
        touched = np.flatnonzero(self.counts.any(axis=0))
        return {
            "page_buckets": touched.astype(np.int64),
            "page_counts": self.counts[:, touched],
            "page_positives": self.positives,
            "page_negatives": self.negatives,
        }

    def load_state(self, state: Mapping[str, Any]) -> bool:
        """Continue from a :meth:`state` (replaces what was learnt); a state without one
        (saved with the model off) leaves it as it is. Returns whether it loaded."""
        if "page_buckets" not in state:
            return False
        buckets = np.asarray(state["page_buckets"], dtype=np.int64)
        counts = np.asarray(state["page_counts"], dtype=np.float32).reshape(2, -1)
        ok = (buckets >= 0) & (buckets < N_FEATURES)
        self.counts[:] = 0.0
        self.counts[:, buckets[ok]] = counts[:, ok]
        self.positives = int(state["page_positives"])
        self.negatives = int(state["page_negatives"])
        return True

    def label(self, keyword_label: float, buckets: np.ndarray) -> float:
        """The label a learner uses: the keyword label, raised to ``cap x (2p - 1)`` when
        the model's probability p is above 1/2, once it is :attr:`ready` (never lowered)."""
        if not self.ready or keyword_label >= self.cap:
            return keyword_label
        # only a page the model judges more likely on the topic than off it is raised
        lift = max(0.0, 2.0 * self.probability(buckets) - 1.0)
        return max(keyword_label, self.cap * lift)
