"""``scrapy view URL``: Scrapy's command, where the URL asked for is the crawl's seed.

``view`` is ``fetch`` that opens the page in a browser: the project's ``fetch``
(:mod:`focused.commands.fetch`) with Scrapy's ``view`` output. The URL on the command
line may be on loopback (a sandbox served by ``scrapy sandbox``); a redirect from it to
another kind of internal address is still refused. It runs without ``JOBDIR``, as
``fetch`` does (one in settings.py is not used, ``-s JOBDIR=...`` is refused in one
line: :class:`focused.cli.StoresNothing`).
"""

from __future__ import annotations

from scrapy.commands.view import Command as ScrapyView

from focused.commands.fetch import Command as FocusedFetch


class Command(FocusedFetch, ScrapyView):
    pass
