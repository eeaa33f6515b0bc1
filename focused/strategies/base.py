"""What every link-ordering strategy is: a pure rule from (parent page, link) to a value.

A strategy never sees Scrapy. The spider builds one per crawl (``spider.strategy``,
:func:`focused.config.strategy`); the priority middleware builds a :class:`Parent` from
the response that yielded the links, asks the strategy for a :class:`LinkScore` per link
(:meth:`Strategy.score_links`, one call per page) and writes it into the request
(``priority``, :data:`focused.meta.LINK_VALUE` and the state keys of
:mod:`focused.meta`). The scheduler orders by ``priority``; the annealing pick also
compares link values, so a strategy keeps ``value`` in about [0, 1], higher is better.

A strategy is a subclass of :class:`Strategy`: it overrides :meth:`Strategy.score` (or
:meth:`Strategy.score_links`), usually :meth:`Strategy.seed` and
:meth:`Strategy.from_params`, and sets the class flags it needs. Every other hook has a
default that does nothing. ``FOCUSED_STRATEGY`` names a registered strategy
(:data:`focused.strategies.STRATEGIES`) or gives the dotted import path of a subclass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from focused.meta import PageFacts

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "Link",
    "LinkScore",
    "Parent",
    "SettingsReader",
    "Strategy",
    "StrategyParams",
    "value_priority",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Parent:
    """What a strategy may know about the page that holds the links."""

    url: str
    page_relevance: float  # A = 4B + C of the page (the page-relevance rule)
    relevant: bool  # A > page threshold
    body_relevance: float  # C, the cosine of the page text
    m: float  # the page's own message value (the m-value rule, Liu, Xia & Xu 2010)
    hops: int  # irrelevant pages crossed since the last relevant one
    depth: int
    link_count: int  # t in Gao & Han's link weight
    #: the spider judged the page waste for its URL shape (:class:`focused.meta.PageFacts`)
    waste: bool = False


class Link(NamedTuple):
    """One link of a page, as the priority middleware hands it to a strategy."""

    url: str
    #: r: cosine of the anchor text with the topic's own keywords (the spider's)
    anchor_relevance: float
    #: anchor text and the words around the link; only for a strategy whose
    #: :attr:`Strategy.link_evidence` is set (else empty)
    anchor_text: str = ""
    context: str = ""
    #: the slot of the block the link stands in (:func:`focused.web.template.link_slots`;
    #: 0: unknown); for the same strategies
    slot: int = 0


@dataclass(frozen=True, slots=True)
class LinkScore:
    """A strategy's verdict on one link."""

    priority: int  # Scrapy request priority, higher first
    value: float  # comparable value in about [0, 1], higher better (annealing)
    m: float = 0.0
    hops: int = 0
    #: more request meta for the strategy to read back (keys from :mod:`focused.meta`)
    meta: Mapping[str, Any] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class StrategyParams:
    """Everything a strategy may be built from, read once from the settings and the topic
    (:func:`focused.config.strategy_params`). Pure values: no Scrapy object."""

    #: M0, b, f and the side-channel bound of the m-value rule (Liu, Xia & Xu 2010)
    m0: float = 100.0
    ratio: float = 0.8
    anchor_threshold: float = 0.2
    max_hops: int = 6
    #: tunneling's widening of the anchor threshold (He, Cheng & Cai 2009)
    widening: float = 0.5
    #: D, the BS-BS tunneling depth (Lin et al. 2007)
    bsbs_depth: int = 2
    #: the 4 in A = 4B + C
    title_weight: float = 4.0
    #: a page is relevant when A is above this (the topic's or FOCUSED_PAGE_THRESHOLD)
    page_threshold: float = 2.0
    #: the topic's weighted keywords
    keywords: Mapping[str, float] = field(default_factory=_empty)
    #: canonical URLs of the crawl's known targets (``spider.targets``; a benchmark's
    #: oracle reads them, a real crawl's strategy must not)
    targets: frozenset[str] = frozenset()
    #: ``FOCUSED_SEED``
    seed: int = 42
    #: the strategy's own parameters, from its :meth:`Strategy.params_from_settings`
    options: Mapping[str, Any] = field(default_factory=_empty)


