"""The full-text index of the page store: an FTS5 table in ``pages.sqlite3``.

``pages_fts(title, text)`` holds one row per page, its ``rowid`` the page's ``pages.id``.
The page store (:mod:`focused.output.store`) inserts it in the same transaction as the
page row, so both commit together and survive a ``kill -9`` together; at open the store
indexes any page row that has no index row (:func:`missing`, :func:`index_missing`).

Chinese has no spaces between words, and SQLite's own tokenizers (``unicode61``,
``trigram``) do not segment it into words. There is no maintained jieba tokenizer for
FTS5 that Python's standard ``sqlite3`` module can load (a tokenizer is a C extension,
registered through ``fts5_api``, which ``sqlite3`` does not expose). So the text is
*pre-segmented*: :func:`segment` cuts it into the same terms as the crawler's relevance
(:func:`focused.ranking.relevance.tokenize`: jieba words for Chinese runs, lower-cased
words for the rest, stop words dropped) and joins them with spaces; the standard
``unicode61`` tokenizer then splits on those spaces, one token per term (it treats Chinese
characters as word characters). Queries are segmented the same way, so a query term
matches exactly the pages whose text holds that term. Everything stays in the standard
library; the price is that the index stores the segmented text (snippets show it, terms
separated by spaces) rather than the page's own.

The topic's Chinese keywords are words of jieba's dictionary while its crawl cuts the
text, and keywords inside a longer word are terms of it too (化学元素周期表 is indexed as
``化学元素 化学 元素 周期表``: :func:`focused.ranking.relevance.tokenize`). The store
records those words in :data:`WORDS_TABLE` (:func:`record_words`), and the search and the
reindex cut with them (:func:`recorded_words`,
:func:`focused.ranking.relevance.cutting_with`), whatever the process that runs them.

Pure module: no Scrapy import (parsel, as Scrapy's selectors use it, for :func:`html_text`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence

from focused.ranking.relevance import joined_terms, tokenize

__all__ = [
    "FTS_TABLE",
    "WORDS_TABLE",
    "TITLE_XPATH",
    "TEXT_XPATH",
    "create",
    "html_text",
    "index_page",
    "match_expression",
    "missing",
    "record_words",
    "recorded_words",
    "segment",
]

FTS_TABLE = "pages_fts"
#: the words added to jieba's dictionary when the index was cut (the crawl's topic's
#: Chinese keywords), in their order
WORDS_TABLE = "index_words"
_WORDS_DDL = (
    f"CREATE TABLE IF NOT EXISTS {WORDS_TABLE} (pos INTEGER PRIMARY KEY, word TEXT NOT NULL)"
)
#: the spider's text queries (``focused/spiders/focused.py``): title, and body text
#: without script and style
TITLE_XPATH = "//title//text()"
TEXT_XPATH = "//body//text()[not(ancestor::script) and not(ancestor::style)]"
#: cap of the indexed text of a page when none is given (``FOCUSED_INDEX_MAX_CHARS``)
DEFAULT_MAX_CHARS = 100_000


def segment(text: str) -> str:
    """``text``'s terms (:func:`~focused.ranking.relevance.tokenize`) joined by spaces."""
    return joined_terms(text) if text else ""


