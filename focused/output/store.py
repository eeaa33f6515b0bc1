"""Crash-safe store of fetched pages: one SQLite row per page, the raw HTML in WARC files.

Layout in the output folder::

    pages.sqlite3            table ``pages``, one row per URL (url UNIQUE), WAL mode;
                             table ``segments``: the committed end of every segment
    pages.lock               advisory lock: who may repair
    writer.lock              advisory lock: which crawls write pages (one, or shared)
    segments/<time>-<pid>-<random>-<n>.warc.gz
                             append-only WARC 1.1 segments (:mod:`focused.output.segments`)

Every page is a ``response`` and a ``request`` record at the end of the writer's current
segment (a new segment once one reaches ``segment_bytes``); its row holds the segment
(``file_path``), the response record's ``record_offset`` and ``record_length``, so a page
is read back by URL with one index lookup and one seek. Order of a write: the records
are appended, then the row is inserted; before each commit the segments are fsynced
(with ``fsync``) and the new end of each segment written goes into ``segments`` in the
same transaction as the rows. A ``kill -9`` can therefore leave records past a segment's
committed end (a torn record, or whole ones whose rows were not committed), but never a
committed row without its record. :meth:`PageStore.repair`, which :meth:`PageStore.open`
runs, cuts every segment back to its committed end and removes segments no commit names;
a row that points past the end of its segment (its bytes lost with the power, when
``fsync`` was off) is removed and its URL kept in :attr:`PageStore.lost` and in the table
``lost_pages`` (in the same transaction), for the crawl to fetch that page again.

The earlier layout, one gzip file per distinct body (``html/ab/cd/<sha256>.html.gz``,
written under a temporary name and ``os.replace``-d), stays readable: such a row has no
``record_offset``. :func:`migrate` (``python -m focused.output.store migrate DIR``) moves
a store into segments; ``layout="files"`` still writes it (for comparisons).

Full-text index (:mod:`focused.output.fulltext`): with ``index`` on (the default), the
table ``pages_fts`` gets the page's title and main text (the record's ``text``, at most
``index_max_chars`` characters). With ``index_every`` 1 that is in the same transaction
as its row, so the two commit together; above 1, the index rows of ``index_every``
pages go in together, with the transaction of the last of them, or with the first
commit ``index_seconds`` after the oldest waiting one, or at :meth:`PageStore.close`
(one index flush for many pages costs much less than one per page). The index is made
from the rows, never the other way: a row is durable at its own commit whatever its
index row does, and :meth:`PageStore.open` indexes every row that has no index row yet
(a store written with the index off, index rows still waiting when the crawl was
killed, or a lost row), from the stored HTML.

Aliases (table ``aliases``): a near-duplicate of a stored page (the same main content
at another URL: a mirror, a print or mobile copy) is no second body but a row ``url ->
page_id`` with the facts of its own fetch (:meth:`PageStore.add_alias`). It is written
in the open transaction like a page row, after the row of its page (so it never points
at a row a crash could take back), and commits with it; :meth:`PageStore.lookup`,
:meth:`PageStore.has`, :meth:`PageStore.body` and :class:`StoreReader` answer for it
with its page. When the alias is the page's canonical URL it becomes the page's main URL
(``pages.url``) and the earlier main URL the alias. Repair removes the aliases of a row
it removes (their URLs go to :attr:`PageStore.lost` too).

Several processes may share a store (a distributed crawl): each writes segments of its
own and holds a shared lock while open; :meth:`PageStore.repair` runs only when the
exclusive lock can be taken, i.e. when no other process has the store open and could own
an uncommitted record.

``python -m focused.output.store get URL --dir DIR`` prints a stored page;
``python -m focused.output.store check --dir DIR`` reports what is wrong without
changing a byte of the folder (:func:`check_store`: read-only, no repair, no lock, also
while a crawl writes it), ``check --repair`` repairs first and says what it changed
(:func:`repair_store`).

Pure module: no Scrapy import.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import logging
import os
import re
import sqlite3
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from focused.output import fulltext, segments
from focused.output.record import in_use
from focused.output.segments import SEGMENT_DIR, SEGMENT_RE, SegmentWriter, WarcPage
from focused.ranking.relevance import cutting_with

try:  # POSIX advisory locks; without them repair always runs at open
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "COLUMNS",
    "CheckReport",
    "LOCATION_COLUMNS",
    "Location",
    "PageStore",
    "StoreBusy",
    "check_store",
    "content_hash",
    "file_path_for",
    "is_busy",
    "migrate",
    "read_body",
    "repair_store",
    "stored_aliases",
    "stored_pages",
]

DB_NAME = "pages.sqlite3"
LOCK_NAME = "pages.lock"
#: held by the crawls that write the store: exclusively by one crawl, shared by the
#: workers of a distributed crawl (:class:`PageStore`'s ``sole``)
WRITER_LOCK_NAME = "writer.lock"
HTML_DIR = "html"
_HASH_FILE = re.compile(r"^([0-9a-f]{64})\.html\.gz$")
_TMP_SUFFIX = ".tmp"  # a file being written (``.<sha256>.<uuid>.tmp``), or a leftover
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)

#: column name -> SQLite type, in table order (after ``id``)
COLUMNS: dict[str, str] = {
    "url": "TEXT NOT NULL UNIQUE",
    "title": "TEXT NOT NULL DEFAULT ''",
    "fetched_at": "REAL NOT NULL DEFAULT 0",
    "title_relevance": "REAL NOT NULL DEFAULT 0",
    "body_relevance": "REAL NOT NULL DEFAULT 0",
    "page_relevance": "REAL NOT NULL DEFAULT 0",
    "relevant": "INTEGER NOT NULL DEFAULT 0",
    "is_target": "INTEGER",
    "m": "REAL NOT NULL DEFAULT 0",
    "anchor_relevance": "REAL NOT NULL DEFAULT 0",
    "link_value": "REAL NOT NULL DEFAULT 0",
    "depth": "INTEGER NOT NULL DEFAULT 0",
    "parent_url": "TEXT NOT NULL DEFAULT ''",
    "status": "INTEGER NOT NULL DEFAULT 0",
    "encoding": "TEXT NOT NULL DEFAULT ''",
    "link_count": "INTEGER NOT NULL DEFAULT 0",
    "strategy": "TEXT NOT NULL DEFAULT ''",
    "content_hash": "TEXT NOT NULL",
    "file_path": "TEXT NOT NULL",
    "record_offset": "INTEGER",  # NULL: a one-file-per-page body (the earlier layout)
    "record_length": "INTEGER",
}
#: column name -> SQLite type of the table ``aliases`` (after ``url`` and ``page_id``)
ALIAS_COLUMNS: dict[str, str] = {
    "found_at": "REAL NOT NULL DEFAULT 0",
    "parent_url": "TEXT NOT NULL DEFAULT ''",
    "depth": "INTEGER NOT NULL DEFAULT 0",
    "status": "INTEGER NOT NULL DEFAULT 0",
    "is_target": "INTEGER",
    # the largest page id when the alias was added: where it falls in the storing order
    "stored_after": "INTEGER NOT NULL DEFAULT 0",
}
_ALIASES_DDL = (
    "CREATE TABLE IF NOT EXISTS aliases (url TEXT PRIMARY KEY, page_id INTEGER NOT NULL, "
    + ", ".join(f"{name} {decl}" for name, decl in ALIAS_COLUMNS.items())
    + ")"
)
#: where a page's body is: set by the store, not by the caller
LOCATION_COLUMNS = ("content_hash", "file_path", "record_offset", "record_length")
#: the columns a store of an earlier version lacks (one file per page, before segments);
#: opening it for writing adds them, the read-only tools read them as NULL (:func:`columns`)
LATER_COLUMNS = ("record_offset", "record_length")
_BOOL_COLUMNS = ("relevant", "is_target")
_DATA_COLUMNS = tuple(c for c in COLUMNS if c not in LOCATION_COLUMNS)
LAYOUTS = ("segments", "files")
#: default size at which a new segment is started (``FOCUSED_STORE_SEGMENT_MB``)
SEGMENT_BYTES = 1024 << 20

logger = logging.getLogger(__name__)


class Location(NamedTuple):
    """Where :meth:`PageStore.write_body` put a body: its ``content_hash``, the
    ``file_path`` (a segment, or the earlier layout's file), the response record's
    ``record_offset`` and ``record_length`` (None for a file) and the segment's ``end``
    after the page's records."""

    content_hash: str
    file_path: str
    record_offset: int | None = None
    record_length: int | None = None
    end: int | None = None


class StoreInUse(OSError):
    """Another crawl writes the store, and this one may not write it beside that crawl
    (:class:`PageStore`'s ``sole``): nothing was opened or written."""


class StoreGone(OSError):
    """The store's database file was removed (its folder deleted) or replaced while the
    store had it open: SQLite went on writing into the unlinked file, so every page
    "stored" since was lost at the close, silently."""


class StoreBusy(Exception):
    """Another connection holds the database's write lock (``BEGIN IMMEDIATE`` elsewhere):
    nothing was written; try the same call again later."""


def is_busy(exc: BaseException) -> bool:
    """``exc`` is SQLite's "database is locked" (``SQLITE_BUSY``/``SQLITE_LOCKED``)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc)


def content_hash(body: bytes) -> str:
    """Hex SHA-256 of the raw bytes: the page's file name."""
    return hashlib.sha256(body).hexdigest()


def read_body(
    root: str | os.PathLike[str], file_path: str, offset: int | None, length: int | None
) -> bytes:
    """The raw bytes of a stored page from its row's location: the response record at
    ``offset`` of the segment ``file_path``, or (``offset`` None) the earlier layout's
    gzip file. ``OSError``/``ValueError``/``EOFError`` when it cannot be read."""
    path = os.path.join(root, file_path)
    if offset is None:
        with open(path, "rb") as fh:
            return gzip.decompress(fh.read())
    return segments.read_payload(path, offset, int(length or 0))


#: what reading a missing or damaged body raises
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, ValueError, zlib.error)


