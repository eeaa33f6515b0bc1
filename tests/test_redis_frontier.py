"""The shared Redis frontier against a real ``redis-server`` (started on a free loopback port).

Unit level: atomic picks from several clients, leases, promotion, retries, the outbox
when Redis is down. Crawl level (real ``scrapy crawl`` subprocesses on the sandbox): a
worker leaves the shared frontier in Redis when it closes and a second run continues it,
and an unreachable Redis stops the crawl with one line before anything is fetched.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from bench.scale import (
    RedisServer,
    SandboxProcess,
    crawl_command,
    free_port,
    stored_urls,
)
from focused.distributed.connection import check
from focused.distributed.frontier import (
    ANNEAL,
    BEST,
    IGNORED_GONE,
    IGNORED_WAITING,
    PROMOTED,
    REQUEUED,
    RedisFrontier,
    load_outboxes,
)
from focused.errors import RedisUnavailable
from focused.frontier.memory import Entry
from focused.ranking.annealing import Annealer

PROJECT = Path(__file__).resolve().parent.parent
HAVE_REDIS = shutil.which("redis-server") is not None

# Skipped on a developer machine without redis-server; never in CI (.ci/run installs it).
pytestmark = pytest.mark.skipif(
    not HAVE_REDIS and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


_keys = iter(range(10**6))


@pytest.fixture
def key() -> str:
    return f"test:{next(_keys)}:{time.monotonic_ns()}"


def entry(i: int, priority: int = 0, value: float = 0.0, **kw: object) -> Entry:
    return Entry(url=f"http://h.test/p{i}", fp=1000 + i, priority=priority, value=value, **kw)


def test_round_trip_of_an_entry(client: redis.Redis, key: str) -> None:
    f = RedisFrontier(client, key)
    e = entry(
        7,
        priority=-3,
        value=0.25,
        depth=4,
        m=81.5,
        hops=2,
        anchor_relevance=0.125,
        parent_url="http://h.test/中文",
        flags=3,
        extra={"meta": {"x": [1, 2]}},
    )
    e.url = "http://h.test/p7?q=é"
    assert f.push(e)
    assert 1007 in f and len(f) == 1
    got = f.pop()
    assert got is not None
    for name in ("url", "fp", "priority", "value", "depth", "m", "hops", "parent_url", "flags"):
        assert getattr(got, name) == getattr(e, name), name
    assert got.anchor_relevance == pytest.approx(0.125)
    assert got.extra == {"meta": {"x": [1, 2]}}
    assert f.pop() is None and 1007 not in f


def test_order_is_priority_then_first_found(client: redis.Redis, key: str) -> None:
    f = RedisFrontier(client, key)
    for i, prio in enumerate([0, 5, 0, 5, -1, 3]):
        f.stage_push(entry(i, priority=prio))
    f.sync()
    assert [f.pop().fp - 1000 for _ in range(6)] == [1, 3, 5, 0, 2, 4]


def test_promotion_requeue_and_ignores(client: redis.Redis, key: str) -> None:
    f = RedisFrontier(client, key)
    for i in range(3):
        f.stage_push(entry(i, priority=1))
    f.sync()
    f.stage_push(entry(2, priority=9))  # promoted: now first
    f.stage_push(entry(1, priority=0))  # lower: ignored, stays waiting
    step = f.sync()
    assert [code for _, _, code in step.results] == [PROMOTED, IGNORED_WAITING]
    assert len(f) == 3 and f.status()["promoted"] == 1
    first = f.pop()
    assert first.fp == 1002 and first.priority == 9
    f.stage_push(entry(2, priority=50))  # in flight: ignored
    f.stage_push(entry(2, priority=50), dont_filter=True)  # a retry: back to waiting
    step = f.sync()
    assert [code for _, _, code in step.results] == [IGNORED_GONE, REQUEUED]
    assert f.pop().fp == 1002
    f.stage_finish(1002)
    f.stage_push(entry(2, priority=99))  # done: ignored for good
    step = f.sync()
    assert step.results[-1][2] == IGNORED_GONE
    assert step.counts.done == 1 and step.counts.waiting == 2 and step.counts.in_flight == 0


def test_two_clients_never_take_the_same_url(redis_url: str, key: str) -> None:
    n = 3000
    setup = RedisFrontier(redis.Redis.from_url(redis_url), key)
    for i in range(n):
        setup.stage_push(entry(i, priority=i % 17, value=(i % 17) / 17))
    setup.sync()
    taken: list[list[int]] = [[], [], [], []]

    def worker(slot: int) -> None:
        f = RedisFrontier(redis.Redis.from_url(redis_url), key)
        annealer = Annealer(t0=0.5, alpha=0.999, k=8, seed=slot)
        while True:
            step = f.sync(ANNEAL if slot % 2 else BEST, annealer if slot % 2 else None)
            if step.entry is None:
                break
            taken[slot].append(step.entry.fp)
            f.stage_finish(step.entry.fp)
        f.sync()
        f.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    everything = [fp for part in taken for fp in part]
    assert len(everything) == n == len(set(everything))
    assert all(len(part) > 100 for part in taken), [len(p) for p in taken]
    status = setup.status()
    assert status["done"] == n and status["waiting"] == 0 and status["in_flight"] == 0
    assert status["picks"] == sum(len(p) for p in taken[1::2])  # an empty queue: no pick
    assert status["accepted_worse"] > 0  # the annealing pick did take worse links


def test_annealing_temperature_is_shared_and_cools_per_pick(client: redis.Redis, key: str) -> None:
    f = RedisFrontier(client, key)
    for i in range(10):
        f.stage_push(entry(i, priority=i, value=i / 10))
    f.sync()
    a = Annealer(t0=0.1, alpha=0.5, t_min=0.001, k=4, seed=3)
    b = Annealer(t0=0.1, alpha=0.5, t_min=0.001, k=4, seed=4)
    f.pop_annealed(a)
    f.pop_annealed(b)
    f.pop_annealed(a)
    assert a.picks == 3 and a.temperature == pytest.approx(0.1 * 0.5**3)
    assert b.picks == 2 and b.temperature == pytest.approx(0.1 * 0.5**2)
    zero = Annealer(t0=0.0, k=4)  # T = 0: plain best-first
    assert [f.pop_annealed(zero).fp for _ in range(3)] == [1006, 1005, 1004]


def test_lease_expiry_hands_in_flight_urls_out_again(redis_url: str, key: str) -> None:
    dead = RedisFrontier(redis.Redis.from_url(redis_url), key, lease=0.4)
    alive = RedisFrontier(redis.Redis.from_url(redis_url), key, lease=0.4)
    for i in range(3):
        dead.stage_push(entry(i, priority=10 - i))
    dead.sync()
    lost = dead.pop()
    kept = alive.pop()
    assert (lost.fp, kept.fp) == (1000, 1001)
    time.sleep(0.25)
    alive.stage_renew([kept.fp])  # a live worker renews its leases
    alive.sync()
    time.sleep(0.25)
    # the dead worker's lease ran out: its URL is handed out again, first (old place)
    again = alive.pop()
    assert again.fp == 1000 and again.url == lost.url and again.priority == 10
    assert alive.status()["reclaimed"] == 1
    assert alive.pop().fp == 1002
    assert alive.pop() is None  # the renewed URL is still leased
    alive.stage_finish(1001)
    alive.stage_finish(1000)
    dead.stage_finish(1000)  # the slow worker reports too: counted once
    assert alive.sync().counts.done == 2 and dead.sync().counts.done == 2


def test_release_gives_back_the_old_place(client: redis.Redis, key: str) -> None:
    f = RedisFrontier(client, key)
    for i in range(3):
        f.stage_push(entry(i, priority=1))
    f.sync()
    first = f.pop()
    f.stage_release(first.fp)
    f.sync()
    assert [f.pop().fp for _ in range(3)] == [1000, 1001, 1002]


def test_closing_never_wipes(redis_url: str, key: str) -> None:
    f = RedisFrontier(redis.Redis.from_url(redis_url), key)
    f.push(entry(1))
    f.close()
    other = RedisFrontier(redis.Redis.from_url(redis_url), key)
    assert other.status()["waiting"] == 1
    assert other.clear() == 4  # queue, data, seen, stats: only when asked
    assert other.status()["waiting"] == 0


def test_unreachable_redis_keeps_staged_changes(
    client: redis.Redis, key: str, tmp_path: Path
) -> None:
    port = free_port()
    no_retry = Retry(NoBackoff(), 0)
    down = RedisFrontier(redis.Redis("127.0.0.1", port, retry=no_retry), key)
    with pytest.raises(RedisUnavailable) as info:
        down.open()
    message = str(info.value)
    assert "\n" not in message and f"127.0.0.1:{port}" in message and "unreachable" in message
    down._sha = "0" * 40  # as if it had been up once
    for i in range(5):
        down.stage_push(entry(i, priority=i))
    with pytest.raises(redis.exceptions.ConnectionError):
        down.sync()
    assert down.pending == 5  # nothing lost
    path = tmp_path / "outbox.pickle"
    assert down.save_outbox(path) == 5 and down.pending == 0
    up = RedisFrontier(client, key)
    assert RedisFrontier(client, "another:key").restore_outbox(path) == 0  # not its key
    assert up.restore_outbox(path) == 5
    assert path.exists()  # until they reach Redis
    up.sync()
    assert len(up) == 5 and up.pop().fp == 1004
    assert not path.exists()  # sent: out of the file


def test_an_outbox_file_keeps_every_key_s_changes_until_each_is_sent(
    client: redis.Redis, key: str, tmp_path: Path
) -> None:
    """A crawl closed with Redis down under one key (``FOCUSED_REDIS_KEY``), then ran in
    the same output folder under another and closed with Redis down again: the file holds
    both keys' changes (the second save wrote over the first's before), a start that
    cannot send its restored changes saves them once (not twice), and each key's changes
    leave the file only once sent."""
    path = tmp_path / "outbox.pickle"
    first = RedisFrontier(client, key)
    first.stage_push(entry(1))
    first.stage_finish(2)
    assert first.save_outbox(path) == 2
    other = RedisFrontier(client, key + ":b")
    assert other.restore_outbox(path) == 0
    other.stage_finish(3)
    assert other.save_outbox(path) == 1
    saved = load_outboxes(path)
    assert set(saved) == {key, key + ":b"}
    assert [op[0] for op in saved[key + ":b"]] == ["d"]
    assert [op[0] for op in load_outboxes(path)[key]] == ["p", "d"]

    again = RedisFrontier(client, key)  # restored, then Redis is down again at the close
    assert again.restore_outbox(path) == 2
    again.stage_finish(4)
    assert again.save_outbox(path) == 3
    assert [op[0] for op in load_outboxes(path)[key]] == ["p", "d", "d"]  # not 5

    sender = RedisFrontier(client, key + ":b")
    assert sender.restore_outbox(path) == 1
    sender.sync()
    assert set(load_outboxes(path)) == {key}  # the other key's changes wait for it
    last = RedisFrontier(client, key)
    assert last.restore_outbox(path) == 3
    last.sync()
    assert len(last) == 1 and last.pop().fp == 1001
    assert not path.exists()


def _save_pushes(path: str, key: str, worker: int, rounds: int, start: object) -> None:
    """A worker process that saves one more push to the outbox file per round (its
    output folder's, shared with another worker), as a close with Redis away does."""
    frontier = RedisFrontier(redis.Redis(host="127.0.0.1", port=1), key)  # (never asked)
    start.wait()  # type: ignore[attr-defined]
    for i in range(rounds):
        frontier.stage_push(entry(worker * 10_000 + i))
        frontier.save_outbox(path)


def test_two_workers_sharing_an_output_folder_keep_each_other_s_saved_changes(
    client: redis.Redis, key: str, tmp_path: Path
) -> None:
    """Two workers with one output folder (two scrapyd jobs given the same
    FOCUSED_OUTPUT_DIR) save their unsent changes to the one outbox file: two real
    processes saving 150 times each at once leave all 300 pushes in it (before: each
    read the file, added its own and wrote it over the other's; 161 of 300 were left in
    a probe). And a worker that sends the changes it restored takes only those out of the
    file, not those another worker saved since (before: the whole key's)."""
    import multiprocessing

    path = tmp_path / "outbox.pickle"
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    workers = [
        ctx.Process(target=_save_pushes, args=(str(path), key, w, 150, start)) for w in (1, 2)
    ]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert len(load_outboxes(path)[key]) == 300
    path.unlink()

    a = RedisFrontier(client, key)
    a.stage_push(entry(1))
    assert a.save_outbox(path) == 1
    restarted = RedisFrontier(client, key)
    assert restarted.restore_outbox(path) == 1
    b = RedisFrontier(client, key)  # closes with Redis away meanwhile
    b.stage_push(entry(2))
    assert b.save_outbox(path) == 1
    restarted.sync()  # sends entry 1 only
    assert [op[1] for op in load_outboxes(path)[key]] == [struct.pack(">q", 1002)]


def test_check_names_the_server_in_one_line() -> None:
    from scrapy.settings import Settings

    port = free_port()
    with pytest.raises(RedisUnavailable, match=rf"^Redis at redis://127.0.0.1:{port}/0 is"):
        check(Settings({"REDIS_URL": f"redis://127.0.0.1:{port}/0"}))


# --- real crawls ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxProcess]:
    with SandboxProcess(seed=7, pages=200) as site:
        yield site


def crawl(out: Path, sandbox: SandboxProcess, redis_url: str, key: str, *settings: str):
    cmd = crawl_command(out, sandbox, redis_url=redis_url, key=key, settings=settings)
    return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120)


