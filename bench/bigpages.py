"""Oversized pages within ``DOWNLOAD_MAXSIZE``: what six 8 MB HTML pages cost a crawl.

A loopback server (:class:`tests.loopback.LoopbackServer`, in this process: the crawl
runs in its own) serves a seed page that links six pages of 7-8 MB each, every one
shaped to make one part of the per-page work large (:data:`PAGES`: 2M ``<br>``,
780,000 links, a 7.8 MB title, a 7.9 MB attribute, a 7.9 MB single word, 700,000
paragraphs), each linking ``/after-<name>`` first, and ``/small-<i>`` pages. The crawl
(``python -m scrapy crawl focused``, ``bfs``) runs the :class:`bench.hostile.ReactorHold`
extension: the longest reactor holds, peak RSS (``ru_maxrss``) and the crawl's time; and
the CPU time of the crawl process (user + system: unlike the holds, it does not grow
when other processes take the cores) and the downloads that timed out.

Usage: ``python -m bench.bigpages [--out DIR] [-s NAME=VALUE ...]``; prints one line
and writes ``DIR/bigpages.json``. Run it under ``flock /tmp/bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.command import crawl_command, settings_from_strings
from bench.process import PROJECT

sys.path.insert(0, str(PROJECT))
from tests.loopback import Answer, LoopbackServer  # noqa: E402

HEAD = (
    "<html><head><title>{t}</title></head><body><p>chemistry acid base molecule</p>"
    "<a href='/after-{n}'>chemistry next</a>"
)
#: name -> the page's HTML (7-8 MB each)
PAGES: dict[str, Callable[[], str]] = {
    "br-2m": lambda: HEAD.format(t="br chemistry", n="br-2m") + "<br>" * 2_000_000,
    "a-780k": lambda: HEAD.format(t="links chemistry", n="a-780k") + "<a href=a>" * 780_000,
    "title-8m": lambda: (
        "<html><head><title>" + "chemistry acid " * 520_000 + "</title></head><body>"
        "<a href='/after-title-8m'>next</a><p>chemistry</p></body></html>"
    ),
    "attr-8m": lambda: (
        HEAD.format(t="attr chemistry", n="attr-8m") + "<a href='/x?" + "a" * 7_900_000 + "'>x</a>"
    ),
    "word-8m": lambda: (
        HEAD.format(t="word chemistry", n="word-8m") + "<p>" + "chemistry" * 870_000 + "</p>"
    ),
    "p-1m": lambda: HEAD.format(t="paragraphs chemistry", n="p-1m") + "<p>acid</p>" * 700_000,
}
SMALL = 20  # small pages linked from the seed after the big ones


def site() -> Callable[[str], Answer]:
    bodies = {f"/{name}": make().encode() for name, make in PAGES.items()}

    def answer(path: str) -> Answer:
        if path == "/robots.txt":
            return 404, {}, b""
        if path in bodies:
            return 200, {}, bodies[path]
        if path == "/":
            links = [f"/{n}" for n in PAGES] + [f"/small-{i}" for i in range(SMALL)]
            anchors = "".join(f"<a href='{u}'>chemistry {u}</a>" for u in links)
            return 200, {}, f"<html><title>seed chemistry</title><body>{anchors}".encode()
        page = f"<html><title>{path} chemistry</title><body><p>acid base</p></body></html>"
        return 200, {}, page.encode()

    return answer


def run(out: Path, extra: dict[str, object]) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    server = LoopbackServer("127.0.0.1", site())
    result_file = out / "reactor-hold.json"
    settings: dict[str, object] = {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": f"{server.url}/",
        "FOCUSED_STRATEGY": "bfs",
        "RETRY_TIMES": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "FOCUSED_REPORT": False,
        "EXTENSIONS": json.dumps(
            {"focused.extensions.CrawlOutputExtension": 500, "bench.hostile.ReactorHold": 100}
        ),
        "BENCH_HOSTILE_OUT": str(result_file),
        **extra,
    }
    cmd = crawl_command("chemistry", output_dir=out / "crawl", settings=settings)
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        with (out / "crawl.log").open("w") as log:
            proc = subprocess.run(
                cmd, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT, check=False
            )
    finally:
        server.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    result = json.loads(result_file.read_text())
    log_text = (out / "crawl.log").read_text()
    result |= {
        "cpu_s": round(cpu, 1),
        "timed_out": log_text.count("did not answer in time"),
        "exit_status": proc.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "settings": {k: v for k, v in extra.items()},
        "requests": len(server.log),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench/bigpages")
    parser.add_argument("-s", dest="settings", action="append", default=[])
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    result = run(out, settings_from_strings(args.settings))
    (out / "bigpages.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    holds = ", ".join(f"{h['s']} s {h['responses'][-1:]}" for h in result["holds"][:4])
    print(
        f"{result['pages']} pages in {result['crawl_s']} s (wall {result['wall_s']} s,"
        f" CPU {result['cpu_s']} s), {result['timed_out']} timed out,"
        f" peak RSS {result['peak_rss_mb']} MB; longest holds: {holds}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
