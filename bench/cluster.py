"""A private Redis Cluster on loopback for the tests and ``make bench-scale``.

:class:`RedisClusterProcesses` starts ``masters`` x (1 + ``replicas``) ``redis-server``
processes with ``--cluster-enabled yes`` on free 127.0.0.1 ports in a temporary folder
(no persistence), joins them with ``redis-cli --cluster create ... --cluster-replicas R
--cluster-yes`` and waits until every node reports ``cluster_state:ok`` and every replica
is linked to its master. :meth:`~RedisClusterProcesses.kill_master` is a ``kill -9`` of
the master of a key's slot; :meth:`~RedisClusterProcesses.wait_failover` waits until a
replica has taken its slots over.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

__all__ = ["MultiHostSandbox", "RedisClusterProcesses", "have_cluster_tools"]


def have_cluster_tools() -> bool:
    """``redis-server`` and ``redis-cli`` are on the PATH."""
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def _free_ports(n: int) -> list[int]:
    """``n`` ports free on 127.0.0.1 whose cluster bus port (+10000) is free too."""
    import socket

    ports: list[int] = []
    held: list[socket.socket] = []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port + 10000 > 65535:
                s.close()
                continue
            bus = socket.socket()
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                s.close()
                continue
            held += [s, bus]
            ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


class RedisClusterProcesses:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each, on loopback.

    ``node_timeout`` (ms, ``cluster-node-timeout``) is how long a silent master takes to
    be declared failed: its replica is promoted about one to two node time-outs after a
    ``kill -9``.
    """

    def __init__(self, masters: int = 3, replicas: int = 1, node_timeout: int = 1000) -> None:
        self.masters = masters
        self.replicas = replicas
        self.node_timeout = node_timeout
        self.dir: Path | None = None
        self.ports: list[int] = []
        self.processes: dict[int, subprocess.Popen] = {}

    # --- life cycle -----------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> str:
        if not have_cluster_tools():
            raise FileNotFoundError(
                "redis-server / redis-cli are not installed (Debian: apt-get install"
                " redis-server redis-tools)"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="focused-cluster-"))
        self.ports = _free_ports(self.masters * (1 + self.replicas))
        for port in self.ports:
            self._start_node(port)
        deadline = time.monotonic() + timeout
        for port in self.ports:
            self._wait_ping(port, deadline)
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        create = subprocess.run(
            ["redis-cli", "--cluster", "create", *nodes]
            + ["--cluster-replicas", str(self.replicas), "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if create.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {create.stdout[-2000:]}")
        self.wait_ok(deadline - time.monotonic())
        return self.startup_nodes

    def _start_node(self, port: int) -> None:
        assert self.dir is not None
        folder = self.dir / str(port)
        folder.mkdir(exist_ok=True)
        self.processes[port] = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1"]
            + ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
            + ["--cluster-node-timeout", str(self.node_timeout)]
            + ["--appendonly", "no", "--save", "", "--dir", str(folder)]
            + ["--logfile", str(folder / "redis.log"), "--daemonize", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @staticmethod
    def _client(port: int) -> object:
        import redis

        return redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1, socket_timeout=2)

    def _wait_ping(self, port: int, deadline: float) -> None:
        import redis

        client = self._client(port)
        while True:
            try:
                client.ping()  # type: ignore[attr-defined]
                client.close()  # type: ignore[attr-defined]
                return
            except redis.exceptions.ConnectionError:
                if self.processes[port].poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.05)

    def info(self, port: int, section: str) -> dict[str, str]:
        client = self._client(port)
        try:
            if section == "cluster":
                text = client.execute_command("CLUSTER", "INFO")  # type: ignore[attr-defined]
                text = text.decode() if isinstance(text, bytes) else str(text)
                pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
                return {k: v.strip() for k, v in pairs}
            got = client.info(section)  # type: ignore[attr-defined]
            return {k: str(v) for k, v in got.items()}
        finally:
            client.close()  # type: ignore[attr-defined]

    def live_ports(self) -> list[int]:
        return [p for p, proc in self.processes.items() if proc.poll() is None]

    def master_ports(self) -> list[int]:
        """The live nodes that are masters now."""
        return [p for p in self.live_ports() if self.info(p, "replication")["role"] == "master"]

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node says ``cluster_state:ok``, ``masters`` masters hold the
        slots and each live replica's link to its master is up."""
        import redis

        deadline = time.monotonic() + max(1.0, timeout)
        while True:
            try:
                if self._healthy():
                    return
            except (redis.exceptions.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not become ready")
            time.sleep(0.1)

    def _healthy(self) -> bool:
        masters = 0
        for port in self.live_ports():
            if self.info(port, "cluster").get("cluster_state") != "ok":
                return False
            repl = self.info(port, "replication")
            if repl["role"] == "master":
                masters += 1
            elif repl.get("master_link_status") != "up":
                return False
        return masters == self.masters

    def stop(self) -> None:
        """Terminate every node and delete the folder."""
        from bench.process import terminate

        for proc in self.processes.values():
            if proc.poll() is None:
                terminate(proc)
        self.processes = {}
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses and failures -----------------------------------------------------
    @property
    def startup_nodes(self) -> str:
        """``host:port,...`` of the masters it started with (``FOCUSED_REDIS_CLUSTER_NODES``)."""
        return ",".join(f"127.0.0.1:{p}" for p in self.ports[: self.masters])

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def master_of(self, key: str) -> int:
        """The port of the master that serves ``key``'s slot now."""
        from redis.crc import key_slot

        slot = key_slot(key.encode())
        for port in self.master_ports():
            client = self._client(port)
            try:
                mine = client.execute_command("CLUSTER", "MYID")  # type: ignore[attr-defined]
                mine = mine.decode() if isinstance(mine, bytes) else mine
                for start, end, *owners in client.execute_command("CLUSTER", "SLOTS"):  # type: ignore[attr-defined]
                    node_id = owners[0][2]
                    node_id = node_id.decode() if isinstance(node_id, bytes) else node_id
                    if start <= slot <= end and node_id == mine:
                        return port
            finally:
                client.close()  # type: ignore[attr-defined]
        raise LookupError(f"no master serves slot {slot}")

    def kill(self, port: int) -> None:
        """``kill -9`` the node on ``port``."""
        proc = self.processes[port]
        proc.kill()
        proc.wait()

    def wait_failover(self, timeout: float = 30.0) -> float:
        """Seconds until the cluster is ``ok`` again with ``masters`` masters."""
        started = time.monotonic()
        self.wait_ok(timeout)
        return time.monotonic() - started


class MultiHostSandbox:
    """The sandbox web served on several loopback hosts (127.0.0.2, 127.0.0.3, ...), one
    ``python -m focused.web.sandbox --host ADDR --port 0`` process each, a site of its own
    on each (seeds ``seed``, ``seed + 1``, ...: the same site twice would be dropped as
    near-duplicates): a crawl that spreads over hosts, and so over the partitions of a
    partitioned frontier. Chosen so
    that each of ``partitions`` partitions holds ``per_partition`` hosts. Duck-types
    :class:`bench.scale.SandboxProcess` for :func:`bench.scale.crawl_command` (``seeds``,
    ``base``: the first host's, for the labels)."""

    def __init__(
        self, seed: int = 7, pages: int = 40, partitions: int = 3, per_partition: int = 1
    ) -> None:
        from focused.distributed.partition import partition_of

        self.seed, self.pages = seed, pages
        wanted = {p: per_partition for p in range(partitions)}
        self.hosts: list[str] = []
        for last in range(2, 255):
            addr = f"127.0.0.{last}"
            p = partition_of(addr, partitions)
            if wanted.get(p, 0) > 0:
                wanted[p] -= 1
                self.hosts.append(addr)
            if not any(wanted.values()):
                break
        self.processes: list[subprocess.Popen] = []
        self.bases: list[str] = []

    @property
    def base(self) -> str:
        return self.bases[0]

    def start(self, timeout: float = 120.0) -> None:
        import sys

        from bench.process import PROJECT

        for i, host in enumerate(self.hosts):
            cmd = [sys.executable, "-m", "focused.web.sandbox", "--host", host, "--port", "0"]
            cmd += ["--seed", str(self.seed + i), "--pages", str(self.pages)]
            self.processes.append(
                subprocess.Popen(
                    cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
                )
            )
        for proc in self.processes:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if not line.startswith("http"):
                self.stop()
                raise RuntimeError(f"a sandbox server did not start (printed {line!r})")
            self.bases.append(line.rstrip("/"))

    def seeds(self, category: str = "subject.Science.Chemistry") -> list[str]:
        from focused.web.sandbox import generate_site

        out: list[str] = []
        for i, base in enumerate(self.bases):
            site = generate_site(seed=self.seed + i, pages=self.pages)
            out += [base + path for path in site.seeds(category)]
        return out

    def stop(self) -> None:
        from bench.process import terminate

        for proc in self.processes:
            terminate(proc)
        self.processes = []

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- the cluster rows of ``make bench-scale`` (bench.scale --cluster) -------------------
def node_counters(ports: list[int]) -> dict[str, int]:
    """Commands executed (a Lua call and each command it runs count) and client bytes in
    and out (replication not included), summed over the nodes on ``ports``."""
    import redis

    out = {"commands": 0, "bytes": 0}
    for port in ports:
        client = redis.Redis(
            host="127.0.0.1", port=port, socket_connect_timeout=1, socket_timeout=5
        )
        try:
            stats = client.info("stats")
        except redis.exceptions.ConnectionError:
            continue
        finally:
            client.close()
        out["commands"] += int(stats["total_commands_processed"])
        out["bytes"] += int(stats["total_net_input_bytes"]) + int(stats["total_net_output_bytes"])
    return out


def _traffic(before: dict[str, int], after: dict[str, int], pages: int) -> dict[str, Any]:
    if not pages:
        return {}
    return {
        "redis_commands_per_page": round((after["commands"] - before["commands"]) / pages, 1),
        "redis_bytes_per_page": round((after["bytes"] - before["bytes"]) / pages),
    }


def memory_entries(n: int, seed: int = 1) -> Iterator[Any]:
    """``n`` waiting entries like a crawl's: a 50-byte URL on one of 10 000 hosts, a
    41-byte parent URL and 71 bytes of rescoring evidence."""
    from focused.frontier.memory import Entry
    from focused.frontier.seen import url_fingerprint

    evidence = bytes(range(71))
    for i in range(n):
        url = f"http://h{i % 10_000:05d}.example.test/a/{i:018d}.html"
        parent = f"http://h{i % 10_000:05d}.example.test/b/{i % 977:06d}"
        yield Entry(
            url=url,
            fp=url_fingerprint(url),
            priority=(i * 7919) % 100_000,
            value=0.5,
            parent_url=parent,
            evidence=evidence,
        )


def measure_memory(server: Any, ports: list[int], key: str, n: int, partitions: int) -> dict:
    """Push ``n`` entries into a frontier of ``partitions`` partitions on ``server`` (a
    single Redis or a cluster whose masters are on ``ports``); the ``used_memory`` each
    master gained, per entry it holds."""
    import redis

    from focused.distributed.connection import CLUSTER_DOWN
    from focused.distributed.frontier import RedisFrontier

    def used() -> dict[int, int]:
        """``used_memory`` less the replication backlog and the replicas' output buffers
        (they grow with the writes up to a fixed size, whatever the data)."""
        got = {}
        for port in ports:
            c = redis.Redis(host="127.0.0.1", port=port)
            info = c.info("memory")
            c.close()
            got[port] = int(info["used_memory"]) - int(info.get("mem_replication_backlog", 0))
            got[port] -= int(info.get("mem_clients_slaves", 0))
        return got

    f = RedisFrontier(server, key, partitions=partitions)
    f.open()
    before = used()
    started = time.monotonic()
    for i, e in enumerate(memory_entries(n)):
        f.stage_push(e)
        if i % 5000 == 4999:
            f.sync()
    f.sync()
    seconds = time.monotonic() - started
    after = used()
    per_node = {}
    for port in ports:
        c = redis.Redis(host="127.0.0.1", port=port)
        held = 0
        for p in range(partitions):
            with contextlib.suppress(redis.exceptions.ResponseError):  # not this node's slot
                held += int(c.zcard(f.part_keys[p][0]))
        c.close()
        if held:
            per_node[str(port)] = {
                "entries": held,
                "bytes": after[port] - before[port],
                "bytes_per_url": round((after[port] - before[port]) / held, 1),
            }
    total = sum(v["bytes"] for v in per_node.values())
    with contextlib.suppress(*CLUSTER_DOWN):
        f.clear()
    return {
        "entries": n,
        "partitions": partitions,
        "push_seconds": round(seconds, 1),
        "push_us_per_url": round(seconds / n * 1e6, 1),
        "bytes_per_url": round(total / n, 1),
        "per_node": per_node,
    }


def _crawl_row(
    run_workers: Any,
    measure: Any,
    root: Path,
    site: Any,
    reference: set[str],
    *,
    workers: int,
    partitions: int,
    url: str,
    ports: list[int],
    server: Any,
    settings: tuple[str, ...],
    key: str,
) -> dict[str, Any]:
    from focused.distributed.frontier import RedisFrontier

    before = node_counters(ports)
    run = run_workers(
        workers, root, site, redis_url=url, key=key, strategy="best_first", settings=settings
    )
    after = node_counters(ports)
    status = RedisFrontier(server, key, partitions=partitions).status()
    status.pop("partitions", None)
    row = measure(run, reference, status)
    row.update(_traffic(before, after, row["pages"]))
    row["partitions"] = partitions
    row["failover"] = False
    return row


def cluster_results(
    root: Path, *, workers: list[int], pages: int, memory_urls: int, log: Any = print
) -> dict[str, Any]:
    """The ``cluster`` rows of ``scale.json``: ``best_first`` crawls of the sandbox on six
    loopback hosts (two per partition) with 1, 2, 4 workers on one Redis (one partition)
    and on a 3-master, 3-replica cluster (3 partitions, ``FOCUSED_REDIS_WAIT=1``), one
    2-worker crawl in which the master of a partition is killed mid-crawl, and the memory
    per waiting URL on each node."""
    import redis

    from bench.scale import RedisServer, measure, run_workers

    partitions = 3
    quick = ("FOCUSED_REPORT=False", "FOCUSED_INDEX=False")
    rows: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    with MultiHostSandbox(seed=7, pages=pages, partitions=partitions, per_partition=2) as site:
        single = run_workers(
            1, root / "memory", site, redis_url=None, strategy="best_first", settings=quick
        )
        reference = single.union()
        log(f"reference: {len(reference)} pages on {len(site.hosts)} hosts")

        def measure_on(
            backend: str,
            name: str,
            server: Any,
            *,
            url: str,
            ports: Callable[[], list[int]],
            partitions: int,
            settings: tuple[str, ...],
        ) -> None:
            """A crawl row per worker count on ``server`` (folders and keys named
            ``name``), then the memory per waiting URL on the ``ports()`` nodes."""
            for n in workers:
                row = _crawl_row(
                    run_workers,
                    measure,
                    root / f"{name}-{n}",
                    site,
                    reference,
                    workers=n,
                    partitions=partitions,
                    url=url,
                    ports=ports(),
                    server=server,
                    settings=settings,
                    key=f"bench:{name}:{n}",
                )
                row["backend"] = backend
                rows.append(row)
                log(json.dumps(row))
            if memory_urls:
                got = measure_memory(server, ports(), "bench:memory", memory_urls, partitions)
                got["backend"] = backend
                memory.append(got)
                log(json.dumps(got))

        with RedisServer() as one:
            client = redis.Redis.from_url(one.url)
            measure_on(
                "redis",
                "single",
                client,
                url=one.url,
                ports=lambda: [one.port],
                partitions=1,
                settings=quick,
            )
            client.close()
        with RedisClusterProcesses(3, 1, node_timeout=3000) as cluster:
            server = connect_cluster(cluster)
            settings = (
                f"FOCUSED_REDIS_CLUSTER_NODES={cluster.startup_nodes}",
                f"FOCUSED_REDIS_PARTITIONS={partitions}",
                "FOCUSED_REDIS_WAIT=1",
                *quick,
            )
            measure_on(
                "cluster",
                "cluster",
                server,
                url=cluster.url,
                ports=cluster.master_ports,
                partitions=partitions,
                settings=settings,
            )
            rows.append(
                _failover_row(
                    root,
                    site,
                    reference,
                    cluster=cluster,
                    server=server,
                    settings=settings,
                    partitions=partitions,
                )
            )
            log(json.dumps(rows[-1]))
            server.close()
    return {
        "cluster": rows,
        "cluster_memory": memory,
        "cluster_sandbox": {
            "hosts": len(site.hosts),
            "pages_per_host": pages,
            "reference_pages": len(reference),
        },
    }


def connect_cluster(cluster: RedisClusterProcesses) -> Any:
    """The project's cluster client on ``cluster``."""
    from scrapy.settings import Settings

    from focused.distributed.connection import connect

    return connect(Settings({"FOCUSED_REDIS_CLUSTER_NODES": cluster.startup_nodes}))


def _failover_row(
    root: Path,
    site: MultiHostSandbox,
    reference: set[str],
    *,
    cluster: RedisClusterProcesses,
    server: Any,
    settings: tuple[str, ...],
    partitions: int,
) -> dict[str, Any]:
    """2 workers on the cluster; the master of partition 0 killed (``kill -9``) once a
    third of the pages are stored, with the workers frozen while the requests in flight
    are counted."""
    import os
    import signal

    from bench.scale import measure, start_workers, wait
    from focused.distributed.frontier import RedisFrontier

    key = "bench:failover"
    frontier = RedisFrontier(server, key, partitions=partitions)
    run = start_workers(
        2,
        root / "failover",
        site,
        redis_url=cluster.url,
        key=key,
        strategy="best_first",
        settings=(*settings, "FOCUSED_REDIS_LEASE=10"),
    )
    deadline = time.monotonic() + 300
    while len(run.union()) < len(reference) // 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    for w in run.workers:
        os.kill(w.process.pid, signal.SIGSTOP)
    in_flight = frontier.status()["in_flight"]
    cluster.kill(cluster.master_of(frontier.part_keys[0][0]))
    for w in run.workers:
        os.kill(w.process.pid, signal.SIGCONT)
    ok_after = round(cluster.wait_failover(60), 2)
    wait(run, timeout=600)
    status = frontier.status()
    status.pop("partitions", None)
    row = measure(run, reference, status)  # (no traffic: the killed node's counters died)
    row.update(
        {
            "backend": "cluster",
            "partitions": partitions,
            "failover": True,
            "in_flight_at_kill": in_flight,
            "cluster_ok_again_after_s": ok_after,
        }
    )
    return row


def order_approximation(
    server: Any, *, n: int = 20_000, partitions: tuple[int, ...] = (1, 3, 8), workers: int = 2
) -> list[dict[str, Any]]:
    """How far the partitioned pick is from the global best-first order: ``n`` entries
    (priorities 0..999 drawn with a fixed seed, on 300 hosts) popped by ``workers``
    clients in turn, each refreshing the partitions' heads every
    :data:`~focused.distributed.frontier.REFRESH_EVERY` picks; per pick, the rank of the
    picked priority among the waiting ones (0: the best, or tied with it)."""
    import random

    from focused.distributed.frontier import RedisFrontier
    from focused.frontier.memory import Entry

    out = []
    for parts in partitions:
        key = f"bench:order:{parts}"
        rng = random.Random(5)
        prios = [rng.randrange(1000) for _ in range(n)]
        loader = RedisFrontier(server, key, partitions=parts)
        loader.clear()
        for i, p in enumerate(prios):
            loader.stage_push(Entry(url=f"http://h{i % 300}.test/{i}", fp=i + 1, priority=p))
        loader.sync()
        tree = [0] * 1001  # Fenwick tree of the waiting priorities (index priority + 1)

        def add(p: int, d: int, tree: list[int] = tree) -> None:
            i = p + 1
            while i <= 1000:
                tree[i] += d
                i += i & -i

        def at_most(p: int, tree: list[int] = tree) -> int:
            i, s = p + 1, 0
            while i > 0:
                s += tree[i]
                i -= i & -i
            return s

        for p in prios:
            add(p, 1)
        clients = [RedisFrontier(server, key, partitions=parts) for _ in range(workers)]
        ranks: list[int] = []
        waiting = n
        while waiting:
            c = clients[len(ranks) % workers]
            e = c.pop()
            if e is None:
                if all(x.sync(refresh=True).counts.waiting == 0 for x in clients):
                    break
                continue
            ranks.append(waiting - at_most(e.priority))  # waiting entries strictly better
            add(e.priority, -1)
            waiting -= 1
            c.stage_finish(e.fp)
        for c in clients:
            c.sync()
        ranks.sort()
        out.append(
            {
                "partitions": parts,
                "workers": workers,
                "picks": len(ranks),
                "best_share": round(sum(1 for r in ranks if r == 0) / len(ranks), 4),
                "mean_rank": round(sum(ranks) / len(ranks), 2),
                "p99_rank": ranks[int(0.99 * (len(ranks) - 1))],
                "max_rank": ranks[-1],
                "round_trips_per_pick": round(sum(c.round_trips for c in clients) / len(ranks), 2),
            }
        )
        loader.clear()
    return out


def pick_cost(server: Any, port: int, *, waiting: int = 200_000, picks: int = 20_000) -> dict:
    """Server CPU per pick on one node: ``waiting`` entries pushed (as
    :func:`memory_entries`), then ``picks`` best-first picks, each sending the previous
    one's done mark; ``usec_per_call`` of ``EVALSHA`` from ``INFO commandstats`` (the
    statistics reset before the picks) and the client's wall time per pick."""
    import redis

    from focused.distributed.frontier import BEST, RedisFrontier

    f = RedisFrontier(server, "bench:pickcost")
    f.clear()
    for i, e in enumerate(memory_entries(waiting, seed=2)):
        f.stage_push(e)
        if i % 5000 == 4999:
            f.sync()
    f.sync()
    node = redis.Redis(host="127.0.0.1", port=port)
    node.config_resetstat()
    started = time.monotonic()
    for _ in range(picks):
        step = f.sync(BEST)
        if step.entry is not None:
            f.stage_finish(step.entry.fp)
    wall = time.monotonic() - started
    usec = float(node.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])
    node.close()
    f.clear()
    return {
        "waiting": waiting,
        "picks": picks,
        "server_us_per_pick": round(usec, 1),
        "picks_per_s_per_node_cpu": round(1e6 / usec) if usec else None,
        "client_us_per_pick": round(wall / picks * 1e6, 1),
    }
