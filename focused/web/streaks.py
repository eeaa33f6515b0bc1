"""Hosts that answer nothing but server errors (no Scrapy here).

A host that answers 5xx (or 429 Too Many Requests without ``Retry-After``) to every
request was asked every one of its URLs ``1 + RETRY_TIMES`` times, however many there
were: a site down for maintenance, or one that answers 503 to crawlers for good, got
thousands of requests in one crawl. :class:`ServerErrorStreaks` counts each host's such
answers in a row (retries included; any other answer ends the streak) and gives the host
up for the run once they reach the limit (``FOCUSED_MAX_SERVER_ERRORS``) and the streak
has lasted ``FOCUSED_SERVER_ERRORS_SECONDS``: a brief outage of a busy host (16
concurrent requests, each retried at once, fail 20 times within a second) does not end
a crawl whose topic lives on that one host.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class ServerErrorStreaks:
    """5xx and 429 answers in a row per host; ``limit`` of them (0: never), the first at
    least ``seconds`` before the last, give the host up."""

    def __init__(
        self, limit: int, seconds: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = max(0, int(limit))
        self.seconds = max(0.0, float(seconds))
        self.clock = clock
        #: host -> (answers in a row, when the first of them came)
        self.streaks: dict[str, tuple[int, float]] = {}
        self.gave_up: set[str] = set()

    def answered(self, host: str, status: int) -> bool:
        """Count the answer ``status`` of ``host``; True when it gives the host up (once)."""
        if not self.limit or host in self.gave_up:
            return False
        if not (500 <= status <= 599 or status == 429):
            self.streaks.pop(host, None)
            return False
        now = self.clock()
        streak, since = self.streaks.get(host, (0, now))
        streak += 1
        if streak < self.limit or now - since < self.seconds:
            self.streaks[host] = (streak, since)
            return False
        self.streaks.pop(host, None)
        self.gave_up.add(host)
        return True

    def given_up(self, host: str) -> bool:
        return host in self.gave_up
