"""The one place that builds a ``scrapy crawl focused`` command line.

The benchmarks (:mod:`bench.quality`, :mod:`bench.speed`, :mod:`bench.scale`) and the
tests run real crawls in subprocesses from the project root; they all build the command
with :func:`crawl_command`, so that a setting is rendered the same way everywhere
(``-s NAME=value``, one per setting, in the mapping's order). It lives in ``bench/``, not
in the ``focused`` package, so that it is not in the scrapyd egg.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

#: How the tests and the benchmarks start Scrapy: this interpreter's ``-m scrapy``.
SCRAPY: tuple[str, ...] = (sys.executable, "-m", "scrapy")


def setting_value(value: object) -> str:
    """``value`` as Scrapy reads it back from ``-s NAME=value``.

    A mapping becomes JSON (``Settings.getdict`` parses it), a list or tuple is joined with
    commas (``Settings.getlist`` splits on them), a bool is ``True``/``False``
    (``Settings.getbool``), anything else is ``str(value)`` (a path, a number, a string).
    """
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def settings_from_strings(strings: Iterable[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings (a test's or ``--set``'s) as a mapping; a later one wins,
    as on Scrapy's command line."""
    out: dict[str, str] = {}
    for text in strings:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise ValueError(f"a setting is NAME=VALUE, not {text!r}")
        out.pop(name, None)  # a later value also comes later, as on the command line
        out[name] = value
    return out


def crawl_command(
    topic: str | None,
    *,
    output_dir: Path | str,
    settings: Mapping[str, object] | None = None,
    scrapy: Sequence[str] = SCRAPY,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """``scrapy crawl focused`` for ``topic`` (``-a topic=...``; ``None``: none given).

    In this order: ``-a topic=``, ``-s FOCUSED_OUTPUT_DIR=output_dir``, one ``-s`` per
    entry of ``settings`` (rendered by :func:`setting_value`), then ``extra_args``
    verbatim (a test's own ``-a``/``-s`` arguments). ``scrapy`` is the command prefix
    that runs Scrapy (default: this interpreter's ``python -m scrapy``); run the command
    from the project root, where ``scrapy.cfg`` is.
    """
    settings = dict(settings or {})
    if "FOCUSED_OUTPUT_DIR" in settings:
        raise ValueError("give the output folder as output_dir, not as a setting")
    cmd = [*scrapy, "crawl", "focused"]
    if topic is not None:
        cmd += ["-a", f"topic={topic}"]
    cmd += ["-s", f"FOCUSED_OUTPUT_DIR={output_dir}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={setting_value(value)}"]
    cmd += list(extra_args)
    return cmd
