"""Politeness benchmark: 32 loopback hosts with ``DOWNLOAD_DELAY=1``, the strict global
order against the host-aware pick (``FOCUSED_HOST_AWARE``).

Each host (127.0.0.10 ... 127.0.0.41) serves 40 pages; the crawl is handed every link at
once with a priority either ordered by host (all of host 0 first: the head-of-line case)
or random, and runs for 15 s. Reported per run: pages/s, host utilisation (pages/s over
the 32 pages/s the delay allows), hosts fetched from, CPU seconds of the crawl, and how
often a pick skipped a busy host. Writes ``OUT/hosts.json``:
``python -m bench.hosts --out out/bench`` (``make bench-hosts``, about 80 s).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path
from typing import Any

from tests.loopback import run_probe
from tests.test_host_aware_crawl import SCRIPT, Host

N_HOSTS, PER_HOST, SECONDS, DELAY = 32, 40, 15, 1.0


def run(aware: bool, layout: str) -> dict[str, Any]:
    """One crawl of the 32 hosts; its numbers."""
    log: list[Any] = []
    hosts = [Host(f"127.0.0.{10 + i}", f"h{i}", log, "") for i in range(N_HOSTS)]
    rng = random.Random(1)
    links = [
        (f"{h.url}/p{j}", 1000 - i if layout == "by-host" else rng.randrange(1000))
        for i, h in enumerate(hosts)
        for j in range(PER_HOST)
    ]
    settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_DELAY": DELAY,
        "CLOSESPIDER_TIMEOUT": SECONDS,
        "FOCUSED_HOST_AWARE": aware,
        "LOG_LEVEL": "WARNING",
    }
    args = {"seed": f"{hosts[0].url}/seed", "links": links, "settings": settings}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    stats, _ = run_probe(SCRIPT, args, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for h in hosts:
        h.close()
    pages = stats.get("response_received_count", 0)
    elapsed = stats.get("elapsed_time_seconds", wall)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "aware": aware,
        "layout": layout,
        "pages": pages,
        "seconds": round(elapsed, 1),
        "pages_per_s": round(pages / elapsed, 2),
        "utilisation": round(pages / elapsed / (N_HOSTS / DELAY), 3),
        "hosts_fetched": len({name for name, _ in log}),
        "cpu_s": round(cpu, 2),
        "hosts_busy_picks": stats.get("focused/scheduler/hosts_busy", 0),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench", help="folder of hosts.json")
    out = Path(parser.parse_args(argv).out)
    rows = []
    for layout in ("by-host", "random"):
        for aware in (False, True):
            rows.append(run(aware, layout))
            print(json.dumps(rows[-1]), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hosts.json").write_text(json.dumps({"runs": rows}, indent=2) + "\n")
    print(f"wrote {out / 'hosts.json'}")


if __name__ == "__main__":
    main()