class SettingsReader(Protocol):
    """Reads and checks one setting for :meth:`Strategy.params_from_settings`; a bad
    value raises the caller's one-line configuration error."""

    def number(self, name: str) -> float: ...

    def in_range(
        self,
        name: str,
        low: float,
        high: float,
        *,
        open_low: bool = True,
        open_high: bool = True,
    ) -> float: ...

    def flag(self, name: str) -> bool: ...

    def text(self, name: str) -> str: ...


class Strategy:
    """A link-ordering rule; subclasses override what they need (see the module doc).

    Class flags, read by the crawler's glue:

    - ``anneal``: the scheduler adds the simulated-annealing pick with tunneling
      (He, Cheng & Cai 2009) on the link values;
    - ``link_evidence``: the spider puts each link's anchor text and context in its
      request (:data:`focused.meta.ANCHOR_TEXT`, :data:`focused.meta.LINK_CONTEXT`);
    - ``learns``: the spider fills :attr:`focused.meta.PageFacts.terms` and the
      middleware calls :meth:`observe` with every fetched page;
    - ``rescores``: links carry :data:`focused.meta.EVIDENCE` and the frontier re-orders
      waiting links with :meth:`rescore` (an instance may turn it off);
    - ``keeps_link_text``: anchor text and context stay in a request once it is scored
      (else the middleware drops them: smaller frontier entries);
    - ``link_slots``: the spider puts each content link's slot in its request
      (:data:`focused.meta.LINK_SLOT`, read into :attr:`Link.slot`); the middleware
      drops it once the link is scored (a strategy that needs it back puts it in its
      :attr:`LinkScore.meta`).
    """

    name: ClassVar[str] = ""
    anneal: ClassVar[bool] = False
    link_evidence: ClassVar[bool] = False
    learns: ClassVar[bool] = False
    rescores: bool = False
    keeps_link_text: bool = False
    link_slots: bool = False

    def __str__(self) -> str:
        """The strategy's name: what ``%(strategy)s`` in a feed URI (Scrapy's spider
        attribute parameters) and a log line show."""
        return self.name or type(self).__name__

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.score is Strategy.score and cls.score_links is Strategy.score_links:
            raise TypeError(f"{cls.__qualname__} must define score() or score_links()")

    # --- building -------------------------------------------------------------------
    @classmethod
    def params_from_settings(cls, read: SettingsReader) -> Mapping[str, Any]:
        """The strategy's own parameters (:attr:`StrategyParams.options`), read and
        checked with ``read`` from the settings it declares; none by default."""
        return {}

    @classmethod
    def from_params(cls, params: StrategyParams) -> Self:
        """The strategy for a crawl with ``params``; by default built without any."""
        return cls()

    # --- scoring --------------------------------------------------------------------
    def seed(self) -> LinkScore:
        """Score of a seed URL (by default value 1 above every link of value < 1)."""
        return LinkScore(priority=value_priority(1.0), value=1.0)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        """Score of a link of ``parent``; ``None`` drops the link."""
        return self.score_links(parent, [link])[0]

    def score_links(self, parent: Parent, links: Sequence[Link]) -> list[LinkScore | None]:
        """Scores of all links of ``parent``, in order (by default :meth:`score` each)."""
        score = self.score
        return [score(parent, link) for link in links]

    # --- learning -------------------------------------------------------------------
    def observe(self, url: str, page: PageFacts, link: Mapping[str, Any]) -> None:
        """A fetched page, before its links are scored: ``page`` is what the spider found
        (:class:`~focused.meta.PageFacts`), ``link`` the request meta of the link that
        led to it. Nothing by default."""

    def rescore(self, evidence: list[bytes]) -> tuple[Sequence[int], Sequence[float]]:
        """New priorities and values of waiting links from the :data:`focused.meta.
        EVIDENCE` each was given (a :class:`focused.frontier.memory.Rescorer`). Only a
        strategy that ``rescores`` gives evidence; the default has none to rescore."""
        if evidence:
            raise NotImplementedError(f"{type(self).__name__} does not rescore links")
        return [], []

    def stats(self) -> dict[str, float]:
        """Numbers for the crawl's stats (``focused/<name>/<key>``)."""
        return {}


def value_priority(value: float, scale: int = 1_000_000) -> int:
    """Integer priority that keeps the order of a float ``value`` to 1/``scale``."""
    return int(round(value * scale))
