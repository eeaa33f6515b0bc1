"""Bounded maps for what a crawl of the open web keeps per URL, host or shape: keys never
stop coming, so every such map has a size it never passes.

- :func:`remember`: a cache that is emptied at once when full (no bookkeeping per hit:
  for values that are cheap to make again, looked up on a hot path).
- :func:`recent`: per-key state that keeps the most recently used keys and drops the
  least recently used one first (an ``OrderedDict`` in use order).

Pure: no Scrapy.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["recent", "remember"]

K = TypeVar("K")
V = TypeVar("V")


def remember(cache: dict[K, V], key: K, value: V, size: int) -> V:
    """Put ``value`` in ``cache`` under ``key`` and return it; a cache that holds ``size``
    entries (or more) is emptied first."""
    if len(cache) >= size:
        cache.clear()
    cache[key] = value
    return value


def recent(entries: OrderedDict[K, V], key: K, new: Callable[[], V], size: int) -> V:
    """``entries[key]``, made the most recently used; when missing, ``new()`` is put
    there and the least recently used entries are dropped while more than ``size``
    remain (with ``size`` 0 the new entry itself, still returned). Values are never
    None."""
    got = entries.get(key)
    if got is None:
        got = entries[key] = new()
        while len(entries) > size:
            entries.popitem(last=False)
    else:
        entries.move_to_end(key)
    return got
