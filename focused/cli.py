"""What the project's commands share: the one error line (:func:`fail`), a start error
kept for it (:func:`keep_start_error`, ``scrapy crawl`` and ``scrapy parse``), the URL
on the command line as the seed (``scrapy fetch``, ``scrapy shell``), and the commands
over a crawl's output folder (``scrapy search``, ``scrapy report``, ``scrapy export``).

Kept outside :mod:`focused.commands`: Scrapy lists every command class defined in a
module of ``COMMANDS_MODULE`` as a command named after its module.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES
from twisted.internet.defer import Deferred

from focused.defaults import get

#: the one line for an empty ``FOCUSED_OUTPUT_DIR`` (``Path("")`` is the current folder)
EMPTY_OUTPUT_DIR = (
    "FOCUSED_OUTPUT_DIR is empty; name the folder for the crawl's outputs (default out/crawl)"
)


def fail(message: str, settings: Any = None) -> None:
    """The one line of a command that stops on bad input: ``focused: error: ...``, on
    stderr and in the log file (:func:`say`)."""
    say(f"focused: error: {message}", settings)


def say(line: str, settings: Any = None) -> None:
    """``line`` on stderr, and in ``LOG_FILE`` when Scrapy logs to one: a user who reads
    only the log file learns why the command stopped. The log file is Scrapy's root
    handler once the crawler process exists (the line is written through it, at
    ERROR, whatever ``LOG_LEVEL``: it says why the command ended); before that (a bad
    ``LOG_LEVEL``), ``settings``' ``LOG_FILE`` is appended to. Without a log file,
    Scrapy logs to stderr: the line is printed once (not at all when stderr cannot be
    written: ``2> /dev/full``, a closed pipe)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr)
    from scrapy.utils import log as scrapy_log

    handler = getattr(scrapy_log, "_scrapy_root_handler", None)
    record = logging.LogRecord("focused", logging.ERROR, __file__, 0, line, None, None)
    if getattr(handler, "_focused_on_stderr", False):
        return  # its log file failed: the log goes to stderr, where the line is
    if isinstance(handler, logging.FileHandler):
        handler.handle(record)  # its filters and format, not its level
        handler.flush()
        return
    if handler is not None or settings is None or not settings.get("LOG_FILE"):
        return
    try:
        own = logging.FileHandler(
            settings["LOG_FILE"], mode="a", encoding=settings.get("LOG_ENCODING") or "utf-8"
        )
    except OSError:
        return  # the line is on stderr
    try:
        own.setFormatter(
            logging.Formatter(
                fmt=settings.get("LOG_FORMAT"), datefmt=settings.get("LOG_DATEFORMAT")
            )
        )
        own.handle(record)
    finally:
        own.close()


def guard_log_file(**_: Any) -> None:
    """Scrapy's log file handler (``LOG_FILE``) made to survive a disk that fills up
    during the crawl: Python's ``FileHandler`` printed a "--- Logging error ---" traceback
    on stderr for every later log line (414 of them, 21,900 lines, in a short crawl),
    and the log was lost without a word. Now its first failed write prints one line on
    stderr and the rest of the log goes to stderr (the record that failed first): the
    crawl goes on, its pages are stored as before. Connected to ``spider_opened``, once
    the crawler has installed its handler."""
    from scrapy.utils import log as scrapy_log

    handler = scrapy_log.get_scrapy_root_handler()
    if not isinstance(handler, logging.FileHandler) or getattr(handler, "_focused", False):
        return
    handler._focused = True  # type: ignore[attr-defined]

    def handle_error(record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError) or handler.stream is None:
            logging.FileHandler.handleError(handler, record)
            return
        broken = handler.stream
        again = getattr(handler, "_focused_on_stderr", False)  # stderr itself failed
        handler.stream = _stderr_copy() if not again else open(os.devnull, "w")  # noqa: SIM115
        handler._focused_on_stderr = True  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):
            broken.close()  # its unwritten buffer would fail again at the close
        if again:
            return  # the log is lost: nowhere left to write it
        with contextlib.suppress(OSError, ValueError):
            print(
                f"focused: cannot write the log file {handler.baseFilename}:"
                f" {exc.strerror or exc}; the crawl goes on and logs to stderr instead",
                file=sys.stderr,
            )
        handler.emit(record)

    handler.handleError = handle_error  # type: ignore[method-assign]


