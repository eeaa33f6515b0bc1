"""Compressed bodies cut short or corrupt (``Content-Encoding``), in a real crawl.

Scrapy's decoders give what they can of a gzip, deflate or brotli stream that ends
early (and nothing of a zstd one): half a page was stored as the page. Now such a body
is a bad page of its own kind, counted and skipped, fetched once; a whole stream, and
plain HTML sent as ``gzip``, are stored as before.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import brotli
import pytest

from focused.web import codings
from focused.web.codings import BrokenCoding, TooLarge, decode
from tests.loopback import Answer, LoopbackServer
from tests.test_hostile import assert_consistent, assert_went_on, crawl_site, paths, stats

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:  # Python < 3.14
    from backports import zstd

PAGE = (
    b"<html><head><title>chemistry acid base</title></head><body>"
    + b"".join(
        b"<p>acid %d and base %d in chemistry, a reaction of salts</p>" % (i, i) for i in range(400)
    )
    + b"</body></html>"
)
ENCODE = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstd.compress,
}


def corrupt(stream: bytes) -> bytes:
    """``stream`` with 8 bytes in its middle flipped."""
    bad = bytearray(stream)
    for i in range(len(bad) // 2, len(bad) // 2 + 8):
        bad[i] ^= 0x55
    return bytes(bad)


def test_a_stream_cut_short_or_corrupt_is_refused_and_a_whole_one_decoded() -> None:
    for coding, encode in ENCODE.items():
        stream = encode(PAGE)
        assert decode(stream, coding) == PAGE
        with pytest.raises(BrokenCoding) as cut:
            decode(stream[: len(stream) // 2], coding)
        assert (cut.value.coding, cut.value.kind) == (coding, "cut")
        with pytest.raises(TooLarge):
            decode(stream, coding, max_size=1000)
        assert decode(PAGE, coding) is None  # plain HTML: no stream of that coding
    for coding in ("gzip", "deflate"):
        with pytest.raises(BrokenCoding) as bad:
            decode(corrupt(ENCODE[coding](PAGE)), coding)
        assert bad.value.kind == "corrupt"
    # two gzip members are one body; a bad CRC-32 in a trailer is read past (as browsers do)
    assert (
        decode(gzip.compress(PAGE) + gzip.compress(b"<p>more</p>"), "gzip") == PAGE + b"<p>more</p>"
    )
    wrong_crc = bytearray(gzip.compress(PAGE))
    wrong_crc[-6] ^= 1
    assert decode(bytes(wrong_crc), "x-gzip") == PAGE


class Counted:
    """A decoder (``zlib.decompressobj``, ``ZstdDecompressor``) that counts, in
    ``fed``, the input bytes it is given: one entry per gzip member or zstd frame."""

    def __init__(self, make: Any, fed: list[int], *args: Any) -> None:
        self.decoder = make(*args)
        self.fed = fed
        fed.append(0)

    def decompress(self, data: bytes, max_length: int) -> bytes:
        self.fed[-1] += len(data)
        return self.decoder.decompress(data, max_length)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.decoder, name)


@pytest.fixture
def fed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The input bytes given to each gzip member's and zstd frame's decoder."""
    counts: list[int] = []
    for module, name in ((zlib, "decompressobj"), (zstd, "ZstdDecompressor")):
        make = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *args, make=make: Counted(make, counts, *args))
    return counts


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_body_of_many_tiny_members_is_refused_after_a_bounded_number_of_them(
    coding: str, fed: list[int]
) -> None:
    """80,000 empty gzip members (1.5 MB) or zstd frames: each member's decoder was
    given the whole rest of the body, so the work grew with the square of the members
    (4 s of frozen crawl for these, minutes at DOWNLOAD_MAXSIZE). Now a body of more
    than MAX_MEMBERS members is refused after that many decoder steps, and each member
    is given its own bytes and one small piece more, whatever follows it."""
    empty = ENCODE[coding](b"")
    with pytest.raises(BrokenCoding) as refused:
        decode(empty * 80_000, coding)
    assert (refused.value.coding, refused.value.kind) == (coding, "members")
    assert len(fed) == codings.MAX_MEMBERS
    assert max(fed) <= codings.FIRST_FEED
    # under the cap, the bytes given to the decoders grow with the body, not its square
    fed.clear()
    three = [PAGE, b"<p>more acid</p>" * 5000, b""]
    body = b"".join(ENCODE[coding](part) for part in three) * 3000
    assert decode(body, coding) == b"".join(three) * 3000
    assert len(fed) == 9000
    assert sum(fed) <= 3 * len(body) + codings.FIRST_FEED * len(fed)
    # a body of three members, as some servers send, is decoded whole
    fed.clear()
    parts = [PAGE, b"<p>and more</p>", PAGE.upper()]
    assert decode(b"".join(ENCODE[coding](part) for part in parts), coding) == b"".join(parts)
    assert len(fed) == 3


