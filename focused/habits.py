"""Scrapy settings a Scrapy user sets by habit that the focused crawler does not honour.

Each one, changed from Scrapy's default (and from this project's ``settings.py``), is
one WARNING line at crawl start saying what the crawler does instead; pure functions
here (settings in, lines out), logged by the Scrapy glue that runs whatever starts the
crawl (``scrapy crawl``, scrapyd, a ``CrawlerProcess`` script):

- the focused scheduler (:class:`focused.scheduler.FocusedScheduler` and the Redis
  one, in their ``from_crawler``): :func:`ignored_by_scheduler` (Scrapy's queue classes
  and ``DUPEFILTER_CLASS``: it keeps its own frontier and seen-URL set);
- :class:`SettingsAddon` (in ``ADDONS``) makes a Scrapy setting that Scrapy reads
  without converting it work from the command line too (``-s
  HTTPERROR_ALLOWED_CODES=404``: text, which matched no status);
- the priority middleware (:class:`focused.middlewares.FocusedPriorityMiddleware`, in
  its ``from_crawler``): :func:`ignored_by_strategy` (``DEPTH_PRIORITY``: the strategy
  sets every request's priority after Scrapy's ``DepthMiddleware``) and
  :func:`other_scheduler` (a ``SCHEDULER`` that is not the focused one: the strategy's
  priorities then go to Scrapy's queues, without the focused scheduler's work);
- the focused spider (in its ``from_crawler``): :func:`missing_components` (a whole
  ``ITEM_PIPELINES``, ``SPIDER_MIDDLEWARES``, ``EXTENSIONS`` or ``DOWNLOADER_MIDDLEWARES``
  dict of one's own replaces the project's, and a script's ``CrawlerProcess({...})``
  without the project's settings has none of them), and :func:`ignored_environment`
  (``SCRAPY_FOCUSED_STRATEGY=bfs scrapy crawl ...``: Scrapy read settings from
  ``SCRAPY_*`` environment variables until 2.8 and reads none now), and
  :func:`unknown_feed_fields` (``FEED_EXPORT_FIELDS=url,titel``: an empty column).
"""

from __future__ import annotations

import sys
from typing import Any

from scrapy.settings import default_settings
from scrapy.utils.misc import load_object

__all__ = [
    "SCHEDULER_PATH",
    "SettingsAddon",
    "QUEUE_SETTINGS",
    "changed",
    "ignored_by_scheduler",
    "ignored_by_strategy",
    "ignored_environment",
    "missing_components",
    "unknown_feed_fields",
    "other_scheduler",
]

SCHEDULER_PATH = "focused.scheduler.FocusedScheduler"

#: Scrapy's queue settings the focused scheduler does not use, and what it does instead
QUEUE_SETTINGS: dict[str, str] = {
    "SCHEDULER_MEMORY_QUEUE": (
        "the focused scheduler orders requests by the strategy's priorities"
        " (FOCUSED_STRATEGY), the first found first among equals; FOCUSED_STRATEGY=bfs"
        " crawls breadth-first"
    ),
    "SCHEDULER_DISK_QUEUE": (
        "with JOBDIR the focused scheduler journals its frontier in JOBDIR/frontier.sqlite3"
    ),
    "SCHEDULER_PRIORITY_QUEUE": (
        "the focused scheduler keeps one frontier ordered by the strategy's priorities"
        " (FOCUSED_STRATEGY), picking among the hosts free to take a request"
        " (FOCUSED_HOST_AWARE)"
    ),
    "SCHEDULER_START_MEMORY_QUEUE": (
        "the focused scheduler queues the start requests (seeds) in its frontier with the"
        " others, by the strategy's priorities"
    ),
    "SCHEDULER_START_DISK_QUEUE": (
        "the focused scheduler queues the start requests (seeds) in its frontier with the"
        " others (journaled in JOBDIR/frontier.sqlite3)"
    ),
}

_DUPEFILTER = (
    "the focused scheduler drops a URL it has seen (its own seen-URL set, by canonical URL;"
    " a waiting URL found again with a higher priority moves up), and lets a request with"
    " dont_filter=True through"
)


def _name(value: Any) -> str:
    """A setting's value as the user would write it (a class by its dotted path)."""
    if isinstance(value, type):
        module = sys.modules.get(value.__module__)
        # the name the module gives it (a class made by a factory has another __qualname__)
        names = [k for k, v in vars(module).items() if v is value] if module else []
        return f"{value.__module__}.{names[0] if names else value.__qualname__}"
    return str(value)


