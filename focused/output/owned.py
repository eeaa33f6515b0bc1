"""The files a crawl keeps in its output folder, which no export or report overwrites.

``scrapy export --output out/crawl/pages.sqlite3 --dir out/crawl`` replaced the page
store with JSON lines. :func:`crawl_file` names the crawl's file an output path would
replace, after symbolic links, relative paths, ``..`` and hard links: the page store and
SQLite's files beside it, the locks, the WARC segments (and the earlier ``html/``
files), the metrics, summary, curve, stats, settings, report, ``crawl.json``...

Pure module: no Scrapy import.
"""

from __future__ import annotations

import os
from pathlib import Path

from focused.output.segments import SEGMENT_DIR
from focused.output.store import DB_NAME, HTML_DIR, LOCK_NAME, WRITER_LOCK_NAME

__all__ = ["CRAWL_NAMES", "crawl_file"]

#: SQLite's files beside a database: its write-ahead log, shared memory, rollback journal
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")

#: the files of a crawl's output folder (and of a ``JOBDIR`` kept in it)
CRAWL_NAMES = frozenset(
    {
        *(f"{db}{suffix}" for db in (DB_NAME, "frontier.sqlite3") for suffix in SQLITE_SUFFIXES),
        LOCK_NAME,
        WRITER_LOCK_NAME,
        "crawl.json",
        "metrics.csv",
        "summary.json",
        "curve.png",
        "stats.json",
        "settings.json",
        "report.html",
        "sandbox.port",
        "redis-outbox.pickle",
        "redis-outbox.pickle.lock",
        "redis-worker.json",
        "learning-model.npz",
        "spider.state",
    }
)

#: the folders of a crawl's output folder whose every file is the crawl's
CRAWL_DIRS = (SEGMENT_DIR, HTML_DIR)


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def crawl_file(
    folder: str | os.PathLike[str], path: str | os.PathLike[str], *, allowed: str = ""
) -> Path | None:
    """The file of a crawl that writing ``path`` would replace, or None.

    A crawl's file is one of :data:`CRAWL_NAMES` (but ``allowed``) or a file under
    :data:`CRAWL_DIRS`, in ``folder`` or in another crawl's output folder (one holding a
    page store). ``path`` is compared after its links are followed, and by its file
    identity too when it exists (a hard link to the page store)."""
    real = _real(path)
    crawls = {_real(folder)}
    for parent in (real.parent, real.parent.parent):
        if (parent / DB_NAME).exists():
            crawls.add(parent)
    for crawl in crawls:
        if real.parent == crawl and real.name in CRAWL_NAMES and real.name != allowed:
            return crawl / real.name
        if any(real.is_relative_to(crawl / sub) for sub in CRAWL_DIRS):
            return real
    if not real.is_file():
        return None
    for crawl in crawls:
        for name in CRAWL_NAMES - {allowed}:
            own = crawl / name
            try:
                if own.is_file() and os.path.samefile(own, real):
                    return own
            except OSError:
                continue
    return None
