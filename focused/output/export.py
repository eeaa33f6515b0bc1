"""Hand a crawl's collection on: WARC 1.1 (with warcio) or JSON lines.

- :func:`export_warc`: a ``warcinfo`` record, then per stored page a ``request`` and a
  ``response`` record (``WARC-Concurrent-To`` each other), gzipped per record when the
  file name ends in ``.gz``: one file of the whole collection (the store's own segments,
  ``segments/*.warc.gz``, are WARC already and open in WARC tools as they are). The
  response's payload is the stored body. The store keeps
  the status and the encoding, not the original headers, so the HTTP header block is
  rebuilt: the status line, ``Content-Type: text/html; charset=<encoding>`` and
  ``Content-Length``; the record's date is the page's fetch time.
- :func:`export_jsonl`: one JSON object per page: its row in ``pages.sqlite3`` (URL,
  title, relevance scores, depth, status, ...) and its main ``text`` (body text without
  script and style, as the spider extracts it, from the stored HTML).

The output file is written whole or not at all: the pages go to a temporary file next to
it, renamed over it at the end (:mod:`focused.output.atomic`). A store SQLite cannot read
(not a database, damaged, not a crawl's) or an output that cannot be written is an
:class:`ExportError` naming the file, and leaves no output behind (an older file of that
name stays as it was). An output that is one of a crawl's own files (its page store,
segments, metrics...: :func:`focused.output.owned.crawl_file`) is refused, nothing
written. The output ``-`` (:data:`STDOUT`) is the standard output, written
as the pages are read (a WARC there is not gzipped); a reader that closes it before the
end (``| head``) is an :class:`OutputClosed`.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.client import responses
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from focused.output import fulltext
from focused.output.atomic import atomic_path, is_stream, make_parent
from focused.output.owned import crawl_file
from focused.output.store import COLUMNS, DB_NAME, READ_ERRORS, columns, read_body

__all__ = [
    "FORMATS",
    "STDOUT",
    "ExportError",
    "OutputClosed",
    "export",
    "export_jsonl",
    "export_warc",
    "pages",
]

FORMATS = ("warc", "jsonl")
#: the output that names the standard output
STDOUT = "-"
SOFTWARE = "focused (Scrapy focused crawler) with warcio"


class ExportError(Exception):
    """No store in the folder, a store SQLite cannot read, an output that cannot be
    written, or an unknown format; the message names the file."""


class OutputClosed(ExportError):
    """The reader of the standard output closed it before the export ended (a broken
    pipe: ``scrapy export ... --output - | head``)."""


def _query(conn: sqlite3.Connection) -> str:
    """Every column of every page, in storing order (a store of an earlier version's
    missing columns as NULL)."""
    return f"SELECT id, {columns(conn, COLUMNS)} FROM pages ORDER BY id"


def _open(folder: str | os.PathLike[str]) -> tuple[Path, sqlite3.Connection]:
    """The store of ``folder``, opened read-only and checked readable (its ``pages``
    table has the columns exported); :class:`ExportError` when it is not."""
    db = Path(folder) / DB_NAME
    if not db.is_file():
        raise ExportError(f"no page store in {folder} ({DB_NAME} not found: did the crawl run?)")
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None
    try:
        conn.execute(f"{_query(conn)} LIMIT 0")
    except sqlite3.Error as exc:
        conn.close()
        raise _unreadable(db, exc) from None
    return db, conn


def _unreadable(db: Path, exc: sqlite3.Error) -> ExportError:
    return ExportError(f"cannot read the page store {db}: {exc}")


def check(folder: str | os.PathLike[str]) -> None:
    """:class:`ExportError` unless ``folder`` holds a page store that can be exported."""
    _open(folder)[1].close()


def _aliases(conn: sqlite3.Connection) -> dict[int, list[str]]:
    """The other URLs of the stored pages (near-duplicates recorded against them), by
    page id, in the order they were found (none in a store from before aliases)."""
    by_page: dict[int, list[str]] = {}
    try:
        for url, page in conn.execute("SELECT url, page_id FROM aliases ORDER BY rowid"):
            by_page.setdefault(int(page), []).append(str(url))
    except sqlite3.OperationalError:  # no table
        pass
    return by_page


def pages(folder: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], bytes]]:
    """``(row, body)`` of every stored page in storing order (the body read from its
    segment, or its file in the earlier layout; ``b""`` when it cannot be read); the
    row's ``aliases`` are the page's other URLs (its near-duplicates, stored once).
    :class:`ExportError` when the store cannot be read (at once, or at the damaged row)."""
    root = Path(folder)
    db, conn = _open(root)
    try:
        aliases = _aliases(conn)
        for row in _rows(conn, db):
            row["aliases"] = aliases.get(row["id"], [])
            row["relevant"] = bool(row["relevant"])
            if row["is_target"] is not None:
                row["is_target"] = bool(row["is_target"])
            try:
                body = read_body(root, row["file_path"], row["record_offset"], row["record_length"])
            except READ_ERRORS:
                body = b""
            yield row, body
    finally:
        conn.close()


def _rows(conn: sqlite3.Connection, db: Path) -> Iterator[dict[str, Any]]:
    """The store's rows of pages, in storing order; :class:`ExportError` at a row SQLite
    cannot read (a damaged page of the database)."""
    try:
        cur = conn.execute(_query(conn))
        names = [d[0] for d in cur.description]
        for values in cur:
            yield dict(zip(names, values, strict=True))
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None


def _warc_date(ts: float) -> str:
    when = datetime.fromtimestamp(ts if ts > 0 else 0, tz=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}Z"


def export_warc(folder: str | os.PathLike[str], output: str | os.PathLike[str]) -> int:
    """Write the stored pages of ``folder`` as WARC 1.1 to ``output``; pages written.
    Each other URL of a page (an alias) is a ``revisit`` record (profile "identical
    payload digest") that refers to the page's response."""
    out = Path(output)
    write = _warc_writer(folder, out.name, gzip=out.name.endswith(".gz"))
    return _write_whole(folder, out, "wb", write)


def _warc_writer(
    folder: str | os.PathLike[str], name: str, *, gzip: bool
) -> Callable[[IO[bytes]], int]:
    """What writes the stored pages of ``folder`` as WARC 1.1 into a binary file
    (``name``: the file's, for the ``warcinfo`` record; none for the standard output)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    def write(fh: IO[bytes]) -> int:
        n = 0
        writer = WARCWriter(fh, gzip=gzip, warc_version="1.1")
        info = writer.create_warcinfo_record(
            name,
            {"software": SOFTWARE, "format": "WARC File Format 1.1", "source": str(folder)},
        )
        writer.write_record(info)
        for row, body in pages(folder):
            url, date = row["url"], _warc_date(row["fetched_at"])
            split = urlsplit(url)
            target = (split.path or "/") + (f"?{split.query}" if split.query else "")
            request = writer.create_warc_record(
                url,
                "request",
                payload=io.BytesIO(b""),
                length=0,
                warc_headers_dict={"WARC-Date": date},
                http_headers=StatusAndHeaders(
                    f"GET {target} HTTP/1.1",
                    [("Host", split.netloc), ("User-Agent", "focused")],
                    is_http_request=True,
                ),
            )
            status = int(row["status"] or 200)
            charset = f"; charset={row['encoding']}" if row["encoding"] else ""
            response = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                warc_headers_dict={"WARC-Date": date},
                http_headers=StatusAndHeaders(
                    f"{status} {responses.get(status, 'Unknown')}",
                    [("Content-Type", f"text/html{charset}"), ("Content-Length", str(len(body)))],
                    protocol="HTTP/1.1",
                ),
            )
            writer.write_request_response_pair(request, response)
            digest = response.rec_headers.get_header("WARC-Payload-Digest")
            for alias in row["aliases"]:  # the same payload at another URL: no second body
                writer.write_record(
                    writer.create_revisit_record(alias, digest, url, date, http_headers=None)
                )
            n += 1
        return n

    return write


def export_jsonl(folder: str | os.PathLike[str], output: str | os.PathLike[str] | IO[str]) -> int:
    """Write one JSON object per stored page (its row and main ``text``); pages written."""
    write = _jsonl_writer(folder)
    if hasattr(output, "write"):
        return write(output)  # type: ignore[arg-type]
    return _write_whole(folder, Path(output), "w", write)  # type: ignore[arg-type]


def _jsonl_writer(folder: str | os.PathLike[str]) -> Callable[[IO[str]], int]:
    """What writes one JSON object per stored page of ``folder`` into a text file."""

    def write(fh: IO[str]) -> int:
        n = 0
        for row, body in pages(folder):
            _title, text = fulltext.html_text(body, row["encoding"]) if body else ("", "")
            row.pop("id", None)
            row["text"] = " ".join(text.split())
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
        return n

    return write


def _write_whole(
    folder: str | os.PathLike[str], out: Path, mode: str, write: Callable[[Any], int]
) -> int:
    """``write(fh)`` into a temporary file that replaces ``out`` once it is whole, after
    the store of ``folder`` was found readable: on any error nothing is left (an older
    ``out`` stays as it was). :class:`ExportError` for a store that cannot be read or an
    ``out`` that cannot be written, or one of a crawl's own files."""
    own = crawl_file(folder, out)
    if own is not None:  # before anything is read or written
        raise ExportError(
            f"cannot export to {out}: it is the crawl's own {own}; give another output file"
        )
    check(folder)  # before anything is made
    encoding = None if "b" in mode else "utf-8"
    try:
        if is_stream(out):  # a pipe, /dev/stdout, a device: written as it is
            with open(out, mode, encoding=encoding) as fh:
                return write(fh)
        real = Path(os.path.realpath(out))  # a link's target is written, not replaced
        make_parent(real)
        with atomic_path(real) as tmp, open(tmp, mode, encoding=encoding) as fh:
            return write(fh)
    except OSError as exc:
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from None


def _write_stdout(folder: str | os.PathLike[str], mode: str, write: Callable[[Any], int]) -> int:
    """``write(fh)`` into the standard output as the pages are read, after the store of
    ``folder`` was found readable. :class:`OutputClosed` when its reader closed it (a
    broken pipe), :class:`ExportError` when it cannot be written otherwise."""
    check(folder)  # before anything is written
    try:
        sys.stdout.flush()
        with _stdout(mode) as fh:
            n = write(fh)
            fh.flush()
            return n
    except BrokenPipeError:
        raise OutputClosed(
            "cannot write to stdout: its reader closed the pipe before the export ended"
            " (broken pipe)"
        ) from None
    except OSError as exc:
        raise ExportError(f"cannot write to stdout: {exc.strerror or exc}") from None


def _stdout(mode: str) -> contextlib.AbstractContextManager[IO[Any]]:
    """The standard output as a file of ``mode`` (``"wb"`` or ``"w"``, UTF-8): its file
    descriptor opened again (left open at the end), or ``sys.stdout`` itself when it has
    none (replaced in-process)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        stream = sys.stdout.buffer if "b" in mode else sys.stdout
        return contextlib.nullcontext(stream)
    encoding = None if "b" in mode else "utf-8"
    return open(fd, mode, encoding=encoding, closefd=False)


def export(folder: str | os.PathLike[str], fmt: str, output: str | os.PathLike[str]) -> int:
    """Export the stored pages of ``folder`` as ``fmt`` to the file ``output`` (``-``:
    the standard output); pages written."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    if isinstance(output, str) and output == STDOUT:
        if fmt == "warc":
            return _write_stdout(folder, "wb", _warc_writer(folder, "", gzip=False))
        return _write_stdout(folder, "w", _jsonl_writer(folder))
    if fmt == "warc":
        return export_warc(folder, output)
    return export_jsonl(folder, output)