def file_path_for(digest: str) -> str:
    """Path of a body file relative to the output folder: ``html/ab/cd/<sha256>.html.gz``."""
    return f"{HTML_DIR}/{digest[:2]}/{digest[2:4]}/{digest}.html.gz"


class PageStore:
    """SQLite + WARC-segment page store in ``output_dir`` (see the module docstring).

    ``commit_every``: rows per transaction (1 = every page is durable once :meth:`add`
    returns; WAL with ``synchronous=NORMAL`` keeps that at thousands of rows/s).
    ``fsync``: fsync the segments (and a new segment's folder) before each commit, and
    use ``synchronous=FULL`` (survives power loss, not only process crashes).
    ``layout``: ``"segments"`` (the default) or ``"files"`` (the earlier one gzip file
    per body, kept for comparisons); both are read either way.
    ``segment_bytes``: a new segment is started once the current one would pass it.
    ``before_commit``: called right before every commit (the crawler commits its frontier
    journal there, so a stored page's outlinks are never lost on resume).
    ``after_commit``: called right after every commit with the URLs of the rows it made
    durable, in the order they were inserted (the crawler journals those pages as done).
    ``gzip_level``: compression level of the records (1 = fastest, 9 = smallest).
    ``index``: keep the full-text index ``pages_fts`` (title and the record's ``text``,
    cut to ``index_max_chars`` characters) up to date: in each row's transaction with
    ``index_every`` 1, else ``index_every`` pages' index rows at a time (at the latest
    with the first commit ``index_seconds`` after the oldest, and at :meth:`close`).
    ``words``: the words the crawl that opens the store adds to jieba's dictionary (its
    topic's Chinese keywords, :func:`focused.ranking.relevance.jieba_words`), recorded at
    open as the words the index is cut with (:func:`fulltext.record_words`: the search
    and the reindex cut with them); ``None`` (a tool that is no crawl) leaves the
    recorded ones, and indexes the rows without an index row with them.
    ``busy_timeout``: seconds a write waits for another connection's write lock before
    it raises :class:`StoreBusy` (nothing written: the caller tries again later; the
    crawler uses a short one, so that it does not freeze while another program holds the
    lock); ``open_timeout`` (default: the same) is that wait while opening. Readers never
    block a write (WAL). A failed write or commit leaves the open transaction for
    :meth:`abort` to roll back (and cut the segment back to its committed end); a
    failed record write leaves no part of the record behind.

    :meth:`add` does a page in one call. A writer that wants the file work (hashing,
    compression, the write) off its own thread splits it: :meth:`lookup` (already
    stored?) and :meth:`add_written` on the database's thread, :meth:`write_body` in
    one other thread (it touches only the segment, under its own lock). The order stays
    record first, row second.
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        commit_every: int = 1,
        fsync: bool = False,
        before_commit: Callable[[], Any] | None = None,
        gzip_level: int = 1,
        after_commit: Callable[[list[str]], Any] | None = None,
        index: bool = True,
        index_max_chars: int = fulltext.DEFAULT_MAX_CHARS,
        index_every: int = 1,
        index_seconds: float = 2.0,
        busy_timeout: float = 30.0,
        open_timeout: float | None = None,
        layout: str = "segments",
        segment_bytes: int = SEGMENT_BYTES,
        sole: bool | None = None,
        words: Sequence[str] | None = None,
    ) -> None:
        if not 0 <= int(gzip_level) <= 9:
            raise ValueError(f"gzip_level must be 0-9, got {gzip_level!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        self.output_dir = Path(output_dir)
        self.layout = layout
        self.segment_bytes = max(1, int(segment_bytes))
        self.writer: SegmentWriter | None = None
        #: segment -> end of its records in the open transaction / as committed
        self._ends: dict[str, int] = {}
        self._committed_ends: dict[str, int] = {}
        #: URLs whose rows repair removed (their record was lost): fetch them again
        self.lost: list[str] = []
        #: bytes cut from the end of segments at open (torn or uncommitted records)
        self.truncated = 0
        self.gzip_level = int(gzip_level)
        self._root = str(self.output_dir)
        self._dirs: set[str] = set()  # body folders known to exist (no mkdir per page)
        self.commit_every = max(1, int(commit_every))
        self.fsync = fsync
        self.before_commit = before_commit
        self.after_commit = after_commit
        self.busy_timeout = max(0.0, float(busy_timeout))
        self.open_timeout = self.busy_timeout if open_timeout is None else float(open_timeout)
        self.conn: sqlite3.Connection | None = None
        #: (device, inode) of the database file while open: a commit checks it is still
        #: the file at ``db_path`` (:meth:`_check_in_place`)
        self._identity: tuple[int, int] | None = None
        self.duplicates = 0
        self.stored = 0
        #: aliases added (near-duplicates of stored pages: a row, no body)
        self.aliased = 0
        self._new_aliases: set[str] = set()  # aliases of the open transaction
        self.repaired: list[str] = []
        #: what :meth:`repair` changed, one line each (``check --repair`` prints them)
        self.changes: list[str] = []
        self.words = None if words is None else list(words)
        self.index = bool(index)
        self.index_max_chars = max(0, int(index_max_chars))
        self.reindexed = 0  # page rows indexed at open (they had no index row)
        self.index_every = max(1, int(index_every))
        self.index_seconds = max(0.0, float(index_seconds))
        #: index rows not written yet: (rowid, title, text, its terms or None), in row
        #: order; the last ``_index_new`` of them belong to the open transaction's rows
        self._to_index: list[tuple[int, str, str, str | None]] = []
        self._index_new = 0
        self._index_since = 0.0  # time.monotonic() of the oldest of them
        self._last_rowid = 0
        self._pending = 0
        self._inserted: list[str] = []  # URLs of the rows in the open transaction
        self._lock_fh: Any = None
        #: this process had the store to itself when it opened it (it repaired it)
        self.exclusive = False
        #: a crawl's store: True, this crawl writes it alone (``writer.lock`` held
        #: exclusively while open); False, with the other workers of a distributed crawl
        #: (held shared); None, a tool that is no crawl (no writer lock). Either kind of
        #: crawl gets :class:`StoreInUse` at open when the other kind writes the store.
        self.sole = sole
        self._writer_fh: Any = None

    # --- life cycle --------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.output_dir / DB_NAME

    @property
    def html_dir(self) -> Path:
        return self.output_dir / HTML_DIR

    @property
    def segment_dir(self) -> Path:
        return self.output_dir / SEGMENT_DIR

    def open(self, repair: bool = True) -> PageStore:
        """Create/open the database; when no one else has it open, cut torn records off
        the segments and remove orphan files. :class:`StoreInUse` (checked first: nothing
        written) when ``sole`` and another crawl writes the store."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._writer_lock()
        try:
            return self._open(repair)
        except BaseException:
            if self._writer_fh is not None:
                self._writer_fh.close()
                self._writer_fh = None
            raise

    def _open(self, repair: bool) -> PageStore:
        if self.layout == "files":
            self.html_dir.mkdir(exist_ok=True)
        conn = sqlite3.connect(self.db_path, isolation_level=None, timeout=self.open_timeout)
        try:
            # WAL: a reader (another program's, in a read transaction) never blocks a commit
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
            conn.execute(f"PRAGMA busy_timeout={int(self.open_timeout * 1000)}")
            cols = ", ".join(f"{name} {decl}" for name, decl in COLUMNS.items())
            conn.execute(f"CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, {cols})")
            _add_missing_columns(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS segments (name TEXT PRIMARY KEY, end INTEGER NOT NULL)"
            )
            conn.execute(_ALIASES_DDL)
            conn.execute("CREATE INDEX IF NOT EXISTS aliases_page ON aliases(page_id)")
            if self.words is not None:  # also without the index: a reindex cuts with them
                fulltext.record_words(conn, self.words)
            if self.layout == "files":  # identical bodies share a file: found by hash
                conn.execute("CREATE INDEX IF NOT EXISTS pages_hash ON pages(content_hash)")
            # from now on a writer that holds the lock makes a write fail fast (StoreBusy)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        st = os.stat(self.db_path)
        self._identity = (st.st_dev, st.st_ino)
        if self.index:
            fulltext.create(conn)
            self.reindexed = self.index_missing()
        exclusive = self.exclusive = self._lock()
        if repair and exclusive:
            self.repair()
        self._share_lock()
        if self.layout == "segments":
            self.writer = SegmentWriter(
                self.output_dir,
                max_bytes=self.segment_bytes,
                gzip_level=self.gzip_level,
                fsync=self.fsync,
            )
        return self

    def index_missing(self) -> int:
        """Index, from their stored HTML, the page rows that have no index row; how many.

        One transaction that holds SQLite's write lock, so two processes opening the store
        at once do not index the same page twice.
        """
        db = self._db
        self.flush()
        words = fulltext.recorded_words(db) if self.words is None else self.words
        with cutting_with(words):  # the words the rest of the index was cut with
            return self._index_missing(db)

    def _index_missing(self, db: sqlite3.Connection) -> int:
        db.execute("BEGIN IMMEDIATE")
        try:
            todo = fulltext.missing(db)
            for rowid, title, rel, encoding, offset, length in todo:
                text = ""
                try:
                    body = read_body(self._root, rel, offset, length)
                    page_title, text = fulltext.html_text(body, encoding)
                    title = title or page_title
                except READ_ERRORS:  # no/bad file
                    pass  # the title alone is indexed; check() reports the file
                fulltext.index_page(db, rowid, title, text, self.index_max_chars)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if todo:
            logger.warning(
                "focused: indexed %d stored pages that had no full-text index row in %s",
                len(todo),
                self.db_path,
            )
        return len(todo)

    def _lock(self) -> bool:
        """Take the exclusive lock if free; True when taken (or locks unavailable)."""
        if fcntl is None:
            return True
        self._lock_fh = open(self.output_dir / LOCK_NAME, "a+b")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def _writer_lock(self) -> None:
        """Hold ``writer.lock`` as ``sole`` says, or raise :class:`StoreInUse`."""
        if fcntl is None or self.sole is None:
            return
        fh = open(self.output_dir / WRITER_LOCK_NAME, "a+b")  # noqa: SIM115
        try:
            fcntl.flock(
                fh.fileno(), (fcntl.LOCK_EX if self.sole else fcntl.LOCK_SH) | fcntl.LOCK_NB
            )
        except OSError:
            fh.close()
            raise StoreInUse("another crawl writes this page store") from None
        self._writer_fh = fh

    def _share_lock(self) -> None:
        if fcntl is not None and self._lock_fh is not None:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_SH)

    def uncommitted(self, url: str) -> bool:
        """Whether the row of ``url`` is in the open transaction (not committed yet)."""
        return url in self._inserted

    @property
    def pending(self) -> int:
        """Rows inserted (or tried) in the open transaction, not committed yet."""
        return self._pending

    def flush(self) -> None:
        """Commit pending rows (calls ``before_commit`` first, ``after_commit`` after)."""
        if self.conn is None or not self._pending:
            return
        if self.before_commit is not None:
            self.before_commit()
        self._check_in_place()
        indexed = self._write_index(force=False)
        self._seal_segments()
        self._commit()
        self._pending = 0
        self._committed_ends.update(self._ends)
        self._ends = {}
        self._index_new = 0  # the open transaction's rows are committed
        self._new_aliases = set()
        if indexed:
            del self._to_index[:indexed]
        committed, self._inserted = self._inserted, []
        if self.after_commit is not None:
            self.after_commit(committed)

    def _write_index(self, *, force: bool) -> int:
        """Insert the waiting index rows into the open transaction when they are due
        (``index_every`` of them, or the oldest ``index_seconds`` old) or ``force``; how
        many. They stay waiting until the transaction commits."""
        todo = self._to_index
        if not todo or not (
            force
            or len(todo) >= self.index_every
            or time.monotonic() - self._index_since >= self.index_seconds
        ):
            return 0
        db = self._db
        for rowid, title, text, terms in todo:
            fulltext.index_page(
                db, rowid, title, text, self.index_max_chars, text_terms=terms, replace=True
            )
        return len(todo)

    @property
    def unindexed(self) -> int:
        """Stored (or pending) rows whose index rows wait (see ``index_every``)."""
        return len(self._to_index)

    def flush_index(self) -> None:
        """Write every waiting index row now, in a transaction of its own (none open)."""
        if self.conn is None or not self._to_index or self._pending:
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            indexed = self._write_index(force=True)
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        del self._to_index[:indexed]

    def _seal_segments(self) -> None:
        """Before a commit: the records of its rows are durable first (fsync, with
        ``fsync``), and each segment's new end goes into the same transaction."""
        if not self._ends:
            return
        if self.writer is not None:
            self.writer.sync()
        self._db.executemany(
            "INSERT INTO segments (name, end) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET end = MAX(end, excluded.end)",
            self._ends.items(),
        )

    def _check_in_place(self) -> None:
        """:class:`StoreGone` when the database file at ``db_path`` is no longer the one
        this store opened (the output folder was deleted during the crawl, or the file
        removed or replaced): a commit into it would store nothing anyone can read."""
        if self._identity is None:
            return
        try:
            st = os.stat(self.db_path)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            raise StoreGone(
                f"{self.db_path} was removed or replaced during the crawl, and the pages"
                " stored in it with it"
            )

    def _commit(self) -> None:
        """``COMMIT`` the open transaction (its own method: a test can make it fail)."""
        self._db.execute("COMMIT")

    def abort(self) -> list[str]:
        """Roll back the open transaction (after a failed write or commit): its rows are
        not stored. The URLs whose rows were rolled back."""
        lost, self._inserted = self._inserted, []
        aliases, self._new_aliases = self._new_aliases, set()
        self.aliased -= len(aliases)
        self.stored -= len(lost) - len(aliases)
        self._pending = 0
        if self._index_new:  # their rows are rolled back: no index rows for them
            del self._to_index[-self._index_new :]
            self._index_new = 0
        if self.conn is not None and self.conn.in_transaction:
            # SQLite may have rolled it back itself (SQLITE_FULL)
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        if self.writer is not None:  # the rolled-back rows' records go too
            current = self.writer.current
            if current in self._ends:
                end = self._committed_ends.get(current)
                with contextlib.suppress(OSError):
                    if end is not None:
                        self.writer.truncate(current, end)
        self._ends = {}
        return lost

    def close(self) -> None:
        """Commit and close; the store can be opened again."""
        try:
            if self.conn is not None:
                self.flush()
                try:
                    self.flush_index()
                except (sqlite3.Error, OSError) as exc:  # the rows are stored: say so
                    logger.warning(
                        "focused: %d stored pages are not in the full-text index yet "
                        "(%s); the next crawl of %s indexes them, or `scrapy search "
                        "--reindex`",
                        len(self._to_index),
                        exc,
                        self.output_dir,
                    )
                self._to_index = []
                self.conn.close()
                self.conn = None
        finally:
            if self.writer is not None and self.conn is None:
                self.writer.close()
                self.writer = None
        if self._lock_fh is not None:
            self._lock_fh.close()  # releases the flock
            self._lock_fh = None
        if self._writer_fh is not None:
            self._writer_fh.close()
            self._writer_fh = None

    def __enter__(self) -> PageStore:
        return self if self.conn is not None else self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _db(self) -> sqlite3.Connection:
        if self.conn is None:
            raise RuntimeError("PageStore is not open")
        return self.conn

    # --- writing -----------------------------------------------------------------
    def add(self, record: Mapping[str, Any], body: bytes) -> bool:
        """Store one page; False when its URL is already stored (nothing written).

        ``record`` holds the :data:`COLUMNS` values and, for the full-text index, the
        page's main ``text`` (other keys are ignored). When it is a mutable mapping, its
        :data:`LOCATION_COLUMNS` are filled in (with the stored row's values for a
        duplicate URL).
        """
        existing = self.lookup(record["url"])
        if existing is not None:
            self.duplicates += 1
            self._fill(record, *existing)
            return False
        return self.add_written(record, self.write_body(body, record=record))

    def lookup(self, url: str) -> tuple[str, str, int | None, int | None] | None:
        """``(content_hash, file_path, record_offset, record_length)`` of ``url``'s row
        (of its page's row, for an alias), or None when not stored."""
        # one statement: the alias part runs only when no page row has the URL
        return self._db.execute(
            "SELECT content_hash, file_path, record_offset, record_length FROM pages "
            "WHERE url = ? UNION ALL "
            "SELECT p.content_hash, p.file_path, p.record_offset, p.record_length "
            "FROM aliases a JOIN pages p ON p.id = a.page_id WHERE a.url = ? LIMIT 1",
            (url, url),
        ).fetchone()

    def page_id(self, url: str) -> int | None:
        """The id of the page row stored for ``url`` (its main URL or an alias), or None."""
        found = self._db.execute(
            "SELECT id FROM pages WHERE url = ? UNION ALL "
            "SELECT page_id FROM aliases WHERE url = ? LIMIT 1",
            (url, url),
        ).fetchone()
        return None if found is None else int(found[0])

    def add_alias(self, record: Mapping[str, Any], of: str, *, main: bool = False) -> bool | None:
        """Record ``record["url"]`` as another URL of the page stored for ``of`` (its main
        URL or an alias): a row of the table ``aliases``, no body, in the open transaction
        (committed with it; ``after_commit`` names the URL). ``record`` gives the alias's
        ``fetched_at``, ``parent_url``, ``depth``, ``status`` and ``is_target``. With
        ``main``, the alias becomes the page's main URL (``pages.url``, with its fetch's
        ``fetched_at``, ``parent_url``, ``depth``, ``status`` and ``is_target``) and the
        page's earlier main URL the alias, with that URL's facts from the page row. True
        when added; False when the URL is stored already (nothing written); None when
        ``of`` is not stored (nothing written: the caller may try again once it is).
        :class:`StoreBusy` as :meth:`add`."""
        url = str(record["url"])
        db = self._db
        # the checks run inside the write transaction: another worker of the store can
        # write neither URL between them and the rows written here
        began = self._begin()
        page = None if self.page_id(url) is not None else self.page_id(of)
        if page is None:
            if began:  # nothing written: the write lock goes back at once
                db.execute("ROLLBACK")
            if self.page_id(url) is not None:
                self.duplicates += 1
                return False
            return None
        row = {
            "url": url,
            "found_at": record.get("fetched_at") or time.time(),
            "parent_url": record.get("parent_url") or "",
            "depth": record.get("depth") or 0,
            "status": record.get("status") or 0,
            "is_target": record.get("is_target"),
        }
        new_main = row
        if main:
            old = db.execute(
                "SELECT url, fetched_at, parent_url, depth, status, is_target FROM pages "
                "WHERE id = ?",
                (page,),
            ).fetchone()
            names = ("url", "found_at", "parent_url", "depth", "status")
            row = dict(zip(names, old[:5], strict=True))
            row["is_target"] = old[5]
        cur = db.execute(
            "INSERT OR IGNORE INTO aliases (url, page_id, found_at, parent_url, depth, status, "
            "is_target, stored_after) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(id), 0) FROM pages))",
            (
                row["url"],
                page,
                row["found_at"],
                row["parent_url"],
                int(row["depth"]),
                int(row["status"]),
                _flag(row["is_target"]),
            ),
        )
        if cur.rowcount != 1:  # held already (nothing written)
            if began:
                db.execute("ROLLBACK")
            self.duplicates += 1
            return False
        if main:
            # the row's fetch facts are its URL's: the later fetch's, the first copy's
            # going with its URL to the alias row
            db.execute(
                "UPDATE pages SET url = ?, is_target = ?, fetched_at = ?, parent_url = ?, "
                "depth = ?, status = ? WHERE id = ?",
                (
                    url,
                    _flag(new_main["is_target"]),
                    new_main["found_at"],
                    new_main["parent_url"],
                    int(new_main["depth"]),
                    int(new_main["status"]),
                    page,
                ),
            )
        self._pending += 1
        self._inserted.append(url)
        self._new_aliases.add(url)
        self.aliased += 1
        if self._pending >= self.commit_every:
            self.flush()
        return True

    def _begin(self) -> bool:
        """Open the batch transaction if none is open (:class:`StoreBusy` when another
        program holds the write lock: nothing done); whether it opened it."""
        if self._pending:
            return False
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise StoreBusy(str(exc)) from exc
            raise
        return True

    def aliases(self, page_id: int | None = None) -> list[dict[str, Any]]:
        """The alias rows (of ``page_id``'s page only, when given), in the order added."""
        where, args = ("WHERE page_id = ?", (page_id,)) if page_id is not None else ("", ())
        cur = self._db.execute(
            f"SELECT url, page_id, {', '.join(ALIAS_COLUMNS)} FROM aliases {where} ORDER BY rowid",
            args,
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, values, strict=True)) for values in cur]

    def write_body(
        self,
        body: bytes,
        digest: str | None = None,
        record: Mapping[str, Any] | None = None,
    ) -> Location:
        """Write ``body``'s records (its file, in the ``files`` layout); where they are.
        ``digest``: ``content_hash(body)`` when the caller has it already; ``record``: the
        page's ``url``, ``status``, ``encoding`` and ``fetched_at`` for its WARC records.

        Touches no database: safe to call from one other thread than the one that uses
        the database.
        """
        if digest is None:
            digest = content_hash(body)
        if self.writer is None:
            if self.layout == "segments":
                raise RuntimeError("PageStore is not open")
            rel = file_path_for(digest)
            self._write_file(rel, digest, body)
            return Location(digest, rel)
        rec = record or {}
        page = WarcPage(
            str(rec.get("url") or ""),
            body,
            digest,
            status=int(rec.get("status") or 200),
            encoding=str(rec.get("encoding") or ""),
            fetched_at=rec.get("fetched_at"),
        )
        where = self.writer.append(page)
        return Location(digest, where.file_path, where.offset, where.length, where.end)

    def add_written(self, record: Mapping[str, Any], where: Location) -> bool:
        """Insert the row of a page whose body :meth:`write_body` wrote (``where``); False
        (and the stored row's values filled in) when the URL is stored already."""
        digest, rel, offset, length, end = where
        row = {c: record.get(c) for c in _DATA_COLUMNS}
        row["content_hash"] = digest
        row["file_path"] = rel
        row["record_offset"] = offset
        row["record_length"] = length
        if not self._insert(row):
            self.duplicates += 1
            existing = self.lookup(record["url"])
            if existing is not None:
                self._fill(record, *existing)
            return False
        if end is not None and end > self._ends.get(rel, 0):
            self._ends[rel] = end
        if self.index:  # written with this transaction or a later one (_write_index)
            terms = record.get("text_terms")
            if not self._to_index:
                self._index_since = time.monotonic()
            self._to_index.append(
                (
                    self._last_rowid,
                    str(record.get("title") or ""),
                    str(record.get("text") or ""),
                    terms if isinstance(terms, str) else None,
                )
            )
            self._index_new += 1
        self.stored += 1
        self._fill(record, digest, rel, offset, length)
        if self._pending >= self.commit_every:
            self.flush()
        return True

    @staticmethod
    def _fill(
        record: Mapping[str, Any],
        digest: str,
        rel: str,
        offset: int | None = None,
        length: int | None = None,
    ) -> None:
        if hasattr(record, "__setitem__"):
            for key, value in zip(LOCATION_COLUMNS, (digest, rel, offset, length), strict=True):
                record[key] = value  # type: ignore[index]

    def _write_file(self, rel: str, digest: str, body: bytes) -> None:
        """Write the gzipped body atomically (temp file + ``os.replace``); skip if present."""
        final = os.path.join(self._root, rel)
        if os.path.exists(final):
            return
        folder = os.path.dirname(final)
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        tmp = os.path.join(folder, f".{digest}.{uuid.uuid4().hex}.tmp")
        data = memoryview(gzip.compress(body, compresslevel=self.gzip_level, mtime=0))
        # os-level calls: each one lets other threads run, and a writer thread has to wait
        # for the GIL after each (Python's open() makes several)
        try:
            fd = os.open(tmp, _CREATE, 0o666)
        except FileNotFoundError:  # the folder was removed since: make it again
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, _CREATE, 0o666)
        try:
            try:
                while data:
                    data = data[os.write(fd, data) :]
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:  # a full disk: no half-written temp file is left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if self.fsync:
            dir_fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _insert(self, row: dict[str, Any]) -> bool:
        """Insert one row in the open batch transaction; False when the URL exists."""
        db = self._db
        self._begin()  # another program writes: StoreBusy, nothing done, try again later
        values = []
        for name in COLUMNS:
            value = row.get(name)
            if name in _BOOL_COLUMNS and value is not None:
                value = int(bool(value))
            values.append(value)
        # NULL for a missing column would break NOT NULL: fall back to the default
        names = [n for n, v in zip(COLUMNS, values, strict=True) if v is not None]
        vals = [v for v in values if v is not None]
        # a URL held as an alias is stored already: no row (and no second body) for it
        cur = db.execute(
            f"INSERT OR IGNORE INTO pages ({', '.join(names)}) "
            f"SELECT {', '.join('?' * len(vals))} "
            "WHERE NOT EXISTS (SELECT 1 FROM aliases WHERE url = ?)",
            [*vals, row["url"]],
        )
        self._pending += 1  # the transaction is open either way; flush ends it
        if cur.rowcount != 1:
            return False
        self._inserted.append(row["url"])
        self._last_rowid = cur.lastrowid or 0
        return True

    # --- reading -----------------------------------------------------------------
    def has(self, url: str) -> bool:
        """Whether ``url`` is stored, as a page's main URL or as an alias."""
        return self.page_id(url) is not None

    def urls(self) -> list[str]:
        """Stored URLs in the order they were stored."""
        return [u for (u,) in self._db.execute("SELECT url FROM pages ORDER BY id")]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row as a dict (``relevant`` bool, ``is_target`` bool or None), by id."""
        return self._select("ORDER BY id", ())

    def get(self, url: str) -> dict[str, Any] | None:
        """The row of ``url`` or None."""
        for row in self._select("WHERE url = ?", (url,)):
            return row
        return None

    def _select(self, clause: str, args: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
        cur = self._db.execute(f"SELECT id, {', '.join(COLUMNS)} FROM pages {clause}", args)
        names = [d[0] for d in cur.description]
        for values in cur:
            row = dict(zip(names, values, strict=True))
            for name in _BOOL_COLUMNS:
                if row[name] is not None:
                    row[name] = bool(row[name])
            yield row

    def body(self, url: str) -> bytes | None:
        """The raw bytes stored for ``url`` or None (one seek into its segment)."""
        found = self.lookup(url)
        if found is None:
            return None
        return read_body(self._root, found[1], found[2], found[3])

    # --- consistency -------------------------------------------------------------
    def _disk_files(self) -> Iterator[tuple[Path, str | None]]:
        return _disk_files(self.html_dir)

    def _segment_ends(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT name, end FROM segments"))

    def check(self, verify: bool = False) -> list[str]:
        """Problems found, one line each (empty when consistent), as this connection
        sees the store (its own open transaction included). :func:`check_store` checks a
        folder without opening it for writing (the command line's ``check``).

        Rows without their file or record, records past a segment's committed end,
        segments no commit names, files without rows (orphans, leftover temp files),
        duplicate URLs, file paths not derived from the hash; with ``verify`` also bodies
        whose bytes do not hash to the row's ``content_hash``.
        """
        return _problems(self._db, self.output_dir, verify=verify)

    def _orphan_segments(self, ends: Mapping[str, int]) -> list[str]:
        return _orphan_segments(self.output_dir, ends)

    def repair(self) -> list[str]:
        """Undo what a crash left (call only when no other writer has the store open;
        :meth:`open` makes sure). Returns the removed relative paths.

        - every segment is cut back to its committed end (a torn record, records whose
          rows were not committed); the bytes cut are added to :attr:`truncated`;
        - a segment no commit names is removed;
        - a row that points past its segment's end (the segment lost bytes that SQLite
          kept: a power cut with ``fsync`` off) is removed with its index row; its URL
          goes to :attr:`lost` and the table ``lost_pages``;
        - files of the earlier layout that no row refers to, and leftover temp files,
          are removed.
        """
        self.flush()
        removed: list[str] = []
        ends = self._segment_ends()
        for name, end in ends.items():
            path = self.output_dir / name
            size = _size(path)
            if size > end:
                cut = segments.truncate_to(path, end, fsync=self.fsync)
                self.truncated += cut
                self.changes.append(f"cut {cut} bytes past the committed end off {name}")
                logger.warning(
                    "focused: cut %d bytes (a torn or uncommitted record) off the end of %s",
                    cut,
                    path,
                )
            elif size < end:
                self._drop_rows_past(name, size)
        for rel in self._orphan_segments(ends):
            (self.output_dir / rel).unlink(missing_ok=True)
            removed.append(rel)
            self.changes.append(f"removed segment without commit: {rel}")
        if self.html_dir.is_dir():
            removed += self._repair_files()
        self.repaired = removed
        return removed

    def move_files_to_segments(self) -> int:
        """:func:`migrate`'s work on this open store (which must be exclusive)."""
        db, moved, last = self._db, 0, 0
        missing: list[str] = []
        while True:
            rows = db.execute(
                "SELECT id, url, content_hash, file_path, status, encoding, fetched_at "
                "FROM pages WHERE record_offset IS NULL AND id > ? ORDER BY id LIMIT ?",
                (last, self.commit_every),
            ).fetchall()
            if not rows:
                break
            for rowid, url, digest, rel, status, encoding, fetched_at in rows:
                last = rowid
                try:
                    body = read_body(self._root, rel, None, None)
                except READ_ERRORS:
                    missing.append(url)
                    continue
                page = {"url": url, "status": status, "encoding": encoding}
                page["fetched_at"] = fetched_at
                self._relocate(rowid, self.write_body(body, digest, page))
                moved += 1
            self.flush()
        if not missing:
            self._repair_files()  # no row refers to a file now: they all go
            with contextlib.suppress(OSError):
                _remove_empty_dirs(self.html_dir)
            db.execute("DROP INDEX IF EXISTS pages_hash")
        else:
            logger.warning("focused: %d pages have no readable file to move", len(missing))
        return moved

    def _relocate(self, rowid: int, where: Location) -> None:
        """Point row ``rowid`` at ``where`` in the open batch transaction."""
        db = self._db
        if not self._pending:
            db.execute("BEGIN IMMEDIATE")
        db.execute(
            "UPDATE pages SET file_path = ?, record_offset = ?, record_length = ? WHERE id = ?",
            (where.file_path, where.record_offset, where.record_length, rowid),
        )
        self._pending += 1
        if where.end is not None and where.end > self._ends.get(where.file_path, 0):
            self._ends[where.file_path] = where.end

    def _drop_rows_past(self, name: str, size: int) -> None:
        """Remove the rows whose record is not (wholly) in the first ``size`` bytes of
        segment ``name`` (-1: the segment is missing, and so is its entry afterwards);
        their URLs go to :attr:`lost`."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            gone = db.execute(
                "SELECT id, url FROM pages WHERE file_path = ? "
                "AND record_offset + record_length > ?",
                (name, max(size, 0)),
            ).fetchall()
            db.execute("CREATE TABLE IF NOT EXISTS lost_pages (url TEXT PRIMARY KEY, lost_at REAL)")
            for rowid, _url in list(gone):  # a removed page's aliases go with it
                gone += db.execute(
                    "SELECT NULL, url FROM aliases WHERE page_id = ?", (rowid,)
                ).fetchall()
                db.execute("DELETE FROM aliases WHERE page_id = ?", (rowid,))
            for rowid, url in gone:
                if rowid is None:
                    db.execute(
                        "INSERT OR REPLACE INTO lost_pages (url, lost_at) VALUES (?, ?)",
                        (url, time.time()),
                    )
                    continue
                db.execute("DELETE FROM pages WHERE id = ?", (rowid,))
                db.execute(
                    "INSERT OR REPLACE INTO lost_pages (url, lost_at) VALUES (?, ?)",
                    (url, time.time()),
                )
                if self.index:
                    db.execute(f"DELETE FROM {fulltext.FTS_TABLE} WHERE rowid = ?", (rowid,))
            last = db.execute(
                "SELECT MAX(record_offset) FROM pages WHERE file_path = ?", (name,)
            ).fetchone()[0]
            path = self.output_dir / name
            # the end of the last kept page's records: a part-record after it goes
            end = segments.whole_end(path, last or 0) if size > 0 else 0
            if size < 0:  # no file: no end to keep (else every open would warn again)
                db.execute("DELETE FROM segments WHERE name = ?", (name,))
            else:
                db.execute("UPDATE segments SET end = ? WHERE name = ?", (end, name))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.changes += [
            f"removed row: {url} (its record is not in {name}; listed in lost_pages)"
            for _id, url in gone
        ]
        if size > 0:
            cut = segments.truncate_to(path, end, fsync=self.fsync)
            self.truncated += cut
            if cut:
                self.changes.append(f"cut {cut} bytes of a torn record off {name}")
        elif size < 0:
            self.changes.append(f"forgot the end of the missing segment {name}")
        self.lost += [url for _id, url in gone]
        logger.warning(
            "focused: %s %s, before %d stored pages' records: removed them "
            "(they are fetched again)",
            self.output_dir / name,
            "is missing" if size < 0 else f"ends at {size} bytes",
            len(gone),
        )

    def _repair_files(self) -> list[str]:
        """Remove body files of the earlier layout that no row refers to, and leftover
        temp files (a crash between writing a file and committing its row)."""
        referenced = {
            d
            for (d,) in self._db.execute(
                "SELECT DISTINCT content_hash FROM pages WHERE record_offset IS NULL"
            )
        }
        removed: list[str] = []
        for path, digest in self._disk_files():
            is_tmp = digest is None and path.name.endswith(_TMP_SUFFIX)
            if is_tmp or (digest is not None and digest not in referenced):
                path.unlink(missing_ok=True)
                rel = path.relative_to(self.output_dir).as_posix()
                removed.append(rel)
                self.changes.append(
                    f"removed {'temp file' if is_tmp else 'file without row'}: {rel}"
                )
        return removed


def _size(path: Path) -> int:
    """The size of ``path`` in bytes, -1 when it does not exist."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def _disk_files(html_dir: Path) -> Iterator[tuple[Path, str | None]]:
    """(path, hash) of every body file of the earlier layout under ``html_dir``, (path,
    None) of temp/unknown files."""
    if not html_dir.is_dir():
        return
    for dirpath, _dirs, files in os.walk(html_dir):
        for name in files:
            match = _HASH_FILE.match(name)
            yield Path(dirpath) / name, match.group(1) if match else None


