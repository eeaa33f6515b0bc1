"""cProfile of focused crawls and of plain Scrapy replaying the pages each fetched.

For each strategy: one focused crawl of ``--pages`` items of wikispeedia (``--site
sandbox``: the 20,000-page sandbox) under cProfile
(first item to last, :class:`bench.speed.Probe`), which lists the URLs it fetched; then
plain Scrapy (:mod:`bench.plain`, ``-a replay=``) fetching exactly that list under
cProfile. The profiles are kept in ``--out`` (``STRATEGY.prof``, ``STRATEGY-plain.prof``)
with the probes' numbers in ``profiles.json``; read them with ``pstats``. Run it under the
shared lock::

    flock /tmp/bench.lock python -m bench.profile_replay --strategies learning,bsbs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import speed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=speed.ROOT / speed.DEFAULT_DATA)
    p.add_argument("--site", choices=("wikispeedia", "sandbox"), default="wikispeedia")
    p.add_argument("--sandbox-pages", type=int, default=20_000)
    p.add_argument("--strategies", default="learning,bsbs")
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--out", type=Path, default=Path("out/bench/profile-replay"))
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="focused-profile-"))
    servers: list[Any] = []
    summary: dict[str, Any] = {}
    try:
        sites = speed._serve_sites(
            [args.site],
            sandbox_pages=args.sandbox_pages if args.site == "sandbox" else 0,
            data_dir=args.data.resolve(),
            servers=servers,
            log=lambda m: print(m, file=sys.stderr),
        )
        plan = speed.RunPlan(
            pages=args.pages, concurrency=args.concurrency, work=work, timeout=args.timeout
        ).on(args.site, *sites[args.site])
        for strategy in [s for s in args.strategies.split(",") if s]:
            listed = work / f"{strategy}.txt"
            prof = out / f"{strategy}.prof"
            b = speed.run_crawl(
                strategy,
                plan,
                tag="prof",
                extra={"SPEED_URLS_FILE": str(listed), "SPEED_PROFILE_FILE": str(prof)},
            )
            plain_prof = out / f"{strategy}-plain.prof"
            a = speed.run_crawl(
                "plain",
                dataclasses.replace(plan),
                tag=f"prof-{strategy}",
                extra={"SPEED_PROFILE_FILE": str(plain_prof)},
                replay=listed,
            )
            shutil.copy(listed, out / f"{strategy}-urls.txt")
            keep = ("items", "responses_in_span", "cpu_ms_per_fetched", "links_per_page")
            summary[strategy] = {
                "focused": {k: b.get(k) for k in keep},
                "plain": {k: a.get(k) for k in keep},
            }
            print(strategy, summary[strategy], file=sys.stderr)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    (out / "profiles.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
