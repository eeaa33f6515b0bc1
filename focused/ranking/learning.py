"""Online learning of which links lead to topic pages (the ``learning`` strategy; ACHE-style).

Pure module (no Scrapy import; scikit-learn and SciPy only once a :class:`LinkClassifier`
is made). Every fetched page is a labelled example: its label is the crawler's own page
relevance A (the page-relevance rule A = 4B + C) — never the benchmark's labels — turned
into a graded *relevance degree* ``y`` in [0, 1] on a log scale (:func:`label`). A
binary "A > page threshold" label is too sparse to learn from: on wikispeedia it marks
14 % of the chemistry pages, and a link model trained on it ranks unseen target links
barely above chance (AUC 0.6), while the graded label reaches 0.9 (``docs/learning.md``).

Three learners, all on hashed features (2**20 buckets, fixed memory):

- :class:`TermModel`: for every term, the mean degree of the fetched pages whose text
  uses it, shrunk towards the crawl's mean. A link is scored by the best term of its
  anchor text and URL, mixed with the mean term of the text around it. Pages that
  mention a name ("Saturn", "cobalt") are evidence for a link whose anchor is that
  name, long before any page behind such a link was fetched. The topic's keywords
  start as pseudo-pages of degree 1 (the bootstrap; Gao & Han weigh keywords by their
  frequency in authority pages, here the relevant pages of the crawl play that role).
- :class:`LinkClassifier`: ``SGDRegressor.partial_fit`` in mini-batches on the evidence
  of the link that led to each page — words and character n-grams of the anchor, URL
  words, context words, the term model's score, the parent's relevance, the m-value
  channel (Liu, Xia & Xu 2010) — with a small replay buffer. Its prediction is blended in as
  ``n / (n + prior_weight)`` after ``n`` examples.
- :class:`VocabularyExpander`: relevance feedback with a bound: at most ``max_terms``
  new keywords, each weighing at most ``weight_cap`` times the mean keyword weight,
  learnt from the pages judged relevant. The expanded topic scores anchors for the
  m-value rule (relevant link: ``r > f``).
"""

from __future__ import annotations

import math
import random
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import numpy as np

from focused.bounded import remember
from focused.ranking.relevance import (
    HASH_IN_C_FROM,
    N_FEATURES,
    feature,
    hashed_features,
    keyword_terms,
    scaled_weights,
    term_counts,
    tokenize,
    tokenize_many,
)

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "LinkClassifier",
    "LinkEvidence",
    "Exploration",
    "HubModel",
    "LinkTerms",
    "TermModel",
    "TermWeights",
    "VocabularyExpander",
    "context_window",
    "decode_evidence",
    "degree",
    "encode_evidence",
    "evidence_priors",
    "quantized_priors",
    "label",
    "link_contexts",
    "page_name",
    "same_page_name",
    "url_words",
]

#: At most this many characters of anchor text and of context travel in a request.
MAX_ANCHOR_CHARS = 100
MAX_CONTEXT_CHARS = 160
#: Words on each side of a link that make its context.
CONTEXT_WORDS = 8

#: Terms (and URLs) whose bucket (words) are cached; the cache is cleared when full
#: (:func:`focused.bounded.remember`).
CACHE_SIZE = 1 << 18


_URL_SPLIT = re.compile(r"[\W_]+")
_NGRAM_WORD = re.compile(r"[^\W\d_]{4,}")


# --- evidence of one link ---------------------------------------------------------------
def url_words(url: str) -> list[str]:
    """Words of the last path segment of ``url`` (no host, no file extension).

    Only the last: a directory shared by every page (``/wiki/``) would be a term of
    every link, and its score would put a floor under all of them.
    """
    path = unquote(urlsplit(url).path)
    last = path.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = last.rpartition(".")
    if dot and stem and 1 <= len(ext) <= 5:
        last = stem
    return tokenize(_URL_SPLIT.sub(" ", last))


_NAMESPACE = re.compile(r"^[^\W\d_][\w -]{0,30}:(?=.)")


def page_name(url: str) -> tuple[str, ...]:
    """The name a URL gives its page: its path's segments, unquoted and lower-cased, the
    last without a file extension or a ``Talk:``-like namespace (``()`` for a root URL).

    The variants of one page share it, or end with it (:func:`same_page_name`): its
    talk page (``/wiki/Talk:Iron``), its print and mobile copies
    (``/wiki/Iron?printable=yes``, ``/m/wiki/Iron``), its old revisions, its comments
    (``/story/Iron?comments=1``), its second page (``/thread/Iron?page=2``)."""
    segments = [s for s in unquote(urlsplit(url).path).lower().split("/") if s]
    if not segments:
        return ()
    last = segments[-1]
    stem, dot, ext = last.rpartition(".")
    if dot and stem and 1 <= len(ext) <= 5:
        last = stem
    segments[-1] = _NAMESPACE.sub("", last)
    return tuple(segments)


