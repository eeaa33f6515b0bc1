"""``scrapy report [--dir DIR]``: write ``report.html`` into a crawl's output folder.

The same report the crawl writes at its end (:mod:`focused.output.html_report`),
regenerated from the folder's files. A folder that does not exist, or holds none of a
crawl's files, or an ``--output`` that is one of a crawl's own files other than its
``report.html`` (:func:`focused.output.owned.crawl_file`), is one line (``focused:
error: ...``) and exit status 2; so is an ``--output`` that cannot be written (a folder,
a file in the way of its folder). A pipe or a device (``/dev/stdout``) is written as it
is, and a symbolic link's target, never replaced by a file renamed over it.
"""

from __future__ import annotations

import argparse
import sys

from focused.cli import FolderCommand, silence_stdout
from focused.output.atomic import is_stream
from focused.output.export import STDOUT
from focused.output.owned import crawl_file
from focused.output.store import DB_NAME

#: the files a crawl leaves in its output folder that the report is drawn from (a crawl
#: killed before its end leaves the page store only)
CRAWL_FILES = ("summary.json", "metrics.csv", "stats.json", DB_NAME)
#: the crawl's file the report replaces (focused.output.html_report.REPORT_NAME)
REPORT = "report.html"


class Command(FolderCommand):
    """Write ``report.html`` for the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    group_title = "Report Options"

    def syntax(self) -> str:
        return "[--dir DIR] [--output FILE]"

    def short_desc(self) -> str:
        return "Write a crawl's report.html (plots, top pages, errors, settings)"

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--output", help="where to write it, - for stdout (default: DIR/report.html)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = self.folder(args, opts)
        if not folder.is_dir():
            self.fail(f"no crawl output folder {folder}")
            return
        if not any((folder / name).is_file() for name in CRAWL_FILES):
            self.fail(
                f"no crawl output in {folder} (none of {', '.join(CRAWL_FILES)}: did the"
                " crawl run?)"
            )
            return
        own = None if opts.output is None else crawl_file(folder, opts.output, allowed=REPORT)
        if own is not None:
            self.fail(f"cannot write the report to {opts.output}: it is the crawl's own {own}")
            return
        from focused.output.html_report import build_report, save_report  # matplotlib here

        out = folder / REPORT if opts.output is None else opts.output
        text = build_report(folder)
        if opts.output == STDOUT:  # as `scrapy export --output -`
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except OSError as exc:  # a closed pipe, a full disk
                silence_stdout()
                self.fail(f"cannot write the report to stdout: {exc.strerror or exc}")
            return
        try:
            save_report(text, out)
        except OSError as exc:  # a folder, a file in the way, no permission, a full disk
            self.fail(f"cannot write the report to {out}: {exc.strerror or exc}")
            return
        # into a pipe or /dev/stdout, the line would end up in the report
        print(f"focused: report in {out}", file=sys.stderr if is_stream(out) else sys.stdout)