def test_a_closed_worker_leaves_the_frontier_and_a_second_run_continues(
    sandbox: SandboxProcess, redis_url: str, key: str, tmp_path: Path
) -> None:
    first = crawl(tmp_path / "a", sandbox, redis_url, key, "CLOSESPIDER_PAGECOUNT=40")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Traceback" not in first.stderr, first.stderr[-3000:]
    assert "(not cleared)" in first.stderr
    frontier = RedisFrontier(redis.Redis.from_url(redis_url), key)
    status = frontier.status()
    a = stored_urls(tmp_path / "a")
    assert 40 <= len(a) < 80
    assert status["in_flight"] == 0  # the URLs it had not fetched went back to the queue
    assert status["waiting"] > 0 and status["done"] == len(a)

    second = crawl(tmp_path / "b", sandbox, redis_url, key, "CLOSESPIDER_PAGECOUNT=40")
    assert second.returncode == 0, second.stderr[-3000:]
    b = stored_urls(tmp_path / "b")
    assert len(b) >= 40
    assert not set(a) & set(b)  # it continued: nothing fetched twice, seeds included
    assert frontier.status()["done"] == len(a) + len(b)


def test_unreachable_redis_stops_before_any_fetch(sandbox: SandboxProcess, tmp_path: Path) -> None:
    port = free_port()
    run = crawl(tmp_path / "out", sandbox, f"redis://127.0.0.1:{port}/0", "k")
    log = run.stderr
    assert "Traceback" not in log, log[-3000:]
    errors = [line for line in log.splitlines() if "focused: error:" in line]
    assert errors, log[-3000:]
    assert f"Redis at redis://127.0.0.1:{port}/0 is unreachable" in errors[0]
    assert len(errors) == 1 and "Spider opened" not in log
    assert stored_urls(tmp_path / "out") == []
    assert run.returncode == 2