def _same_object(a: Any, b: Any) -> bool:
    """Whether two class settings (dotted paths or classes) name the same class."""
    if _name(a) == _name(b):
        return True
    try:
        return bool(load_object(a) is load_object(b))
    except (ImportError, NameError, ValueError, AttributeError, TypeError):
        return False


def _project_value(name: str) -> Any:
    """The value this project's ``settings.py`` gives ``name`` (``None``: none)."""
    from focused import settings as project

    return getattr(project, name, None)


def changed(settings: Any, name: str) -> bool:
    """Whether the class setting ``name`` names another class than Scrapy's default and
    this project's ``settings.py``."""
    value = settings.get(name)
    if value is None:
        return False
    shipped = [getattr(default_settings, name, None), _project_value(name)]
    return not any(s is not None and _same_object(value, s) for s in shipped)


def ignored_by_scheduler(settings: Any) -> list[str]:
    """One line for each of Scrapy's scheduling settings the focused scheduler ignores
    that the user changed: the queue classes and ``DUPEFILTER_CLASS``."""
    lines = [
        f"{name}={_name(settings.get(name))} is ignored: {instead}"
        for name, instead in QUEUE_SETTINGS.items()
        if changed(settings, name)
    ]
    if changed(settings, "DUPEFILTER_CLASS"):
        lines.append(
            f"DUPEFILTER_CLASS={_name(settings.get('DUPEFILTER_CLASS'))} is ignored: {_DUPEFILTER}"
        )
    return lines


def ignored_by_strategy(settings: Any, strategy: str) -> list[str]:
    """``DEPTH_PRIORITY`` set to anything but 0: the strategy (its name ``strategy``) sets
    every request's priority after Scrapy's ``DepthMiddleware`` has adjusted it."""
    raw = settings.get("DEPTH_PRIORITY")
    try:
        if settings.getint("DEPTH_PRIORITY") == 0:
            return []
    except (TypeError, ValueError):
        pass  # Scrapy's DepthMiddleware reports it
    return [
        f"DEPTH_PRIORITY={raw} is ignored: the order comes from FOCUSED_STRATEGY"
        f" ({strategy}), which sets every request's priority; use FOCUSED_STRATEGY=bfs for"
        " breadth-first"
    ]


def other_scheduler(settings: Any, strategy: str) -> str | None:
    """One line when ``SCHEDULER`` is not the focused scheduler (or a subclass of it):
    the strategy still sets each request's priority, but Scrapy's (or the user's)
    scheduler orders them; ``None`` when it is the focused one."""
    value = settings.get("SCHEDULER")
    try:
        cls = load_object(value)
        focused_cls = load_object(SCHEDULER_PATH)
    except (ImportError, NameError, ValueError, AttributeError, TypeError):
        return None  # Scrapy reports a scheduler it cannot load
    # not issubclass: Scrapy's BaseScheduler counts any class with a scheduler's methods
    if isinstance(cls, type) and focused_cls in cls.__mro__:
        return None
    return (
        f"SCHEDULER={_name(value)} is not {SCHEDULER_PATH}: the strategy {strategy} still"
        " sets each request's priority, but that scheduler orders them (Scrapy's: highest"
        " priority first, ties by SCHEDULER_MEMORY_QUEUE, dupes by DUPEFILTER_CLASS), with no"
        " annealing or host-aware pick, no promotion of a waiting URL found again, no"
        " focused/queue/* stats, and JOBDIR resumed by Scrapy's own queues instead of the"
        " frontier journal"
    )


#: the project's components a focused crawl needs: the setting that enables each, its
#: import path, and what the crawl does without it
NEEDED: tuple[tuple[str, str, str], ...] = (
    ("ITEM_PIPELINES", "focused.pipelines.PageStorePipeline", "no page is stored in {output}"),
    (
        "SPIDER_MIDDLEWARES",
        "focused.middlewares.FocusedPriorityMiddleware",
        "the strategy {strategy} scores no link (requests keep Scrapy's order)",
    ),
    (
        "EXTENSIONS",
        "focused.extensions.CrawlOutputExtension",
        "no stats.json, settings.json or report.html is written in {output}",
    ),
    (
        "DOWNLOADER_MIDDLEWARES",
        "focused.addressfilter.AddressFilterMiddleware",
        "links and redirects to internal addresses (the cloud metadata service, the local"
        " network, loopback) are fetched",
    ),
)