def _stderr_copy() -> Any:
    """A stream on a copy of stderr's descriptor (closing the handler closes only it),
    or the null device when stderr has none."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8")
    except (OSError, ValueError, AttributeError):
        return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the handler's stream


def drop_disabled_log_file(settings: Any) -> None:
    """``LOG_FILE`` dropped when ``LOG_ENABLED`` is off (``--nolog``): Scrapy opens the
    log file whatever ``LOG_ENABLED`` says, so ``--nolog`` with a ``LOG_FILE`` (from
    settings.py, or ``-s``) wrote the whole log there, and one in a folder that does not
    exist was a ``FileNotFoundError`` traceback. Set at ``-s``'s priority (or the
    setting's own, when higher)."""
    try:
        enabled = settings.getbool("LOG_ENABLED", True)
    except ValueError:
        return  # refused as a Scrapy setting of the wrong type
    if enabled or not settings.get("LOG_FILE"):
        return
    priority = max(settings.getpriority("LOG_FILE") or 0, SETTINGS_PRIORITIES["cmdline"])
    settings.set("LOG_FILE", None, priority=priority)


def check_log_level_or_exit(settings: Any) -> None:
    """``LOG_LEVEL``, ``LOG_FORMAT`` and ``LOG_FILE`` checked before Scrapy sets up its
    logging from them (a bad level, or a log file in a folder that does not exist, would
    be a traceback there; a bad format, one per log line), and ``SPIDER_LOADER_CLASS`` and
    ``SPIDER_MODULES`` before Scrapy loads them: one line and exit status 2."""
    from focused import config

    drop_disabled_log_file(settings)
    try:
        config.check_log_level(settings)
        config.check_log_format(settings)
    except config.ConfigError as exc:
        fail(str(exc), settings)
        sys.exit(2)
    try:  # Scrapy loads them as it makes the crawler process, right after this
        config.check_spider_loader(settings)
    except config.ConfigError as exc:
        fail(str(exc), settings)
        sys.exit(2)
    try:
        config.check_log_file(settings)
    except config.ConfigError as exc:
        fail(str(exc))  # on stderr only: the log file is what is refused
        sys.exit(2)


def check_script_logging(settings: Any) -> None:
    """For a ``CrawlerProcess`` that a script of one's own makes with the project's
    settings (called from the project's add-on before the process sets its logging up):
    ``LOG_FILE`` in a folder that does not exist or cannot be written, a bad
    ``LOG_LEVEL`` or ``LOG_FORMAT`` are the crawl command's one line and exit status 2
    (:func:`check_log_level_or_exit`), not the ``FileNotFoundError`` (or
    ``ValueError``) traceback of Scrapy's ``configure_logging``. A command of the
    project has checked them already; a ``CrawlerRunner`` sets no logging up."""
    if _COMMAND[0]:
        return
    from scrapy.crawler import CrawlerProcessBase

    frame = sys._getframe(1)
    for _ in range(8):  # update_pre_crawler_settings <- load_pre_crawler_settings <- __init__
        if frame is None:
            return
        if isinstance(frame.f_locals.get("self"), CrawlerProcessBase):
            break
        frame = frame.f_back  # type: ignore[assignment]
    else:
        return
    try:
        installs = settings.getbool("LOG_INSTALL_ROOT_HANDLER", True)
    except ValueError:
        installs = True
    if installs:
        check_log_level_or_exit(settings)


#: set (at the command's priority) by the commands that run the focused spider but store
#: nothing (``scrapy fetch``, ``shell``, ``view`` and ``parse``): the spider then does not
#: check ``FOCUSED_OUTPUT_DIR`` and ``JOBDIR`` as a crawl's, the components that write the
#: output folder are left out (:mod:`focused.scope`), and the sandbox's port is recorded
#: nowhere (internal, not a user setting)
STORES_NOTHING = "_FOCUSED_STORES_NOTHING"


def stores_nothing(settings: Any) -> bool:
    """Whether the command running the crawl stores nothing: :data:`STORES_NOTHING` as
    those commands set it (at the command's priority; not from ``-s`` or settings.py)."""
    return bool(
        settings.getbool(STORES_NOTHING)
        and settings.getpriority(STORES_NOTHING) == SETTINGS_PRIORITIES["command"]
    )


