"""The shared Redis frontier under the faults of a deployment, on a real ``redis-server``.

Each test starts its own private ``redis-server`` on a free loopback port (or none):
Redis restarted without its data (or with an older copy of it) under a running worker,
some of the frontier's keys deleted while its stats hash stays, an evicting Redis, Redis
gone between the crawl command's check and the spider's, bad ``REDIS_URL`` values, and
two topics sent to one key prefix by mistake.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from bench.scale import RedisServer, SandboxProcess, crawl_command, free_port, stored_urls
from focused.distributed.frontier import RedisFrontier
from focused.distributed.partition import FRONTIER_NAMES
from focused.errors import FrontierLost, RedisFull
from focused.frontier.memory import Entry

PROJECT = Path(__file__).resolve().parent.parent

# Skipped on a developer machine without redis-server; never in CI (.ci/run installs it).
pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A private redis-server without persistence: killed and started again, it is empty."""
    with RedisServer() as s:
        yield s


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxProcess]:
    with SandboxProcess(seed=7, pages=200) as site:
        yield site


def entry(i: int, priority: int = 0) -> Entry:
    return Entry(url=f"http://h.test/p{i}", fp=1000 + i, priority=priority)


def test_a_frontier_that_vanishes_under_a_client_is_refused_not_rebuilt(
    server: RedisServer,
) -> None:
    """Redis restarts without its data between two round trips: the next round trip
    raises FrontierLost (one line) and writes nothing, instead of pushing this client's
    staged links into an empty frontier that every worker would take for the crawl."""
    f = RedisFrontier(redis.Redis.from_url(server.url), "faults:lost")
    for i in range(5):
        f.stage_push(entry(i, priority=i))
    f.sync()
    assert f.pop().fp == 1004
    server.kill()
    server.start()  # the same port, no data
    f.stage_finish(1004)
    f.stage_push(entry(9, priority=9))
    with pytest.raises(FrontierLost) as info:
        f.sync()
    message = str(info.value)
    assert "\n" not in message and "faults:lost vanished from Redis" in message
    assert f"127.0.0.1:{server.port}" in message and "--appendonly yes" in message
    assert server_keys(server) == []  # nothing written: no partial frontier
    # the same after a FLUSHALL (or an eviction) under a live server
    g = RedisFrontier(redis.Redis.from_url(server.url), "faults:flushed")
    g.push(entry(1))
    g.server.flushall()
    with pytest.raises(FrontierLost):
        g.pop()
    # a new client on the empty server starts a new crawl there
    h = RedisFrontier(redis.Redis.from_url(server.url), "faults:lost")
    assert h.push(entry(2)) and h.pop().fp == 1002


@pytest.mark.parametrize("name", ["queue", "data", "inflight", "seen"])
def test_a_key_deleted_under_a_client_while_the_stats_stay_is_refused(
    server: RedisServer, name: str
) -> None:
    """One of the frontier's keys is deleted (or evicted) and its stats hash, with the
    epoch, stays: the next round trip raises FrontierLost and writes nothing. Before, a
    deleted queue was an empty queue (its URLs lost, the crawl "finished"), a deleted
    seen set let every URL in again."""
    f = RedisFrontier(redis.Redis.from_url(server.url), f"faults:{name}")
    for i in range(5):
        f.stage_push(entry(i, priority=i))
    f.sync()
    assert f.pop().fp == 1004  # (one in flight)
    keys = dict(zip(FRONTIER_NAMES, f.part_keys[0], strict=True))
    client = redis.Redis.from_url(server.url)
    client.delete(keys[name])
    kept = client.hgetall(keys["stats"])
    f.stage_push(entry(9, priority=9))
    with pytest.raises(FrontierLost) as info:
        f.pop()
    assert "\n" not in str(info.value) and f"faults:{name} vanished" in str(info.value)
    assert client.hgetall(keys["stats"]) == kept and not client.exists(keys[name])
    client.close()


