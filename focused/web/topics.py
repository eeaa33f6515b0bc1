"""Topics: weighted keywords, seed URLs and known targets, one TOML file per topic.

A topic file ``topics/<name>.toml`` looks like::

    name = "chemistry"
    description = "Chemistry, in Chinese and English"
    category = "subject.Science.Chemistry"   # label prefix of a target (optional)
    seeds = ["https://en.wikipedia.org/wiki/Chemistry"]
    targets = []                              # known target URLs (optional)

    [keywords]                                # term = weight (> 0)
    "化学" = 5
    chemistry = 5

    [thresholds]                              # optional per-topic overrides
    page = 2.0                                # FOCUSED_PAGE_THRESHOLD
    anchor = 0.2                              # FOCUSED_ANCHOR_THRESHOLD

Gao & Han derive keyword weights from authority pages; here they are
written by hand and can be tuned in the file.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import get_close_matches
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from urllib.parse import urlsplit

#: The project's topics folder (a checkout); the egg carries a copy in focused/topics.
PROJECT_TOPICS = Path(__file__).resolve().parents[2] / "topics"

THRESHOLD_RANGES = {"page": (0.0, 5.0), "anchor": (0.0, 1.0)}


class TopicError(ValueError):
    """A topic that cannot be used; the message is one line meant for the user."""


@dataclass(frozen=True)
class Topic:
    name: str
    keywords: dict[str, float]
    seeds: list[str]
    targets: list[str] = field(default_factory=list)
    category: str = ""
    description: str = ""
    thresholds: dict[str, float] = field(default_factory=dict)
    source: str = ""

    def __str__(self) -> str:
        """The topic's name: what ``%(topic)s`` in a feed URI (Scrapy's spider attribute
        parameters: the spider's ``topic`` is this object) and a log line show."""
        return self.name


def topics_dir(configured: str | Path | None = None) -> Path | Traversable:
    """The folder the topics are read from.

    Outside a checkout (an egg deployed to scrapyd is a zip file) it is the package data
    ``focused/topics``, a :class:`~importlib.resources.abc.Traversable` and not a path.
    """
    if configured:
        return Path(configured)
    if PROJECT_TOPICS.is_dir():
        return PROJECT_TOPICS
    return resources.files("focused") / "topics"


def available(directory: Path | Traversable) -> list[str]:
    """Names of the topics in ``directory``."""
    if not directory.is_dir():
        return []
    return sorted(p.name[:-5] for p in directory.iterdir() if p.name.endswith(".toml"))


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """The line for a topic file in another encoding than UTF-8 (one saved in GBK was
    ``'utf-8' codec can't decode byte 0xbb in position 1116``): where, and what to do."""
    line = bytes(exc.object[: exc.start]).count(b"\n") + 1
    return (
        f"topic file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on line"
        f" {line}): a TOML file is UTF-8; save it as UTF-8 (iconv -f GBK -t UTF-8 for a"
        " file in GBK)"
    )


