"""``scrapy bench``: Scrapy's quick benchmark, on a bench site of its own on loopback.

Scrapy's ``bench`` serves a site of links on port 8998 of every interface and follows
them for ten seconds with the project's settings. Here the site is served on 127.0.0.1
only, on a free port (:mod:`focused.web.benchserver`): nothing listens beyond the
machine, and a program that holds port 8998 is not crawled instead. The project refuses
loopback addresses unless a seed is on loopback, and the benchmark's spider has no
seeds, so the bench site is the seed (``FOCUSED_SEEDS``, unless the user set it), as a
topic's seeds are for ``scrapy crawl focused``. It stores nothing, so it runs without
``JOBDIR``, as ``scrapy fetch`` does (one in settings.py is not used, ``-s JOBDIR=...``
is refused in one line: :class:`focused.cli.StoresNothing`). A Scrapy setting its
getter cannot read (``-s CLOSESPIDER_PAGECOUNT=abc``) is one line and exit status 2,
checked before the server starts (:func:`focused.config.check_scrapy_settings`), as
``scrapy crawl`` does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from scrapy.commands.bench import Command as ScrapyBench
from scrapy.commands.bench import _BenchSpider
from scrapy.utils.test import get_testenv

from focused import config
from focused.cli import StoresNothing, fail, seed_from_command_line


@contextmanager
def bench_site() -> Iterator[str]:
    """The URL of a bench site served on loopback by a child process while in the block."""
    proc = subprocess.Popen(  # noqa: S603 - this interpreter, a module of the project
        [sys.executable, "-u", "-m", "focused.web.benchserver"],
        stdout=subprocess.PIPE,
        env=get_testenv(),
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("Bench server at http://"):
            raise RuntimeError(f"the bench server did not start: {line!r}")
        yield line.rpartition(" ")[2]
    finally:
        proc.kill()
        proc.wait()


class Command(StoresNothing, ScrapyBench):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            config.check_scrapy_settings(self.settings)
        except config.ConfigError as exc:
            fail(str(exc), self.settings)
            self.exitcode = 2
            return
        with bench_site() as url:
            seed_from_command_line(self.settings, url)
            spider = type(_BenchSpider.__name__, (_BenchSpider,), {"baseurl": url})
            assert self.crawler_process is not None
            self.crawler_process.crawl(spider, total=100000)
            self.crawler_process.start()
