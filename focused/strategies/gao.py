"""``gao``: link weight v / (t * l) of Gao and Han (seed 003).

Seed links weigh 1. A page whose relevance is below the threshold is dropped: its links
are not followed. Otherwise each of its links weighs ``v / (t * l)``: v the page's
cosine relevance, t the number of links on the page, l the number of "/" levels of the
link's URL path.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from focused.strategies.base import LinkScore, Parent, value_priority


def url_levels(url: str) -> int:
    """l: number of "/" levels of the URL path (at least 1)."""
    path = urlsplit(url).path
    return max(1, path.count("/"))


@dataclass
class GaoStrategy:
    name: str = "gao"
    anneal: bool = False

    def seed(self) -> LinkScore:
        return LinkScore(priority=value_priority(1.0, 10**9), value=1.0)

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        if not parent.relevant:
            return None
        value = parent.body_relevance / (max(1, parent.link_count) * url_levels(url))
        return LinkScore(priority=value_priority(value, 10**9), value=value)
