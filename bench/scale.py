"""Scale-out benchmark (``make bench-scale``): 1, 2 and 4 crawler processes on one Redis
and on a Redis Cluster (``--cluster``, :mod:`bench.cluster`).

Every process is a real ``python -m scrapy crawl focused`` with ``FOCUSED_FRONTIER =
"redis"``; they crawl one sandbox web served by a separate process
(``python -m focused.web.sandbox --port 0``, which prints its base URL), so all workers see
the same URLs. A private ``redis-server`` runs on a free loopback port in a temporary
folder. The reference is a single process with the in-memory frontier crawling the same
site to the end (the same budget: everything the topic's seeds reach).

Scenarios: ``no_delay`` (CPU-bound) and ``download_delay_<s>`` (each worker polite to
the site) with ``best_first``, which drops no link, so the pages reached do not depend
on the crawl order and the union of the workers' pages must equal the reference; and
``annealing_no_delay`` with the default strategy, whose m-value rule drops side channels
depending on the path a page was first fetched by (its page set may move with the order;
the frontier itself must still lose nothing).

For each run ``out/bench/scale.json`` records: pages stored, wall time (first process
started to last one finished) and crawl time (first page fetched to last one), pages/s on
both, duplicate fetches (URLs stored by more than one worker: must be 0), pages lost
(reference pages no worker stored: must be 0 where the set is order-independent),
frontier losses (URLs that entered Redis and were neither stored nor failed: must be 0),
whether the union equals the reference, Redis round trips per page, and the shared
queues at the end.

The helpers (:class:`RedisServer`, :class:`SandboxProcess`, :func:`run_workers`) are
also used by ``tests/test_distributed.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import command
from bench.process import ChildProcess, URLServer
from bench.quality import DEFAULT_DATA, DEFAULT_TOPICS

PROJECT = Path(__file__).resolve().parents[1]
CHEMISTRY = "subject.Science.Chemistry"

__all__ = [
    "RedisServer",
    "SandboxProcess",
    "Run",
    "free_port",
    "run_workers",
    "stored_urls",
]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer(ChildProcess):
    """A private ``redis-server`` on a free loopback port, data in a temporary folder.

    No persistence (``save ""``, no AOF) unless ``persist`` (append-only file, fsync on
    every write): then :meth:`kill` (``kill -9``) and :meth:`start` again bring back the
    same server with its data, on the same port. ``stop()`` terminates it and deletes
    the folder.
    """

    def __init__(self, binary: str | None = None, persist: bool = False) -> None:
        super().__init__()
        found = binary or shutil.which("redis-server")
        if not found:
            raise FileNotFoundError(
                "redis-server is not installed (Debian: apt-get install redis-server)"
            )
        self.binary = found
        self.persist = persist
        self.port = 0
        self.dir: Path | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> str:
        import redis

        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="focused-redis-"))
            self.port = free_port()
        durable = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else []
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                *durable,
                "--dir",
                str(self.dir),
                "--logfile",
                str(self.dir / "redis.log"),
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.ping()
                client.close()
                return self.url
            except redis.exceptions.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Terminate the server and delete its folder (:meth:`kill` keeps both)."""
        super().stop()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class SandboxProcess(URLServer):
    """``python -m focused.web.sandbox --port 0`` in its own process; ``base`` is its URL."""

    def __init__(self, seed: int = 7, pages: int = 600) -> None:
        cmd = [sys.executable, "-m", "focused.web.sandbox", "--port", "0"]
        super().__init__(cmd + ["--seed", str(seed), "--pages", str(pages)], "sandbox server")
        self.seed = seed
        self.pages = pages
        self._seeds: dict[str, list[str]] = {}

    def seeds(self, category: str = CHEMISTRY) -> list[str]:
        """The seed URLs the in-process sandbox would give the topic of ``category``."""
        if category not in self._seeds:
            from focused.web.sandbox import generate_site

            site = generate_site(seed=self.seed, pages=self.pages)
            self._seeds[category] = [self.base + path for path in site.seeds(category)]
        return self._seeds[category]


