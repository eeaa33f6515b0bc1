"""``scrapy search QUERY``: full-text search over the pages a crawl stored.

``scrapy search "催化剂 catalyst" [--dir out/crawl] [--limit 20] [--json] [--all]`` prints
the best pages (BM25, see :mod:`focused.output.search`); ``scrapy search --reindex``
rebuilds the index from the stored HTML files. A standard output that cannot take the
hits (a reader that went away, ``| head -1``; a full disk) is one line on stderr and
exit status 2, as for ``scrapy export --output -``.
"""

from __future__ import annotations

import argparse
import json
import sys

from scrapy.exceptions import UsageError

from focused.cli import FolderCommand, silence_stdout
from focused.defaults import get
from focused.output.search import SearchError, format_hits, reindex, search


class Command(FolderCommand):
    """Search the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    group_title = "Search Options"
    takes_arguments = True

    def syntax(self) -> str:
        return '"QUERY" [--dir DIR] [--limit N] [--json] [--all] | --reindex [--dir DIR]'

    def short_desc(self) -> str:
        return "Full-text search over the stored pages of a crawl (Chinese and English)"

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--limit", type=int, default=20, help="at most N pages (20)")
        group.add_argument("--json", action="store_true", help="one JSON object per hit")
        group.add_argument("--all", action="store_true", help="pages with every term only")
        group.add_argument(
            "--reindex", action="store_true", help="rebuild the index from the stored HTML"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = str(self.folder(args, opts))
        query = " ".join(args).strip()
        try:
            if opts.reindex:
                if args:
                    raise UsageError("--reindex takes no query")
                n = reindex(folder, get(self.settings, "FOCUSED_INDEX_MAX_CHARS"))
                print(f"focused: indexed {n} pages in {folder}")
                return
            if not query:  # none, or "": one line, not "no pages found"
                self.fail('give a query: scrapy search "催化剂 catalyst"')
                return
            if opts.limit < 1:
                self.fail(f"--limit must be at least 1, got {opts.limit}")
                return
            hits = search(folder, query, limit=opts.limit, all_terms=opts.all)
        except SearchError as exc:
            self.fail(str(exc))
            return
        try:
            if opts.json:
                for hit in hits:
                    print(json.dumps(hit.to_dict(), ensure_ascii=False))
            else:
                print(format_hits(hits))
            sys.stdout.flush()
        except OSError as exc:  # | head -1 went away, a full disk
            silence_stdout()  # Python's own flush at exit would fail again
            reason = "its reader closed the pipe (broken pipe)"
            if not isinstance(exc, BrokenPipeError):
                reason = exc.strerror or str(exc)
            self.fail(f"cannot write the hits to stdout: {reason}")
