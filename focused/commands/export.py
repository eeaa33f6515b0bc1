"""``scrapy export --format warc|jsonl --output FILE|- [--dir DIR]``: hand the pages on.

WARC 1.1 request and response records (warcio), or one JSON object per page with its
metadata and main text; see :mod:`focused.output.export`. ``--output -`` writes them to
the standard output (the line that says how many went there to stderr); a reader that
closes it early (``| head -1``) is one line on stderr and exit status 2, no traceback.
"""

from __future__ import annotations

import argparse
import sys

from focused.cli import FolderCommand, silence_stdout
from focused.output.atomic import is_stream
from focused.output.export import FORMATS, STDOUT, ExportError, OutputClosed, export


class Command(FolderCommand):
    """Export the crawl in ``--dir`` (default ``FOCUSED_OUTPUT_DIR``)."""

    group_title = "Export Options"

    def syntax(self) -> str:
        return "--format warc|jsonl --output FILE|- [--dir DIR]"

    def short_desc(self) -> str:
        return "Export the stored pages as WARC 1.1 or JSON lines"

    def add_folder_options(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--format", choices=FORMATS, required=True, dest="fmt")
        group.add_argument(
            "--output",
            required=True,
            help="file to write (.warc.gz: gzipped records; -: standard output)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = self.folder(args, opts)
        try:
            n = export(str(folder), opts.fmt, opts.output)
        except OutputClosed as exc:
            silence_stdout()
            self.fail(str(exc))
            return
        except ExportError as exc:
            self.fail(str(exc))
            return
        if opts.output == STDOUT:  # the pages went to stdout: the count does not
            print(f"focused: wrote {n} pages to stdout ({opts.fmt})", file=sys.stderr)
            return
        # into a pipe or /dev/stdout, the line would end up in the export
        where = sys.stderr if is_stream(opts.output) else sys.stdout
        print(f"focused: wrote {n} pages to {opts.output} ({opts.fmt})", file=where)