def _orphan_segments(root: Path, ends: Mapping[str, int]) -> list[str]:
    """Segments (by their name's pattern) that no commit names: written by a process
    that died before its first commit (or, while a crawl writes, before its next)."""
    folder = root / SEGMENT_DIR
    if not folder.is_dir():
        return []
    return sorted(
        f"{SEGMENT_DIR}/{name}"
        for name in os.listdir(folder)
        if SEGMENT_RE.match(name) and f"{SEGMENT_DIR}/{name}" not in ends
    )


def _problems(
    db: sqlite3.Connection, root: Path, *, verify: bool = False, live: bool = False
) -> list[str]:
    """The problems of the store in ``root`` as ``db`` sees it (see
    :meth:`PageStore.check`); reads only. ``live``: another program may be writing the
    store, so what a writer has not committed yet (records past a segment's committed
    end, a segment not committed yet, a body file or temp file of the earlier layout
    written before its row) is not a problem."""
    tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    ends: dict[str, int] = (
        dict(db.execute("SELECT name, end FROM segments")) if "segments" in tables else {}
    )
    sizes = {name: _size(root / name) for name in ends}
    referenced: set[str] = set()
    problems: list[str] = []
    if "pages" in tables:  # else a store being created (or an empty one): no rows
        problems += [
            f"duplicate url: {url} ({n} rows)"
            for url, n in db.execute(
                "SELECT url, COUNT(*) FROM pages GROUP BY url HAVING COUNT(*) > 1"
            )
        ]
        problems += _row_problems(
            db, root, ends=ends, sizes=sizes, referenced=referenced, verify=verify
        )
    if "aliases" in tables and "pages" in tables:
        problems += [
            f"alias without page: {url} -> {page}"
            for url, page in db.execute(
                "SELECT url, page_id FROM aliases WHERE page_id NOT IN (SELECT id FROM pages)"
            )
        ]
        problems += [
            f"alias of a stored page's url: {url}"
            for (url,) in db.execute("SELECT url FROM aliases WHERE url IN (SELECT url FROM pages)")
        ]
    if not live:
        problems += [
            f"bytes past the committed end: {name} ({sizes[name] - end})"
            for name, end in ends.items()
            if sizes[name] > end
        ]
        problems += [f"segment without commit: {rel}" for rel in _orphan_segments(root, ends)]
    return problems + _file_problems(root, referenced, verify, live)