def same_page_name(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two :func:`page_name` s name one page: one ends with the other
    (``/m/wiki/iron`` and ``/wiki/iron``; ``/chemistry/p20`` and ``/physics/p20`` do
    not)."""
    if not a or not b:
        return False
    if len(a) < len(b):
        a, b = b, a
    return a[len(a) - len(b) :] == b


def context_window(before: str, after: str, words: int = CONTEXT_WORDS) -> str:
    """The last ``words`` words of ``before`` and the first ``words`` of ``after``."""
    if words > 0:  # split no further than needed (a long paragraph is split once)
        text = " ".join(before.rsplit(None, words)[-words:] + after.split(None, words)[:words])
    else:  # as the slices below have always read a count of 0: all of before
        text = " ".join(before.split()[-words:] + after.split()[:words])
    return text[:MAX_CONTEXT_CHARS]


def link_contexts(root: Any, absolute: Callable[[str], str]) -> dict[str, str]:
    """Text around each ``<a href>`` of an lxml tree, by absolute URL (first link wins).

    The context of a link is :func:`context_window` of the text run just before it (the
    previous sibling's tail, or its parent's leading text) and the run just after it
    (its own tail): the words between it and its neighbouring links. No text is joined
    or searched, so the cost is one step per link. ``absolute`` maps an ``href`` to the
    URL the link extractor reports.
    """
    contexts: dict[str, str] = {}
    for a in root.iter("a"):
        href = a.get("href")
        if not href:
            continue
        try:
            url = absolute(href)
        except ValueError:
            continue
        if url in contexts:
            continue
        previous = a.getprevious()
        if previous is not None:
            before = previous.tail or ""
        else:
            parent = a.getparent()
            before = (parent.text or "") if parent is not None else ""
        contexts[url] = context_window(before, a.tail or "")
    return contexts


@dataclass(frozen=True, slots=True)
class LinkEvidence:
    """What is known about a link when it is found; travels (small) in its request."""

    url: str
    anchor: str = ""
    context: str = ""
    parent_relevance: float = 0.0  # the parent's degree (see :func:`degree`)
    anchor_relevance: float = 0.0  # r: the anchor's cosine with the topic (the m-value rule)
    hops: int = 0  # irrelevant pages crossed since the last relevant one (the m-value rule)
    term_score: float = 0.0  # the term model's score of the link when it was found


def degree(page_relevance: float, title_weight: float = 4.0) -> float:
    """A page's relevance A = 4B + C (the page-relevance rule) scaled to [0, 1]: ``A / (4 + 1)``."""
    scaled = page_relevance / (title_weight + 1.0)
    return 0.0 if not math.isfinite(scaled) else min(1.0, max(0.0, scaled))


def label(relevance_degree: float, floor: float = 0.002) -> float:
    """Graded label in [0, 1]: ``log(d + floor)`` rescaled so that 0 -> 0 and 1 -> 1.

    Topic pages on a realistic keyword list have small degrees (a chemical element's
    page: A ~ 0.07, d ~ 0.015) that are still ten times those of other pages (~0.001);
    the log scale keeps that contrast, ``floor`` sets where differences stop counting.
    """
    d = min(1.0, max(0.0, relevance_degree))
    return math.log((d + floor) / floor) / math.log((1.0 + floor) / floor)


#: Buckets for the slots of links (:meth:`TermModel.learn_slot`), past the term buckets.
SLOT_BUCKETS = 1 << 14


# --- the term model ---------------------------------------------------------------------
class TermModel:
    """Mean label of the fetched pages that use each term (hashed, shrunk to the mean).

    ``score(t) = (sum_t + k * mean) / (count_t + k)``: a term seen in few pages stays
    near the crawl's mean label ``mean``; ``k`` is ``shrinkage``. The topic's keywords
    are ``keyword_pages`` pseudo-pages of label ``weight / max weight`` each. Terms are
    hashed as :mod:`focused.ranking.relevance` hashes them (murmurhash3, ``N_FEATURES`` buckets;
    two float arrays, 16 MB), with a bounded cache of term -> bucket.
    """

    def __init__(
        self,
        keywords: Mapping[str, float] | None = None,
        *,
        shrinkage: float = 3.0,
        keyword_pages: float = 0.0,
        context_share: float = 0.3,
    ) -> None:
        self.shrinkage = max(1e-6, shrinkage)
        self.context_share = min(1.0, max(0.0, context_share))
        # the term buckets, then SLOT_BUCKETS more for the slots (:meth:`learn_slot`)
        self.sums = np.zeros(N_FEATURES + SLOT_BUCKETS, dtype=np.float64)
        self.counts = np.zeros(N_FEATURES + SLOT_BUCKETS, dtype=np.float64)
        self.total = 0.0
        self.pages = 0
        #: bonus of a term seen in no page; ``optimism * k / (count + k)`` in general
        #: (rarely seen evidence is optimistic: :class:`Exploration` sets it)
        self.optimism = 0.0
        self._cache: dict[str | bytes, int] = {}
        self._url_words: dict[str, list[str]] = {}
        self._anchors: dict[str, list[str]] = {}
        if keywords and keyword_pages > 0:
            top = max(keywords.values())
            for term, weight in keywords.items():
                for token in keyword_terms(term):  # a compound adds nothing to its parts
                    f = self.feature(token)
                    self.counts[f] += keyword_pages
                    self.sums[f] += keyword_pages * max(0.0, weight) / top

    def feature(self, term: str | bytes) -> int:
        """Bucket of ``term`` (``str`` or its UTF-8: the same bucket)."""
        f = self._cache.get(term)
        return f if f is not None else remember(self._cache, term, feature(term), CACHE_SIZE)

    def _buckets(self, terms: list[str] | list[bytes] | list[str | bytes]) -> list[int]:
        found = list(map(self._cache.get, terms))
        if None in found:
            # the terms not met before hashed in one C loop (:func:`hashed_features`
            # gives :func:`feature`'s buckets), then remembered
            missing = [i for i, f in enumerate(found) if f is None]
            fresh = [terms[i] for i in missing]
            hashed = hashed_features(fresh, len(fresh)).tolist()
            cache = self._cache
            if len(cache) + len(fresh) > CACHE_SIZE:
                cache.clear()
            for i, term, f in zip(missing, fresh, hashed, strict=True):
                found[i] = cache[term] = f
        return found  # type: ignore[return-value]

    @property
    def mean(self) -> float:
        """Mean label of the pages seen (0 before the first)."""
        return self.total / self.pages if self.pages else 0.0

    def document_frequency(self, term: str | bytes) -> float:
        """Fetched pages that used ``term`` (or a term sharing its bucket)."""
        return float(self.counts[self.feature(term)])

    def learn_page(
        self, terms: Iterable[str | bytes], y: float, buckets: np.ndarray | None = None
    ) -> np.ndarray:
        """One fetched page: each of its distinct ``terms`` gets label ``y`` once (see
        :func:`focused.ranking.relevance.term_counts` for the terms of a text). Returns
        the page's distinct buckets; ``buckets``: those buckets already (ascending and
        distinct, as :meth:`focused.ranking.pagemodel.PageModel.features` gives them),
        not hashed again."""
        self.pages += 1
        self.total += y
        if buckets is not None:
            f = buckets
        elif len(terms := list(terms)) >= HASH_IN_C_FROM:
            # a long page: hashed in one C loop, distinct buckets in ascending order
            f = np.unique(hashed_features(terms, len(terms)))
        else:
            found = self._buckets(terms)
            if not found:
                return np.zeros(0, dtype=np.int64)
            f = np.unique(np.array(found, dtype=np.int64))
        self.counts[f] += 1.0
        self.sums[f] += y
        return f

    def add(self, buckets: np.ndarray, counts: np.ndarray, sums: np.ndarray) -> None:
        """Add what other pages taught (per bucket: pages and summed labels); the page
        count and label total are :attr:`pages` and :attr:`total`."""
        if buckets.size:
            ok = (buckets >= 0) & (buckets < self.counts.size)
            np.add.at(self.counts, buckets[ok], counts[ok])
            np.add.at(self.sums, buckets[ok], sums[ok])

    def learn_slot(self, slot: int, y: float) -> int:
        """A page fetched through a link of ``slot`` (a block's container path,
        :func:`focused.web.template.link_slots`) taught label ``y`` to that slot; returns
        the slot's bucket (past the term buckets, so no term shares it)."""
        b = N_FEATURES + int(slot) % SLOT_BUCKETS
        self.counts[b] += 1.0
        self.sums[b] += y
        return b

    def slot_scores(self, slots: np.ndarray) -> np.ndarray:
        """Per slot, the mean label of the pages fetched through its links, shrunk to the
        crawl's mean label with ``shrinkage`` pseudo-pages (no optimism: a slot is no
        word to explore); the mean for slot 0 (unknown)."""
        b = N_FEATURES + np.asarray(slots, dtype=np.int64) % SLOT_BUCKETS
        k, mean = self.shrinkage, self.mean
        scores = (self.sums[b] + k * mean) / (self.counts[b] + k)
        return np.where(np.asarray(slots) == 0, mean, scores)

    def learn_text(self, text: str, y: float) -> None:
        """:meth:`learn_page` with the terms of ``text``."""
        self.learn_page(list(term_counts(text)), y)

    def _scores(
        self, buckets: np.ndarray, own: np.ndarray | None = None, own_y: np.ndarray | None = None
    ) -> np.ndarray:
        """Each bucket's shrunk mean label; ``own`` (per bucket: the term is one of the
        parent page's, which was learnt with label ``own_y``) leaves that page out."""
        k = self.shrinkage
        counts = self.counts[buckets]
        sums = self.sums[buckets]
        if own is not None and own_y is not None and own.any():
            counts = np.maximum(0.0, counts - own)
            sums = np.maximum(0.0, sums - own * own_y)
        scores = (sums + k * self.mean) / (counts + k)
        if self.optimism > 0:
            scores += self.optimism * k / (counts + k)
        return scores

    def _anchor_words(self, anchor: str) -> list[str]:
        words = self._anchors.get(anchor)
        if words is None:
            words = remember(self._anchors, anchor, tokenize(anchor), CACHE_SIZE)
        return words

    def _words_of_url(self, url: str) -> list[str]:
        words = self._url_words.get(url)
        if words is None:
            words = remember(self._url_words, url, url_words(url), CACHE_SIZE)
        return words

    def link_terms(self, evidence: Sequence[LinkEvidence]) -> LinkTerms:
        """The buckets of each link's name terms (anchor and URL) and context terms."""
        return self.terms_of(
            [e.url for e in evidence], [e.anchor for e in evidence], [e.context for e in evidence]
        )

    def terms_of(
        self, urls: Sequence[str], anchors: Sequence[str], contexts: Sequence[str]
    ) -> LinkTerms:
        """:meth:`link_terms` of links given as three columns (one bucket lookup for all
        their terms)."""
        anchor_words, words_of_url = self._anchor_words, self._words_of_url
        names = [anchor_words(a) + words_of_url(u) for a, u in zip(anchors, urls, strict=True)]
        context_terms = tokenize_many(contexts) if self.context_share else [[] for _ in contexts]
        n_names = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
        n_contexts = np.fromiter(map(len, context_terms), dtype=np.int64, count=len(names))
        flat: list[str] = []
        for name, context in zip(names, context_terms, strict=True):
            flat += name
            flat += context
        return LinkTerms(np.array(self._buckets(flat), dtype=np.int64), n_names, n_contexts)

    def score(self, evidence: Sequence[LinkEvidence]) -> np.ndarray:
        """Per link: best term of anchor + URL, mixed with the mean term of the context."""
        if not evidence:
            return np.zeros(0)
        return self.score_terms(self.link_terms(evidence))

    def name_evidence(self, links: LinkTerms) -> np.ndarray:
        """Per link: the fetched pages that used the most used word of its name (0 for
        a name no page used a word of, or no name): how much the term model knows of
        some part of the name ("55 Cancri e" is known once pages used "cancri")."""
        has, starts = links.segments()
        reduced = np.zeros(len(has))
        if links.buckets.size:
            reduced[has] = np.maximum.reduceat(self.counts[links.buckets], starts)
        return reduced[0::2]

    def score_terms(self, links: LinkTerms) -> np.ndarray:
        """:meth:`score` of links given by their buckets (all links in one pass)."""
        n = len(links.n_names)
        if not n:
            return np.zeros(0)
        own_y = None
        if links.own is not None and links.own_labels is not None:
            own_y = np.repeat(links.own_labels, links.n_names + links.n_contexts)
        values = self._scores(links.buckets, links.own, own_y)
        reduced_max = np.full(2 * n, np.nan)
        reduced_sum = np.full(2 * n, np.nan)
        has, starts = links.segments()
        if values.size:
            reduced_max[has] = np.maximum.reduceat(values, starts)
            reduced_sum[has] = np.add.reduceat(values, starts)
        best = reduced_max[0::2]
        best = np.where(np.isnan(best), self.mean, best)
        if not self.context_share:
            return best
        ctx = reduced_sum[1::2] / np.maximum(1, links.n_contexts)
        ctx = np.where(np.isnan(ctx), best, ctx)
        return (1.0 - self.context_share) * best + self.context_share * ctx


class Exploration:
    """Explore while the crawl knows nothing of its topic, exploit once it does.

    A crawl that starts off the topic learns only from off-topic pages at first: every
    label is low and the term model's small differences between them are noise, so
    following them greedily keeps the crawl where it started. Until the crawl has found
    pages it judges relevant, a link's value leans on what is known without any crawl:
    its name's (anchor and URL words) best hand-written keyword, mixed with the mean
    keyword weight of its context like the term model mixes its terms, each keyword
    weighing ``weight / max weight``. The blend is optimistic (:meth:`blend`): a link
    is worth at least its learnt value and, with weight ``w``, as much as its keywords
    promise; links without keywords keep the model's order (with the term model's
    ``optimism`` for rarely seen terms, set from ``w`` by the strategy).

    ``w = prior / (prior + relevant pages found)`` (a bandit's optimism shrinking with
    its evidence): 1 before the first relevant page (off-topic so far), 1 / (1 + n /
    prior) after n. ``prior`` = 0 turns it off.
    """

    def __init__(
        self, keywords: Mapping[str, float], *, prior: float, context_share: float = 0.3
    ) -> None:
        self.prior = max(0.0, prior)
        self.context_share = min(1.0, max(0.0, context_share))
        self.relevant = 0
        self._weights: dict[int, float] = {}
        top = max((w for w in keywords.values() if w > 0), default=0.0)
        for term, weight in keywords.items():
            if weight <= 0 or top <= 0:
                continue
            for token in keyword_terms(term):  # a compound adds nothing to its parts
                f = feature(token)
                self._weights[f] = max(self._weights.get(f, 0.0), weight / top)
        self._buckets = np.array(sorted(self._weights), dtype=np.int64)
        self._values = np.array([self._weights[int(b)] for b in self._buckets], dtype=np.float64)

    @property
    def weight(self) -> float:
        """The prior's share in a link's value now (0 when off)."""
        if self.prior <= 0:
            return 0.0
        return self.prior / (self.prior + self.relevant)

    def observe(self, relevant: bool) -> None:
        """A fetched page; ``relevant``: the crawl judges it on the topic (A > threshold)."""
        self.relevant += bool(relevant)

    def keyword_scores(self, links: LinkTerms) -> np.ndarray:
        """Per link: best keyword weight of its name terms, mixed with its context's
        mean (0 for a link with no keyword)."""
        n = len(links.n_names)
        if not n:
            return np.zeros(0)
        values = np.zeros(len(links.buckets))
        if self._buckets.size and links.buckets.size:
            pos = np.searchsorted(self._buckets, links.buckets)
            pos = np.minimum(pos, self._buckets.size - 1)
            hit = self._buckets[pos] == links.buckets
            values[hit] = self._values[pos[hit]]
        reduced_max = np.zeros(2 * n)
        reduced_sum = np.zeros(2 * n)
        has, starts = links.segments()
        if values.size:
            reduced_max[has] = np.maximum.reduceat(values, starts)
            reduced_sum[has] = np.add.reduceat(values, starts)
        best = reduced_max[0::2]
        ctx = reduced_sum[1::2] / np.maximum(1, links.n_contexts)
        return (1.0 - self.context_share) * best + self.context_share * ctx

    def blend(self, learnt: np.ndarray, links: LinkTerms) -> np.ndarray:
        """``learnt + w * max(0, keyword score - learnt)``: optimistic, never below the
        learnt value, the keyword score itself at w = 1 for a link whose keywords say
        more than the model (``learnt`` as is when w is 0)."""
        w = self.weight
        if w <= 0:
            return learnt
        return learnt + w * np.maximum(0.0, self.keyword_scores(links) - learnt)


@dataclass(frozen=True, slots=True)
class LinkTerms:
    """The term buckets of a batch of links, flat: link i's name terms (anchor and URL)
    then its context terms, then link i + 1's (what :meth:`TermModel.score_terms` reads
    and what a waiting link keeps as its rescoring evidence, :func:`encode_evidence`)."""

    buckets: np.ndarray  # int64
    n_names: np.ndarray  # int64, per link
    n_contexts: np.ndarray  # int64, per link
    #: per bucket, 1.0 where the term is one of the parent page's own terms (the page
    #: the links stand on, learnt just before), else 0.0; None: nothing left out
    own: np.ndarray | None = None
    #: per link, the label the parent page was learnt with
    own_labels: np.ndarray | None = None

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat buckets as segments (link 0's name terms, its context terms, link
        1's name terms, ...): which of the ``2 n`` segments hold a term, and where
        those start (for ``ufunc.reduceat``)."""
        lengths = np.empty(2 * len(self.n_names), dtype=np.int64)
        lengths[0::2] = self.n_names
        lengths[1::2] = self.n_contexts
        has = lengths > 0
        return has, (np.cumsum(lengths) - lengths)[has]

    def leaving_out(self, page_buckets: np.ndarray, y: float) -> LinkTerms:
        """These links with their parent page (distinct ascending ``page_buckets``,
        learnt with label ``y``) left out of their terms' scores."""
        own = np.isin(self.buckets, page_buckets, assume_unique=False).astype(np.float64)
        labels = np.full(len(self.n_names), float(y))
        return LinkTerms(self.buckets, self.n_names, self.n_contexts, own, labels)

    @classmethod
    def of(cls, names: list[list[int]], contexts: list[list[int]]) -> LinkTerms:
        flat: list[int] = []
        for name, context in zip(names, contexts, strict=True):
            flat += name
            flat += context
        return cls(
            np.array(flat, dtype=np.int64),
            np.fromiter(map(len, names), dtype=np.int64, count=len(names)),
            np.fromiter(map(len, contexts), dtype=np.int64, count=len(contexts)),
        )


# --- rescoring evidence: what a waiting link keeps -------------------------------------
#: header of a link's evidence: name terms, context terms, the parent's label, the
#: parent's page id (hub evidence; 0: none), the label the parent page was learnt with
#: (its terms left out of the link's scores: :attr:`LinkTerms.own`)
_EVIDENCE = struct.Struct("<BBdIf")
#: a link's name prior after its terms: 0 none, else round(prior * 65535)
_PRIOR = struct.Struct("<H")
_PRIOR_SCALE = 65535.0
#: on a stored bucket (3 bytes, ``N_FEATURES`` = 2**20 needs 20 bits): the term is one
#: of the parent page's own
_OWN_BIT = 1 << 23
#: a link's slot after its terms and its prior (0: none)
_SLOT = struct.Struct("<I")
#: bytes per bucket (``N_FEATURES`` = 2**20 buckets fit in 3)
_BUCKET_BYTES = 3
#: At most this many name (and context) terms are kept per waiting link.
MAX_EVIDENCE_TERMS = 255


def encode_evidence(
    links: LinkTerms,
    parent_label: float,
    parent_id: int = 0,
    priors: np.ndarray | None = None,
    slots: np.ndarray | None = None,
) -> list[bytes]:
    """One compact record per link for a later :func:`decode_evidence`: 18 bytes and 3
    per term (a link with a 3-word anchor and a 16-word context: 75 bytes). Terms past
    ``MAX_EVIDENCE_TERMS`` of either kind are dropped. ``priors`` (the name prior of
    each link, :mod:`focused.ranking.nameprior`) follow the terms, 2 bytes each
    (:func:`evidence_priors`), then ``slots`` (each link's slot,
    :func:`focused.web.template.link_slots`), 4 bytes each (:func:`evidence_slots`); a
    record without them is read as before."""
    stored = links.buckets.astype(np.int64)
    if links.own is not None:
        stored = stored | np.where(links.own > 0, _OWN_BIT, 0)
    own_labels = (
        links.own_labels.tolist() if links.own_labels is not None else [0.0] * len(links.n_names)
    )
    raw = stored.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :_BUCKET_BYTES]
    body = raw.tobytes()
    out: list[bytes] = []
    at = 0
    w = _BUCKET_BYTES
    for n_name, n_ctx, own_y in zip(
        links.n_names.tolist(), links.n_contexts.tolist(), own_labels, strict=True
    ):
        keep_n, keep_c = min(n_name, MAX_EVIDENCE_TERMS), min(n_ctx, MAX_EVIDENCE_TERMS)
        names = body[at * w : (at + keep_n) * w]
        at += n_name
        ctx = body[at * w : (at + keep_c) * w]
        at += n_ctx
        head = _EVIDENCE.pack(keep_n, keep_c, parent_label, parent_id, own_y)
        out.append(head + names + ctx)
    if priors is not None:
        # 0 stands for "no prior" (a quantized prior is at least 1)
        q = np.rint(np.nan_to_num(quantized_priors(priors), nan=0.0) * _PRIOR_SCALE)
        out = [r + _PRIOR.pack(t) for r, t in zip(out, q.astype(np.int64).tolist(), strict=True)]
    if slots is not None:
        packed = np.asarray(slots, dtype=np.int64).tolist()
        out = [r + _SLOT.pack(t & 0xFFFFFFFF) for r, t in zip(out, packed, strict=True)]
    return out


def quantized_priors(priors: np.ndarray) -> np.ndarray:
    """``priors`` as :func:`evidence_priors` reads them back (NaN kept)."""
    q = np.maximum(1.0, np.rint(np.clip(np.nan_to_num(priors, nan=0.0), 0.0, 1.0) * _PRIOR_SCALE))
    return np.where(np.isnan(priors), np.nan, q / _PRIOR_SCALE)


def evidence_priors(records: Sequence[bytes]) -> np.ndarray:
    """The name prior each record carries (:func:`encode_evidence`); NaN for a record
    without one (scored with the prior off, damaged, or from an earlier version)."""
    out = np.full(len(records), np.nan)
    size, w = _EVIDENCE.size, _BUCKET_BYTES
    for i, record in enumerate(records):
        if len(record) < size:
            continue
        need = size + (record[0] + record[1]) * w
        if len(record) in (need + _PRIOR.size, need + _PRIOR.size + _SLOT.size):
            (value,) = _PRIOR.unpack_from(record, need)
            if value:
                out[i] = value / _PRIOR_SCALE
    return out


def evidence_slots(records: Sequence[bytes]) -> np.ndarray:
    """The slot each record carries (:func:`encode_evidence`); 0 for a record without
    one. A record's length tells its trailers apart: a prior is 2 bytes, a slot 4
    (numpy over all the records at once)."""
    count = len(records)
    out = np.zeros(count, dtype=np.int64)
    if not count:
        return out
    size, w = _EVIDENCE.size, _BUCKET_BYTES
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=count)
    # padded: the first two bytes of an empty last record are read, then ignored
    data = np.frombuffer(b"".join(records) + bytes(2), dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    need = size + (data[starts].astype(np.int64) + data[starts + 1]) * w
    trailer = lengths - need
    has = (lengths >= size) & ((trailer == _SLOT.size) | (trailer == _PRIOR.size + _SLOT.size))
    if has.any():
        ends = (starts + lengths)[has]
        raw = data[ends[:, None] - _SLOT.size + np.arange(_SLOT.size)].astype(np.int64)
        out[has] = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16) | (raw[:, 3] << 24)
    return out


