"""URL shapes and what they yield, learnt online: links of a shape that keeps giving
waste (thin irrelevant pages, near-duplicates, pages marked ``noindex``) wait at the
bottom.

A real site's pages that are no article (talk and edit pages, revision histories, log
in, search results, comment pages, the second page of a thread, user profiles) are the
same few kinds of page on every article, and each kind has its own *URL shape*:
``/wiki/Talk:<name>``, ``/index.php?title=<name>&action=history``,
``/thread/<name>?page=2``. Their links stand in the article's content (a "Comments"
link under a news story, a thread's pager) or in chrome the host's template has not
learnt yet, and their URLs hold the article's own words, so a strategy that scores URL
words ranks them next to the article. What gives them away is what they yield.

:func:`shape` maps a URL to its shape: the host, the path with its last segment
replaced by ``*`` (a namespace prefix before ``:`` kept, ``Talk:*``; a file
extension kept, ``*.php``; digit-only segments as ``#``), and the sorted set of query
keys (values dropped): ``("h.test", "/wiki/Talk:*", "")``,
``("h.test", "/w/*.php", "action&title")``.

:class:`ShapeStats` counts per shape the pages fetched and the *waste* among them (the
spider decides what waste is: a near-duplicate, a ``noindex`` page, or a page whose
main content has fewer than :data:`MIN_WORDS` words outside its links and is not
relevant in the words it has beside its title; a short article or a list of links on
the topic is not waste). A shape's waste rate is
the posterior mean of a beta prior whose mean is learnt from the same path shape on the
other hosts (sites that run the same software share their URL layout, so a shape learnt
on one wiki is known on the next before it costs a page there), with a strength that
grows with what the other hosts showed, up to ``K``:

    m      = (w_other + a) / (n_other + a + b)
    k      = min(a + b + n_other, K)
    p_host = (w_host + k * m) / (n_host + k)

A link is *wasteful* when ``p_host`` of its shape is at least ``threshold``. With the
defaults (``a = 1``, ``b = 3``, ``K = 10``, ``threshold = 0.55``) three waste pages of a
shape, on one host or on several, and none good, are enough: (3 + 1) / (3 + 4) = 0.57;
one good page in four keeps it ((3 + 1) / (4 + 4) = 0.5), a host whose pages of the
shape were good keeps it whatever other hosts showed, and a shape of good pages never
gets there, so a few short articles do not hide their kind. A host's *dominant* shape,
the one that holds more than half of its good pages (of all its pages while it has no
good one), is never wasteful: on a site of short articles most off-topic articles are
thin, and that makes them no other kind of page; the pages a host's pager or comment
links add, however many, are not what its good pages are. The rule is the
beta-binomial estimate of a rate (e.g. Gelman et al., *Bayesian Data Analysis*, 2013,
ch. 2 and 5), applied to URL patterns as URL-based page-type learners do (Bar-Yossef,
Keidar & Schonfeld 2009, DUST; Koppula et al. 2010 learn URL rewrite rules from
duplicate clusters).

A link is looked at twice: when it is found (a link of a wasteful shape waits at the
bottom of the frontier) and, with ``FOCUSED_WASTE_SHAPE_RECHECK``, when it comes up
(:meth:`focused.scheduler.FocusedScheduler.next_request`, and the Redis frontier's
:meth:`focused.distributed.scheduler.RedisScheduler.next_request`: a link found before
its shape was learnt wasteful goes back to the bottom then, instead of being fetched).

Bounded: at most ``max_shapes`` shapes are remembered, the least recently seen first
forgotten. Pure: no Scrapy.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from urllib.parse import unquote, urlsplit

from focused.bounded import recent

#: A main content with fewer words than this outside its links is thin (a list of links,
#: a form, a few one-line replies): one waste outcome for its shape.
MIN_WORDS = 100
#: Beta prior of a shape's waste rate (mean a / (a + b) = 1/4).
PRIOR_WASTE = 1.0
PRIOR_GOOD = 3.0
#: Most weight (pseudo-pages) the other hosts' rate has in a host's rate.
HOST_SHRINKAGE = 10.0
#: Waste rate from which a shape's links wait at the bottom of the frontier.
THRESHOLD = 0.55
#: Shapes remembered (host shapes and all-host shapes together).
MAX_SHAPES = 50_000
#: A shape that holds more than this share of its host's good pages (of its fetched
#: pages while none was good) is the host's kind of article: never waste.
DOMINANT_SHARE = 0.5

_DIGITS = re.compile(r"^\d+$")
_NAMESPACE = re.compile(r"^([A-Za-z][A-Za-z _-]{0,30}):.")
_EXTENSION = re.compile(r"\.([A-Za-z0-9]{1,5})$")
_ALL = ""  # the host of the all-host shapes
#: URLs whose shape is cached (cleared when full): a page's links come back on page after
#: page, and a link is looked up more than once (its rate, then its host's share). The
#: URLs of a host share a few shapes: the cache keeps one tuple per distinct shape
#: (``_shape_values``, emptied with it), so a URL costs its key and a slot, not a tuple
#: and two strings of its own (~310 bytes a URL on the sandbox before, ~150 after).
SHAPE_CACHE_SIZE = 1 << 15
_shapes: dict[str, tuple[str, str, str]] = {}
_shape_values: dict[tuple[str, str, str], tuple[str, str, str]] = {}


def cached_shape(url: str) -> tuple[str, str, str]:
    """:func:`shape`, from a bounded cache."""
    got = _shapes.get(url)
    if got is None:
        if len(_shapes) >= SHAPE_CACHE_SIZE:
            _shapes.clear()
            _shape_values.clear()
        got = shape(url)
        got = _shapes[url] = _shape_values.setdefault(got, got)
    return got


def shape(url: str) -> tuple[str, str, str]:
    """(host, path shape, query keys) of ``url``; see the module docstring."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    segments = parts.path.split("/")
    out = []
    last = max((i for i, s in enumerate(segments) if s), default=-1)
    for i, seg in enumerate(segments):
        if _DIGITS.match(seg):
            out.append("#")
        elif i == last:
            out.append(_last_segment(unquote(seg)))
        else:
            out.append(seg)
    path = "/".join(out) or "/"
    keys = sorted({k for k, _, _ in (p.partition("=") for p in parts.query.split("&")) if k})
    return host, path, "&".join(keys)