class CheckedLogging:
    """Mixin for a Scrapy command of the project: ``LOG_LEVEL`` and ``LOG_FILE`` checked
    before Scrapy sets its logging up from them (:func:`check_log_level_or_exit`). It
    marks the process as run by a command of the project (:func:`script_crawl`)."""

    settings: Any

    def process_options(self, args: list[str], opts: Any) -> None:
        _COMMAND[0] = True
        spargs = getattr(opts, "spargs", None)  # -a NAME=VALUE as written, before Scrapy's dict
        written = [str(x) for x in spargs] if isinstance(spargs, list) else []
        try:
            super().process_options(args, opts)  # type: ignore[misc]
        except UsageError:  # "Invalid -s value": which one, and why
            from focused import config

            try:
                config.check_set_options(self.settings, list(getattr(opts, "set", []) or []))
            except config.ConfigError as exc:
                fail(str(exc))
                sys.exit(2)
            raise
        check_log_level_or_exit(self.settings)
        from focused import config

        try:
            config.check_repeated_args(written)
        except config.ConfigError as exc:
            fail(str(exc), self.settings)
            sys.exit(2)


#: whether a command of the project runs in this process (it checks a crawl's input)
_COMMAND = [False]


#: what :func:`script_crawl` says of a crawler a script's ``CrawlerProcess`` makes
#: before its ``crawl(...)`` (``process.create_crawler(...)``): its arguments are not known
UNKNOWN_ARGS: dict[str, Any] = {}


def in_command() -> bool:
    """Whether a command of the project runs in this process (``scrapy crawl``, ``parse``,
    ``fetch``...: :class:`CheckedLogging`)."""
    return _COMMAND[0]


def script_crawl() -> dict[str, Any] | None:
    """The keyword arguments of the crawl when the crawler being made is a
    ``CrawlerProcess``'s (or an ``AsyncCrawlerProcess``'s) that no command of the project
    runs (:data:`UNKNOWN_ARGS` when they are not known yet); None otherwise. Such a
    process is a script of one's own (``process.crawl("focused", topic=...)``,
    ``process.start()``), or Scrapy's own command outside the project (``scrapy
    runspider`` of a file of a focused spider): the process is the crawl's, as ``scrapy
    crawl``'s is, and a crawl it cannot start ends it (:func:`refuse_in_script`). A
    ``CrawlerRunner`` (a program that runs crawls among its own work) is left its
    exceptions."""
    if _COMMAND[0]:
        return None
    from scrapy.crawler import CrawlerProcessBase

    frame = sys._getframe(1)
    found = None
    for _ in range(12):  # update_settings <- Crawler.__init__ <- create_crawler <- crawl
        if frame is None:
            break
        owner, names = frame.f_locals.get("self"), frame.f_locals
        if isinstance(owner, CrawlerProcessBase):
            if frame.f_code.co_name == "crawl" and isinstance(names.get("kwargs"), dict):
                return dict(names["kwargs"])
            found = UNKNOWN_ARGS
        elif found is not None and isinstance(owner, ScrapyCommand):
            # Scrapy's own command (runspider) makes the crawler, then crawls it with -a
            spargs = getattr(names.get("opts"), "spargs", None)
            if isinstance(spargs, dict):
                return dict(spargs)
        frame = frame.f_back  # type: ignore[assignment]
    return found


#: the crawls that a script's ``CrawlerProcess`` runs (:func:`watch_script_crawl`): the
#: crawler -> its process
_SCRIPT_CRAWLERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
#: a script's process -> the exit status its failed crawls owe (the highest)
_SCRIPT_STATUS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def watch_script_crawl(
    errors: tuple[type[BaseException], ...], line: Callable[[BaseException, Any], str]
) -> None:
    """For a crawler that a script's ``CrawlerProcess`` is making (called from the
    spider's ``update_settings``, :func:`script_crawl`): an error of one of the
    ``errors`` types raised as its crawl starts (its spider is made: the sandbox's port
    taken, labels out of scope) is the crawl command's one line, ``focused: error:`` and
    ``line(exc, settings)``, instead of Twisted's "Unhandled error in Deferred" (or
    asyncio's "Task exception was never retrieved") traceback, and the process's
    ``start()`` then ends it with exit status 2 (:func:`fail_script_crawl`), as ``scrapy
    crawl`` would: the script had ended with status 0. ``process.bootstrap_failed`` is
    set, as Scrapy sets it for a crawl that did not start."""
    from scrapy.crawler import Crawler, CrawlerProcessBase

    process = crawler = None
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if crawler is None and isinstance(owner, Crawler):
            crawler = owner
        elif isinstance(owner, CrawlerProcessBase):
            process = owner
            break
        frame = frame.f_back  # type: ignore[assignment]
    if process is None or crawler is None or crawler in _SCRIPT_CRAWLERS:
        return
    _SCRIPT_CRAWLERS[crawler] = process
    _end_with_status(process)

    def keep(exc: BaseException) -> None:
        fail(line(exc, crawler.settings))
        fail_script_crawl(crawler, 2)

    crawl, crawl_async = crawler.crawl, crawler.crawl_async

    def crawl_kept(*args: Any, **kwargs: Any) -> Any:
        started = crawl(*args, **kwargs)
        keep_start_error(started, errors, keep)
        return started

    async def crawl_async_kept(*args: Any, **kwargs: Any) -> None:
        try:
            await crawl_async(*args, **kwargs)
        except errors as exc:
            keep(exc)

    crawler.crawl = crawl_kept
    crawler.crawl_async = crawl_async_kept