# --- the switch: settings, not the base class ----------------------------------------------
def _crawler_with_project_settings(**cmdline: str):
    from scrapy.crawler import AsyncCrawlerRunner, CrawlerRunner
    from scrapy.settings import Settings
    from scrapy.spiders import Spider
    from scrapy.utils.reactor import is_reactor_installed
    from scrapy.utils.test import get_reactor_settings

    settings = Settings(get_reactor_settings())
    settings.setmodule("focused.settings", priority="project")
    settings.setdict(cmdline, priority="cmdline")  # as -s NAME=VALUE
    runner = CrawlerRunner if is_reactor_installed() else AsyncCrawlerRunner
    crawler = runner(settings).create_crawler(Spider)
    crawler._apply_settings()  # what Crawler.crawl does first (add-ons included)
    return crawler


def test_frontier_setting_selects_the_redis_scheduler() -> None:
    from focused.distributed.addon import MEMORY_SCHEDULER, REDIS_SCHEDULER

    assert _crawler_with_project_settings().settings["SCHEDULER"] == MEMORY_SCHEDULER
    crawler = _crawler_with_project_settings(FOCUSED_FRONTIER="redis")
    assert crawler.settings["SCHEDULER"] == REDIS_SCHEDULER
    # a scheduler of the user's own is left alone
    own = "scrapy.core.scheduler.Scheduler"
    crawler = _crawler_with_project_settings(FOCUSED_FRONTIER="redis", SCHEDULER=own)
    assert crawler.settings["SCHEDULER"] == own


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    import sys

    cmd = [sys.executable, "-m", "focused.distributed", *args]
    return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=60)


