"""Recall and precision of a focused crawl against the number of pages crawled.

Definitions from the evaluation of the m-value rule (Liu, Xia & Xu 2010):

- recall = target pages collected / all target pages;
- precision = target pages collected / all pages crawled (the *harvest rate*).

When no target set is known (a topic on the real web without labels), precision falls
back to relevant pages / pages crawled, relevance being the crawler's own judgement
(``A > threshold``), and recall is ``None``.

Pure module: no Scrapy import (w3lib only), so the benchmark and the tests use it directly.
"""

from __future__ import annotations

import csv
import math
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple
from urllib.parse import urljoin

from w3lib.url import canonicalize_url

from focused.output.atomic import atomic_write

__all__ = [
    "HarvestCurve",
    "Point",
    "read_labels",
    "read_points_csv",
    "targets_from_labels",
]

CSV_FIELDS = (
    "pages",
    "precision",
    "recall",
    "relevant_pages",
    "targets_found",
    "url",
    "relevant",
    "is_target",
    # since the crawl started, and the four queues (Liu, Xia & Xu 2010) after the page:
    # empty cells when unknown (older files have no such columns)
    "elapsed_s",
    "waiting",
    "in_flight",
    "done",
    "error",
)
#: the queue columns, in :data:`CSV_FIELDS` order
QUEUES = ("waiting", "in_flight", "done", "error")


class Point(NamedTuple):
    """The state of a crawl after its ``pages``-th page (one per page added)."""

    pages: int
    precision: float
    recall: float | None
    relevant_pages: int
    targets_found: int
    url: str = ""
    relevant: bool = False
    is_target: bool | None = None
    elapsed_s: float | None = None  # seconds since the crawl started
    waiting: int | None = None  # queue sizes after the page (None: unknown)
    in_flight: int | None = None
    done: int | None = None
    error: int | None = None


def _canon(url: str) -> str:
    return canonicalize_url(url)


def read_labels(lines: Iterable[str]) -> dict[str, list[str]]:
    """Parse ``path<TAB>category`` rows (wikispeedia's ``labels.tsv`` format).

    Blank lines and ``#`` comment lines are skipped; a path may have several rows and
    keeps every category in file order. A row without a tab is a path with no category.
    """
    labels: dict[str, list[str]] = {}
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        path, _, category = line.partition("\t")
        path = path.strip()
        cats = labels.setdefault(path, [])
        category = category.strip()
        if category and category not in cats:
            cats.append(category)
    return labels


def _matches(category: str, prefix: str) -> bool:
    """True when ``category`` is ``prefix`` or below it in the dotted hierarchy."""
    if prefix.endswith("."):
        return category.startswith(prefix)
    return category == prefix or category.startswith(prefix + ".")


def targets_from_labels(
    labels: Mapping[str, Iterable[str]], prefix: str, base_url: str
) -> frozenset[str]:
    """Absolute, canonical URLs (``w3lib.url.canonicalize_url``) of the labelled pages
    with a category under ``prefix`` (``subject.Science.Chemistry`` matches
    ``subject.Science.Chemistry.Chemical_elements``, not ``subject.Science.ChemistryX``).

    ``base_url`` resolves the label paths (``/wiki/AT%26T.html``), e.g. the seed URL.
    """
    return frozenset(
        _canon(urljoin(base_url, path))
        for path, cats in labels.items()
        if any(_matches(c, prefix) for c in cats)
    )