def script_crawler(crawler: Any) -> bool:
    """Whether a script's ``CrawlerProcess`` runs ``crawler`` (:func:`watch_script_crawl`)."""
    return crawler in _SCRIPT_CRAWLERS


def fail_script_crawl(crawler: Any, status: int) -> None:
    """Record that the crawl of ``crawler``, which a script's ``CrawlerProcess`` runs,
    failed (its line logged): the process's ``start()`` ends the script with exit status
    ``status`` (the highest of its crawls') once every crawl has ended."""
    process = _SCRIPT_CRAWLERS.get(crawler)
    if process is not None:
        _SCRIPT_STATUS[process] = max(status, _SCRIPT_STATUS.get(process, 0))


def _end_with_status(process: Any) -> None:
    """``process.start()`` made to raise ``SystemExit`` with the status its failed
    crawls owe (:func:`fail_script_crawl`) once it has returned: Scrapy's own
    ``start()`` returns, and the script ends with status 0, whatever became of its
    crawls."""
    if getattr(process, "_focused_status", False):
        return
    process._focused_status = True
    start = process.start

    def start_then_exit(*args: Any, **kwargs: Any) -> Any:
        result = start(*args, **kwargs)
        status = _SCRIPT_STATUS.pop(process, 0)
        if status:
            raise SystemExit(status)
        return result

    process.start = start_then_exit


def refuse_in_script(check: Callable[[], None], errors: tuple[type[Exception], ...]) -> None:
    """Run ``check``; one of the ``errors`` it raises (bad input) is the command's one
    line, ``focused: error: ...``, and exit status 2 (:class:`SystemExit`, raised here
    while the script makes its crawler, outside Twisted's Deferreds, which would log it
    as a traceback and let the script end with status 0)."""
    try:
        check()
    except errors as exc:
        fail(str(exc))
        raise SystemExit(2) from None


class StoresNothing(CheckedLogging):
    """Mixin for a command that runs a spider and stores nothing (``scrapy fetch``,
    ``shell``, ``view``, ``parse``; ``STORES_NOTHING`` in its ``default_settings``): it
    runs without ``JOBDIR``. One from settings.py (or a spider's ``custom_settings``) is
    a crawl's: it is dropped, so the command neither creates that folder nor opens,
    claims or changes the crawl's frontier journal there, which may be in use. One given
    with ``-s`` is refused in one line, exit status 2: it could not be honoured without
    changing that journal."""

    def process_options(self, args: list[str], opts: Any) -> None:
        super().process_options(args, opts)
        settings = self.settings
        if (
            settings.get("JOBDIR")
            and settings.getpriority("JOBDIR") == SETTINGS_PRIORITIES["cmdline"]
        ):
            name = type(self).__module__.rsplit(".", 1)[-1]
            fail(
                f"scrapy {name} stores nothing and keeps no frontier: JOBDIR is for"
                " scrapy crawl; run it without -s JOBDIR",
                settings,
            )
            sys.exit(2)
        # not in default_settings: Scrapy puts those below settings.py's priority; at
        # -s's priority, above a spider's custom_settings too
        settings.set("JOBDIR", None, priority="cmdline")


def keep_start_error(
    started: Any,
    errors: tuple[type[BaseException], ...],
    keep: Callable[[BaseException], None],
) -> None:
    """Hand an error of one of the ``errors`` types raised while a crawl starts (the
    spider is made: a bad topic or setting, the sandbox's port taken) to ``keep``, for
    one line after Scrapy stops, instead of its traceback and of Twisted's "Unhandled
    error in Deferred" or asyncio's "Task exception was never retrieved".

    ``started`` is what ``process.crawl`` returned (a Deferred or an asyncio task). Any
    other error goes on as before: the Deferred's failure, or asyncio's exception
    handler, as asyncio would have logged it.
    """
    if isinstance(started, Deferred):

        def errback(failure: Any) -> Any:
            if failure.check(*errors):
                keep(failure.value)
                return None
            return failure

        started.addErrback(errback)
    elif isinstance(started, asyncio.Future):

        def done(task: asyncio.Future[Any]) -> None:
            if task.cancelled():
                return
            exc = task.exception()  # retrieved: asyncio no longer logs it
            if isinstance(exc, errors):
                keep(exc)
            elif exc is not None:  # as asyncio would have logged it
                task.get_loop().call_exception_handler(
                    {"message": "Task exception was never retrieved", "exception": exc}
                )

        started.add_done_callback(done)