def test_the_cli_shows_and_clears_a_frontier(redis_url: str, key: str) -> None:
    import json

    f = RedisFrontier(redis.Redis.from_url(redis_url), key)
    f.push(entry(1))
    status = cli("status", "--key", key, "--url", redis_url)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["waiting"] == 1
    cleared = cli("clear", "--key", key, "--url", redis_url)
    assert cleared.returncode == 0 and cleared.stdout.startswith("deleted 4 keys")
    assert f.status()["waiting"] == 0
    down = cli("status", "--key", key, "--url", f"redis://127.0.0.1:{free_port()}/0")
    assert down.returncode == 2 and down.stderr.startswith("focused: error: Redis at")


# --- the scheduler outside a crawl (a crawler from get_crawler, no engine) -----------------
def _scheduler(redis_url: str, tmp_path: Path, name: str, **settings: object):
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from focused.distributed.scheduler import RedisScheduler

    spidercls = type(name.title(), (Spider,), {"name": name})
    crawler = get_crawler(
        spidercls,
        {
            "FOCUSED_FRONTIER": "redis",
            "REDIS_URL": redis_url,
            "FOCUSED_OUTPUT_DIR": str(tmp_path),
            **settings,
        },
    )
    crawler.spider = spider = spidercls.from_crawler(crawler)
    return RedisScheduler.from_crawler(crawler), spider


