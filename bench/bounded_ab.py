"""A/B micro-timing of the bounded caches (focused.bounded.remember) on the link and
page hot paths: the code before a change, as a package ``focused_before``, against the
worktree's ``focused``, in one process, interleaved rounds, CPU time, min per side.

Misses: every key new (a fresh object per round); hits: the same keys again. For
``short`` and ``resolve`` the bound is set to N // 3 on both sides, so the misses clear
the cache twice (and the "hit" pass misses too). Prepare the old code with::

    mkdir -p /tmp/ab && git archive <commit> focused | tar -x -C /tmp/ab
    mv /tmp/ab/focused /tmp/ab/focused_before
    grep -rl focused /tmp/ab/focused_before | xargs sed -i -E \\
        -e 's/\\bfrom focused([. ])/from focused_before\\1/g' \\
        -e 's/\\bimport focused\\b/import focused_before/g'
    N=3000 PYTHONPATH=/tmp/ab:. .venv/bin/python bench/bounded_ab.py \\
        feature,anchor,urlwords,weights,pagename,short,resolve 60

The numbers move with the load of the machine: identical code on both sides is the
noise floor (the "hit" columns of the functions a change leaves alone).
"""

from __future__ import annotations

import gc
import importlib
import os
import random
import sys
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

N = int(os.environ.get("N", "20000"))
PAGE = "http://h1.test/wiki/A.html"
_rng = random.Random(1)
words = [
    "".join(_rng.choice("abcdefghijklmnop") for _ in range(_rng.randint(4, 10))) for _ in range(N)
]
texts = [f"{w} chemistry of {words[i - 1]}" for i, w in enumerate(words)]
urls = [f"http://h{i % 50}.test/wiki/{w}_{i}.html" for i, w in enumerate(words)]

Run = Callable[[], Any]


def modules(pkg: str) -> SimpleNamespace:
    return SimpleNamespace(
        L=importlib.import_module(pkg + ".ranking.learning"),
        R=importlib.import_module(pkg + ".ranking.relevance"),
        B=importlib.import_module(pkg + ".robustness"),
        S=importlib.import_module(pkg + ".strategies.learning"),
    )


def make(m: SimpleNamespace, which: str) -> tuple[Run, Run, int]:
    """(miss run, hit run, keys of the hit run)."""
    if which == "feature":
        o = m.L.TermModel()
        run: Run = lambda: [o.feature(w) for w in words]  # noqa: E731
    elif which == "anchor":
        o = m.L.TermModel()
        run = lambda: [o._anchor_words(t) for t in texts]  # noqa: E731
    elif which == "urlwords":
        o = m.L.TermModel()
        run = lambda: [o._words_of_url(u) for u in urls]  # noqa: E731
    elif which == "weights":
        o = m.L.TermWeights({"chemistry": 1.0, "acid": 0.5})
        run = lambda: [o.cosine(t) for t in texts]  # noqa: E731
    elif which == "pagename":
        holder = SimpleNamespace(_names={})
        f = m.S.LearningStrategy._page_name
        run = lambda: [f(holder, u) for u in urls]  # noqa: E731
    elif which == "short":
        m.R.TEXT_CACHE_SIZE = N // 3
        o = m.R.TopicVector({"chemistry": 1.0, "acid": 0.5})
        run = lambda: [o._cached_cosine(t) for t in texts]  # noqa: E731
    elif which == "resolve":
        e = m.B.FocusedLinkExtractor()
        e.CACHE_SIZE = N // 3
        few = urls[: N // 3]
        return (
            lambda: [e._resolve(u, "utf-8", PAGE) for u in urls],
            lambda: [e._resolve(u, "utf-8", PAGE) for u in few],
            len(few),
        )
    else:
        raise SystemExit(f"unknown: {which}")
    return run, run, N


def main() -> None:
    names = sys.argv[1].split(",")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    sides = {"before": modules("focused_before"), "after": modules("focused")}
    for which in names:
        best = {(s, k): float("inf") for s in sides for k in ("miss", "hit")}
        for r in range(rounds):
            for side in ("before", "after") if r % 2 else ("after", "before"):
                miss, hit, n_hit = make(sides[side], which)
                for kind, fn, n in (("miss", miss, N), ("hit", hit, n_hit)):
                    gc.collect()
                    gc.disable()
                    t = time.process_time()
                    fn()
                    t = time.process_time() - t
                    gc.enable()
                    best[side, kind] = min(best[side, kind], t * 1e9 / n)
        line = [which]
        for kind in ("miss", "hit"):
            b, a = best["before", kind], best["after", kind]
            line.append(f"{kind} {b:.0f} -> {a:.0f} ns/call ({(a / b - 1) * 100:+.1f} %)")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
