"""The request meta keys of the focused crawler, and what the spider tells about a page.

Like Scrapy's own ``depth`` (set by ``DepthMiddleware``) or ``redirect_urls`` (set by
``RedirectMiddleware``), the crawler keeps per-request state in ``Request.meta``. Every
key it sets is named here, and each starts with ``focused_``, so a spider's own meta
(``meta["m"]``, ``meta["hops"]``, ...) travels through the crawler untouched.

Set by the spider on each link request:

- ``focused_anchor_relevance`` (:data:`ANCHOR_RELEVANCE`): cosine of the link's anchor
  text with the topic, ``r`` in the m-value rule (Liu, Xia & Xu 2010); 1.0 for a seed.
- ``focused_parent_url`` (:data:`PARENT_URL`): URL of the page that holds the link;
  ``""`` for a seed.
- ``focused_chrome`` (:data:`CHROME`): True on a link that stands only in the page's
  chrome (navigation, footer, sidebar, a host's repeated blocks:
  :mod:`focused.web.template`). The spider sets its priority (:data:`CHROME_PRIORITY`
  minus its depth) and a value of 0 itself, so no strategy scores it: it waits at the
  bottom of the frontier, fetched when no content link is left; the chrome links of a
  page reached by a chrome link are dropped (one hop of chrome, no endless chain).
- ``focused_anchor_text`` and ``focused_link_context`` (:data:`ANCHOR_TEXT`,
  :data:`LINK_CONTEXT`): the anchor text and the words around the link, only for a
  strategy that asks for them (:attr:`focused.strategies.base.Strategy.link_evidence`).
- ``focused_link_slot`` (:data:`LINK_SLOT`): for the same strategies, the slot of the
  block the link stands in (a 32-bit hash of its container path: tags, ids and classes
  from the body down, :mod:`focused.web.template`); 0 when unknown. Links in a page's
  prose share one slot, those of a "related articles" list another.

Set by :class:`focused.middlewares.FocusedPriorityMiddleware` when it scores a link
(``request.priority`` is set at the same time):

- ``focused_value`` (:data:`LINK_VALUE`): the strategy's value of the link, about
  [0, 1], higher better; the annealing pick (He, Cheng & Cai 2009) compares these.
- ``focused_m`` and ``focused_hops`` (:data:`M`, :data:`HOPS`): the link's message value
  and the number of irrelevant pages crossed since the last relevant one (the m-value
  rule's state).
- ``focused_evidence`` (:data:`EVIDENCE`): bytes a rescoring strategy keeps to value the
  link again later; the frontier stores them packed.
- whatever else the strategy returns in :attr:`focused.strategies.base.LinkScore.meta`
  (named by the strategy, e.g. :data:`PARENT_RELEVANCE`, :data:`TERM_SCORE`).

Set by the spider on the *response* it parsed, for the middleware:

- ``focused_page`` (:data:`PAGE`): a :class:`PageFacts`.

Set by :class:`focused.network.QuietNetworkGiveUp` on a request whose download failed:

- ``focused_dataloss`` (:data:`DATALOSS`): True once its server sent a body shorter than
  its ``Content-Length``; the retry copies it, and a second such body is not retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ANCHOR_RELEVANCE = "focused_anchor_relevance"
PARENT_URL = "focused_parent_url"
ANCHOR_TEXT = "focused_anchor_text"
LINK_CONTEXT = "focused_link_context"
LINK_SLOT = "focused_link_slot"
LINK_VALUE = "focused_value"
M = "focused_m"
HOPS = "focused_hops"
EVIDENCE = "focused_evidence"
#: The ``learning`` strategy's: the parent page's relevance degree in [0, 1] ...
PARENT_RELEVANCE = "focused_parent_relevance"
#: ... and the term model's score of the link when it was scored.
TERM_SCORE = "focused_term_score"
PAGE = "focused_page"
DATALOSS = "focused_dataloss"
CHROME = "focused_chrome"
#: Priority of a chrome link (minus its depth): below any strategy's priority.
CHROME_PRIORITY = -(10**12)

#: Scrapy's own key (``DepthMiddleware``), read here.
DEPTH = "depth"


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What the spider found out about a page, handed to the priority middleware.

    ``page_relevance`` is A = 4B + C (B the title's cosine with the topic, C the body's:
    the page-relevance rule of the web-crawler thesis, Binzhou University 2010),
    ``relevant`` is A above the page threshold, ``link_count`` the number of links the
    page's content holds, chrome links left out (``t`` in Gao & Han's link weight); B
    and C are computed on the page's main content (:mod:`focused.web.template`).
    ``terms`` (the page's distinct terms, UTF-8) is filled only for a strategy that
    learns from pages (:attr:`focused.strategies.base.Strategy.learns`).
    ``waste``: the spider judged the page waste for its URL shape (a thin main content
    not relevant in its own words: a talk page, a thread's second page, an article's
    comments; :mod:`focused.web.urlshape`); its relevance A is still the page's, but a
    strategy that learns must not take it as a good outcome of the link that led to it.
    ``own_terms``: of a waste page, for a strategy that learns, the distinct terms of
    its main content without its title's words (None otherwise).
    ``buckets``: with ``terms``, their distinct hashed buckets, ascending
    (:func:`focused.ranking.relevance.term_buckets`), hashed once with the body's cosine.
    """

    page_relevance: float = 0.0
    relevant: bool = False
    body_relevance: float = 0.0
    link_count: int = 0
    terms: tuple[bytes, ...] | None = None
    waste: bool = False
    own_terms: tuple[bytes, ...] | None = None
    buckets: np.ndarray | None = field(default=None, compare=False)
