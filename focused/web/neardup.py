"""Near-duplicate pages: the same main content at another URL (print and mobile copies,
``?oldid=`` variants), found by SimHash (Charikar 2002; Manku, Jain & Das Sarma 2007).

A page's fingerprint is the 64-bit SimHash of its content's text pieces (the text nodes
of its main content, white space folded), each weighted by its length: bit ``i`` is set
when the pieces whose hash has bit ``i`` set outweigh the others. Pieces, not words:
pages of one site written from one vocabulary (the sandbox's) share most words and
would look alike, while a copy shares its paragraphs. Two pages whose fingerprints
differ in at most :data:`MAX_DISTANCE` bits are near-duplicates when their titles are
the same too (white space folded): a print or mobile copy and an old revision keep the
article's title, while two articles of different titles that share a text (the
Wikispeedia set holds nine such pairs, e.g. "Fossil" and "Fossil record", labelled
apart) are two pages.

:class:`NearDuplicates` keeps the fingerprints seen in four 16-bit bands (two
fingerprints within 3 bits agree on at least one band), bounded: the oldest fingerprints
are forgotten first. A page with less than :data:`MIN_CHARS` characters of content is
never called a duplicate (short pages look alike).

Each fingerprint keeps its *owner* (the crawler gives the URL of the page it stored,
and the URL that page names as its canonical one): a near-duplicate found later is
recorded as another URL of that page, not dropped (:meth:`NearDuplicates.owner_of`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Any, NamedTuple

import mmh3
import numpy as np

MAX_DISTANCE = 3
MIN_CHARS = 200
MAX_FINGERPRINTS = 200_000
_BANDS = 4
_BAND_BITS = 64 // _BANDS
_MASK = (1 << _BAND_BITS) - 1


def pieces(texts: Iterable[str], *, folded: bool = False) -> dict[str, int]:
    """The features of a text: its pieces with white space folded, by their length
    (``folded``: the pieces are folded already, as :meth:`focused.web.template.Page.
    content_folded` gives them)."""
    out: dict[str, int] = {}
    get = out.get
    for text in texts:
        piece = text if folded else " ".join(text.split())
        if piece:
            out[piece] = get(piece, 0) + len(piece)
    return out


def simhash(counts: Mapping[str, int] | Mapping[bytes, int]) -> int:
    """The 64-bit SimHash of features weighted by ``counts`` (0 for none)."""
    if not counts:
        return 0
    n = len(counts)
    # mmh3's signed 64-bit hashes, read as unsigned: the same bits
    hashes = np.fromiter(map(_first, map(mmh3.hash64, counts)), dtype=np.int64, count=n)
    weights = np.fromiter(counts.values(), dtype=np.float64, count=n)
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    score = weights @ (bits.astype(np.float64) * 2.0 - 1.0)
    return int(np.packbits(score > 0, bitorder="little").view("<u8")[0])


_first = itemgetter(0)


def distance(a: int, b: int) -> int:
    return (a ^ b).bit_count()


class Key(NamedTuple):
    """What a page is looked up and added by: its SimHash and its title's hash."""

    fingerprint: int
    title: int


def key_of(
    texts: Iterable[str], title: str = "", *, folded: bool = False, min_chars: int = MIN_CHARS
) -> Key | None:
    """The :class:`Key` of a page titled ``title`` whose content text nodes are ``texts``;
    None for a page with less than ``min_chars`` characters of content (never checked)."""
    features = pieces(texts, folded=folded)
    if sum(features.values()) < min_chars:
        return None
    return Key(simhash(features), mmh3.hash64(" ".join(title.split()), signed=False)[0])


