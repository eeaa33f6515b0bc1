"""Crash-safe journal of the frontier under ``JOBDIR`` (SQLite in WAL mode).

Scrapy's own ``JOBDIR`` support writes the pending requests at a clean shutdown only; a
crawl killed with ``kill -9`` starts over. This journal records every change of the four
queues of the m-value rule (Liu, Xia & Xu 2010: waiting, in flight, done, error) as it
happens, one row per URL the crawl has queued::

    urls(fp, url, state, run, priority, value, seq, depth, m, hops, anchor, parent,
         flags, extra, stored)

``state`` is the queue the URL is in: 0 waiting, 1 in flight, 2 done, 3 error. Every row
is a seen URL, so the rows are also the seen-URL set. ``stored`` is 1 for a done URL the
page store said it holds (its row committed), 0 for one done without being stored (a
redirect, a page the spider skipped: noindex, a near-duplicate, not text): a resume puts
back to wait every stored one the store has lost (:func:`store_holds`). ``meta`` holds
small named blobs (the annealing state, the run counter, the crawl that has the journal
open: ``owner``).

Changes accumulate in one open transaction that :meth:`Journal.commit` ends; the
scheduler commits on each ``next_request`` batch, right before the page store commits a
page (:data:`focused.signals.frontier_checkpoint`) and at close. WAL with
``synchronous=NORMAL`` makes a committed transaction survive the death of the process
(not a power cut).

A failed write or commit (a full disk) breaks the journal: the open transaction is
rolled back, later writes are ignored and every :meth:`Journal.commit` raises
:class:`JournalError`, so nothing that relies on the journal being durable (the page
store's next commit) goes ahead. What was committed before stays valid: a resume re-queues
what was in flight and not stored.

A resumed crawl reads the rows back with :meth:`Journal.rows`. Rows still in flight were
being fetched when the process died: the scheduler re-queues them unless the page store
already holds their URL.

One crawl at a time: the journal holds SQLite's write lock from the moment it opens
(``BEGIN IMMEDIATE``, kept across commits). A second one raises :class:`JournalBusy`,
naming the crawl that has it (its ``owner``). :meth:`Journal.claim` opens it for this
process's crawl before anything else starts; :meth:`Journal.in_jobdir` then hands that
same journal to the scheduler.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focused.frontier.memory import Entry

try:
    import fcntl
except ImportError:  # not on Windows: the SQLite write lock alone
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DONE",
    "ERROR",
    "IN_FLIGHT",
    "WAITING",
    "Journal",
    "JournalBusy",
    "JournalError",
    "Row",
    "store_holds",
    "stored_urls",
]

WAITING, IN_FLIGHT, DONE, ERROR = 0, 1, 2, 3
STATES = ("waiting", "in_flight", "done", "error")
DB_NAME = "frontier.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    fp INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    state INTEGER NOT NULL,
    run INTEGER NOT NULL DEFAULT 0,
    priority INTEGER NOT NULL DEFAULT 0,
    value REAL NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,
    m REAL NOT NULL DEFAULT 0,
    hops INTEGER NOT NULL DEFAULT 0,
    anchor REAL NOT NULL DEFAULT 0,
    parent TEXT NOT NULL DEFAULT '',
    flags INTEGER NOT NULL DEFAULT 0,
    extra BLOB,
    stored INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
"""
_COLS = "fp, url, state, run, priority, value, seq, depth, m, hops, anchor, parent, flags, extra"


class JournalBusy(RuntimeError):
    """Another process is writing the same journal (two crawls on one ``JOBDIR``).

    ``owner``: the crawl that has it open, as it wrote itself in the journal (``pid``,
    ``host``, ``started``: seconds since the epoch), or ``None`` when that crawl no longer
    runs (or is not known): then another program holds the write lock."""

    def __init__(self, path: Path, owner: dict[str, object] | None, cause: object) -> None:
        who = "another program holds its write lock" if owner is None else describe_owner(owner)
        super().__init__(f"{path} is in use by another crawl ({who}; {cause})")
        self.path = path
        self.owner = owner
        self.cause = cause


class JournalError(RuntimeError):
    """The journal could not be written (e.g. ``[Errno 28] No space left on device``):
    changes since the last commit are not durable. ``cause``: the error."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(f"cannot write the frontier journal {path}: {cause}")
        self.cause = cause


class JournalGone(FileNotFoundError):
    """The journal's file was removed (its ``JOBDIR`` deleted) or replaced during the
    crawl: the frontier cannot be resumed from it."""


_WRITE_ERRORS = (sqlite3.Error, OSError)


@dataclass(slots=True)
class Row:
    """One journal row: the URL's queue, the run that last changed it, and its entry."""

    state: int
    run: int
    entry: Entry
    extra: bytes | None  # serialised ``entry.extra`` (the scheduler's format)


