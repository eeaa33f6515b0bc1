"""``scrapy export --format warc|jsonl --output FILE [--dir DIR]``: hand the pages on.

WARC 1.1 request and response records (warcio), or one JSON object per page with its
metadata and main text; see :mod:`focused.output.export`.
"""

from __future__ import annotations

import argparse

from focused.cli import FolderCommand
from focused.output.export import FORMATS, ExportError, export


class Command(FolderCommand):
    """Export the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    group_title = "Export Options"

    def syntax(self) -> str:
        return "--format warc|jsonl --output FILE [--dir DIR]"

    def short_desc(self) -> str:
        return "Export the stored pages as WARC 1.1 or JSON lines"

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--format", choices=FORMATS, required=True, dest="fmt")
        group.add_argument(
            "--output", required=True, help="file to write (.warc.gz: gzipped records)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = self.folder(args, opts)
        try:
            n = export(str(folder), opts.fmt, opts.output)
        except ExportError as exc:
            self.fail(str(exc))
            return
        print(f"focused: wrote {n} pages to {opts.output} ({opts.fmt})")