def test_the_default_key_is_per_spider(redis_url: str, client: redis.Redis, tmp_path: Path):
    from scrapy import Request

    for name in ("alpha", "beta"):
        RedisFrontier(client, name).clear()
    alpha, alpha_spider = _scheduler(redis_url, tmp_path, "alpha")
    beta, beta_spider = _scheduler(redis_url, tmp_path, "beta")
    alpha.open(alpha_spider)
    beta.open(beta_spider)
    assert (alpha.redis.key, beta.redis.key) == ("alpha", "beta")
    assert alpha.enqueue_request(Request("http://h.test/alpha-only"))
    assert alpha.has_pending_requests()
    assert not beta.has_pending_requests() and beta.next_request() is None
    assert alpha.next_request().url == "http://h.test/alpha-only"
    alpha.close("finished")
    beta.close("finished")
    # a topic and the older {spider} / {topic} placeholders
    alpha_spider.topic_arg = "chemistry"
    assert alpha.key_for(alpha_spider) == "alpha:chemistry"
    alpha.key_template = "crawl:{spider}:{topic}"
    assert alpha.key_for(alpha_spider) == "crawl:alpha:chemistry"


def test_duplicates_are_refused_and_pending_is_answered_before_the_engine(
    redis_url: str, client: redis.Redis, tmp_path: Path
) -> None:
    from scrapy import Request

    RedisFrontier(client, "gamma").clear()
    sched, spider = _scheduler(redis_url, tmp_path, "gamma")
    assert not sched.has_pending_requests()  # not opened yet
    sched.open(spider)
    assert not sched.has_pending_requests()  # the crawler has no engine: still an answer
    url = "http://h.test/dup"
    assert sched.enqueue_request(Request(url, priority=1))
    assert not sched.enqueue_request(Request(url, priority=1))  # Scrapy's contract: False
    assert not sched.enqueue_request(Request(url, priority=0))
    assert sched.enqueue_request(Request(url, priority=5))  # found again, better: promoted
    assert sched.has_pending_requests() and len(sched) == 1
    got = sched.next_request()
    assert got.url == url and got.priority == 5
    assert not sched.has_pending_requests()  # only in flight here: the engine's, not queued
    assert not sched.enqueue_request(Request(url, priority=99))  # in flight: a duplicate
    assert sched.enqueue_request(Request(url, dont_filter=True))  # a retry goes back
    assert sched.next_request().url == url
    sched.close("finished")
    assert sched.filtered == 3
    status = RedisFrontier(client, "gamma").status()
    assert status["promoted"] == 1 and status["seen"] == 1
    assert status["waiting"] == 1 and status["done"] == 0  # never fetched: released


