"""Reading and validating the ``FOCUSED_*`` settings (defaults in :mod:`focused.defaults`).

Every check raises :class:`ConfigError` with one line for the user; the ``crawl``
command prints it and exits non-zero before anything is fetched.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import math
import os
import re
import sqlite3
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePath, PureWindowsPath
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import SETTINGS_PRIORITIES

from focused import strategies
from focused.cli import stores_nothing
from focused.defaults import CHECKS, DEFAULTS, Check, get
from focused.errors import ConfigError  # defined there; focused.config.ConfigError works too
from focused.ranking.relevance import tokenize
from focused.strategies.base import Strategy, StrategyParams
from focused.web.addresses import parse_host, parse_networks
from focused.web.probe import ProbeScope
from focused.web.topics import Topic, TopicError, check_url

WEBS = CHECKS["FOCUSED_WEB"].choices
FRONTIERS = CHECKS["FOCUSED_FRONTIER"].choices


def _number(settings: Any, name: str) -> float:
    try:
        value = get(settings, name)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {settings.get(name)!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be finite, got {value}")
    return value


def _in_range(
    settings: Any,
    name: str,
    low: float,
    high: float,
    *,
    open_low: bool = True,
    open_high: bool = True,
) -> float:
    value = _number(settings, name)
    above = value > low if open_low else value >= low
    below = value < high if open_high else value <= high
    if not (above and below):
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        raise ConfigError(f"{name} must be in {left}{low}, {high}{right}, got {value}")
    return value


def threshold(settings: Any, topic: Topic | None, kind: str) -> float:
    """Page or anchor threshold: ``-s``/job value, else the topic's, else settings.py's."""
    name = {"page": "FOCUSED_PAGE_THRESHOLD", "anchor": "FOCUSED_ANCHOR_THRESHOLD"}[kind]
    if topic is not None and kind in topic.thresholds and not _set_above_project(settings, name):
        return topic.thresholds[kind]
    return _number(settings, name)


def _set_above_project(settings: Any, name: str) -> bool:
    """True when ``name`` was given on the command line or per spider/job (not settings.py)."""
    priority = settings.getpriority(name)
    return priority is not None and priority > 20  # 20 = "project"


class _Reader:
    """A :class:`~focused.strategies.base.SettingsReader` over Scrapy settings: every
    bad value is a :class:`ConfigError`."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    def number(self, name: str) -> float:
        return _number(self.settings, name)

    def in_range(
        self,
        name: str,
        low: float,
        high: float,
        *,
        open_low: bool = True,
        open_high: bool = True,
    ) -> float:
        return _in_range(self.settings, name, low, high, open_low=open_low, open_high=open_high)

    def flag(self, name: str) -> bool:
        try:
            return bool(get(self.settings, name))
        except ValueError:
            raise ConfigError(
                f"{name} must be true or false, got {self.settings.get(name)!r}"
            ) from None

    def text(self, name: str) -> str:
        return str(get(self.settings, name)).strip()


def strategy_class(settings: Any) -> type[Strategy]:
    """The class ``FOCUSED_STRATEGY`` names (a registered name or a dotted path)."""
    try:
        return strategies.strategy_class(str(get(settings, "FOCUSED_STRATEGY")))
    except strategies.UnknownStrategy as exc:
        raise ConfigError(str(exc)) from None


def strategy_params(
    settings: Any, topic: Topic | None = None, targets: frozenset[str] = frozenset()
) -> tuple[type[Strategy], StrategyParams]:
    """The strategy's class and its :class:`~focused.strategies.base.StrategyParams`,
    every setting it reads checked (the class checks its own:
    :meth:`~focused.strategies.base.Strategy.params_from_settings`).

    ``targets``: the crawl's known target URLs, canonical (a benchmark's oracle reads them).
    """
    cls = strategy_class(settings)
    read = _Reader(settings)
    params = StrategyParams(
        m0=read.number("FOCUSED_M_INITIAL"),
        ratio=read.number("FOCUSED_GENETIC_RATIO"),
        anchor_threshold=threshold(settings, topic, "anchor"),
        max_hops=int(read.number("FOCUSED_MAX_TUNNEL_HOPS")),
        widening=read.number("FOCUSED_TUNNEL_WIDENING"),
        bsbs_depth=int(read.number("FOCUSED_BSBS_DEPTH")),
        title_weight=read.number("FOCUSED_TITLE_WEIGHT"),
        page_threshold=threshold(settings, topic, "page"),
        keywords=MappingProxyType(dict(topic.keywords)) if topic is not None else {},
        targets=frozenset(targets),
        seed=int(read.number("FOCUSED_SEED")),
        options=MappingProxyType(dict(cls.params_from_settings(read))),
    )
    return cls, params


def strategy(
    settings: Any, topic: Topic | None = None, targets: frozenset[str] = frozenset()
) -> Strategy:
    """The strategy object that ``FOCUSED_STRATEGY`` and its parameters describe (the
    spider builds the crawl's one: ``spider.strategy``)."""
    cls, params = strategy_params(settings, topic, targets)
    return cls.from_params(params)


def sandbox_made(settings: Any) -> dict[str, object]:
    """The settings that make the sandbox web (a frontier of one is no frontier of
    another)."""
    return {
        "pages": int(get(settings, "FOCUSED_SANDBOX_PAGES")),
        "seed": int(get(settings, "FOCUSED_SANDBOX_SEED")),
        "mode": str(get(settings, "FOCUSED_SANDBOX_MODE")),
    }


def output_problem(settings: Any, topic: str) -> str | None:
    """Why a crawl of ``topic`` may not go into its ``JOBDIR`` and ``FOCUSED_OUTPUT_DIR``,
    in one line; None when it may: a folder holding pages of another topic or strategy
    (unless ``FOCUSED_CONTINUE``), a ``JOBDIR`` holding another crawl's frontier, or a
    folder of stored pages that this ``JOBDIR`` does not resume
    (:mod:`focused.output.record`). The ``crawl`` command asks before anything starts;
    the spider asks again when it is made, for a crawl started from a script of one's
    own (``CrawlerProcess``), which no command checks."""
    from focused.output.record import jobdir_error, mixing_error, reuse_error

    output = str(get(settings, "FOCUSED_OUTPUT_DIR"))
    strategy = str(get(settings, "FOCUSED_STRATEGY"))
    jobdir = settings.get("JOBDIR")
    adding = bool(get(settings, "FOCUSED_CONTINUE"))
    problem = None if adding else mixing_error(output, topic, strategy)
    if not problem and jobdir:  # a frontier is never carried on by another crawl
        problem = jobdir_error(
            jobdir, topic, strategy, str(get(settings, "FOCUSED_WEB")), sandbox_made(settings)
        )
    # the frontier of a distributed crawl is in Redis, its workers share the folder
    distributed = str(get(settings, "FOCUSED_FRONTIER")) != "memory"
    if not problem and not adding and not distributed:
        problem = reuse_error(output, jobdir)
    return problem


def validate(
    settings: Any,
    topic: Topic | None = None,
    *,
    reach_redis: bool = True,
    spider: str = "focused",
    folders: bool = True,
) -> None:
    """Check every ``FOCUSED_*`` setting; raise :class:`ConfigError` on the first bad one.

    A ``FOCUSED_*`` name that is no setting is refused first (:func:`check_setting_names`).
    Each setting is checked as :data:`focused.defaults.CHECKS` declares (its type, range
    or choices, and a further check of this module for seeds, domains, networks, host
    addresses and the page threshold), and seeds off the sandbox that ``FOCUSED_WEB =
    "sandbox"`` crawls (:func:`check_sandbox_seeds`); then Scrapy's own settings the crawl
    relies on (:data:`SCRAPY_CHECKS`, :func:`check_scrapy_settings`) and the address
    filter middleware that the project's resolver needs (:func:`check_address_filter`);
    then the strategy's class checks its own settings, the topic's keywords must leave a
    term once tokenised, a Redis frontier must answer, the frontier of ``spider`` (its
    name) on that topic recorded as no other crawl's (unless ``reach_redis`` is false:
    the spider's own check, made after the crawl command's, leaves an outage in between to
    the scheduler, which reports it in one line), and last ``JOBDIR`` and the output
    folder are created and their databases checked (:func:`check_folder`; not the output
    folder of a command that stores nothing, :func:`focused.cli.stores_nothing`).
    :func:`claim_jobdir` (not here: it takes the journal for the crawl) refuses a
    ``JOBDIR`` another crawl has. With ``folders`` false, nothing is created or opened:
    the folders are left to a later call (a script's crawl checked as its crawler is made,
    :func:`focused.cli.refuse_in_script`).
    """
    check_setting_names(settings)
    check_jobdir(settings)
    for name, default in DEFAULTS.items():
        check = CHECKS.get(name) or Check(_KINDS[type(default)])  # a type check at least
        value = _checked(settings, name, check)
        if check.special:
            _SPECIAL[check.special](settings, name, value)
    check_sandbox_seeds(settings)
    check_scrapy_settings(settings)
    check_seeds_fetched(settings, topic)
    check_download_handlers(settings, topic)
    check_feeds(settings)
    check_reactor(settings)
    check_address_filter(settings)
    strategy_params(settings, topic)  # the strategy's class checks its own settings
    if topic is not None:
        check_keywords(topic)
        for url in topic.seeds:  # the topic file checked the scheme, not the port
            check_seed(url, f"topic {topic.name!r} seeds")
    if str(get(settings, "FOCUSED_FRONTIER")) == "redis":
        # redis-py only when it is used
        from focused.distributed.connection import check, check_url

        if reach_redis:  # RedisUnavailable is a ConfigError: one line, exit 2
            crawl = {
                "spider": spider,
                "strategy": str(get(settings, "FOCUSED_STRATEGY")).strip(),
            }
            if topic is not None:
                crawl["topic"] = topic.name
            check(settings, crawl)
        else:
            check_url(settings.get("REDIS_URL"))
    if not folders:
        return
    if settings.get("JOBDIR"):  # the journal, the sandbox's port, the learnt model
        jobdir = check_folder(str(settings.get("JOBDIR")), "JOBDIR")
        check_database(jobdir / "frontier.sqlite3", "JOBDIR")
    if not stores_nothing(settings):  # scrapy parse of one page makes no output folder
        output = check_output_dir(str(get(settings, "FOCUSED_OUTPUT_DIR")))
        check_database(output / "pages.sqlite3", "FOCUSED_OUTPUT_DIR")


