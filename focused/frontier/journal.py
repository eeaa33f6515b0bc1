"""Crash-safe journal of the frontier under ``JOBDIR`` (SQLite in WAL mode).

Scrapy's own ``JOBDIR`` support writes the pending requests at a clean shutdown only; a
crawl killed with ``kill -9`` starts over. This journal records every change of the four
queues of the m-value rule (Liu, Xia & Xu 2010: waiting, in flight, done, error) as it
happens, one row per URL the crawl has queued::

    urls(fp, url, state, run, priority, value, seq, depth, m, hops, anchor, parent,
         flags, extra)

``state`` is the queue the URL is in: 0 waiting, 1 in flight, 2 done, 3 error. Every row
is a seen URL, so the rows are also the seen-URL set. ``meta`` holds small named blobs
(the annealing state, the run counter). Changes accumulate in one open transaction that
:meth:`Journal.commit` ends; the scheduler commits on each ``next_request`` batch, right
before the page store commits a page (:data:`focused.signals.frontier_checkpoint`) and
at close. WAL with ``synchronous=NORMAL`` makes a committed transaction survive the
death of the process (not a power cut).

A resumed crawl reads the rows back with :meth:`Journal.load`. Rows still in flight were
being fetched when the process died: the scheduler re-queues them unless the page store
already holds their URL.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from focused.frontier.memory import Entry

__all__ = [
    "DONE",
    "ERROR",
    "IN_FLIGHT",
    "WAITING",
    "Journal",
    "JournalBusy",
    "Row",
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
    extra BLOB
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
"""
_COLS = "fp, url, state, run, priority, value, seq, depth, m, hops, anchor, parent, flags, extra"


class JournalBusy(RuntimeError):
    """Another process is writing the same journal (two crawls on one ``JOBDIR``)."""


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
        self._db = sqlite3.connect(
            self.path, timeout=2.0, isolation_level=None, check_same_thread=False
        )
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute("BEGIN IMMEDIATE")  # one writer: fails if another crawl has it
        except sqlite3.OperationalError as exc:
            self._db.close()
            raise JournalBusy(f"{self.path} is in use by another crawl ({exc})") from None
        #: operations since the last commit
        self.pending = 0
        #: number of this run of the job (1 for a new job, +1 at each resume)
        self.run = int(self.get_meta("run") or b"0") + 1
        self.put_meta("run", str(self.run).encode())
        self.commit()

    @classmethod
    def in_jobdir(cls, jobdir: str | os.PathLike[str]) -> Journal:
        return cls(Path(jobdir) / DB_NAME)

    # --- writes (inside the open transaction) ---------------------------------------
    def push(self, entry: Entry, extra: bytes | None = None) -> None:
        """Record ``entry`` as waiting (new, promoted or re-queued)."""
        self._db.execute(
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
        self.pending += 1

    def set_state(self, fp: int, state: int) -> None:
        """Move the URL of ``fp`` to queue ``state`` (a done/error row drops its extra)."""
        if state >= DONE:
            sql = "UPDATE urls SET state=?, run=?, extra=NULL WHERE fp=?"
        else:
            sql = "UPDATE urls SET state=?, run=? WHERE fp=?"
        self._db.execute(sql, (state, self.run, fp))
        self.pending += 1

    def put_meta(self, key: str, value: bytes) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        self.pending += 1

    def commit(self) -> None:
        """Make every change so far durable, then open the next transaction."""
        db = self._db
        db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE")  # keep the write lock: one crawl per JOBDIR
        self.pending = 0

    def close(self) -> None:
        """Commit and close (also checkpoints the WAL into the database file)."""
        if self._db.in_transaction:
            self._db.execute("COMMIT")
        self._db.close()

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

    def counts(self) -> dict[int, int]:
        """Number of rows per state."""
        got = dict(self._db.execute("SELECT state, COUNT(*) FROM urls GROUP BY state"))
        return {s: got.get(s, 0) for s in range(len(STATES))}


def stored_urls(db_path: str | os.PathLike[str] | None, urls: list[str]) -> set[str]:
    """Which of ``urls`` the page store at ``db_path`` (table ``pages``) already holds.

    Read-only; no path, an absent file or an absent table holds nothing.
    """
    if db_path is None or not urls or not Path(db_path).exists():
        return set()
    path = Path(db_path)
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found: set[str] = set()
        for url in urls:
            if db.execute("SELECT 1 FROM pages WHERE url=?", (url,)).fetchone():
                found.add(url)
        return found
    except sqlite3.OperationalError:
        return set()
    finally:
        db.close()
