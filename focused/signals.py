"""Signals of the focused crawler (sent with ``crawler.signals.send_catch_log``).

``frontier_checkpoint``: sent by :class:`focused.pipelines.PageStorePipeline` right
before it commits stored pages, without arguments. The scheduler commits its frontier
journal in the handler, so a page that is durably stored never has its outlinks only in
memory: after a crash, a resumed crawl skips the page and still has its links.
"""

frontier_checkpoint = object()
