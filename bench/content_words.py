"""Micro-benchmark: the word count of a page's main content for the thin-page test,
``len(body.split())`` of the content text against ``Page.content_words()`` (the blocks'
counts, made by the walk), on wikispeedia pages split and classified as the spider does;
CPU ms per page, ``--rounds`` alternated, median (min-max). Checks the counts are equal.

    python -m bench.content_words [--pages 300] [--rounds 7]
"""

from __future__ import annotations

import argparse
import glob
import random
import statistics
import sys
import time
from pathlib import Path

from parsel import Selector

from bench.speed import DEFAULT_DATA, ROOT
from focused.web.template import HostTemplates, split_page


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT / DEFAULT_DATA)
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    files = sorted(glob.glob(str(args.data.resolve() / "wiki" / "*.html")))
    random.Random(1).shuffle(files)
    templates = HostTemplates()
    pages = []
    for f in files[: args.pages]:
        text = Path(f).read_text(encoding="utf-8", errors="replace")
        page = split_page(Selector(text=text, type="html").root)
        templates.classify("h", page)
        templates.learn("h", page)
        pages.append((page, page.content_text()))
    if any(page.content_words() != len(body.split()) for page, body in pages):
        raise SystemExit("the counts differ")
    ways = {
        "len(body.split())": lambda page, body: len(body.split()),
        "content_words()": lambda page, body: page.content_words(),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, count in ways.items():
            start = time.process_time()
            for page, body in pages:
                count(page, body)
            times[name].append(1000 * (time.process_time() - start) / len(pages))
    chars = sum(len(body) for _, body in pages) / len(pages)
    print(f"{len(pages)} pages, {chars:.0f} characters of main content a page")
    for name, ts in times.items():
        print(f"{name}: {statistics.median(ts):.3f} CPU ms/page ({min(ts):.3f}-{max(ts):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