# --- a plain spider on the Redis scheduler: the crawl ends ---------------------------------
PLAIN_SPIDER = '''
import scrapy


class PlainSpider(scrapy.Spider):
    """Yields requests, never an item; one request has its own errback and fails."""

    name = "plain"

    async def start(self):
        yield scrapy.Request(self.base + "/index.html")
        yield scrapy.Request(self.dead, callback=self.parse, errback=self.failed)

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)

    def failed(self, failure):
        self.logger.info("own errback: %s", failure.value)
'''

SITE = {
    "index.html": '<a href="a.html">a</a> <a href="b.html">b</a> <a href="c.html">c</a>',
    "a.html": '<a href="index.html">home</a> <a href="d.html">d</a>',
    "b.html": '<a href="a.html">a</a>',
    "c.html": "no links",
    "d.html": "no links either",
}


@pytest.fixture
def tiny_site(tmp_path: Path) -> Iterator[str]:
    import functools
    from http.server import SimpleHTTPRequestHandler

    from tests.loopback import QuickHTTPServer, serve_in_thread

    root = tmp_path / "site"
    root.mkdir()
    for name, body in SITE.items():
        (root / name).write_text(f"<html><body>{body}</body></html>")

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = QuickHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=root))
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_plain_spider_s_crawl_ends_when_its_last_pages_yield_nothing(
    redis_url: str, client: redis.Redis, tiny_site: str, tmp_path: Path
) -> None:
    import sys

    RedisFrontier(client, "plain").clear()
    spider = tmp_path / "plain.py"
    spider.write_text(PLAIN_SPIDER)
    timeout = 60
    settings = {
        "SCHEDULER": "focused.distributed.scheduler.RedisScheduler",
        "REDIS_URL": redis_url,
        "FOCUSED_OUTPUT_DIR": str(tmp_path / "out"),
        "CLOSESPIDER_TIMEOUT": str(timeout),
        "RETRY_TIMES": "1",  # the dead URL is retried once (a dont_filter push), then fails
    }
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider)]
    cmd += ["-a", f"base={tiny_site}", "-a", f"dead=http://127.0.0.1:{free_port()}/gone"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    # a plain spider outside the project: no SCRAPY_SETTINGS_MODULE an earlier test's
    # get_project_settings() left in this process's environment
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = str(PROJECT)
    started = time.monotonic()
    run = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout + 60
    )
    took = time.monotonic() - started
    log = run.stderr
    assert run.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "own errback" in log
    assert took < timeout / 2, f"{took:.1f} s: waited for CLOSESPIDER_TIMEOUT"
    status = RedisFrontier(client, "plain").status()  # the default key: the spider's name
    assert status["in_flight"] == 0 and status["waiting"] == 0
    assert status["done"] == len(SITE) and status["error"] == 1