class NearDuplicates:
    """Fingerprints seen so far, searched for one within ``max_distance`` bits.

    Packed, not a dict of lists per band (~650-790 bytes a page, 130 MB at
    :data:`MAX_FINGERPRINTS`): each fingerprint (unsigned 64-bit, as :func:`simhash` gives)
    and its title hash sit in a ring of ``capacity`` slots (entry ``n`` in slot
    ``n % capacity``), and each band's buckets are chains through the entries: the
    bucket's newest entry number in a table of 2**16 heads, each entry's next older one in
    the bucket beside it. 48 bytes a page and 2 MB of heads; an entry older than the
    ``capacity`` newest is forgotten, and the chains end there (they run newest to oldest).
    An entry added with an ``owner`` keeps a reference to it (the crawler's: a tuple of
    its URL and canonical URL, about 170 bytes more a page); ``None`` costs the slot.
    """

    def __init__(
        self,
        max_distance: int = MAX_DISTANCE,
        *,
        capacity: int = MAX_FINGERPRINTS,
        min_chars: int = MIN_CHARS,
    ) -> None:
        if not 0 <= max_distance < _BANDS:
            raise ValueError(f"max_distance must be in [0, {_BANDS - 1}], got {max_distance}")
        self.max_distance = max_distance
        self.capacity = max(0, capacity)
        self.min_chars = min_chars
        self._added = 0  # entries ever added: the next entry's number
        self._fingerprints = array("Q")  # by slot
        self._titles = array("Q")
        # per band: the number of the next older entry of the same bucket, -1: none
        self._older = [array("q") for _ in range(_BANDS)]
        self._heads = [array("q", [-1]) * (1 << _BAND_BITS) for _ in range(_BANDS)]
        self._owners: list[Any] = []  # by slot

    def __len__(self) -> int:
        return min(self._added, self.capacity)

    def find(self, fingerprint: int, title: int = 0) -> int | None:
        """A fingerprint seen with ``title`` (a hash) within ``max_distance`` bits of
        ``fingerprint``, or None: of the first band that holds one, the oldest."""
        n = self._entry(fingerprint, title)
        return None if n < 0 else self._fingerprints[n % self.capacity]

    def owner_of(self, key: Key) -> tuple[bool, Any]:
        """``(True, owner)`` when a page of ``key`` was seen (``owner`` as it was added,
        of the entry :meth:`find` answers with), else ``(False, None)``."""
        n = self._entry(key.fingerprint, key.title)
        if n < 0:
            return False, None
        return True, self._owners[n % self.capacity]

    def set_owner(self, key: Key, owner: Any) -> bool:
        """Give the entry :meth:`owner_of` finds for ``key`` a new owner (the page's main
        URL changed); False when there is none."""
        n = self._entry(key.fingerprint, key.title)
        if n < 0:
            return False
        self._owners[n % self.capacity] = owner
        return True

    def _entry(self, fingerprint: int, title: int) -> int:
        """The number of the entry :meth:`find` answers with, -1 for none."""
        capacity = self.capacity
        oldest = self._added - min(self._added, capacity)
        fingerprints, titles, limit = self._fingerprints, self._titles, self.max_distance
        for i in range(_BANDS):
            n = self._heads[i][(fingerprint >> (i * _BAND_BITS)) & _MASK]
            older = self._older[i]
            found = None
            while n >= oldest:
                slot = n % capacity
                seen = fingerprints[slot]
                if titles[slot] == title and (seen ^ fingerprint).bit_count() <= limit:
                    found = n  # an older one may follow
                n = older[slot]
            if found is not None:
                return found
        return -1

    def add(self, fingerprint: int, title: int = 0, owner: Any = None) -> None:
        """Remember ``fingerprint`` seen with ``title`` (both unsigned 64-bit); the oldest
        entry is forgotten once ``capacity`` are held."""
        if not self.capacity:
            return
        n = self._added
        slot = n % self.capacity
        new = slot == len(self._fingerprints)
        if new:
            self._fingerprints.append(fingerprint)
            self._titles.append(title)
            self._owners.append(owner)
        else:
            self._fingerprints[slot] = fingerprint
            self._titles[slot] = title
            self._owners[slot] = owner
        for i in range(_BANDS):
            heads, key = self._heads[i], (fingerprint >> (i * _BAND_BITS)) & _MASK
            if new:
                self._older[i].append(heads[key])
            else:
                self._older[i][slot] = heads[key]
            heads[key] = n
        self._added = n + 1

    def check(self, texts: Iterable[str], title: str = "", *, folded: bool = False) -> bool:
        """Whether a page titled ``title`` whose content text nodes are ``texts`` (white
        space folded already with ``folded``) is a near-duplicate of one seen (then it is
        not added); a short page is never one (nor added)."""
        key = key_of(texts, title, folded=folded, min_chars=self.min_chars)
        if key is None:
            return False
        if self.find(*key) is not None:
            return True
        self.add(*key)
        return False


def later_is_main(first: str, first_canonical: str, later: str) -> bool:
    """Whether a near-duplicate fetched later (its URL ``later``) is the canonical URL of
    the page stored for the first copy (``first``, whose ``rel=canonical`` names
    ``first_canonical``, ``""`` for none; all canonical URLs): only when the first copy
    itself names the later URL. The later copy's own ``rel=canonical`` is never believed
    over the first: a copier that names itself canonical would otherwise take the real
    page's URL from it (the real page fetched first without ``rel=canonical``, or naming
    another form of its URL)."""
    return bool(first_canonical) and later == first_canonical and later != first
