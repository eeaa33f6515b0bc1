"""An item pipeline whose ``close_spider`` takes 30 s
(``tests.slow_close_pipeline.SlowClosePipeline``): a crawl that is slow to close, for a
second Ctrl-C while it closes."""

from __future__ import annotations

from typing import Any

from twisted.internet import reactor
from twisted.internet.task import deferLater


class SlowClosePipeline:
    def process_item(self, item: Any) -> Any:
        return item

    def close_spider(self) -> Any:
        return deferLater(reactor, 30, lambda: None)  # type: ignore[arg-type]
