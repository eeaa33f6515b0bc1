"""A response body decoded from its ``Content-Encoding``, whole or not at all.

Pure module (zlib, and the brotli and zstd packages Scrapy itself uses; no Scrapy
import). :class:`focused.robustness.FocusedHttpCompressionMiddleware` decodes bodies
with :func:`decode`.

Scrapy's decoders return what they could of a stream that ends early or goes bad
halfway: a gzip, deflate or brotli body cut in half became half a page, stored as if it
were the page (its title, half its text, half its links), and a zstd one cut anywhere
an empty page. Here a body that begins as a stream of its coding but does not end as
one raises :class:`BrokenCoding`: ``cut`` (the input ends before the stream does) or
``corrupt`` (bytes the decoder refuses, after a good start). A body that does not
begin as such a stream at all (plain HTML sent as ``gzip``) is no stream of that coding:
:func:`decode` gives None and the caller keeps the body as sent.

A body of more than :data:`MAX_MEMBERS` gzip members or zstd frames (80,000 empty
ones are 1.5 MB, and decoding each is a step of Python) raises :class:`BrokenCoding`
of kind ``members``; each member's decoder is given its own bytes in pieces, not the
rest of the body, so the work grows with the body, not its square.

What is not checked, as Scrapy and the browsers do not: the CRC-32 and length in a gzip
member's trailer (some servers write them wrong over a whole stream), and bytes after
the last whole gzip member or zstd frame (padding, trailing garbage). Corruption the
stream's own structure does not show (a zstd frame without its optional checksum) goes
unseen, and a raw deflate stream (no zlib header to know it by) that does not decode
whole is taken for no deflate at all.
"""

from __future__ import annotations

import zlib

#: bytes decoded per step (as Scrapy's ``_CHUNK_SIZE``): the size limit is checked
#: between steps, so a bomb costs no more than the limit and one step
CHUNK = 65536
#: bytes of input a decoder is given first for each gzip member or zstd frame, doubled
#: up to :data:`CHUNK` for each further step: what follows a stream's end is copied
#: once by its decoder (``unused_data``), so a member costs its own size and this, not
#: the rest of the body (a body of many tiny members was quadratic)
FIRST_FEED = 1024
#: gzip members or zstd frames a body may hold: one more makes it a bad page
#: (:class:`BrokenCoding` of kind ``members``). Servers send one (a few when they
#: compress a page in parts); 80,000 empty members are 1.5 MB, each a step of the decoder
MAX_MEMBERS = 10_000

_GZIP_MAGIC = b"\x1f\x8b\x08"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class BrokenCoding(ValueError):
    """A body that begins as a stream of ``coding`` but does not end as one; ``kind`` is
    ``cut`` (its input ends first), ``corrupt`` (bytes the decoder refuses) or
    ``members`` (more than :data:`MAX_MEMBERS` gzip members or zstd frames)."""

    def __init__(self, coding: str, kind: str) -> None:
        what = {"cut": "cut short", "corrupt": "corrupt"}.get(
            kind, f"of more than {MAX_MEMBERS} members"
        )
        super().__init__(f"a {coding} stream {what}")
        self.coding = coding
        self.kind = kind