def check_feeds(settings: Any) -> None:
    """A :class:`ConfigError` for a feed (``-o``/``-O``, ``FEEDS``) whose file is one of
    the crawl's own (:func:`focused.output.owned.crawl_file`: the page store, its
    metrics, the ``JOBDIR``'s journal...): ``-O`` would empty it before the first page,
    ``-o`` append items to it. Feeds with ``%(...)s`` placeholders and other schemes
    (S3, FTP, stdout) are left to Scrapy."""
    try:
        feeds = settings.getdict("FEEDS")
    except (TypeError, ValueError):
        return  # Scrapy's own error is the clearer one
    for uri in feeds:
        stream = _stream_named(str(uri), feeds[uri])
        if stream is not None:
            raise ConfigError(stream)
        if str(uri).startswith("stdout:") and _log_stdout(settings):
            # Scrapy's stdout storage writes to sys.stdout.buffer, which the logger it
            # puts there has not: an AttributeError traceback as the crawl started
            raise ConfigError(
                f"the feed {str(uri)!r} goes to the standard output, which LOG_STDOUT=True"
                " sends to the log: drop LOG_STDOUT, or give the feed a file"
            )
        path = _feed_file(str(uri))
        if path is None:
            continue
        own = _crawls_own_file(settings, path)
        if own is not None:
            raise ConfigError(
                f"the feed {str(uri)!r} would write over {own}, a file of the crawl;"
                " give the feed a path of its own"
            )
        problem = _feed_path_problem(path)
        if problem is not None:
            raise ConfigError(
                f"the feed {str(uri)!r} cannot be written: {problem}; give it a path in a"
                " folder that exists or can be made"
            )
        appended = _appended_document(path, feeds[uri], resuming=_resuming(settings))
        if appended is not None:
            raise ConfigError(f"the feed {str(uri)!r} {appended}")


#: feed formats whose file is one document: a second run appended to it makes it invalid
WHOLE_DOCUMENT_FORMATS = {"json": "JSON array", "xml": "XML document"}


def _resuming(settings: Any) -> bool:
    """Whether the crawl resumes a ``JOBDIR`` (its frontier journal exists)."""
    jobdir = settings.get("JOBDIR")
    if isinstance(jobdir, os.PathLike):  # Scrapy takes a pathlib.Path JOBDIR too
        jobdir = os.fspath(jobdir)
    if not isinstance(jobdir, str) or not jobdir.strip():
        return False
    return os.path.exists(os.path.join(os.path.expanduser(jobdir), "frontier.sqlite3"))


def _appended_document(path: str, options: Any, *, resuming: bool = False) -> str | None:
    """Why appending to the feed file ``path`` would break it, or None: ``-o items.json``
    (``overwrite`` off) run a second time added a second JSON array after the first (or
    a second ``<items>`` root), and the file was no valid JSON any more, without a
    word. Only a file that exists and holds something. ``resuming`` (a ``JOBDIR`` run
    again, as its stop line says): the file holds the earlier run's items, which
    writing over it would lose, so the advice is to move it aside."""
    if not isinstance(options, dict) or options.get("overwrite"):
        return None
    kind = WHOLE_DOCUMENT_FORMATS.get(str(options.get("format") or ""))
    try:
        if kind is None or os.path.getsize(path) == 0:
            return None
    except OSError:
        return None  # none yet
    fmt = str(options.get("format")).upper()
    broken = f"a second {kind} after the first would make {path} no valid {fmt}"
    if resuming:
        return (
            f"holds this JOBDIR's earlier items, and a feed adds to its file: {broken};"
            " move it aside (or give this run's feed another name) and run the same"
            " command again, or use a jsonl feed, which adds whole lines"
        )
    return (
        f"exists, and a feed adds to its file: {broken}; write over it with -O, move it"
        " aside, or use a jsonl feed, which adds whole lines"
    )


def _log_stdout(settings: Any) -> bool:
    try:
        return settings.getbool("LOG_STDOUT")
    except ValueError:
        return False  # refused as a Scrapy setting of the wrong type


def _stream_named(uri: str, options: Any) -> str | None:
    """The line for a feed named ``stdout`` or ``stderr`` (``-o stdout:json``: Scrapy
    reads ``stdout`` as the file and ``json`` as the format, and wrote a file named
    ``stdout`` in the current folder, nothing on the standard output), or None."""
    if uri not in ("stdout", "stderr"):
        return None
    fmt = options.get("format") if isinstance(options, dict) else None
    suffix = f":{fmt}" if fmt else ":FORMAT"
    return (
        f"the feed {uri!r} is a file named {uri} in {os.getcwd()}, not the standard"
        f" {'output' if uri == 'stdout' else 'error'}: Scrapy writes a feed to the standard"
        f" output with -o -{suffix} (or -o stdout:{suffix}); for a file of that name, give"
        f" ./{uri}{suffix}"
    )


def _crawls_own_file(settings: Any, path: str) -> str | None:
    """The crawl's own file that ``path`` is (:func:`focused.output.owned.crawl_file`, in
    ``FOCUSED_OUTPUT_DIR`` or ``JOBDIR``), or None."""
    from focused.output.owned import crawl_file

    folders = [str(get(settings, "FOCUSED_OUTPUT_DIR") or ".")]
    if settings.get("JOBDIR"):
        folders.append(str(settings.get("JOBDIR")))
    for folder in folders:
        own = crawl_file(folder, path)
        if own is not None:
            return own
    return None


def _feed_path_problem(path: str) -> str | None:
    """Why Scrapy's ``FileFeedStorage`` could not open the local feed file ``path`` (it
    makes the missing folders and opens the file at the first item), or None. Nothing is
    created here: the folders are checked up to the nearest one that exists. Without
    this the crawl ran to the end with an ERROR and a traceback per item ("Error caught
    on signal handler: FeedExporter.item_scraped"), and lost the feed."""
    target = Path(path)
    if target.is_dir():
        return f"{path} is a folder"
    if target.exists():
        return None if os.access(target, os.W_OK) else f"{path} is not writable"
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        if folder.is_symlink():  # a broken symbolic link: no folder can be made there
            return f"{folder} is a broken symbolic link"
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None


def _feed_file(uri: str) -> str | None:
    """The local file a feed URI writes, or None (another scheme, or placeholders), as
    Scrapy's ``FeedExporter`` and ``FileFeedStorage`` take it."""
    if "%(" in uri:
        return None
    if uri.startswith("file:"):
        from w3lib.url import file_uri_to_path

        return file_uri_to_path(uri)
    return None if urlsplit(uri).scheme in ("s3", "gs", "ftp", "stdout") else uri


#: Scrapy spider attributes given as settings by habit (``-s ALLOWED_DOMAINS=...``):
#: neither Scrapy nor the crawl reads such a setting -> the setting that does the work
SPIDER_ATTRIBUTE_SETTINGS = {
    "ALLOWED_DOMAINS": ("allowed_domains", "FOCUSED_ALLOWED_DOMAINS"),
    "START_URLS": ("start_urls", "FOCUSED_SEEDS"),
}


