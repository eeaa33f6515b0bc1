"""``scrapy report [--dir DIR]``: write ``report.html`` into a crawl's output folder.

The same report the crawl writes at its end (:mod:`focused.output.html_report`),
regenerated from the folder's files.
"""

from __future__ import annotations

import argparse

from focused.cli import FolderCommand


class Command(FolderCommand):
    """Write ``report.html`` for the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    group_title = "Report Options"

    def syntax(self) -> str:
        return "[--dir DIR] [--output FILE]"

    def short_desc(self) -> str:
        return "Write a crawl's report.html (plots, top pages, errors, settings)"

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--output", help="where to write it (default: DIR/report.html)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = self.folder(args, opts)
        if not folder.is_dir():
            self.fail(f"no crawl output folder {folder}")
            return
        from focused.output.html_report import write_report  # matplotlib only here

        print(f"focused: report in {write_report(folder, opts.output)}")
