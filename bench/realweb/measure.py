"""What a crawl of the realistic web spent its budget on, and how well it used the hosts.

- :func:`page_shares`: the share of the crawled pages in each URL class
  (:data:`bench.realweb.web.CLASSES`); ``non_article`` = duplicate + meta + chrome.
- :func:`fetch_shares`: the same over every page *fetched* (answered 200 by a live
  host) until the budget-th stored page, ``fetched_non_article_share``: what the crawl
  spent, counting the pages it fetched and did not store (near-duplicates, pages marked
  ``noindex``) as well.
- :func:`host_use`: from the server's log (:class:`bench.realweb.serve.Hit`), two
  numbers over the crawl (first request to the budget-th stored page):

  * ``host_busy`` = busy-host-seconds ÷ waiting-host-seconds. A live host is *waiting*
    while the crawl knows a URL on it that it has not requested yet (a link on a page it
    was served, robots.txt allowing) or while a request to it is being answered; it is
    *busy* while a request to it is being answered (its latency included). 1.0: no host
    with work left ever sat idle. Meaningful without a download delay.
  * ``host_utilisation`` (with ``DOWNLOAD_DELAY=d`` > 0) = requests answered ÷
    (waiting-host-seconds ÷ d): the fetch rate divided by the most a polite crawler could
    fetch, one request per waiting host every ``d`` seconds, averaged over the crawl.

  Both count a URL as waiting from the moment the page that links it was answered (the
  crawler parses it a little later) until it is requested; a link the crawler chose to
  drop (a strategy's threshold, a per-host cap) stays "waiting", so both are lower bounds
  of the crawler's own view. Dead and hanging hosts are not counted (they cannot serve).
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from w3lib.url import canonicalize_url

from bench.realweb.serve import Hit
from bench.realweb.web import CLASSES, NON_ARTICLE, ROBOTS, RealWeb

_HREF = re.compile(r'href="([^"]*)"')


def page_shares(web: RealWeb, urls: Sequence[str]) -> dict[str, float]:
    """``<class>_share`` for every URL class and ``non_article_share``, over ``urls``."""
    counts = Counter(web.classify(u) for u in urls)
    total = max(1, len(urls))
    shares = {f"{c}_share": counts.get(c, 0) / total for c in CLASSES}
    shares["non_article_share"] = sum(counts.get(c, 0) for c in NON_ARTICLE) / total
    return shares


def fetch_shares(web: RealWeb, hits: Iterable[Hit], end: float | None) -> dict[str, float]:
    """``fetched_non_article_share`` and ``fetched_pages`` over the pages fetched (200
    answers of live hosts, robots.txt left out) that started before ``end``."""
    classes = []
    for hit in hits:
        host = web.host_named(hit.host)
        if host is None or not host.live or hit.status != 200:
            continue
        if end is not None and hit.start > end:
            continue
        cls = web.classify(web.base(host) + hit.target)
        if cls != ROBOTS:
            classes.append(cls)
    waste = sum(1 for c in classes if c in NON_ARTICLE)
    return {
        "fetched_non_article_share": waste / max(1, len(classes)),
        "fetched_pages": float(len(classes)),
    }


def _links(web: RealWeb, hit: Hit) -> list[str]:
    host = web.host_named(hit.host)
    if host is None or hit.status != 200:
        return []
    page = web.render(host, hit.target)
    if not page.content_type.startswith("text/html"):
        return []
    return [html.unescape(h) for h in _HREF.findall(page.body.decode("utf-8"))]


def host_use(
    web: RealWeb,
    hits: Iterable[Hit],
    *,
    seeds: Iterable[str],
    end: float | None = None,
    delay: float = 0.0,
) -> dict[str, float | None]:
    """``host_busy``, ``host_utilisation`` (None without a delay), ``mean_waiting_hosts``,
    ``requests`` and ``hosts_served`` of a crawl (see the module docstring); ``end``: the
    time the crawl reached its budget (default: the last answer)."""
    ordered = sorted((h for h in hits if (web.host_named(h.host) or _NONE).live), key=_start)
    if not ordered:
        return {
            "host_busy": None,
            "host_utilisation": None,
            "mean_waiting_hosts": None,
            "requests": 0,
            "hosts_served": 0,
        }
    begin = ordered[0].start
    stop = end if end is not None and end > begin else max(h.end for h in ordered)
    events: list[tuple[float, int, Hit]] = []
    for hit in ordered:
        if hit.start < stop:
            events += [(hit.start, 1, hit), (min(hit.end, stop), 0, hit)]
    events.sort(key=lambda e: (e[0], e[1]))
    tracker = _Tracker(web)
    for url in seeds:
        tracker.discover(url)
    last = begin
    requests = 0
    for when, is_start, hit in events:
        tracker.advance(when - last)
        last = when
        url = canonicalize_url(web.base(web.host_named(hit.host) or _NONE) + hit.target)
        if is_start:
            requests += 1
            tracker.request(hit.host, url)
        else:
            tracker.answered(hit.host)
            for link in _links(web, hit):
                tracker.discover(link)
    tracker.advance(max(0.0, stop - last))
    waiting = tracker.waiting_seconds
    span = max(stop - begin, 1e-9)
    return {
        "host_busy": tracker.busy_seconds / waiting if waiting > 0 else None,
        "host_utilisation": requests / (waiting / delay) if delay > 0 and waiting > 0 else None,
        "mean_waiting_hosts": waiting / span,
        "requests": requests,
        "hosts_served": len({h.host for h in ordered}),
    }


def _start(hit: Hit) -> float:
    return hit.start


class _NoHost:
    live = False
    name = ""
    kind = ""


_NONE = _NoHost()  # type: ignore[assignment]


class _Tracker:
    """Per live host: the URLs known and not requested, the requests in service; the
    host-seconds spent waiting and busy."""

    def __init__(self, web: RealWeb) -> None:
        self.web = web
        self.requested: set[str] = set()
        self.pending: dict[str, set[str]] = {}
        self.in_service: Counter[str] = Counter()
        self.waiting_seconds = 0.0
        self.busy_seconds = 0.0

    def _active(self, host: str) -> bool:
        return bool(self.pending.get(host)) or self.in_service[host] > 0

    def advance(self, dt: float) -> None:
        if dt <= 0:
            return
        hosts = set(self.pending) | set(self.in_service)
        self.waiting_seconds += dt * sum(1 for h in hosts if self._active(h))
        self.busy_seconds += dt * sum(1 for h in hosts if self.in_service[h] > 0)

    def discover(self, url: str) -> None:
        host = self.web.host_named(_hostname(url))
        if host is None or not host.live or not self.web.allowed(url):
            return
        canon = canonicalize_url(url)
        if canon not in self.requested:
            self.pending.setdefault(host.name, set()).add(canon)

    def request(self, host: str, url: str) -> None:
        self.requested.add(url)
        self.pending.get(host, set()).discard(url)
        self.in_service[host] += 1

    def answered(self, host: str) -> None:
        self.in_service[host] -= 1


def _hostname(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].rsplit(":", 1)[0].lower()