def crawl_command(
    out: Path,
    sandbox: SandboxProcess,
    *,
    redis_url: str | None,
    key: str = "focused:{topic}",
    strategy: str = "annealing",
    topic: str = "chemistry",
    settings: tuple[str, ...] = (),
) -> list[str]:
    """``python -m scrapy crawl focused`` on the external sandbox; Redis frontier if
    ``redis_url``, else the in-memory one."""
    options: dict[str, object] = {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": ",".join(sandbox.seeds()),
        "FOCUSED_LABELS": f"{sandbox.base}/labels.tsv",
        "FOCUSED_STRATEGY": strategy,
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,  # (no plot and no HTML report: two child processes less)
        "LOG_LEVEL": "INFO",
    }
    if redis_url:
        options.update(
            {"FOCUSED_FRONTIER": "redis", "REDIS_URL": redis_url, "FOCUSED_REDIS_KEY": key}
        )
    options.update(command.settings_from_strings(settings))
    return command.crawl_command(topic, output_dir=out, settings=options)


def stored_urls(out: Path) -> list[str]:
    """URLs in ``out/pages.sqlite3``, in the order they were stored."""
    db = out / "pages.sqlite3"
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return [u for (u,) in con.execute("SELECT url FROM pages ORDER BY rowid")]
    except sqlite3.OperationalError:  # the store is being created
        return []
    finally:
        con.close()


def fetch_times(out: Path) -> list[float]:
    db = out / "pages.sqlite3"
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return [t for (t,) in con.execute("SELECT fetched_at FROM pages")]
    finally:
        con.close()


_STAT = re.compile(r"'([\w/]+)': (\d+(?:\.\d+)?)[,}]")


def log_stats(log: str) -> dict[str, float]:
    """The numeric stats of the last Scrapy stats dump in ``log``."""
    at = log.rfind("Dumping Scrapy stats:")
    return {k: float(v) for k, v in _STAT.findall(log[at:])} if at >= 0 else {}


@dataclass
class Worker:
    out: Path
    process: subprocess.Popen
    log_path: Path
    returncode: int | None = None

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def urls(self) -> list[str]:
        return stored_urls(self.out)

    @property
    def stats(self) -> dict[str, float]:
        return log_stats(self.log)


@dataclass
class Run:
    """Several workers started together, and what they stored."""

    workers: list[Worker]
    started: float
    finished: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def wall(self) -> float:
        return self.finished - self.started

    def union(self) -> set[str]:
        return {u for w in self.workers for u in w.urls}

    def duplicates(self) -> int:
        """URLs stored by more than one worker (each extra copy counts)."""
        counts = Counter(u for w in self.workers for u in set(w.urls))
        return sum(n - 1 for n in counts.values() if n > 1)

    def crawl_seconds(self) -> float:
        times = [t for w in self.workers for t in fetch_times(w.out)]
        return max(times) - min(times) if len(times) > 1 else 0.0


def start_workers(
    n: int,
    root: Path,
    sandbox: SandboxProcess,
    *,
    redis_url: str | None,
    key: str = "focused:{topic}",
    strategy: str = "annealing",
    settings: tuple[str, ...] = (),
    stagger: float = 0.0,
) -> Run:
    """Start ``n`` crawl processes writing to ``root/w0``, ``root/w1``, ..."""
    root.mkdir(parents=True, exist_ok=True)
    run = Run([], time.monotonic())
    for i in range(n):
        out = root / f"w{i}"
        log_path = root / f"w{i}.log"
        cmd = crawl_command(
            out, sandbox, redis_url=redis_url, key=key, strategy=strategy, settings=settings
        )
        env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        process = subprocess.Popen(
            cmd, cwd=PROJECT, stdout=log_path.open("wb"), stderr=subprocess.STDOUT, env=env
        )
        run.workers.append(Worker(out, process, log_path))
        if stagger and i < n - 1:
            time.sleep(stagger)
    return run


def wait(run: Run, timeout: float = 600.0) -> Run:
    """Wait for every worker of ``run`` (killing all of them after ``timeout``)."""
    deadline = time.monotonic() + timeout
    for w in run.workers:
        try:
            w.returncode = w.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in run.workers:
                if other.process.poll() is None:
                    other.process.send_signal(signal.SIGKILL)
            raise
    run.finished = time.monotonic()
    return run


