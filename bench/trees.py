"""Before/after under the same load: focused crawls of several copies of the project
(``git archive COMMIT | tar -x -C DIR``), alternated with plain Scrapy, on wikispeedia.

    python -m bench.trees --rounds 4 --strategies bfs,learning --pages 300 \\
        before=/tmp/before after=.

Prints each crawl and writes the medians (CPU ms per page, requests per page, pages/s)
as JSON. ``--ablation-tree`` of :mod:`bench.speed` does the same with the ablation's
other parts around it; this runs the trees only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench import speed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="+", help="NAME=DIR: a copy of the project")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--strategies", default="bfs")
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--data", type=Path, default=Path("..") / "shared" / "data" / "wikispeedia-site")
    p.add_argument("--out", type=Path, default=Path("out/bench/trees.json"))
    args = p.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.trees)
    server = speed.static_server(args.data)
    base = server.start()
    seeds, labels = [base + speed.WIKI_SEED], str(args.data / "labels.tsv")
    work = Path(tempfile.mkdtemp(prefix="focused-trees-"))
    plan = speed.RunPlan(pages=args.pages, concurrency=args.concurrency, work=work, timeout=600)
    plan = plan.on("wikispeedia", seeds, labels)
    runs: dict[str, list[dict[str, Any]]] = {}
    try:
        for r in range(args.rounds):
            for s in args.strategies.split(","):
                for name in ["plain", *trees]:
                    kind = "plain" if name == "plain" else s
                    key = "plain" if name == "plain" else f"{s}/{name}"
                    res = speed.run_crawl(
                        kind,
                        plan,
                        tag=f"t{r}-{len(runs.get(key, []))}-{abs(hash(key)) % 10**6}",
                        extra=None if name == "plain" else {speed.TREE: trees[name]},
                    )
                    runs.setdefault(key, []).append(res)
                    print(r, key, res.get("cpu_ms_per_page"), res.get("links_per_page"), flush=True)
    finally:
        server.stop()

    def med(rs: list[dict[str, Any]], k: str) -> float | None:
        xs = [x[k] for x in rs if x.get(k) is not None]
        return statistics.median(xs) if xs else None

    out = {
        key: {
            "cpu_ms_per_page": med(rs, "cpu_ms_per_page"),
            "cpu_ms_per_page_all": [x.get("cpu_ms_per_page") for x in rs],
            "links_per_page": med(rs, "links_per_page"),
            "pages_s": med(rs, "pages_s"),
        }
        for key, rs in runs.items()
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