def coded_site(bodies: dict[str, tuple[str, bytes]]) -> Callable[[LoopbackServer, str], Answer]:
    """A site whose home page links each of ``bodies`` (path: its Content-Encoding and
    its body as sent)."""
    home = b"".join(b'<a href="%s">chemistry acid</a>' % p.encode() for p in bodies)

    def answer(server: LoopbackServer, path: str) -> Answer:
        if path == "/":
            return (
                200,
                {},
                b"<html><head><title>chemistry</title></head><body>%s</body></html>" % home,
            )
        if path in bodies:
            coding, body = bodies[path]
            return 200, {"Content-Encoding": coding}, body
        return 404, {}, b""

    return answer


@pytest.mark.integration
def test_compressed_pages_cut_short_or_corrupt_are_skipped_not_stored_halfway(
    tmp_path: Path,
) -> None:
    bodies: dict[str, tuple[str, bytes]] = {"/whole.html": ("gzip", gzip.compress(PAGE))}
    bodies["/plain-as-gzip.html"] = ("gzip", PAGE.replace(b"acid base", b"plain"))
    for coding, encode in ENCODE.items():
        stream = encode(PAGE.replace(b"acid base", coding.encode()))
        bodies[f"/cut-{coding}.html"] = (coding, stream[: len(stream) // 2])
    for coding in ("gzip", "deflate"):
        stream = ENCODE[coding](PAGE.replace(b"acid base", b"bad " + coding.encode()))
        bodies[f"/corrupt-{coding}.html"] = (coding, corrupt(stream))
    # a page of three gzip members is the page; one of 80,000 (all empty but the
    # first) is a bad page: decoding it froze the crawl for seconds
    three = [PAGE.replace(b"acid base", b"three")[:900], b"<p>acid</p>", b"</body></html>"]
    bodies["/three-members.html"] = ("gzip", b"".join(gzip.compress(p) for p in three))
    many = gzip.compress(PAGE.replace(b"acid base", b"many")) + gzip.compress(b"") * 80_000
    bodies["/many-members.html"] = ("gzip", many)
    answer = coded_site(bodies)
    crawl, server = crawl_site(tmp_path / "out", answer)
    assert_went_on(crawl)
    assert_consistent(crawl.out)
    assert paths(crawl) == {"/", "/whole.html", "/plain-as-gzip.html", "/three-members.html"}
    titles = {row["title"] for row in crawl.rows()}
    assert "chemistry acid base" in titles  # the whole stream, decoded
    for path in bodies:
        assert server.log.count(path) == 1, server.log  # skipped, not retried
    s = stats(crawl)
    assert s["focused/skipped/truncated_coding"] == 4
    assert s["focused/skipped/corrupt_coding"] == 2
    lines = [ln for ln in crawl.log.splitlines() if "body cut short" in ln]
    assert len(lines) == 4 and all(ln.endswith(": skipped") for ln in lines)
    assert "chemistry three" in titles
    assert s["focused/skipped/coding_members"] == 1
    [line] = [ln for ln in crawl.log.splitlines() if "members (streams" in ln]
    assert "/many-members.html sent a gzip body of more than 10000 members" in line


@pytest.mark.integration
def test_identity_is_no_coding_and_an_unknown_coding_keeps_the_body_as_sent(
    tmp_path: Path,
) -> None:
    """``Content-Encoding: identity`` is no coding: Scrapy warned on every such page that
    it cannot decode it, and left the gzip of ``gzip, identity`` undecoded (the page
    skipped as binary). An unknown coding (``foo``) keeps the body as sent: stored when
    it is HTML, skipped as binary when it is not."""
    bodies = {
        "/identity.html": ("identity", PAGE.replace(b"acid base", b"identity")),
        "/gzip-identity.html": (
            "gzip, identity",
            gzip.compress(PAGE.replace(b"acid base", b"two")),
        ),
        "/foo.html": ("foo", PAGE.replace(b"acid base", b"foo")),
        "/foo-gzip.html": ("foo", gzip.compress(PAGE)),
    }
    answer = coded_site(bodies)
    crawl, _ = crawl_site(tmp_path / "out", answer)
    assert_went_on(crawl)
    assert paths(crawl) == {"/", "/identity.html", "/gzip-identity.html", "/foo.html"}
    titles = {row["title"] for row in crawl.rows()}
    assert {"chemistry identity", "chemistry two", "chemistry foo"} <= titles
    assert stats(crawl)["focused/skipped/binary"] == 1  # foo-gzip.html
    warned = [ln for ln in crawl.log.splitlines() if " WARNING: " in ln]
    assert not [ln for ln in warned if "identity" in ln], warned