class Journal:
    """SQLite record of the frontier, the seen set and the annealing state (module doc)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _hold(self.path)
        try:
            self._open()
        except BaseException:
            _let_go(self._lock)
            raise

    def _open(self) -> None:
        self._db = sqlite3.connect(
            self.path, timeout=2.0, isolation_level=None, check_same_thread=False
        )
        #: the first write error, once the journal is broken (see :class:`JournalError`)
        self.failed: BaseException | None = None
        #: the journal was written before done rows said whether they were stored (its
        #: ``stored`` column was added now): the scheduler marks those the store holds
        self.upgraded = False
        self.closed = False
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute("BEGIN IMMEDIATE")  # one writer: fails if another crawl has it
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(urls)")}
            if "stored" not in columns:
                self._db.execute("ALTER TABLE urls ADD COLUMN stored INTEGER NOT NULL DEFAULT 0")
                self.upgraded = True
        except sqlite3.OperationalError as exc:
            self._db.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise JournalBusy(self.path, _owner(self.path), exc) from None
            raise JournalError(self.path, exc) from None
        st = os.stat(self.path)
        #: (device, inode) of the journal's file: a commit checks it is still the file at
        #: ``path`` (a ``JOBDIR`` deleted during the crawl: SQLite wrote on into the
        #: unlinked file, and the crawl could not be resumed)
        self._identity = (st.st_dev, st.st_ino)
        #: operations since the last commit
        self.pending = 0
        #: number of this run of the job (1 for a new job, +1 at each resume)
        self.run = int(self.get_meta("run") or b"0") + 1
        self.put_meta("run", str(self.run).encode())
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        self.put_meta("owner", json.dumps(owner).encode())
        self.commit()

    @classmethod
    def in_jobdir(cls, jobdir: str | os.PathLike[str]) -> Journal:
        """The journal of ``jobdir``: the one :meth:`claim` opened in this process (handed
        over once), else a new one."""
        claimed = _claimed.pop(_claim_key(jobdir), None)
        if claimed is not None and not claimed.closed:
            return claimed
        return cls(Path(jobdir) / DB_NAME)

    @classmethod
    def claim(cls, jobdir: str | os.PathLike[str], crawler: Any = None) -> Journal:
        """Open the journal of ``jobdir`` now for this process's crawl, before anything
        else of it starts, and keep it (its write lock) until :meth:`in_jobdir` hands it to
        the scheduler: another crawl of the same ``JOBDIR`` is refused from here on.
        Claiming it again in the same process gives the same journal, unless ``crawler``
        (the Scrapy crawler that claims it) is not the one that claimed it and that one
        still runs: two crawls of one process (a ``CrawlerProcess`` script) would share
        one frontier. Raises :class:`JournalBusy` (another crawl has it) or
        :class:`JournalError`."""
        key = _claim_key(jobdir)
        journal = _claimed.get(key)
        if journal is None or journal.closed:
            journal = _claimed[key] = cls(Path(jobdir) / DB_NAME)
            _claimants.pop(key, None)
        if crawler is not None:
            ref = _claimants.get(key)
            first = ref() if ref is not None else None
            if first is not None and first is not crawler and getattr(first, "crawling", False):
                raise JournalBusy(
                    journal.path, _owner(journal.path), "another crawl of this process has it"
                )
            _claimants[key] = weakref.ref(crawler)
        return journal

    # --- writes (inside the open transaction) ---------------------------------------
    def push(self, entry: Entry, extra: bytes | None = None) -> None:
        """Record ``entry`` as waiting (new, promoted or re-queued)."""
        self._write(
            f"INSERT OR REPLACE INTO urls ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                entry.fp,
                entry.url,
                WAITING,
                self.run,
                entry.priority,
                entry.value,
                entry.seq,
                entry.depth,
                entry.m,
                entry.hops,
                entry.anchor_relevance,
                entry.parent_url,
                entry.flags,
                extra,
            ),
        )

    def set_state(self, fp: int, state: int, stored: bool = False) -> None:
        """Move the URL of ``fp`` to queue ``state`` (a done/error row drops its extra);
        ``stored``: done because the page store committed the page."""
        if state >= DONE:
            sql = "UPDATE urls SET state=?, run=?, extra=NULL, stored=? WHERE fp=?"
        else:
            sql = "UPDATE urls SET state=?, run=?, stored=? WHERE fp=?"
        self._write(sql, (state, self.run, int(stored and state == DONE), fp))

    def mark_stored(self, fps: Iterable[int]) -> None:
        """Say of the done URLs of ``fps`` that the page store holds them (a journal
        written before done rows said so: :attr:`upgraded`)."""
        for fp in fps:
            self._write("UPDATE urls SET stored=1 WHERE fp=? AND state=?", (fp, DONE))

    def put_meta(self, key: str, value: bytes) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _write(self, sql: str, args: tuple[object, ...]) -> None:
        """One change in the open transaction; ignored once the journal is broken."""
        if self.failed is not None:
            return
        try:
            self._db.execute(sql, args)
        except _WRITE_ERRORS as exc:
            self._break(exc)
            return
        self.pending += 1

    def _break(self, exc: BaseException) -> None:
        """Remember the first write error and roll back what was not committed."""
        if self.failed is None:
            self.failed = exc
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except _WRITE_ERRORS:
            pass

    def commit(self) -> None:
        """Make every change so far durable, then open the next transaction.

        Raises :class:`JournalError` when that failed, now or before (the journal is
        broken: the changes since the last good commit are not durable)."""
        if self.failed is None:
            db = self._db
            try:
                self._check_in_place()
                db.execute("COMMIT")
                db.execute("BEGIN IMMEDIATE")  # keep the write lock: one crawl per JOBDIR
            except _WRITE_ERRORS as exc:
                self._break(exc)
            else:
                self.pending = 0
                return
        raise JournalError(self.path, self.failed)  # type: ignore[arg-type]

    def _check_in_place(self) -> None:
        """:class:`JournalGone` when the file at :attr:`path` is no longer the journal
        this one opened (removed with its ``JOBDIR``, or replaced)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            raise JournalGone(f"{self.path} was removed or replaced during the crawl")

    def close(self) -> None:
        """Commit and close (also checkpoints the WAL into the database file). Raises
        :class:`JournalError` (after closing) when the journal is broken."""
        failed = self.failed
        if failed is None and self._db.in_transaction:
            try:
                self._db.execute("COMMIT")
            except _WRITE_ERRORS as exc:
                self._break(exc)
                failed = exc
        self._db.close()
        self.closed = True
        _let_go(self._lock)
        self._lock = None
        if failed is not None:
            raise JournalError(self.path, failed)

    # --- reads ----------------------------------------------------------------------
    def get_meta(self, key: str) -> bytes | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def state_of(self, fp: int) -> tuple[int, int] | None:
        """``(state, run)`` of the URL of ``fp``, ``None`` when never queued."""
        row = self._db.execute("SELECT state, run FROM urls WHERE fp=?", (fp,)).fetchone()
        return None if row is None else (row[0], row[1])

    def fingerprints(self) -> Iterator[int]:
        """Every URL ever queued in this job (the seen set)."""
        for (fp,) in self._db.execute("SELECT fp FROM urls"):
            yield fp

    def rows(self, state: int) -> Iterator[Row]:
        """The rows in queue ``state``, in FIFO (``seq``) order."""
        cur = self._db.execute(f"SELECT {_COLS} FROM urls WHERE state=? ORDER BY seq", (state,))
        for fp, url, st, run, prio, value, seq, depth, m, hops, anchor, parent, flags, extra in cur:
            entry = Entry(
                url=url,
                fp=fp,
                priority=prio,
                value=value,
                depth=depth,
                m=m,
                hops=hops,
                anchor_relevance=anchor,
                parent_url=parent,
                flags=flags,
                seq=seq,
            )
            yield Row(st, run, entry, None if extra is None else bytes(extra))

    def done_urls(self, stored: bool) -> Iterator[tuple[int, str]]:
        """``(fp, url)`` of the done URLs the page store said it stored (``stored``), or of
        those done without being stored."""
        sql = "SELECT fp, url FROM urls WHERE state=? AND stored=?"
        yield from self._db.execute(sql, (DONE, int(stored)))

    def counts(self) -> dict[int, int]:
        """Number of rows per state."""
        got = dict(self._db.execute("SELECT state, COUNT(*) FROM urls GROUP BY state"))
        return {s: got.get(s, 0) for s in range(len(STATES))}