def _enables(settings: Any, setting: str, path: str) -> bool | None:
    """Whether the component dict ``setting`` (with Scrapy's base) enables the class at
    ``path`` or a subclass of it; None when a component does not load (Scrapy says so).
    Scrapy's own components (``scrapy.*`` paths) are not imported for this: none is a
    subclass of the project's, and importing each (aiohttp for the remote control)
    cost every crawl's start."""
    from scrapy.utils.conf import build_component_list

    needed = load_object(path)
    try:
        classes = [
            load_object(c) if isinstance(c, str) else c
            for c in build_component_list(settings.getwithbase(setting))
            if not (isinstance(c, str) and c.startswith("scrapy.") and c != path)
        ]
    except (ImportError, NameError, ValueError, AttributeError, TypeError):
        return None
    return any(isinstance(c, type) and issubclass(c, needed) for c in classes)


#: the downloader middlewares that keep a crawl off internal addresses, at the project's
#: orders (focused/settings.py)
ADDRESS_GUARDS: dict[str, int] = {
    "focused.addressfilter.AddressFilterMiddleware": 50,
    "focused.addressfilter.RedirectAddressFilterMiddleware": 650,
    "focused.addressfilter.ProxyAddressFilterMiddleware": 760,
}


def add_address_guards(settings: Any) -> bool:
    """Enable :data:`ADDRESS_GUARDS` in ``DOWNLOADER_MIDDLEWARES`` when that dict names
    none of them (a script's ``CrawlerProcess({...})`` without the project's settings),
    so that no crawl of the focused spider fetches an internal address by mistake; a dict
    that names one, even as ``None`` (turned off on purpose), is left as it is, and so is
    one given with ``-s`` (the crawl command refuses it in one line: Scrapy merges the
    command line's settings into the crawler again, over what this adds). True when they
    were added."""
    from scrapy.settings import SETTINGS_PRIORITIES

    if (settings.getpriority("DOWNLOADER_MIDDLEWARES") or 0) >= SETTINGS_PRIORITIES["cmdline"]:
        return False
    mws = settings["DOWNLOADER_MIDDLEWARES"]
    named = {c if isinstance(c, str) else f"{c.__module__}.{c.__qualname__}" for c in mws}
    if named & ADDRESS_GUARDS.keys() or not hasattr(mws, "set"):
        return False
    for path, order in ADDRESS_GUARDS.items():
        mws.set(path, order, priority="default")  # any order the user gives wins
    return True


def missing_components(settings: Any, output: str, strategy: str) -> list[str]:
    """One line for each of :data:`NEEDED` that the crawl's settings leave out, and a
    last one when the crawl runs without the project's settings at all (a script's
    ``CrawlerProcess({...})`` instead of ``CrawlerProcess(get_project_settings())``)."""
    lines = [
        f"{path} is not in {setting}: {consequence.format(output=output, strategy=strategy)}"
        for setting, path, consequence in NEEDED
        if _enables(settings, setting, path) is False
    ]
    without = len(lines)
    core = len(NEEDED) - 1  # the address filter is added when missing: add_address_guards
    if without >= core and other_scheduler(settings, strategy) is not None:
        lines.append(
            "the crawl runs without the project's settings (focused.settings: Scrapy's"
            " scheduler, no robots.txt, no page store); make the CrawlerProcess with"
            " scrapy.utils.project.get_project_settings() (SCRAPY_SETTINGS_MODULE="
            "focused.settings) and set yours on it"
        )
    return lines