def create(conn: sqlite3.Connection) -> None:
    """Create the index table if it is not there."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} "
        "USING fts5(title, text, tokenize='unicode61')"
    )


def record_words(conn: sqlite3.Connection, words: Sequence[str]) -> None:
    """Record ``words`` as the words the store's text is cut with (those of the crawl
    that opens it), in place of the ones recorded; nothing written when they are."""
    words = list(dict.fromkeys(words))
    if _has_table(conn, WORDS_TABLE) and recorded_words(conn) == words:
        return
    own = not conn.in_transaction  # else in the caller's transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_WORDS_DDL)
        conn.execute(f"DELETE FROM {WORDS_TABLE}")
        conn.executemany(f"INSERT INTO {WORDS_TABLE} (word) VALUES (?)", [(w,) for w in words])
        if own:
            conn.execute("COMMIT")
    except BaseException:
        if own and conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def recorded_words(conn: sqlite3.Connection) -> list[str]:
    """The words the store's text was cut with (:func:`record_words`); none in a store
    from before they were recorded."""
    if not _has_table(conn, WORDS_TABLE):
        return []
    return [str(w) for (w,) in conn.execute(f"SELECT word FROM {WORDS_TABLE} ORDER BY pos")]


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def exists(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (FTS_TABLE,)
        ).fetchone()
        is not None
    )


def index_page(
    conn: sqlite3.Connection,
    rowid: int,
    title: str,
    text: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    *,
    text_terms: str | None = None,
    replace: bool = False,
) -> None:
    """Index one page (in the caller's transaction): its title and first ``max_chars``
    characters of text, segmented. ``text_terms``: ``segment(text)``, when the caller
    has it (the spider cut the text for its relevance), used when ``text`` is within
    ``max_chars``. ``replace``: an index row of ``rowid`` that is there already is
    replaced (another process that opened the store indexed the page from its HTML
    while this one held its index row back)."""
    text = text or ""
    cap = max(0, max_chars)
    if text_terms is None or len(text) > cap:
        text_terms = segment(text[:cap])
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    conn.execute(
        f"{verb} INTO {FTS_TABLE} (rowid, title, text) VALUES (?, ?, ?)",
        (rowid, segment(title or ""), text_terms),
    )


def missing(conn: sqlite3.Connection) -> list[tuple[int, str, str, str, int | None, int | None]]:
    """``(id, title, file_path, encoding, record_offset, record_length)`` of the page
    rows without an index row."""
    return conn.execute(
        "SELECT id, title, file_path, encoding, record_offset, record_length FROM pages "
        f"WHERE id NOT IN (SELECT rowid FROM {FTS_TABLE}) ORDER BY id"
    ).fetchall()


def html_text(body: bytes, encoding: str = "") -> tuple[str, str]:
    """``(title, text)`` of an HTML page the way the spider extracts them: the title's
    text nodes, and the body's text nodes outside script and style, joined by spaces."""
    from parsel import Selector

    try:
        decoded = body.decode(encoding or "utf-8", errors="replace")
    except LookupError:  # an encoding Python does not know
        decoded = body.decode("utf-8", errors="replace")
    if not decoded.strip():
        return "", ""
    sel = Selector(text=decoded, type="html")
    title = " ".join(sel.xpath(TITLE_XPATH).getall()).strip()
    return title, " ".join(sel.xpath(TEXT_XPATH).getall())


#: One piece of a query: an optional ``-`` (leave out pages with it), an optional
#: column (``title:``), then a "quoted phrase" or a word.
_QUERY_PIECE = re.compile(r'(-?)(?:(title|text):)?(?:"([^"]*)"?|(\S+))', re.IGNORECASE)


def match_expression(query: str, all_terms: bool = False) -> str:
    """The FTS5 ``MATCH`` expression of a user's query. Its words are segmented like the
    pages, each quoted, and joined by ``OR`` (any term; BM25 ranks pages with more of
    them first) or, with ``all_terms``, by ``AND``. A ``"quoted phrase"`` matches its
    terms next to each other, in order; ``title:word`` or ``title:"a phrase"`` only in
    the title (``text:`` only in the text); a leading ``-`` leaves out the pages that
    have the word or phrase. FTS5's own operators are not read: every word is a term.
    Empty when the query has no term to look for (nothing but left-out ones)."""
    wanted: list[str] = []
    unwanted: list[str] = []
    for minus, column, phrase, word in _QUERY_PIECE.findall(query):
        terms = tokenize(phrase if phrase else word)
        if not terms:
            continue
        prefix = f"{column.lower()} : " if column else ""
        if phrase or (minus and len(terms) > 1):  # a phrase: its terms in a row
            parts = [prefix + _quoted(" ".join(terms))]
        else:
            parts = [prefix + _quoted(t) for t in terms]
        (unwanted if minus else wanted).extend(parts)
    wanted, unwanted = _unique(wanted), _unique(unwanted)
    if not wanted:
        return ""
    joined = f" {'AND' if all_terms else 'OR'} ".join(wanted)
    if not unwanted:
        return joined
    return f"({joined}) NOT ({' OR '.join(unwanted)})"


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _unique(terms: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(terms))