def _row_problems(
    db: sqlite3.Connection,
    root: Path,
    *,
    ends: Mapping[str, int],
    sizes: dict[str, int],
    referenced: set[str],
    verify: bool,
) -> list[str]:
    """Problems of the rows: each one's record or file (the hashes of the files of the
    earlier layout go into ``referenced``; the sizes of segments no commit names, into
    ``sizes``)."""
    problems: list[str] = []
    # a store of an earlier version may lack columns (opening it for writing adds them)
    cur = db.execute(f"SELECT url, {columns(db, LOCATION_COLUMNS)} FROM pages")
    for url, digest, rel, offset, length in cur:
        if offset is None:
            referenced.add(digest)
            problems += _check_file(root, url, digest, rel)
            continue
        found = _check_record(root, url, rel, offset + (length or 0), sizes=sizes, ends=ends)
        problems += found
        if verify and not found:
            try:
                ok = content_hash(read_body(root, rel, offset, length)) == digest
            except READ_ERRORS:
                ok = False
            if not ok:
                problems.append(f"corrupt record: {rel}@{offset} ({url})")
    return problems


def _file_problems(root: Path, referenced: set[str], verify: bool, live: bool) -> list[str]:
    """Problems of the body files of the earlier layout (``referenced``: the hashes that
    rows name)."""
    problems: list[str] = []
    for path, digest in _disk_files(root / HTML_DIR):
        rel = path.relative_to(root).as_posix()
        if digest is None:
            if not (live and path.name.endswith(_TMP_SUFFIX)):
                problems.append(f"stray file: {rel}")
        elif digest not in referenced:
            if not live:
                problems.append(f"file without row: {rel}")
        elif verify:
            try:
                ok = content_hash(gzip.decompress(path.read_bytes())) == digest
            except READ_ERRORS:
                ok = False
            if not ok:
                problems.append(f"corrupt file: {rel}")
    return problems


