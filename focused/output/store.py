"""Crash-safe store of fetched pages: one SQLite row per page, raw HTML gzipped on disk.

Layout in the output folder::

    pages.sqlite3            table ``pages``, one row per URL (url UNIQUE), WAL mode
    pages.lock               advisory lock: who may repair
    html/ab/cd/<sha256>.html.gz

File names come from the SHA-256 of the raw bytes (never from the URL), so identical
contents share one file. Order of a write: the file is written under a temporary name in
its final folder, then ``os.replace``-d into place, and only then is the row inserted
(rows are committed in batches, see ``commit_every``). A crash can therefore leave files
without rows (removed by :meth:`PageStore.repair`, which :meth:`PageStore.open` runs) but
never a row without its file.

Full-text index (:mod:`focused.output.fulltext`): with ``index`` on (the default), the
table ``pages_fts`` gets the page's title and main text (the record's ``text``, at most
``index_max_chars`` characters) in the same transaction as its row, so the two commit
together; :meth:`PageStore.open` indexes every row that has no index row yet (a store
written with the index off, or a lost row), from the stored HTML.

Several processes may share a store (a distributed crawl): each holds a shared lock while
open; :meth:`PageStore.repair` runs only when the exclusive lock can be taken, i.e. when
no other process has the store open and could own an uncommitted file.

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
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from focused.output import fulltext

try:  # POSIX advisory locks; without them repair always runs at open
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "COLUMNS",
    "PageStore",
    "StoreBusy",
    "content_hash",
    "file_path_for",
    "is_busy",
    "stored_pages",
]

DB_NAME = "pages.sqlite3"
LOCK_NAME = "pages.lock"
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
}
_BOOL_COLUMNS = ("relevant", "is_target")
_DATA_COLUMNS = tuple(c for c in COLUMNS if c not in ("content_hash", "file_path"))

logger = logging.getLogger(__name__)


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


def file_path_for(digest: str) -> str:
    """Path of a body file relative to the output folder: ``html/ab/cd/<sha256>.html.gz``."""
    return f"{HTML_DIR}/{digest[:2]}/{digest[2:4]}/{digest}.html.gz"


class PageStore:
    """SQLite + gzip-file page store in ``output_dir`` (see the module docstring).

    ``commit_every``: rows per transaction (1 = every page is durable once :meth:`add`
    returns; WAL with ``synchronous=NORMAL`` keeps that at thousands of rows/s).
    ``fsync``: fsync each file and its folder before its row is inserted, and use
    ``synchronous=FULL`` (survives power loss, not only process crashes).
    ``before_commit``: called right before every commit (the crawler commits its frontier
    journal there, so a stored page's outlinks are never lost on resume).
    ``after_commit``: called right after every commit with the URLs of the rows it made
    durable, in the order they were inserted (the crawler journals those pages as done).
    ``gzip_level``: compression level of the body files (1 = fastest, 9 = smallest).
    ``index``: keep the full-text index ``pages_fts`` (title and the record's ``text``,
    cut to ``index_max_chars`` characters) up to date, in each row's transaction.
    ``busy_timeout``: seconds a write waits for another connection's write lock before
    it raises :class:`StoreBusy` (nothing written: the caller tries again later; the
    crawler uses a short one, so that it does not freeze while another program holds the
    lock); ``open_timeout`` (default: the same) is that wait while opening. Readers never
    block a write (WAL). A failed write or commit leaves the open transaction for
    :meth:`abort` to roll back; a failed file write leaves no temporary file.

    :meth:`add` does a page in one call. A writer that wants the file work (hashing,
    compression, the write) off its own thread splits it: :meth:`lookup` (already
    stored?) and :meth:`add_written` on the database's thread, :meth:`write_body` in
    any thread (it touches only files, and files of the same content are the same file).
    The order stays file first, row second.
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
        busy_timeout: float = 30.0,
        open_timeout: float | None = None,
    ) -> None:
        if not 0 <= int(gzip_level) <= 9:
            raise ValueError(f"gzip_level must be 0-9, got {gzip_level!r}")
        self.output_dir = Path(output_dir)
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
        self.duplicates = 0
        self.stored = 0
        self.repaired: list[str] = []
        self.index = bool(index)
        self.index_max_chars = max(0, int(index_max_chars))
        self.reindexed = 0  # page rows indexed at open (they had no index row)
        self._last_rowid = 0
        self._pending = 0
        self._inserted: list[str] = []  # URLs of the rows in the open transaction
        self._lock_fh: Any = None

    # --- life cycle --------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.output_dir / DB_NAME

    @property
    def html_dir(self) -> Path:
        return self.output_dir / HTML_DIR

    def open(self, repair: bool = True) -> PageStore:
        """Create/open the database; remove orphan files when no one else has it open."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.html_dir.mkdir(exist_ok=True)
        conn = sqlite3.connect(self.db_path, isolation_level=None, timeout=self.open_timeout)
        try:
            # WAL: a reader (another program's, in a read transaction) never blocks a commit
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
            conn.execute(f"PRAGMA busy_timeout={int(self.open_timeout * 1000)}")
            cols = ", ".join(f"{name} {decl}" for name, decl in COLUMNS.items())
            conn.execute(f"CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, {cols})")
            conn.execute("CREATE INDEX IF NOT EXISTS pages_hash ON pages(content_hash)")
            # from now on a writer that holds the lock makes a write fail fast (StoreBusy)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        if self.index:
            fulltext.create(conn)
            self.reindexed = self.index_missing()
        exclusive = self._lock()
        if repair and exclusive:
            self.repair()
        self._share_lock()
        return self

    def index_missing(self) -> int:
        """Index, from their stored HTML, the page rows that have no index row; how many.

        One transaction that holds SQLite's write lock, so two processes opening the store
        at once do not index the same page twice.
        """
        db = self._db
        self.flush()
        db.execute("BEGIN IMMEDIATE")
        try:
            todo = fulltext.missing(db)
            for rowid, title, rel, encoding in todo:
                text = ""
                try:
                    body = gzip.decompress((self.output_dir / rel).read_bytes())
                    page_title, text = fulltext.html_text(body, encoding)
                    title = title or page_title
                except (OSError, EOFError, ValueError, gzip.BadGzipFile):  # no/bad file
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

    def _share_lock(self) -> None:
        if fcntl is not None and self._lock_fh is not None:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_SH)

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
        self._commit()
        self._pending = 0
        committed, self._inserted = self._inserted, []
        if self.after_commit is not None:
            self.after_commit(committed)

    def _commit(self) -> None:
        """``COMMIT`` the open transaction (its own method: a test can make it fail)."""
        self._db.execute("COMMIT")

    def abort(self) -> list[str]:
        """Roll back the open transaction (after a failed write or commit): its rows are
        not stored. The URLs whose rows were rolled back."""
        lost, self._inserted = self._inserted, []
        self.stored -= len(lost)
        self._pending = 0
        if self.conn is not None and self.conn.in_transaction:
            # SQLite may have rolled it back itself (SQLITE_FULL)
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        return lost

    def close(self) -> None:
        """Commit and close; the store can be opened again."""
        if self.conn is not None:
            self.flush()
            self.conn.close()
            self.conn = None
        if self._lock_fh is not None:
            self._lock_fh.close()  # releases the flock
            self._lock_fh = None

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
        page's main ``text`` (other keys are ignored). When it is
        a mutable mapping, its ``content_hash`` and ``file_path`` are filled in (with the
        stored row's values for a duplicate URL).
        """
        existing = self.lookup(record["url"])
        if existing is not None:
            self.duplicates += 1
            self._fill(record, *existing)
            return False
        digest, rel = self.write_body(body)
        return self.add_written(record, digest, rel)

    def lookup(self, url: str) -> tuple[str, str] | None:
        """``(content_hash, file_path)`` of ``url``'s row, or None when not stored."""
        return self._db.execute(
            "SELECT content_hash, file_path FROM pages WHERE url = ?", (url,)
        ).fetchone()

    def write_body(self, body: bytes, digest: str | None = None) -> tuple[str, str]:
        """Write ``body``'s file if it is not there yet; ``(content_hash, file_path)``.
        ``digest``: ``content_hash(body)`` when the caller has it already.

        Touches no database and no shared state but the set of known folders: safe to
        call from another thread than the one that uses the database.
        """
        if digest is None:
            digest = content_hash(body)
        rel = file_path_for(digest)
        self._write_file(rel, digest, body)
        return digest, rel

    def add_written(self, record: Mapping[str, Any], digest: str, rel: str) -> bool:
        """Insert the row of a page whose file :meth:`write_body` wrote; False (and the
        stored row's values filled in) when the URL is stored already."""
        row = {c: record.get(c) for c in _DATA_COLUMNS}
        row["content_hash"] = digest
        row["file_path"] = rel
        if not self._insert(row):
            self.duplicates += 1
            existing = self.lookup(record["url"])
            if existing is not None:
                self._fill(record, *existing)
            return False
        if self.index:  # same transaction as the row: they commit together
            fulltext.index_page(
                self._db,
                self._last_rowid,
                str(record.get("title") or ""),
                str(record.get("text") or ""),
                self.index_max_chars,
            )
        self.stored += 1
        self._fill(record, digest, rel)
        if self._pending >= self.commit_every:
            self.flush()
        return True

    @staticmethod
    def _fill(record: Mapping[str, Any], digest: str, rel: str) -> None:
        if hasattr(record, "__setitem__"):
            record["content_hash"] = digest  # type: ignore[index]
            record["file_path"] = rel  # type: ignore[index]

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
        if not self._pending:
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):  # another program writes: nothing done, try again later
                    raise StoreBusy(str(exc)) from exc
                raise
        values = []
        for name in COLUMNS:
            value = row.get(name)
            if name in _BOOL_COLUMNS and value is not None:
                value = int(bool(value))
            values.append(value)
        # NULL for a missing column would break NOT NULL: fall back to the default
        names = [n for n, v in zip(COLUMNS, values, strict=True) if v is not None]
        vals = [v for v in values if v is not None]
        cur = db.execute(
            f"INSERT OR IGNORE INTO pages ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(vals))})",
            vals,
        )
        self._pending += 1  # the transaction is open either way; flush ends it
        if cur.rowcount != 1:
            return False
        self._inserted.append(row["url"])
        self._last_rowid = cur.lastrowid or 0
        return True

    # --- reading -----------------------------------------------------------------
    def has(self, url: str) -> bool:
        return self._db.execute("SELECT 1 FROM pages WHERE url = ?", (url,)).fetchone() is not None

    def urls(self) -> list[str]:
        """Stored URLs in the order they were stored."""
        return [u for (u,) in self._db.execute("SELECT url FROM pages ORDER BY id")]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row as a dict (``relevant`` bool, ``is_target`` bool or None), by id."""
        cur = self._db.execute(f"SELECT id, {', '.join(COLUMNS)} FROM pages ORDER BY id")
        names = [d[0] for d in cur.description]
        for values in cur:
            row = dict(zip(names, values, strict=True))
            for name in _BOOL_COLUMNS:
                if row[name] is not None:
                    row[name] = bool(row[name])
            yield row

    def get(self, url: str) -> dict[str, Any] | None:
        """The row of ``url`` or None."""
        for row in self._rows_where("url = ?", (url,)):
            return row
        return None

    def _rows_where(self, where: str, args: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
        cur = self._db.execute(f"SELECT id, {', '.join(COLUMNS)} FROM pages WHERE {where}", args)
        names = [d[0] for d in cur.description]
        for values in cur:
            row = dict(zip(names, values, strict=True))
            for name in _BOOL_COLUMNS:
                if row[name] is not None:
                    row[name] = bool(row[name])
            yield row

    def body(self, url: str) -> bytes | None:
        """The raw bytes stored for ``url`` (decompressed) or None."""
        found = self._db.execute("SELECT file_path FROM pages WHERE url = ?", (url,)).fetchone()
        if found is None:
            return None
        return gzip.decompress((self.output_dir / found[0]).read_bytes())

    # --- consistency -------------------------------------------------------------
    def _disk_files(self) -> Iterator[tuple[Path, str | None]]:
        """(path, hash) of every body file, (path, None) of temp/unknown files."""
        if not self.html_dir.is_dir():
            return
        for dirpath, _dirs, files in os.walk(self.html_dir):
            for name in files:
                match = _HASH_FILE.match(name)
                yield Path(dirpath) / name, match.group(1) if match else None

    def check(self, verify: bool = False) -> list[str]:
        """Problems found, one line each (empty when consistent).

        Rows without files, files without rows (orphans, leftover temp files), duplicate
        URLs, file paths not derived from the hash; with ``verify`` also files whose
        decompressed bytes do not hash to their name.
        """
        db = self._db
        problems: list[str] = []
        for url, n in db.execute(
            "SELECT url, COUNT(*) FROM pages GROUP BY url HAVING COUNT(*) > 1"
        ):
            problems.append(f"duplicate url: {url} ({n} rows)")
        referenced: set[str] = set()
        for url, digest, rel in db.execute("SELECT url, content_hash, file_path FROM pages"):
            referenced.add(digest)
            if rel != file_path_for(digest):
                problems.append(f"bad file path: {url} -> {rel}")
            if not (self.output_dir / rel).is_file():
                problems.append(f"row without file: {url} -> {rel}")
        for path, digest in self._disk_files():
            rel = path.relative_to(self.output_dir).as_posix()
            if digest is None:
                problems.append(f"stray file: {rel}")
            elif digest not in referenced:
                problems.append(f"file without row: {rel}")
            elif verify and content_hash(gzip.decompress(path.read_bytes())) != digest:
                problems.append(f"corrupt file: {rel}")
        return problems

    def repair(self) -> list[str]:
        """Remove body files no row refers to and leftover temp files (a crash between
        writing a file and committing its row). Returns the removed relative paths.

        Call only when no other writer has the store open (:meth:`open` makes sure).
        """
        self.flush()
        referenced = {d for (d,) in self._db.execute("SELECT DISTINCT content_hash FROM pages")}
        removed: list[str] = []
        for path, digest in self._disk_files():
            is_tmp = digest is None and path.name.endswith(_TMP_SUFFIX)
            if is_tmp or (digest is not None and digest not in referenced):
                path.unlink(missing_ok=True)
                removed.append(path.relative_to(self.output_dir).as_posix())
        self.repaired = removed
        return removed


def stored_pages(output_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """``url``, ``relevant`` and ``is_target`` of every stored page, in storing order,
    read without opening the store for writing (empty when there is no store yet)."""
    db_path = Path(output_dir) / DB_NAME
    if not db_path.is_file():
        return []
    conn = sqlite3.connect(db_path, timeout=30.0)
    try:
        cur = conn.execute("SELECT url, relevant, is_target FROM pages ORDER BY id")
        return [
            {"url": u, "relevant": bool(r), "is_target": None if t is None else bool(t)}
            for u, r, t in cur
        ]
    except sqlite3.OperationalError:  # no table yet
        return []
    finally:
        conn.close()
