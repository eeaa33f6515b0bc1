"""Micro-benchmark: link extraction of wikispeedia pages with Scrapy's ``_link_allowed``
per new URL against the one-call extension test (``FocusedLinkExtractor._scrapy_allows``).

Each round extracts the links of the same pages, in order, with a fresh extractor (its
URL cache fills as in a crawl); the two ways alternate, ``--rounds`` each; CPU ms per
page (median, min-max) and the new URLs per page (each one a verdict). The links of
both are compared (same URLs, texts, ``nofollow``, order).

    python -m bench.link_verdict [--urls FILE] [--pages 300] [--rounds 7]

``--urls``: a list of wikispeedia URLs in crawl order (``bench.profile_replay`` keeps
one per strategy); without it, ``--pages`` random pages.
"""

from __future__ import annotations

import argparse
import glob
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from scrapy.http import HtmlResponse
from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor

from bench.speed import DEFAULT_DATA, ROOT
from focused.robustness import FocusedLinkExtractor


def responses(data: Path, urls: Path | None, pages: int) -> list[HtmlResponse]:
    base = "http://127.0.0.1:8000"
    if urls is not None:
        paths = [urlsplit(u).path for u in urls.read_text(encoding="utf-8").split()]
    else:
        found = sorted(glob.glob(str(data / "wiki" / "*.html")))
        random.Random(1).shuffle(found)
        paths = ["/wiki/" + Path(f).name for f in found]
    out = []
    for path in paths[:pages]:
        file = data / unquote(path).lstrip("/")
        if file.is_file():
            out.append(HtmlResponse(base + path, body=file.read_bytes(), encoding="utf-8"))
    return out


def run(pages: list[HtmlResponse], old: bool, judged: list[str]) -> tuple[float, int, list[Any]]:
    ext = FocusedLinkExtractor()
    verdicts = 0
    fast = ext._scrapy_allows

    def counted(url: str, path: str | None = None) -> bool:
        nonlocal verdicts
        verdicts += 1
        judged.append(url)
        return fast(url, path)

    def scrapys(url: str, path: str | None = None) -> bool:
        nonlocal verdicts
        verdicts += 1
        return LinkExtractor._link_allowed(ext, Link(url))

    ext._scrapy_allows = scrapys if old else counted  # type: ignore[method-assign]
    for r in pages:  # each page parsed before the clock starts
        r.selector  # noqa: B018
    start = time.process_time()
    links = [ext.extract_links(r) for r in pages]
    secs = time.process_time() - start
    return (
        1000 * secs / len(pages),
        verdicts,
        [[(k.url, k.text, k.nofollow) for k in x] for x in links],
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT / DEFAULT_DATA)
    p.add_argument("--urls", type=Path, default=None)
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    pages = responses(args.data.resolve(), args.urls, args.pages)
    times: dict[str, list[float]] = {"scrapy": [], "one call": []}
    ref: list[Any] | None = None
    verdicts = 0
    judged: list[str] = []
    for _ in range(args.rounds):
        for name in times:
            ms, verdicts, links = run(pages, old=name == "scrapy", judged=judged)
            ref = links if ref is None else ref
            if links != ref:
                raise SystemExit(f"{name}: other links than Scrapy's verdict gave")
            times[name].append(ms)
    # the verdicts alone, on the URLs judged in one round
    judged = judged[:verdicts]
    ext = FocusedLinkExtractor()
    alone: dict[str, list[float]] = {"scrapy": [], "one call": []}
    for _ in range(args.rounds):
        for name, verdict in (
            ("scrapy", lambda u: LinkExtractor._link_allowed(ext, Link(u))),
            ("one call", ext._scrapy_allows),
        ):
            start = time.process_time()
            for url in judged:
                verdict(url)
            alone[name].append(1e6 * (time.process_time() - start) / max(1, len(judged)))
    n = sum(len(x) for x in ref or [])
    print(
        f"{len(pages)} pages, {n / len(pages):.1f} links/page,"
        f" {verdicts / len(pages):.1f} new URLs/page"
    )
    for name, ts in times.items():
        print(f"{name}: {statistics.median(ts):.3f} CPU ms/page ({min(ts):.3f}-{max(ts):.3f})")
    for name, ts in alone.items():
        print(
            f"verdict alone, {name}: {statistics.median(ts):.2f} CPU us per new URL"
            f" ({min(ts):.2f}-{max(ts):.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
