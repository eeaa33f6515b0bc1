"""What grows in a long focused crawl: resident set and the sizes of what the crawler keeps.

One focused crawl of the sandbox with the settings of ``bench.speed``'s peak-RSS crawl
(``CONCURRENT_REQUESTS`` 16, ``annealing``, the chemistry seeds of the 20,000-page
sandbox) plus the :class:`GrowthProbe` extension. At each page count of ``--at`` the
probe writes one JSON line: the process's resident set now and at its peak
(``/proc/self/status``), the live objects by type (``gc``), the entries and deep size of
every container reachable from the project's objects and module globals, and, with
``--trace FROM``, ``tracemalloc``'s growth since page ``FROM`` grouped by source line::

    flock /tmp/bench.lock .venv/bin/python -m bench.rss_growth --pages 20000 \\
        --at 1000,3000,10000,19000 --out out/bench/rss-growth.jsonl

Tracing slows the crawl ~2x and its own bookkeeping inflates the resident set: read the
traced sizes, not the RSS, of a run with ``--trace``.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import sys
import time
import tracemalloc
import types
from pathlib import Path
from typing import Any

from scrapy import signals

from bench import speed

ROOT = Path(__file__).resolve().parent.parent


def _status() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile")):
            name, value = line.split(":", 1)
            out[name] = int(value.split()[0])
    return out


_LEAF = (str, bytes, int, float, bool, type(None), bytearray, memoryview, range)
_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _module(t: type) -> str:
    m = getattr(t, "__module__", "")
    return m if isinstance(m, str) else ""


def deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes of ``obj`` and what it holds (containers, ``focused`` objects, numpy arrays),
    each object counted once across calls sharing ``seen``; modules, classes, functions and
    objects of other packages (Scrapy's, Twisted's) are not followed."""
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        i = id(o)
        if i in seen or isinstance(o, _SKIP):
            continue
        seen.add(i)
        try:
            total += sys.getsizeof(o)
        except TypeError:
            continue
        if isinstance(o, _LEAF):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(o)
        elif _module(type(o)).startswith("numpy") and hasattr(o, "nbytes"):
            if getattr(o, "base", None) is None:
                total += int(o.nbytes)
        elif _module(type(o)).startswith(("focused", "bench")):
            stack.extend(value for _, value in _attributes(o))
    return total


def _attributes(o: Any) -> list[tuple[str, Any]]:
    """(name, value) of ``o``'s instance attributes (``__dict__`` and ``__slots__``)."""
    d = getattr(o, "__dict__", None)
    items = list(d.items()) if d is not None else []
    for name in getattr(type(o), "__slots__", ()):
        if hasattr(o, name):
            items.append((name, getattr(o, name)))
    return items


def _entries(o: Any) -> int | None:
    try:
        return len(o)
    except TypeError:
        return None


def structures(min_bytes: int = 200_000) -> list[dict[str, Any]]:
    """Every attribute of a live ``focused`` object and every global of a ``focused``
    module holding at least ``min_bytes`` (deep, each object counted once, largest first
    claimed first is not guaranteed: the order is the objects')."""
    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    owners = [(n, m) for n, m in list(sys.modules.items()) if n.startswith("focused") and m]
    owners += [
        (f"{_module(type(o))}.{type(o).__qualname__}@{id(o):x}", o)
        for o in gc.get_objects()
        if _module(type(o)).startswith("focused") and not isinstance(o, _SKIP)
    ]
    for owner, o in owners:
        items = list(vars(o).items()) if isinstance(o, types.ModuleType) else _attributes(o)
        for attr, value in items:
            info = getattr(value, "cache_info", None)
            if callable(info):  # an lru_cache: its entries, not reachable from here
                rows.append({"owner": owner, "attr": attr, "lru": info()._asdict()})
                continue
            if isinstance(value, _SKIP):
                continue
            if _module(type(value)).startswith("focused") and not isinstance(
                value, (dict, list, set)
            ):
                continue  # an object of its own: counted as an owner
            size = deep_size(value, seen)
            if size >= min_bytes:
                rows.append(
                    {"owner": owner, "attr": attr, "entries": _entries(value), "bytes": size}
                )
    rows.sort(key=lambda r: -r.get("bytes", 0))
    return rows


