"""``scrapy export --format warc|jsonl --output FILE [--dir DIR]``: hand the pages on.

WARC 1.1 request and response records (warcio), or one JSON object per page with its
metadata and main text; see :mod:`focused.output.export`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from focused.defaults import get
from focused.output.export import FORMATS, ExportError, export


class Command(ScrapyCommand):
    """Export the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "--format warc|jsonl --output FILE [--dir DIR]"

    def short_desc(self) -> str:
        return "Export the stored pages as WARC 1.1 or JSON lines"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group("Export Options")
        group.add_argument("--format", choices=FORMATS, required=True, dest="fmt")
        group.add_argument(
            "--output", required=True, help="file to write (.warc.gz: gzipped records)"
        )
        group.add_argument("--dir", help="crawl output folder (default: FOCUSED_OUTPUT_DIR)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy export takes no positional arguments")
        assert self.settings is not None
        folder = opts.dir or get(self.settings, "FOCUSED_OUTPUT_DIR")
        try:
            n = export(folder, opts.fmt, opts.output)
        except ExportError as exc:
            print(f"focused: error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        print(f"focused: wrote {n} pages to {opts.output} ({opts.fmt})")
