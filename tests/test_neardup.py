"""The packed near-duplicate index answers as the dict-of-lists index it replaced."""

from __future__ import annotations

import random
import sys
from collections import deque

import pytest

from focused.web.neardup import _BAND_BITS, _BANDS, _MASK, NearDuplicates


class DictIndex:
    """The index before it was packed: per band, a dict of lists of (fingerprint, title)
    in insertion order, and the entries in a deque to forget the oldest first."""

    def __init__(self, max_distance: int, capacity: int) -> None:
        self.max_distance = max_distance
        self.capacity = capacity
        self._bands: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(_BANDS)]
        self._order: deque[tuple[int, int]] = deque()

    def __len__(self) -> int:
        return len(self._order)

    def find(self, fingerprint: int, title: int = 0) -> int | None:
        for i, band in enumerate(self._bands):
            for seen, seen_title in band.get((fingerprint >> (i * _BAND_BITS)) & _MASK, ()):
                if seen_title == title and (seen ^ fingerprint).bit_count() <= self.max_distance:
                    return seen
        return None

    def add(self, fingerprint: int, title: int = 0) -> None:
        entry = (fingerprint, title)
        for i, band in enumerate(self._bands):
            band.setdefault((fingerprint >> (i * _BAND_BITS)) & _MASK, []).append(entry)
        self._order.append(entry)
        while len(self._order) > self.capacity:
            old = self._order.popleft()
            for i, band in enumerate(self._bands):
                key = (old[0] >> (i * _BAND_BITS)) & _MASK
                bucket = band[key]
                bucket.remove(old)
                if not bucket:
                    del band[key]


def _near(rng: random.Random, fp: int, bits: int) -> int:
    for b in rng.sample(range(64), bits):
        fp ^= 1 << b
    return fp


@pytest.mark.parametrize(("capacity", "max_distance"), [(1, 3), (7, 3), (50, 2), (5000, 3)])
def test_packed_index_finds_what_the_dict_index_finds(capacity: int, max_distance: int) -> None:
    """Same answers (the same fingerprint returned, or None) and the same size, through
    additions past the capacity, on fingerprints that share bands often: near copies of
    earlier ones (0-5 bits flipped), a few titles, and fingerprints whose bands collide."""
    rng = random.Random(capacity * 10 + max_distance)
    packed, ref = NearDuplicates(max_distance, capacity=capacity), DictIndex(max_distance, capacity)
    seen: list[int] = []
    answers = 0
    for _ in range(6000):
        roll = rng.random()
        if seen and roll < 0.5:
            fp = _near(rng, rng.choice(seen[-min(200, capacity + 2) :]), rng.randint(0, 5))
        elif roll < 0.6:  # one band shared with a random earlier one, the rest new
            fp = rng.getrandbits(64) & ~_MASK | (rng.choice(seen) & _MASK if seen else 0)
        else:
            fp = rng.getrandbits(64)
        title = rng.randrange(3)
        got = packed.find(fp, title)
        assert got == ref.find(fp, title)
        answers += got is not None
        if got is None or rng.random() < 0.3:  # add duplicates too, as add() allows
            packed.add(fp, title)
            ref.add(fp, title)
            seen.append(fp)
        assert len(packed) == len(ref)
    assert answers > 100  # the test met near-duplicates


def test_packed_index_memory_per_page_is_bounded() -> None:
    """~48 bytes a fingerprint beside the fixed heads, and no more slots than capacity."""
    index = NearDuplicates(capacity=1000)
    rng = random.Random(1)
    for _ in range(5000):
        index.add(rng.getrandbits(64), rng.getrandbits(64))
    assert len(index) == 1000 and len(index._fingerprints) == 1000
    per_band = [len(a) for a in index._older]
    assert per_band == [1000] * _BANDS
    size = sum(sys.getsizeof(a) for a in (index._fingerprints, index._titles, *index._older))
    assert size < 1000 * 48 * 1.2
    none = NearDuplicates(capacity=0)
    none.add(5, 1)
    assert len(none) == 0 and none.find(5, 1) is None
