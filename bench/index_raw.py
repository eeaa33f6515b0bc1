"""Measurement: would indexing a page's raw text (FTS5's unicode61 tokenizer on it, only
the Chinese runs pre-segmented with jieba) give the same search results as the
pre-segmented text the page store indexes (:func:`focused.output.fulltext.segment`)?

    python -m bench.index_raw CRAWL_FOLDER

Reads the stored pages of a crawl, builds both indexes in memory, prints what each
segmentation costs per page and the queries (English and Chinese, plus frequent terms
of the pages) whose top 20 differ, in order or as a set.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable

from focused.output import fulltext
from focused.output.store import read_body
from focused.ranking import relevance

QUERIES = [
    "chemistry",
    "acid base",
    "organic compound reaction",
    "the molecule",
    "化学",
    "化学 反应",
    "water",
    "physics energy",
    "carbon",
    "元素",
    "氢气 氧气",
    "metal oxide",
    "salt",
    "periodic table of elements",
]
SQL = (
    "SELECT rowid, bm25(pages_fts, 4.0, 1.0) AS r FROM pages_fts WHERE pages_fts MATCH ?"
    " ORDER BY r, rowid LIMIT 20"
)


def raw(text: str) -> str:
    """The text as it is, its Chinese runs cut into jieba words."""
    if not relevance._has_cjk(text):
        return text
    parts = relevance._CJK_SPLIT.split(text)
    return " ".join(p if i % 2 == 0 else " ".join(relevance._cut(p)) for i, p in enumerate(parts))


def main(folder: str) -> int:
    db = sqlite3.connect(f"{folder}/pages.sqlite3")
    rows = db.execute(
        "SELECT id, file_path, encoding, record_offset, record_length FROM pages ORDER BY id"
    ).fetchall()
    pages = []
    for id_, path, encoding, offset, length in rows:
        title, text = fulltext.html_text(read_body(folder, path, offset, length), encoding or "")
        pages.append((id_, title, text))

    def build(segment: Callable[[str], str]) -> tuple[sqlite3.Connection, float]:
        for _, title, text in pages:  # warm: jieba's cache
            segment(title), segment(text)
        start = time.process_time()
        done = [(i, segment(title), segment(text)) for i, title, text in pages]
        spent = 1000 * (time.process_time() - start) / len(pages)
        conn = sqlite3.connect(":memory:")
        fulltext.create(conn)
        conn.executemany("INSERT INTO pages_fts (rowid, title, text) VALUES (?, ?, ?)", done)
        return conn, spent

    segmented, ms_segmented = build(fulltext.segment)
    as_is, ms_raw = build(raw)
    print(f"{len(pages)} pages; segmentation {ms_segmented:.3f} ms/page, raw {ms_raw:.3f}")
    frequent = Counter(t for _, _, text in pages for t in relevance.tokenize(text)[:50])
    queries = QUERIES + [t for t, _ in frequent.most_common(60)[::3]]
    order = members = 0
    for q in queries:
        expression = fulltext.match_expression(q)
        a = [r[0] for r in segmented.execute(SQL, (expression,))]
        b = [r[0] for r in as_is.execute(SQL, (expression,))]
        order += a != b
        members += set(a) != set(b)
        if a != b:
            print(f"{q!r}: {a[:8]} | {b[:8]}")
    print(f"{len(queries)} queries: top-20 order differs for {order}, top-20 set for {members}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