def _check_record(
    root: Path,
    url: str,
    rel: str,
    stop: int,
    *,
    sizes: dict[str, int],
    ends: Mapping[str, int],
) -> list[str]:
    """Problems of one row whose body is a record in a segment (ending at ``stop``)."""
    size = sizes.get(rel)
    out = []
    if size is None:
        size = sizes[rel] = _size(root / rel)
        out.append(f"segment not committed: {rel}")
    if size < 0:
        out.append(f"row without segment: {url} -> {rel}")
    elif stop > min(size, ends.get(rel, size)):
        out.append(f"row past its segment's end: {url} -> {rel}")
    return out


def _check_file(root: Path, url: str, digest: str, rel: str) -> list[str]:
    """Problems of one row of the earlier layout (its body in a file of its own)."""
    if rel != file_path_for(digest):
        return [f"bad file path: {url} -> {rel}"]
    if not (root / rel).is_file():
        return [f"row without file: {url} -> {rel}"]
    return []


class CheckReport(NamedTuple):
    """What :func:`check_store` found: ``problems``, one line each (empty: consistent);
    ``in_use``: another program had the store open, so only what it has committed was
    checked (not the records past a segment's committed end it may be writing)."""

    problems: list[str]
    in_use: bool


#: seconds :func:`check_store` waits for a crawl that is opening or closing the store
OPENING_WAIT = 0.2