class SettingsAddon:
    """A Scrapy add-on (the project's ``ADDONS``, so for ``scrapy crawl``, scrapyd jobs
    and ``CrawlerProcess`` alike) that turns the status-code lists of
    :data:`focused.config.STATUS_LIST_SETTINGS` given as text (``-s
    HTTPERROR_ALLOWED_CODES=404,410``) into lists of numbers, at the priority they were
    set with: Scrapy's ``HttpErrorMiddleware`` compares a response's status with the
    entries as they are, so ``"404"`` let no 404 through. A value that is not a list of
    codes is left as it is (the crawl command refuses it in one line).

    With ``REMOTE_CONTROL_ENABLED`` off (the project's setting), it also takes Scrapy's
    ``RemoteControl`` out of ``EXTENSIONS_BASE``: Scrapy imported it (and aiohttp with
    it, 0.1-0.15 s of every crawl's start) only for it to find itself disabled."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: Any) -> None:
        """A script's ``CrawlerProcess`` is being made: its logging settings checked
        before Scrapy sets its logging up from them, as the project's commands check
        them (:func:`focused.cli.check_script_logging`)."""
        from focused.cli import check_script_logging

        check_script_logging(settings)

    def update_settings(self, settings: Any) -> None:
        from focused.config import STATUS_LIST_SETTINGS, status_codes

        for name in STATUS_LIST_SETTINGS:
            raw = settings.get(name)
            codes = status_codes(raw) if raw else None
            if codes is not None and codes != raw:
                settings.set(name, codes, priority=settings.getpriority(name) or 0)
        _drop_remote_control(settings)


#: Scrapy's remote-control extension (its module imports aiohttp)
REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


#: the ``SCRAPY_*`` environment variables Scrapy still reads (``get_project_settings``)
SCRAPY_ENVIRONMENT = frozenset({"CHECK", "PROJECT", "PYTHON_SHELL", "SETTINGS_MODULE"})


def ignored_environment(environ: Any) -> list[str]:
    """One line for each ``SCRAPY_<SETTING>`` environment variable that names a setting
    (Scrapy's or a ``FOCUSED_*`` one): Scrapy took it as that setting until 2.8 and now
    ignores it without a word, so ``SCRAPY_FOCUSED_STRATEGY=bfs`` crawled with the
    default strategy. Its value is not repeated (it may hold a password)."""
    from focused.defaults import DEFAULTS

    lines = []
    for key in sorted(environ):
        name = key[len("SCRAPY_") :]
        if not key.startswith("SCRAPY_") or name in SCRAPY_ENVIRONMENT:
            continue
        if name in DEFAULTS or (name.isupper() and hasattr(default_settings, name)):
            lines.append(
                f"the environment variable {key} is ignored: Scrapy reads no setting from"
                f" SCRAPY_* variables (since Scrapy 2.8); use -s {name}=... (or settings.py)"
            )
    return lines


def unknown_feed_fields(settings: Any, fields: list[str]) -> list[str]:
    """One line for each field that ``FEED_EXPORT_FIELDS`` (or a feed's ``fields``
    option in ``FEEDS``) names and the spider's items (whose fields are ``fields``) do
    not have: a typo (``-s FEED_EXPORT_FIELDS=url,titel``) made a column that stayed
    empty in every row (CSV) or a field left out of every item, without a word. A
    pipeline of one's own that yields other items may add it: a WARNING, no refusal."""
    import difflib

    asked: list[tuple[str, str]] = []  # (where, field)
    try:
        named = settings.getdictorlist("FEED_EXPORT_FIELDS")
        feeds = settings.getdict("FEEDS")
    except (TypeError, ValueError):
        return []  # refused as a Scrapy setting of the wrong type
    asked += [("FEED_EXPORT_FIELDS", str(name)) for name in named]
    for uri, options in feeds.items():
        own = options.get("fields") if isinstance(options, dict) else None
        if isinstance(own, (list, tuple, dict)):
            asked += [(f"the fields option of the feed {uri}", str(name)) for name in own]
    lines = []
    for where, name in asked:
        if name in fields:
            continue
        close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"they have {', '.join(fields)}"
        lines.append(
            f"{where} names {name!r}, which the focused spider's items do not have ({hint}):"
            " every item is exported without it (an empty CSV column)"
        )
    return lines


def _drop_remote_control(settings: Any) -> None:
    """``EXTENSIONS_BASE`` without :data:`REMOTE_CONTROL` when it is disabled; an
    ``EXTENSIONS`` of one's own that names it still loads it (it stays disabled)."""
    try:
        if settings.getbool("REMOTE_CONTROL_ENABLED"):
            return
    except ValueError:  # not a boolean: left to Scrapy's own error
        return
    base = settings.getdict("EXTENSIONS_BASE")
    if base.get(REMOTE_CONTROL) is not None:
        base[REMOTE_CONTROL] = None
        settings.set("EXTENSIONS_BASE", base, priority=settings.getpriority("EXTENSIONS_BASE") or 0)
