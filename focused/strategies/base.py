"""What every link-ordering strategy is: a pure rule from (parent page, link) to a value.

A strategy never sees Scrapy. The priority middleware builds a :class:`Parent` from the
response that yielded the links, asks the strategy for a :class:`LinkScore` per link,
and writes it into the request (``priority``, ``meta["link_value"]`` and the state
fields). The scheduler orders by ``priority``; the annealing scheduler also compares
``link_value``\\ s, so a strategy keeps ``value`` in about [0, 1], higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Parent:
    """What a strategy may know about the page that holds the links."""

    url: str
    page_relevance: float  # A = 4B + C of the page (seed 002)
    relevant: bool  # A > page threshold
    body_relevance: float  # C, the cosine of the page text
    m: float  # the page's own message value (seed 000)
    hops: int  # irrelevant pages crossed since the last relevant one
    depth: int
    link_count: int  # t in Gao's rule (seed 003)


@dataclass(frozen=True, slots=True)
class LinkScore:
    """A strategy's verdict on one link."""

    priority: int  # Scrapy request priority, higher first
    value: float  # comparable value in about [0, 1], higher better (annealing)
    m: float = 0.0
    hops: int = 0


class Strategy(Protocol):
    """A link-ordering rule. ``anneal`` tells the scheduler to add SA selection."""

    name: str
    anneal: bool

    def seed(self) -> LinkScore:
        """Score of a seed URL."""
        ...

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        """Score of a link of ``parent``; ``None`` drops the link."""
        ...


def value_priority(value: float, scale: int = 1_000_000) -> int:
    """Integer priority that keeps the order of a float ``value`` to 1/``scale``."""
    return int(round(value * scale))
