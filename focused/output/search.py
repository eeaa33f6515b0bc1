"""Search the pages a crawl stored: BM25-ranked full-text queries, Chinese and English.

The index is :mod:`focused.output.fulltext`'s ``pages_fts`` table in the crawl's
``pages.sqlite3`` (kept up to date by the page store). A query is segmented like the
pages (jieba for Chinese, words for the rest), its terms are OR-ed (or AND-ed with
``all_terms``), and hits are ranked by ``bm25(pages_fts, 4.0, 1.0)``: a term in the title
weighs four times a term in the text, as the title weighs four times the body in the
page-relevance rule A = 4B + C. Each hit has a snippet of the text around its terms
(segmented text: terms are separated by spaces).

``python -m focused.output.search DIR QUERY`` or ``scrapy search QUERY --dir DIR``.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from focused.output import fulltext
from focused.output.store import DB_NAME, LOCATION_COLUMNS, READ_ERRORS, columns, read_body
from focused.ranking.relevance import cutting_with

__all__ = ["Hit", "SearchError", "reindex", "search"]

#: BM25 weights of the columns (title, text)
TITLE_WEIGHT, TEXT_WEIGHT = 4.0, 1.0
SNIPPET_TOKENS = 16


class SearchError(Exception):
    """No store, no index, a store SQLite cannot read, or a query SQLite refuses; the
    message says which (and names the file)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One page found: ``score`` is minus its BM25 (higher is better)."""

    url: str
    title: str
    score: float
    snippet: str
    page_relevance: float
    relevant: bool
    depth: int
    file_path: str
    #: the page's other URLs: near-duplicates of it recorded against it, stored once
    aliases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _db(folder: str | os.PathLike[str]) -> Path:
    """The page store of ``folder``; :class:`SearchError` when there is none."""
    db = Path(folder) / DB_NAME
    if not db.is_file():
        raise SearchError(f"no page store in {folder} ({DB_NAME} not found: did the crawl run?)")
    return db


def _connect(folder: str | os.PathLike[str], write: bool = False) -> sqlite3.Connection:
    db = _db(folder)
    try:
        if write:
            return sqlite3.connect(db, isolation_level=None, timeout=30.0)
        return sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise _unreadable(db, exc) from None


def _unreadable(db: Path, exc: sqlite3.Error) -> SearchError:
    """The error of a page store SQLite cannot read (not a database, damaged, not a
    crawl's: no ``pages`` table)."""
    return SearchError(f"cannot read the page store {db}: {exc}")


def search(
    folder: str | os.PathLike[str], query: str, limit: int = 20, all_terms: bool = False
) -> list[Hit]:
    """The best ``limit`` pages of the crawl in ``folder`` for ``query``, best first."""
    # (whether a query has a term does not depend on the words it is cut with)
    if not fulltext.match_expression(query, all_terms=all_terms):
        return []
    conn = _connect(folder)
    try:
        try:
            conn.execute("SELECT 1 FROM pages LIMIT 0")  # a crawl's store, readable
            indexed = fulltext.exists(conn)
            words = fulltext.recorded_words(conn)
        except sqlite3.Error as exc:
            raise _unreadable(_db(folder), exc) from None
        if not indexed:
            raise SearchError(
                f"{folder} has no full-text index (crawled with FOCUSED_INDEX=False?): "
                "build it with `scrapy search --reindex`"
            )
        with cutting_with(words):  # the query cut as the pages were
            expression = fulltext.match_expression(query, all_terms=all_terms)
        rows = conn.execute(
            f"SELECT p.url, p.title, bm25({fulltext.FTS_TABLE}, ?, ?) AS rank, "
            f"snippet({fulltext.FTS_TABLE}, 1, '[', ']', ' … ', ?), "
            "p.page_relevance, p.relevant, p.depth, p.file_path, p.id "
            f"FROM {fulltext.FTS_TABLE} JOIN pages p ON p.id = {fulltext.FTS_TABLE}.rowid "
            f"WHERE {fulltext.FTS_TABLE} MATCH ? ORDER BY rank, p.id LIMIT ?",
            (TITLE_WEIGHT, TEXT_WEIGHT, SNIPPET_TOKENS, expression, max(0, int(limit))),
        ).fetchall()
        aliases = _aliases(conn, [row[-1] for row in rows])
    except sqlite3.Error as exc:  # a damaged index or table, a query FTS5 refuses
        raise SearchError(f"search in {_db(folder)} failed: {exc}") from None
    finally:
        conn.close()
    return [
        Hit(
            url,
            title,
            -float(rank),
            snip,
            float(rel),
            bool(relevant),
            int(depth),
            path,
            aliases.get(page, ()),
        )
        for url, title, rank, snip, rel, relevant, depth, path, page in rows
    ]


def _aliases(conn: sqlite3.Connection, pages: list[int]) -> dict[int, tuple[str, ...]]:
    """The other URLs of ``pages`` (ids), by id (none in a store from before aliases)."""
    if not pages:
        return {}
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'aliases'").fetchone():
        return {}
    marks = ",".join("?" * len(pages))
    found: dict[int, list[str]] = {}
    for url, page in conn.execute(
        f"SELECT url, page_id FROM aliases WHERE page_id IN ({marks}) ORDER BY rowid", pages
    ):
        found.setdefault(int(page), []).append(str(url))
    return {page: tuple(urls) for page, urls in found.items()}


def reindex(folder: str | os.PathLike[str], max_chars: int = fulltext.DEFAULT_MAX_CHARS) -> int:
    """Rebuild the index of ``folder`` from the stored HTML (title and text
    extracted as the spider does); the number of pages indexed. One transaction: a
    reader sees the old index until it commits. :class:`SearchError` when SQLite cannot
    read or write the store (nothing is changed then)."""
    conn = _connect(folder, write=True)
    try:
        with cutting_with(fulltext.recorded_words(conn)):  # the words of the crawl's topic
            return _reindex(conn, folder, max_chars)
    except sqlite3.Error as exc:  # not a database, damaged, locked, a full disk
        raise SearchError(f"cannot reindex the page store {_db(folder)}: {exc}") from None
    finally:
        conn.close()


def _reindex(conn: sqlite3.Connection, folder: str | os.PathLike[str], max_chars: int) -> int:
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"DROP TABLE IF EXISTS {fulltext.FTS_TABLE}")
        fulltext.create(conn)
        wanted = ("id", "title", "file_path", "encoding", *LOCATION_COLUMNS[2:])
        rows = conn.execute(f"SELECT {columns(conn, wanted)} FROM pages").fetchall()
        for rowid, title, rel, encoding, offset, length in rows:
            text = ""
            try:
                body = read_body(folder, rel, offset, length)
                page_title, text = fulltext.html_text(body, encoding)
                title = title or page_title
            except READ_ERRORS:  # a missing or corrupt record or file
                pass
            fulltext.index_page(conn, rowid, title, text, max_chars)
        table = fulltext.FTS_TABLE
        conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(rows)


def format_hits(hits: list[Hit]) -> str:
    """Hits as text, one block per hit: rank, score, title, URL, snippet."""
    if not hits:
        return "no pages found"
    lines = []
    for rank, hit in enumerate(hits, 1):
        mark = "relevant" if hit.relevant else "not relevant"
        lines.append(
            f"{rank:3d}. {hit.title or '(no title)'}  "
            f"[score {hit.score:.3g}; A = {hit.page_relevance:.2f}, {mark}]"
        )
        lines.append(f"     {hit.url}")
        lines += [f"     also at {url}" for url in hit.aliases]
        if hit.snippet:
            lines.append(f"     {hit.snippet}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python -m focused.output.search DIR QUERY", file=sys.stderr)
        return 2
    try:
        print(format_hits(search(args[0], " ".join(args[1:]))))
    except SearchError as exc:
        print(f"focused: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
