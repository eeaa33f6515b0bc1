"""A feed exporter that raises on every item (``tests.failing_exporter.FailingExporter``):
a feed that opened but cannot be written, as a user's broken exporter or a disk that
fills during the crawl look to ``scrapy crawl``."""

from __future__ import annotations

from typing import Any

from scrapy.exporters import JsonLinesItemExporter
from scrapy.extensions.feedexport import FileFeedStorage


class FailingExporter(JsonLinesItemExporter):
    def export_item(self, item: Any) -> None:
        raise OSError("this exporter fails on every item")


class LateFailingExporter(JsonLinesItemExporter):
    """Takes two items, then fails on every later one (a disk that fills mid-crawl)."""

    taken = 0

    def export_item(self, item: Any) -> None:
        if self.taken >= 2:
            raise OSError(28, "No space left on device")
        self.taken += 1
        super().export_item(item)


class CloseFailingExporter(JsonLinesItemExporter):
    """Takes every item, and fails as it finishes the feed (its last write)."""

    def finish_exporting(self) -> None:
        raise OSError(28, "No space left on device")


class OneItemFailingExporter(JsonLinesItemExporter):
    """Refuses its second item with a ``TypeError`` (a field the JSON encoder cannot
    serialise, added by a user's pipeline), takes every other one."""

    seen = 0

    def export_item(self, item: Any) -> None:
        self.seen += 1
        if self.seen == 2:
            raise TypeError("Object of type object is not JSON serializable")
        super().export_item(item)


class ThirdBatchFailingStorage(FileFeedStorage):
    """A file storage whose third batch (a URI with ``-3.``) cannot be made: the next
    batch file of a batched feed that cannot be opened."""

    def __init__(self, uri: str, *, feed_options: dict[str, Any] | None = None) -> None:
        if "-3." in uri:
            raise OSError(28, "No space left on device")
        super().__init__(uri, feed_options=feed_options)
