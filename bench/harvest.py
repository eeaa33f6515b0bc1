"""Harvest on the shared frontier: recall / oracle of 1, 2 and 4 workers on one Redis.

Part of ``make bench-scale`` (:mod:`bench.scale` writes these rows as the list
``harvest`` of ``scale.json``). The wikispeedia site (real Wikipedia pages with subject
labels) is served by its own process (``python -m bench.server``); every worker is a real
``scrapy crawl focused`` with ``FOCUSED_FRONTIER = "redis"`` on a private
``redis-server``. Rows, budgets, oracle and recall are those of :mod:`bench.quality`
(Liu, Xia & Xu 2010: recall = targets crawled / targets reachable from the seeds, at the
same total budget, ``BUDGET`` x the reachable targets): the workers' pages are merged
in the order they were fetched and cut at the budget; each worker may store
``ceil(budget / workers)`` pages. ``oracle`` (which knows the labels) crawls each row
once, alone, with the in-memory frontier, and is the ceiling. The single-process row
with the in-memory frontier (``frontier = "memory"``) is the reference of the target.

Per row: ``recall_over_oracle``, ``duplicate_fetches`` (URLs stored by more than one
worker), ``pages_lost`` (URLs that entered Redis and were neither stored nor failed, nor
wait, nor are in flight), ``pages_per_s`` (pages / (last fetch - first fetch)),
``redis_round_trips_per_page`` (the workers' own count) and ``redis_bytes_per_page``
(bytes in and out of the Redis server during the run): medians over the repeats.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import subprocess
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import quality
from bench.process import URLServer

__all__ = ["HarvestRun", "WikiServer", "harvest_rows", "run_harvest"]

PROJECT = Path(__file__).resolve().parents[1]
#: settings of every harvest worker: a short lease, so a killed worker's URLs come back
#: within the run
WORKER_SETTINGS = {"FOCUSED_REDIS_LEASE": "5", "LOG_LEVEL": "INFO"}


class WikiServer(URLServer):
    """The wikispeedia folder served by ``python -m bench.server`` in its own process."""

    def __init__(self, folder: Path) -> None:
        super().__init__(
            [sys.executable, "-m", "bench.server", str(folder), "--port", "0"], "wikispeedia"
        )


@dataclass
class HarvestRun:
    """The crawls of one (row, strategy, workers, repeat)."""

    group: quality.Group
    strategy: str
    workers: int
    rep: int
    frontier: str  # "redis" or "memory"
    outs: list[Path]
    wall_s: float
    exit_codes: list[int | None]
    redis_bytes: int = 0
    redis_status: dict[str, int] | None = None
    killed: int = 0
    late: int = 0


def _worker_command(
    group: quality.Group,
    strategy: str,
    out_dir: Path,
    *,
    base: str,
    labels: Path,
    seed: int,
    budget: int,
    redis: dict[str, str] | None,
) -> list[str]:
    extra = dict(WORKER_SETTINGS)
    if redis:
        extra.update(redis)
    job = quality.Job(group, strategy, None)
    cmd = quality.crawl_command(
        job,
        base=base,
        labels=labels,
        out_dir=out_dir.resolve(),
        seed=seed,
        scheduler="",
        log_level="INFO",
        extra=extra,
    )
    # the worker's share of the budget (``crawl_command`` set the row's whole budget)
    return [
        f"CLOSESPIDER_ITEMCOUNT={budget}" if a.startswith("CLOSESPIDER_ITEMCOUNT=") else a
        for a in cmd
    ]


def _redis_bytes(url: str) -> int:
    import redis

    server = redis.Redis.from_url(url)
    try:
        info = server.info("stats")
    finally:
        server.close()
    return int(info.get("total_net_input_bytes", 0)) + int(info.get("total_net_output_bytes", 0))


def _pages_stored(out: Path) -> int:
    from bench.scale import stored_urls

    return len(stored_urls(out))


def run_harvest(
    group: quality.Group,
    strategy: str,
    workers: int,
    rep: int,
    *,
    root: Path,
    base: str,
    labels: Path,
    redis_url: str | None,
    seed: int = quality.DEFAULT_SEED,
    kill_one_after: int = 0,
    late_after: int = 0,
    timeout: float = 900.0,
) -> HarvestRun:
    """Run ``workers`` crawls of ``group`` together (Redis frontier when ``redis_url``,
    else one crawl with the in-memory frontier). ``kill_one_after``: ``kill -9`` worker 0
    once it stored that many pages; ``late_after``: start one more worker once the others
    stored that many pages in all (it joins with the crawl half done)."""
    from bench.scale import redis_status

    frontier = "redis" if redis_url else "memory"
    name = f"{group.slug}/{strategy}-{frontier}-{workers}-r{rep}"
    if kill_one_after or late_after:
        name += "-kill-late"
    folder = root / name
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    key = f"focused:harvest:{zlib.crc32(name.encode()):08x}"
    total = workers + (1 if late_after else 0)
    share = math.ceil(group.budget / max(1, workers))
    redis = (
        {"FOCUSED_FRONTIER": "redis", "REDIS_URL": redis_url, "FOCUSED_REDIS_KEY": key}
        if redis_url
        else None
    )
    before = _redis_bytes(redis_url) if redis_url else 0
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    procs: list[subprocess.Popen[bytes]] = []
    outs: list[Path] = []

    def start(i: int) -> None:
        out = folder / f"w{i}"
        out.mkdir(parents=True, exist_ok=True)
        cmd = _worker_command(
            group,
            strategy,
            out,
            base=base,
            labels=labels,
            seed=seed + 1000 * rep + i,
            budget=share,
            redis=redis,
        )
        env["PYTHONHASHSEED"] = str(seed)
        procs.append(
            subprocess.Popen(
                cmd,
                cwd=PROJECT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(env),
            )
        )
        outs.append(out)

    started = time.monotonic()
    for i in range(workers):
        start(i)
    deadline = started + timeout
    killed, late = _supervise(
        procs, outs, start, kill_one_after=kill_one_after, late_after=late_after, deadline=deadline
    )
    wall = time.monotonic() - started
    run = HarvestRun(
        group, strategy, total, rep, frontier, outs, wall, [p.returncode for p in procs]
    )
    run.killed, run.late = killed, late
    if redis_url:
        run.redis_bytes = _redis_bytes(redis_url) - before
        run.redis_status = redis_status(redis_url, key)
    return run


def _supervise(
    procs: list[subprocess.Popen[bytes]],
    outs: list[Path],
    start: Any,
    *,
    kill_one_after: int,
    late_after: int,
    deadline: float,
) -> tuple[int, int]:
    """Wait for the workers; ``kill -9`` worker 0 and start a late one when due."""
    killed = late = 0
    while any(p.poll() is None for p in procs):
        if time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
            break
        if kill_one_after and not killed and _pages_stored(outs[0]) >= kill_one_after:
            procs[0].send_signal(signal.SIGKILL)
            killed = 1
        if late_after and not late and sum(_pages_stored(o) for o in outs) >= late_after:
            start(len(procs))
            late = 1
        time.sleep(0.1)
    if late_after and not late:  # the others finished first: join now (nothing to do)
        start(len(procs))
        late = 1
        procs[-1].wait(timeout=max(1.0, deadline - time.monotonic()))
    return killed, late


def measure(run: HarvestRun, oracle_recall: float | None) -> dict[str, Any]:
    """The numbers of one harvest run (see the module doc)."""
    from bench.scale import log_stats
    from focused.output.metrics import HarvestCurve

    group = run.group
    pages: list[tuple[float, str, bool]] = []
    per_worker: list[set[str]] = []
    trips = 0.0
    for out in run.outs:
        rows = quality.read_pages(out, 10**9)
        per_worker.append({u for u, _, _ in rows})
        pages.extend((t, u, rel) for u, rel, t in rows)
        log = out / "crawl.log"
        if log.is_file():
            stats = log_stats(log.read_text(encoding="utf-8", errors="replace"))
            trips += stats.get("focused/redis/round_trips", 0.0)
            trips += stats.get("focused/redis/model_round_trips", 0.0)
    pages.sort()
    counts = Counter(u for urls in per_worker for u in urls)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    targets = frozenset(quality.page_url("http://site", t) for t in group.targets)
    curve = HarvestCurve(targets)
    seen: set[str] = set()
    for _, url, relevant in pages:
        if curve.pages >= group.budget:
            break
        if url in seen:
            continue
        seen.add(url)
        curve.add(url, relevant, quality.page_name(url) in group.targets)
    recall = curve.recall
    n = len(counts)
    times = [t for t, _, _ in pages if t]
    span = max(times) - min(times) if len(times) > 1 else 0.0
    row: dict[str, Any] = {
        "topic": group.topic.name,
        "seeds": group.seeds_label,
        "strategy": run.strategy,
        "frontier": run.frontier,
        "workers": run.workers,
        "rep": run.rep,
        "budget": group.budget,
        "pages": n,
        "recall": recall,
        "oracle_recall": oracle_recall,
        "recall_over_oracle": (recall / oracle_recall)
        if recall is not None and oracle_recall
        else None,
        "duplicate_fetches": duplicates,
        "pages_per_s": round(n / span, 1) if span else None,
        "wall_s": round(run.wall_s, 2),
        "exit_codes": run.exit_codes,
    }
    if run.redis_status is not None:
        s = run.redis_status
        row["pages_lost"] = s["seen"] - s["done"] - s["error"] - s["waiting"] - s["in_flight"]
        row["redis_round_trips_per_page"] = round(trips / n, 3) if n else None
        row["redis_bytes_per_page"] = round(run.redis_bytes / n) if n else None
        row["redis"] = s
    else:
        row["pages_lost"] = 0
    if run.killed or run.late:
        row["killed"] = run.killed
        row["joined_late"] = run.late
    return row


MEDIAN_KEYS = (
    "recall",
    "recall_over_oracle",
    "duplicate_fetches",
    "pages_lost",
    "pages_per_s",
    "redis_round_trips_per_page",
    "redis_bytes_per_page",
    "pages",
    "wall_s",
)


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of repeated runs: the median of each number, the worst duplicates and
    losses (they must be 0 in every run), and the min / max of recall / oracle."""
    row = {k: runs[0][k] for k in ("topic", "seeds", "strategy", "frontier", "workers", "budget")}
    for key in MEDIAN_KEYS:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        row[key] = round(statistics.median(values), 4) if values else None
    row["duplicate_fetches_max"] = max(r["duplicate_fetches"] for r in runs)
    row["pages_lost_max"] = max(r["pages_lost"] for r in runs)
    ratios = [r["recall_over_oracle"] for r in runs if r["recall_over_oracle"] is not None]
    row["recall_over_oracle_min"] = round(min(ratios), 4) if ratios else None
    row["recall_over_oracle_max"] = round(max(ratios), 4) if ratios else None
    row["repeats"] = len(runs)
    return row


