"""Micro-benchmark: the ``learning`` strategy's own work per page, replayed.

``record``: one real wikispeedia (or sandbox) ``learning`` crawl, in this process, with
the strategy's three entry points wrapped to write down what they were given, in order:
``observe(url, page, meta)``, ``score_links(parent, links)`` and the frontier's
``rescore(evidence)`` batches, and the strategy's parameters (a pickle).

``replay``: a fresh :class:`~focused.strategies.learning.LearningStrategy` with those
parameters hears the same calls in the same order; the CPU time of each kind of call
is reported per page, and (``--outputs FILE``) every result is written, so two project
trees can be checked to give the same numbers bit for bit (``--compare A B``).

    python -m bench.learning_calls record --out /tmp/calls.pkl --pages 300 [--page-model 0.3]
    python -m bench.learning_calls replay /tmp/calls.pkl --rounds 5 [--outputs out.pkl]
    python -m bench.learning_calls compare out-old.pkl out-new.pkl
    python -m bench.learning_calls frontier /tmp/calls.pkl   # the frontier's share of rescoring

No Scrapy in ``replay``; run it with ``PYTHONPATH`` set to another tree for a before/after.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

#: meta keys ``observe`` reads (the rest of a response's meta is Scrapy's)
OBSERVED_META = (
    "parent_url",
    "anchor_text",
    "link_context",
    "parent_relevance",
    "anchor_relevance",
    "hops",
    "term_score",
)


def record(out: Path, pages: int, page_model: float, data: Path, site: str) -> None:
    from bench import command, speed
    from focused import meta
    from focused.strategies.learning import LearningStrategy

    calls: list[tuple[str, Any]] = []
    params: dict[str, Any] = {}
    keys = [getattr(meta, k.upper(), k) for k in OBSERVED_META]
    observe, score_links, rescore = (
        LearningStrategy.observe,
        LearningStrategy.score_links,
        LearningStrategy.rescore,
    )

    def remember(self: LearningStrategy) -> None:
        if not params:
            params.update({f.name: getattr(self, f.name) for f in fields(self)})

    def observe_(self: LearningStrategy, url: str, page: Any, link: Any) -> None:
        remember(self)
        calls.append(("observe", (url, page, {k: link[k] for k in keys if k in link})))
        observe(self, url, page, link)

    def score_links_(self: LearningStrategy, parent: Any, links: Any) -> Any:
        remember(self)
        calls.append(("score_links", (parent, list(links))))
        return score_links(self, parent, links)

    def rescore_(self: LearningStrategy, evidence: list[bytes]) -> Any:
        calls.append(("rescore", list(evidence)))
        return rescore(self, evidence)

    LearningStrategy.observe = observe_  # type: ignore[method-assign]
    LearningStrategy.score_links = score_links_  # type: ignore[method-assign]
    LearningStrategy.rescore = rescore_  # type: ignore[method-assign]
    servers: list[Any] = []
    try:
        sites = speed._serve_sites(
            [site], sandbox_pages=2000, data_dir=data, servers=servers, log=print
        )
        seeds, labels = sites[site]
        with tempfile.TemporaryDirectory() as tmp:
            settings = speed.common_settings(pages, 1, Path(tmp) / "probe.json")
            del settings["EXTENSIONS"], settings["SPEED_PROBE_FILE"]
            settings.update(
                {
                    "FOCUSED_WEB": "real",
                    "FOCUSED_SEEDS": ",".join(seeds),
                    "FOCUSED_LABELS": labels,
                    "FOCUSED_TARGET_CATEGORY": speed.CHEMISTRY,
                    "FOCUSED_STRATEGY": "learning",
                    "FOCUSED_METRICS_LOG_EVERY": "0",
                }
            )
            if page_model:
                settings["FOCUSED_LEARNING_PAGE_MODEL"] = str(page_model)
            cmd = command.crawl_command("chemistry", output_dir=tmp, settings=settings)
            from scrapy.cmdline import execute

            argv = sys.argv
            sys.argv = ["scrapy", *cmd[cmd.index("crawl") :]]
            try:
                execute()
            except SystemExit:
                pass
            finally:
                sys.argv = argv
    finally:
        for server in servers:
            server.stop()
    out.write_bytes(pickle.dumps({"params": params, "calls": calls}))
    counts = {k: sum(1 for c in calls if c[0] == k) for k in ("observe", "score_links", "rescore")}
    print(json.dumps({"out": str(out), **counts}))


def _clean(x: Any) -> Any:
    """Results as plain data (LinkScores become tuples)."""
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_clean(v) for v in x)
    return x


def replay_once(recorded: dict[str, Any], keep: bool) -> tuple[dict[str, float], list[Any]]:
    from focused.strategies.learning import LearningStrategy

    strategy = LearningStrategy(**recorded["params"])
    spent = {"observe": 0.0, "score_links": 0.0, "rescore": 0.0}
    outputs: list[Any] = []
    clock = time.process_time
    for kind, args in recorded["calls"]:
        t = clock()
        if kind == "observe":
            got: Any = strategy.observe(*args)
        elif kind == "score_links":
            got = strategy.score_links(*args)
        else:
            got = strategy.rescore(args)
        spent[kind] += clock() - t
        if keep:
            outputs.append((kind, _clean(got)))
    if keep:
        outputs.append(("stats", strategy.stats()))
    return spent, outputs


def replay(path: Path, rounds: int, outputs: Path | None) -> dict[str, Any]:
    recorded = pickle.loads(path.read_bytes())
    pages = sum(1 for c in recorded["calls"] if c[0] == "observe")
    runs = [replay_once(recorded, keep=False)[0] for _ in range(rounds)]
    result: dict[str, Any] = {"pages": pages, "rounds": rounds}
    for kind in ("observe", "score_links", "rescore"):
        result[f"{kind}_ms_per_page"] = round(
            1000 * statistics.median(r[kind] for r in runs) / max(1, pages), 4
        )
    totals = [sum(r.values()) for r in runs]
    result["total_ms_per_page"] = round(1000 * statistics.median(totals) / max(1, pages), 4)
    result["total_ms_per_page_min"] = round(1000 * min(totals) / max(1, pages), 4)
    if outputs is not None:
        outputs.write_bytes(pickle.dumps(replay_once(recorded, keep=True)[1]))
    return result


def frontier_rescore(path: Path) -> dict[str, Any]:
    """The in-memory frontier's share of each recorded rescoring: every batch's links
    pushed into a :class:`~focused.frontier.memory.MemoryFrontier` (seeded priorities),
    then ``rescore`` timed against the strategy's own ``rescore`` of the same batch."""
    import random

    from focused.frontier.memory import Entry, MemoryFrontier
    from focused.strategies.learning import LearningStrategy

    recorded = pickle.loads(path.read_bytes())
    pages = sum(1 for c in recorded["calls"] if c[0] == "observe")
    strategy = LearningStrategy(**recorded["params"])
    rng = random.Random(1)
    alone = with_frontier = 0.0
    for kind, batch in recorded["calls"]:
        if kind != "rescore":
            continue
        frontier = MemoryFrontier()
        for i, evidence in enumerate(batch):
            url = f"http://127.0.0.1:1/wiki/P{i}.html"
            prio = rng.randrange(1_000_000)
            frontier.push(Entry(url, rng.getrandbits(63), prio, evidence=evidence))
        t = time.process_time()
        strategy.rescore(batch)
        alone += time.process_time() - t
        t = time.process_time()
        frontier.rescore(strategy.rescore)
        with_frontier += time.process_time() - t
    return {
        "pages": pages,
        "strategy_rescore_ms_per_page": round(1000 * alone / max(1, pages), 4),
        "frontier_rescore_ms_per_page": round(1000 * with_frontier / max(1, pages), 4),
    }