def stored_urls(db_path: str | os.PathLike[str] | None, urls: list[str]) -> set[str]:
    """Which of ``urls`` the page store at ``db_path`` already holds (table ``pages``, or
    ``aliases``: a near-duplicate recorded as another URL of a stored page).

    Read-only; no path, an absent file or an absent table holds nothing.
    """
    if db_path is None or not urls or not Path(db_path).exists():
        return set()
    path = Path(db_path)
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found: set[str] = set()
        # one statement a URL: the alias part runs only when no page row has it
        twice = _has_aliases(db)
        query = "SELECT 1 FROM pages WHERE url=?" + (
            " UNION ALL SELECT 1 FROM aliases WHERE url=? LIMIT 1" if twice else ""
        )
        for url in urls:
            if db.execute(query, (url, url) if twice else (url,)).fetchone():
                found.add(url)
        return found
    except sqlite3.OperationalError:
        return set()
    finally:
        db.close()


def store_holds(
    db_path: str | os.PathLike[str],
    pairs: Iterable[tuple[int, str]],
    held: bool = True,
    chunk: int = 500,
) -> list[int] | None:
    """The fingerprints of the ``(fp, url)`` ``pairs`` whose URL the page store at
    ``db_path`` holds (``held``; in the table ``pages`` or ``aliases``), or does not hold
    (``held=False``). An absent file, or one without the table, holds none; ``None``
    when the store cannot be read (then nothing can be said). Read-only, ``chunk`` URLs
    per query."""
    path = Path(db_path)
    if not path.exists():
        return [] if held else [fp for fp, _ in pairs]
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name='pages'").fetchone():
            return [] if held else [fp for fp, _ in pairs]
        chosen: list[int] = []
        batch: list[tuple[int, str]] = []
        aliases = _has_aliases(db)
        for pair in pairs:
            batch.append(pair)
            if len(batch) >= chunk:
                chosen += _held(db, batch, held, aliases)
                batch = []
        if batch:
            chosen += _held(db, batch, held, aliases)
        return chosen
    except sqlite3.Error:
        return None
    finally:
        db.close()


