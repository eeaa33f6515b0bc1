"""Reading and validating the ``FOCUSED_*`` settings (defaults in :mod:`focused.defaults`).

Every check raises :class:`ConfigError` with one line for the user; the ``crawl``
command prints it and exits non-zero before anything is fetched.
"""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Any

from focused import strategies
from focused.defaults import get
from focused.errors import ConfigError  # defined there; focused.config.ConfigError works too
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


def strategy(
    settings: Any, topic: Topic | None = None, targets: frozenset[str] = frozenset()
) -> Any:
    """The strategy object that ``FOCUSED_STRATEGY`` and its parameters describe.

    ``targets``: the crawl's known target URLs (only the benchmark's ``oracle`` reads them).
    """
    name = str(get(settings, "FOCUSED_STRATEGY")).strip()
    try:
        return strategies.build(
            name,
            m0=_number(settings, "FOCUSED_M_INITIAL"),
            ratio=_number(settings, "FOCUSED_GENETIC_RATIO"),
            anchor_threshold=threshold(settings, topic, "anchor"),
            max_hops=int(_number(settings, "FOCUSED_MAX_TUNNEL_HOPS")),
            widening=_number(settings, "FOCUSED_TUNNEL_WIDENING"),
            bsbs_depth=int(_number(settings, "FOCUSED_BSBS_DEPTH")),
            title_weight=_number(settings, "FOCUSED_TITLE_WEIGHT"),
            targets=targets,
            keywords=topic.keywords if topic is not None else None,
            learning=learning_settings(settings) if name == "learning" else None,
        )
    except strategies.UnknownStrategy as exc:
        raise ConfigError(str(exc)) from None


def learning_settings(settings: Any) -> dict[str, Any]:
    """Parameters of the ``learning`` strategy (:class:`~focused.strategies.learning.
    LearningStrategy` fields) from the ``FOCUSED_LEARNING_*`` settings, checked."""
    values = {
        "shrinkage": _in_range(settings, "FOCUSED_LEARNING_SHRINKAGE", 0.0, 1e6),
        "context_share": _in_range(
            settings, "FOCUSED_LEARNING_CONTEXT_SHARE", 0.0, 1.0, open_low=False, open_high=False
        ),
        "label_floor": _in_range(settings, "FOCUSED_LEARNING_LABEL_FLOOR", 0.0, 1.0),
        "parent_share": _in_range(
            settings, "FOCUSED_LEARNING_PARENT_SHARE", 0.0, 1.0, open_low=False, open_high=False
        ),
        "keyword_pages": _in_range(
            settings, "FOCUSED_LEARNING_KEYWORD_PAGES", 0.0, 1e6, open_low=False
        ),
        "expand_terms": int(
            _in_range(settings, "FOCUSED_LEARNING_EXPAND_TERMS", 0, 10_000, open_low=False)
        ),
        "expand_cap": _in_range(settings, "FOCUSED_LEARNING_EXPAND_CAP", 0.0, 1e6, open_low=False),
        "classifier_prior": _in_range(
            settings, "FOCUSED_LEARNING_CLASSIFIER_PRIOR", 0.0, 1e9, open_low=False
        ),
        "random_seed": int(_number(settings, "FOCUSED_SEED")),
        "hub_prior": _in_range(settings, "FOCUSED_LEARNING_HUB_PRIOR", 0.0, 1e6, open_low=False),
        # links carry rescoring evidence only for a frontier that will rescore them
        "rescore_links": int(_in_range(settings, "FOCUSED_RESCORE_EVERY", 0, 1e12, open_low=False))
        > 0
        and str(get(settings, "FOCUSED_FRONTIER")).strip() == "memory",
    }
    _in_range(settings, "FOCUSED_RESCORE_BUDGET", 0, 1e12, open_low=False)
    try:
        values["link_model"] = bool(get(settings, "FOCUSED_LEARNING_CLASSIFIER"))
    except ValueError:
        raise ConfigError(
            "FOCUSED_LEARNING_CLASSIFIER must be true or false, got "
            f"{settings.get('FOCUSED_LEARNING_CLASSIFIER')!r}"
        ) from None
    return values


def validate(settings: Any, topic: Topic | None = None) -> None:
    """Check every ``FOCUSED_*`` setting; raise :class:`ConfigError` on the first bad one."""
    strategy(settings, topic)
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
