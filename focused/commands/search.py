"""``scrapy search QUERY``: full-text search over the pages a crawl stored.

``scrapy search "催化剂 catalyst" [--dir out/crawl] [--limit 20] [--json] [--all]`` prints
the best pages (BM25, see :mod:`focused.output.search`); ``scrapy search --reindex``
rebuilds the index from the stored HTML files.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from focused.defaults import get
from focused.output.search import SearchError, format_hits, reindex, search


class Command(ScrapyCommand):
    """Search the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"QUERY" [--dir DIR] [--limit N] [--json] [--all] | --reindex [--dir DIR]'

    def short_desc(self) -> str:
        return "Full-text search over the stored pages of a crawl (Chinese and English)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group("Search Options")
        group.add_argument("--dir", help="crawl output folder (default: FOCUSED_OUTPUT_DIR)")
        group.add_argument("--limit", type=int, default=20, help="at most N pages (20)")
        group.add_argument("--json", action="store_true", help="one JSON object per hit")
        group.add_argument("--all", action="store_true", help="pages with every term only")
        group.add_argument(
            "--reindex", action="store_true", help="rebuild the index from the stored HTML"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        folder = opts.dir or get(self.settings, "FOCUSED_OUTPUT_DIR")
        try:
            if opts.reindex:
                if args:
                    raise UsageError("--reindex takes no query")
                n = reindex(folder, get(self.settings, "FOCUSED_INDEX_MAX_CHARS"))
                print(f"focused: indexed {n} pages in {folder}")
                return
            if not args:
                raise UsageError('give a query: scrapy search "催化剂 catalyst"')
            hits = search(folder, " ".join(args), limit=opts.limit, all_terms=opts.all)
        except SearchError as exc:
            print(f"focused: error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        if opts.json:
            for hit in hits:
                print(json.dumps(hit.to_dict(), ensure_ascii=False))
        else:
            print(format_hits(hits))
