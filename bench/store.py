"""The page store's layouts compared: disk per page, CPU per page, read-by-URL latency.

``flock /tmp/bench.lock python -m bench.store [--pages 5000] [--read-pages 1000000]
[--out out/bench]`` (``make bench-store``) writes ``store.json``:

- ``layouts``: the same sandbox pages (the large sandbox's generator, each page with its
  own URL, title and main text, as the spider hands them over) stored with
  :meth:`PageStore.add` in the WARC-segment layout and in the earlier one gzip file per
  page, in turns, ``--repeats`` times each in the same process: the median process CPU
  time per page (user + system: the earlier layout's cost is largely the file system's),
  and, for the last run of each, the output folder's apparent bytes (sum of file sizes;
  folders counted apart) and allocated bytes (blocks on disk), per page, and their ratio;
- ``read``: a synthetic store of ``--read-pages`` pages (rows and WARC response records
  generated directly from a template, about 1 KiB of HTML each, so that building 1M
  pages takes a minute or two, not a crawl), then the wall time of reading a page by URL
  (:meth:`PageStore.body`: one index lookup, one seek, one read, gunzip, WARC parse) for
  ``--reads`` random URLs: median, 99th percentile, mean. The first read of each URL
  after building, so mostly from the page cache (the file was just written), not a
  cold disk.

Synthetic or generated data, one process, no network.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

from focused.output import fulltext
from focused.output.segments import SEGMENT_DIR, warc_date
from focused.output.store import PageStore, StoreReader, content_hash
from focused.web.sandbox.generator import generate_site

__all__ = ["disk_usage", "layout_cost", "main", "read_latency", "synthetic_store"]


def disk_usage(folder: Path) -> dict[str, int]:
    """Apparent bytes (file sizes), allocated bytes (blocks) of the files under
    ``folder``, the number of files and of folders (and the folders' own bytes)."""
    out = {"files": 0, "dirs": 0, "apparent": 0, "allocated": 0, "dir_allocated": 0}
    for dirpath, dirs, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            out["files"] += 1
            out["apparent"] += st.st_size
            out["allocated"] += st.st_blocks * 512
        for name in dirs:
            out["dirs"] += 1
            out["dir_allocated"] += os.stat(os.path.join(dirpath, name)).st_blocks * 512
    return out


def sandbox_pages(n: int, seed: int = 7) -> list[tuple[dict[str, Any], bytes]]:
    """``n`` pages of the sandbox generator as (record, body), with title and text."""
    site = generate_site(seed=seed, pages=max(n, 600))
    pages = []
    for path, body in site.pages.items():
        if not path.endswith(".html"):
            continue
        title, text = fulltext.html_text(body, "utf-8")
        record = {
            "url": f"http://sandbox.test{path}",
            "title": title,
            "text": text,
            "status": 200,
            "encoding": "utf-8",
            "fetched_at": 1.7e9 + len(pages),
            "relevant": len(pages) % 3 == 0,
        }
        pages.append((record, body))
        if len(pages) == n:
            break
    return pages


def _store_once(folder: Path, layout: str, pages: list[tuple[dict[str, Any], bytes]]) -> float:
    """CPU seconds (process time) to store ``pages`` in a fresh store of ``layout``."""
    shutil.rmtree(folder, ignore_errors=True)
    store = PageStore(folder, layout=layout).open()
    started = time.process_time()
    for record, body in pages:
        store.add(dict(record), body)
    store.close()
    return time.process_time() - started


def layout_cost(
    work: Path, pages: list[tuple[dict[str, Any], bytes]], repeats: int
) -> dict[str, Any]:
    """Both layouts on the same pages, in turns; CPU and disk per page."""
    cpu: dict[str, list[float]] = {"segments": [], "files": []}
    for layout in cpu:  # warm-up (jieba's dictionary, imports): not measured
        _store_once(work / layout, layout, pages[:50])
    for _ in range(repeats):
        for layout in cpu:
            cpu[layout].append(_store_once(work / layout, layout, pages))
    n = len(pages)
    out: dict[str, Any] = {"pages": n, "repeats": repeats}
    for layout, secs in cpu.items():
        du = disk_usage(work / layout)
        out[layout] = {
            "cpu_ms_per_page": round(1000 * statistics.median(secs) / n, 4),
            "cpu_ms_per_page_runs": [round(1000 * s / n, 4) for s in secs],
            "apparent_bytes_per_page": round(du["apparent"] / n, 1),
            "allocated_bytes_per_page": round(du["allocated"] / n, 1),
            "allocated_with_dirs_per_page": round((du["allocated"] + du["dir_allocated"]) / n, 1),
            "allocated_over_apparent": round(du["allocated"] / max(1, du["apparent"]), 4),
            "files": du["files"],
            "dirs": du["dirs"],
        }
    seg, old = out["segments"], out["files"]
    out["cpu_ratio_segments_over_files"] = round(seg["cpu_ms_per_page"] / old["cpu_ms_per_page"], 3)
    out["apparent_ratio_segments_over_files"] = round(
        seg["apparent_bytes_per_page"] / old["apparent_bytes_per_page"], 3
    )
    return out


_BODY = (
    "<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1><p>"
    + "Catalysts lower the activation energy of a reaction. 催化剂降低反应的活化能。 " * 8
    + "</p><p>{r}</p></body></html>"
)


def _response_member(url: str, body: bytes, digest: str) -> bytes:
    """One gzipped WARC 1.1 response record (a template: the synthetic store only)."""
    http = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    block = http + body
    head = (
        f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
        f"WARC-Target-URI: {url}\r\nWARC-Date: {warc_date(1.7e9)}\r\n"
        f"WARC-Payload-Digest: sha256:{digest}\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(block)}\r\n\r\n"
    ).encode()
    return zlib.compress(head + block + b"\r\n\r\n", 1, 31)


def synthetic_store(folder: Path, n: int, seed: int = 11) -> float:
    """A store of ``n`` pages in one segment, rows inserted directly; seconds taken."""
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    PageStore(folder, index=False).open().close()  # the schema
    rng = random.Random(seed)
    seg_rel = f"{SEGMENT_DIR}/20000101T000000-1-00000000-00001.warc.gz"
    (folder / SEGMENT_DIR).mkdir(exist_ok=True)
    conn = sqlite3.connect(folder / "pages.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    offset = 0
    with open(folder / seg_rel, "wb") as fh:
        batch: list[tuple[Any, ...]] = []
        for i in range(n):
            url = f"http://synthetic.test/{i % 997}/page-{i}.html"
            body = _BODY.format(i=i, r=rng.getrandbits(64)).encode()
            digest = content_hash(body)
            member = _response_member(url, body, digest)
            fh.write(member)
            batch.append((url, digest, seg_rel, offset, len(member)))
            offset += len(member)
            if len(batch) == 50_000:
                _insert_rows(conn, batch)
                batch = []
        _insert_rows(conn, batch)
    conn.execute("INSERT INTO segments (name, end) VALUES (?, ?)", (seg_rel, offset))
    conn.close()
    return time.monotonic() - started


def _insert_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO pages (url, content_hash, file_path, record_offset, record_length) "
        "VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")


def read_latency(folder: Path, n: int, reads: int, seed: int = 5) -> dict[str, Any]:
    """Wall time of reading ``reads`` random pages by URL, through the store and
    through the read-only reader."""
    rng = random.Random(seed)
    picks = [rng.randrange(n) for _ in range(reads)]
    urls = [f"http://synthetic.test/{i % 997}/page-{i}.html" for i in picks]
    out: dict[str, Any] = {"pages": n, "reads": reads}
    store = PageStore(folder, index=False).open()
    reader = StoreReader(folder)
    try:
        for name, read in (("store", store.body), ("reader", reader.body)):
            times = []
            for url in urls:
                t = time.perf_counter()
                body = read(url)
                times.append(time.perf_counter() - t)
                if not body or b"<title>Page" not in body:
                    raise RuntimeError(f"bad body for {url}")
            times.sort()
            out[name] = {
                "median_ms": round(1000 * statistics.median(times), 4),
                "p99_ms": round(1000 * times[int(0.99 * (len(times) - 1))], 4),
                "mean_ms": round(1000 * statistics.fmean(times), 4),
            }
            rng.shuffle(urls)  # the second pass reads in another order
    finally:
        store.close()
        reader.close()
    out["segment_bytes"] = sum(p.stat().st_size for p in (folder / SEGMENT_DIR).iterdir())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=5000, help="sandbox pages per layout")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--read-pages", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--out", default="out/bench")
    parser.add_argument("--work", default="out/bench/store-work")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    pages = sandbox_pages(args.pages)
    result: dict[str, Any] = {"layouts": layout_cost(work, pages, args.repeats)}
    print(json.dumps(result["layouts"], indent=2), flush=True)
    build_s = synthetic_store(work / "synthetic", args.read_pages)
    read = read_latency(work / "synthetic", args.read_pages, args.reads)
    read["build_s"] = round(build_s, 1)
    result["read"] = read
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "store.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(read, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
