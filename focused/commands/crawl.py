"""``scrapy crawl`` with the focused spider's input checked first and its end explained.

Same command as Scrapy's, except that a spider name Scrapy does not know is one line
(``focused: error: unknown spider ...``) and exit status 2, not a ``KeyError``
traceback, and that for the ``focused`` spider (or a subclass of it:
its topic from ``-a topic=``, else its class attribute ``topic``; its settings with its
``custom_settings``, ``start_urls`` and ``allowed_domains``,
:meth:`focused.spiders.focused.FocusedSpider.update_settings`):

- a bad topic, a bad ``FOCUSED_*`` setting, an empty ``FOCUSED_OUTPUT_DIR``, a
  ``JOBDIR`` or ``FOCUSED_OUTPUT_DIR`` that cannot be created or written, a
  ``FOCUSED_OUTPUT_DIR`` that holds the pages of a crawl of another topic or strategy
  or of an earlier crawl this one does not resume (no ``JOBDIR``, or not the one it
  was crawled with: :mod:`focused.output.record`; both allowed with
  ``FOCUSED_CONTINUE``), a ``FOCUSED_OUTPUT_DIR`` whose page store another crawl has
  open (its ``pages.lock``), a ``JOBDIR`` of a crawl of another topic, strategy or web
  (its ``crawl.json``, written here the first time a crawl takes it), a ``JOBDIR``
  another crawl is using (its frontier journal is taken here, before Scrapy starts:
  :func:`focused.config.claim_jobdir`), a sandbox that cannot be served on its port
  (:class:`focused.web.sites.SandboxError`), or labels at a URL out of the crawl's scope
  or that cannot be fetched (:class:`focused.web.sites.LabelsError`) prints one line
  (``focused: error: ...``) and exits with status 2 before anything is fetched,
  instead of a traceback;
- ``ITEM_PIPELINES`` without the page store (:class:`focused.pipelines.PageStorePipeline`)
  logs one WARNING at start (the spider does, :func:`focused.habits.missing_components`:
  a script's crawl too): nothing will be stored; so do ``SPIDER_MIDDLEWARES``
  without the priority middleware (the strategy would score no link),
  ``EXTENSIONS`` without the crawl's output extension (no report) and
  ``DOWNLOADER_MIDDLEWARES`` without the address filter;
- a crawl of the real web that fetched no page because no host could be reached (DNS
  or connection failures, :mod:`focused.network`) prints one line and exits with
  status 1;
- a Ctrl-C (or SIGTERM) that stops Scrapy before the crawl is under way (while the
  real web is probed, the sandbox generated, the spider opened: Scrapy then stops
  without closing the spider) prints one line and exits with status 130 (128 + SIGINT;
  143 for SIGTERM). A Ctrl-C later closes the crawl as Scrapy does
  (the frontier is saved in ``JOBDIR``), with status 0 as before. A second Ctrl-C (or
  SIGTERM) up to "Spider closed" goes to Scrapy's forced shutdown, wrapped here: the
  child drawing the curve or the report is interrupted and none starts any more
  (:func:`focused.output.child.interrupt`), Scrapy stops its reactor, and one line says
  that the crawl stopped at once and how many pages the store keeps (whole: the store
  is safe against ``kill -9``), status 130 (143 for SIGTERM). From the "Spider closed"
  line on (or
  ``engine_stopped``, sent right after it, when that line is not logged) every output
  is written: a further Ctrl-C is ignored while the process exits, with the status of
  the finished crawl;
- a crawl whose items all failed (every item that reached the pipelines raised in one
  of them, ``item_error``, or in a feed exporter) prints one line and exits with
  status 1; so does a crawl in which a feed could not be written or stored (Scrapy's
  ``feedexport/failed_count/*`` stats, or the feed exporter failing when it opens or
  closes a feed). A feed write that fails with ``OSError`` (a full disk) stops the crawl
  at once (:mod:`focused.feedexport`, finish reason ``store_failed``). Items dropped on
  purpose (``DropItem``) are no failure.
- a crawl stopped because it could not store its pages (finish reason
  ``store_failed``, :mod:`focused.stop`) exits with status 1.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError
from scrapy.extensions.feedexport import FeedExporter
from scrapy.settings import Settings

from focused import config
from focused.cli import (
    EMPTY_OUTPUT_DIR,
    CheckedLogging,
    fail,
    keep_start_error,
    say,
    unknown_spider,
)
from focused.defaults import get
from focused.outcome import (
    failed_to_store,
    memory_limit_line,
    nothing_fetched_line,
    start_error_line,
)
from focused.output import child
from focused.output.record import (
    in_use,
    stored_count,
    write_jobdir_record,
)
from focused.stop import FOLDER_TAKEN_ADVICE, stopped
from focused.web.sites import WebError
from focused.web.topics import TopicError, load_topic


class ItemFailures(logging.Handler):
    """Counts the items that failed in the pipelines (``item_error``) and in the feed
    exporters, and the feeds that failed to open, close or be stored.

    Scrapy calls :class:`~scrapy.extensions.feedexport.FeedExporter` from signal
    handlers and only logs what they raise ("Error caught on signal handler", from
    ``scrapy.utils.signal``): this handler, on that logger, counts those records.
    """

    LOGGER = "scrapy.utils.signal"

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.pipeline_errors = 0
        self.export_errors = 0  # items a feed exporter raised on (item_scraped)
        self.feed_errors = 0  # a feed exporter raising when a feed opens or closes

    def connect(self, crawler: Any) -> None:
        crawler.signals.connect(self._item_error, signal=signals.item_error)
        logging.getLogger(self.LOGGER).addHandler(self)

    def disconnect(self) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self)

    def _item_error(self, *args: Any, **kwargs: Any) -> None:
        self.pipeline_errors += 1

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, dict) else {}
        receiver = args.get("receiver")
        if not isinstance(getattr(receiver, "__self__", None), FeedExporter):
            return
        if getattr(receiver, "__name__", "") == "item_scraped":
            self.export_errors += 1
        else:
            self.feed_errors += 1

    def problem(self, stats: dict[str, Any]) -> str | None:
        """What went wrong with the crawl's items, in one line; None when nothing did."""
        scraped = int(stats.get("item_scraped_count") or 0)  # through every pipeline
        produced = scraped + self.pipeline_errors
        delivered = scraped - self.export_errors  # ... and written by every feed
        errors = self.pipeline_errors + self.export_errors
        if errors and produced and delivered <= 0:
            return f"every item failed in the pipelines/exporters ({errors} errors); see the log"
        failed = self.feed_errors + sum(
            int(v or 0) for k, v in stats.items() if k.startswith("feedexport/failed_count/")
        )
        if failed:
            return f"a feed could not be written or stored ({failed} failures); see the log"
        return None


