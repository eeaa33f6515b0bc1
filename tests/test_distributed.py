"""Several real crawl processes on one Redis crawl one sandbox together.

The sandbox is served by its own process (``python -m focused.web.sandbox --port 0``) so that
every worker sees the same URLs; a private ``redis-server`` runs on a free loopback port.
The reference is one process with the in-memory frontier crawling the same site to the
end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bench.scale import (
    RedisServer,
    SandboxProcess,
    run_workers,
    start_workers,
    stored_urls,
)
from focused.distributed.frontier import RedisFrontier
from focused.frontier.seen import url_fingerprint

PROJECT = Path(__file__).resolve().parent.parent
#: best_first drops no link, so the pages it reaches do not depend on the crawl order and
#: N workers must store exactly the single process's pages. The m-value strategies
#: (genetic, annealing) drop a side channel whose m decayed, and a page's m depends on
#: the path it was first fetched by: their page set may move with the order.
STRATEGY = "best_first"

# Skipped on a developer machine without redis-server; never in CI (.ci/run installs it).
pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture(scope="module")
def site() -> Iterator[SandboxProcess]:
    with SandboxProcess(seed=7, pages=200) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture(scope="module")
def reference(site: SandboxProcess, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    run = run_workers(
        1, tmp_path_factory.mktemp("single"), site, redis_url=None, strategy=STRATEGY, timeout=180
    )
    worker = run.workers[0]
    assert worker.returncode == 0, worker.log[-3000:]
    urls = set(worker.urls)
    assert len(urls) > 150
    return urls


def check_clean(run_log: str) -> None:
    assert "Traceback" not in run_log, run_log[-4000:]
    assert "focused: error" not in run_log, run_log[-4000:]


@pytest.mark.parametrize("strategy", [STRATEGY, "annealing"])
def test_two_workers_crawl_the_sandbox_together(
    site: SandboxProcess, redis_url: str, reference: set[str], tmp_path: Path, strategy: str
) -> None:
    key = f"dist:two:{strategy}"
    # the second worker starts a second later and joins the running crawl; a small
    # download delay keeps the crawl longer than a worker's start-up on a loaded machine
    run = run_workers(
        2,
        tmp_path,
        site,
        redis_url=redis_url,
        key=key,
        strategy=strategy,
        stagger=1.0,
        settings=("DOWNLOAD_DELAY=0.03",),
    )
    for w in run.workers:
        assert w.returncode == 0, w.log[-3000:]
        check_clean(w.log)
        assert len(w.urls) > 20, [len(x.urls) for x in run.workers]  # both did real work
    assert run.duplicates() == 0
    union = run.union()
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
    # every URL that entered the frontier was fetched once: stored, or failed
    assert status["seen"] == status["done"] + status["error"]
    assert status["done"] == len(union)
    if strategy == STRATEGY:
        assert union == reference
    else:  # the shared annealing pick did take worse links, with one temperature
        assert status["picks"] == status["seen"] and status["accepted_worse"] > 0
        assert len(union) > 0.9 * len(reference)


def test_a_killed_worker_s_urls_are_handed_out_again(
    site: SandboxProcess, redis_url: str, reference: set[str], tmp_path: Path
) -> None:
    key = "dist:kill"
    lease = ("FOCUSED_REDIS_LEASE=3",)
    frontier = RedisFrontier(redis.Redis.from_url(redis_url), key)
    first = start_workers(
        1, tmp_path / "a", site, redis_url=redis_url, key=key, strategy=STRATEGY, settings=lease
    )
    victim = first.workers[0]
    deadline = time.monotonic() + 60
    while len(stored_urls(victim.out)) < 40:
        assert victim.process.poll() is None, victim.log[-3000:]
        assert time.monotonic() < deadline, victim.log[-3000:]
        time.sleep(0.05)
    os.kill(victim.process.pid, signal.SIGSTOP)  # frozen: its Redis state cannot move
    in_flight = {
        int.from_bytes(fp, "big", signed=True)
        for fp in frontier.server.zrange(frontier.keys[2], 0, -1)
    }
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    assert in_flight, "the killed worker had nothing in flight"
    a = set(stored_urls(victim.out))
    assert 40 <= len(a) < len(reference)

    second = run_workers(
        1, tmp_path / "b", site, redis_url=redis_url, key=key, strategy=STRATEGY, settings=lease
    )
    helper = second.workers[0]
    assert helper.returncode == 0, helper.log[-3000:]
    check_clean(helper.log)
    b = set(helper.urls)
    status = frontier.status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
    assert status["reclaimed"] >= len(in_flight)
    assert a | b == reference  # nothing lost
    # Fetched twice at most: pages the killed worker stored whose "done" died with it.
    assert len(a & b) <= len(in_flight)
    by_fp = {url_fingerprint(u): u for u in reference}
    for fp in in_flight:  # each one is finished now, and its page stored by A or B
        assert frontier.server.hget(frontier.keys[1], fp.to_bytes(8, "big", signed=True)) is None
        assert fp not in by_fp or by_fp[fp] in a | b


def test_a_worker_killed_right_after_a_commit_is_reconciled_when_it_restarts(
    site: SandboxProcess, redis_url: str, reference: set[str], tmp_path: Path
) -> None:
    """The worst moment: the worker dies (``kill -9``, by its own page store) right after
    the store committed a page and before its "done" went to Redis. Restarted with the
    same output folder, it marks the pages its store holds done in Redis instead of
    fetching them again; the crawl ends with every page stored once."""
    key = "dist:reconcile"
    settings = (
        "FOCUSED_REDIS_LEASE=2",  # the dead worker's other URLs come back soon
        'ITEM_PIPELINES={"tests.kill_pipeline.KillAfterCommitPipeline": 300,'
        ' "focused.pipelines.MetricsPipeline": 800}',
        "TEST_KILL_AFTER_COMMITS=30",
    )
    frontier = RedisFrontier(redis.Redis.from_url(redis_url), key)
    victim = run_workers(
        1, tmp_path, site, redis_url=redis_url, key=key, strategy=STRATEGY, settings=settings
    ).workers[0]
    assert victim.returncode == -signal.SIGKILL, victim.log[-3000:]
    stored = victim.urls
    assert len(stored) == 30
    # the last page is stored, and Redis still has it waiting or in flight: no "done"
    last = url_fingerprint(stored[-1]).to_bytes(8, "big", signed=True)
    assert frontier.server.hget(frontier.keys[1], last) is not None

    again = run_workers(
        1, tmp_path, site, redis_url=redis_url, key=key, strategy=STRATEGY, settings=settings[:1]
    ).workers[0]
    assert again.returncode == 0, again.log[-3000:]
    check_clean(again.log)
    stats = again.stats
    assert stats.get("focused/duplicates", 0) == 0  # no stored page came back to the store
    assert stats.get("focused/redis/reconciled", 0) >= 1, again.log[-3000:]
    urls = again.urls  # the same output folder: both runs' pages
    assert len(urls) == len(set(urls))
    assert set(urls) == reference  # nothing lost
    status = frontier.status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
    assert status["seen"] == status["done"] + status["error"]
    assert frontier.server.hget(frontier.keys[1], last) is None


def test_redis_going_down_mid_crawl_loses_nothing(
    site: SandboxProcess, reference: set[str], tmp_path: Path
) -> None:
    """Redis dies (kill -9) under a running worker: the worker keeps its changes, stops
    after the lease with one error line (exit status 1) and saves them; the next start
    sends them and the crawl ends with every page stored."""
    out = tmp_path / "out"
    settings = ("FOCUSED_REDIS_LEASE=2", "DOWNLOAD_DELAY=0.02")
    with RedisServer(persist=True) as server:
        key = "dist:down"
        run = start_workers(
            1, out, site, redis_url=server.url, key=key, strategy=STRATEGY, settings=settings
        )
        worker = run.workers[0]
        deadline = time.monotonic() + 60
        while len(stored_urls(worker.out)) < 30:
            assert worker.process.poll() is None, worker.log[-3000:]
            assert time.monotonic() < deadline, worker.log[-3000:]
            time.sleep(0.05)
        server.kill()
        worker.process.wait(timeout=60)
        log = worker.log
        assert worker.process.returncode == 1, log[-3000:]  # stopped before its end
        assert "Traceback" not in log, log[-4000:]
        errors = [line for line in log.splitlines() if "focused: error:" in line]
        assert errors and "is unreachable" in errors[0], log[-3000:]
        assert all(len(line) < 400 for line in errors)
        assert "'finish_reason': 'redis_unreachable'" in log
        first = set(stored_urls(worker.out))
        assert 30 <= len(first) < len(reference)

        server.start()  # the same server again, with what it had written
        again = run_workers(
            1, out, site, redis_url=server.url, key=key, strategy=STRATEGY, settings=settings[:1]
        )
        log = again.workers[0].log
        assert again.workers[0].returncode == 0, log[-3000:]
        assert "Traceback" not in log, log[-4000:]
        assert not (worker.out / "redis-outbox.pickle").exists()
        status = RedisFrontier(redis.Redis.from_url(server.url), key).status()
        assert status["waiting"] == 0 and status["in_flight"] == 0
        assert set(stored_urls(worker.out)) == reference  # nothing lost


@pytest.mark.parametrize(
    "fault",
    [  # a minute each: `make test-slow` (the path they share runs in misconf-learning)
        pytest.param("maxmemory", marks=pytest.mark.slow),
        pytest.param("misconf", marks=pytest.mark.slow),
        "misconf-learning",
    ],
)
def test_redis_refusing_writes_mid_crawl_stops_cleanly_and_loses_nothing(
    site: SandboxProcess, reference: set[str], tmp_path: Path, fault: str
) -> None:
    """Redis refuses every write under a running worker: it reached its ``maxmemory``
    (``noeviction``: OOM errors), or it cannot save its snapshot (``MISCONF``: its folder
    gone, as a full or broken disk would, with ``stop-writes-on-bgsave-error``). The
    worker stops with one error line, exit status 1 and reason ``redis_out_of_memory``
    (``redis_refused_writes``), stores no page whose links Redis refused and saves its
    unsent changes; once Redis is repaired, the same command with the same output folder
    ends the crawl with every page stored. Before, the error reply was a traceback from
    the store's checkpoint, the engine and the scheduler's close (which failed, so
    nothing was saved), and the crawl ended as ``store_failed``. With ``learning`` the
    shared model's writes are refused too (its rescoring lease released at the close
    failed the scheduler's close, which then saved nothing)."""
    out = tmp_path / "out"
    settings = ("DOWNLOAD_DELAY=0.02",)
    strategy = "learning" if fault.endswith("learning") else STRATEGY
    with RedisServer() as server:
        assert server.dir is not None
        key = f"dist:refused:{fault}"
        admin = redis.Redis.from_url(server.url)
        if fault.startswith("misconf"):
            admin.config_set("save", "3600 1")  # (stop-writes-on-bgsave-error: yes)
        run = start_workers(
            1, out, site, redis_url=server.url, key=key, strategy=strategy, settings=settings
        )
        worker = run.workers[0]
        deadline = time.monotonic() + 60
        while len(stored_urls(worker.out)) < 20:
            assert worker.process.poll() is None, worker.log[-3000:]
            assert time.monotonic() < deadline, worker.log[-3000:]
            time.sleep(0.05)
        if fault == "maxmemory":
            used = int(admin.info("memory")["used_memory"])
            admin.config_set("maxmemory", max(1, used - 50_000))  # (policy noeviction)
        else:
            shutil.rmtree(server.dir)  # the snapshot cannot be written
            admin.bgsave()
        worker.process.wait(timeout=60)
        log = worker.log
        assert worker.process.returncode == 1, log[-3000:]
        assert "Traceback" not in log, log[-4000:]
        errors = [line for line in log.splitlines() if "focused: error:" in line]
        assert len(errors) == 1 and "refuses the shared frontier's writes" in errors[0], log
        reason = "redis_out_of_memory" if fault == "maxmemory" else "redis_refused_writes"
        assert f"'finish_reason': '{reason}'" in log
        first = set(stored_urls(worker.out))
        assert 20 <= len(first) < len(reference)
        if strategy != STRATEGY:  # (its page set need not be best_first's)
            admin.close()
            return

        if fault == "maxmemory":
            admin.config_set("maxmemory", 0)
        else:
            server.dir.mkdir()  # (for the server's stop(); its cwd stays the one removed)
            admin.config_set("stop-writes-on-bgsave-error", "no")
        again = run_workers(
            1, out, site, redis_url=server.url, key=key, strategy=STRATEGY, settings=settings
        )
        log = again.workers[0].log
        assert again.workers[0].returncode == 0, log[-3000:]
        assert "Traceback" not in log, log[-4000:]
        assert not (worker.out / "redis-outbox.pickle").exists()
        status = RedisFrontier(redis.Redis.from_url(server.url), key).status()
        assert status["waiting"] == 0 and status["in_flight"] == 0
        assert set(stored_urls(worker.out)) == reference  # nothing lost
        assert "'focused/duplicates'" not in log or "'focused/duplicates': 0" in log
        admin.close()


