"""``scrapy sandbox``: serve the offline sandbox web until interrupted."""

from __future__ import annotations

import argparse
import sys
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from focused import defaults
from focused.web.sandbox.server import add_arguments, serve


class Command(ScrapyCommand):
    """Serve the generated sandbox web on loopback and print its base URL.

    A bad ``--pages``, ``--mode`` or ``--port``, or a port in use, is one line
    (``focused: error: ...``) and exit status 2.

    Settings: ``FOCUSED_SANDBOX_SEED``, ``FOCUSED_SANDBOX_PAGES`` and
    ``FOCUSED_SANDBOX_MODE`` give the defaults of ``--seed``, ``--pages`` and ``--mode``.
    """

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--port N] [--seed N] [--pages N] [--mode MODE]"

    def short_desc(self) -> str:
        return "Serve the offline sandbox web on 127.0.0.1"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        assert self.settings is not None
        add_arguments(
            parser.add_argument_group("Sandbox Options"),  # type: ignore[arg-type]
            seed=defaults.get(self.settings, "FOCUSED_SANDBOX_SEED"),
            pages=defaults.get(self.settings, "FOCUSED_SANDBOX_PAGES"),
            mode=defaults.get(self.settings, "FOCUSED_SANDBOX_MODE"),
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy sandbox takes no positional arguments")
        try:
            serve(opts.host, opts.port, opts.seed, opts.pages, opts.mode)
        except ValueError as exc:  # a bad --pages, --mode or --port, a port in use
            print(f"focused: error: {exc}", file=sys.stderr)
            self.exitcode = 2
