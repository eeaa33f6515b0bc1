"""Micro-benchmark: a page's two WARC records (response, request; gzipped) made by
warcio's builder and writer against the format strings of ``SegmentWriter.records``,
for wikispeedia pages, CPU ms per page, ``--rounds`` alternated, median (min-max).

    python -m bench.warc_records [--pages 300] [--rounds 7] [--level 1]

The gzip of the body is most of either; ``gzip alone`` is that part. No I/O.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import random
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from urllib.parse import quote

from bench.speed import DEFAULT_DATA, ROOT
from focused.output.segments import SegmentWriter, WarcPage


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT / DEFAULT_DATA)
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--level", type=int, default=1)
    args = p.parse_args(argv)
    files = sorted(glob.glob(str(args.data.resolve() / "wiki" / "*.html")))
    random.Random(1).shuffle(files)
    pages = []
    for i, f in enumerate(files[: args.pages]):
        body = Path(f).read_bytes()
        url = "http://127.0.0.1:8000/wiki/" + quote(Path(f).name)
        pages.append(WarcPage(url, body, hashlib.sha256(body).hexdigest(), 200, "utf-8", 1.7e9 + i))
    with tempfile.TemporaryDirectory() as tmp:
        writer = SegmentWriter(tmp, gzip_level=args.level)
        ways = {
            "warcio": writer.warcio_records,
            "format strings": writer.records,
            "gzip alone": lambda page: zlib.compress(page.body, args.level, 31),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, make in ways.items():
                start = time.process_time()
                for page in pages:
                    make(page)
                times[name].append(1000 * (time.process_time() - start) / len(pages))
        writer.close()
    kb = sum(len(page.body) for page in pages) / len(pages) / 1024
    print(f"{len(pages)} pages, {kb:.1f} KB/page, gzip level {args.level}")
    for name, ts in times.items():
        print(f"{name}: {statistics.median(ts):.3f} CPU ms/page ({min(ts):.3f}-{max(ts):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
