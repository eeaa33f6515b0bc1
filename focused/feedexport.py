"""Scrapy's feed exporter (``-o``/``-O``, ``FEEDS``), stopped in one line when a feed
cannot be written.

A feed whose disk fills up during the crawl made Scrapy's ``FeedExporter`` raise in its
``item_scraped`` handler for every later item: an ERROR line with a traceback each (95
ERROR lines and 60 tracebacks in a 100-page crawl), two more tracebacks at the close, and
the crawl ran on to its end although no further item reached the feed. Here the first
write that fails stops the crawl as a page store that cannot write does
(:func:`focused.stop.stop_crawl`: one line, finish reason ``store_failed``, exit status
1; the pages stored so far stay stored, a resume with ``JOBDIR`` goes on from them); the
failed feed's files are closed quietly, and every other feed is finished and stored
whole, with every item scraped.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from scrapy.extensions.feedexport import FeedExporter, FeedSlot
from scrapy.extensions.postprocessing import PostProcessingManager

from focused.stop import STORE_FAILED_STAT, mark_failed, stop_crawl, then_for

logger = logging.getLogger(__name__)


class FocusedFeedExporter(FeedExporter):
    """``FeedExporter`` (replaces it in ``EXTENSIONS``, same order) whose first failed
    write stops the crawl in one line instead of a traceback per item.

    A failure is the failed feed's alone: the other feeds go on taking every item (those
    still in the pipelines while the crawl closes too) and are finished and stored at
    the close as usual. The line names the feed that failed. A feed whose last write
    fails as the crawl closes (JSON's closing ``]``, the flush of its buffer on a full
    disk) is the same line, and the crawl's exit status 1; Scrapy left that exception
    to asyncio ("Task exception was never retrieved", with a traceback) and the crawl
    ended with status 0. An exception that is no ``OSError`` (an item a feed's
    encoding or encoder refuses) loses that item in that feed alone, logged as Scrapy
    logs it; a batch whose next batch cannot start is finished whole."""

    #: the first failure of a feed, None while every feed is written
    failed: BaseException | None = None

    def _failed_slots(self) -> dict[int, FeedSlot]:
        slots: dict[int, FeedSlot] | None = self.__dict__.get("_focused_failed")
        if slots is None:
            slots = self.__dict__["_focused_failed"] = {}
        return slots

    def _fail(self, slot: FeedSlot, exc: BaseException, *, whole: bool = False) -> None:
        """The feed of ``slot`` could not be written: no further item goes to it, and
        the crawl stops in one line that names it (the first failed feed's). ``whole``:
        the slot's batch is whole and closed as usual, the next one could not start."""
        if not whole:
            self._failed_slots()[id(slot)] = slot
        if self.failed is None:
            self.failed = exc
            if not self.__dict__.get("_focused_closing"):
                if whole:
                    what, where = "start the next batch of the feed", slot.uri_template
                else:
                    what, where = "write the feed", slot.uri
                stop_crawl(self.crawler, what, where, exc, then_for(exc))
                return
            # the crawl has ended: nothing to stop or resume, the feed alone is cut short
            line = (
                f"focused: error: cannot finish the feed in {slot.uri}: {exc}; it is cut"
                " short (the crawl's pages are stored whole)"
            )
            logger.error(line)
            mark_failed(self.crawler, line)
            if self.crawler.stats is not None:
                self.crawler.stats.set_value(STORE_FAILED_STAT, line)
        else:
            logger.warning("focused: the feed %s could not be written either: %s", slot.uri, exc)

    def _schedule_slot_close(self, slot: FeedSlot, spider: Any) -> Any:
        # the slots themselves are kept, so that no other slot takes one's id
        closing: dict[int, FeedSlot] = self.__dict__.setdefault("_focused_scheduled", {})
        closing[id(slot)] = slot
        return super()._schedule_slot_close(slot, spider)

    def item_scraped(self, item: Any, spider: Any) -> None:
        """Scrapy's export of ``item`` to each feed in turn, one feed at a time, so that
        what one feed raises is that feed's alone. An ``OSError`` (a full disk) fails the
        feed and stops the crawl (:meth:`_fail`). Any other exception (an item the
        feed's encoding or serialiser refuses, a user's exporter that raises) loses the
        item in that feed only, as in Scrapy: the feed and the others go on, and the
        first such exception is raised once every feed had the item, for Scrapy's
        signal dispatcher to log ("Error caught on signal handler") as it logs
        Scrapy's own exporter's."""
        failed = self._failed_slots()
        slots, kept = self.slots, []
        done = 0  # slots handled: the others go back as they were whatever happens
        error: Exception | None = None
        try:
            for slot in slots:
                if id(slot) in failed:
                    kept.append(slot)
                else:
                    now, raised = self._export(slot, item, spider)
                    kept += now
                    error = error or raised
                done += 1
        finally:
            self.slots = kept + slots[done:]
        if error is not None:
            raise error

    def _export(
        self, slot: FeedSlot, item: Any, spider: Any
    ) -> tuple[list[FeedSlot], Exception | None]:
        """Scrapy's export of ``item`` to the feed of ``slot`` alone: the slots the feed
        goes on with, and the exception that is no ``OSError`` it raised, if any."""
        count = slot.itemcount
        self.slots = [slot]
        try:
            super().item_scraped(item, spider)
        except Exception as exc:
            if slot.itemcount > count:
                # the item is in the batch, which is full and whole: the next batch could
                # not be started. The batch is finished and stored as usual; the feed
                # takes no further item
                if id(slot) not in self.__dict__.get("_focused_scheduled", ()):
                    self._schedule_slot_close(slot, spider)
                if not isinstance(exc, OSError):
                    return [], exc
                self._fail(slot, exc, whole=True)
                return [], None
            if not isinstance(exc, OSError):
                return [slot], exc  # the item is lost in this feed alone
            self._fail(slot, exc)
            return [slot], None
        return self.slots, None  # the slot, or the next batch's

    async def close_spider(self, spider: Any) -> None:
        self.__dict__["_focused_closing"] = True
        await super().close_spider(spider)

    async def _close_slot(self, slot: FeedSlot, spider: Any) -> None:
        if id(slot) not in self._failed_slots():
            try:
                if slot.itemcount:  # the last write (JSON's "]"), flushed: a full disk shows
                    slot.finish_exporting()
                    if slot.file is not None and not isinstance(slot.file, PostProcessingManager):
                        slot.file.flush()
                await super()._close_slot(slot, spider)
                return
            except OSError as exc:
                self._fail(slot, exc)
        # the write failed and its line was logged (focused/store_failed): close the file
        # without another traceback, nor a second line from the crawl command
        with contextlib.suppress(Exception):
            if slot.file is not None:
                self._get_file(slot).close()