class TooLarge(ValueError):
    """The body decodes to more than the limit; ``size``: the bytes decoded so far."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"decoded {size} bytes, over the limit of {limit}")
        self.size = size
        self.limit = limit


def decode(body: bytes, coding: str, max_size: int = 0) -> bytes | None:
    """``body`` decoded from one ``coding`` (``gzip``, ``x-gzip``, ``deflate``, ``br``,
    ``zstd``), whole; None when it is not a stream of that coding (or the coding is
    another). Raises :class:`BrokenCoding` for a stream that is cut or corrupt, and
    :class:`TooLarge` once more than ``max_size`` bytes came out (0: no limit)."""
    coding = coding.strip().lower()
    out = bytearray()
    if coding in ("gzip", "x-gzip"):
        return _gunzip(body, out, max_size)
    if coding == "deflate":
        return _inflate(body, out, max_size)
    if coding == "br":
        return _unbrotli(body, out, max_size)
    if coding == "zstd":
        return _unzstd(body, out, max_size)
    return None


def _grow(out: bytearray, chunk: bytes, max_size: int) -> None:
    out += chunk
    if max_size and len(out) > max_size:
        raise TooLarge(len(out), max_size)


def _gzip_header_end(body: bytes, pos: int) -> int | None:
    """Where the gzip member header that starts at ``pos`` ends (RFC 1952); -1 when no
    member starts there, None when the body ends inside the header."""
    if body[pos : pos + 3] != _GZIP_MAGIC:
        return -1
    end = len(body)
    if pos + 10 > end:
        return None
    flags = body[pos + 3]
    at = pos + 10
    if flags & 4:  # FEXTRA: a 2-byte length, then that many bytes
        if at + 2 > end:
            return None
        at += 2 + int.from_bytes(body[at : at + 2], "little")
    for flag in (8, 16):  # FNAME, FCOMMENT: NUL-terminated
        if flags & flag:
            nul = body.find(b"\x00", at)
            if nul < 0:
                return None
            at = nul + 1
    if flags & 2:  # FHCRC
        at += 2
    return at if at <= end else None


def _raw_inflate(
    body: bytes, start: int, wbits: int, out: bytearray, max_size: int, *, coding: str
) -> int:
    """Inflate the stream at ``body[start:]`` into ``out``; where it ends in ``body``.

    The input is given in pieces (:data:`FIRST_FEED` bytes, doubled up to
    :data:`CHUNK`), never the whole rest of the body: what the decoder keeps of it
    (``unconsumed_tail``, ``unused_data``) is a copy, and a copy of the rest for each of
    many tiny members was quadratic."""
    decompressor = zlib.decompressobj(wbits)
    view = memoryview(body)
    pos, step = start, FIRST_FEED
    try:
        while not decompressor.eof:
            data: bytes | memoryview = view[pos : pos + step]
            if not data:
                break  # the body ends before the stream does
            pos += len(data)
            step = min(step * 2, CHUNK)
            while not decompressor.eof:
                # a full step of output leaves the rest of the piece in the tail, or
                # output still to come from the piece already taken
                chunk = decompressor.decompress(data, CHUNK)
                data = decompressor.unconsumed_tail
                _grow(out, chunk, max_size)
                if not data and len(chunk) < CHUNK:
                    break  # the piece is used up
    except zlib.error:
        raise BrokenCoding(coding, "corrupt") from None
    if not decompressor.eof:
        raise BrokenCoding(coding, "cut")
    return pos - len(decompressor.unused_data)


def _gunzip(body: bytes, out: bytearray, max_size: int) -> bytes | None:
    pos = members = 0
    while pos < len(body):
        start = _gzip_header_end(body, pos)
        if start == -1:
            if pos == 0:
                return None  # not gzip
            break  # after a whole member: padding or garbage, left alone
        if start is None:
            raise BrokenCoding("gzip", "cut")
        members += 1
        if members > MAX_MEMBERS:
            raise BrokenCoding("gzip", "members")
        end = _raw_inflate(body, start, -zlib.MAX_WBITS, out, max_size, coding="gzip")
        # the member's trailer (CRC-32, length: 8 bytes) is not checked; the next member
        pos = end + 8
    return bytes(out)


def _zlib_header(body: bytes) -> bool:
    """Whether ``body`` begins with a zlib header (RFC 1950: deflate, a valid check)."""
    return len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0


def _inflate(body: bytes, out: bytearray, max_size: int) -> bytes | None:
    if _zlib_header(body):
        _raw_inflate(body, 0, zlib.MAX_WBITS, out, max_size, coding="deflate")
        return bytes(out)
    # raw deflate (a Microsoft habit) has no header: only a whole stream shows it is one
    try:
        _raw_inflate(body, 0, -zlib.MAX_WBITS, out, max_size, coding="deflate")
    except BrokenCoding:
        return None
    return bytes(out)


def _unbrotli(body: bytes, out: bytearray, max_size: int) -> bytes | None:
    import brotli  # Scrapy's dependency for this coding

    decompressor = brotli.Decompressor()
    data = body
    try:
        while not decompressor.is_finished():
            chunk = decompressor.process(data, output_buffer_limit=CHUNK)
            data = b""
            _grow(out, chunk, max_size)
            if not chunk:
                break
    except brotli.error:
        if not out:
            return None  # not brotli (it has no magic number: no output is the sign)
        raise BrokenCoding("br", "corrupt") from None
    if not decompressor.is_finished():
        if not out:
            return None
        raise BrokenCoding("br", "cut")
    return bytes(out)


def _unzstd(body: bytes, out: bytearray, max_size: int) -> bytes | None:
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.14
        from backports import zstd

    if not body.startswith(_ZSTD_MAGIC):
        return None
    view = memoryview(body)
    pos = frames = 0
    while body.startswith(_ZSTD_MAGIC, pos):
        frames += 1
        if frames > MAX_MEMBERS:
            raise BrokenCoding("zstd", "members")
        # the frame's input in pieces, as in _raw_inflate: what the decoder keeps of
        # it is a copy
        decompressor = zstd.ZstdDecompressor()
        step = FIRST_FEED
        try:
            while not decompressor.eof:
                data: bytes | memoryview = b""
                if decompressor.needs_input:
                    data = view[pos : pos + step]
                    if not data:
                        raise BrokenCoding("zstd", "cut")
                    pos += len(data)
                    step = min(step * 2, CHUNK)
                _grow(out, decompressor.decompress(data, CHUNK), max_size)
        except zstd.ZstdError:
            raise BrokenCoding("zstd", "corrupt") from None
        pos -= len(decompressor.unused_data)
    return bytes(out)