class ClosedLine(logging.Handler):
    """Calls ``then`` when Scrapy's engine logs "Spider closed", the crawl's last line:
    every output is written by then. A handler of the engine's own logger runs before
    the log's handlers (on the root logger), so ``then`` has run once the line shows."""

    LOGGER = "scrapy.core.engine"

    def __init__(self, then: Callable[[], None]) -> None:
        super().__init__(logging.INFO)
        self.then = then

    def connect(self) -> None:
        logging.getLogger(self.LOGGER).addHandler(self)

    def disconnect(self) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, str) and record.msg.startswith("Spider closed"):
            self.then()


class Command(CheckedLogging, ScrapyCrawl):
    #: the settings the focused crawl runs with (the project's, its spider's, then ``-s``)
    crawl_settings: Settings

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        spidercls = self._focused_spidercls(args)
        if spidercls is None:
            self._run_other(args, opts)
            return
        if len(args) > 1:
            raise UsageError("running 'scrapy crawl' with more than one spider is not supported")
        self.run_focused(spidercls, opts)

    def run_focused(self, spidercls: Any, opts: argparse.Namespace) -> None:
        """Check the input of a crawl of ``spidercls`` (the focused spider or a subclass
        of it), then crawl it (also for ``scrapy runspider`` of a file that holds one)."""
        # the settings the crawl will run with: the project's, the spider's
        # custom_settings (and what its class declares), then -s
        settings = self.crawl_settings = self.settings.copy()
        try:
            spidercls.update_settings(settings)
        except config.ConfigError as exc:  # custom_settings Scrapy cannot set
            fail(str(exc))
            self.exitcode = 2
            return
        output = str(get(settings, "FOCUSED_OUTPUT_DIR"))
        if not output.strip():  # Path("") is the current folder: the checkout
            fail(EMPTY_OUTPUT_DIR)
            self.exitcode = 2
            return
        try:
            config.check_spider_args(opts.spargs)
            topic = load_topic(
                spidercls.topic_argument(opts.spargs.get("topic")), config.topics_dir(settings)
            )
            config.validate(settings, topic, spider=str(spidercls.name))
        except (TopicError, config.ConfigError) as exc:
            fail(str(exc))
            self.exitcode = 2
            return
        problem = self._output_problem(topic.name)
        if problem:
            fail(problem)
            self.exitcode = 2
            return
        try:  # from here on no other crawl can take JOBDIR (the journal's write lock)
            config.claim_jobdir(settings)
        except config.ConfigError as exc:
            fail(str(exc))
            self.exitcode = 2
            return
        problem = self._store_busy()
        if problem:
            fail(problem)
            self.exitcode = 2
            return
        jobdir = settings.get("JOBDIR")
        if jobdir:
            write_jobdir_record(
                jobdir,
                topic=topic.name,
                strategy=str(get(settings, "FOCUSED_STRATEGY")),
                web=str(get(settings, "FOCUSED_WEB")),
                output_dir=output,
                sandbox=config.sandbox_made(settings),
            )
        self._crawl_focused(spidercls, opts)

    def _run_other(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's crawl of a spider that is not the focused spider; a name Scrapy does
        not know is one line, exit status 2 (Scrapy's is a ``KeyError`` traceback)."""
        if len(args) == 1 and self.crawler_process is not None:
            problem = unknown_spider(self.crawler_process.spider_loader, args[0])
            if problem:
                fail(problem)
                self.exitcode = 2
                return
        super().run(args, opts)

    def _focused_spidercls(self, args: list[str]) -> Any:
        """The class of the spider to crawl when it is the focused spider or a subclass
        of it (whose input is checked and whose end is explained here); None for any
        other spider, and for a name Scrapy does not know."""
        from focused.spiders.focused import FocusedSpider  # not for every scrapy command

        if not args or self.crawler_process is None:
            return None
        try:
            spidercls = self.crawler_process.spider_loader.load(args[0])
        except KeyError:
            return None
        return spidercls if issubclass(spidercls, FocusedSpider) else None

    def _output_problem(self, topic: str) -> str | None:
        """Why this crawl may not go into its ``JOBDIR`` and ``FOCUSED_OUTPUT_DIR``, in one
        line; None when it may (:func:`focused.config.output_problem`)."""
        return config.output_problem(self.crawl_settings, topic)

    def _store_busy(self) -> str | None:
        """One line when another crawl has the page store of ``FOCUSED_OUTPUT_DIR`` open
        (checked once this crawl holds its ``JOBDIR``: a second crawl of one ``JOBDIR`` is
        told that first, naming the other crawl)."""
        output = str(get(self.crawl_settings, "FOCUSED_OUTPUT_DIR"))
        # the workers of a distributed crawl share one store on purpose
        if str(get(self.crawl_settings, "FOCUSED_FRONTIER")) == "memory" and in_use(output):
            return (
                f"another crawl (or program) has the page store in {output} open;"
                f" {FOLDER_TAKEN_ADVICE}"
            )
        return None

    def _crawl_focused(self, spidercls: Any, opts: argparse.Namespace) -> None:
        process = self.crawler_process
        assert process is not None
        self._closed = False
        self._opened = False
        self._web_error: WebError | None = None
        self._finished = False
        self._signals: list[int] = []
        self._forced: int | None = None  # the signal that forced the stop
        self._wrap_signal_handlers(process)
        crawler = self._focused_crawler = self._create_crawler(spidercls)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        # the crawl has closed: its "Spider closed" line, or engine_stopped right after it
        crawler.signals.connect(self._crawl_closed, signal=signals.engine_stopped)
        closed_line = ClosedLine(self._crawl_closed)
        closed_line.connect()
        failures = ItemFailures()
        failures.connect(crawler)
        try:
            # a WebError raised while the spider is made (the sandbox's port taken, the
            # labels out of scope) is kept for one line after Scrapy stops, instead of
            # its traceback
            keep_start_error(
                process.crawl(crawler, **opts.spargs), (WebError,), self._keep_web_error
            )
            process.start()
        except KeyboardInterrupt:  # a Ctrl-C before Scrapy's handlers were installed
            self._signals.append(signal.SIGINT)
        finally:
            failures.disconnect()
            closed_line.disconnect()
            if self._signals:  # a Ctrl-C more, as the process exits, changes nothing
                _ignore_shutdown_signals()
        if self._forced is not None:  # a second Ctrl-C before the spider had closed
            say(self._stopped_at_once(self._forced))
            self.exitcode = 128 + int(self._forced)  # 130 for SIGINT, 143 for SIGTERM
            return
        if process.bootstrap_failed:
            self.exitcode = 1
        if self._web_error is not None:
            exc = self._web_error
            fail(start_error_line(exc, self.crawl_settings))
            self.exitcode = 2
            return
        if not self._closed:  # Scrapy stopped before the spider closed
            if self._signals:
                say(self._interrupted())
                self.exitcode = 128 + int(self._signals[-1])  # 130 (SIGINT), 143 (SIGTERM)
            return
        self._check_nothing_fetched(crawler)
        stats = crawler.stats.get_stats() if crawler.stats else {}
        problem = failures.problem(stats) or memory_limit_line(stats, self.crawl_settings)
        if problem:
            fail(problem)
            self.exitcode = 1
        elif stopped(crawler):  # a failure logged as the spider closed (a feed's last write)
            self.exitcode = 1

    def _wrap_signal_handlers(self, process: Any) -> None:
        """Scrapy's own handlers, wrapped: the first Ctrl-C noted, the second one
        (Scrapy's forced shutdown) noted and the crawl's children interrupted."""
        for name in ("_signal_shutdown", "_signal_shutdown_reactorless"):
            handler = getattr(process, name, None)
            if callable(handler):  # Scrapy's Ctrl-C handlers (installed once it runs)
                setattr(process, name, self._noting(handler))
        for name in ("_signal_kill", "_signal_kill_reactorless"):
            handler = getattr(process, name, None)
            if callable(handler):  # Scrapy's second Ctrl-C (installed by the first)
                setattr(process, name, self._forcing(handler))

    def _noting(self, handler: Callable[[int, Any], None]) -> Callable[[int, Any], None]:
        def noted(signum: int, frame: Any) -> None:
            self._signals.append(signum)
            handler(signum, frame)

        return noted

    def _forcing(self, handler: Callable[[int, Any], None]) -> Callable[[int, Any], None]:
        """Scrapy's forced shutdown, ``handler``, with the crawl's children interrupted
        first (a child drawing would hold the reactor until it ends); ignored from the
        "Spider closed" line on (everything is written, the reactor is stopping)."""

        def forced(signum: int, frame: Any) -> None:
            if self._finished:
                return
            self._signals.append(signum)
            if self._forced is None:
                self._forced = signum
            child.interrupt()
            handler(signum, frame)

        return forced

    def _spider_closed(self, spider: Any) -> None:
        self._closed = True

    def _crawl_closed(self) -> None:
        self._finished = True

    def _spider_opened(self, spider: Any) -> None:
        self._opened = True

    def _nothing_fetched(self) -> bool:
        stats = (
            self._focused_crawler.stats.get_stats()
            if self._focused_crawler.stats is not None
            else {}
        )
        return not self._opened or not stats.get("response_received_count")

    def _interrupted(self) -> str:
        """The line for a crawl that signals stopped before its spider closed: during
        start-up (nothing fetched yet), or otherwise before it had closed."""
        if self._nothing_fetched():
            return "focused: interrupted during start-up; nothing was fetched"
        return f"focused: interrupted before the crawl closed; {self._kept()}"

    def _stopped_at_once(self, signum: int) -> str:
        """The line for a crawl that a second signal stopped before its spider closed."""
        if self._nothing_fetched():
            return "focused: interrupted during start-up; nothing was fetched"
        why = "Ctrl-C" if signum == signal.SIGINT else _name(signum)
        return f"focused: stopped at once by a second {why}; {self._kept()}"

    def _kept(self) -> str:
        """What a crawl stopped before it closed keeps, and how it goes on."""
        output = str(get(self.crawl_settings, "FOCUSED_OUTPUT_DIR"))
        kept = (
            f"the {stored_count(output)} pages stored in {output} are kept whole (the metrics,"
            " curve or report may be missing or stale)"
        )
        if self.crawl_settings.get("JOBDIR"):
            return f"{kept}; resume with the same command"
        return f"{kept}; without JOBDIR the crawl cannot resume"

    def _keep_web_error(self, exc: BaseException) -> None:
        assert isinstance(exc, WebError)
        self._web_error = exc

    def _check_nothing_fetched(self, crawler: Any) -> None:
        """A crawl that stored nothing because no download succeeded: one line, exit
        status 1 (:func:`focused.outcome.nothing_fetched_line`); not after a Ctrl-C."""
        line = nothing_fetched_line(crawler, self.crawl_settings)
        if line is None or self._signals:
            return
        fail(line)
        self.exitcode = 1

    def _create_crawler(self, spidercls: Any) -> Any:
        crawler = super()._create_crawler(spidercls)

        def closed(reason: str) -> None:  # the store, the journal or Redis failed
            if failed_to_store(crawler, reason):
                self.exitcode = 1

        crawler.signals.connect(closed, signal=signals.spider_closed, weak=False)
        return crawler


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _ignore_shutdown_signals() -> None:
    """Once Scrapy has stopped a crawl that was signalled, a Ctrl-C or SIGTERM more is
    ignored while the process exits.

    Scrapy's handlers stay installed after its reactor stops, and Python sets them back
    to the default action when it finalizes (a signal then ends the process silently,
    status 130 or 143, in the last ~0.2 s); ignored signals are left ignored, so the
    status is the crawl's. (A program that runs the command in its own process and goes
    on afterwards ignores them too.)
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