def test_a_worker_restarted_on_an_older_copy_of_the_frontier_loses_no_page(
    site: SandboxProcess, reference: set[str], tmp_path: Path
) -> None:
    """Redis comes back mid-crawl from a snapshot taken earlier (a backup, or an
    append-only file that lost its last second): the worker stops (the frontier is an
    older copy). Started again with the same output folder on that older copy, it must
    not mark the pages it stored since the snapshot done: their links were sent after
    it and are not in Redis. Before, it did (the reconciling of a killed worker), and
    the crawl ended "finished" with 14 of 196 pages never fetched."""
    out = tmp_path / "out"
    settings = ("DOWNLOAD_DELAY=0.05", "FOCUSED_REDIS_LEASE=4")
    with RedisServer() as server:
        assert server.dir is not None
        key = "dist:older"
        client = redis.Redis.from_url(server.url)
        run = start_workers(
            1, out, site, redis_url=server.url, key=key, strategy=STRATEGY, settings=settings
        )
        worker = run.workers[0]
        deadline = time.monotonic() + 60
        while len(stored_urls(worker.out)) < 5:
            assert worker.process.poll() is None, worker.log[-3000:]
            assert time.monotonic() < deadline, worker.log[-3000:]
            time.sleep(0.05)
        os.kill(worker.process.pid, signal.SIGSTOP)
        try:
            client.save()
            shutil.copy(server.dir / "dump.rdb", tmp_path / "older.rdb")
            at_save = len(stored_urls(worker.out))
        finally:
            os.kill(worker.process.pid, signal.SIGCONT)
        while len(stored_urls(worker.out)) < at_save + 60:  # pages stored since
            assert worker.process.poll() is None, worker.log[-3000:]
            assert time.monotonic() < deadline + 60, worker.log[-3000:]
            time.sleep(0.05)
        server.kill()
        shutil.copy(tmp_path / "older.rdb", server.dir / "dump.rdb")
        server.start()  # the same port, the older snapshot
        worker.process.wait(timeout=60)
        assert worker.process.returncode == 1, worker.log[-3000:]
        assert "vanished from Redis" in worker.log, worker.log[-3000:]
        client.close()

        time.sleep(4.5)  # the stopped worker's lease (its in-flight URLs come back)
        again = run_workers(
            1, out, site, redis_url=server.url, key=key, strategy=STRATEGY, settings=settings
        )
        log = again.workers[0].log
        assert again.workers[0].returncode == 0, log[-3000:]
        check_clean(log)
        status = RedisFrontier(redis.Redis.from_url(server.url), key).status()
        assert status["waiting"] == 0 and status["in_flight"] == 0
        missing = reference - set(stored_urls(worker.out))
        assert not missing, f"{len(missing)} pages never fetched: {sorted(missing)[:5]}"
        assert "stopped on a lost shared frontier" in log, log[-3000:]


