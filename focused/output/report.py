"""Print a crawl's recall/precision summary: ``python -m focused.output.report OUTPUT_DIR``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from focused.output.metrics import read_points_csv


def report(folder: Path) -> str:
    """A few lines: final numbers, then recall and precision at tenths of the crawl."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    points = read_points_csv(folder / "metrics.csv")
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
    lines.append(f"plot: {folder / 'curve.png'}; pages: {folder / 'pages.sqlite3'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "out/crawl")
    if not (folder / "summary.json").is_file():
        print(f"focused: error: no summary.json in {folder} (did the crawl run?)", file=sys.stderr)
        return 2
    print(report(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