def check_store(output_dir: str | os.PathLike[str], *, verify: bool = False) -> CheckReport:
    """Check the store in ``output_dir`` without changing a byte of the folder (the
    command line's ``check``): no repair, no lock, no file created; the database is
    opened read-only, and every row is checked in one read transaction (one consistent
    snapshot, even while a crawl writes the store: a WAL reader never blocks a commit).

    ``FileNotFoundError`` when the folder has no ``pages.sqlite3``; ``sqlite3.Error``
    when it cannot be read.
    """
    root = Path(output_dir)
    db = root / DB_NAME
    if not db.is_file():
        raise FileNotFoundError(f"no page store in {root} ({DB_NAME} not found)")
    for attempt in range(3):
        live = in_use(root)
        # a -wal without its -shm: a crawl opening or closing the store (SQLite makes the
        # -wal first and removes the -shm first); read-only SQLite cannot open the database
        # then. An empty -wal holds no commit: the database file alone is read.
        shm = _shm_path(db).exists()
        wal = _wal_size(db)
        immutable = wal < 0 or (wal == 0 and not shm)
        before = _stat_key(db)
        error: sqlite3.Error | None = None
        problems: list[str] = []
        try:
            conn = _connect_read_only(db, immutable)
            try:
                conn.execute("BEGIN")  # one snapshot for every query
                problems = _problems(conn, root, verify=verify, live=live)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            error = exc
        # a crawl that opened the store meanwhile: its uncommitted records would be
        # reported, and with no WAL the database was read without SQLite's locks
        changed = in_use(root) != live or (immutable and _stat_key(db) != before)
        if error is not None and attempt < 2 and not (shm and _shm_path(db).exists()):
            time.sleep(OPENING_WAIT)  # a -wal with commits, its -shm not (yet) there
            continue
        if not changed or attempt == 2:
            if error is not None:
                raise error
            return CheckReport(problems, live)
    raise AssertionError("unreachable")  # pragma: no cover


