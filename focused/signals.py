"""Signals of the focused crawler (sent with ``crawler.signals.send_catch_log``).

Between a page store and the scheduler (a crash-safe crawl with ``JOBDIR``): any item
pipeline that stores pages durably can send them, not only
:class:`focused.pipelines.PageStorePipeline`; the scheduler never looks at the pipeline
classes.

``page_store_opened``: sent by a page store when it opens (in ``open_spider``), with
``lost`` (a list of ``str``): the URLs of pages its repair at open removed because their
bytes did not survive a crash (the scheduler journals them waiting again). Scrapy 2.19
opens the scheduler before the item pipelines
(``ExecutionEngine.open_spider_async``), so the scheduler hears it: from then on it
journals a fetched page as done only when :data:`pages_stored` names its URL. Without a
page store it journals a page as done once its item went through the pipelines
(``item_scraped``, ``item_dropped``, ``item_error``) or the callback failed
(``spider_error``).

``frontier_checkpoint``: sent by the page store right before it commits stored pages,
without arguments. The scheduler commits its frontier journal in the handler, so a page
that is durably stored never has its outlinks only in memory: after a crash, a resumed
crawl skips the page and still has its links. A handler that could not make the journal
durable (a full disk) returns (or raises) the error: the store then does not commit.

``pages_stored``: sent by the page store right after a commit, with ``urls`` (a list of
``str``): the URLs of the pages whose rows that commit made durable, and of pages found
already stored. The scheduler journals those pages as done.
"""

from scrapy.exceptions import DropItem

page_store_opened = object()


class NotStored(DropItem):
    """What a page store drops an item with when it did not store it and the page must be
    fetched again (the store failed): the scheduler keeps the page in flight. An item a
    pipeline drops with any other ``DropItem`` was deliberately not stored: its page is
    journaled as done (``focused/pages/dropped``) and not fetched again."""


frontier_checkpoint = object()

pages_stored = object()

#: ``frontier_rescore``: sent by :class:`focused.middlewares.FocusedPriorityMiddleware`
#: each time a strategy that rescores (``learning``) has learnt from a fetched page, with
#: ``rescorer`` (:class:`focused.frontier.memory.Rescorer`: evidence -> priorities, values). The
#: scheduler decides when to re-order its waiting links with it (``FOCUSED_RESCORE_EVERY``,
#: ``FOCUSED_RESCORE_BUDGET``, :class:`focused.frontier.rescoring.RescoreSchedule`); a
#: frontier that cannot (Redis) does not listen.
frontier_rescore = object()

#: ``page_skipped``: sent by the spider, with ``response``, for a fetched page it yields no
#: item for (not text). The scheduler journals the URL as done at once: with no item to wait
#: for, a crawl resumed after ``kill -9`` must not fetch it again.
page_skipped = object()

#: ``links_queued``: sent by :class:`focused.middlewares.FocusedPriorityMiddleware`, with
#: ``response``, once a fetched page's links are scored and handed to the engine, before
#: its item goes to the item pipelines. With ``FOCUSED_WAIT_FOR_LINKS`` the scheduler
#: counts a page against ``CONCURRENT_REQUESTS`` until then, not while its item is stored.
links_queued = object()

#: ``download_failed``: sent by :class:`focused.scheduler.DownloadFailureMiddleware` (a
#: downloader middleware at the lowest order) with ``request`` and ``exception`` when the
#: download of a request failed for good (not retried), whatever its callback and
#: errback. The scheduler moves the request to the error queue.
download_failed = object()

#: ``frontier_opened``: sent by :class:`focused.scheduler.FocusedScheduler` when it opens,
#: with ``drop_done`` (``str -> bool``): whether a link to that URL would be filtered as
#: done (fetched, or failed, and neither waiting nor in flight), counted as filtered
#: when it is. The spider then builds no request for it: the scheduler would drop it
#: (it never promotes a done URL). With it, ``drop_waiting`` (``(str, int) -> bool``, or
#: None when the frontier cannot tell): whether a link to that URL at that priority would
#: be filtered because the URL waits at a priority at least as high (no promotion),
#: counted as filtered when it is; the priority middleware then drops the scored request.
#: Only a scheduler whose done state is its own sends it (not the shared Redis frontier:
#: another worker may change it at any time).
frontier_opened = object()

#: ``frontier_waste_check``: sent by :class:`focused.scheduler.FocusedScheduler` and
#: :class:`focused.distributed.scheduler.RedisScheduler` when they open with
#: ``FOCUSED_WASTE_SHAPE_RECHECK`` on, without arguments. A handler (the focused spider
#: connects one in ``from_crawler``) returns a ``str -> bool``: whether a link to that URL
#: is of a URL shape learnt wasteful *by now* (:mod:`focused.web.urlshape`), asked when a
#: waiting link comes up; or ``None`` (no such judgement). With no handler, or none that
#: returns a callable, waiting links are not re-checked; with several, a URL is wasteful
#: when one of them says so. The predicate must be cheap (it runs on every pick) and must
#: not raise.
frontier_waste_check = object()

#: ``page_aliased``: sent by the spider, with ``response``, ``alias`` (a dict: ``url``,
#: ``fetched_at``, ``parent_url``, ``depth``, ``status``, ``is_target``), ``of`` (the URL
#: of the stored page whose near-duplicate it is) and ``main`` (whether it is that page's
#: canonical URL, to become its main URL), for a fetched page that is a near-duplicate of
#: a page stored before (:mod:`focused.web.neardup`). No item comes of it: a page store
#: records the URL as another URL of that page (no second body) and names it in
#: :data:`pages_stored` once committed, which journals it as done; without a page store
#: the scheduler journals it as done at once.
page_aliased = object()

#: ``aliases_stored``: sent by :class:`focused.pipelines.PageStorePipeline` right after
#: a commit that made aliases durable (after :data:`pages_stored`), with ``aliases``: the
#: ``alias`` dicts of :data:`page_aliased`, each with ``of`` added (a URL of the stored
#: page it was recorded against). The metrics count their URLs as found, and the page as
#: a target page once.
aliases_stored = object()