def run_workers(n: int, root: Path, sandbox: SandboxProcess, **kwargs: Any) -> Run:
    """:func:`start_workers` then :func:`wait`."""
    timeout = kwargs.pop("timeout", 600.0)
    return wait(start_workers(n, root, sandbox, **kwargs), timeout=timeout)


def redis_status(url: str, key: str) -> dict[str, int]:
    import redis

    from focused.distributed.frontier import RedisFrontier

    server = redis.Redis.from_url(url)
    try:
        return RedisFrontier(server, key).status()
    finally:
        server.close()


def measure(run: Run, reference: set[str], redis: dict[str, int] | None = None) -> dict[str, Any]:
    """The numbers of one run against the single-process ``reference`` pages."""
    union = run.union()
    stored = sum(len(w.urls) for w in run.workers)
    crawl_s = run.crawl_seconds()
    trips = sum(w.stats.get("focused/redis/round_trips", 0) for w in run.workers)
    row: dict[str, Any] = {
        "workers": len(run.workers),
        "exit_codes": [w.returncode for w in run.workers],
        "pages": len(union),
        "pages_per_worker": [len(w.urls) for w in run.workers],
        "wall_s": round(run.wall, 2),
        "crawl_s": round(crawl_s, 2),
        "pages_per_s": round(len(union) / crawl_s, 1) if crawl_s else None,
        "pages_per_s_wall": round(len(union) / run.wall, 1) if run.wall else None,
        # a URL stored by two workers (each extra copy counts once)
        "duplicate_fetches": run.duplicates()
        + (stored - sum(len(set(w.urls)) for w in run.workers)),
        # pages of the single-process crawl that no worker stored
        "pages_lost": len(reference - union),
        "pages_extra": len(union - reference),
        "union_equals_single": union == reference,
        "links_dropped_by_strategy": int(
            sum(w.stats.get("focused/links/dropped", 0) for w in run.workers)
        ),
        "redis_round_trips_per_page": round(trips / len(union), 2) if union and trips else None,
    }
    if redis is not None:
        # URLs that entered the shared frontier and were neither stored nor failed
        row["frontier_lost"] = (
            redis["seen"] - redis["done"] - redis["error"] - redis["waiting"] - redis["in_flight"]
        )
        row["redis"] = redis
    return row


def _harvest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--harvest",
        choices=("yes", "no", "only"),
        default="yes",
        help="the harvest rows on wikispeedia (only: keep the other results of scale.json)",
    )
    parser.add_argument("--harvest-topics", default=",".join(DEFAULT_TOPICS))
    parser.add_argument("--harvest-strategies", default="learning,annealing")
    parser.add_argument("--harvest-workers", default="1,2,4")
    parser.add_argument("--harvest-repeat", type=int, default=3)
    parser.add_argument(
        "--harvest-kill-late",
        choices=("yes", "no"),
        default="yes",
        help="a run with one worker killed (kill -9) and one joining late",
    )
    parser.add_argument("--data", default=None, help="the wikispeedia site folder")


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        choices=("yes", "no", "only"),
        default="yes",
        help="the rows on one Redis and on a 3+3 Redis Cluster, a failover run and the"
        " memory per waiting URL (only: keep the other results of scale.json)",
    )
    parser.add_argument("--cluster-workers", default="1,2,4")
    parser.add_argument(
        "--cluster-pages", type=int, default=100, help="sandbox pages on each of the six hosts"
    )
    parser.add_argument(
        "--memory-urls",
        type=int,
        default=1_000_000,
        help="waiting URLs pushed to measure Redis memory per URL (0: skip)",
    )


