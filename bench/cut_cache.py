"""The jieba cut cache on the sandbox's texts: hits, peak size and CPU per bound.

The pages of the 20,000-page sandbox (seed 7) in breadth-first order from the chemistry
seeds, each as a crawl sees it: its main text cut for the relevance and the index
(:func:`focused.ranking.relevance.joined_and_counts`), its title counted and its cosine
taken, the cosine of each link's anchor text. Each configuration ``SIZE:MAX_CHARS``
(``relevance.CUT_CACHE_SIZE``, ``relevance.CUT_CACHE_MAX_CHARS``) runs the same texts
from empty caches; the rounds alternate the configurations and the CPU time of the
median round is reported, with the cut calls, the cache's hits, its most entries and
their bytes (:func:`bench.rss_growth.deep_size` of the keys, lists and shared words)::

    .venv/bin/python -m bench.cut_cache --pages 20000 --rounds 3 65536:64 8192:64 65536:16
"""

from __future__ import annotations

import argparse
import html
import re
import statistics
import time
from collections import deque
from typing import Any

from bench.rss_growth import deep_size
from focused.ranking import relevance
from focused.web.sandbox import generate_site
from focused.web.topics import load_topic

CHEMISTRY = "subject.Science.Chemistry"
_PARA = re.compile(r"<p>(.*?)</p>", re.S)
_ANCHOR = re.compile(r"<a [^>]*>(.*?)</a>", re.S)


def sandbox_texts(pages: int, site_pages: int = 20_000) -> list[tuple[str, str, list[str]]]:
    """(title, main text, anchor texts) of the first ``pages`` pages in breadth-first
    order from the chemistry seeds."""
    site = generate_site(seed=7, pages=site_pages)
    queue = deque(site.seeds(CHEMISTRY))
    seen = set(queue)
    out = []
    while queue and len(out) < pages:
        path = queue.popleft()
        body = site.pages.get(path, b"").decode("utf-8")
        if path in site.titles:
            title = site.titles[path]
            paras = [html.unescape(p) for p in _PARA.findall(body)]
            anchors = [html.unescape(a) for a in _ANCHOR.findall(body)]
            out.append((title, "\n".join([title, *paras, *anchors]), anchors))
        for nxt in site.links.get(path, ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return out


def run(texts: list[tuple[str, str, list[str]]], size: int, max_chars: int) -> dict[str, Any]:
    relevance.CUT_CACHE_SIZE, relevance.CUT_CACHE_MAX_CHARS = size, max_chars
    relevance._cut_cache.clear()
    relevance._cut_words.clear()
    vector = relevance.TopicVector(load_topic("chemistry").keywords)
    calls = hits = most = 0
    cut = relevance._cut
    cache = relevance._cut_cache

    def counted(r: str) -> list[str]:
        nonlocal calls, hits, most
        calls += 1
        if r in cache:
            hits += 1
        got = cut(r)
        most = max(most, len(cache))
        return got

    relevance._cut = counted
    try:
        t0 = time.process_time()
        for title, body, anchors in texts:
            relevance.joined_and_counts(body)
            relevance.term_counts(title)
            vector.cosine(title)
            vector.cosines(anchors)
        cpu = time.process_time() - t0
    finally:
        relevance._cut = cut
    per = deep_size(cache, set()) + deep_size(relevance._cut_words, set())
    per_entry = per / len(cache) if cache else 0.0
    return {
        "config": f"{size}:{max_chars}",
        "cut_calls": calls,
        "hits": hits,
        "most_entries": most,
        "peak_mb": round(most * per_entry / 1e6, 1),
        "cpu_ms_per_page": 1000 * cpu / len(texts),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("configs", nargs="+", help="SIZE:MAX_CHARS")
    args = p.parse_args(argv)
    texts = sandbox_texts(args.pages)
    configs = [tuple(map(int, c.split(":"))) for c in args.configs]
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        for size, chars in configs if r % 2 == 0 else configs[::-1]:
            row = run(texts, size, chars)
            rows.setdefault(row["config"], []).append(row)
    print(f"{len(texts)} pages, {args.rounds} rounds")
    for name, got in rows.items():
        cpu = [g["cpu_ms_per_page"] for g in got]
        g = got[0]
        print(
            f"{name:>12}: cut calls {g['cut_calls']}, hits {g['hits']}"
            f" ({g['hits'] / max(1, g['cut_calls']):.1%}), most entries {g['most_entries']},"
            f" ~{g['peak_mb']} MB; CPU ms/page median {statistics.median(cpu):.3f}"
            f" (all {', '.join(f'{c:.3f}' for c in cpu)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