class HarvestCurve:
    """Recall and precision after every page of a crawl (the evaluation of Liu, Xia & Xu 2010).

    ``targets``: canonical absolute URLs of all target pages, or ``None``/empty when
    unknown. A page counts once (a URL added again is ignored). ``is_target`` given to
    :meth:`add` wins; when it is ``None`` the page is a target when its canonical URL is
    in ``targets``. :meth:`add_alias` counts another URL of a page added before (a
    near-duplicate the store recorded against it): a target found, no page more.
    Precision counts target *pages*: a page is one when any of its URLs is a target, and
    counts once however many of them are.
    """

    def __init__(self, targets: frozenset[str] | None = None) -> None:
        self.targets: frozenset[str] = frozenset(targets or ())
        # canonical URL -> the number of its page (-1: an alias of a page not added)
        self._seen: dict[str, int] = {}
        self._found: set[str] = set()
        self.pages = 0
        self.relevant_pages = 0
        # the points in columns (a Point a page was ~320 bytes; ~50 here beside its URL):
        # what each page brought, from which :meth:`iter_points` counts the rest again
        self._urls: list[str] = []
        self._relevant = bytearray()  # 0 or 1
        self._target = bytearray()  # 0: unknown (None), 1: no, 2: yes
        self._elapsed = array("d")  # NaN: unknown
        self._queues = array("q")  # len(QUEUES) a page; -1: unknown
        self._alias_targets = array("q")  # targets found by aliases right after each page
        self._alias_targets_before = 0  # ... before the first page
        # pages made target pages by an alias (their own URL no target) right after each page
        self._alias_hits = array("q")
        self._hit = bytearray()  # 1: the page is a target page (by any of its URLs)
        self.target_pages = 0
        self.aliases = 0

    @property
    def targets_known(self) -> bool:
        return bool(self.targets)

    @property
    def targets_found(self) -> int:
        return len(self._found)

    @property
    def precision(self) -> float:
        """Target pages / pages when targets are known, else relevant pages / pages."""
        if not self.pages:
            return 0.0
        hits = self.target_pages if self.targets_known else self.relevant_pages
        return hits / self.pages

    @property
    def recall(self) -> float | None:
        """Targets found / all targets; ``None`` when no targets are known."""
        if not self.targets_known:
            return None
        return min(1.0, self.targets_found / len(self.targets))

    def add(
        self,
        url: str,
        relevant: bool,
        is_target: bool | None = None,
        *,
        elapsed_s: float | None = None,
        queues: Mapping[str, int | None] | None = None,
    ) -> bool:
        """Count one crawled page; False (and nothing counted) for a URL seen before.

        ``elapsed_s`` (seconds since the crawl started) and ``queues`` (sizes of
        :data:`QUEUES`) are only recorded with the page's point."""
        canon = _canon(url)
        if canon in self._seen:
            return False
        self._seen[canon] = self.pages
        if is_target is None and self.targets_known:
            is_target = canon in self.targets
        self.pages += 1
        self._hit.append(1 if is_target else 0)
        self.target_pages += 1 if is_target else 0
        if relevant:
            self.relevant_pages += 1
        if is_target:
            self._found.add(canon)
        self._urls.append(url)
        self._relevant.append(1 if relevant else 0)
        self._target.append(0 if is_target is None else 2 if is_target else 1)
        self._elapsed.append(math.nan if elapsed_s is None else elapsed_s)
        self._alias_targets.append(0)
        self._alias_hits.append(0)
        sizes = queues or {}
        for name in QUEUES:
            n = sizes.get(name)
            self._queues.append(-1 if n is None else int(n))
        return True

    def add_alias(self, url: str, is_target: bool | None = None, of: str | None = None) -> bool:
        """Count ``url`` as another URL of a page added before (its near-duplicate, the
        body stored once; ``of``: a URL of that page, its own or another alias's): found
        when it is a target (``is_target``, or, when None, its canonical URL in
        ``targets``), but no page more; that page becomes a target page for precision
        unless it is one already (an alias of a page not known here counts for recall
        only). False (nothing counted) for a URL seen before."""
        canon = _canon(url)
        if canon in self._seen:
            return False
        page = self._seen.get(_canon(of), -1) if of else -1
        self._seen[canon] = page
        self.aliases += 1
        if is_target is None and self.targets_known:
            is_target = canon in self.targets
        if is_target:
            self._found.add(canon)
            if self._alias_targets:
                self._alias_targets[-1] += 1
            else:
                self._alias_targets_before += 1
            if page >= 0 and not self._hit[page]:  # a page counts once
                self._hit[page] = 1
                self.target_pages += 1
                self._alias_hits[-1] += 1
        return True

    def iter_points(self) -> Iterator[Point]:
        """One :class:`Point` per page added, in order, made as they are read: the
        counts, precision and recall after each page are counted again from what each
        page brought (the same numbers :meth:`add` reached: a page adds one page, and one
        target when it is one, since a URL counts once)."""
        known, n_targets, width = self.targets_known, len(self.targets), len(QUEUES)
        relevant_pages = hits = 0
        found = self._alias_targets_before
        queues = self._queues
        for i, url in enumerate(self._urls):
            pages = i + 1
            relevant, target = self._relevant[i], self._target[i]
            relevant_pages += relevant
            found += (target == 2) + self._alias_targets[i]
            hits += (target == 2) + self._alias_hits[i]
            elapsed = self._elapsed[i]
            yield Point(
                pages,
                (hits if known else relevant_pages) / pages,
                min(1.0, found / n_targets) if known else None,
                relevant_pages,
                found,
                url,
                bool(relevant),
                None if target == 0 else target == 2,
                None if math.isnan(elapsed) else elapsed,
                *(None if q < 0 else q for q in queues[i * width : (i + 1) * width]),
            )

    @property
    def points(self) -> list[Point]:
        """:meth:`iter_points` as a list (made on each call: iterate :meth:`iter_points`
        where a list is not needed)."""
        return list(self.iter_points())

    def _at(self, pages: int) -> Point | None:
        if pages < 1 or not self._urls:
            return None
        last = min(pages, len(self._urls))
        for point in self.iter_points():
            if point.pages == last:
                return point
        return None

    def recall_at(self, pages: int) -> float | None:
        """Recall after ``pages`` pages (the last value when the crawl was shorter)."""
        point = self._at(pages)
        return point.recall if point else (0.0 if self.targets_known else None)

    def precision_at(self, pages: int) -> float:
        """Precision after ``pages`` pages (the last value when the crawl was shorter)."""
        point = self._at(pages)
        return point.precision if point else 0.0

    def auc_recall(self, budget: int) -> float | None:
        """Mean recall over pages 1..``budget`` (area under the recall curve / budget).

        A crawl that stopped early keeps its last recall up to ``budget``; a higher value
        means targets were found earlier. ``None`` when no targets are known.
        """
        if not self.targets_known:
            return None
        if budget < 1:
            raise ValueError("budget must be >= 1")
        total = 0.0
        last = 0.0
        for point in self.iter_points():
            if point.pages > budget:
                break
            last = point.recall or 0.0
            total += last
        total += last * max(0, budget - len(self._urls))
        return total / budget

    def summary(self) -> dict[str, object]:
        """The final numbers as a JSON-ready dict; ``targets`` and ``recall`` are None
        when no target is known (recall not measured, not "0 of 0")."""
        return {
            "pages": self.pages,
            "relevant": self.relevant_pages,
            "targets": len(self.targets) if self.targets_known else None,
            "targets_found": self.targets_found,
            "aliases": self.aliases,
            "precision": self.precision,
            "recall": self.recall,
            "harvest_rate_relevant": (self.relevant_pages / self.pages) if self.pages else 0.0,
        }

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write one row per page (``CSV_FIELDS``); an unknown recall is an empty cell.
        Atomic (:mod:`focused.output.atomic`): a failure leaves the old file, not a part."""
        with atomic_write(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(CSV_FIELDS)
            for p in self.iter_points():
                writer.writerow(
                    [
                        p.pages,
                        f"{p.precision:.6f}",
                        "" if p.recall is None else f"{p.recall:.6f}",
                        p.relevant_pages,
                        p.targets_found,
                        p.url,
                        int(p.relevant),
                        "" if p.is_target is None else int(p.is_target),
                        "" if p.elapsed_s is None else f"{p.elapsed_s:.3f}",
                        *("" if n is None else int(n) for n in p[-len(QUEUES) :]),
                    ]
                )


def read_points_csv(path: str | os.PathLike[str]) -> list[Point]:
    """Read back the points written by :meth:`HarvestCurve.to_csv`."""
    points: list[Point] = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            recall = row.get("recall", "")
            is_target = row.get("is_target", "")
            points.append(
                Point(
                    int(row["pages"]),
                    float(row["precision"]),
                    float(recall) if recall not in ("", None) else None,
                    int(row.get("relevant_pages") or 0),
                    int(row.get("targets_found") or 0),
                    row.get("url", ""),
                    row.get("relevant", "0") == "1",
                    None if is_target in ("", None) else is_target == "1",
                    _number(row.get("elapsed_s"), float),
                    *(_number(row.get(name), int) for name in QUEUES),
                )
            )
    return points


def _number(cell: str | None, kind: type[float] | type[int]) -> Any:
    """A number cell of ``metrics.csv``; None when empty or absent (an older file)."""
    return None if cell in ("", None) else kind(cell)  # type: ignore[arg-type]
