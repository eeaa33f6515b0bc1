"""Exact seen-URL set on 64-bit fingerprints."""

from __future__ import annotations

import numpy as np
import pytest

from focused.frontier.seen import FingerprintTable, SeenSet, url_fingerprint


def test_fingerprint_is_canonical_signed_64_bit():
    a = url_fingerprint("http://example.com/a?y=2&x=1#frag")
    assert a == url_fingerprint("http://example.com/a?x=1&y=2")
    assert a != url_fingerprint("http://example.com/b?x=1&y=2")
    assert -(2**63) <= a < 2**63
    fps = {url_fingerprint(f"http://example.com/{i}") for i in range(20_000)}
    assert len(fps) == 20_000


def test_add_contains_len():
    s = SeenSet()
    assert s.add(5) and s.add(-7)
    assert not s.add(5)
    assert 5 in s and -7 in s and 6 not in s
    assert len(s) == 2
    s.discard(5)
    assert 5 not in s and len(s) == 1


def test_dump_and_load_roundtrip(tmp_path):
    s = SeenSet(url_fingerprint(f"http://e.org/{i}") for i in range(1000))
    s.add(2**63 - 1)
    s.add(-(2**63))
    path = tmp_path / "seen.bin"
    s.dump(path)
    assert path.stat().st_size == 8 * len(s)
    r = SeenSet.load(path)
    assert set(r) == set(s)
    assert len(SeenSet.load(tmp_path / "missing.bin")) == 0


def test_table_update_overwrites_present_values_and_inserts_the_others():
    rng = np.random.default_rng(5)
    table = FingerprintTable(values=True)
    # clustered fingerprints (same low bits): long probe runs for the vectorised rounds
    present = np.unique(
        np.concatenate([rng.integers(-(2**62), 2**62, 700), np.arange(1, 60) << 20])
    )
    for i, fp in enumerate(present.tolist()):
        table.set(fp, i)
    absent = np.array([0, 3, -(2**40), *range((7 << 20) + 1, (7 << 20) + 601)])
    fps = np.concatenate([present[::2], absent])  # half the present ones, then new ones
    values = rng.integers(0, 2**40, len(fps))
    table.update(fps, values)
    want = {fp: i for i, fp in enumerate(present.tolist())}
    want.update(zip(fps.tolist(), values.tolist(), strict=True))
    assert len(table) == len(want)  # grew on the way
    assert dict(table.items()) == want
    with pytest.raises(ValueError):
        table.update(fps[:2], values[:1])


def test_table_update_follows_a_probe_run_past_the_end_of_the_table() -> None:
    table = FingerprintTable(values=True)
    mask = len(table._keys) - 1
    # 40 fingerprints whose home is the last slot: their run wraps to the first slots
    fps = np.array([(k << 20) | mask for k in range(1, 41)], dtype=np.int64)
    for fp in fps.tolist():
        table.set(fp, 1)
    assert len(table._keys) == mask + 1  # no growth: the run really wraps
    assert (table._keys[:39] != 0).all()
    table.update(fps[::-1], np.arange(40, dtype=np.int64))
    assert dict(table.items()) == dict(zip(fps[::-1].tolist(), range(40), strict=True))