def add_cluster(results: dict[str, Any], args: argparse.Namespace) -> bool:
    """Put the cluster rows (:func:`bench.cluster.cluster_results`) and the pick-order
    approximation in ``results``; True when no run fetched a URL twice or lost one."""
    import redis

    from bench.cluster import cluster_results, order_approximation, pick_cost

    started = time.monotonic()
    root = Path(args.out) / "scale" / "cluster"
    shutil.rmtree(root, ignore_errors=True)
    got = cluster_results(
        root,
        workers=[int(x) for x in args.cluster_workers.split(",") if x.strip()],
        pages=args.cluster_pages,
        memory_urls=args.memory_urls,
        log=lambda line: print("cluster", line, flush=True),
    )
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        got["pick_order"] = order_approximation(client)
        got["pick_cost"] = pick_cost(client, server.port)
        client.close()
    print("cluster pick_order", json.dumps(got["pick_order"]), flush=True)
    got["cluster_seconds"] = round(time.monotonic() - started, 1)
    got["cluster_notes"] = (
        "best_first on the sandbox served on six loopback hosts (two per partition), each"
        " host a site of its own; reference: one process, memory frontier. redis: one"
        " redis-server, one partition; cluster: 3 masters + 3 replicas on loopback, 3"
        " partitions, FOCUSED_REDIS_WAIT=1. failover: 2 workers, the master of partition 0"
        " killed with kill -9 once a third of the pages were stored (workers frozen while"
        " the requests in flight were counted). redis_commands_per_page: commands the"
        " masters executed (a Lua call and each command inside it count) over pages stored;"
        " redis_bytes_per_page: client bytes in + out of the masters (replication left out)."
        " cluster_memory: used_memory gained per master over the"
        " entries it holds after pushing memory-urls entries (50-byte URL, 41-byte parent,"
        " 71 bytes of rescoring evidence). All processes share the machine's cores."
    )
    results.update(got)
    return all(r["duplicate_fetches"] == 0 or r["failover"] for r in got["cluster"]) and all(
        r["pages_lost"] == 0 for r in got["cluster"]
    )


def _extras(results: dict[str, Any], args: argparse.Namespace) -> bool:
    """The harvest and cluster rows asked for; True when they lost and duplicated nothing."""
    ok = True
    if args.harvest == "yes":
        ok = add_harvest(results, args)
    if args.cluster == "yes":
        ok = add_cluster(results, args) and ok
    return ok


