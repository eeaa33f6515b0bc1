"""A feed exporter that raises on every item (``tests.failing_exporter.FailingExporter``):
a feed that opened but cannot be written, as a user's broken exporter or a disk that
fills during the crawl look to ``scrapy crawl``."""

from __future__ import annotations

from typing import Any

from scrapy.exporters import JsonLinesItemExporter


class FailingExporter(JsonLinesItemExporter):
    def export_item(self, item: Any) -> None:
        raise OSError("this exporter fails on every item")
