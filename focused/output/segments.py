"""Append-only WARC 1.1 segment files: the page store's bodies, many pages per file.

A segment is a standard ``.warc.gz`` file (ISO 28500:2017, WARC 1.1), written with
``warcio``: a ``warcinfo`` record, then per page a ``response`` record (the HTTP status
line and headers rebuilt from what the store keeps, the raw body as payload) and its
``request`` record (``WARC-Concurrent-To`` the response), each record its own gzip member,
as the WARC standard's annex on compression recommends, so that one record can be read
with one seek and one read. ``warcio index``, ``warcio check`` and other WARC tools open
the files as they are.

:class:`SegmentWriter` appends to a file of its own (a unique name per writer, so that
several processes can write one store) and starts a new one once a file would pass
``max_bytes``. :func:`read_payload` reads one response record back at ``(offset,
length)``. :func:`truncate_to` cuts a segment back to the end of its last committed
record (the page store's repair after a ``kill -9``: a torn or uncommitted record at the
end is removed). The order a caller keeps is the store's business: the record is written
(and, with ``fsync``, synced by :meth:`SegmentWriter.sync`) before the row that points at
it is committed.

Digests are SHA-256 in hex (``sha256:<hex>``; the standard allows any RFC 3548 encoding,
and ``warcio check`` verifies them). A response record carries the payload digest, the
SHA-256 the store already computes for a page; no record hashes its block again (the
block digest is optional, and costs a second pass over every body).
warcio gzips at level 9; the writer passes the store's own level instead (level 1 by
default: the same CPU per page as the one-file-per-page store it replaces).

Pure module: no Scrapy import.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import threading
import uuid
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from http.client import responses
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

__all__ = [
    "SEGMENT_DIR",
    "SEGMENT_RE",
    "SegmentWriter",
    "WarcPage",
    "Written",
    "read_payload",
    "truncate_to",
    "whole_end",
]

#: folder of the segments, relative to the store's folder
SEGMENT_DIR = "segments"
SEGMENT_SUFFIX = ".warc.gz"
#: a segment's file name: ``<UTC time>-<pid>-<random>-<number>.warc.gz``
SEGMENT_RE = re.compile(r"^\d{8}T\d{6}-\d+-[0-9a-f]{8}-\d{5}\.warc\.gz$")
SOFTWARE = "focused (Scrapy focused crawler) with warcio"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0)


@dataclass(frozen=True, slots=True)
class WarcPage:
    """What a page's WARC records hold: its ``url``, the raw ``body``, the body's SHA-256
    in hex (``digest``), the HTTP ``status``, the body's ``encoding`` (``""`` when not
    known) and the Unix time it was fetched (``fetched_at``; now when None)."""

    url: str
    body: bytes
    digest: str
    status: int = 200
    encoding: str = ""
    fetched_at: float | None = None


class Written(NamedTuple):
    """Where :meth:`SegmentWriter.append` put a page: the segment (relative to the
    store's folder), the response record's ``offset`` and ``length`` (bytes of its gzip
    member), and ``end``, the segment's size after the page's records."""

    file_path: str
    offset: int
    length: int
    end: int


def warc_date(ts: float | None) -> str:
    """WARC 1.1 date (microseconds, UTC) of a Unix time (now when None or not > 0)."""
    when = datetime.fromtimestamp(ts, tz=UTC) if ts and ts > 0 else datetime.now(tz=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}Z"


def sha256_label(digest_hex: str) -> str:
    """``sha256:<hex>``: the WARC digest of a hex SHA-256."""
    return "sha256:" + digest_hex


class _Member:
    """A file-like sink for one record: what warcio writes is gzipped into one gzip
    member when :meth:`data` is called."""

    __slots__ = ("level", "parts")

    def __init__(self, level: int) -> None:
        self.level = level
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        pass

    def data(self) -> bytes:
        raw = b"".join(self.parts)
        # a small record (the request) needs no 32 KiB window: cheaper to set up
        wbits = 16 + (9 if len(raw) <= 512 else zlib.MAX_WBITS)
        return zlib.compress(raw, self.level, wbits)


class _Sha256:
    """warcio's digester interface with SHA-256 in hex (``sha256:<hex>``, base 16 of RFC
    3548, which the WARC standard allows): no pure-Python base32 per record."""

    __slots__ = ("_h",)

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def update(self, data: bytes) -> None:
        self._h.update(data)

    def __str__(self) -> str:
        return "sha256:" + self._h.hexdigest()


class _Writer(WARCWriter):
    """warcio's writer with SHA-256 digests, and none it would hash again per page: a
    response carries the payload digest the store gives it, a request none (both are
    optional in WARC 1.1; a block digest would hash every body a second time and add
    ~45 bytes per record)."""

    @staticmethod
    def _create_digester() -> _Sha256:  # type: ignore[override]
        return _Sha256()

    def ensure_digest(self, record: Any, block: bool = True, payload: bool = True) -> None:
        if record.rec_type in ("response", "request"):
            return
        super().ensure_digest(record, block=block, payload=payload)


class SegmentWriter:
    """Appends a page's ``response`` and ``request`` records to this writer's segment in
    ``root/segments/``; starts a new segment once one would pass ``max_bytes`` (a page's
    records are never split; a page larger than ``max_bytes`` gets a segment of its own).

    ``gzip_level``: compression of every record (0-9). ``fsync``: :meth:`sync` fsyncs the
    segment (and the folder, once per new segment); the caller calls it before it
    commits rows that point at records. Thread-safe: :meth:`append` may run in another
    thread than :meth:`sync`.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int = 1024 << 20,
        gzip_level: int = 1,
        fsync: bool = False,
    ) -> None:
        self.root = Path(root)
        self.folder = self.root / SEGMENT_DIR
        self.max_bytes = max(1, int(max_bytes))
        self.gzip_level = int(gzip_level)
        self.fsync = fsync
        self._warc = _Writer(None, gzip=False, warc_version="1.1")
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._rel = ""
        self._size = 0
        self._number = 0
        self._pages = 0  # pages in the current segment
        self._stem = f"{datetime.now(tz=UTC):%Y%m%dT%H%M%S}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._unsynced = False  # bytes written since the last sync
        self._dir_unsynced = False  # a new segment's name not synced into its folder yet

    @property
    def current(self) -> str:
        """The segment being written (relative path), or ``""`` before the first page."""
        return self._rel

    def _record_bytes(self, record: Any) -> bytes:
        member = _Member(self.gzip_level)
        self._warc.out = member
        self._warc.write_record(record)
        return member.data()

    def _open_next(self) -> None:
        """Close the current segment (synced first with ``fsync``) and start the next."""
        self._close_fd()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._number += 1
        name = f"{self._stem}-{self._number:05d}{SEGMENT_SUFFIX}"
        info = self._warc.create_warcinfo_record(
            name, {"software": SOFTWARE, "format": "WARC File Format 1.1"}
        )
        head = self._record_bytes(info)
        fd = os.open(self.folder / name, _CREATE, 0o666)
        try:
            _write_all(fd, head)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.folder / name)
            raise
        self._fd, self._rel, self._size = fd, f"{SEGMENT_DIR}/{name}", len(head)
        self._pages = 0
        self._unsynced = self._dir_unsynced = True

    def records(self, page: WarcPage) -> tuple[bytes, bytes]:
        """The gzipped ``response`` and ``request`` records of ``page`` (no I/O)."""
        w = self._warc
        url, body = page.url, page.body
        date = warc_date(page.fetched_at)
        split = urlsplit(url)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        status = int(page.status or 200)
        charset = f"; charset={page.encoding}" if page.encoding else ""
        response = w.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            warc_headers_dict={"WARC-Date": date, "WARC-Payload-Digest": sha256_label(page.digest)},
            http_headers=StatusAndHeaders(
                f"{status} {responses.get(status, 'Unknown')}",
                [("Content-Type", f"text/html{charset}"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            ),
        )
        request = w.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(b""),
            length=0,
            warc_headers_dict={
                "WARC-Date": date,
                "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
            },
            http_headers=StatusAndHeaders(
                f"GET {target} HTTP/1.1",
                [("Host", split.netloc)],
                is_http_request=True,
            ),
        )
        return self._record_bytes(response), self._record_bytes(request)

    def append(self, page: WarcPage) -> Written:
        """Write ``page``'s records at the end of the current segment; where they are."""
        resp, req = self.records(page)
        size = len(resp) + len(req)
        with self._lock:
            full = self._pages and self._size + size > self.max_bytes
            if self._fd is None or full:
                self._open_next()
            assert self._fd is not None
            offset = self._size
            try:
                _write_all(self._fd, resp + req)
            except BaseException:
                # a full disk: cut off what part of the records went in (no torn tail)
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, offset)
                raise
            self._size = offset + size
            self._pages += 1
            self._unsynced = True
            return Written(self._rel, offset, len(resp), self._size)

    def sync(self) -> None:
        """With ``fsync``: make the records written so far (and a new segment's name)
        durable. A no-op without ``fsync`` or when nothing was written since."""
        if not self.fsync:
            return
        with self._lock:
            if self._fd is not None and self._unsynced:
                os.fsync(self._fd)
                self._unsynced = False
            if self._dir_unsynced:
                _fsync_dir(self.folder)
                self._dir_unsynced = False

    def truncate(self, rel: str, end: int) -> None:
        """Cut this writer's segment ``rel`` back to ``end`` bytes (rolled-back records)."""
        with self._lock:
            if rel == self._rel and self._fd is not None and end < self._size:
                os.ftruncate(self._fd, end)
                self._size = end

    def _close_fd(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.fsync and self._unsynced:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._unsynced = False
        if self.fsync and self._dir_unsynced:
            _fsync_dir(self.folder)
            self._dir_unsynced = False

    def close(self) -> None:
        with self._lock:
            self._close_fd()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(folder: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):  # pragma: no cover - Windows
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_payload(member: bytes) -> bytes:
    """The payload (the raw body) of one gzipped ``response`` record; ``ValueError``
    when the bytes are not one (a damaged record)."""
    try:
        for record in ArchiveIterator(io.BytesIO(member)):
            if record.rec_type != "response":
                break
            return record.raw_stream.read()
    except Exception as exc:  # warcio raises several kinds for damaged bytes
        raise ValueError(f"not a whole WARC response record: {exc}") from exc
    raise ValueError("not a WARC response record")


def read_payload(path: str | os.PathLike[str], offset: int, length: int) -> bytes:
    """The body stored in the ``response`` record at ``offset`` (``length`` bytes) of the
    segment ``path``: one seek, one read. ``ValueError`` when the bytes there are not a
    whole record (a cut segment), ``OSError`` when the file cannot be read."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        member = fh.read(length)
    if len(member) != length:
        raise ValueError(f"{path}: {length} bytes at {offset} but the file ends first")
    return parse_payload(member)


def whole_end(path: str | os.PathLike[str], offset: int = 0) -> int:
    """The end of the last whole gzip member (record) of segment ``path`` read from
    ``offset`` (a record's start) on: where a torn record begins, or the file's end. A
    member is whole when zlib reaches its end and its CRC and length check."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    end, pos = offset, 0
    while pos < len(data):
        z = zlib.decompressobj(zlib.MAX_WBITS + 16)
        try:
            while not z.eof and pos < len(data):
                chunk = data[pos : pos + (1 << 16)]
                z.decompress(chunk)
                pos += len(chunk) - len(z.unused_data)
        except zlib.error:
            break
        if not z.eof:
            break
        end = offset + pos
    return end


def truncate_to(path: str | os.PathLike[str], end: int, *, fsync: bool = False) -> int:
    """Cut the segment ``path`` back to ``end`` bytes (the end of its last committed
    record); the number of bytes removed (a torn record, records whose rows were never
    committed), 0 when the file is not longer."""
    size = os.path.getsize(path)
    if size <= end:
        return 0
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_BINARY", 0))
    try:
        os.ftruncate(fd, end)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return size - end
