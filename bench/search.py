"""Cost of the full-text index: CPU per stored page, and query latency at 10k and 100k pages.

``python -m bench.search [--out out/bench]`` (``make bench-search``) writes
``search.json``:

- ``index_cost``: :meth:`PageStore.add` of the same synthetic bilingual pages (about 2,500
  characters of text each, a third of it Chinese, words from the sandbox's vocabularies)
  with the index on and off; the difference in process CPU time per page is what the index
  adds to the store's commit (jieba segmentation + the FTS5 insert), reported with the
  segmentation alone;
- ``queries``: synthetic stores of 10,000 and 100,000 pages (rows and index rows inserted
  directly, the text generated as already-segmented words, so that building them takes
  seconds, not the hour segmenting 100k pages would), then the median and 95th
  percentile wall time of :func:`focused.output.search.search` (20 hits with snippets)
  for a few Chinese and English queries, common and rare terms.

Synthetic data, one process, no network; runs in about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from focused.output import fulltext
from focused.output.search import search
from focused.output.store import PageStore, content_hash, file_path_for
from focused.web.sandbox.vocab import FILLER_EN, FILLER_ZH, SUBJECTS

QUERIES = ("催化剂", "滴定", "catalyst", "titration", "催化剂 catalyst", "化学 chemistry", "引力")


class Words:
    """Weighted words of the sandbox subjects, per language."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.en = [w for s in SUBJECTS for w in (*s.title_en, *s.body_en)] + list(FILLER_EN) * 3
        self.zh = [w for s in SUBJECTS for w in (*s.title_zh, *s.body_zh)] + list(FILLER_ZH) * 3

    def page(self, en_words: int = 320, zh_words: int = 300) -> tuple[str, str, list[str]]:
        """``(title, text, terms)``: text as on a page (Chinese without spaces)."""
        en = self.rng.choices(self.en, k=en_words)
        zh = self.rng.choices(self.zh, k=zh_words)
        title = " ".join(self.rng.choices(self.zh, k=2) + self.rng.choices(self.en, k=2))
        text = (
            "".join(zh[: zh_words // 2]) + "。 " + " ".join(en) + " " + "".join(zh[zh_words // 2 :])
        )
        return title, text, [*zh, *en]


def index_cost(pages: int, seed: int) -> dict[str, Any]:
    words = Words(seed)
    docs = [words.page() for _ in range(pages)]
    result: dict[str, Any] = {"pages": pages, "text_chars_mean": 0}
    result["text_chars_mean"] = round(statistics.mean(len(t) for _, t, _ in docs))
    cpu: dict[bool, float] = {}
    for index in (False, True, False, True):  # twice each, the best of two
        out = Path(tempfile.mkdtemp(prefix="bench-search-"))
        try:
            with PageStore(out, index=index) as store:
                start = time.process_time()
                for i, (title, text, _) in enumerate(docs):
                    body = f"<html><title>{title}</title><body><p>{text}</p></body></html>"
                    store.add({"url": f"http://b/{i}", "title": title, "text": text}, body.encode())
                spent = time.process_time() - start
            cpu[index] = min(cpu.get(index, spent), spent)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    start = time.process_time()
    for title, text, _ in docs:
        fulltext.segment(title)
        fulltext.segment(text)
    segment = time.process_time() - start
    result.update(
        store_us_per_page_without_index=round(cpu[False] / pages * 1e6),
        store_us_per_page_with_index=round(cpu[True] / pages * 1e6),
        index_us_per_page=round((cpu[True] - cpu[False]) / pages * 1e6),
        segment_us_per_page=round(segment / pages * 1e6),
    )
    return result


def synthetic_store(out: Path, pages: int, seed: int) -> float:
    """Rows and index rows of ``pages`` synthetic pages, inserted directly; seconds."""
    words = Words(seed)
    start = time.perf_counter()
    with PageStore(out) as store:  # creates the tables
        conn = store._db
        conn.execute("BEGIN")
        for i in range(pages):
            title, _, terms = words.page(en_words=160, zh_words=150)
            digest = content_hash(b"%d" % i)
            cur = conn.execute(
                "INSERT INTO pages (url, title, page_relevance, content_hash, file_path) "
                "VALUES (?, ?, ?, ?, ?)",
                (f"http://b/{i}", title, words.rng.random() * 5, digest, file_path_for(digest)),
            )
            conn.execute(
                f"INSERT INTO {fulltext.FTS_TABLE} (rowid, title, text) VALUES (?, ?, ?)",
                (cur.lastrowid, fulltext.segment(title), " ".join(terms).lower()),
            )
        conn.execute("COMMIT")
    return time.perf_counter() - start


def query_latency(pages: int, seed: int, repeat: int) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="bench-search-"))
    try:
        build = synthetic_store(out, pages, seed)
        db_mb = (out / "pages.sqlite3").stat().st_size / 1e6
        wal = out / "pages.sqlite3-wal"
        db_mb += wal.stat().st_size / 1e6 if wal.exists() else 0
        per_query: dict[str, Any] = {}
        for query in QUERIES:
            search(out, query)  # warm the page cache
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                hits = search(out, query, limit=20)
                times.append(time.perf_counter() - start)
            times.sort()
            per_query[query] = {
                "hits": len(hits),
                "median_ms": round(statistics.median(times) * 1e3, 2),
                "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1e3, 2),
            }
        return {
            "pages": pages,
            "build_s": round(build, 1),
            "db_mb": round(db_mb, 1),
            "queries": per_query,
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench")
    parser.add_argument("--index-pages", type=int, default=1000)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result: dict[str, Any] = {"index_cost": index_cost(args.index_pages, args.seed)}
    print(json.dumps(result["index_cost"]))
    result["query_latency"] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        result["query_latency"].append(query_latency(size, args.seed, args.repeat))
        print(json.dumps(result["query_latency"][-1], ensure_ascii=False))
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    result["sqlite_version"] = sqlite3.sqlite_version
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {out / 'search.json'} in {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
