"""Signals of the focused crawler (sent with ``crawler.signals.send_catch_log``).

``frontier_checkpoint``: sent by :class:`focused.pipelines.PageStorePipeline` right
before it commits stored pages, without arguments. The scheduler commits its frontier
journal in the handler, so a page that is durably stored never has its outlinks only in
memory: after a crash, a resumed crawl skips the page and still has its links.

``frontier_rescore``: see below.
"""

frontier_checkpoint = object()

#: ``frontier_rescore``: sent by :class:`focused.middlewares.FocusedPriorityMiddleware`
#: each time a strategy that rescores (``learning``) has learnt from a fetched page, with
#: ``rescorer`` (:class:`focused.frontier.memory.Rescorer`: evidence -> priorities, values). The
#: scheduler decides when to re-order its waiting links with it (``FOCUSED_RESCORE_EVERY``,
#: ``FOCUSED_RESCORE_BUDGET``); a frontier that cannot (Redis) does not listen.
frontier_rescore = object()

#: ``page_skipped``: sent by the spider, with ``response``, for a fetched page it yields no
#: item for (not text). The scheduler journals the URL as done at once: with no item to wait
#: for, a crawl resumed after ``kill -9`` must not fetch it again.
page_skipped = object()
