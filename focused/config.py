"""Reading and validating the ``FOCUSED_*`` settings (defaults in :mod:`focused.defaults`).

Every check raises :class:`ConfigError` with one line for the user; the ``crawl``
command prints it and exits non-zero before anything is fetched.
"""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from types import MappingProxyType
from typing import Any

from focused import strategies
from focused.defaults import get
from focused.errors import ConfigError  # defined there; focused.config.ConfigError works too
from focused.strategies.base import Strategy, StrategyParams
from focused.web.topics import Topic, TopicError, check_url

WEBS = ("auto", "sandbox", "real")
FRONTIERS = ("memory", "redis")


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


def validate(settings: Any, topic: Topic | None = None) -> None:
    """Check every ``FOCUSED_*`` setting; raise :class:`ConfigError` on the first bad one."""
    strategy_params(settings, topic)
    if _number(settings, "FOCUSED_M_INITIAL") <= 0:
        raise ConfigError("FOCUSED_M_INITIAL must be > 0")
    _in_range(settings, "FOCUSED_GENETIC_RATIO", 0.0, 1.0)
    _in_range(settings, "FOCUSED_ANCHOR_THRESHOLD", 0.0, 1.0, open_low=False)
    title_weight = _in_range(settings, "FOCUSED_TITLE_WEIGHT", 0.0, 1e6, open_low=False)
    _in_range(settings, "FOCUSED_PAGE_THRESHOLD", 0.0, title_weight + 1.0, open_low=False)
    _in_range(settings, "FOCUSED_TUNNEL_WIDENING", 0.0, 1.0, open_high=False)
    _in_range(settings, "FOCUSED_MAX_TUNNEL_HOPS", 0, 1000, open_low=False)
    _in_range(settings, "FOCUSED_BSBS_DEPTH", 0, 1000, open_low=False)
    _in_range(settings, "FOCUSED_SA_T0", 0.0, 1e6, open_low=False)
    _in_range(settings, "FOCUSED_SA_ALPHA", 0.0, 1.0, open_high=False)
    _in_range(settings, "FOCUSED_SA_T_MIN", 0.0, 1e6, open_low=False)
    _in_range(settings, "FOCUSED_SA_K", 1, 1e6, open_low=False)
    _in_range(settings, "FOCUSED_SANDBOX_PAGES", 10, 10_000_000, open_low=False)
    _in_range(settings, "FOCUSED_SANDBOX_PORT", 0, 65535, open_low=False, open_high=False)
    _number(settings, "FOCUSED_SEED")
    web = str(get(settings, "FOCUSED_WEB"))
    if web not in WEBS:
        raise ConfigError(f"FOCUSED_WEB must be one of {', '.join(WEBS)}, got {web!r}")
    frontier = str(get(settings, "FOCUSED_FRONTIER"))
    if frontier not in FRONTIERS:
        raise ConfigError(
            f"FOCUSED_FRONTIER must be one of {', '.join(FRONTIERS)}, got {frontier!r}"
        )
    if frontier == "redis":
        from focused.distributed.connection import check  # redis-py only when it is used

        check(settings)  # RedisUnavailable is a ConfigError: one line, exit 2
    for url in seeds_setting(settings):
        try:
            check_url(url, "FOCUSED_SEEDS")
        except TopicError as exc:
            raise ConfigError(str(exc)) from None
    _in_range(settings, "FOCUSED_MAX_PAGES_PER_HOST", 0, 1e12, open_low=False)
    _in_range(settings, "FOCUSED_STORE_GZIP_LEVEL", 0, 9, open_low=False, open_high=False)
    output = check_output_dir(str(get(settings, "FOCUSED_OUTPUT_DIR")))
    check_database(output / "pages.sqlite3", "FOCUSED_OUTPUT_DIR")
    if settings.get("JOBDIR"):
        check_database(Path(settings.get("JOBDIR")) / "frontier.sqlite3", "JOBDIR")


def seeds_setting(settings: Any) -> list[str]:
    """``FOCUSED_SEEDS`` as a list (a comma-separated string works too)."""
    return [s.strip() for s in get(settings, "FOCUSED_SEEDS") if s.strip()]


def check_output_dir(path: str) -> Path:
    """The output folder, created if needed; a :class:`ConfigError` when not writable."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"FOCUSED_OUTPUT_DIR {path!r} cannot be created: {exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"FOCUSED_OUTPUT_DIR {path!r} is not writable")
    return folder


def check_database(path: Path, setting: str) -> None:
    """A :class:`ConfigError` when ``path`` exists and is not a readable SQLite database."""
    if not path.exists():
        return
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            con.execute("PRAGMA schema_version").fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"{setting}: {path} is not a usable SQLite database ({exc})") from None