def test_an_older_copy_of_the_frontier_under_a_client_is_refused(server: RedisServer) -> None:
    """Redis comes back with an older copy of the frontier (``DUMP`` of every key taken
    earlier, ``RESTORE``d): the same epoch and consistent keys, but the URL fetched since
    waits again. The next round trip of the client that saw the later state raises
    FrontierLost and writes nothing; before, it handed that URL out a second time. A
    client started on the older copy has nothing to compare it with and takes it."""
    client = redis.Redis.from_url(server.url)
    f = RedisFrontier(redis.Redis.from_url(server.url), "faults:older")
    for i in range(5):
        f.stage_push(entry(i, priority=i))
    f.sync()
    keys = f.part_keys[0]
    saved = {k: blob for k in keys if (blob := client.dump(k)) is not None}  # no inflight
    assert f.pop().fp == 1004
    f.stage_finish(1004)
    f.sync()
    client.delete(*keys)
    for k, blob in saved.items():
        client.restore(k, 0, blob)
    restored = {k: client.dump(k) for k in keys}
    f.stage_push(entry(9, priority=9))
    with pytest.raises(FrontierLost):
        f.pop()
    assert {k: client.dump(k) for k in keys} == restored  # nothing written
    g = RedisFrontier(redis.Redis.from_url(server.url), "faults:older")
    assert g.pop().fp == 1004
    client.close()


def test_an_evicting_redis_is_named_at_open_and_a_refused_config_says_nothing(
    server: RedisServer,
) -> None:
    """``maxmemory-policy allkeys-lru``: the frontier says at open that Redis may evict
    its keys; with ``noeviction`` it says nothing, and nothing either for a user whose ACL
    refuses ``CONFIG`` (the open goes on)."""
    admin = redis.Redis.from_url(server.url)
    admin.config_set("maxmemory-policy", "allkeys-lru")
    f = RedisFrontier(redis.Redis.from_url(server.url), "faults:evict")
    f.open()
    warning = f.eviction_warning()
    assert f.evicting == "allkeys-lru" and warning is not None and "\n" not in warning
    assert f"127.0.0.1:{server.port}/0 has maxmemory-policy allkeys-lru" in warning
    admin.acl_setuser(
        "worker",
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        categories=["+@all"],
        commands=["-config"],
    )
    limited = redis.Redis(host="127.0.0.1", port=server.port, username="worker", password="pw")
    with pytest.raises(redis.exceptions.NoPermissionError):
        limited.config_get("maxmemory-policy")
    g = RedisFrontier(limited, "faults:evict")
    g.open()
    assert g.evicting is None and g.eviction_warning() is None
    assert g.push(entry(1))
    admin.config_set("maxmemory-policy", "noeviction")
    h = RedisFrontier(redis.Redis.from_url(server.url), "faults:evict")
    h.open()
    assert h.evicting is None and h.eviction_warning() is None
    admin.close()


def test_a_full_redis_refuses_a_round_trip_whole_and_the_staged_changes_stay(
    server: RedisServer,
) -> None:
    """Redis at its ``maxmemory`` (``noeviction``): a round trip raises RedisFull (one
    line, no traceback of redis-py's OOM error), nothing of it is written, and the staged
    changes stay for the next round trip, which goes through once memory is raised."""
    admin = redis.Redis.from_url(server.url)
    f = RedisFrontier(redis.Redis.from_url(server.url), "faults:full")
    for i in range(5):
        f.stage_push(entry(i, priority=i))
    f.sync()
    assert f.pop().fp == 1004
    before = contents(admin, f.part_keys[0])
    admin.config_set("maxmemory", 1)
    # (a push first: Redis refuses a script at its first write that may grow memory; a
    # script whose first write frees some, a "done", runs whole)
    f.stage_push(entry(9, priority=9))
    f.stage_finish(1004)
    with pytest.raises(RedisFull) as info:
        f.sync()
    message = str(info.value)
    assert "\n" not in message and "reached its maxmemory" in message
    assert f"127.0.0.1:{server.port}" in message
    assert contents(admin, f.part_keys[0]) == before  # nothing written
    assert f.pending == 2
    admin.config_set("maxmemory", 0)
    assert f.pop().fp == 1009  # the staged push and done went through first
    assert f.status()["done"] == 1
    admin.close()


