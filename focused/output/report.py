"""Print a crawl's recall/precision summary: ``python -m focused.output.report OUTPUT_DIR``.

A folder without ``summary.json``, or whose ``summary.json`` or ``metrics.csv`` cannot be
read (not JSON, not a crawl's summary, a bad row), is one line naming the file and the
problem (``focused: error: ...``) and exit status 2.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from focused.output.metrics import Point, read_points_csv

__all__ = ["ReportError", "main", "report"]

#: the keys of ``summary.json`` the report prints, each a number
_NUMBERS = ("pages", "relevant", "precision")


class ReportError(Exception):
    """A file of the crawl's folder that cannot be read; the message names it."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_summary(path: Path) -> dict[str, Any]:
    """``summary.json`` (:meth:`focused.pipelines.MetricsPipeline.summary`), checked."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ReportError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path} is not a crawl summary (a JSON object)")
    for key in _NUMBERS:
        if not _is_number(data.get(key)):
            raise ReportError(f"{path} is not a crawl summary: {key!r} is {data.get(key)!r}")
    if data.get("recall") is not None and data.get("targets"):
        for key in ("recall", "targets_found"):
            if not _is_number(data.get(key)):
                raise ReportError(f"{path} is not a crawl summary: {key!r} is {data.get(key)!r}")
    return data


def read_points(path: Path) -> list[Point]:
    """``metrics.csv`` (:meth:`focused.output.metrics.HarvestCurve.to_csv`), checked."""
    try:
        return read_points_csv(path)
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except KeyError as exc:
        raise ReportError(f"{path} is not a crawl's metrics: no column {exc}") from None
    except (ValueError, TypeError, csv.Error) as exc:  # a bad number, not UTF-8, a bad row
        raise ReportError(f"{path} is not a crawl's metrics: {exc}") from None


def report(folder: Path) -> str:
    """A few lines: final numbers, then recall and precision at tenths of the crawl.
    :class:`ReportError` when ``summary.json`` or ``metrics.csv`` cannot be read."""
    summary = read_summary(folder / "summary.json")
    points = read_points(folder / "metrics.csv")
    recall = summary.get("recall")
    targets = summary.get("targets")
    known = recall is not None and bool(targets)  # no target set: not measured, not 0 of 0
    lines = [
        f"topic {summary.get('topic')}, strategy {summary.get('strategy')}: "
        f"{summary['pages']} pages crawled, {summary['relevant']} relevant",
        (
            f"precision (harvest rate) {summary['precision']:.3f}, "
            f"recall {recall:.3f} ({summary['targets_found']}/{targets} targets)"
            if known
            else f"precision (relevant pages / pages) {summary['precision']:.3f},"
            " recall n/a (not measured: no known targets for this topic on this web)"
        ),
        "pages  precision  recall",
    ]
    for tenth in range(1, 11):
        index = max(0, len(points) * tenth // 10 - 1)
        if points:
            p = points[index]
            r = "n/a" if p.recall is None or not known else f"{p.recall:.3f}"
            lines.append(f"{p.pages:5d}  {p.precision:9.3f}  {r:>6}")
    plot = folder / "curve.png"
    pages = f"pages: {folder / 'pages.sqlite3'}"
    lines.append(f"plot: {plot}; {pages}" if plot.exists() else pages)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "out/crawl")
    if not (folder / "summary.json").is_file():
        print(f"focused: error: no summary.json in {folder} (did the crawl run?)", file=sys.stderr)
        return 2
    try:
        text = report(folder)
    except ReportError as exc:
        print(f"focused: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