def load_topic(name_or_path: str, directory: str | Path | None = None) -> Topic:
    """Load and validate a topic by name (``chemistry``) or by path to a ``.toml`` file."""
    if not name_or_path:
        names = ", ".join(available(topics_dir(directory))) or "none"
        raise TopicError(
            "no topic given: use -a topic=NAME or a path to a topic file;"
            f" available topics: {names}"
        )
    candidate = Path(name_or_path)
    path: Path | Traversable
    if name_or_path.endswith(".toml") or candidate.is_file():
        path = candidate
        if not path.is_file():
            raise TopicError(f"topic file {path} does not exist")
    else:
        folder = topics_dir(directory)
        if directory and not folder.is_dir():  # FOCUSED_TOPICS_DIR (the crawl checks it first)
            why = "is not a folder" if Path(directory).exists() else "does not exist"
            raise TopicError(f"topics folder {directory} {why}")
        path = folder / f"{name_or_path}.toml"
        if not path.is_file():
            known = available(folder)
            names = ", ".join(known) or "none"
            close = get_close_matches(name_or_path.lower(), known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise TopicError(f"unknown topic {name_or_path!r}{hint}; available topics: {names}")
    try:
        # utf-8-sig: a file saved with a byte-order mark (Windows Notepad) was a TOML
        # syntax error "Invalid statement (at line 1, column 1)"
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:  # GBK, Latin-1...: TOML is UTF-8
        raise TopicError(_not_utf8(path, exc)) from None
    except OSError as exc:
        raise TopicError(f"topic file {path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TopicError(f"topic file {path}: TOML syntax error: {exc}") from None
    return parse_topic(data, path)


_Fail = Callable[[str], TopicError]  # a problem -> the error naming the topic file


def parse_topic(data: dict, path: Path | Traversable | str) -> Topic:
    """Validate the parsed TOML of a topic file."""

    def fail(problem: str) -> TopicError:
        return TopicError(f"topic file {path}: {problem}")

    known = {"name", "description", "category", "seeds", "targets", "keywords", "thresholds"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    weights = _keyword_weights(data.get("keywords"), fail)
    seeds = data.get("seeds")
    for key in ("seeds", "targets"):
        # a string was taken for its characters ("'h' is not an http(s) URL"), a number
        # or a date was a TypeError traceback
        value = data.get(key, [])
        if not isinstance(value, list):
            shown = f"{value!r}" if len(repr(value)) <= 80 else f"a {type(value).__name__}"
            raise fail(f'{key} must be a list of URLs ({key} = ["https://...", ...]), got {shown}')
    if not seeds:
        raise fail('no seeds: give seeds = ["https://...", ...]')
    for key in ("seeds", "targets"):
        for url in data.get(key, []):
            check_url(url, f"{path}: {key}")
    thresholds = data.get("thresholds", {})
    _check_thresholds(thresholds, fail)
    name = data.get("name") or Path(str(path)).stem
    return Topic(
        name=str(name),
        keywords=weights,
        seeds=[str(s) for s in seeds],
        targets=[str(t) for t in data.get("targets", [])],
        category=str(data.get("category", "")),
        description=str(data.get("description", "")),
        thresholds={k: float(v) for k, v in thresholds.items()},
        source=str(path),
    )


def _keyword_weights(keywords: object, fail: _Fail) -> dict[str, float]:
    """The ``[keywords]`` table as term -> weight: non-empty, every weight a number > 0."""
    if not isinstance(keywords, dict) or not keywords:
        raise fail("no [keywords] table (term = weight) or it is empty")
    weights: dict[str, float] = {}
    for term, weight in keywords.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise fail(f"keyword {term!r} has a weight that is not a number: {weight!r}")
        if not math.isfinite(weight) or weight <= 0:
            raise fail(f"keyword {term!r} has weight {weight}; weights must be > 0")
        if not term.strip():
            raise fail("an empty keyword")
        weights[term.strip()] = float(weight)
    return weights


def _check_thresholds(thresholds: object, fail: _Fail) -> None:
    """The ``[thresholds]`` table: known keys only, each a number inside its range."""
    if not isinstance(thresholds, dict):
        raise fail("[thresholds] must be a table")
    for key, value in thresholds.items():
        if key not in THRESHOLD_RANGES:
            raise fail(f"unknown threshold {key!r}; known: {', '.join(THRESHOLD_RANGES)}")
        low, high = THRESHOLD_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"threshold {key} is not a number: {value!r}")
        if not low <= value < high:
            raise fail(f"threshold {key} = {value} is outside [{low}, {high})")


def check_url(url: object, where: str) -> str:
    """``url`` when it is an absolute http(s) URL, else a :class:`TopicError`."""
    if not isinstance(url, str):
        raise TopicError(f"{where}: {url!r} is not a string")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port out of range
    except ValueError as exc:  # e.g. "http://[::1" (an unclosed IPv6 address)
        raise TopicError(f"{where}: {url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TopicError(f"{where}: {url!r} is not an http(s) URL")
    if port == 0:
        raise TopicError(f"{where}: {url!r} has port 0")
    return url