def evidence_slot_and_parent(record: bytes) -> tuple[int, float]:
    """The slot of one record and the label of the page its link stood on (0, 0.0:
    a record without a slot, or a damaged one)."""
    size = _EVIDENCE.size
    if len(record) < size:
        return 0, 0.0
    need = size + (record[0] + record[1]) * _BUCKET_BYTES
    if len(record) - need not in (_SLOT.size, _PRIOR.size + _SLOT.size):
        return 0, 0.0
    (slot,) = _SLOT.unpack_from(record, len(record) - _SLOT.size)
    _, _, parent_label, _, _ = _EVIDENCE.unpack_from(record)
    return slot, parent_label


def decode_evidence(records: Sequence[bytes]) -> tuple[LinkTerms, np.ndarray, np.ndarray]:
    """The :class:`LinkTerms`, parent labels and parent ids of records made by
    :func:`encode_evidence` (numpy over all the records at once; a damaged record counts
    as a link without terms)."""
    size = _EVIDENCE.size
    count = len(records)
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=count)
    # every record's header gathered from the joined bytes (padded: a short last record
    # cannot read past the end; a short record's header is read and then ignored)
    data = np.frombuffer(b"".join(records) + bytes(size), dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    header = data[starts[:, None] + np.arange(size)]
    n = header[:, 0].astype(np.int64)
    c = header[:, 1].astype(np.int64)
    need = (n + c) * _BUCKET_BYTES
    ok = (lengths >= size) & (lengths - size >= need)
    n_names = np.where(ok, n, 0)
    n_contexts = np.where(ok, c, 0)
    parents = np.where(ok, np.ascontiguousarray(header[:, 2:10]).view("<f8").reshape(-1), 0.0)
    parent_ids = np.where(
        ok, np.ascontiguousarray(header[:, 10:14]).view("<u4").reshape(-1).astype(np.int64), 0
    )
    # the bodies of the sound records, one index per byte
    body_lengths = need[ok]
    total = int(body_lengths.sum())
    before = np.cumsum(body_lengths) - body_lengths
    at = np.repeat(starts[ok] + size - before, body_lengths) + np.arange(total, dtype=np.int64)
    raw = data[at].reshape(-1, _BUCKET_BYTES).astype(np.int64)
    stored = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16)
    buckets = stored & (_OWN_BIT - 1)
    own = None
    if (stored & _OWN_BIT).any():
        own = ((stored & _OWN_BIT) > 0).astype(np.float64)
    own_labels = np.where(
        ok, np.ascontiguousarray(header[:, 14:18]).view("<f4").reshape(-1), 0.0
    ).astype(np.float64)
    terms = LinkTerms(buckets, n_names, n_contexts, own, own_labels if own is not None else None)
    return terms, parents.astype(np.float64), parent_ids