def check_setting_names(settings: Any) -> None:
    """A :class:`ConfigError` for a ``FOCUSED_*`` setting that :data:`DEFAULTS` does not
    have (a typo would otherwise be ignored), naming the closest known one; and for a
    spider attribute given as a setting (``-s ALLOWED_DOMAINS=example.org`` was ignored
    without a word: the crawl went past the domains the user meant to keep to)."""
    for name, (attribute, setting) in SPIDER_ATTRIBUTE_SETTINGS.items():
        value = settings.get(name)
        if value is not None:
            shown = value if isinstance(value, str) else ",".join(map(str, value))
            raise ConfigError(
                f"{name} is no setting (Scrapy's {attribute} is an attribute of a spider"
                f" class), so it would be ignored; use -s {setting}={shown}"
            )
    for name in sorted(n for n in settings if str(n).startswith("FOCUSED_")):
        if name in DEFAULTS:
            continue
        close = difflib.get_close_matches(name, DEFAULTS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "see the README's settings table"
        raise ConfigError(f"unknown setting {name}; {hint}")


def check_jobdir(settings: Any) -> None:
    """A :class:`ConfigError` for a blank ``JOBDIR`` (``-s "JOBDIR= "``): Scrapy would make
    a folder named by the blanks in the current folder. Empty is no ``JOBDIR``, as in
    Scrapy."""
    jobdir = settings.get("JOBDIR")
    if isinstance(jobdir, str) and jobdir and not jobdir.strip():
        raise ConfigError(
            f"JOBDIR is blank ({jobdir!r}); name the folder that keeps the crawl's frontier,"
            " or leave JOBDIR unset"
        )
    for name in ("JOBDIR", "FOCUSED_OUTPUT_DIR"):
        check_no_tilde(name, settings.get(name))


def check_no_tilde(name: str, path: Any) -> None:
    """A :class:`ConfigError` for a folder setting that begins with ``~`` (``~/crawls``,
    ``~user/x``), which only a shell expands: given in settings.py, a scrapyd job or
    quoted on the command line, Scrapy and the crawl would make a folder named ``~`` in
    the current folder (one that ``rm -rf ~`` would not remove, but the home folder)."""
    if not isinstance(path, str) or not path.startswith("~"):
        return
    home = os.path.expanduser(path)
    instead = f"give {home!r}" if home != path else "give the full path"
    raise ConfigError(
        f"{name} {path!r} begins with '~', which only a shell expands: the crawl would make"
        f" a folder named {path.split('/', 1)[0]!r} in {os.getcwd()}; {instead}"
    )


_KINDS: dict[type, str] = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "list",
    dict: "dict",
}


def _checked(settings: Any, name: str, check: Check) -> Any:
    """The value of ``name`` as the code reads it, checked as ``check`` says."""
    raw = settings.get(name, DEFAULTS[name])
    if check.kind == "bool":
        try:
            return bool(get(settings, name))
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be true or false, got {raw!r}") from None
    if check.kind in ("int", "float"):
        return _checked_number(settings, name, check, raw)
    if check.kind == "str":
        if not isinstance(raw, str | os.PathLike):
            raise ConfigError(f"{name} must be a string, got {raw!r}")
        value = str(raw)
        if check.choices and value not in check.choices:
            raise ConfigError(f"{name} must be one of {', '.join(check.choices)}, got {value!r}")
        return value
    if check.kind == "list":
        if isinstance(raw, str) and raw.lstrip().startswith(("[", "{", "(")):
            example = _LIST_EXAMPLES.get(check.special, "a,b")
            raise ConfigError(
                f"{name} must be comma-separated values (-s {name}={example}), not a JSON or"
                f" Python literal, got {raw!r}"
            )
        try:
            values = list(get(settings, name))
        except (TypeError, ValueError):
            values = None
        if values is None or not all(isinstance(v, str) for v in values):
            raise ConfigError(f"{name} must be a list or a comma-separated string, got {raw!r}")
        return values
    return _checked_mapping(name, raw)


#: the form of a list setting's values on the command line, by its special check (a
#: JSON or Python list there would be split at its commas into broken values)
_LIST_EXAMPLES = {
    "urls": "https://a.example/,https://b.example/",
    "domains": "example.org,example.net",
    "networks": "10.0.0.0/8,fd00::/8",
    "params": "sid,phpsessid",
}


def _checked_number(
    settings: Any, name: str, check: Check, raw: Any, read: Callable[[], float] | None = None
) -> float:
    """The number ``name`` holds, in ``check``'s range. ``read``: how the code reads it
    (a Scrapy getter, whose rules are then the only type rules); by default a
    ``FOCUSED_*`` setting's :func:`~focused.defaults.get`, and no bool or fraction for an
    integer."""
    integer = check.kind == "int"
    what = "an integer" if integer else "a number"
    if read is None:
        if isinstance(raw, bool) or (integer and isinstance(raw, float) and not raw.is_integer()):
            raise ConfigError(f"{name} must be {what}, got {raw!r}")
        read = lambda: get(settings, name)  # noqa: E731
    try:
        value = read()
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be finite, got {value}")
    above = value > check.low if check.open_low else value >= check.low
    below = value < check.high if check.open_high else value <= check.high
    if above and below:
        return value
    low, high = (_bound(b, integer) for b in (check.low, check.high))
    if math.isinf(check.high):
        raise ConfigError(f"{name} must be {'>' if check.open_low else '>='} {low}, got {value}")
    left, right = "(" if check.open_low else "[", ")" if check.open_high else "]"
    raise ConfigError(f"{name} must be in {left}{low}, {high}{right}, got {value}")


def _bound(bound: float, integer: bool) -> str:
    return str(int(bound)) if integer and math.isfinite(bound) else str(bound)