def _wait_for_the_lease_to_run_out(client: redis.Redis, frontier: RedisFrontier) -> None:
    """Until the one in-flight URL's lease ran out by the server's clock."""
    (deadline,) = [int(s) for _, s in client.zrange(frontier.keys[2], 0, -1, withscores=True)]
    while True:
        sec, usec = client.time()
        if sec * 1000 + usec // 1000 > deadline:
            return
        time.sleep(0.05)


def _worker_a_holding_x(server: RedisServer, tmp_path: Path, key: str):
    """Worker A (a lease of 1 s) with /x picked: in flight at A, never fetched."""
    from scrapy import Request

    a, a_spider = _scheduler(
        server.url, tmp_path / "a", "worker", FOCUSED_REDIS_KEY=key, FOCUSED_REDIS_LEASE=1.0
    )
    a.open(a_spider)
    assert a.enqueue_request(Request("http://h.test/x", priority=10))
    assert a.next_request().url == "http://h.test/x"
    return a, a_spider


def _worker_b_after_the_lease(server: RedisServer, tmp_path: Path, key: str):
    """Redis back up: once worker A's lease on /x ran out, worker B opens; returns a
    client, the frontier, B and its spider."""
    client = redis.Redis.from_url(server.url)
    frontier = RedisFrontier(client, key)
    _wait_for_the_lease_to_run_out(client, frontier)
    b, b_spider = _scheduler(server.url, tmp_path / "b", "worker", FOCUSED_REDIS_KEY=key)
    b.open(b_spider)
    return client, frontier, b, b_spider


def test_a_release_saved_while_redis_was_down_never_brings_back_another_worker_s_url(
    tmp_path: Path,
) -> None:
    """Worker A picked /x, Redis died, A closed: its push of /z is saved in the outbox,
    its release of /x is not. The lease ran out, worker B took /x; A started again and
    sent its outbox: /x stays B's (not queued again, not handed to A), /z arrives, and /x
    is fetched once. With the release sent late, A got /x a second time."""
    from scrapy import Request, signals
    from scrapy.http import HtmlResponse

    server = RedisServer(persist=True)
    server.start()
    try:
        key = "release:down"
        a, _ = _worker_a_holding_x(server, tmp_path, key)
        server.kill()
        assert a.enqueue_request(Request("http://h.test/z", priority=1))  # staged only
        a.close("shutdown")  # Redis unreachable: the outbox file
        outbox = tmp_path / "a" / a.OUTBOX_NAME
        assert outbox.exists()
        assert a.crawler.stats.get_value("focused/redis/released") == 0  # /x not released
        server.start()
        client, frontier, b, b_spider = _worker_b_after_the_lease(server, tmp_path, key)
        got = b.next_request()  # the lease handed /x back: B takes it
        assert got.url == "http://h.test/x"
        assert frontier.status()["reclaimed"] == 1

        again, again_spider = _scheduler(
            server.url, tmp_path / "a", "worker", FOCUSED_REDIS_KEY=key, FOCUSED_REDIS_LEASE=1.0
        )
        again.open(again_spider)  # sends A's outbox
        assert not outbox.exists()
        status = frontier.status()
        assert (status["waiting"], status["in_flight"]) == (1, 1)  # /z waits, /x is B's
        assert again.next_request().url == "http://h.test/z"
        assert again.next_request() is None  # /x is not handed out a second time

        # B fetches /x and finishes it; nothing brings it back either
        page = HtmlResponse(got.url, body=b"<html></html>", request=got)
        sent = b.crawler.signals.send_catch_log
        sent(signals.response_received, response=page, request=got, spider=b_spider)
        sent(signals.item_scraped, item={}, response=page, spider=b_spider)
        b.close("finished")
        again.close("finished")  # /z was never fetched: released (Redis is up)
        status = frontier.status()
        assert (status["done"], status["waiting"], status["in_flight"]) == (1, 1, 0)
        last, last_spider = _scheduler(server.url, tmp_path / "c", "worker", FOCUSED_REDIS_KEY=key)
        last.open(last_spider)
        assert last.next_request().url == "http://h.test/z"
        assert last.next_request() is None
        last.close("finished")
        client.close()
    finally:
        server.stop()