def only_main(
    args: argparse.Namespace, add: Callable[[dict[str, Any], argparse.Namespace], bool]
) -> int:
    """``--cluster only`` or ``--harvest only``: those rows, the rest of ``scale.json``
    kept."""
    out = Path(args.out)
    path = out / "scale.json"
    results: dict[str, Any] = {}
    if path.is_file():
        results = json.loads(path.read_text(encoding="utf-8"))
    ok = add(results, args)
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"wrote {path}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description="1, 2, 4 crawler processes on one Redis crawling the sandbox.",
    )
    parser.add_argument("--workers", default="1,2,4", help="comma-separated process counts")
    parser.add_argument("--pages", type=int, default=1000, help="sandbox size (about)")
    parser.add_argument("--seed", type=int, default=7, help="sandbox seed")
    parser.add_argument(
        "--strategy",
        default="best_first",
        help="strategy of the scenarios whose union must equal the single crawl",
    )
    parser.add_argument(
        "--annealing-workers",
        default="1,4",
        help="process counts of the extra annealing run ('' to skip)",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=0.05,
        help="DOWNLOAD_DELAY of the second scenario (0: run only the first)",
    )
    parser.add_argument("--out", default="out/bench", help="folder of scale.json")
    _harvest_arguments(parser)
    _cluster_arguments(parser)
    args = parser.parse_args(argv)
    if args.harvest == "only":
        return only_main(args, add_harvest)
    if args.cluster == "only":
        return only_main(args, add_cluster)
    sizes = [int(x) for x in args.workers.split(",") if x.strip()]
    out = Path(args.out)
    work = out / "scale"
    shutil.rmtree(work, ignore_errors=True)
    # (name, strategy, process counts, extra settings, union must equal the reference)
    scenarios: list[tuple[str, str, list[int], tuple[str, ...], bool]] = [
        ("no_delay", args.strategy, sizes, (), True)
    ]
    if args.delay > 0:
        delay = (f"DOWNLOAD_DELAY={args.delay}",)
        scenarios.append((f"download_delay_{args.delay:g}", args.strategy, sizes, delay, True))
    annealing_sizes = [int(x) for x in args.annealing_workers.split(",") if x.strip()]
    if annealing_sizes and args.strategy != "annealing":
        scenarios.append(("annealing_no_delay", "annealing", annealing_sizes, (), False))
    results: dict[str, Any] = {
        "sandbox": {"seed": args.seed, "pages": args.pages},
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "notes": (
            "pages_per_s: pages / (last fetch - first fetch); pages_per_s_wall includes"
            " starting the processes. no_delay is CPU-bound: parsing, scoring and the"
            " Python sandbox server share the machine's cores. download_delay: each"
            " worker waits DOWNLOAD_DELAY between requests to the one site, as a polite"
            " crawler does; more workers fetch more. The first two use a strategy that"
            " drops no link, so the pages reached do not depend on the crawl order and the"
            " union must equal the single-process crawl. annealing drops side channels"
            " whose m decayed, and a page's m depends on the path it was first fetched by:"
            " its page set may move with the order (pages_lost/pages_extra), while"
            " frontier_lost (URLs that entered Redis and were never stored) stays 0."
        ),
    }
    references: dict[str, set[str]] = {}
    with SandboxProcess(args.seed, args.pages) as sandbox, RedisServer() as server:
        print(f"sandbox at {sandbox.base}, redis at {server.url}", flush=True)
        for strategy in dict.fromkeys(s[1] for s in scenarios):
            single = run_workers(
                1, work / f"single-memory-{strategy}", sandbox, redis_url=None, strategy=strategy
            )
            if single.workers[0].returncode != 0:
                print(single.workers[0].log[-3000:], file=sys.stderr)
                return 1
            references[strategy] = single.union()
            results[f"single_process_memory_{strategy}"] = measure(single, references[strategy])
            print(
                f"{strategy}: single process, memory frontier: {len(references[strategy])} pages",
                flush=True,
            )
        for name, strategy, counts, settings, _ in scenarios:
            rows: list[dict[str, Any]] = []
            for n in counts:
                key = f"focused:bench:{name}:{n}"
                run = run_workers(
                    n,
                    work / f"{name}-{n}",
                    sandbox,
                    redis_url=server.url,
                    key=key,
                    strategy=strategy,
                    settings=settings,
                )
                row = measure(run, references[strategy], redis_status(server.url, key))
                if rows and rows[0]["pages_per_s"] and row["pages_per_s"]:
                    row["speedup_vs_1"] = round(row["pages_per_s"] / rows[0]["pages_per_s"], 2)
                rows.append(row)
                print(name, json.dumps(row), flush=True)
            results[name] = {"strategy": strategy, "settings": list(settings), "runs": rows}
    harvest_ok = _extras(results, args)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scale.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    ok = all(
        r["duplicate_fetches"] == 0
        and r.get("frontier_lost", 0) == 0
        and (not strict or (r["pages_lost"] == 0 and r["union_equals_single"]))
        for name, _, _, _, strict in scenarios
        for r in results[name]["runs"]
    )
    return 0 if ok and harvest_ok else 1


def add_harvest(results: dict[str, Any], args: argparse.Namespace) -> bool:
    """Put the harvest rows (:mod:`bench.harvest`) in ``results``; True when every run
    fetched no URL twice and lost none."""
    from bench.harvest import harvest_rows

    data = Path(args.data) if args.data else PROJECT / DEFAULT_DATA
    started = time.monotonic()
    with RedisServer() as server:
        got = harvest_rows(
            root=Path(args.out) / "scale" / "harvest",
            redis_url=server.url,
            data=data.resolve(),
            topics=tuple(t for t in args.harvest_topics.split(",") if t),
            strategies=tuple(t for t in args.harvest_strategies.split(",") if t),
            workers=tuple(int(x) for x in args.harvest_workers.split(",") if x.strip()),
            repeat=max(1, args.harvest_repeat),
            kill_late=args.harvest_kill_late == "yes",
            log=lambda line: print("harvest", line, flush=True),
        )
    results.update(got)
    results["harvest_seconds"] = round(time.monotonic() - started, 1)
    results["harvest_notes"] = (
        "wikispeedia, rows and budgets of bench.quality (2 x reachable targets in all);"
        " the workers' pages merged by fetch time and cut at the budget; oracle: one"
        " single-process crawl per row; frontier memory: the single-process reference;"
        " numbers are medians over the repeats (duplicate_fetches_max, pages_lost_max:"
        " the worst run)."
    )
    return all(r["duplicate_fetches"] == 0 and r["pages_lost"] == 0 for r in got["harvest_runs"])


if __name__ == "__main__":
    sys.exit(main())
