"""Scrapy's feed exporter (``-o``/``-O``, ``FEEDS``), stopped in one line when a feed
cannot be written.

A feed whose disk fills up during the crawl made Scrapy's ``FeedExporter`` raise in its
``item_scraped`` handler for every later item: an ERROR line with a traceback each (95
ERROR lines and 60 tracebacks in a 100-page crawl), two more tracebacks at the close, and
the crawl ran on to its end although no further item reached the feed. Here the first
write that fails stops the crawl as a page store that cannot write does
(:func:`focused.stop.stop_crawl`: one line, finish reason ``store_failed``, exit status
1; the pages stored so far stay stored, a resume with ``JOBDIR`` goes on from them); the
feed's files are closed quietly.
"""

from __future__ import annotations

import contextlib
from typing import Any

from scrapy.extensions.feedexport import FeedExporter, FeedSlot

from focused.stop import stop_crawl, then_for


class FocusedFeedExporter(FeedExporter):
    """``FeedExporter`` (replaces it in ``EXTENSIONS``, same order) whose first failed
    write stops the crawl in one line instead of a traceback per item."""

    failed: BaseException | None = None

    def item_scraped(self, item: Any, spider: Any) -> None:
        if self.failed is not None:
            return
        try:
            super().item_scraped(item, spider)
        except OSError as exc:
            self.failed = exc
            where = ", ".join(str(uri) for uri in self.feeds) or "its feed"
            stop_crawl(self.crawler, "write the feed", where, exc, then_for(exc))

    async def _close_slot(self, slot: FeedSlot, spider: Any) -> None:
        if self.failed is None:
            await super()._close_slot(slot, spider)
            return
        # the write failed and its line was logged (focused/store_failed): close the file
        # without another traceback, nor a second line from the crawl command
        with contextlib.suppress(Exception):
            if slot.file is not None:
                self._get_file(slot).close()
