"""An item pipeline that drops the pages whose path starts with ``/drop``
(``tests.dropping_pipeline.DropSome``): a user's filter placed before the page store."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem


class DropSome:
    def process_item(self, item: Any) -> Any:
        if urlsplit(ItemAdapter(item)["url"]).path.startswith("/drop"):
            raise DropItem("not wanted")
        return item
