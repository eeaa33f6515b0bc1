"""An item pipeline that raises on every item (``tests.failing_pipeline.FailingPipeline``):
what a user's broken pipeline looks like to ``scrapy crawl``."""

from __future__ import annotations

from typing import Any


class FailingPipeline:
    def process_item(self, item: Any) -> Any:
        raise RuntimeError("this pipeline fails on every item")
