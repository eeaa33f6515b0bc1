"""``learning``: link priorities learnt online from the pages the crawl fetches.

ACHE-style: every fetched page is a labelled example — labelled by the crawler's own
page relevance A (the page-relevance rule A = 4B + C), graded on a log scale
(:func:`focused.ranking.learning.label`), or 0 for a page the spider judged waste for
its URL shape (``waste_label``: a talk page or a thread's second page carries the
article's title, so A calls it relevant, and its user names and boilerplate would be
learnt as topic terms) — and the models it trains score the links found after it
(:mod:`focused.ranking.learning`):

- the **term model** (always): a link's value is the best learnt term of its anchor
  text and URL words, mixed with the mean term of the text around it (``context``);
  the URL words of a link to a variant of its own page (``own_name``: the same
  :func:`~focused.ranking.learning.page_name`, e.g. its talk page or second page) do
  not count, as they are the page's own name;
- the **link classifier** (``link_model=True``): an ``SGDRegressor`` on the evidence of
  the link that led to each page, blended in as ``n / (n + classifier_prior)``;
- the **m-value channel** (Liu, Xia & Xu 2010): a link keeps ``m = M0`` when its anchor is
  relevant to the topic *expanded by relevance feedback* (``r > f``), else
  ``m = m_parent * b``; past ``max_hops`` irrelevant hops a link is dropped, so the
  frontier stays bounded. The value itself is not ordered by m.

Priorities are computed when a link is found, and again as the models improve: each
link carries compact rescoring evidence (its hashed name and context terms, the parent's
label and page id: :func:`focused.ranking.learning.encode_evidence`), the in-memory frontier
keeps it packed in the waiting entry and every ``FOCUSED_RESCORE_EVERY`` learnt pages
hands all of it to :meth:`LearningStrategy.rescore` in one batch and re-orders the
waiting links (:meth:`focused.frontier.memory.MemoryFrontier.rescore`). Hub evidence
(``hub_prior`` > 0, off by default) shrinks a parent's label to its fetched children's
mean label.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from focused import meta
from focused.bounded import remember
from focused.errors import ConfigError
from focused.meta import PageFacts
from focused.ranking import mvalue, nameprior
from focused.ranking.learning import (
    CACHE_SIZE,
    Exploration,
    HubModel,
    LinkClassifier,
    LinkEvidence,
    LinkTerms,
    TermModel,
    TermWeights,
    VocabularyExpander,
    decode_evidence,
    degree,
    encode_evidence,
    evidence_priors,
    evidence_slot_and_parent,
    evidence_slots,
    label,
    page_name,
    quantized_priors,
    same_page_name,
    url_words,
)
from focused.ranking.modelstate import DeltaRecorder, ModelDelta, join_terms, split_terms
from focused.ranking.pagemodel import PageModel
from focused.strategies.base import (
    Link,
    LinkScore,
    Parent,
    SettingsReader,
    Strategy,
    StrategyParams,
    value_priority,
)

logger = logging.getLogger(__name__)

#: Seeds rank above every link (link values are at most 1).
SEED_VALUE = 2.0
#: ``value_priority``'s scale (priorities of a value array in one numpy call)
PRIORITY_SCALE = 1_000_000
#: Lowest parent label in the geometric mix (a label of 0 would zero every link).
PARENT_FLOOR = 1e-3


@dataclass
class LearningStrategy(Strategy):
    """Online-learnt link values with the m-value channel on top (see the module doc)."""

    keywords: Mapping[str, float] = field(default_factory=dict)
    m0: float = 100.0
    ratio: float = 0.8
    anchor_threshold: float = 0.2
    max_hops: int = 6
    title_weight: float = 4.0
    shrinkage: float = 3.0
    context_share: float = 0.3
    label_floor: float = 0.002
    parent_share: float = 0.1
    keyword_pages: float = 0.0
    expand_terms: int = 30
    expand_cap: float = 0.5
    expand_every: int = 5
    link_model: bool = False
    classifier_prior: float = 400.0
    batch_size: int = 16
    random_seed: int = 42
    #: hub evidence: a parent's value is its label shrunk to its fetched children's mean
    #: label with this many pseudo-children (0: off)
    hub_prior: float = 0.0
    #: exploration: while fewer relevant pages than this were found, a link's value
    #: leans on its keywords (share prior / (prior + relevant pages); 0: off)
    explore_prior: float = 1.0
    #: optimism for rarely seen terms while exploring: a term seen in n pages gets
    #: ``optimism * w * k / (n + k)`` more (w the exploration weight; 0: off)
    optimism: float = 0.3
    #: the self-trained page model's cap on a label it raises (0: off)
    page_model: float = 0.3
    #: a link's terms are scored without the page it stands on: that page holds its
    #: anchor and context words by construction, so its own label would vote for every
    #: one of its links (leave-one-out)
    leave_parent_out: bool = False
    #: share of the name prior (a pre-trained sentence-embedding model's rank of the
    #: link's name against the topic) in a link's value, geometric (0: off)
    name_prior: float = 0.0
    #: the name prior's model: a sentence-transformers path or name ("": the bundled
    #: all-MiniLM-L6-v2)
    name_model: str = ""
    #: the page threshold (the page model's clear cases are relative to it)
    page_threshold: float = 2.0
    #: give each link its rescoring evidence (the frontier re-orders waiting links)
    rescore_links: bool = True
    #: a page the spider judged waste (:attr:`focused.meta.PageFacts.waste`) is a label
    #: of 0 for the link that led to it, and its links' parent is worth 0
    waste_label: bool = True
    #: a link whose URL gives its page the name of the page it stands on (a variant of
    #: that page: its talk page, print copy, second page) is valued without its URL's
    #: words (:func:`focused.ranking.learning.page_name`)
    own_name: bool = True
    #: a link's slot (the container path of the block it stands in) can cost it:
    #: ``value * min(1, slot score / mean label) ** slot_share`` (0: off)
    slot_share: float = 0.5
    name = "learning"
    #: the spider puts anchor text and context in the meta, and the page's terms in its
    #: facts
    link_evidence = True
    learns = True

    @classmethod
    def params_from_settings(cls, read: SettingsReader) -> dict[str, Any]:
        """The ``FOCUSED_LEARNING_*`` settings (and the frontier's rescoring), checked."""
        values: dict[str, Any] = {
            "shrinkage": read.in_range("FOCUSED_LEARNING_SHRINKAGE", 0.0, 1e6),
            "context_share": read.in_range(
                "FOCUSED_LEARNING_CONTEXT_SHARE", 0.0, 1.0, open_low=False, open_high=False
            ),
            "label_floor": read.in_range("FOCUSED_LEARNING_LABEL_FLOOR", 0.0, 1.0),
            "parent_share": read.in_range(
                "FOCUSED_LEARNING_PARENT_SHARE", 0.0, 1.0, open_low=False, open_high=False
            ),
            "keyword_pages": read.in_range(
                "FOCUSED_LEARNING_KEYWORD_PAGES", 0.0, 1e6, open_low=False
            ),
            "expand_terms": int(
                read.in_range("FOCUSED_LEARNING_EXPAND_TERMS", 0, 10_000, open_low=False)
            ),
            "expand_cap": read.in_range("FOCUSED_LEARNING_EXPAND_CAP", 0.0, 1e6, open_low=False),
            "classifier_prior": read.in_range(
                "FOCUSED_LEARNING_CLASSIFIER_PRIOR", 0.0, 1e9, open_low=False
            ),
            "hub_prior": read.in_range("FOCUSED_LEARNING_HUB_PRIOR", 0.0, 1e6, open_low=False),
            "explore_prior": read.in_range(
                "FOCUSED_LEARNING_EXPLORE_PRIOR", 0.0, 1e6, open_low=False
            ),
            "optimism": read.in_range("FOCUSED_LEARNING_OPTIMISM", 0.0, 1.0, open_low=False),
            "page_model": read.in_range(
                "FOCUSED_LEARNING_PAGE_MODEL", 0.0, 1.0, open_low=False, open_high=False
            ),
            "waste_label": read.flag("FOCUSED_LEARNING_WASTE_LABEL"),
            "leave_parent_out": read.flag("FOCUSED_LEARNING_LEAVE_PARENT_OUT"),
            "own_name": read.flag("FOCUSED_LEARNING_OWN_NAME"),
            "slot_share": read.in_range(
                "FOCUSED_LEARNING_SLOT_SHARE", 0.0, 1.0, open_low=False, open_high=False
            ),
            "name_prior": read.in_range(
                "FOCUSED_LEARNING_NAME_PRIOR", 0.0, 1.0, open_low=False, open_high=False
            ),
            "name_model": read.text("FOCUSED_LEARNING_NAME_MODEL"),
            # links carry rescoring evidence only for a frontier that will rescore them
            "rescore_links": int(read.in_range("FOCUSED_RESCORE_EVERY", 0, 1e12, open_low=False))
            > 0
            and read.text("FOCUSED_FRONTIER") in ("memory", "redis"),
        }
        read.in_range("FOCUSED_RESCORE_BUDGET", 0, 1e12, open_low=False)
        values["link_model"] = read.flag("FOCUSED_LEARNING_CLASSIFIER")
        if values["name_prior"] > 0:
            missing = nameprior.missing_packages(values["name_model"])
            if missing:
                raise ConfigError(
                    f"FOCUSED_LEARNING_NAME_PRIOR needs {', '.join(missing)}: "
                    "pip install -r requirements-prior.txt (or make install-prior)"
                )
        if values["page_model"] > 0 and read.text("FOCUSED_FRONTIER") == "redis":
            # the workers share the term model, not (yet) the page model: one judge of
            # a page's label for the whole crawl, so the page model is off there
            logger.info(
                "focused: FOCUSED_LEARNING_PAGE_MODEL is not shared between workers; "
                "off on the Redis frontier"
            )
            values["page_model"] = 0.0
        return values

    @classmethod
    def from_params(cls, params: StrategyParams) -> LearningStrategy:
        return cls(
            keywords=dict(params.keywords),
            m0=params.m0,
            ratio=params.ratio,
            anchor_threshold=params.anchor_threshold,
            max_hops=params.max_hops,
            title_weight=params.title_weight,
            page_threshold=params.page_threshold,
            random_seed=params.seed,
            **params.options,
        )

    def __post_init__(self) -> None:
        self.terms = TermModel(
            self.keywords,
            shrinkage=self.shrinkage,
            keyword_pages=self.keyword_pages,
            context_share=self.context_share,
        )
        self.classifier = (
            LinkClassifier(batch_size=self.batch_size, seed=self.random_seed)
            if self.link_model
            else None
        )
        self.expander = VocabularyExpander(
            self.keywords, max_terms=self.expand_terms, weight_cap=self.expand_cap
        )
        self.hubs = HubModel(self.hub_prior) if self.hub_prior > 0 else None
        self.exploration = Exploration(
            self.keywords, prior=self.explore_prior, context_share=self.context_share
        )
        self.page_judge = (
            PageModel(self.page_threshold, cap=self.page_model) if self.page_model > 0 else None
        )
        self.prior: nameprior.NamePrior | None = None
        if self.name_prior > 0:
            try:
                self.prior = nameprior.NamePrior.load(self.keywords, self.name_model)
            except nameprior.NamePriorError as exc:
                raise ConfigError(str(exc)) from None
        #: the last page learnt: its URL, distinct buckets and label (leave_parent_out)
        self._learnt: tuple[str, np.ndarray, float] | None = None
        self._vector: TermWeights | None = None  # the expanded topic, once there is one
        self._next_expansion = max(1, self.expand_every)
        self.pages = 0
        self.relevant_pages = 0
        self.expanded = 0  # terms the topic gained (relevance feedback)
        self.rescorings = 0  # frontier rescores
        self.rescored = 0  # waiting links rescored, in all
        #: what this process learnt since the last :meth:`take_delta` (a shared model)
        self.recorder: DeltaRecorder | None = None
        self.merged_pages = 0  # pages other workers learnt from, merged here
        self._names: dict[str, tuple[str, ...]] = {}  # URL -> page_name(URL), bounded
        self.own_name_links = 0  # links valued without their URL's words (own_name)
        self.waste_pages = 0  # pages learnt as waste (waste_label)
        self.slot_pages = 0  # pages that taught the slot of their link (slot_share)

    # --- scoring --------------------------------------------------------------------
    def seed(self) -> LinkScore:
        return LinkScore(priority=value_priority(SEED_VALUE), value=1.0, m=self.m0)

    def score_links(self, parent: Parent, links: Sequence[Link]) -> list[LinkScore | None]:
        """Scores of all links of ``parent``: one vectorizer call per model, numpy over
        the links."""
        if not links:
            return []
        r = self._anchor_relevance(links)
        # the m-value channel (the m-value rule): every link of a page gets one of two states
        m_parent = parent.m or self.m0
        states = []
        for ri in (math.inf, -math.inf):  # relevant anchor, irrelevant anchor
            m = mvalue.child_m(
                m_parent, ri, m0=self.m0, ratio=self.ratio, threshold=self.anchor_threshold
            )
            states.append((m, mvalue.side_channel_hops(m, m0=self.m0, ratio=self.ratio)))
        relevant = r > self.anchor_threshold
        kept_mask = np.ones(len(links), dtype=bool)
        for is_relevant, (_m, hops) in zip((True, False), states, strict=True):
            if hops > self.max_hops:
                kept_mask &= relevant != is_relevant
        kept = np.flatnonzero(kept_mask).tolist()
        scores: list[LinkScore | None] = [None] * len(links)
        if not kept:
            return scores
        parent_degree = self._parent_degree(parent)
        relevant_list = relevant.tolist()
        kept_links = [links[i] for i in kept]
        # the links' terms from their columns (no LinkEvidence unless the classifier
        # needs one)
        link_terms = self._left_out(
            parent,
            self.terms.terms_of(
                self._named_urls(parent, kept_links),
                [link.anchor_text for link in kept_links],
                [link.context for link in kept_links],
            ),
        )
        terms = self.terms.score_terms(link_terms)
        values = self.exploration.blend(terms, link_terms)
        if self.classifier is not None and self.classifier.ready:
            r_list = r.tolist()
            evidence = [
                LinkEvidence(
                    links[i].url,
                    links[i].anchor_text,
                    links[i].context,
                    parent_degree,
                    r_list[i],
                    states[0 if relevant_list[i] else 1][1],
                    t,
                )
                for i, t in zip(kept, terms.tolist(), strict=True)
            ]
            n = self.classifier.examples
            share = n / (n + self.classifier_prior) if self.classifier_prior > 0 else 1.0
            values = share * self.classifier.predict(evidence) + (1.0 - share) * terms
        parent_label = label(parent_degree, self.label_floor)
        parent_id = 0
        if self.hubs is not None:
            parent_id = self.hubs.page_id(parent.url)
            hub = self.hubs.values(np.array([parent_label]), np.array([parent_id]))
            values = self._with_parent(values, float(hub[0]))
        else:
            values = self._with_parent(values, parent_label)
        slots = self._slots(kept_links)
        values = np.clip(self._with_slot(values, slots), 0.0, 1.0)
        priors = self._priors(kept_links)
        values = self._with_prior(values, priors, link_terms)
        priorities = np.rint(values * PRIORITY_SCALE).astype(np.int64).tolist()
        metas = self._link_metas(
            link_terms,
            terms=terms,
            parent_degree=parent_degree,
            parent_label=parent_label,
            parent_id=parent_id,
            priors=priors,
            slots=slots,
        )
        for j, (i, value) in enumerate(zip(kept, values.tolist(), strict=True)):
            m, hops = states[0 if relevant_list[i] else 1]
            scores[i] = LinkScore(priorities[j], value, m, hops, metas[j])
        return scores

    def _link_metas(
        self,
        link_terms: LinkTerms,
        *,
        terms: np.ndarray,
        parent_degree: float,
        parent_label: float,
        parent_id: int,
        priors: np.ndarray | None,
        slots: np.ndarray | None,
    ) -> list[dict[str, Any]]:
        """What each link's request carries for the strategy to read back."""
        n = len(link_terms.n_names)
        if self.rescores:
            # what the frontier keeps to score the link again (:meth:`rescore`)
            blobs = encode_evidence(link_terms, parent_label, parent_id, priors, slots)
            metas: list[dict[str, Any]] = [{meta.EVIDENCE: blob} for blob in blobs]
        elif self.classifier is not None:
            # the classifier learns from the link's evidence when its page comes back
            metas = [{meta.TERM_SCORE: round(t, 6)} for t in terms.tolist()]
        else:
            metas = [{} for _ in range(n)]
        parent = round(parent_degree, 6)
        if self.classifier is not None:  # the classifier reads it as a feature
            for m in metas:
                m[meta.PARENT_RELEVANCE] = parent
        if slots is not None and not self.rescores:
            # without rescoring evidence (which holds both), the slot and the parent
            # (a slot learns only from links of pages at least as good as the mean:
            # :meth:`_slot_of`) come back in the meta
            for m, slot in zip(metas, slots.tolist(), strict=True):
                if slot:
                    m[meta.LINK_SLOT] = slot
                    m[meta.PARENT_RELEVANCE] = parent
        return metas

    @staticmethod
    def _name_of(link: Link) -> str:
        """What the name prior reads of a link: its anchor text, else its URL's words."""
        return link.anchor_text.strip() or " ".join(url_words(link.url))

    def _priors(self, links: Sequence[Link]) -> np.ndarray | None:
        """The links' name priors (``None``: the prior is off)."""
        if self.prior is None:
            return None
        priors = self.prior.scores([self._name_of(link) for link in links])
        # as the rescoring evidence keeps them (2 bytes), so a rescore gives the same
        # numbers while the models are unchanged
        return quantized_priors(priors)

    def _with_prior(
        self, values: np.ndarray, priors: np.ndarray | None, link_terms: LinkTerms
    ) -> np.ndarray:
        """``max(floor, value) ** (1 - w) * prior ** w`` (the floor lets the prior order
        links the models value at 0); a link without a prior (NaN: scored before the
        prior was on) keeps its value. The prior stands in for what the term model does
        not know: ``w = name_prior * k / (k + n)``, ``n`` the fetched pages that used the
        most used word of the link's name (:meth:`TermModel.name_evidence`), ``k`` the
        term model's shrinkage: a name of words no page used gets the whole share, a
        name with a word the crawl knows well little of it."""
        if priors is None:
            return values
        k = self.terms.shrinkage
        w = self.name_prior * k / (k + self.terms.name_evidence(link_terms))
        floor = nameprior.FLOOR
        mixed = np.maximum(floor, values) ** (1.0 - w) * np.maximum(floor, priors) ** w
        return np.where(np.isnan(priors), values, mixed)

    def _left_out(self, parent: Parent, link_terms: LinkTerms) -> LinkTerms:
        """``link_terms`` with their parent page left out of their scores
        (``leave_parent_out``), when that page is the one learnt last (the priority
        middleware hands a page to :meth:`observe`, then its links here)."""
        learnt = self._learnt
        if not self.leave_parent_out or learnt is None or learnt[0] != parent.url:
            return link_terms
        return link_terms.leaving_out(learnt[1], learnt[2])

    def _parent_degree(self, parent: Parent) -> float:
        """The parent's relevance degree; 0 for a page judged waste (``waste_label``)."""
        if parent.waste and self.waste_label:
            return 0.0
        return degree(parent.page_relevance, self.title_weight)

    def _named_urls(self, parent: Parent, links: Sequence[Link]) -> list[str]:
        """The links' URLs whose words count as their names: ``""`` for a link to a
        variant of the parent itself (``own_name``: :func:`same_page_name`), whose
        URL words are the parent's own name; they say how good the parent was, not
        what is behind the link."""
        urls = [link.url for link in links]
        own = self._page_name(parent.url) if self.own_name else ()
        if not own:
            return urls
        name = self._page_name
        named = ["" if same_page_name(name(u), own) else u for u in urls]
        self.own_name_links += named.count("")
        return named

    def _page_name(self, url: str) -> tuple[str, ...]:
        """:func:`page_name`, from a bounded cache (a link comes back page after page)."""
        got = self._names.get(url)
        return got if got is not None else remember(self._names, url, page_name(url), CACHE_SIZE)

    def _with_parent(self, values: np.ndarray, parent_label: np.ndarray | float) -> np.ndarray:
        """The parent's own label weighs in geometrically: a link of a page the crawl
        judged irrelevant is discounted, never dropped (He, Cheng & Cai 2009 weigh the
        parent page and the anchor; here the anchor side is learnt)."""
        if self.parent_share <= 0:
            return values
        parent = np.maximum(PARENT_FLOOR, parent_label)
        return np.clip(values, 0.0, 1.0) ** (1.0 - self.parent_share) * (parent**self.parent_share)

    def _slots(self, links: Sequence[Link]) -> np.ndarray | None:
        """The links' slots, as 32-bit values (``None``: the slot share is off, or no
        link has a slot); a slot that would wrap to 0 (no slot) is 1."""
        if self.slot_share <= 0 or not any(link.slot for link in links):
            return None
        given = np.fromiter((link.slot for link in links), np.int64, len(links))
        slots = given & 0xFFFFFFFF
        return np.where((slots == 0) & (given != 0), 1, slots)

    def _with_slot(self, values: np.ndarray, slots: np.ndarray | None) -> np.ndarray:
        """Where a link stands can only cost it: ``value * min(1, score / mean) ** q``,
        ``score`` the mean label of the pages fetched through links of the same slot
        (:meth:`TermModel.slot_scores`), ``mean`` the crawl's. Links of one slot keep
        their order, a slot as good as the crawl's pages costs nothing, and a slot
        whose links led to worse pages (a "related articles" list of random articles,
        a forum's replies) falls below the page's prose, learnt on the site as it is."""
        if slots is None:
            return values
        mean = self.terms.mean
        if mean <= 0:
            return values
        ratio = np.minimum(1.0, self.terms.slot_scores(slots) / mean)
        return np.clip(values, 0.0, 1.0) * np.maximum(PARENT_FLOOR, ratio) ** self.slot_share

    @property  # type: ignore[override]
    def rescores(self) -> bool:
        """Links carry rescoring evidence (the term model alone scores them)."""
        return self.rescore_links and self.classifier is None

    @property  # type: ignore[override]
    def link_slots(self) -> bool:
        """The spider gives each content link its slot (``slot_share`` is on)."""
        return self.slot_share > 0

    @property  # type: ignore[override]
    def keeps_link_text(self) -> bool:
        """Anchor text and context must come back with the page (the classifier)."""
        return self.classifier is not None

    def rescore(self, evidence: list[bytes]) -> tuple[list[int], list[float]]:
        """Priorities and values of waiting links from the evidence :meth:`score_links`
        gave them, with the models as they are now (the frontier calls it in one batch:
        :meth:`focused.frontier.memory.MemoryFrontier.rescore`). The same numbers as
        :meth:`score_links` when the models have not changed since."""
        link_terms, parent_labels, parent_ids = decode_evidence(evidence)
        values = self.exploration.blend(self.terms.score_terms(link_terms), link_terms)
        if self.hubs is not None:
            parent_labels = self.hubs.values(parent_labels, parent_ids)
        values = self._with_parent(values, parent_labels)
        slots = evidence_slots(evidence) if self.slot_share > 0 else None
        values = np.clip(self._with_slot(values, slots), 0.0, 1.0)
        if self.prior is not None:
            values = self._with_prior(values, evidence_priors(evidence), link_terms)
        self.rescored += len(evidence)
        self.rescorings += 1
        return np.rint(values * PRIORITY_SCALE).astype(np.int64).tolist(), values.tolist()

    def _anchor_relevance(self, links: Sequence[Link]) -> np.ndarray:
        """r of each anchor with the expanded topic (the spider's r until there is one)."""
        if self._vector is None or not any(link.anchor_text for link in links):
            return np.array([link.anchor_relevance for link in links], dtype=np.float64)
        return self._vector.cosines([link.anchor_text for link in links])

    # --- learning -------------------------------------------------------------------
    def observe(self, url: str, page: PageFacts, link: Mapping[str, Any]) -> None:
        """A fetched page: its relevance labels the link that led to it (``link``: the
        request's meta) and its distinct terms (``page.terms``, title and body, UTF-8:
        :func:`focused.ranking.relevance.term_counts`) teach the term model. A waste page
        (``page.waste``, with ``waste_label``) is a label of 0 on the words of its main
        content beside its title, is no relevant page (no exploration, no relevance
        feedback) and does not teach the page model."""
        waste = page.waste and self.waste_label
        relevant = page.relevant and not waste
        self.waste_pages += waste
        # a waste page (a talk page, a thread's second page: the article's title over a
        # few lines of their own) says the link led nowhere, however relevant its title
        y = 0.0
        if not waste:
            y = label(degree(page.page_relevance, self.title_weight), self.label_floor)
        self.pages += 1
        self.exploration.observe(relevant)
        self.terms.optimism = self.optimism * self.exploration.weight
        terms = (page.own_terms if waste else page.terms) or ()
        # the buckets of page.terms, when the spider hashed them with the body's cosine
        page_buckets = None if waste or not terms else page.buckets
        if self.page_judge is not None and terms and not waste:
            # judged before it learns from the page; it can only raise the label
            if page_buckets is None:
                page_buckets = PageModel.features(terms)
            y = self.page_judge.label(y, page_buckets)
            self.page_judge.learn(page_buckets, page.page_relevance)
        if self.hubs is not None:
            self.hubs.add(url, y, str(link.get(meta.PARENT_URL) or ""))
        # the page's buckets are hashed once, for the page model and the term model
        buckets = self.terms.learn_page(terms, y, page_buckets)
        slot, parent_label = self._slot_of(link)
        if slot and parent_label >= self.terms.mean:
            # the slot of the link that led here learns how good its page was
            buckets = np.append(buckets, self.terms.learn_slot(slot, y))
            self.slot_pages += 1
        if self.leave_parent_out:
            self._learnt = (url, buckets, y)
        if self.recorder is not None:
            counted = relevant and bool(self.expand_terms and terms)
            self.recorder.add(buckets, y, relevant, terms if counted else None)
        if self.classifier is not None and meta.ANCHOR_TEXT in link:
            self.classifier.learn(
                LinkEvidence(
                    url,
                    str(link.get(meta.ANCHOR_TEXT, "")),
                    str(link.get(meta.LINK_CONTEXT, "")),
                    float(link.get(meta.PARENT_RELEVANCE, 0.0)),
                    float(link.get(meta.ANCHOR_RELEVANCE, 0.0)),
                    int(link.get(meta.HOPS, 0)),
                    float(link.get(meta.TERM_SCORE, 0.0)),
                ),
                y,
            )
        if relevant and self.expand_terms and terms:
            # background frequencies: the term model's (no second count of every page)
            self.expander.add_relevant(terms)  # UTF-8 terms, decoded only when added
            self.relevant_pages += 1
            self._maybe_expand()

    def _slot_of(self, link: Mapping[str, Any]) -> tuple[int, float]:
        """The slot of ``link`` and the label of the page it stood on (0, 0.0: none).

        The page of ``link`` teaches its slot only when that parent page was at least as
        good as the crawl's mean label. What a slot says is whether its links keep to
        the subject of the page they stand on: a page's prose does, a list of random
        articles does not. From an off-topic page every slot leads mostly off-topic,
        and a random list, which leaves the subject, looks best. Both come from the
        link's rescoring evidence, else from its meta."""
        if self.slot_share <= 0:
            return 0, 0.0
        record = link.get(meta.EVIDENCE)
        if isinstance(record, bytes):
            return evidence_slot_and_parent(record)
        slot = int(link.get(meta.LINK_SLOT, 0) or 0)
        parent = link.get(meta.PARENT_RELEVANCE)
        if not slot or parent is None:
            return 0, 0.0
        return slot, label(float(parent), self.label_floor)

    def _maybe_expand(self, force: bool = False) -> None:
        """Refresh the expanded topic when enough relevant pages came since the last."""
        if not force and self.relevant_pages < self._next_expansion:
            return
        # every expand_every relevant pages at first, then every 25 % more: the
        # refresh scans the relevant pages' vocabulary, so its cost stays amortised
        self._next_expansion = max(
            self.relevant_pages + max(1, self.expand_every),
            math.ceil(self.relevant_pages * 1.25),
        )
        expanded = self.expander.keywords(self.terms.document_frequency, self.terms.pages)
        if len(expanded) > len(self.keywords):
            self._vector = TermWeights(expanded)
            self.expanded = len(expanded) - len(self.keywords)

    # --- one model for several processes, and across a resume ------------------------
    def share(self) -> None:
        """Record what this process learns, for :meth:`take_delta` (a shared model)."""
        if self.recorder is None:
            self.recorder = DeltaRecorder()

    def take_delta(self) -> ModelDelta | None:
        """What this process learnt since the last call (``None``: not sharing)."""
        return self.recorder.take() if self.recorder is not None else None

    def merge(self, delta: ModelDelta) -> None:
        """Add what other processes learnt (sums commute: any order gives one model):
        the term statistics, the mean label, the relevant pages (exploration) and the
        relevant pages' term frequencies (the vocabulary expansion)."""
        t = self.terms
        t.add(delta.buckets, delta.counts, delta.sums)
        t.pages += delta.pages
        t.total += delta.total
        self.merged_pages += delta.pages
        self.exploration.relevant += delta.relevant
        self.terms.optimism = self.optimism * self.exploration.weight
        if delta.relevant_pages and self.expand_terms:
            ex = self.expander
            ex.relevant_pages += delta.relevant_pages
            ex.df_rel.update(delta.terms)
            if len(ex.df_rel) > ex.max_vocabulary:
                ex.df_rel = Counter(dict(ex.df_rel.most_common(ex.max_vocabulary // 2)))
            self.relevant_pages += delta.relevant_pages
            self._maybe_expand()

    def model_state(self) -> dict[str, Any]:
        """The whole learnt model as plain data (:func:`~focused.ranking.modelstate.dumps_state`):
        the touched buckets' counts and sums, the page count and label total, the relevant
        pages, the expansion's term frequencies and the page model when it is on (the link
        classifier and the hub evidence, both off by default, are not saved)."""
        t = self.terms
        touched = np.flatnonzero(t.counts)
        terms = list(self.expander.df_rel)
        return {
            "buckets": touched.astype(np.int64),
            "counts": t.counts[touched],
            "sums": t.sums[touched],
            "pages": t.pages,
            "total": t.total,
            "explore_relevant": self.exploration.relevant,
            "relevant_pages": self.relevant_pages,
            "expander_relevant_pages": self.expander.relevant_pages,
            "strategy_pages": self.pages,
            "terms": join_terms(_as_bytes(x) for x in terms),
            "term_df": np.array([self.expander.df_rel[x] for x in terms], dtype=np.int64),
            **(self.page_judge.state() if self.page_judge is not None else {}),
        }

    def load_model_state(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`model_state` (replaces what was learnt so far)."""
        t = self.terms
        buckets = np.asarray(state["buckets"], dtype=np.int64)
        ok = (buckets >= 0) & (buckets < t.counts.size)
        t.counts[:] = 0.0
        t.sums[:] = 0.0
        t.counts[buckets[ok]] = np.asarray(state["counts"], dtype=np.float64)[ok]
        t.sums[buckets[ok]] = np.asarray(state["sums"], dtype=np.float64)[ok]
        t.pages = int(state["pages"])
        t.total = float(state["total"])
        self.exploration.relevant = int(state["explore_relevant"])
        self.terms.optimism = self.optimism * self.exploration.weight
        self.pages = int(state.get("strategy_pages", t.pages))
        self.relevant_pages = int(state["relevant_pages"])
        self.expander.relevant_pages = int(state["expander_relevant_pages"])
        names = split_terms(bytes(state.get("terms", b"")))
        df = np.asarray(state.get("term_df", np.zeros(0)), dtype=np.int64).tolist()
        self.expander.df_rel = Counter(dict(zip(names, df, strict=True)))
        if self.page_judge is not None:
            self.page_judge.load_state(state)
        self._vector = None
        self.expanded = 0
        if self.relevant_pages and self.expand_terms:
            self._maybe_expand(force=True)

    def stats(self) -> dict[str, float]:
        """Numbers for the crawl's stats (``focused/learning/...``)."""
        out = {
            "pages": float(self.pages),
            "mean_label": round(self.terms.mean, 4),
            "expanded_terms": float(self.expanded),
            "explore_weight": round(self.exploration.weight, 4),
            "own_name_links": float(self.own_name_links),
            "waste_pages": float(self.waste_pages),
            "slot_pages": float(self.slot_pages),
        }
        if self.classifier is not None:
            out["classifier_examples"] = float(self.classifier.examples)
        if self.prior is not None:
            out["name_prior_embedded"] = float(self.prior.embedded)
        return out


def _as_bytes(term: str | bytes) -> bytes:
    return term if isinstance(term, bytes) else term.encode("utf-8")