def _checked_mapping(name: str, raw: Any) -> dict[Any, Any]:
    """A mapping, or a JSON object (``-s NAME='{"a": "b"}'``); empty text is ``{}``."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            value = None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name} must be a mapping or a JSON object, got {raw!r}")
    return dict(value)


def _scrapy_int(low: float = 0) -> Check:
    return Check("int", low)


def _scrapy_float(low: float = 0.0, high: float = math.inf, *, open_low: bool = False) -> Check:
    return Check("float", low, high, open_low=open_low, open_high=False)


_SCRAPY_FLAG = Check("bool")

#: Scrapy's own settings that the crawl relies on, checked by their type with Scrapy's
#: getters (``Settings.getint``/``getfloat``/``getbool`` accept what Scrapy accepts; what
#: they raise on is refused) and in the range where Scrapy behaves (``"level"``: a
#: :mod:`logging` level, by name or number). A bad value used to be a traceback once the
#: sandbox had been generated, or a crawl that silently misbehaved.
SCRAPY_CHECKS: dict[str, Check] = {
    "DOWNLOAD_DELAY": _scrapy_float(),
    "DOWNLOAD_DELAY_JITTER": _scrapy_float(0.0, 1.0),  # (1 +- jitter) x delay
    "RANDOMIZE_DOWNLOAD_DELAY": _SCRAPY_FLAG,
    "DOWNLOAD_TIMEOUT": _scrapy_float(open_low=True),
    "DOWNLOAD_MAXSIZE": _scrapy_int(),  # 0: no limit
    "DOWNLOAD_WARNSIZE": _scrapy_int(),
    "CONCURRENT_REQUESTS": _scrapy_int(1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": _scrapy_int(1),
    "CONCURRENT_REQUESTS_PER_IP": _scrapy_int(),  # 0: per domain (deprecated, still read)
    "CONCURRENT_ITEMS": _scrapy_int(1),
    "DEPTH_LIMIT": _scrapy_int(),  # 0: no limit
    "DEPTH_PRIORITY": Check("int"),
    "RETRY_ENABLED": _SCRAPY_FLAG,
    "RETRY_TIMES": _scrapy_int(),
    "REDIRECT_ENABLED": _SCRAPY_FLAG,
    "REDIRECT_MAX_TIMES": _scrapy_int(),
    "METAREFRESH_ENABLED": _SCRAPY_FLAG,
    "METAREFRESH_MAXDELAY": _scrapy_int(),
    "URLLENGTH_LIMIT": _scrapy_int(),  # 0: no limit
    "CLOSESPIDER_PAGECOUNT": _scrapy_int(),  # 0: off, as every CLOSESPIDER_*
    "CLOSESPIDER_PAGECOUNT_NO_ITEM": _scrapy_int(),
    "CLOSESPIDER_ITEMCOUNT": _scrapy_int(),
    "CLOSESPIDER_ERRORCOUNT": _scrapy_int(),
    "CLOSESPIDER_TIMEOUT": _scrapy_float(),
    "CLOSESPIDER_TIMEOUT_NO_ITEM": _scrapy_int(),
    "AUTOTHROTTLE_ENABLED": _SCRAPY_FLAG,
    "AUTOTHROTTLE_DEBUG": _SCRAPY_FLAG,
    "AUTOTHROTTLE_START_DELAY": _scrapy_float(),
    "AUTOTHROTTLE_MAX_DELAY": _scrapy_float(),
    "AUTOTHROTTLE_TARGET_CONCURRENCY": _scrapy_float(open_low=True),
    "ROBOTSTXT_OBEY": _SCRAPY_FLAG,
    "COOKIES_ENABLED": _SCRAPY_FLAG,
    "COMPRESSION_ENABLED": _SCRAPY_FLAG,
    "HTTPCACHE_ENABLED": _SCRAPY_FLAG,
    "HTTPERROR_ALLOW_ALL": _SCRAPY_FLAG,
    "DNSCACHE_ENABLED": _SCRAPY_FLAG,
    "DNSCACHE_SIZE": _scrapy_int(),
    "DNS_TIMEOUT": _scrapy_float(open_low=True),
    "REACTOR_THREADPOOL_MAXSIZE": _scrapy_int(1),
    "SCRAPER_SLOT_MAX_ACTIVE_SIZE": _scrapy_int(1),
    "LOGSTATS_INTERVAL": _scrapy_float(),
    "LOG_ENABLED": _SCRAPY_FLAG,
    "LOG_LEVEL": Check("level"),
    "TELNETCONSOLE_ENABLED": _SCRAPY_FLAG,
}


def check_scrapy_settings(settings: Any) -> None:
    """A :class:`ConfigError` for the first of :data:`SCRAPY_CHECKS` that Scrapy's getter
    would raise on, or that lies out of its range (a setting Scrapy does not have is
    skipped)."""
    for name, check in SCRAPY_CHECKS.items():
        if name not in settings:
            continue
        with _quietly():  # a deprecated name: Scrapy warns itself when it reads it
            raw = settings.get(name)
        if check.kind == "level":
            _check_log_level(name, raw)
        elif check.kind == "bool":
            try:
                settings.getbool(name)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{name} must be true or false (True/False, 1/0), got {raw!r}"
                ) from None
        else:
            getter = settings.getint if check.kind == "int" else settings.getfloat
            with _quietly():
                _checked_number(settings, name, check, raw, read=lambda g=getter, n=name: g(n))
    _check_status_lists(settings)
    _check_scrapy_types(settings)
    _check_components(settings)
    _check_class_paths(settings)
    _check_feeds(settings)


def _scrapy_default_values() -> dict[str, Any]:
    from scrapy.settings import default_settings

    return {n: getattr(default_settings, n) for n in dir(default_settings) if n.isupper()}


def _check_scrapy_types(settings: Any) -> None:
    """The rest of Scrapy's settings that are set (in settings.py or with ``-s``), by the
    type of Scrapy's default: a bool, int, float, list or dict that Scrapy's getter for
    that type raises on is refused (it was a traceback, or a crawl that started and
    logged one per request). A ``None`` is left to Scrapy (some settings take it)."""
    floor = SETTINGS_PRIORITIES["default"]
    for name, default in _scrapy_default_values().items():
        if name in SCRAPY_CHECKS or (settings.getpriority(name) or 0) <= floor:
            continue
        with _quietly():  # a deprecated name: Scrapy warns itself when it reads it
            raw = settings.get(name)
        kind = _KINDS.get(type(default))
        if raw is None or kind is None or kind == "str":
            continue
        if kind == "bool":
            getter, what = settings.getbool, "true or false (True/False, 1/0)"
        elif kind == "int":
            getter, what = settings.getint, "an integer"
        elif kind == "float":
            getter, what = settings.getfloat, "a number"
        elif kind == "list":
            getter, what = settings.getlist, "a list or comma-separated values"
        else:
            getter, what = settings.getdict, "a dict (JSON with -s)"
        try:
            with _quietly():
                getter(name)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be {what}, got {raw!r}") from None


#: Scrapy's settings of components by import path: the path is the key (its value an
#: order, or None to turn it off), or the value (keyed by scheme or format)
COMPONENT_KEYS = (
    "ITEM_PIPELINES",
    "SPIDER_MIDDLEWARES",
    "DOWNLOADER_MIDDLEWARES",
    "EXTENSIONS",
    "ADDONS",
    "SPIDER_CONTRACTS",
)
COMPONENT_VALUES = ("DOWNLOAD_HANDLERS", "FEED_EXPORTERS", "FEED_STORAGES")
#: Scrapy's settings whose value is one import path (a class, or a reactor's); Scrapy
#: imports them as the crawl starts (``-s SCHEDULER=...Schedular``: a traceback, exit 1,
#: the output folder made). ``SPIDER_LOADER_CLASS`` is loaded before any command runs.
CLASS_PATHS = (
    "SCHEDULER",
    "DOWNLOADER",
    "DOWNLOADER_CLIENTCONTEXTFACTORY",
    "STATS_CLASS",
    "LOG_FORMATTER",
    "ITEM_PROCESSOR",
    "REQUEST_FINGERPRINTER_CLASS",
    "ROBOTSTXT_PARSER",
    "HTTPCACHE_STORAGE",
    "HTTPCACHE_POLICY",
    "TWISTED_DNS_RESOLVER",
    "DNS_RESOLVER",
    "TWISTED_REACTOR",
)
#: ... and those that only a scheduler other than the focused one imports (the focused
#: scheduler ignores them, with a WARNING: :func:`focused.habits.ignored_by_scheduler`)
SCHEDULER_CLASS_PATHS = (
    "SCHEDULER_PRIORITY_QUEUE",
    "SCHEDULER_DISK_QUEUE",
    "SCHEDULER_MEMORY_QUEUE",
    "SCHEDULER_START_DISK_QUEUE",
    "SCHEDULER_START_MEMORY_QUEUE",
    "DUPEFILTER_CLASS",
)
#: the value of a :data:`CLASS_PATHS` setting that names no class (Scrapy's own default)
_NO_PATH = frozenset({"SENTINEL"})


def _check_class_paths(settings: Any) -> None:
    """The class of each :data:`CLASS_PATHS` setting that is set must import, and of each
    :data:`SCHEDULER_CLASS_PATHS` one when ``SCHEDULER`` is not the focused one."""
    from focused.habits import other_scheduler

    floor = SETTINGS_PRIORITIES["default"]
    names = CLASS_PATHS
    if other_scheduler(settings, "") is not None:  # a SCHEDULER that imports them
        names += SCHEDULER_CLASS_PATHS
    for name in names:
        if (settings.getpriority(name) or 0) <= floor:
            continue
        with _quietly():  # a deprecated name: Scrapy warns itself when it reads it
            path = settings.get(name)
        if isinstance(path, str) and path not in _NO_PATH:
            _check_import(name, path)


def _check_components(settings: Any) -> None:
    """Each component the user's ``ITEM_PIPELINES``, ``EXTENSIONS``, ``DOWNLOAD_HANDLERS``
    ... names must import (it was a traceback when Scrapy built it); an order must be a
    number."""
    for name in COMPONENT_KEYS + COMPONENT_VALUES:
        if name not in settings or not settings.get(name):
            continue
        try:
            components = settings.getdict(name)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{name} must be a dict of import path -> order (JSON with -s),"
                f" got {settings.get(name)!r}"
            ) from None
        for key, value in components.items():
            if name in COMPONENT_KEYS:
                path = key
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, int | float)
                ):
                    raise ConfigError(
                        f"{name}: the order of {str(path)!r} must be a number (or null to"
                        f" turn it off), got {value!r}"
                    )
            elif value is None:
                continue
            else:
                path = value
            if not isinstance(path, str):
                continue  # a class given as such
            _check_import(name, path)


def _check_import(name: str, path: str) -> None:
    """A :class:`ConfigError` when ``path``, given in the setting ``name``, does not
    import."""
    from scrapy.utils.misc import load_object

    try:
        with _quietly():
            load_object(path)
    except (*_LOAD_ERRORS, SyntaxError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{name}: {path!r} cannot be imported ({why})") from None


def _check_feeds(settings: Any) -> None:
    """``FEEDS``: options of each feed with a format Scrapy has an exporter for and a URI
    Scrapy has a storage for (Scrapy logs an ERROR for either and crawls on with no feed,
    exit status 0)."""
    raw = settings.get("FEEDS")
    if not raw:
        return
    try:
        feeds = settings.getdict("FEEDS")
    except (TypeError, ValueError):
        raise ConfigError(
            f"FEEDS must be a dict of feed URI -> options (JSON with -s), got {raw!r}"
        ) from None
    formats = sorted(k for k, v in settings.getwithbase("FEED_EXPORTERS").items() if v)
    schemes = {k for k, v in settings.getwithbase("FEED_STORAGES").items() if v}
    batches = settings.getint("FEED_EXPORT_BATCH_ITEM_COUNT")
    for uri, options in feeds.items():
        if not isinstance(options, dict):
            raise ConfigError(f"FEEDS: the options of {str(uri)!r} must be a dict, got {options!r}")
        # as Scrapy reads a feed (scrapy.utils.conf, FeedExporter): the format from the
        # file's extension when none is given; the URI's scheme, a Windows drive aside
        fmt = options["format"] if "format" in options else PurePath(str(uri)).suffix[1:]
        if fmt not in formats:
            raise ConfigError(
                f"FEEDS: {str(uri)!r} has format {fmt!r}; Scrapy exports"
                f" {', '.join(formats)} (FEED_EXPORTERS)"
            )
        if options.get("batch_item_count", batches) and not re.search(
            r"%\(batch_time\)s|%\(batch_id\)", str(uri)
        ):
            raise ConfigError(
                f"FEEDS: {str(uri)!r} is written in batches (batch_item_count): its URI"
                " needs %(batch_id)d or %(batch_time)s"
            )
        scheme = urlsplit(str(uri)).scheme
        if scheme not in schemes and not PureWindowsPath(str(uri)).drive:
            raise ConfigError(
                f"FEEDS: {str(uri)!r} has no storage for {scheme}:// URIs; Scrapy stores"
                f" to {', '.join(sorted(s for s in schemes if s))} (FEED_STORAGES)"
            )
        if scheme in schemes:
            _check_storage_library(str(uri), settings.getwithbase("FEED_STORAGES")[scheme])


#: the library each of Scrapy's own feed storages needs that Scrapy does not install:
#: its import name and its package
STORAGE_LIBRARIES: dict[str, tuple[str, str]] = {
    "scrapy.extensions.feedexport.S3FeedStorage": ("boto3", "boto3"),
    "scrapy.extensions.feedexport.GCSFeedStorage": ("google.cloud.storage", "google-cloud-storage"),
}


def _check_storage_library(uri: str, storage: Any) -> None:
    """A :class:`ConfigError` when the feed storage of ``uri`` is one of Scrapy's that
    needs a library that is not installed: Scrapy logged an ERROR ("Disabled feed storage
    scheme: s3. Reason: missing boto3 library") and crawled on without the feed, exit 0;
    for ``gs://``, the ``ModuleNotFoundError`` traceback came once the crawl had ended."""
    import importlib.util

    name = storage if isinstance(storage, str) else f"{storage.__module__}.{storage.__qualname__}"
    if name not in STORAGE_LIBRARIES:
        return
    module, package = STORAGE_LIBRARIES[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # its parent package is missing
        found = False
    if not found:
        raise ConfigError(
            f"FEEDS: {uri!r} is stored by {name.rsplit('.', 1)[-1]}, which needs the"
            f" {package} library, not installed here (pip install {package}); or write"
            " the feed to a local file"
        )


#: Scrapy's list settings of HTTP status codes: from the command line (``-s
#: HTTPERROR_ALLOWED_CODES=404``) they are text, which ``HttpErrorMiddleware`` compares
#: with a response's status as it is (it matched no status, silently); a word among them
#: was a traceback where Scrapy reads them as numbers (``RETRY_HTTP_CODES``). The
#: project's :class:`focused.habits.SettingsAddon` turns them into numbers.
STATUS_LIST_SETTINGS = (
    "HTTPERROR_ALLOWED_CODES",
    "RETRY_HTTP_CODES",
    "HTTPCACHE_IGNORE_HTTP_CODES",
)


def status_codes(raw: Any) -> list[int] | None:
    """``raw`` (a list, or text of comma-separated codes: ``"404,410"``) as HTTP status
    codes; ``None`` when an entry is not a code of 100-599 (``"[404]"``, ``"abc"``)."""
    if isinstance(raw, str):
        items: list[Any] = raw.split(",") if raw.strip() else []
    elif isinstance(raw, (list, tuple, set, frozenset)):
        items = list(raw)
    else:
        return None
    codes = []
    for item in items:
        text = item.strip() if isinstance(item, str) else None
        if text is not None and text.isascii() and text.isdigit():
            code = int(text)
        elif isinstance(item, int) and not isinstance(item, bool):
            code = item
        else:
            return None
        if not 100 <= code <= 599:
            return None
        codes.append(code)
    return codes


def _check_status_lists(settings: Any) -> None:
    for name in STATUS_LIST_SETTINGS:
        raw = settings.get(name)
        if raw and status_codes(raw) is None:
            raise ConfigError(
                f"{name} must be HTTP status codes (100-599) separated by commas,"
                f" e.g. 404,410, got {raw!r}"
            )


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """Scrapy's deprecation warnings silenced: a setting read here to be checked is read
    again (and warned about) by Scrapy itself."""
    from scrapy.exceptions import ScrapyDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScrapyDeprecationWarning)
        yield


def check_log_level(settings: Any) -> None:
    """``LOG_LEVEL`` alone (:func:`check_scrapy_settings` checks it with the others; the
    crawl command needs it before Scrapy's logging is set up from it)."""
    _check_log_level("LOG_LEVEL", settings.get("LOG_LEVEL"))


def check_log_format(settings: Any) -> None:
    """``LOG_FORMAT`` and ``LOG_DATEFORMAT`` as Scrapy's log handler will format every
    record with them (``logging.Formatter``): a format that cannot format a record
    (``%(levelname) %(message)s``, a field no record has) made every log line a
    "Logging error" traceback, the log lost, exit status 0."""
    if not settings.getbool("LOG_ENABLED", True):
        return
    fmt, datefmt = settings.get("LOG_FORMAT"), settings.get("LOG_DATEFORMAT")
    record = logging.makeLogRecord(
        {"name": "focused", "levelname": "INFO", "levelno": logging.INFO, "msg": "check"}
    )
    try:
        logging.Formatter(fmt, datefmt).format(record)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"LOG_FORMAT {fmt!r} cannot format a log record ({exc}); use the fields of"
            " Python's logging, e.g. '%(asctime)s [%(name)s] %(levelname)s: %(message)s'"
        ) from None