def harvest_rows(
    *,
    root: Path,
    redis_url: str,
    data: Path,
    topics: tuple[str, ...] = quality.DEFAULT_TOPICS,
    strategies: tuple[str, ...] = ("learning", "annealing"),
    workers: tuple[int, ...] = (1, 2, 4),
    repeat: int = 3,
    memory_reference: bool = True,
    kill_late: bool = True,
    log: Any = print,
) -> dict[str, Any]:
    """The ``harvest`` rows (medians) and every single run (``harvest_runs``)."""
    import argparse

    site = quality.Site.load(data)
    args = argparse.Namespace(
        topic=list(topics),
        held_out=None,
        category=None,
        seeds=None,
        budget=2.0,
        held_out_set=False,
    )
    groups = quality.plan(args, site)
    labels = site.labels_path.resolve()
    rows: list[dict[str, Any]] = []
    every: list[dict[str, Any]] = []
    with WikiServer(site.root) as _:
        base = _.base
        for group in groups:
            oracle = run_harvest(
                group, quality.ORACLE, 1, 0, root=root, base=base, labels=labels, redis_url=None
            )
            o = measure(oracle, None)
            oracle_recall = o["recall"]
            log(f"{group.slug}: oracle recall {oracle_recall}")
            plan: list[tuple[str, int, str | None]] = []
            for strategy in strategies:
                if memory_reference:
                    plan.append((strategy, 1, None))
                plan += [(strategy, n, redis_url) for n in workers]
            for strategy, n, url in plan:
                runs = []
                for rep in range(repeat):
                    run = run_harvest(
                        group, strategy, n, rep, root=root, base=base, labels=labels, redis_url=url
                    )
                    runs.append(measure(run, oracle_recall))
                    log(json_line(runs[-1]))
                every += runs
                rows.append(medians(runs))
        if kill_late and groups:
            group = groups[0]
            oracle_recall = next(
                (r["oracle_recall"] for r in every if r["seeds"] == group.seeds_label), None
            )
            run = run_harvest(
                group,
                strategies[0],
                3,
                0,
                root=root,
                base=base,
                labels=labels,
                redis_url=redis_url,
                kill_one_after=max(10, group.budget // 10),
                late_after=group.budget // 3,
            )
            row = measure(run, oracle_recall)
            log(json_line(row))
            every.append(row)
            rows.append({**medians([row]), "killed": run.killed, "joined_late": run.late})
    return {"harvest": rows, "harvest_runs": every}


def json_line(row: dict[str, Any]) -> str:
    import json

    keep = {k: v for k, v in row.items() if k != "redis"}
    return json.dumps(keep)
