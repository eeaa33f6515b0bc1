"""Hosts that answer nothing but server errors (no Scrapy here).

A host that answers 5xx (or 429 Too Many Requests without ``Retry-After``) to every
request was asked every one of its URLs ``1 + RETRY_TIMES`` times, however many there
were: a site down for maintenance, or one that answers 503 to crawlers for good, got
thousands of requests in one crawl. :class:`ServerErrorStreaks` counts each host's such
answers in a row (retries included; any other answer ends the streak) and gives the host
up for the run once they reach the limit (``FOCUSED_MAX_SERVER_ERRORS``).
"""

from __future__ import annotations


class ServerErrorStreaks:
    """5xx and 429 answers in a row per host; ``limit`` of them (0: never) give the host
    up."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, int(limit))
        self.streaks: dict[str, int] = {}
        self.gave_up: set[str] = set()

    def answered(self, host: str, status: int) -> bool:
        """Count the answer ``status`` of ``host``; True when it gives the host up (once)."""
        if not self.limit or host in self.gave_up:
            return False
        if not (500 <= status <= 599 or status == 429):
            self.streaks.pop(host, None)
            return False
        streak = self.streaks.get(host, 0) + 1
        if streak < self.limit:
            self.streaks[host] = streak
            return False
        self.streaks.pop(host, None)
        self.gave_up.add(host)
        return True

    def given_up(self, host: str) -> bool:
        return host in self.gave_up