def _wal_path(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def _shm_path(db: Path) -> Path:
    return db.with_name(db.name + "-shm")


def _wal_size(db: Path) -> int:
    """Bytes of the database's -wal; -1 when there is none."""
    try:
        return _wal_path(db).stat().st_size
    except FileNotFoundError:
        return -1


def _stat_key(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _connect_read_only(db: Path, immutable: bool) -> sqlite3.Connection:
    """A connection that reads ``db`` and writes no file at all. ``mode=ro`` alone is
    not enough: a reader of a WAL database creates the ``-wal`` and ``-shm`` files when
    they are missing and rewrites a ``-shm`` a killed process left. With no ``-wal`` (or
    an empty one) the database file holds every commit and is read as ``immutable`` (no
    lock, no file made); with one, its ``-shm`` is opened read-only (``readonly_shm``: SQLite then
    reads the WAL itself when the index cannot be trusted)."""
    uri = db.resolve().as_uri()
    query = "mode=ro&immutable=1" if immutable else "mode=ro&readonly_shm=1"
    return sqlite3.connect(f"{uri}?{query}", uri=True, timeout=30.0, isolation_level=None)


def repair_store(output_dir: str | os.PathLike[str], *, fsync: bool = False) -> list[str]:
    """Repair the store in ``output_dir`` as a crawl's open does (:meth:`PageStore.repair`)
    and say what changed, one line each. :class:`StoreBusy` (nothing changed) while
    another program has the store open; ``FileNotFoundError`` when there is no store."""
    root = Path(output_dir)
    if not (root / DB_NAME).is_file():
        raise FileNotFoundError(f"no page store in {root} ({DB_NAME} not found)")
    store = PageStore(root, index=False, fsync=fsync)
    store.open()  # repairs while it holds the lock no other program can hold meanwhile
    try:
        if not store.exclusive:
            raise StoreBusy(f"{root} is open in another program: stop it first")
        return list(store.changes)
    finally:
        store.close()


def _remove_empty_dirs(top: Path) -> None:
    for dirpath, _dirs, _files in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Add the columns a store written by an earlier version lacks (its rows get the
    column's default: NULL offsets, i.e. the one-file-per-page layout)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    for name, decl in COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE pages ADD COLUMN {name} {decl}")


def columns(conn: sqlite3.Connection, names: Iterable[str]) -> str:
    """The select list of ``names`` from ``pages``: a column of :data:`LATER_COLUMNS`
    that a store of an earlier version lacks is ``NULL AS name`` (its page a file of the
    earlier layout), so a tool that only reads the store (search, export, get) reads it
    without adding the column; any other column is named as it is."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    return ", ".join(
        f"NULL AS {name}" if name in LATER_COLUMNS and name not in have else name for name in names
    )


def _flag(value: Any) -> int | None:
    """A boolean column's value: None stays None, anything else 0 or 1."""
    return None if value is None else int(bool(value))


def stored_aliases(output_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """``url``, ``is_target``, ``stored_after`` (the largest page id when it was added)
    and ``page_id`` of every alias, in the order added, read without opening the store for writing
    (empty when there is no store, or one from before aliases)."""
    db_path = Path(output_dir) / DB_NAME
    if not db_path.is_file():
        return []
    conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        cur = conn.execute(
            "SELECT url, is_target, stored_after, page_id FROM aliases ORDER BY rowid"
        )
        return [
            {
                "url": u,
                "is_target": None if t is None else bool(t),
                "stored_after": int(a),
                "page_id": int(p),
            }
            for u, t, a, p in cur
        ]
    except sqlite3.OperationalError:  # no table
        return []
    finally:
        conn.close()


def stored_pages(output_dir: str | os.PathLike[str], *, ids: bool = False) -> list[dict[str, Any]]:
    """``url``, ``relevant`` and ``is_target`` (and its ``id``, with ``ids``) of every
    stored page, in storing order, read without opening the store for writing (empty
    when there is no store yet)."""
    db_path = Path(output_dir) / DB_NAME
    if not db_path.is_file():
        return []
    conn = sqlite3.connect(db_path, timeout=30.0)
    try:
        cur = conn.execute("SELECT id, url, relevant, is_target FROM pages ORDER BY id")
        return [
            {"url": u, "relevant": bool(r), "is_target": None if t is None else bool(t)}
            | ({"id": i} if ids else {})
            for i, u, r, t in cur
        ]
    except sqlite3.OperationalError:  # no table yet
        return []
    finally:
        conn.close()


class StoreReader:
    """Read-only access to a store's pages by URL (another program may be writing it):
    one index lookup and one seek per page. Raises ``FileNotFoundError`` when ``folder``
    has no store."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.root = str(folder)
        db = Path(folder) / DB_NAME
        if not db.is_file():
            raise FileNotFoundError(f"no page store in {folder} ({DB_NAME} not found)")
        self.conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        self._location: str | None = None

    def location(self, url: str) -> tuple[str, str, int | None, int | None] | None:
        """Where the body of ``url`` (a page's main URL or an alias) is, or None."""
        if self._location is None:
            self._location = columns(self.conn, LOCATION_COLUMNS)
        found = self.conn.execute(
            f"SELECT {self._location} FROM pages WHERE url = ?", (url,)
        ).fetchone()
        if found is None:
            with contextlib.suppress(sqlite3.OperationalError):  # a store from before aliases
                found = self.conn.execute(
                    f"SELECT {self._location} FROM pages WHERE id = "
                    "(SELECT page_id FROM aliases WHERE url = ?)",
                    (url,),
                ).fetchone()
        return found

    def body(self, url: str) -> bytes | None:
        """The raw bytes stored for ``url``, or None when it is not stored."""
        found = self.location(url)
        return None if found is None else read_body(self.root, *found[1:])

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def migrate(
    output_dir: str | os.PathLike[str],
    *,
    batch: int = 1000,
    fsync: bool = False,
    gzip_level: int = 1,
    segment_bytes: int = SEGMENT_BYTES,
) -> int:
    """Move the bodies of a store of the earlier layout (one gzip file per body) into
    segments; the number of pages moved. Idempotent and safe to stop at any point: each
    batch of rows is pointed at its new records in one commit, after the records are
    written; the old files are removed once every row has moved (a row whose file is
    missing keeps its old path and is reported by :meth:`PageStore.check`). Refuses
    (:class:`StoreBusy`) while another program has the store open."""
    store = PageStore(
        output_dir,
        commit_every=batch,
        fsync=fsync,
        gzip_level=gzip_level,
        segment_bytes=segment_bytes,
    )
    store.open()
    try:
        if not store.exclusive:
            raise StoreBusy(f"{output_dir} is open in another program: stop it first")
        moved = store.move_files_to_segments()
    finally:
        store.close()
    return moved


def main(argv: list[str] | None = None) -> int:
    """``python -m focused.output.store get URL | migrate | check [--verify] [--repair]
    [--dir DIR]``. ``check`` changes nothing (one line per problem, exit status 1 when
    there is one); ``check --repair`` first repairs what a crash left, one line per
    change, then checks."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m focused.output.store", description="The page store of a crawl."
    )
    parser.add_argument("command", choices=("get", "migrate", "check"))
    parser.add_argument("url", nargs="?", help="get: the page's URL")
    parser.add_argument("--dir", default="out/crawl", help="the crawl's output folder")
    parser.add_argument("--verify", action="store_true", help="check: hash every body")
    parser.add_argument(
        "--repair",
        action="store_true",
        help="check: first repair what a crash left (as a crawl's open does), saying what"
        " changed; refused while another program has the store open",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "get":
            if not args.url:
                parser.error("get needs a URL")
            with StoreReader(args.dir) as reader:
                body = reader.body(args.url)
            if body is None:
                print(f"focused: {args.url} is not stored in {args.dir}", file=sys.stderr)
                return 1
            sys.stdout.buffer.write(body)
            sys.stdout.buffer.flush()
            return 0
        if args.command == "migrate":
            moved = migrate(args.dir)
            print(f"focused: moved {moved} pages into segments in {args.dir}")
            return 0
        if args.repair:
            logger.addHandler(logging.NullHandler())  # each change is printed once, below
            for change in repair_store(args.dir):
                print(f"repaired: {change}")
        problems, live = check_store(args.dir, verify=args.verify)
        if live:
            print(
                f"focused: {args.dir} is open in another program (a crawl?): checked what"
                " it has committed, not the records it may be writing",
                file=sys.stderr,
            )
        print("\n".join(problems) if problems else "focused: the store is consistent")
        return 1 if problems else 0
    except (OSError, sqlite3.Error, StoreBusy, ValueError) as exc:
        print(f"focused: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
