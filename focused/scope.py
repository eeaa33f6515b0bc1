"""Which spiders the project's focused components serve.

The project's ``settings.py`` enables its components for every spider run inside the
project: ``scrapy crawl focused``, but also ``scrapy fetch``, ``scrapy shell``,
``scrapy bench`` and ``scrapy runspider`` of a spider of the user's own. Some of them
only make sense for the focused spider:

- :class:`focused.middlewares.FocusedPriorityMiddleware` scores links with the spider's
  strategy (``spider.strategy``), which only the focused spider has: it raises
  :class:`~scrapy.exceptions.NotConfigured` for a spider without one;
- :class:`focused.pipelines.PageStorePipeline`, :class:`focused.pipelines.MetricsPipeline`
  and :class:`focused.extensions.CrawlOutputExtension` write the crawl output folder
  (``FOCUSED_OUTPUT_DIR``): another spider's run would add its items to the last focused
  crawl's page store and overwrite its summary, metrics, stats and report.

For any other spider, and for a command that stores nothing (``scrapy fetch``, ``shell``,
``view`` or ``parse`` of the focused spider: :func:`focused.cli.stores_nothing`), these
three raise :class:`~scrapy.exceptions.NotConfigured` in ``from_crawler``
(:func:`require_focused_spider`): ``scrapy parse`` of one page wrote a page store,
summary, metrics, stats and report into the output folder, over a crawl's. Scrapy leaves
out what raises it: that spider's requests and items pass through unchanged. Scrapy
builds every component once the crawl's spider *class* is known (``crawler.spidercls``;
``scrapy shell`` builds them before the spider itself), so the check reads the class
attribute :data:`ATTRIBUTE`,
``focused_crawl``: :class:`focused.spiders.focused.FocusedSpider` sets it, and so may a
spider of the user's own that yields the focused spider's items and wants them stored
and measured.

The project's other components (the address filter, robots.txt, robustness and network
middlewares, the downloader, the scheduler, the garbage-collector tuning) serve any spider.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from focused.cli import stores_nothing

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["ATTRIBUTE", "focused_spider", "require_focused_spider"]

logger = logging.getLogger(__name__)

#: the spider class attribute that asks for the focused components (True)
ATTRIBUTE = "focused_crawl"


def focused_spider(crawler: Crawler) -> bool:
    """Whether the crawl's spider (or, before it exists, its class) asks for the focused
    components."""
    spider = crawler.spider if crawler.spider is not None else crawler.spidercls
    return getattr(spider, ATTRIBUTE, False) is True


def require_focused_spider(crawler: Crawler, component: str) -> None:
    """Raise :class:`~scrapy.exceptions.NotConfigured` (without a message: Scrapy then
    leaves ``component`` out silently; one DEBUG line says why) unless the crawl's spider
    is a focused one, run by a command that stores (not ``scrapy parse``)."""
    if stores_nothing(crawler.settings):
        logger.debug("focused: %s left out: this command stores nothing", component)
        raise NotConfigured
    if focused_spider(crawler):
        return
    logger.debug(
        "focused: %s left out: the spider %s is not a focused spider",
        component,
        getattr(crawler.spidercls, "__name__", crawler.spidercls),
    )
    raise NotConfigured