class GrowthProbe:
    """Extension: one JSON line at each page count of ``RSS_GROWTH_AT`` (comma-separated)
    to the file ``RSS_GROWTH_FILE``; ``RSS_GROWTH_TRACE_FROM`` > 0 starts ``tracemalloc``
    at that page count (``RSS_GROWTH_FRAMES`` frames a trace, default 2) and reports its
    growth since then at the later counts."""

    def __init__(self, path: str, at: list[int], trace_from: int, frames: int = 2) -> None:
        self.path = Path(path)
        self.at = sorted(at)
        self.trace_from = trace_from
        self.frames = frames
        self.items = 0
        self.base: tracemalloc.Snapshot | None = None
        self.started = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler: Any) -> GrowthProbe:
        s = crawler.settings
        at = [int(x) for x in s.get("RSS_GROWTH_AT", "").split(",") if x.strip()]
        probe = cls(
            s.get("RSS_GROWTH_FILE"),
            at,
            s.getint("RSS_GROWTH_TRACE_FROM"),
            s.getint("RSS_GROWTH_FRAMES", 2),
        )
        crawler.signals.connect(probe.item_scraped, signal=signals.item_scraped)
        probe.crawler = crawler
        return probe

    def item_scraped(self, **kwargs: Any) -> None:
        self.items += 1
        if self.trace_from and self.items == self.trace_from:
            gc.collect()
            tracemalloc.start(self.frames)
            self.base = tracemalloc.take_snapshot()
        if self.items in self.at:
            self.report()

    def report(self) -> None:
        gc.collect()
        t0 = time.process_time()
        row: dict[str, Any] = {
            "items": self.items,
            "elapsed_s": round(time.monotonic() - self.started, 1),
            **_status(),
        }
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        row["gc_objects"] = sum(counts.values())
        row["gc_types"] = counts.most_common(30)
        stats = self.crawler.stats.get_stats()
        row["stats_keys"] = len(stats)
        row["stats_bytes"] = deep_size(stats, set())
        try:
            row["structures"] = structures()
        except Exception as exc:  # a measurement, not the crawl: say what failed
            row["structures_error"] = repr(exc)
        if self.base is not None and tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)]
            )
            row["traced_now"] = tracemalloc.get_traced_memory()
            row["growth_lines"] = [
                [str(s.traceback[0]), s.size_diff, s.count_diff]
                for s in snap.compare_to(self.base, "lineno")[:40]
            ]
            row["growth_tracebacks"] = [
                [[str(f) for f in s.traceback], s.size_diff, s.count_diff]
                for s in snap.compare_to(self.base, "traceback")[:20]
            ]
        row["probe_cpu_s"] = round(time.process_time() - t0, 2)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--sandbox-pages", type=int, default=20_000)
    p.add_argument("--strategy", default="annealing")
    p.add_argument("--at", default="1000,3000,10000,19000")
    p.add_argument("--trace", type=int, default=0, help="start tracemalloc at this page")
    p.add_argument("--out", type=Path, default=Path("out/bench/rss-growth.jsonl"))
    p.add_argument("--work", type=Path, default=Path("out/bench/rss-growth-crawl"))
    p.add_argument("--set", action="append", default=[], help="extra NAME=VALUE settings")
    args = p.parse_args(argv)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    work = args.work if args.work.is_absolute() else ROOT / args.work
    settings = {
        "RSS_GROWTH_FILE": str(out),
        "RSS_GROWTH_AT": args.at,
        "RSS_GROWTH_TRACE_FROM": str(args.trace),
        **dict(kv.split("=", 1) for kv in args.set),
    }
    run = speed.sandbox_crawl(
        args.strategy,
        pages=args.pages,
        sandbox_pages=args.sandbox_pages,
        work=work,
        tag="growth",
        extensions={"bench.rss_growth.GrowthProbe": 1},
        extra=settings,
    )
    print(json.dumps({k: run.get(k) for k in ("items", "max_rss_kb", "wall_s", "returncode")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