def check_log_file(settings: Any) -> None:
    """``LOG_FILE`` opened for appending, as Scrapy will open it to set up its logging
    (a folder that does not exist or cannot be written is a ``FileNotFoundError`` or
    ``PermissionError`` traceback there): a :class:`ConfigError` naming it. Appending
    creates the file and changes nothing in one that exists. A ``LOG_FILE`` that is one
    of the crawl's own files (in ``FOCUSED_OUTPUT_DIR`` or ``JOBDIR``: ``sandbox.port``,
    ``crawl.json``, a segment...) is refused: the log appended to ``JOBDIR/sandbox.port``
    made every later resume a ``ValueError`` traceback. So is one on a full disk."""
    path = settings.get("LOG_FILE")
    if not path or not settings.getbool("LOG_ENABLED", True):
        return
    own = _crawls_own_file(settings, str(path))
    if own is not None:  # the log would be appended to it (a port file, crawl.json)
        raise ConfigError(
            f"LOG_FILE {str(path)!r} is the crawl's own {own}, which the log would"
            " damage; give another log file"
        )
    try:
        with open(path, "a", encoding=settings.get("LOG_ENCODING") or "utf-8"):
            pass
        room = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        raise ConfigError(
            f"LOG_FILE {str(path)!r} cannot be written: {exc.strerror or exc}"
        ) from None
    # a full disk: the first log line failed, and Scrapy's own close of the handler
    # raised OSError (a traceback, exit 1, nothing crawled)
    if room.f_bavail == 0 and (os.geteuid() != 0 or room.f_bfree == 0):
        raise ConfigError(
            f"LOG_FILE {str(path)!r} cannot be written: its disk is full (No space left on device)"
        )


def check_set_options(settings: Any, pairs: list[str]) -> None:
    """The ``-s NAME=VALUE`` options that Scrapy could not set, named: Scrapy says only
    "Invalid -s value, use -s NAME=VALUE" for any of them, also for one written that way
    whose value a dict setting cannot take (``-s 'ITEM_PIPELINES=["a.B"]'``, a list: the
    user wrote NAME=VALUE). A :class:`ConfigError` for the first such option; nothing
    when each one sets (Scrapy's line stands)."""
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"-s {pair!r} is not NAME=VALUE; write -s {pair}=VALUE")
        try:
            settings.copy().set(name, value, priority="cmdline")
        except (ValueError, TypeError):
            if name in COMPONENT_KEYS:
                raise ConfigError(
                    f"{name} must be a dict of import path -> order (JSON with -s, e.g."
                    f" -s '{name}={{\"myproject.pipelines.MyPipeline\": 300}}'), got {value!r}"
                ) from None
            raise ConfigError(
                f"{name} must be a JSON object with -s (-s '{name}={{...}}'), got {value!r}"
            ) from None


def check_custom_settings(settings: Any, owner: str, custom: Any) -> None:
    """A spider's ``custom_settings`` (``owner``: its class's name) that Scrapy could not
    set: a :class:`ConfigError` naming the setting (it was Scrapy's ``ValueError`` or
    ``TypeError`` traceback, exit status 1: ``"ITEM_PIPELINES": ["a.B"]``, a list)."""
    if not isinstance(custom, dict):
        raise ConfigError(f"{owner}.custom_settings must be a dict of settings, got {custom!r}")
    for name, value in custom.items():
        try:
            settings.copy().set(name, value, priority="spider")
        except (ValueError, TypeError):
            what = (
                'a dict of import path -> order, e.g. {"myproject.pipelines.MyPipeline": 300}'
                if name in COMPONENT_KEYS
                else "a dict"
            )
            raise ConfigError(
                f"{owner}.custom_settings: {name} must be {what}, got {value!r}"
            ) from None