def contents(client: redis.Redis, keys: list[str] | tuple[str, ...]) -> dict[str, object]:
    """What each of ``keys`` holds (by value: ``DUMP`` bytes may differ for equal data)."""
    out: dict[str, object] = {}
    for k in keys:
        kind = client.type(k)
        if kind == b"hash":
            out[k] = client.hgetall(k)
        elif kind == b"zset":
            out[k] = client.zrange(k, 0, -1, withscores=True)
        elif kind == b"set":
            out[k] = client.smembers(k)
        else:
            out[k] = client.get(k) if kind == b"string" else None
    return out


def server_keys(server: RedisServer) -> list[bytes]:
    client = redis.Redis.from_url(server.url)
    try:
        return sorted(client.keys("*"))
    finally:
        client.close()


def crawl_with_a_fault(
    server: RedisServer,
    sandbox: SandboxProcess,
    out: Path,
    key: str,
    fault: Callable[[subprocess.Popen[bytes]], None],
) -> tuple[int, str]:
    """A real worker (``scrapy crawl focused``) on ``server``: ``fault(worker)`` once it
    stored 10 pages, then the worker's exit status and log once it exits."""
    cmd = crawl_command(
        out,
        sandbox,
        redis_url=server.url,
        key=key,
        strategy="best_first",
        settings=("DOWNLOAD_DELAY=0.05", "FOCUSED_REDIS_LEASE=20"),
    )
    log_path = out.with_name(out.name + ".log")
    with log_path.open("wb") as log_file:
        worker = subprocess.Popen(cmd, cwd=PROJECT, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while len(stored_urls(out)) < 10:
                assert worker.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.05)
            fault(worker)
            worker.wait(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    return worker.returncode, log_path.read_text()


def assert_stopped_as_lost(returncode: int, log: str, out: Path) -> None:
    """Exit status 1, one error line, reason ``redis_frontier_lost``, no traceback."""
    assert returncode == 1, log[-3000:]
    assert "Traceback" not in log, log[-4000:]
    lost = [line for line in log.splitlines() if "vanished from Redis" in line]
    assert len(lost) == 1 and "focused: error:" in lost[0], log[-3000:]
    assert "'finish_reason': 'redis_frontier_lost'" in log
    assert 10 <= len(stored_urls(out)) < 150


def test_a_crawl_whose_redis_restarts_empty_stops_with_one_line(
    server: RedisServer, sandbox: SandboxProcess, tmp_path: Path
) -> None:
    """A real worker (``scrapy crawl focused``); its Redis, run without persistence, is
    killed and started again empty mid-crawl. The worker stops with one error line and
    exit status 1, and puts nothing into the new Redis; before, it pushed its last links
    there, found the rest of the frontier gone, and ended the crawl "finished" with exit 0
    and most pages never fetched (and, with two workers, some fetched twice)."""

    def restart_empty(worker: subprocess.Popen[bytes]) -> None:
        server.kill()
        server.start()  # the same port, empty

    out = tmp_path / "out"
    returncode, log = crawl_with_a_fault(server, sandbox, out, "faults:crawl", restart_empty)
    assert_stopped_as_lost(returncode, log, out)
    assert server_keys(server) == []  # no partial frontier left for others to finish


def test_a_crawl_whose_queue_key_is_deleted_stops_with_one_line(
    server: RedisServer, sandbox: SandboxProcess, tmp_path: Path
) -> None:
    """The waiting queue's key alone is deleted mid-crawl (as an ``allkeys-*`` eviction
    may do), the stats hash and its epoch stay: the worker stops with the same line and
    exit status 1, writing nothing. Before, it saw an empty queue, fetched the links of
    its last pages only and ended the crawl "finished" (exit 0), the waiting URLs lost.
    Its Redis runs ``allkeys-lru``: the worker says so in one warning line at the start."""
    client = redis.Redis.from_url(server.url)
    client.config_set("maxmemory-policy", "allkeys-lru")
    key = "faults:queue"
    queue, stats = (f"{key}:queue", f"{key}:stats")
    kept: dict[str, object] = {}

    def delete_the_queue(worker: subprocess.Popen[bytes]) -> None:
        os.kill(worker.pid, signal.SIGSTOP)  # (so that the queue is not empty by chance)
        try:
            assert client.zcard(queue) > 0
            client.delete(queue)
            kept["stats"] = client.hgetall(stats)
        finally:
            os.kill(worker.pid, signal.SIGCONT)

    out = tmp_path / "out"
    returncode, log = crawl_with_a_fault(server, sandbox, out, key, delete_the_queue)
    assert_stopped_as_lost(returncode, log, out)
    assert not client.exists(queue)  # not rebuilt from the worker's last links
    assert client.hgetall(stats) == kept["stats"]  # nothing written
    warned = [line for line in log.splitlines() if "maxmemory-policy allkeys-lru" in line]
    assert len(warned) == 1 and "WARNING" in warned[0], log[-3000:]
    client.close()


def test_a_crawl_whose_redis_comes_back_with_an_older_copy_stops_with_one_line(
    server: RedisServer, sandbox: SandboxProcess, tmp_path: Path
) -> None:
    """Redis saves a snapshot (``SAVE``, dump.rdb) mid-crawl, the crawl goes on, and
    Redis is killed and started again from that older snapshot: the same epoch, every
    key there, but URLs fetched since wait again and the links found since are gone.
    The worker stops with the same line and exit status 1, writing nothing; before, it
    went on from the older frontier (fetching pages again) and ended with exit 0."""
    client = redis.Redis.from_url(server.url)
    key = "faults:older"
    stats = f"{key}:stats"
    saved: dict[str, object] = {}
    backup = tmp_path / "older.rdb"
    out = tmp_path / "out"

    def restart_older(worker: subprocess.Popen[bytes]) -> None:
        assert server.dir is not None
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            client.save()
            saved["stats"] = client.hgetall(stats)
            shutil.copy(server.dir / "dump.rdb", backup)
            at_save = len(stored_urls(out))
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        deadline = time.monotonic() + 30
        while len(stored_urls(out)) < at_save + 8:  # pages stored since the snapshot
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        server.kill()
        shutil.copy(backup, server.dir / "dump.rdb")
        server.start()  # the same port, the older snapshot

    returncode, log = crawl_with_a_fault(server, sandbox, out, key, restart_older)
    assert_stopped_as_lost(returncode, log, out)
    client = redis.Redis.from_url(server.url)
    assert client.hgetall(stats) == saved["stats"]  # the older copy, nothing written
    client.close()


def test_redis_gone_before_the_spider_is_made_is_the_scheduler_s_one_line(
    tmp_path: Path,
) -> None:
    """Redis answered the crawl command's check and went away before the spider was made
    (the process starts in between): the spider does not check Redis again (that raised
    RedisUnavailable from ``from_crawler``, a traceback and exit 1); the scheduler, which
    opens next, says it in one line and stops."""
    from scrapy.utils.test import get_crawler

    from focused.spiders.focused import FocusedSpider

    settings = {
        "FOCUSED_FRONTIER": "redis",
        "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
        "FOCUSED_OUTPUT_DIR": str(tmp_path / "out"),
        "FOCUSED_WEB": "sandbox",
    }
    crawler = get_crawler(FocusedSpider, settings)
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    spider.close_web(spider)
    assert spider.topic.name == "chemistry"


@pytest.fixture(scope="module")
def locked() -> Iterator[RedisServer]:
    """A private redis-server that wants the password ``sekrit``."""
    with RedisServer() as s:
        client = redis.Redis.from_url(s.url)
        client.config_set("requirepass", "sekrit")
        client.close()
        yield s


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis://127.0.0.1:{port}/0", "refused this worker (it needs a password)"),
        ("redis://:wrong@127.0.0.1:{port}/0", "refused this worker (invalid username-password"),
        ("redis://:sekrit@127.0.0.1:{port}/99", "refused this worker (DB index is out of range)"),
        # crawled database 0 without a word
        ("redis://:sekrit@127.0.0.1:{port}/abc", "the database 'abc' is not a number"),
        ("127.0.0.1:{port}", "'127.0.0.1:{port}' is not a Redis URL"),
        ("http://127.0.0.1:{port}/0", "is not a Redis URL"),
        ("redis://:sekrit@127.0.0.1:nope/0", "is not a Redis URL (Port could not be cast"),
    ],
)
def test_a_redis_url_that_cannot_work_stops_with_one_line(
    locked: RedisServer, tmp_path: Path, url: str, says: str
) -> None:
    """A wrong password, a missing one, a database out of range or not a number, a URL
    that is no Redis URL: one line, exit 2, nothing fetched, the password not shown
    (a database out of range and a URL that is no Redis URL were tracebacks, exit 1)."""
    url = url.format(port=locked.port)
    out = tmp_path / "out"
    cmd = [
        *(sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=chemistry"),
        *("-s", "FOCUSED_WEB=sandbox", "-s", "FOCUSED_FRONTIER=redis"),
        *("-s", f"REDIS_URL={url}", "-s", f"FOCUSED_OUTPUT_DIR={out}"),
    ]
    run = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120)
    log = run.stderr
    assert run.returncode == 2, log[-3000:]
    assert "Traceback" not in log and "Spider opened" not in log, log[-3000:]
    errors = [line for line in log.splitlines() if line.startswith("focused: error:")]
    assert len(errors) == 1, log[-3000:]
    assert says.format(port=locked.port) in errors[0]
    assert "sekrit" not in log and "wrong" not in log
    assert not out.exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        # deleted the frontier of database 0 without a word
        (
            "redis://:sekrit@127.0.0.1:{port}/abc",
            "--url 'redis://:***@127.0.0.1:{port}/abc': the database 'abc' is not a number",
        ),
        # the rest were tracebacks, exit 1
        ("127.0.0.1:{port}", "--url '127.0.0.1:{port}' is not a Redis URL"),
        ("redis://:sekrit@127.0.0.1:nope/0", "is not a Redis URL (Port could not be cast"),
        ("redis://:sekrit@127.0.0.1:{port}/99", "refused this worker (DB index is out of range)"),
        ("redis://:wrong@127.0.0.1:{port}/0", "refused this worker (invalid username-password"),
        ("redis://127.0.0.1:{port}/0", "refused this worker (it needs a password)"),
    ],
)
@pytest.mark.parametrize("action", ["status", "clear"])
def test_the_status_and_clear_tool_refuses_a_url_that_cannot_work_in_one_line(
    locked: RedisServer, action: str, url: str, says: str
) -> None:
    """``python -m focused.distributed status|clear --url ...`` with a URL that is no Redis
    URL, a database out of range or a wrong or missing password: a traceback, exit 1;
    with a database that is no number (``/abc``) redis-py used database 0, so ``clear``
    deleted the frontier there. Now the URL is checked as a crawl's ``REDIS_URL`` is: one
    line, exit 2, the password not shown, nothing deleted."""
    good = f"redis://:sekrit@127.0.0.1:{locked.port}/0"
    frontier = RedisFrontier(redis.Redis.from_url(good), "mycrawl")
    frontier.push(entry(1))
    cmd = [sys.executable, "-m", "focused.distributed", action, "--key", "mycrawl"]
    run = subprocess.run(
        [*cmd, "--url", url.format(port=locked.port)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and run.stdout == "", run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("focused: error: "), run.stderr[-3000:]
    assert says.format(port=locked.port) in lines[0]
    assert "sekrit" not in run.stderr and "wrong" not in run.stderr
    assert frontier.status()["waiting"] == 1  # nothing deleted
    frontier.clear()


def test_two_topics_sent_to_one_key_prefix_are_refused(
    server: RedisServer, sandbox: SandboxProcess, tmp_path: Path
) -> None:
    """``FOCUSED_REDIS_KEY`` set to one value for two crawls by mistake: the first crawl
    records its spider, topic and strategy; a crawl of another topic (or strategy) on that
    key stops with one line, exit 2, before anything is fetched. Before, the physics crawl
    joined the chemistry frontier: it fetched chemistry's URLs, scored them against
    physics, and stored them in its folder. Cleared, the key takes the new crawl."""
    from scrapy.settings import Settings

    from focused.distributed.connection import check
    from focused.errors import RedisLayoutError

    shared = ("FOCUSED_REDIS_KEY=mycrawl", "CLOSESPIDER_PAGECOUNT=5")
    first = subprocess.run(
        crawl_command(tmp_path / "chem", sandbox, redis_url=server.url, settings=shared),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "phys"
    cmd = crawl_command(out, sandbox, redis_url=server.url, topic="physics", settings=shared)
    second = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120)
    log = second.stderr
    assert second.returncode == 2, log[-3000:]
    assert "Traceback" not in log and "Spider opened" not in log, log[-3000:]
    errors = [line for line in log.splitlines() if line.startswith("focused: error:")]
    assert errors == [
        "focused: error: the shared frontier mycrawl is a crawl of topic 'chemistry', not"
        " 'physics': give this crawl a key prefix of its own (FOCUSED_REDIS_KEY; the"
        " default %(spider)s:%(topic)s is one per topic), or clear that one first:"
        " python -m focused.distributed clear --key mycrawl"
    ]
    assert stored_urls(out) == []
    settings = Settings({"REDIS_URL": server.url, "FOCUSED_REDIS_KEY": "mycrawl"})
    crawl = {"spider": "focused", "topic": "chemistry", "strategy": "bfs"}
    with pytest.raises(RedisLayoutError, match="a crawl of strategy 'annealing', not 'bfs'"):
        check(settings, crawl)
    RedisFrontier(redis.Redis.from_url(server.url), "mycrawl").clear()
    check(settings, {**crawl, "topic": "physics"})  # a cleared key is anyone's


def test_two_crawls_recording_themselves_at_once_one_wins(server: RedisServer) -> None:
    """Two workers of different crawls open one key prefix at the same instant: the
    record is written whole by one of them (one script), so exactly one joins and the
    other is refused. Field by field, the two could each write a field first and both be
    refused, or mix a record neither of them is."""
    import random
    import threading

    from focused.distributed.frontier import check_crawl
    from focused.errors import RedisLayoutError

    clients = [redis.Redis.from_url(server.url) for _ in range(2)]
    crawls = [
        {"spider": "focused", "topic": "chemistry", "strategy": "bfs"},
        {"spider": "focused", "topic": "physics", "strategy": "learning"},
    ]
    rng = random.Random(11)
    for round_ in range(150):
        key = f"race{round_}"
        barrier = threading.Barrier(2)
        joined: list[int] = []

        def open_(
            i: int,
            delay: float,
            barrier: threading.Barrier = barrier,
            key: str = key,
            joined: list[int] = joined,
        ) -> None:
            barrier.wait()
            time.sleep(delay)
            try:
                check_crawl(clients[i], key, crawls[i])
            except RedisLayoutError:
                return
            joined.append(i)

        delays = [rng.random() * 0.001 for _ in range(2)]
        threads = [threading.Thread(target=open_, args=(i, delays[i])) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(joined) == 1, (round_, joined)
        record = {k.decode(): v.decode() for k, v in clients[0].hgetall(f"{{{key}}}:crawl").items()}
        assert record == crawls[joined[0]]
