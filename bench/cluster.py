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

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

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

        return redis.Redis(port=port, socket_connect_timeout=1, socket_timeout=2)

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