def _last_segment(seg: str) -> str:
    ns = _NAMESPACE.match(seg)
    if ns:
        return ns.group(1) + ":*"
    ext = _EXTENSION.search(seg)
    if ext and len(seg) > len(ext.group(0)):
        return "*." + ext.group(1).lower()
    return "*"


class ShapeStats:
    """Pages and waste counted per URL shape (per host, and over all hosts)."""

    def __init__(
        self,
        *,
        threshold: float = THRESHOLD,
        prior_waste: float = PRIOR_WASTE,
        prior_good: float = PRIOR_GOOD,
        shrinkage: float = HOST_SHRINKAGE,
        max_shapes: int = MAX_SHAPES,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if prior_waste <= 0 or prior_good <= 0 or shrinkage < 0:
            raise ValueError("the priors must be positive and the shrinkage not negative")
        self.threshold = threshold
        self.prior_waste = prior_waste
        self.prior_good = prior_good
        self.shrinkage = shrinkage
        self.max_shapes = max_shapes
        # shape -> [pages, waste]
        self._counts: OrderedDict[tuple[str, str, str], list[int]] = OrderedDict()
        # host -> [pages fetched, good pages] (as bounded as the shapes)
        self._hosts: OrderedDict[str, list[int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._counts)

    def observe(self, url: str, waste: bool) -> None:
        """A fetched page of ``url``'s shape, waste or not."""
        host, path, keys = cached_shape(url)
        for key in ((host, path, keys), (_ALL, path, keys)):
            got = recent(self._counts, key, _no_pages, self.max_shapes)
            got[0] += 1
            got[1] += int(waste)
        counts = recent(self._hosts, host, _no_pages, self.max_shapes)
        counts[0] += 1
        counts[1] += int(not waste)

    def rate(self, url: str) -> float:
        """The waste rate of ``url``'s shape (the prior mean for a shape never seen)."""
        return self._rate(*cached_shape(url))

    def _rate(self, host: str, path: str, keys: str) -> float:
        n_all, w_all = self._counts.get((_ALL, path, keys), (0, 0))
        n, w = self._counts.get((host, path, keys), (0, 0))
        n_other, w_other = max(0, n_all - n), max(0, w_all - w)
        a, b = self.prior_waste, self.prior_good
        mean = (w_other + a) / (n_other + a + b)
        k = max(a + b, min(a + b + n_other, self.shrinkage))
        return (w + k * mean) / (n + k)

    def wasteful(self, url: str) -> bool:
        """Whether links of ``url``'s shape should wait at the bottom of the frontier:
        its waste rate reaches the threshold and it is not its host's dominant shape
        (:data:`DOMINANT_SHARE` of the host's good pages, or of all its pages while none
        was good; on a site of short articles most articles off the topic are thin and
        not relevant, and that makes them no other kind of page)."""
        host, path, keys = cached_shape(url)
        if self._rate(host, path, keys) < self.threshold:
            return False
        n, w = self._counts.get((host, path, keys), (0, 0))
        pages, good = self._hosts.get(host) or (0, 0)
        if good:
            return not (n - w > DOMINANT_SHARE * good)
        return not (n and n > DOMINANT_SHARE * pages)


def _no_pages() -> list[int]:
    return [0, 0]


def thin(content_words: int, link_words: int, min_words: int = MIN_WORDS) -> bool:
    """Whether a main content of ``content_words`` words, ``link_words`` of them in its
    links' anchors, is thin: fewer than ``min_words`` words outside links."""
    return content_words - link_words < min_words