def _has_aliases(db: sqlite3.Connection) -> bool:
    """Whether the store has the table ``aliases`` (one from before it has none)."""
    return bool(db.execute("SELECT 1 FROM sqlite_master WHERE name='aliases'").fetchone())


def _held(
    db: sqlite3.Connection, batch: list[tuple[int, str]], held: bool, aliases: bool = False
) -> list[int]:
    marks = ",".join("?" * len(batch))
    urls = [url for _, url in batch]
    found = {u for (u,) in db.execute(f"SELECT url FROM pages WHERE url IN ({marks})", urls)}
    if aliases:
        found.update(
            u for (u,) in db.execute(f"SELECT url FROM aliases WHERE url IN ({marks})", urls)
        )
    return [fp for fp, url in batch if (url in found) == held]


#: journals :meth:`Journal.claim` opened in this process, by their JOBDIR
_claimed: dict[str, Journal] = {}
#: the crawler that claimed each of them (weakly), by their JOBDIR
_claimants: dict[str, weakref.ref[Any]] = {}


def _claim_key(jobdir: str | os.PathLike[str]) -> str:
    return str(Path(jobdir).resolve())


def _hold(path: Path) -> int | None:
    """Take the journal's lock file (``<journal>.lock``, ``flock``), held for as long as
    the journal is open: the SQLite write lock alone is let go for an instant at each
    commit (``COMMIT`` then ``BEGIN IMMEDIATE``), where a second crawl of the same
    ``JOBDIR`` could take it and make the first one's next write wait on it. Raises
    :class:`JournalBusy` when another crawl holds it; None where there is no ``flock``."""
    if fcntl is None:
        return None
    lock = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise JournalError(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:  # EWOULDBLOCK: another crawl holds it
        os.close(fd)
        raise JournalBusy(path, _owner(path), f"{lock} is locked ({exc.strerror})") from None
    except OSError:  # no flock on this file system (NFS, FUSE): SQLite's lock alone
        os.close(fd)
        return None
    return fd


def _let_go(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # releases the flock


def _owner(path: Path) -> dict[str, object] | None:
    """The crawl that has the journal at ``path`` open, as it wrote itself there, when it
    still runs (on another host: as written); ``None`` when it does not, or is unknown."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='owner'").fetchone()
        finally:
            db.close()
        owner = json.loads(bytes(row[0])) if row else None
    except (sqlite3.Error, OSError, ValueError, TypeError):
        return None
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return None
    if owner.get("host") == socket.gethostname() and not _alive(owner["pid"]):
        return None
    return owner


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def describe_owner(owner: dict[str, object]) -> str:
    """``pid 123, started 2026-12-04 14:45:47`` (and ``on <host>`` when not this one)."""
    started = owner.get("started")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
        if isinstance(started, int | float)
        else "at an unknown time"
    )
    host = owner.get("host")
    where = f" on {host}" if host and host != socket.gethostname() else ""
    return f"pid {owner.get('pid')}{where}, started {when}"
