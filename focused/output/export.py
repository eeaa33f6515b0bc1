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

Pure module: no Scrapy import.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from http.client import responses
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from focused.output import fulltext
from focused.output.store import COLUMNS, DB_NAME, READ_ERRORS, read_body

__all__ = ["FORMATS", "export", "export_jsonl", "export_warc", "pages"]

FORMATS = ("warc", "jsonl")
SOFTWARE = "focused (Scrapy focused crawler) with warcio"


class ExportError(Exception):
    """No store in the folder, or an unknown format."""


def pages(folder: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], bytes]]:
    """``(row, body)`` of every stored page in storing order (the body read from its
    segment, or its file in the earlier layout; ``b""`` when it cannot be read)."""
    root = Path(folder)
    db = root / DB_NAME
    if not db.is_file():
        raise ExportError(f"no page store in {folder} ({DB_NAME} not found: did the crawl run?)")
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        cur = conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM pages ORDER BY id")
        names = [d[0] for d in cur.description]
        for values in cur:
            row = dict(zip(names, values, strict=True))
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


def _warc_date(ts: float) -> str:
    when = datetime.fromtimestamp(ts if ts > 0 else 0, tz=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}Z"


def export_warc(folder: str | os.PathLike[str], output: str | os.PathLike[str]) -> int:
    """Write the stored pages of ``folder`` as WARC 1.1 to ``output``; pages written."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out, "wb") as fh:
        writer = WARCWriter(fh, gzip=out.name.endswith(".gz"), warc_version="1.1")
        info = writer.create_warcinfo_record(
            out.name,
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
            n += 1
    return n


def export_jsonl(folder: str | os.PathLike[str], output: str | os.PathLike[str] | IO[str]) -> int:
    """Write one JSON object per stored page (its row and main ``text``); pages written."""

    def write(fh: IO[str]) -> int:
        n = 0
        for row, body in pages(folder):
            _title, text = fulltext.html_text(body, row["encoding"]) if body else ("", "")
            row.pop("id", None)
            row["text"] = " ".join(text.split())
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
        return n

    if hasattr(output, "write"):
        return write(output)  # type: ignore[arg-type]
    out = Path(output)  # type: ignore[arg-type]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        return write(fh)


def export(folder: str | os.PathLike[str], fmt: str, output: str | os.PathLike[str]) -> int:
    if fmt == "warc":
        return export_warc(folder, output)
    if fmt == "jsonl":
        return export_jsonl(folder, output)
    raise ExportError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