def test_an_outbox_never_keeps_releases_renewals_or_waste_re_queues(
    client: redis.Redis, key: str, tmp_path: Path
) -> None:
    """Only pushes and finishes are saved; an outbox file an older version wrote with
    releases in it is restored without them."""
    import pickle

    f = RedisFrontier(client, key)
    f.stage_push(entry(1))
    f.stage_release(1002)
    f.stage_renew([1003])
    f.stage_finish(1004)
    path = tmp_path / "outbox.pickle"
    assert f.save_outbox(path) == 2 and f.pending == 0
    assert [op[0] for op in load_outboxes(path)[key]] == ["p", "d"]
    old = [("r", (1005).to_bytes(8, "big"), b"", b""), ("d", (1006).to_bytes(8, "big"), b"", b"")]
    path.write_bytes(pickle.dumps({"key": key, "ops": old}))
    assert f.restore_outbox(path) == 1
    assert [op[0] for op in f.outbox] == ["d"]


def test_a_crawl_under_another_key_keeps_the_saved_changes_and_says_so(
    redis_url: str, client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An output folder whose outbox file holds changes saved under another
    ``FOCUSED_REDIS_KEY``: a crawl under a new key leaves them in the file and says so in
    one warning; a crawl under the old key then sends them."""
    import logging

    out = tmp_path / "out"
    out.mkdir()
    old = RedisFrontier(client, "outbox:old")
    old.clear()
    old.stage_push(entry(5, priority=3))
    path = out / "redis-outbox.pickle"
    assert old.save_outbox(path) == 1
    RedisFrontier(client, "outbox:new").clear()
    new, new_spider = _scheduler(redis_url, out, "worker", FOCUSED_REDIS_KEY="outbox:new")
    with caplog.at_level(logging.WARNING, logger="focused.distributed.scheduler"):
        new.open(new_spider)
    warned = [r.getMessage() for r in caplog.records if "outbox:old" in r.getMessage()]
    assert len(warned) == 1 and "outbox:old (1)" in warned[0] and "\n" not in warned[0]
    assert new.next_request() is None  # not sent to this crawl's frontier
    new.close("finished")
    assert list(load_outboxes(path)) == ["outbox:old"]
    again, again_spider = _scheduler(redis_url, out, "worker", FOCUSED_REDIS_KEY="outbox:old")
    again.open(again_spider)
    assert not path.exists()
    assert again.next_request().url == "http://h.test/p5"
    again.close("finished")


def test_a_worker_that_lost_redis_does_not_release_at_its_close_when_redis_is_back(
    tmp_path: Path,
) -> None:
    """Worker A picked /x, then a round trip failed (Redis down); Redis came back, A's
    lease ran out and worker B took /x before A's close reached Redis: A's close does not
    release /x (that would queue B's URL for a second fetch), the lease gave it back."""

    server = RedisServer(persist=True)
    server.start()
    try:
        key = "release:late"
        a, a_spider = _worker_a_holding_x(server, tmp_path, key)
        server.kill()
        assert a.next_request() is None  # the round trip fails: Redis is down
        server.start()
        client, frontier, b, b_spider = _worker_b_after_the_lease(server, tmp_path, key)
        assert b.next_request().url == "http://h.test/x"
        a.close("redis_unreachable")  # Redis is back: the close's round trip goes through
        assert not (tmp_path / "a" / a.OUTBOX_NAME).exists()
        status = frontier.status()
        assert (status["waiting"], status["in_flight"]) == (0, 1)  # /x is still B's
        assert a.crawler.stats.get_value("focused/redis/released") == 0
        b.close("finished")
        client.close()
    finally:
        server.stop()
