"""``scrapy report [--dir DIR]``: write ``report.html`` into a crawl's output folder.

The same report the crawl writes at its end (:mod:`focused.output.html_report`),
regenerated from the folder's files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from focused.defaults import get


class Command(ScrapyCommand):
    """Write ``report.html`` for the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--dir DIR] [--output FILE]"

    def short_desc(self) -> str:
        return "Write a crawl's report.html (plots, top pages, errors, settings)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group("Report Options")
        group.add_argument("--dir", help="crawl output folder (default: FOCUSED_OUTPUT_DIR)")
        group.add_argument("--output", help="where to write it (default: DIR/report.html)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy report takes no positional arguments")
        assert self.settings is not None
        folder = Path(opts.dir or get(self.settings, "FOCUSED_OUTPUT_DIR"))
        if not folder.is_dir():
            print(f"focused: error: no crawl output folder {folder}", file=sys.stderr)
            self.exitcode = 2
            return
        from focused.output.html_report import write_report  # matplotlib only here

        print(f"focused: report in {write_report(folder, opts.output)}")