def compare(a: Path, b: Path) -> int:
    old, new = pickle.loads(a.read_bytes()), pickle.loads(b.read_bytes())
    if old == new:
        print(f"identical: {len(old)} results")
        return 0
    for i, (x, y) in enumerate(zip(old, new, strict=False)):
        if x != y:
            print(f"first difference at call {i} ({x[0]})")
            break
    else:
        print(f"lengths differ: {len(old)} vs {len(new)}")
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--pages", type=int, default=300)
    r.add_argument("--page-model", type=float, default=0.0)
    r.add_argument("--data", type=Path, default=speed_default_data())
    r.add_argument("--site", default="wikispeedia")
    p_replay = sub.add_parser("replay")
    p_replay.add_argument("calls", type=Path)
    p_replay.add_argument("--rounds", type=int, default=5)
    p_replay.add_argument("--outputs", type=Path)
    f = sub.add_parser("frontier")
    f.add_argument("calls", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "record":
        record(args.out, args.pages, args.page_model, args.data, args.site)
        return 0
    if args.cmd == "replay":
        print(json.dumps(replay(args.calls, args.rounds, args.outputs)))
        return 0
    if args.cmd == "frontier":
        print(json.dumps(frontier_rescore(args.calls)))
        return 0
    return compare(args.a, args.b)


def speed_default_data() -> Path:
    from bench.speed import DEFAULT_DATA

    return DEFAULT_DATA


if __name__ == "__main__":
    raise SystemExit(main())
