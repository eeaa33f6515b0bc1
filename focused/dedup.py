"""Exact seen-URL set on 64-bit URL fingerprints (URL de-duplication, seed 002).

A URL's fingerprint is the first 8 bytes of the SHA-1 of its canonical form
(:func:`w3lib.url.canonicalize_url`, as Scrapy's request fingerprint uses: query
arguments sorted, fragment dropped), read as a signed 64-bit integer so that it fits an
SQLite ``INTEGER``. The set is exact (no Bloom filter): with 64-bit fingerprints the
chance of any collision among 10 million URLs is about 3e-6.

Memory: a Python ``set`` of ints costs about 60-70 bytes per URL (the int object plus
the hash-table slot); 10 million URLs need ~0.7 GB. Good enough for now; a sorted
``numpy.int64`` array with a small set in front would bring it to ~8 bytes per URL behind
the same interface.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import functools
import hashlib
import os
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path

from w3lib.url import canonicalize_url

__all__ = ["URL_CACHE_SIZE", "SeenSet", "url_fingerprint"]

#: URLs whose fingerprints are cached (most recently used)
URL_CACHE_SIZE = 65536


@functools.lru_cache(maxsize=URL_CACHE_SIZE)
def url_fingerprint(url: str) -> int:
    """Signed 64-bit fingerprint of the canonical form of ``url``.

    Canonicalising is the costly part (~7 us). Most links a crawler extracts were seen
    before (navigation, popular pages), so the last :data:`URL_CACHE_SIZE` URLs are kept
    in an LRU cache: Broder, Najork and Wiener (2003, thesis seed 002's appendix) found
    that a cache of ~50,000 URLs answers ~80% of a crawler's seen-URL tests.
    """
    digest = hashlib.sha1(canonicalize_url(url).encode("utf-8")).digest()  # noqa: S324
    return int.from_bytes(digest[:8], "big", signed=True)


class SeenSet:
    """Exact set of 64-bit fingerprints of the URLs a crawl has queued."""

    __slots__ = ("_fps",)

    def __init__(self, fps: Iterable[int] = ()) -> None:
        self._fps: set[int] = set(fps)

    def add(self, fp: int) -> bool:
        """Add ``fp``; ``True`` when it was not seen before."""
        fps = self._fps
        if fp in fps:
            return False
        fps.add(fp)
        return True

    def discard(self, fp: int) -> None:
        self._fps.discard(fp)

    def __contains__(self, fp: object) -> bool:
        return fp in self._fps

    def __len__(self) -> int:
        return len(self._fps)

    def __iter__(self) -> Iterator[int]:
        return iter(self._fps)

    # --- persistence ----------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The fingerprints as native-endian int64s (8 bytes per URL)."""
        return array("q", self._fps).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> SeenSet:
        fps = array("q")
        fps.frombytes(data)
        return cls(fps)

    def dump(self, path: str | os.PathLike[str]) -> None:
        """Write the set to ``path`` atomically (temporary file, then rename)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(self.to_bytes())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SeenSet:
        """The set :meth:`dump` wrote; empty when ``path`` does not exist."""
        path = Path(path)
        if not path.exists():
            return cls()
        return cls.from_bytes(path.read_bytes())
