"""``gao``: Gao & Han's link weight v / (t * l).

Seed links weigh 1. A page whose relevance is below the threshold is dropped: its links
are not followed. Otherwise each of its links weighs ``v / (t * l)``: v the page's
cosine relevance, t the number of links on the page, l the number of "/" levels of the
link's URL path.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from focused.strategies.base import Link, LinkScore, Parent, Strategy, value_priority


def url_levels(url: str) -> int:
    """l: number of "/" levels of the URL path (at least 1)."""
    path = urlsplit(url).path
    return max(1, path.count("/"))


@dataclass
class GaoStrategy(Strategy):
    name = "gao"

    def seed(self) -> LinkScore:
        return LinkScore(priority=value_priority(1.0, 10**9), value=1.0)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        if not parent.relevant:
            return None
        value = parent.body_relevance / (max(1, parent.link_count) * url_levels(link.url))
        return LinkScore(priority=value_priority(value, 10**9), value=value)
