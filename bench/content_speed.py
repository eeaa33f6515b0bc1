"""Micro-benchmark: the main-content pass of the spider on 300 wikispeedia pages (split
into blocks, classify against the host's template, content text, SimHash near-duplicate
test, learn the template), CPU ms per page, the best of 5 runs.

    PYTHONPATH=. python bench/content_speed.py [WIKI_FOLDER]

With ``PYTHONPATH=DIR``, ``DIR`` a ``git archive`` of another commit, it measures that
commit's code: a before/after (alternate the two).
"""

from __future__ import annotations

import glob
import random
import sys
import time
from pathlib import Path

from parsel import Selector

from focused.web.neardup import NearDuplicates
from focused.web.template import HostTemplates, split_page

WIKI = str(Path("..") / "shared" / "data" / "wikispeedia-site" / "wiki")


def main(folder: str = WIKI, pages: int = 300, runs: int = 5) -> float:
    files = sorted(glob.glob(f"{folder}/*.html"))
    random.Random(1).shuffle(files)
    roots = [
        Selector(text=open(f, encoding="utf-8", errors="replace").read(), type="html").root  # noqa: SIM115
        for f in files[:pages]
    ]
    folded = hasattr(split_page(roots[0]), "content_folded")  # this tree folds once

    def run() -> float:
        templates, duplicates = HostTemplates(), NearDuplicates()
        start = time.process_time()
        for root in roots:
            page = split_page(root)
            templates.classify("h", page)
            page.content_text()
            if folded:
                dup = duplicates.check(page.content_folded(), "t", folded=True)
            else:
                dup = duplicates.check(page.content_parts(), "t")
            if not dup:
                templates.learn("h", page)
        return 1000 * (time.process_time() - start) / len(roots)

    run()
    return min(run() for _ in range(runs))


if __name__ == "__main__":
    print(f"{main(*sys.argv[1:2]):.3f} CPU ms/page")