def test_robots_txt_holds_for_a_joining_worker_s_burst(
    site: SandboxProcess, redis_url: str, tmp_path: Path
) -> None:
    """A worker joining a shared crawl starts with a burst of URLs of one host, which all
    wait for robots.txt. Scrapy 2.19's middleware lets every waiter after the first
    through unchecked; the project's (``focused.robots``) does not."""
    import json

    from bench.scale import crawl_command
    from focused import settings as project
    from focused.frontier.memory import Entry
    from focused.web.sandbox import generate_site

    scrapy_robots = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
    middlewares = dict(getattr(project, "DOWNLOADER_MIDDLEWARES", {}))
    raw = {k: v for k, v in middlewares.items() if "robots" not in k.lower()}
    raw[scrapy_robots] = 100
    pages = generate_site(seed=site.seed, pages=site.pages).pages
    paths = [p for p in pages if p.endswith(".html") and not p.startswith("/private/")][:12]
    urls = [site.base + p for p in paths] + [site.base + "/private/lab-notes.html"]
    fetched = {}
    for name, extra in (
        ("project", ()),
        ("scrapy", (f"DOWNLOADER_MIDDLEWARES={json.dumps(raw)}",)),
    ):
        key = f"dist:robots:{name}"
        frontier = RedisFrontier(redis.Redis.from_url(redis_url), key)
        for i, url in enumerate(urls):  # a running crawl's queue, ahead of the seeds
            frontier.stage_push(Entry(url=url, fp=url_fingerprint(url), priority=10**9 - i))
        frontier.sync()
        out = tmp_path / name
        settings = ("CLOSESPIDER_PAGECOUNT=12", *extra)
        cmd = crawl_command(out, site, redis_url=redis_url, key=key, settings=settings)
        proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        fetched[name] = [u for u in stored_urls(out) if "/private/" in u]
    assert fetched["project"] == []
    assert fetched["scrapy"], "Scrapy's own middleware obeyed: is the race fixed upstream?"
