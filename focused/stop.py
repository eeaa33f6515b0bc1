"""Stopping a crawl that cannot store what it fetches (a full disk, a locked database).

The page store (:class:`focused.pipelines.PageStorePipeline`) and the scheduler's frontier
journal (:class:`focused.scheduler.FocusedScheduler`) call :func:`stop_crawl` at their
first failed write: it logs one line, records it in the stat ``focused/store_failed``
and closes the spider with the finish reason :data:`STORE_FAILED`; the ``crawl`` command
then exits with status 1. Nothing is lost: a page is journaled as done only once its row
and file are committed, so a resume with the same command fetches every page that was not
stored.
"""

from __future__ import annotations

import errno
import logging
import weakref
from typing import Any

logger = logging.getLogger(__name__)

#: finish reason of a crawl stopped by :func:`stop_crawl`
STORE_FAILED = "store_failed"
#: finish reasons of a crawl on the shared Redis frontier that stopped before its end:
#: Redis unreachable for longer than FOCUSED_REDIS_LEASE, the frontier vanished from Redis
REDIS_UNREACHABLE = "redis_unreachable"
REDIS_FRONTIER_LOST = "redis_frontier_lost"
#: ... Redis refused the frontier's writes: it reached its maxmemory
REDIS_OUT_OF_MEMORY = "redis_out_of_memory"
#: ... Redis refused them for another reason (MISCONF, READONLY, NOPERM)
REDIS_REFUSED_WRITES = "redis_refused_writes"
#: finish reasons after which the ``crawl`` command exits with status 1
FAILED_REASONS = frozenset(
    (
        STORE_FAILED,
        REDIS_UNREACHABLE,
        REDIS_FRONTIER_LOST,
        REDIS_OUT_OF_MEMORY,
        REDIS_REFUSED_WRITES,
    )
)
#: stat holding the line :func:`stop_crawl` logged
STORE_FAILED_STAT = "focused/store_failed"

#: stat set when the page store was another crawl's at open (:func:`folder_taken`)
STORE_TAKEN_STAT = "focused/store/taken"

_stopped: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def folder_taken(crawler: Any) -> bool:
    """Whether another crawl had the output folder's page store when this one opened
    (:class:`focused.output.store.StoreInUse`): then this crawl writes nothing there,
    not even its record, metrics or stats."""
    stats = getattr(crawler, "stats", None)
    return bool(stats is not None and stats.get_value(STORE_TAKEN_STAT))


def stopped(crawler: Any) -> str | None:
    """The line :func:`stop_crawl` logged for ``crawler``, None while it was not called."""
    return None if crawler is None else _stopped.get(crawler)


def mark_failed(crawler: Any, line: str) -> None:
    """Record that the crawl of ``crawler`` failed (exit status 1) after ``line`` was
    logged elsewhere, without closing it (it is closing, or its component closes it):
    :func:`stop_crawl` then logs no second line."""
    if crawler is not None:
        _stopped.setdefault(crawler, line)


def stop_crawl(crawler: Any, what: str, where: object, exc: BaseException, then: str) -> None:
    """Log ``focused: error: cannot <what> in <where>: <exc>; the crawl stopped, resume with
    the same command <then>`` (or what :func:`_advice` says instead) once per crawler and
    close the spider (``store_failed``). Without a crawler (a pipeline used on its own)
    only logs."""
    advice = _advice(exc, then)
    line = f"focused: error: cannot {what} in {where}: {exc}; the crawl stopped, {advice}"
    if crawler is not None:
        if crawler in _stopped:
            return
        _stopped[crawler] = line
    logger.error(line)
    if crawler is None:
        return
    stats = getattr(crawler, "stats", None)
    if stats is not None:
        stats.set_value(STORE_FAILED_STAT, line)
    from twisted.internet import reactor

    # later, not now: the failure may come while the engine opens the spider or calls
    # the store from deep inside a signal handler
    reactor.callLater(0, _close, crawler)  # type: ignore[attr-defined]


#: what a crawl that found its output folder taken is told (:func:`_advice`): the
#: folder is the other crawl's, so the same command is refused there once that one ends
FOLDER_TAKEN_ADVICE = (
    "choose another FOCUSED_OUTPUT_DIR (the folder is the other crawl's: once it has"
    " finished, only a crawl of its topic and strategy adds to it, with"
    " -s FOCUSED_CONTINUE=True)"
)


def _advice(exc: BaseException, then: str) -> str:
    """How to go on after ``exc``: resume with the same command ``then``, unless another
    crawl had the page store, when this crawl stored nothing there to resume."""
    from focused.output.store import StoreInUse

    if isinstance(exc, StoreInUse):
        return f"having stored nothing there; {FOLDER_TAKEN_ADVICE}"
    return f"resume with the same command {then}"


def _close(crawler: Any) -> None:
    try:
        engine = crawler.engine
    except (AttributeError, RuntimeError):  # no engine (a component used on its own)
        return
    slot = getattr(engine, "_slot", None)
    if engine is None or getattr(engine, "spider", None) is None or slot is None:
        return
    if getattr(slot, "closing", None) is not None:
        return  # closing already (the failure came at the close): the stat says it
    from scrapy.utils.defer import deferred_from_coro

    deferred_from_coro(engine.close_spider_async(reason=STORE_FAILED))


def then_for(exc: BaseException) -> str:
    """How to say when to resume after ``exc``."""
    from focused.frontier.journal import JournalGone

    if isinstance(exc, JournalGone):
        return (
            "plus -s FOCUSED_CONTINUE=True (the JOBDIR is gone, so the frontier starts"
            " again from the seeds; no stored page is stored twice)"
        )
    text = str(exc)
    if getattr(exc, "errno", None) == errno.ENOSPC or "full" in text or "No space" in text:
        return "once there is room"
    if "locked" in text or "busy" in text:
        return "once the other program has released the database"
    return "once the problem is fixed"


try:  # the Scrapy extension below; this module's functions work without Scrapy too
    from scrapy.extensions.spiderstate import SpiderState as _ScrapySpiderState
except ImportError:  # pragma: no cover
    _ScrapySpiderState = object  # type: ignore[assignment,misc]


class SpiderState(_ScrapySpiderState):  # type: ignore[misc,valid-type]
    """Scrapy's ``SpiderState`` extension (``JOBDIR/spider.state``), written atomically:
    on a full disk the old file stays (Scrapy's own truncates it, and the next resume then
    fails to load it) and one warning is logged instead of a traceback."""

    def spider_closed(self, spider: Any) -> None:
        if not self.jobdir:
            return
        import pickle

        from focused.output.atomic import write_bytes

        try:
            write_bytes(self.statefn, pickle.dumps(getattr(spider, "state", {}), protocol=4))
        except OSError as exc:
            logger.warning("focused: could not save %s: %s", self.statefn, exc)
