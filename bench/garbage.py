"""What a focused crawl leaves to Python's cyclic garbage collector, by type.

Reference counting frees an object as soon as nothing refers to it; only objects in a
reference cycle wait for the cyclic collector, and each of them costs memory until a
collection finds it and CPU when it does (docs/speed.md). This crawl of the sandbox
(``bench.speed``'s settings, the project's own extensions on) sets
``gc.DEBUG_SAVEALL`` from its first page: every object a collection finds unreachable is
kept in ``gc.garbage`` instead of freed. At each page count of ``--at`` the census
collects, counts what landed in ``gc.garbage`` since the last count by type (module and
qualified name), writes one JSON line, and empties the list::

    flock /tmp/bench.lock .venv/bin/python -m bench.garbage --pages 2000 \\
        --at 500,2000 --out out/bench/garbage.jsonl

The counts per page say which objects a crawl leaves in cycles; the largest types are
where breaking a cycle saves the most.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import json
import sys
from pathlib import Path
from typing import Any

from scrapy import signals

from bench import speed

ROOT = Path(__file__).resolve().parent.parent


def _edge(src: Any, dst: Any) -> str:
    """How ``src`` refers to ``dst``: an attribute or key name where one says it."""
    d = getattr(src, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            if v is dst:
                return f".{k}"
        if d is dst:
            return ".__dict__"
    if isinstance(src, dict):
        for k, v in src.items():
            if v is dst:
                return f"[{k!r}]"[:60]
    return ""


def _name(o: Any) -> str:
    t = type(o)
    return f"{getattr(t, '__module__', '?')}.{t.__qualname__}"


def cycle_through(obj: Any, pool: dict[int, Any]) -> list[str]:
    """The shortest reference cycle from ``obj`` back to itself within ``pool`` (objects
    by id), as the types and edges along it; empty when ``obj`` is only reachable from a
    cycle, not in one."""
    start = id(obj)
    parent: dict[int, int] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for i in frontier:
            for r in gc.get_referents(pool[i]):
                j = id(r)
                if j == start:
                    path = [i]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    path.reverse()
                    steps = [_name(pool[path[0]])]
                    for a, b in zip(path, path[1:] + [start], strict=True):
                        steps.append(f"{_edge(pool[a], pool[b])} -> {_name(pool[b])}")
                    return steps
                if j in pool and j not in parent and j != start:
                    parent[j] = i
                    nxt.append(j)
        frontier = nxt
    return []


def cycles(garbage: list[Any], per_type: int = 2, top: int = 12) -> dict[str, list[list[str]]]:
    """For the ``top`` most frequent types, the cycles through ``per_type`` of their
    objects."""
    pool = {id(o): o for o in garbage}
    by_type: dict[str, list[Any]] = collections.defaultdict(list)
    for o in garbage:
        by_type[_name(o)].append(o)
    ranked = sorted(by_type, key=lambda n: -len(by_type[n]))[:top]
    return {n: [cycle_through(o, pool) for o in by_type[n][:per_type]] for n in ranked}


def census(garbage: list[Any], top: int = 40) -> dict[str, Any]:
    """Counts and shallow bytes of ``garbage`` by ``module.qualname``, largest count first."""
    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    for o in garbage:
        name = _name(o)
        counts[name] += 1
        with contextlib.suppress(TypeError):
            sizes[name] += sys.getsizeof(o)
    return {
        "objects": sum(counts.values()),
        "bytes": sum(sizes.values()),
        "types": [[n, c, sizes[n]] for n, c in counts.most_common(top)],
    }


class GarbageCensus:
    """Extension: ``gc.DEBUG_SAVEALL`` from the first item; at each page count of
    ``GARBAGE_AT`` (comma-separated) one JSON line to ``GARBAGE_FILE`` with the census of
    what the collector found since the last line."""

    def __init__(self, path: str, at: list[int]) -> None:
        self.path = Path(path)
        self.at = set(at)
        self.items = 0
        self.last = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> GarbageCensus:
        s = crawler.settings
        at = [int(x) for x in s.get("GARBAGE_AT", "").split(",") if x.strip()]
        ext = cls(s.get("GARBAGE_FILE"), at)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def item_scraped(self, **kwargs: Any) -> None:
        self.items += 1
        if self.items == 1:
            gc.collect()
            gc.garbage.clear()
            gc.set_debug(gc.DEBUG_SAVEALL)
            self.last = 1
        elif self.items in self.at:
            self.report()

    def report(self) -> None:
        gc.collect()
        row = {"items": self.items, "pages": self.items - self.last, **census(gc.garbage)}
        if self.items == max(self.at):
            row["cycles"] = cycles(gc.garbage)
        row["objects_per_page"] = round(row["objects"] / max(1, row["pages"]), 1)
        row["bytes_per_page"] = round(row["bytes"] / max(1, row["pages"]))
        gc.garbage.clear()
        self.last = self.items
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    def engine_stopped(self) -> None:
        gc.set_debug(0)
        gc.garbage.clear()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=2000)
    p.add_argument("--sandbox-pages", type=int, default=20_000)
    p.add_argument("--strategy", default="annealing")
    p.add_argument("--at", default="500,2000")
    p.add_argument("--out", type=Path, default=Path("out/bench/garbage.jsonl"))
    p.add_argument("--work", type=Path, default=Path("out/bench/garbage-crawl"))
    p.add_argument("--set", action="append", default=[], help="extra NAME=VALUE settings")
    args = p.parse_args(argv)
    out = args.out if args.out.is_absolute() else ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    work = args.work if args.work.is_absolute() else ROOT / args.work
    settings = {
        "GARBAGE_FILE": str(out),
        "GARBAGE_AT": args.at,
        **dict(kv.split("=", 1) for kv in args.set),
    }
    run = speed.sandbox_crawl(
        args.strategy,
        pages=args.pages,
        sandbox_pages=args.sandbox_pages,
        work=work,
        tag="garbage",
        extensions={"bench.garbage.GarbageCensus": 1},
        extra=settings,
    )
    print(json.dumps({k: run.get(k) for k in ("items", "max_rss_kb", "wall_s", "returncode")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
