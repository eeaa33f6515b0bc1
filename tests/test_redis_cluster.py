"""The shared frontier partitioned by host, on one Redis and on a real Redis Cluster.

Pure: the partition of a host and the hash tags. On a private ``redis-server``: a
partitioned frontier hands out every URL once, in priority order when every pick refreshes
the partitions' heads, and refuses a worker with another partition count. On a private
Redis Cluster (3 masters, 1 replica each, started by :class:`bench.cluster.RedisClusterProcesses`
on free loopback ports in a temporary folder): the partitions sit on different masters,
two real ``scrapy crawl`` workers crawl the sandbox together, and a crawl survives a
master killed with ``kill -9`` mid-crawl (its replica promoted), losing no page and
fetching no more pages twice than were in flight at the kill.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bench.cluster import MultiHostSandbox, RedisClusterProcesses, have_cluster_tools
from bench.scale import RedisServer, run_workers, start_workers, wait
from focused.distributed.connection import connect
from focused.distributed.frontier import RedisFrontier
from focused.distributed.partition import Layout, host_of, partition_of
from focused.errors import RedisLayoutError
from focused.frontier.memory import Entry

STRATEGY = "best_first"  # drops no link: the page set does not depend on the order
#: what the frontier tests do not look at, left out for time (the page set is the same)
QUICK = ("FOCUSED_REPORT=False", "FOCUSED_INDEX=False")
PARTITIONS = 3
PARTITION_OF_EXAMPLE = 2  # crc32("www.example.test") % 7

needs_cluster = pytest.mark.skipif(
    not have_cluster_tools() and not os.environ.get("CI"),
    reason="redis-server / redis-cli are not installed (apt-get install redis-server)",
)


# --- pure ------------------------------------------------------------------------------
def test_a_host_s_partition_is_stable_and_spread() -> None:
    assert host_of("http://User@WWW.Example.TEST:8080/a?b#c") == "www.example.test"
    assert host_of("http://bücher.test/x") == host_of("http://xn--bcher-kva.test/y")
    assert partition_of("www.example.test", 1) == 0
    # crc32, not Python's salted hash: the same in every process and every run
    assert partition_of("www.example.test", 7) == PARTITION_OF_EXAMPLE
    counts = Counter(partition_of(f"host{i}.test", 4) for i in range(4000))
    assert sorted(counts) == [0, 1, 2, 3] and min(counts.values()) > 900


def test_each_partition_has_one_hash_tag_in_its_share_of_the_slots() -> None:
    from redis.crc import key_slot

    one = Layout("focused:chemistry")
    assert one.frontier_keys(0) == [
        f"focused:chemistry:{n}" for n in ("queue", "data", "inflight", "seen", "stats")
    ]
    assert one.model_keys()[0] == "focused:chemistry:model:counts"
    layout = Layout("focused:chemistry", 3)
    for p in range(3):
        keys = layout.frontier_keys(p) + layout.rescore_keys(p)
        slots = {key_slot(k.encode()) for k in keys}
        assert len(slots) == 1
        assert p * 16384 / 3 <= slots.pop() < (p + 1) * 16384 / 3
    assert len({key_slot(k.encode()) for k in layout.model_keys()}) == 1


# --- one server ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    if not have_cluster_tools():
        pytest.skip("redis-server is not installed")
    with RedisServer() as server:
        yield server.url


def _entries(n: int, seed: int = 3) -> list[Entry]:
    rng = random.Random(seed)
    return [
        Entry(url=f"http://h{i % 17}.test/p{i}", fp=10_000 + i, priority=rng.randrange(50))
        for i in range(n)
    ]


def test_partitions_hand_out_each_url_once(server_url: str) -> None:
    client = redis.Redis.from_url(server_url)
    f = RedisFrontier(client, "part:once", partitions=4)
    entries = _entries(400)
    for e in entries:
        f.stage_push(e)
        f.stage_push(e)  # a duplicate in the same batch: the host's seen set holds it
    f.sync()
    assert f.status()["seen"] == 400
    workers = [RedisFrontier(client, "part:once", partitions=4) for _ in range(3)]
    got: list[int] = []
    for i in range(10_000):
        w = workers[i % 3]
        e = w.pop()
        if e is None:
            if all(x.pop() is None for x in workers):
                break
            continue
        got.append(e.fp)
        w.stage_finish(e.fp)
    assert sorted(got) == sorted(e.fp for e in entries)  # each URL once
    for w in workers:
        w.sync()
    status = f.status()
    assert status["waiting"] == status["in_flight"] == 0 and status["done"] == 400


def test_a_fresh_pick_is_the_global_best(server_url: str) -> None:
    client = redis.Redis.from_url(server_url)
    f = RedisFrontier(client, "part:best", partitions=5, refresh=1)
    for e in _entries(300, seed=5):
        f.stage_push(e)
    f.sync()
    prios = [e.priority for e in iter(f.pop, None)]
    assert len(prios) == 300 and prios == sorted(prios, reverse=True)


def test_a_worker_with_another_partition_count_is_refused(server_url: str) -> None:
    client = redis.Redis.from_url(server_url)
    RedisFrontier(client, "part:layout", partitions=3).open()
    for n in (1, 2):
        with pytest.raises(RedisLayoutError, match="split into 3 partitions"):
            RedisFrontier(client, "part:layout", partitions=n).open()
    f = RedisFrontier(client, "part:single")
    f.push(Entry(url="http://h.test/", fp=1))
    with pytest.raises(RedisLayoutError, match="split into 1 partitions, not 4"):
        RedisFrontier(client, "part:single", partitions=4).open()


# --- a real cluster --------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterProcesses]:
    if not have_cluster_tools():
        pytest.skip("redis-server / redis-cli are not installed")
    with RedisClusterProcesses(masters=3, replicas=1, node_timeout=1000) as c:
        yield c


@pytest.fixture(scope="module")
def site() -> Iterator[MultiHostSandbox]:
    """The sandbox on one loopback host per partition (each host a copy of the site)."""
    with MultiHostSandbox(seed=11, pages=60, partitions=PARTITIONS) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def reference(site: MultiHostSandbox, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    root = tmp_path_factory.mktemp("single")
    run = run_workers(1, root, site, redis_url=None, strategy=STRATEGY, settings=QUICK, timeout=180)
    assert run.workers[0].returncode == 0, run.workers[0].log[-3000:]
    urls = set(run.workers[0].urls)
    assert len(urls) > 100
    assert len({host_of(u) for u in urls}) == PARTITIONS
    return urls


def _cluster_client(cluster: RedisClusterProcesses) -> redis.cluster.RedisCluster:
    from scrapy.settings import Settings

    return connect(Settings({"FOCUSED_REDIS_CLUSTER_NODES": cluster.startup_nodes}))


def _settings(cluster: RedisClusterProcesses, *extra: str) -> tuple[str, ...]:
    return (
        f"FOCUSED_REDIS_CLUSTER_NODES={cluster.startup_nodes}",
        f"FOCUSED_REDIS_PARTITIONS={PARTITIONS}",
        "FOCUSED_REDIS_WAIT=1",
        *QUICK,
        *extra,
    )


@needs_cluster
def test_partitions_live_on_different_masters(cluster: RedisClusterProcesses) -> None:
    client = _cluster_client(cluster)
    f = RedisFrontier(client, "cl:unit", partitions=PARTITIONS, wait_replicas=1)
    masters = {cluster.master_of(f.part_keys[p][0]) for p in range(PARTITIONS)}
    assert len(masters) == PARTITIONS
    entries = _entries(90)
    for e in entries:
        f.stage_push(e)
    f.sync()
    assert f.waits >= PARTITIONS and f.waits_short == 0  # each master's replica has them
    status = f.status()
    assert status["waiting"] == status["seen"] == 90
    picked = [e.fp for e in iter(f.pop, None)]
    assert sorted(picked) == sorted(e.fp for e in entries)


@needs_cluster
def test_two_workers_crawl_the_sandbox_on_the_cluster(
    cluster: RedisClusterProcesses, site: MultiHostSandbox, reference: set[str], tmp_path: Path
) -> None:
    key = "cl:two"
    run = run_workers(
        2,
        tmp_path,
        site,
        redis_url=cluster.url,
        key=key,
        strategy=STRATEGY,
        settings=_settings(cluster, "DOWNLOAD_DELAY=0.02"),
        stagger=0.3,
    )
    for w in run.workers:
        assert w.returncode == 0, w.log[-3000:]
        assert "Traceback" not in w.log and "focused: error" not in w.log, w.log[-3000:]
        assert len(w.urls) > 10, [len(x.urls) for x in run.workers]
    assert run.duplicates() == 0
    assert run.union() == reference
    status = RedisFrontier(_cluster_client(cluster), key, partitions=PARTITIONS).status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
    assert status["seen"] == status["done"] + status["error"]
    assert status["done"] == len(reference)


@needs_cluster
def test_a_crawl_survives_a_master_killed_mid_crawl(
    cluster: RedisClusterProcesses, site: MultiHostSandbox, reference: set[str], tmp_path: Path
) -> None:
    """``kill -9`` of the master of the first partition while two workers crawl: its
    replica takes over and the crawl finishes; the pushes and done marks were
    acknowledged by the replica (``WAIT``) before each page was committed, so no page is
    lost, and no more pages are fetched twice than were in flight at the kill."""
    key = "cl:failover"
    client = _cluster_client(cluster)
    frontier = RedisFrontier(client, key, partitions=PARTITIONS)
    settings = _settings(cluster, "DOWNLOAD_DELAY=0.05", "FOCUSED_REDIS_LEASE=8")
    run = start_workers(
        2, tmp_path, site, redis_url=cluster.url, key=key, strategy=STRATEGY, settings=settings
    )
    deadline = time.monotonic() + 90
    while len(run.union()) < len(reference) // 3:
        assert all(w.process.poll() is None for w in run.workers), run.workers[0].log[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    for w in run.workers:  # frozen while we count what is in flight and kill the master
        os.kill(w.process.pid, signal.SIGSTOP)
    in_flight = frontier.status()["in_flight"]
    victim = cluster.master_of(frontier.part_keys[0][0])
    cluster.kill(victim)
    for w in run.workers:
        os.kill(w.process.pid, signal.SIGCONT)
    wait(run, timeout=120)
    assert cluster.wait_failover(30) >= 0
    assert victim not in cluster.master_ports()
    for w in run.workers:
        assert w.returncode == 0, w.log[-3000:]
        assert "Traceback" not in w.log, w.log[-4000:]
    fetched = Counter(u for w in run.workers for u in w.urls)
    duplicates = sum(n - 1 for n in fetched.values())
    lost = reference - set(fetched)
    print(f"failover: in flight at the kill {in_flight}, duplicates {duplicates}, lost {len(lost)}")
    assert not lost
    assert set(fetched) == reference
    assert duplicates <= in_flight
    status = frontier.status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
