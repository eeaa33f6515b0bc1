"""Recall and precision against pages crawled, as a PNG (matplotlib, Agg backend).

Liu, Xia & Xu (2010) plot both measures against the number of pages crawled for each strategy on
the same seeds; :func:`plot_curves` draws one curve (a crawl's ``metrics.csv`` or its
points) or several (``{label: points}``) on two panels: recall on top, precision below.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from focused.output.atomic import write_with  # noqa: E402
from focused.output.metrics import Point, read_points_csv  # noqa: E402

__all__ = ["plot_curves"]

Curve = str | os.PathLike[str] | Sequence[Point] | Sequence[Sequence[Any]]


def _points(curve: Curve) -> list[tuple[int, float, float | None]]:
    """(pages, precision, recall) of a CSV path or a sequence of points/tuples."""
    if isinstance(curve, str | os.PathLike):
        curve = read_points_csv(curve)
    return [(int(p[0]), float(p[1]), None if p[2] is None else float(p[2])) for p in curve]


def plot_curves(
    curves: Curve | Mapping[str, Curve],
    path: str | os.PathLike[str],
    title: str = "",
) -> Path:
    """Write a PNG of recall (top) and precision (bottom) against pages crawled.

    ``curves``: a ``metrics.csv`` path, a list of :class:`~focused.output.metrics.Point` (or
    ``(pages, precision, recall, ...)`` tuples), or ``{label: one of those}`` for several
    strategies on one figure. A curve without targets (recall ``None``) has no recall
    line; its precision is then the relevant-page harvest rate. An empty crawl gives
    empty panels that say so (and no legend).
    """
    if isinstance(curves, Mapping):
        named = {str(label): _points(c) for label, c in curves.items()}
    else:
        named = {"": _points(curves)}
    fig, (ax_r, ax_p) = plt.subplots(2, 1, sharex=True, figsize=(8, 7), dpi=100)
    try:
        any_recall = False
        labelled = False  # a labelled line was drawn: only then is there a legend
        for label, pts in named.items():
            if not pts:
                continue
            labelled = labelled or bool(label)
            pages = [p[0] for p in pts]
            (line,) = ax_p.plot(pages, [p[1] for p in pts], label=label or None, lw=1.5)
            recall = [(x, r) for x, _, r in pts if r is not None]
            if recall:
                any_recall = True
                ax_r.plot(
                    [x for x, _ in recall],
                    [r for _, r in recall],
                    label=label or None,
                    lw=1.5,
                    color=line.get_color(),
                )
        ax_r.set_ylabel("recall")
        ax_r.set_ylim(0, 1.02)
        ax_p.set_ylabel("precision (harvest rate)")
        ax_p.set_ylim(0, 1.02)
        ax_p.set_xlabel("pages crawled")
        ax_p.set_xlim(left=0)
        for ax in (ax_r, ax_p):
            ax.grid(True, alpha=0.3)
        if not any(named.values()):
            ax_p.text(
                0.5,
                0.5,
                "no page crawled",
                ha="center",
                va="center",
                transform=ax_p.transAxes,
                color="gray",
            )
        if not any_recall:
            ax_r.text(
                0.5,
                0.5,
                "no page crawled" if not any(named.values()) else "recall not measured",
                ha="center",
                va="center",
                transform=ax_r.transAxes,
                color="gray",
            )
        if labelled:
            ax_p.legend(loc="best", fontsize="small")
            if any_recall:
                ax_r.legend(loc="lower right", fontsize="small")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        # atomic: a full disk leaves the old plot (or none), never a truncated PNG
        write_with(out, lambda tmp: fig.savefig(tmp, format="png"))
    finally:
        plt.close(fig)
    return out