class HubModel:
    """What the fetched children of each page turned out to be (hub evidence).

    Every fetched page gets an id (at most ``max_pages``; later pages get none, 0) and
    its label; each fetched page adds its label to its parent's children. A parent's
    value is its own label shrunk towards its children's mean with ``prior``
    pseudo-children: ``(prior * own + sum of children) / (prior + children)``. A page
    whose links led to topic pages so far is worth more than its own text says, and
    its links still waiting move up when the frontier rescores them.
    """

    def __init__(self, prior: float = 2.0, max_pages: int = 1 << 22) -> None:
        self.prior = max(1e-6, prior)
        self.max_pages = max_pages
        self._ids: dict[str, int] = {}
        self.n = np.zeros(1024, dtype=np.float64)  # fetched children per page id
        self.sums = np.zeros(1024, dtype=np.float64)  # their labels, summed

    def page_id(self, url: str) -> int:
        return self._ids.get(url, 0)

    def add(self, url: str, y: float, parent_url: str = "") -> None:
        """A fetched page of label ``y`` (found on ``parent_url``)."""
        parent = self._ids.get(parent_url, 0) if parent_url else 0
        if parent:
            self.n[parent] += 1.0
            self.sums[parent] += y
        if url not in self._ids and len(self._ids) < self.max_pages:
            i = self._ids[url] = len(self._ids) + 1
            if i >= len(self.n):
                self.n = np.concatenate([self.n, np.zeros(len(self.n))])
                self.sums = np.concatenate([self.sums, np.zeros(len(self.sums))])

    def values(self, own: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The hub value of parents of label ``own`` and page ``ids`` (0: no evidence)."""
        ids = np.clip(ids, 0, len(self.n) - 1)
        n, sums = self.n[ids], self.sums[ids]
        return np.where(ids > 0, (self.prior * own + sums) / (self.prior + n), own)


# --- the link classifier ----------------------------------------------------------------
#: Number of numeric columns after the hashed text features.
N_NUMERIC = 4


def _numeric(e: LinkEvidence) -> list[float]:
    return [
        min(1.0, max(0.0, e.term_score)),
        min(1.0, max(0.0, e.parent_relevance)),
        min(1.0, max(0.0, e.anchor_relevance)),
        1.0 if e.hops == 0 else 1.0 / (1.0 + e.hops),  # m-value channel (Liu, Xia & Xu 2010)
    ]


class LinkClassifier:
    """Online linear model of a link's label from its evidence (``SGDRegressor``).

    Examples are buffered and learnt ``batch_size`` at a time with ``partial_fit``; each
    mini-batch replays ``replay`` times as many older examples (drawn with a seeded
    generator from the last ``memory``), which steadies SGD on a few hundred examples.
    The first mini-batch's mean label is subtracted from every target, so the intercept
    starts where the labels are.
    """

    def __init__(
        self,
        *,
        batch_size: int = 16,
        replay: int = 3,
        memory: int = 1000,
        alpha: float = 1e-4,
        eta0: float = 0.01,
        ngrams: tuple[int, int] = (3, 5),
        n_features: int = 2**18,
        seed: int = 42,
    ) -> None:
        self.batch_size = max(1, batch_size)
        self.replay = max(0, replay)
        self.memory = max(self.batch_size, memory)
        self.ngrams = ngrams
        # scikit-learn only for a crawl that trains the link classifier
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.linear_model import SGDRegressor

        self._vectorizer = HashingVectorizer(
            analyzer=self._terms, n_features=n_features, alternate_sign=False, norm="l2"
        )
        self.model = SGDRegressor(
            alpha=alpha, eta0=eta0, learning_rate="invscaling", power_t=0.25, random_state=seed
        )
        self._rng = random.Random(seed)
        self._new: list[tuple[LinkEvidence, float]] = []
        self._old: list[tuple[LinkEvidence, float]] = []
        self.offset: float | None = None
        self.examples = 0

    def _terms(self, e: LinkEvidence) -> list[str]:
        terms = [f"a:{t}" for t in tokenize(e.anchor)]
        low, high = self.ngrams
        for word in _NGRAM_WORD.findall(e.anchor.lower()):
            padded = f"<{word}>"
            for n in range(low, high + 1):
                terms.extend(f"g:{padded[i : i + n]}" for i in range(len(padded) - n + 1))
        terms.extend(f"u:{t}" for t in url_words(e.url))
        terms.extend(f"c:{t}" for t in tokenize(e.context))
        return terms

    def features(self, evidence: Sequence[LinkEvidence]) -> sp.csr_matrix:
        """Hashed text features and the numeric columns, one row per link (one call)."""
        import scipy.sparse as sp

        text = self._vectorizer.transform(evidence)
        numeric = sp.csr_matrix(np.array([_numeric(e) for e in evidence], dtype=np.float64))
        return sp.hstack([text, numeric], format="csr")

    @property
    def ready(self) -> bool:
        return self.offset is not None

    def learn(self, evidence: LinkEvidence, y: float) -> None:
        """One example: the link ``evidence`` led to a page of label ``y``."""
        self._new.append((evidence, float(y)))
        self.examples += 1
        if len(self._new) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        """Learn the buffered examples now (one ``partial_fit`` call)."""
        if not self._new:
            return
        batch = list(self._new)
        if self.offset is None:
            self.offset = sum(y for _, y in batch) / len(batch)
        if self._old and self.replay:
            n = min(len(self._old), self.replay * len(batch))
            batch += [self._old[self._rng.randrange(len(self._old))] for _ in range(n)]
        x = self.features([e for e, _ in batch])
        y = np.array([y for _, y in batch]) - self.offset
        self.model.partial_fit(x, y)
        self._old.extend(self._new)
        del self._old[: -self.memory]
        self._new.clear()

    def predict(self, evidence: Sequence[LinkEvidence]) -> np.ndarray:
        """Predicted label of each link (in [0, 1]); the term scores before training."""
        if not evidence:
            return np.zeros(0)
        if self.offset is None:
            return np.array([e.term_score for e in evidence])
        return np.clip(self.model.predict(self.features(evidence)) + self.offset, 0.0, 1.0)


class TermWeights:
    """A weighted term set scored like :class:`focused.ranking.relevance.TopicVector` (cosine of
    term counts with the weights), without touching jieba's dictionary: the expanded
    topic's terms come out of :func:`~focused.ranking.relevance.tokenize` already, and adding
    words to jieba again would change how every later page is segmented. The terms are
    cut as the topic's vector cuts its keywords
    (:func:`~focused.ranking.relevance.keyword_terms`): a compound (化学元素) adds no
    weight to the keywords inside it."""

    def __init__(self, weights: Mapping[str, float]) -> None:
        merged: dict[str, float] = {}
        for term, weight in scaled_weights(weights).items():
            for token in keyword_terms(term):
                merged[token] = merged.get(token, 0.0) + float(weight)
        norm = math.sqrt(sum(w * w for w in merged.values())) or 1.0
        self.weights = {t: w / norm for t, w in merged.items()}
        self._short: dict[str, float] = {}  # anchors come back page after page

    def cosine(self, text: str) -> float:
        cached = self._short.get(text)
        if cached is not None:
            return cached
        counts = Counter(tokenize(text))
        cos = 0.0
        if counts:
            weights = self.weights
            dot = sum(n * weights.get(t, 0.0) for t, n in counts.items())
            cos = min(1.0, max(0.0, dot / math.sqrt(sum(n * n for n in counts.values()))))
        if len(text) <= MAX_ANCHOR_CHARS:
            remember(self._short, text, cos, CACHE_SIZE)
        return cos

    def cosines(self, texts: Iterable[str]) -> np.ndarray:
        return np.array([self.cosine(t) for t in texts], dtype=np.float64)


# --- relevance feedback -----------------------------------------------------------------
def _text(term: str | bytes) -> str:
    return term.decode("utf-8", "replace") if isinstance(term, bytes) else term


class VocabularyExpander:
    """Relevance feedback with a bound: at most ``max_terms`` new, capped keywords.

    Each page seen adds its distinct terms to a document-frequency count, per class
    (judged relevant or not). A candidate term scores ``df_rel / n_rel - df_all / n_all``
    (frequent in relevant pages, not everywhere); it needs ``min_pages`` relevant pages
    and at least 3 characters (Latin) to qualify. The ``max_terms`` best ones join the
    topic with weight ``weight_cap * mean(original weights) * score / best score``; the
    original keywords never change. Counts are kept for at most ``max_vocabulary``
    terms (the least frequent go first when it is full), so memory stays bounded.
    """

    def __init__(
        self,
        keywords: Mapping[str, float],
        *,
        max_terms: int = 30,
        weight_cap: float = 0.5,
        min_pages: int = 3,
        max_vocabulary: int = 200_000,
    ) -> None:
        self.original = dict(keywords)
        self.max_terms = max(0, max_terms)
        self.weight_cap = max(0.0, weight_cap)
        self.min_pages = max(1, min_pages)
        self.max_vocabulary = max(1000, max_vocabulary)
        known = {t for term in keywords for t in keyword_terms(term)}
        self._known = known | {t.encode("utf-8") for t in known}  # terms may come as UTF-8
        self.df_all: Counter[str | bytes] = Counter()
        self.df_rel: Counter[str | bytes] = Counter()
        self.pages = 0
        self.relevant_pages = 0

    def add_page(self, terms: Iterable[str] | Iterable[bytes], relevant: bool) -> None:
        """Count the distinct ``terms`` of one fetched page."""
        distinct = set(terms)
        self.pages += 1
        self.df_all.update(distinct)
        if relevant:
            self._add_relevant(distinct)
        if len(self.df_all) > self.max_vocabulary:
            keep = dict(self.df_all.most_common(self.max_vocabulary // 2))
            self.df_all = Counter(keep)
            self.df_rel = Counter({t: n for t, n in self.df_rel.items() if t in keep})

    def add_relevant(self, terms: Iterable[str] | Iterable[bytes]) -> None:
        """Count a relevant page only, when :meth:`expansion` is given the background
        document frequencies (e.g. :meth:`TermModel.document_frequency`)."""
        self._add_relevant(set(terms))

    def _add_relevant(self, distinct: set[str] | set[bytes]) -> None:
        self.relevant_pages += 1
        self.df_rel.update(distinct)
        if len(self.df_rel) > self.max_vocabulary:
            self.df_rel = Counter(dict(self.df_rel.most_common(self.max_vocabulary // 2)))

    def _eligible(self, term: str | bytes) -> bool:
        if term in self._known or term.isdigit():
            return False
        return len(term) >= 3 or not term.isascii()

    def expansion(
        self, df_all: Callable[[Any], float] | None = None, pages: int | None = None
    ) -> dict[str, float]:
        """The added terms and their weights (empty before ``min_pages`` relevant pages).

        ``df_all`` and ``pages``: the background document frequency of a term and the
        number of pages it counts; by default this object's own counts.
        """
        if self.relevant_pages < self.min_pages or not self.max_terms or not self.weight_cap:
            return {}
        if df_all is None:
            df_all, pages = self.df_all.__getitem__, self.pages
        n_rel, n_all = self.relevant_pages, max(1, pages or 0, self.relevant_pages)
        scored = []
        for term, df in self.df_rel.items():
            if df < self.min_pages or not self._eligible(term):
                continue
            score = df / n_rel - min(n_all, df_all(term)) / n_all
            if score > 0:
                scored.append((score, term))
        if not scored:
            return {}
        scored.sort(key=lambda st: (-st[0], st[1]))
        best = scored[0][0]
        mean = sum(self.original.values()) / max(1, len(self.original))
        cap = self.weight_cap * mean
        return {_text(term): cap * score / best for score, term in scored[: self.max_terms]}

    def keywords(
        self, df_all: Callable[[Any], float] | None = None, pages: int | None = None
    ) -> dict[str, float]:
        """The original keywords plus the bounded :meth:`expansion`."""
        merged = dict(self.original)
        merged.update(self.expansion(df_all, pages))
        return merged
