"""Micro-benchmark: the text around each link (:func:`focused.ranking.learning.link_contexts`,
the spider's pass for a strategy that learns from link evidence), on stored wikispeedia
pages, after the link extraction, with every ``href`` joined again by ``urljoin`` (the
old way) and with the URLs the link extractor made of them on the page
(:meth:`focused.robustness.FocusedLinkExtractor.links_and_urls`: no second join),
alternated. Checks that both give every extracted link the same context.

    python -m bench.learning_contexts [--pages 300] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url
from w3lib.url import safe_url_string

from focused.ranking.learning import link_contexts
from focused.robustness import FocusedLinkExtractor

DATA = Path("..") / "shared" / "data" / "wikispeedia-site"


def _old(response: HtmlResponse) -> Callable[[str], str]:
    base, encoding = get_base_url(response), response.encoding

    def absolute(href: str) -> str:
        url = urljoin(base, href.strip())
        return url if url.isascii() and " " not in url else safe_url_string(url, encoding)

    return absolute


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    files = sorted((args.data / "wiki").glob("*.html"))[: args.pages]
    responses = []
    for f in files:
        r = HtmlResponse(f"http://127.0.0.1:8000/wiki/{f.name}", body=f.read_bytes())
        _ = r.selector.root  # parsed before the clock
        get_base_url(r)
        responses.append(r)
    extractor = FocusedLinkExtractor()

    def old(r: HtmlResponse) -> list[str]:
        links = extractor.extract_links(r)
        contexts = link_contexts(r.selector.root, _old(r))
        return [contexts.get(k.url, "") for k in links]

    def new(r: HtmlResponse) -> list[str]:
        links, url_of = extractor.links_and_urls(r)
        contexts = link_contexts(r.selector.root, url_of)
        return [contexts.get(k.url, "") for k in links]

    same = [old(r) for r in responses] == [new(r) for r in responses]
    times: dict[str, list[float]] = {"urljoin": [], "extractor": []}
    for _ in range(args.rounds):
        for name, run in (("urljoin", old), ("extractor", new)):
            t = time.process_time()
            for r in responses:
                run(r)
            times[name].append(time.process_time() - t)
    n = len(responses)
    out = {"pages": n, "same_contexts": same}
    for k, v in times.items():
        out[f"{k}_ms_per_page"] = round(1000 * statistics.median(v) / n, 4)
        out[f"{k}_ms_per_page_range"] = [round(1000 * min(v) / n, 4), round(1000 * max(v) / n, 4)]
    print(json.dumps(out))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