def silence_stdout() -> None:
    """Point the standard output at the null device once its reader has gone, so that
    Python's flush of it at exit does not fail a second time (a "BrokenPipeError"
    message and exit status 120)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class FolderCommand(ScrapyCommand):
    """A command that reads the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``).

    Subclasses name their option group (``group_title``) and add their own options in
    :meth:`add_folder_options`; :meth:`folder` is the folder to read, :meth:`fail` prints
    one error line and sets exit status 2.
    """

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}
    group_title: ClassVar[str] = "Options"
    #: whether positional arguments are accepted (a query is; a folder command's are not)
    takes_arguments: ClassVar[bool] = False

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group(self.group_title)
        self.add_folder_options(group)
        group.add_argument("--dir", help="crawl output folder (default: FOCUSED_OUTPUT_DIR)")

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        """The command's own options (none by default)."""

    def folder(self, args: list[str], opts: argparse.Namespace) -> Path:
        """The crawl output folder; a usage error for arguments the command takes none of."""
        if args and not self.takes_arguments:
            raise UsageError(f"scrapy {self.name} takes no positional arguments")
        assert self.settings is not None
        return Path(opts.dir or get(self.settings, "FOCUSED_OUTPUT_DIR"))

    @property
    def name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]

    def fail(self, message: str) -> None:
        fail(message)
        self.exitcode = 2


def add_spider_arguments(parser: argparse.ArgumentParser) -> None:
    """``-a NAME=VALUE``, as ``scrapy crawl`` and ``scrapy parse`` take it, for a command
    of Scrapy's that does not (``scrapy fetch``, ``view``, ``shell``)."""
    parser.add_argument(
        "-a",
        dest="spargs",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set spider argument (may be repeated): -a topic=chemistry for --spider focused",
    )


def spider_arguments(opts: argparse.Namespace) -> None:
    """``opts.spargs`` (the ``-a`` options) made a dict, as Scrapy's commands do; a usage
    error for one that is not ``NAME=VALUE``."""
    from scrapy.utils.conf import arglist_to_dict

    try:
        opts.spargs = arglist_to_dict(opts.spargs)
    except ValueError:
        raise UsageError("Invalid -a value, use -a NAME=VALUE", print_help=False) from None


class SpiderArguments:
    """Mixin for a command of Scrapy's that takes no ``-a`` (``scrapy fetch``, ``view``,
    ``shell``): it takes ``-a NAME=VALUE`` as ``scrapy crawl`` does
    (:func:`add_spider_arguments`, :func:`spider_arguments`)."""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)  # type: ignore[misc]
        add_spider_arguments(parser)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)  # type: ignore[misc]
        spider_arguments(opts)


def unknown_spider(loader: Any, name: str) -> str | None:
    """One line when Scrapy's spider ``loader`` knows no spider ``name`` (Scrapy's own
    is a ``KeyError`` traceback); None when it knows it."""
    names = sorted(loader.list())
    if name in names:
        return None
    return f"unknown spider {name!r}; available spiders: {', '.join(names) or 'none'}"


def seed_from_command_line(settings: Any, url: str) -> None:
    """The http(s) URL given to ``scrapy fetch`` or ``scrapy shell`` becomes the crawl's
    seed (``FOCUSED_SEEDS``, unless the user set it): its kind of address is allowed, as
    a topic's seeds are. A local file or another scheme changes nothing."""
    from scrapy.utils.url import guess_scheme

    url = guess_scheme(url)
    if url.partition("://")[0].lower() not in ("http", "https"):
        return
    # not set by the user: absent, or settings.py's default (focused.defaults, pulled in)
    priority = settings.getpriority("FOCUSED_SEEDS")
    if priority is None or (
        priority <= SETTINGS_PRIORITIES["project"] and not get(settings, "FOCUSED_SEEDS")
    ):
        settings.set("FOCUSED_SEEDS", [url], priority="cmdline")
