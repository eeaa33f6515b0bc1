"""The URL-shape cache before and after its shared tuples: bytes per URL and ns per call.

The URLs of the 20,000-page sandbox (seed 7) as a crawl's links name them, each looked up
in :func:`focused.web.urlshape.cached_shape` (one tuple per distinct shape) and in the
previous rule (:func:`focused.bounded.remember` of a fresh tuple per URL). Bytes:
:func:`bench.rss_growth.deep_size` of the filled cache (URL keys included) over its
entries. Time: CPU ns per call, misses (an empty cache each round) and hits, the two
versions alternated, min over the rounds::

    .venv/bin/python -m bench.shape_cache --rounds 15
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bench.rss_growth import deep_size
from focused.bounded import remember
from focused.web import urlshape
from focused.web.sandbox import generate_site

_old: dict[str, tuple[str, str, str]] = {}


def old_cached_shape(url: str) -> tuple[str, str, str]:
    """The rule before: a fresh tuple per URL."""
    got = _old.get(url)
    return (
        got
        if got is not None
        else remember(_old, url, urlshape.shape(url), urlshape.SHAPE_CACHE_SIZE)
    )


def _clear() -> None:
    _old.clear()
    urlshape._shapes.clear()
    urlshape._shape_values.clear()


def _ns(fn: Callable[[str], object], urls: list[str], clear: bool) -> float:
    if clear:
        _clear()
    t0 = time.process_time_ns()
    for u in urls:
        fn(u)
    return (time.process_time_ns() - t0) / len(urls)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args(argv)
    site = generate_site(seed=7, pages=20_000)
    base = "http://127.0.0.1:8080"
    urls = [base + path for path in site.links]
    urls = urls[: urlshape.SHAPE_CACHE_SIZE - 1]
    for u in urls:
        assert old_cached_shape(u) == urlshape.cached_shape(u)
    print(f"{len(urls)} URLs, {len(urlshape._shape_values)} distinct shapes")
    print(
        f"bytes per URL: before {deep_size(_old, set()) / len(_old):.0f},"
        f" after {(deep_size(urlshape._shapes, set()) + deep_size(urlshape._shape_values, set())) / len(urlshape._shapes):.0f}"  # noqa: E501
    )
    best: dict[str, float] = {}
    for r in range(args.rounds):
        pair = [("before", old_cached_shape), ("after", urlshape.cached_shape)]
        for name, fn in pair if r % 2 == 0 else pair[::-1]:
            for kind, clear in (("miss", True), ("hit", False)):
                key = f"{name} {kind}"
                best[key] = min(best.get(key, float("inf")), _ns(fn, urls, clear))
    for key, ns in best.items():
        print(f"{key}: {ns:.0f} ns per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
