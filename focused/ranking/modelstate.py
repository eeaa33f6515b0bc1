"""The learnt term model as plain data: saved, loaded, and merged across workers.

Pure module (numpy only). What the ``learning`` strategy learns from the pages it fetched
(:mod:`focused.ranking.learning`) is a sum over pages: per hashed term, the number of
pages that used it and the sum of their labels; the number of pages and the sum of all
labels (the crawl's mean label); the pages judged relevant (the exploration weight of
:class:`~focused.ranking.learning.Exploration`) and the document frequencies of terms in
them (the vocabulary expansion, relevance feedback). Sums commute: a :class:`ModelDelta`
(what some pages taught) can be added in any order, by any worker, and the model is the
same, so several crawler processes can share one model by adding their deltas to it
(the shared frontier's ``<key>:model:*`` hashes) and a crawl can be saved and resumed.

:func:`encode_delta` / :func:`decode_delta` pack a delta into bytes (little-endian
arrays, no pickle); :func:`dumps_state` / :func:`loads_state` a whole model state (a
mapping of numbers and numpy arrays) into an ``.npz`` blob (``allow_pickle=False``).
"""

from __future__ import annotations

import io
import struct
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DeltaRecorder",
    "ModelDelta",
    "STATE_VERSION",
    "decode_delta",
    "dumps_state",
    "encode_delta",
    "join_terms",
    "loads_state",
    "split_terms",
]

#: version of the saved state (:func:`dumps_state`); a different one is not loaded
STATE_VERSION = 1
# pages, sum of labels, relevant pages, relevant pages counted for the expansion,
# buckets, terms, bytes of the joined terms
_HEAD = struct.Struct("<IdIIIII")


@dataclass
class ModelDelta:
    """What some pages taught: per bucket the pages that used it (``counts``) and their
    summed labels (``sums``); ``pages``, ``total`` (their labels, summed), ``relevant``
    (those judged relevant), ``relevant_pages`` and ``terms`` (document frequency of each
    term in the relevant pages counted for the vocabulary expansion)."""

    buckets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sums: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pages: int = 0
    total: float = 0.0
    relevant: int = 0
    relevant_pages: int = 0
    terms: Counter[bytes] = field(default_factory=Counter)

    @property
    def empty(self) -> bool:
        return not self.pages and not self.buckets.size and not self.relevant_pages


class DeltaRecorder:
    """Collects the pages a worker learnt from since its last :meth:`take`."""

    def __init__(self) -> None:
        self._buckets: list[np.ndarray] = []
        self._labels: list[float] = []
        self.pages = 0
        self.total = 0.0
        self.relevant = 0
        self.relevant_pages = 0
        self.terms: Counter[bytes] = Counter()

    def add(
        self,
        buckets: np.ndarray,
        y: float,
        relevant: bool,
        relevant_terms: Iterable[bytes] | None = None,
    ) -> None:
        """One page: its distinct ``buckets``, its label ``y``; ``relevant_terms``: its
        distinct terms when they count for the vocabulary expansion."""
        self.pages += 1
        self.total += float(y)
        self.relevant += bool(relevant)
        if buckets.size:
            self._buckets.append(buckets)
            self._labels.append(float(y))
        if relevant_terms is not None:
            self.relevant_pages += 1
            self.terms.update(set(relevant_terms))

    def take(self) -> ModelDelta:
        """The delta of the pages added since the last call (summed per bucket)."""
        delta = ModelDelta(
            pages=self.pages,
            total=self.total,
            relevant=self.relevant,
            relevant_pages=self.relevant_pages,
            terms=self.terms,
        )
        if self._buckets:
            flat = np.concatenate(self._buckets)
            lengths = np.fromiter(map(len, self._buckets), dtype=np.int64)
            labels = np.repeat(np.array(self._labels), lengths)
            delta.buckets, inverse = np.unique(flat, return_inverse=True)
            delta.counts = np.bincount(inverse, minlength=delta.buckets.size).astype(np.float64)
            delta.sums = np.bincount(inverse, weights=labels, minlength=delta.buckets.size)
        self.__init__()  # type: ignore[misc]
        return delta


def join_terms(terms: Iterable[bytes]) -> bytes:
    """Terms joined by NUL bytes (a term never holds one)."""
    return b"\0".join(terms)


def split_terms(blob: bytes) -> list[bytes]:
    return blob.split(b"\0") if blob else []


def encode_delta(delta: ModelDelta) -> bytes:
    """``delta`` as bytes: a header, then buckets (u32), counts and sums (f64), term
    frequencies (u32) and the NUL-joined terms."""
    terms = list(delta.terms)
    joined = join_terms(terms)
    head = _HEAD.pack(
        delta.pages,
        delta.total,
        delta.relevant,
        delta.relevant_pages,
        delta.buckets.size,
        len(terms),
        len(joined),
    )
    return b"".join(
        (
            head,
            delta.buckets.astype("<u4").tobytes(),
            delta.counts.astype("<f8").tobytes(),
            delta.sums.astype("<f8").tobytes(),
            np.array([delta.terms[t] for t in terms], dtype="<u4").tobytes(),
            joined,
        )
    )


def decode_delta(blob: bytes) -> ModelDelta:
    """The :class:`ModelDelta` of :func:`encode_delta`; ``ValueError`` when damaged."""
    if len(blob) < _HEAD.size:
        raise ValueError("model delta: too short")
    pages, total, relevant, relevant_pages, nb, nt, nj = _HEAD.unpack_from(blob)
    at = _HEAD.size
    if len(blob) != at + nb * 20 + nt * 4 + nj:
        raise ValueError("model delta: wrong length")
    buckets = np.frombuffer(blob, "<u4", nb, at).astype(np.int64)
    at += nb * 4
    counts = np.frombuffer(blob, "<f8", nb, at).astype(np.float64)
    at += nb * 8
    sums = np.frombuffer(blob, "<f8", nb, at).astype(np.float64)
    at += nb * 8
    freq = np.frombuffer(blob, "<u4", nt, at).tolist()
    at += nt * 4
    names = split_terms(blob[at : at + nj])
    if len(names) != nt:
        raise ValueError("model delta: wrong term count")
    return ModelDelta(
        buckets,
        counts,
        sums,
        pages,
        total,
        relevant,
        relevant_pages,
        Counter(dict(zip(names, freq, strict=True))),
    )


def dumps_state(state: Mapping[str, Any]) -> bytes:
    """A model state (numbers, bytes and numpy arrays by name) as an ``.npz`` blob."""
    arrays: dict[str, np.ndarray] = {"version": np.array(STATE_VERSION)}
    for name, value in state.items():
        if isinstance(value, bytes):
            arrays[name] = np.frombuffer(value, dtype=np.uint8)
            arrays[f"{name}.bytes"] = np.array(1)
        else:
            arrays[name] = np.asarray(value)
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()


def loads_state(blob: bytes) -> dict[str, Any]:
    """The state :func:`dumps_state` wrote; ``ValueError`` when it is not one (or of
    another version)."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"not a saved model ({exc})") from None
    if int(arrays.pop("version", -1)) != STATE_VERSION:
        raise ValueError("a saved model of another version")
    state: dict[str, Any] = {}
    for name, value in arrays.items():
        if name.endswith(".bytes"):
            continue
        if f"{name}.bytes" in arrays:
            state[name] = value.tobytes()
        elif value.ndim == 0:
            state[name] = value.item()
        else:
            state[name] = value
    return state