def check_spider_loader(settings: Any) -> None:
    """``SPIDER_LOADER_CLASS`` and each module of ``SPIDER_MODULES`` must import: Scrapy
    loads them as it makes the crawler process, before any command runs (``-s
    SPIDER_LOADER_CLASS=nope.Loader``, ``-s SPIDER_MODULES=nope``: a
    ``ModuleNotFoundError`` traceback, exit status 1, for ``scrapy crawl``, ``runspider``,
    ``list``...). A module of ``SPIDER_MODULES`` is left to Scrapy with
    ``SPIDER_LOADER_WARN_ONLY``, which makes its failure a warning."""
    path = settings.get("SPIDER_LOADER_CLASS")
    if isinstance(path, str) and path:
        _check_import("SPIDER_LOADER_CLASS", path)
    with _quietly():
        warn_only = settings.getbool("SPIDER_LOADER_WARN_ONLY", False)
    if warn_only:
        return
    import importlib

    for module in settings.getlist("SPIDER_MODULES"):
        try:
            with _quietly():
                importlib.import_module(module)
        except (*_LOAD_ERRORS, SyntaxError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigError(f"SPIDER_MODULES: {module!r} cannot be imported ({why})") from None


def _check_log_level(name: str, raw: Any) -> None:
    """What :meth:`logging.Handler.setLevel` takes: a number or a level's name."""
    levels = logging.getLevelNamesMapping()
    if (isinstance(raw, int) and not isinstance(raw, bool)) or raw in levels:
        return
    hint = f" (say {raw.upper()!r})" if isinstance(raw, str) and raw.upper() in levels else ""
    known = ", ".join(n for n in levels if n not in ("WARN", "FATAL"))
    raise ConfigError(f"{name} must be a logging level ({known}), got {raw!r}{hint}")


def check_reactor(settings: Any) -> None:
    """A :class:`ConfigError` for ``TWISTED_REACTOR_ENABLED = False`` (Scrapy's crawl
    without a Twisted reactor, on asyncio alone, with its aiohttp download handler). The
    crawl's scope checks resolve host names with
    :class:`~focused.addressfilter.FocusedResolver`, a Twisted resolver, and aiohttp
    resolves on its own: a link whose host name resolves to an internal address (the
    cloud metadata service, the local network) would be fetched, and ``FOCUSED_HOSTS``
    would map nothing. The page store's retries and the progress line run on the reactor
    too. Refused, never loosened."""
    if "TWISTED_REACTOR_ENABLED" not in settings:
        return  # a Scrapy without reactorless mode
    with _quietly():
        enabled = settings.getbool("TWISTED_REACTOR_ENABLED", True)
    if not enabled:
        raise ConfigError(
            "TWISTED_REACTOR_ENABLED=False is not supported: the crawl's scope checks resolve"
            " host names on the Twisted reactor (FocusedResolver), so without it a link to a"
            " host name that resolves to an internal address would be fetched; remove the"
            " setting (the project runs Scrapy's asyncio reactor, TWISTED_REACTOR)"
        )


ADDRESS_FILTER = "focused.addressfilter.AddressFilterMiddleware"
_LOAD_ERRORS = (ImportError, AttributeError, NameError, ValueError, TypeError)


def check_address_filter(settings: Any) -> None:
    """A :class:`ConfigError` when the crawl resolves host names with
    :class:`~focused.addressfilter.FocusedResolver` while ``DOWNLOADER_MIDDLEWARES`` leaves
    out :class:`~focused.addressfilter.AddressFilterMiddleware` (a dict of one's own
    replaces the project's): the resolver then knows no seed, refuses the sandbox's and
    every loopback or private seed's address, and the crawl stored no page, with exit
    status 0. Never loosened: the crawl does not start. Under another resolver, a crawl
    that may serve the hostile sandbox (``FOCUSED_SANDBOX_MODE=hostile``, a web other
    than ``real``) is refused too: its pages link and redirect to internal addresses
    (``http://169.254.169.254/...``, ``http://10.0.0.1/``), which the crawl would fetch
    (only a real-web crawl may turn the filter off, warned at start)."""
    if address_filter_enabled(settings) is not False:
        return
    ours = focused_resolver(settings)
    if ours is None:  # Scrapy says so when it sets up the reactor
        return
    if not ours:
        hostile = get(settings, "FOCUSED_SANDBOX_MODE") == "hostile"
        if not hostile or get(settings, "FOCUSED_WEB") == "real":
            return
        raise ConfigError(
            f"DOWNLOADER_MIDDLEWARES does not enable {ADDRESS_FILTER}: the hostile sandbox"
            " (FOCUSED_SANDBOX_MODE=hostile) links and redirects to internal addresses"
            " (http://169.254.169.254/..., http://10.0.0.1/), which this crawl would fetch;"
            f" keep {ADDRESS_FILTER!r}: 50 in DOWNLOADER_MIDDLEWARES (add your middlewares"
            " to the project's, do not replace them)"
        )
    name = _resolver_setting(settings)
    with _quietly():  # DNS_RESOLVER is deprecated: Scrapy warns when it is read
        resolver = settings.get(name)
    if not isinstance(resolver, str):
        resolver = f"{resolver.__module__}.{resolver.__qualname__}"
    raise ConfigError(
        f"DOWNLOADER_MIDDLEWARES does not enable {ADDRESS_FILTER}, which {name}"
        f" {resolver} needs (without it every fetch of the"
        f" sandbox or of a loopback or private seed is refused); keep {ADDRESS_FILTER!r}: 50"
        " in DOWNLOADER_MIDDLEWARES (add your middlewares to the project's, do not replace them)"
    )


def address_filter_enabled(settings: Any) -> bool | None:
    """Whether ``DOWNLOADER_MIDDLEWARES`` (with Scrapy's base) enables
    :class:`~focused.addressfilter.AddressFilterMiddleware` or a subclass of it; None
    when the dict cannot be built (Scrapy says so itself when it builds the downloader)."""
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    from focused.addressfilter import AddressFilterMiddleware

    try:
        middlewares = build_component_list(
            settings.get_component_priority_dict_with_base("DOWNLOADER_MIDDLEWARES")
        )
    except _LOAD_ERRORS:
        return None
    for middleware in middlewares:
        try:
            cls = load_object(middleware) if isinstance(middleware, str) else middleware
        except _LOAD_ERRORS:
            continue
        if isinstance(cls, type) and issubclass(cls, AddressFilterMiddleware):
            return True
    return False


def focused_resolver(settings: Any) -> bool | None:
    """Whether the crawl resolves host names with
    :class:`~focused.addressfilter.FocusedResolver` (or a subclass), which checks the
    addresses a name resolves to; None when the resolver setting does not load."""
    from scrapy.utils.misc import load_object

    from focused.addressfilter import FocusedResolver

    try:
        with _quietly():
            resolver = load_object(settings.get(_resolver_setting(settings)))
    except _LOAD_ERRORS:
        return None
    return isinstance(resolver, type) and issubclass(resolver, FocusedResolver)


def _resolver_setting(settings: Any) -> str:
    """The setting Scrapy takes the resolver from (``CrawlerProcess._setup_reactor``):
    ``TWISTED_DNS_RESOLVER``, or the deprecated ``DNS_RESOLVER`` set above it."""
    dns = settings.getpriority("DNS_RESOLVER") or 0
    if dns > 0 and (settings.getpriority("TWISTED_DNS_RESOLVER") or 0) <= dns:
        return "DNS_RESOLVER"
    return "TWISTED_DNS_RESOLVER"


def _check_seeds(settings: Any, name: str, value: Any) -> None:
    for url in _seeds_as_given(settings):
        check_seed(url, name)


def check_sandbox_seeds(settings: Any) -> None:
    """With ``FOCUSED_WEB = "sandbox"``, ``FOCUSED_SEEDS`` must be pages of the embedded
    sandbox: ``http://127.0.0.1:PORT/...`` with its port known beforehand
    (``FOCUSED_SANDBOX_PORT``, or the one a ``JOBDIR`` crawl kept). The sandbox's targets
    are its own pages, so seeds on another site found none (recall 0, silently); a
    :class:`ConfigError` names the way to crawl that site (``FOCUSED_WEB=real``)."""
    seeds = seeds_setting(settings)
    if str(get(settings, "FOCUSED_WEB")) != "sandbox" or not seeds:
        return
    port = int(get(settings, "FOCUSED_SANDBOX_PORT")) or _kept_sandbox_port(settings)
    for url in seeds:
        parts = urlsplit(url)
        if port and (parts.scheme, parts.hostname, parts.port) == ("http", "127.0.0.1", port):
            continue
        where = f"http://127.0.0.1:{port}/" if port else "a free port: FOCUSED_SANDBOX_PORT=0"
        raise ConfigError(
            f"FOCUSED_SEEDS: {url!r} is not on the embedded sandbox that FOCUSED_WEB=sandbox"
            f" crawls ({where}), whose pages are the targets; crawl that site with"
            " -s FOCUSED_WEB=real (its targets from FOCUSED_LABELS), or seed the sandbox"
            " on a fixed FOCUSED_SANDBOX_PORT"
        )


def sandbox_port_files(settings: Any) -> tuple[Path | None, list[Path]]:
    """Where a sandbox crawl finds the port an earlier crawl of the same pages served
    the sandbox on, and where it records its own. A crawl that resumes a ``JOBDIR``
    (``JOBDIR/sandbox.port``) or adds to an output folder (``FOCUSED_CONTINUE``, the
    folder's ``sandbox.port``) serves the sandbox on the kept port, so its URLs are those
    of the pages already stored and none is stored twice under another port. Every
    sandbox crawl records its port in both places."""
    out = Path(str(get(settings, "FOCUSED_OUTPUT_DIR"))) / "sandbox.port"
    job = Path(str(settings.get("JOBDIR"))) / "sandbox.port" if settings.get("JOBDIR") else None
    kept = [p for p in (job, out if get(settings, "FOCUSED_CONTINUE") else None) if p]
    found = next((p for p in kept if p.is_file()), None)
    return found, [p for p in (job, out) if p]


def _kept_sandbox_port(settings: Any) -> int:
    """The port :func:`sandbox_port_files` finds kept, else 0."""
    found, _ = sandbox_port_files(settings)
    if found is None:
        return 0
    try:
        return int(found.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def check_seed(url: str, where: str = "FOCUSED_SEEDS") -> None:
    """A :class:`ConfigError` unless ``url`` is an http(s) URL with a host and a valid port
    (Scrapy's ``Request`` refuses a port out of range, with a traceback)."""
    try:
        check_url(url, where)
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a ValueError when out of range or not a number
    except TopicError as exc:
        raise ConfigError(str(exc)) from None
    except ValueError as exc:
        raise ConfigError(f"{where}: {url!r} is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise ConfigError(f"{where}: {url!r} has no host")
    from focused.web.sanitize import scheme_problem

    problem = scheme_problem(url)
    if problem == "credentials":  # as a link's: dropped (focused/links/ignored/credentials)
        shown = url.replace(f"{parts.password}@", "***@") if parts.password else url
        raise ConfigError(
            f"{where}: {shown!r} has credentials (user:password@), which the crawl refuses,"
            " as in links; give the URL without them"
        )
    if problem is not None:
        raise ConfigError(f"{where}: {url!r} has a host name Scrapy cannot fetch ({problem})")


#: the host of the embedded sandbox's pages
SANDBOX_HOST = "127.0.0.1"


def check_download_handlers(settings: Any, topic: Topic | None = None) -> None:
    """A :class:`ConfigError` when ``DOWNLOAD_HANDLERS`` turns off (``None``) the handler
    of a scheme the crawl's seeds need: ``http`` for the embedded sandbox (``FOCUSED_WEB``
    ``sandbox`` or ``auto``), the schemes of ``FOCUSED_SEEDS`` (else the topic's seeds)
    for the real web. Every request then failed ("Unsupported URL scheme", with Scrapy's
    robots.txt traceback) and the crawl ended "no page could be fetched ... (no host
    answered)", blaming the network or the download bounds."""
    try:
        handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
        off = {str(k).lower() for k, v in handlers.items() if v is None}
    except (TypeError, ValueError, AttributeError):
        return  # Scrapy says so itself
    if not off:
        return
    web = str(get(settings, "FOCUSED_WEB"))
    needed: dict[str, tuple[str, str]] = {}
    if web != "real" and not _seeds_as_given(settings):
        needed["http"] = ("the embedded sandbox's pages need", "no page would be fetched")
    if web != "sandbox":
        seeds = seeds_setting(settings) or (list(topic.seeds) if topic is not None else [])
        for url in seeds:
            why = (f"the seed {url} needs", "that seed would never be fetched")
            needed.setdefault(urlsplit(url).scheme.lower(), why)
    for scheme, (who, outcome) in sorted(needed.items()):
        if scheme in off:
            raise ConfigError(
                f"DOWNLOAD_HANDLERS turns off the {scheme} handler ({scheme!r}: None), which"
                f" {who}, so {outcome}; leave {scheme!r} out of DOWNLOAD_HANDLERS"
            )


def check_seeds_fetched(settings: Any, topic: Topic | None = None) -> None:
    """A :class:`ConfigError` for a seed that Scrapy would drop before fetching it: off
    ``FOCUSED_ALLOWED_DOMAINS`` (its offsite filter) or longer than ``URLLENGTH_LIMIT``
    (its URL length filter). Every seed must be fetched, as every seed must be an http(s)
    URL: a crawl that drops one, or all of them (0 pages, exit status 0), does not start.
    The seeds are ``FOCUSED_SEEDS``, else the topic's on ``FOCUSED_WEB=real``, else the
    sandbox's (on ``127.0.0.1``) on ``FOCUSED_WEB=sandbox``, or on ``auto`` when the
    topic's first seed is off the domains (the crawl then chooses the sandbox)."""
    web = str(get(settings, "FOCUSED_WEB"))
    where, seeds = "FOCUSED_SEEDS", seeds_setting(settings)
    if not seeds and topic is not None and web == "real":
        where = f"topic {topic.name!r} seeds"
        for url in topic.seeds:  # what is wrong with the URL itself first
            check_seed(url, where)
        seeds = [seed_url(url) for url in topic.seeds]
    domains = [d.strip() for d in get(settings, "FOCUSED_ALLOWED_DOMAINS")]
    # as Scrapy's OffsiteMiddleware.get_host_regex (an empty list allows every host)
    offsite = (
        re.compile(rf"^(.*\.)?({'|'.join(re.escape(d) for d in domains)})$") if domains else None
    )
    listed = ", ".join(d for d in domains if d) or "empty"
    if offsite is not None and not seeds and not offsite.match(SANDBOX_HOST):
        first = urlsplit(seed_url(topic.seeds[0])).hostname if topic and topic.seeds else None
        if web == "sandbox" or (web == "auto" and first and not offsite.match(first)):
            raise ConfigError(
                f"FOCUSED_ALLOWED_DOMAINS ({listed}) leaves out {SANDBOX_HOST}, the host of the"
                " embedded sandbox this crawl would crawl, so no page would be fetched; add"
                f" {SANDBOX_HOST} there, or crawl the real web (-s FOCUSED_WEB=real)"
            )
    limit = settings.getint("URLLENGTH_LIMIT") if _url_length_filtered(settings) else 0
    for url in seeds:
        host = urlsplit(url).hostname or ""
        if offsite is not None and not offsite.match(host):
            raise ConfigError(
                f"{where}: {url!r} is outside FOCUSED_ALLOWED_DOMAINS ({listed}), so it would"
                f" never be fetched; add {host!r} there, or leave the seed out"
            )
        if limit and len(url) > limit:
            raise ConfigError(
                f"{where}: {_shortened(url)!r} is {len(url)} characters long, over"
                f" URLLENGTH_LIMIT ({limit}), so it would never be fetched; shorten it, or"
                " raise URLLENGTH_LIMIT"
            )


def _url_length_filtered(settings: Any) -> bool:
    """Whether ``SPIDER_MIDDLEWARES`` has Scrapy's URL length filter (or a subclass, as
    the project's); True when that cannot be told (Scrapy reports a broken entry)."""
    from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    try:
        paths = build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES"))
        classes = [load_object(path) for path in paths]
    except _LOAD_ERRORS:
        return True
    return any(isinstance(c, type) and issubclass(c, UrlLengthMiddleware) for c in classes)


def _shortened(url: str, limit: int = 80) -> str:
    """``url`` for the one line: at most ``limit`` characters."""
    return url if len(url) <= limit else f"{url[:limit]}..."


def _check_domains(settings: Any, name: str, value: list[str]) -> None:
    """Host names only: Scrapy's offsite filter ignores an entry with a port or a URL, and
    then filters every seed."""
    for entry in (v.strip() for v in value):
        if not entry:
            continue
        host = urlsplit(entry if "://" in entry else f"//{entry}").hostname or ""
        if "://" in entry or "/" in entry or ":" in entry or host != entry.lower():
            hint = f" (say {host!r})" if host else ""
            raise ConfigError(
                f"{name} must be host names without a scheme, port or path, got {entry!r}{hint}"
            )


#: what a query parameter's name cannot hold: it would never match a link's (a query is
#: split at "&", each pair at its first "=")
_NOT_IN_PARAM = re.compile(r"[\s=&#?\"]")


def _check_params(settings: Any, name: str, value: list[str]) -> None:
    """Query parameter names (whitespace around each one is dropped): ``sid``, not
    ``sid=`` or ``?sid``, which would never match a link's parameter."""
    for entry in value:
        param = entry.strip()
        if param.startswith("*") or param.count("*") > 1:
            raise ConfigError(
                f"{name} must be query parameter names, a prefix ending in * (utm_*), got {param!r}"
            )
        if param and _NOT_IN_PARAM.search(param):
            bare = re.split(r"[=&#]", param.lstrip("?"))[0].strip()
            hint = f" (say {bare!r})" if bare and not _NOT_IN_PARAM.search(bare) else ""
            raise ConfigError(
                f"{name} must be query parameter names (-s {name}=sid,phpsessid), got"
                f" {param!r}{hint}"
            )


def session_params(settings: Any) -> list[str]:
    """``FOCUSED_SESSION_PARAMS`` as the names the spider strips from links: each
    without the whitespace around it (``-s FOCUSED_SESSION_PARAMS="sid, token"``), the
    empty ones left out."""
    return [p.strip() for p in get(settings, "FOCUSED_SESSION_PARAMS") if p.strip()]


def probe_scope(settings: Any) -> ProbeScope:
    """The scope the start-up probe of ``FOCUSED_WEB=auto``/``real`` keeps to, as the
    crawl does (:mod:`focused.web.probe`): ``FOCUSED_ALLOWED_NETWORKS``,
    ``FOCUSED_HOSTS`` and ``FOCUSED_ALLOWED_DOMAINS`` (checked by :func:`validate`)."""
    hosts = _checked_mapping("FOCUSED_HOSTS", get(settings, "FOCUSED_HOSTS"))
    return ProbeScope(
        networks=parse_networks(get(settings, "FOCUSED_ALLOWED_NETWORKS")),
        hosts={str(k): str(v) for k, v in hosts.items()},
        allowed_domains=tuple(d.strip() for d in get(settings, "FOCUSED_ALLOWED_DOMAINS")),
    )


def _check_networks(settings: Any, name: str, value: list[str]) -> None:
    for entry in value:
        try:
            parse_networks([entry])
        except ValueError:
            raise ConfigError(
                f"{name} must be networks (CIDR, e.g. 10.0.0.0/8) or addresses, got {entry!r}"
            ) from None


def _check_hosts(settings: Any, name: str, value: dict[Any, Any]) -> None:
    for host, address in value.items():
        if not str(host).strip() or not isinstance(address, str) or parse_host(address) is None:
            raise ConfigError(
                f"{name} must map host names to IP addresses, got {host!r}: {address!r}"
            )


def _check_page_threshold(settings: Any, name: str, value: float) -> None:
    """Below the largest page relevance A = 4B + C: the title weight + 1."""
    title_weight = _number(settings, "FOCUSED_TITLE_WEIGHT")
    _in_range(settings, name, 0.0, title_weight + 1.0, open_low=False)


def topics_dir(settings: Any) -> str | None:
    """``FOCUSED_TOPICS_DIR`` checked (:func:`_check_topics_dir`), for
    :func:`~focused.web.topics.load_topic`: None when empty (the project's ``topics/``).
    The crawl command and the spider read it before the topic, so a folder that is not
    there is said so, not an "unknown topic" with no topic available."""
    value = get(settings, "FOCUSED_TOPICS_DIR")
    if not value:
        return None
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(f"FOCUSED_TOPICS_DIR must be a string, got {value!r}")
    _check_topics_dir(settings, "FOCUSED_TOPICS_DIR", str(value))
    return str(value)


def _check_topics_dir(settings: Any, name: str, value: str) -> None:
    """A folder that exists (empty: the project's ``topics/``)."""
    if not value:
        return
    path = Path(value)
    if not path.exists():
        raise ConfigError(
            f"{name}: {value!r} does not exist; name a folder of topic files"
            " (or leave it empty for the project's topics/)"
        )
    if not path.is_dir():
        hint = (
            f"; to crawl that topic file, give -a topic={value}" if value.endswith(".toml") else ""
        )
        raise ConfigError(f"{name}: {value!r} is a file, not a folder of topic files{hint}")


def _check_labels(settings: Any, name: str, value: str) -> None:
    """A labels file must exist and be readable UTF-8 text (an http(s) URL is fetched when
    the crawl opens the real web, within the crawl's scope:
    :func:`focused.web.sites.load_labels`); it was ignored on the sandbox, and a
    traceback on the real web."""
    if not value.strip() or urlsplit(value).scheme in ("http", "https"):
        return
    path = Path(value)
    if not path.exists():
        raise ConfigError(f"{name}: {value!r} does not exist")
    try:
        path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{name}: {value!r} cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: {value!r} is not UTF-8 text (a labels TSV)") from None


_SPECIAL: dict[str, Callable[[Any, str, Any], None]] = {
    "urls": _check_seeds,
    "domains": _check_domains,
    "networks": _check_networks,
    "hosts": _check_hosts,
    "page_threshold": _check_page_threshold,
    "labels": _check_labels,
    "topics_dir": _check_topics_dir,
    "params": _check_params,
}


#: The focused spider's arguments (``-a NAME=VALUE``); besides them, any name that starts
#: with ``_``: scrapyd passes its own that way (``_job``, and ``_version`` when given).
SPIDER_ARGS = ("topic",)


#: spider arguments of Scrapy habit whose setting has another name
_ARG_SETTINGS = {"start_urls": "FOCUSED_SEEDS", "start_url": "FOCUSED_SEEDS"}


def check_spider_args(args: Mapping[str, Any]) -> None:
    """A :class:`ConfigError` for a spider argument the focused spider does not take (it
    would be ignored: ``-a strategy=bfs`` crawled with the default strategy), naming the
    ones it takes, and the setting to use when the name is one."""
    for name, value in args.items():
        if name in SPIDER_ARGS or name.startswith("_"):
            continue
        setting = _ARG_SETTINGS.get(name) or next(
            (s for s in (name.upper(), f"FOCUSED_{name.upper()}") if s in DEFAULTS), None
        )
        if setting is None and name.upper() in _scrapy_defaults():
            setting = name.upper()
        if setting is not None:
            hint = f"; use -s {setting}={value}"
        else:
            close = difflib.get_close_matches(name, SPIDER_ARGS, n=1, cutoff=0.6)
            hint = f"; did you mean -a {close[0]}={value}?" if close else ""
        takes = ", ".join(f"-a {a}=..." for a in SPIDER_ARGS)
        raise ConfigError(
            f"unknown spider argument -a {name}={value} (the focused spider takes {takes}){hint}"
        )


def check_repeated_args(pairs: list[str]) -> None:
    """A :class:`ConfigError` for a spider argument given twice with different values
    (``-a topic=chemistry -a topic=physics``): Scrapy keeps the last one and drops the
    other without a word, so the crawl was of physics alone. ``pairs``: the ``-a``
    options as written, ``NAME=VALUE``; the same value twice is left as it is."""
    seen: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = str(pair).partition("=")
        if not sep:
            continue  # Scrapy's own usage error
        if name in seen and seen[name] != value:
            raise ConfigError(
                f"spider argument -a {name} is given twice, as -a {name}={seen[name]} and"
                f" -a {name}={value}: a crawl takes one {name} (Scrapy would keep the last"
                " one without a word); give it once"
            )
        seen[name] = value


def _scrapy_defaults() -> frozenset[str]:
    from scrapy.settings import default_settings

    return frozenset(n for n in dir(default_settings) if n.isupper())


def check_keywords(topic: Topic) -> None:
    """A :class:`ConfigError` when no keyword of ``topic`` leaves a term once tokenised
    (punctuation only, stop words only): every page would score 0."""
    if not any(tokenize(term) for term in topic.keywords):
        words = ", ".join(repr(term) for term in topic.keywords)
        raise ConfigError(
            f"topic {topic.name!r}: no keyword leaves a term once tokenised ({words});"
            " give words (punctuation and stop words are dropped)"
        )


def seeds_setting(settings: Any) -> list[str]:
    """``FOCUSED_SEEDS`` as a list (a comma-separated string works too), each URL as
    Scrapy's ``Request`` makes it (:func:`seed_url`)."""
    return [seed_url(url) for url in _seeds_as_given(settings)]


def _seeds_as_given(settings: Any) -> list[str]:
    return [s.strip() for s in get(settings, "FOCUSED_SEEDS") if s.strip()]


def seed_url(url: str) -> str:
    """``url`` as Scrapy's ``Request`` makes it: a host of full-width digits and dots
    (``http://１２７．０．０．２/``) IDNA-mapped as a browser does (``127.0.0.2``), so the
    address checks see the host that is fetched; ``url`` itself when Scrapy refuses it
    (:func:`check_seed` says why)."""
    from scrapy import Request

    try:
        return Request(url).url
    except (TypeError, ValueError):
        return url


def check_output_dir(path: str) -> Path:
    """The output folder, created if needed; a :class:`ConfigError` when not writable."""
    return check_folder(path, "FOCUSED_OUTPUT_DIR")


def check_folder(path: str, setting: str) -> Path:
    """The folder ``setting`` names, created if needed; a :class:`ConfigError` when it
    cannot be (a file in the way) or is not writable (a read-only file system refuses
    root too)."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{setting} {path!r} cannot be created: {exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{setting} {path!r} is not writable")
    return folder


def claim_jobdir(settings: Any, crawler: Any = None) -> None:
    """Take ``JOBDIR``'s frontier journal for this process's crawl, before anything of
    it starts (:meth:`focused.frontier.journal.Journal.claim`; the scheduler is handed
    the same journal): a :class:`ConfigError` when another crawl (or program) has it,
    another running ``crawler`` of this process among them, or it cannot be opened.
    Nothing to do without ``JOBDIR``, with the Redis frontier, or with a scheduler that
    is not the project's (it does not keep the journal)."""
    jobdir = settings.get("JOBDIR")
    if not jobdir or str(get(settings, "FOCUSED_FRONTIER")) != "memory":
        return
    from scrapy.utils.misc import load_object

    from focused.frontier.journal import (
        DB_NAME,
        Journal,
        JournalBusy,
        JournalError,
        describe_owner,
    )
    from focused.scheduler import FocusedScheduler

    try:
        scheduler = load_object(settings.get("SCHEDULER"))
    except (ImportError, NameError, ValueError, TypeError):
        return  # Scrapy says so itself when it builds the scheduler
    if not (isinstance(scheduler, type) and issubclass(scheduler, FocusedScheduler)):
        return
    path = Path(jobdir) / DB_NAME
    try:
        Journal.claim(jobdir, crawler)
    except JournalBusy as exc:
        if exc.owner is not None:
            raise ConfigError(
                f"JOBDIR {str(jobdir)!r} is in use by another crawl ({describe_owner(exc.owner)});"
                " one crawl at a time per JOBDIR: wait for it to end, or give another JOBDIR"
            ) from None
        raise ConfigError(
            f"JOBDIR {str(jobdir)!r}: another program holds the write lock of {path}"
            f" ({exc.cause}); start the crawl again once it has let go"
        ) from None
    except JournalError as exc:
        raise ConfigError(
            f"JOBDIR {str(jobdir)!r}: cannot open the frontier journal {path}: {exc.cause}"
        ) from None
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(
            f"JOBDIR {str(jobdir)!r}: cannot open the frontier journal {path}: {exc}"
        ) from None


def check_database(path: Path, setting: str) -> None:
    """A :class:`ConfigError` when ``path`` exists and is not a readable SQLite database,
    or cannot be written. The path is quoted in the ``file:`` URI: unquoted, a folder
    named ``a?b`` opened (and created) the file ``a``, and ``p%41`` looked for ``pA``."""
    if not path.exists():
        return
    if not os.access(path, os.R_OK | os.W_OK):
        raise ConfigError(f"{setting}: {path} is not writable")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            con.execute("PRAGMA schema_version").fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"{setting}: {path} is not a usable SQLite database ({exc})") from None
