"""Recall/precision curves, labels and targets (focused/output/metrics.py) and plots."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import pytest

from focused.output.metrics import HarvestCurve, read_labels, read_points_csv, targets_from_labels
from focused.output.plot import plot_curves
from focused.output.report import report

BASE = "http://127.0.0.1:8000/wiki/Chemistry.html"
# the corpus next to the checkout, as tests/test_bench_quality.py finds it
WIKISPEEDIA = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "wikispeedia-site" / "labels.tsv"
)

# (url, relevant, is_target) -- targets are A, B, C, D
SEQUENCE = [
    ("http://h/A", True, None),  # target
    ("http://h/x1", False, None),
    ("http://h/B", True, None),  # target
    ("http://h/x2", True, None),  # relevant, not a target
    ("http://h/A", True, None),  # seen before: ignored
    ("http://h/y", False, True),  # the item says target although not in the set
    ("http://h/C", True, False),  # the item says not a target: it wins
]
TARGETS = frozenset({"http://h/A", "http://h/B", "http://h/C", "http://h/D"})


def feed(curve: HarvestCurve) -> list[bool]:
    return [curve.add(u, r, t) for u, r, t in SEQUENCE]


def test_curve_with_targets_by_hand() -> None:
    curve = HarvestCurve(TARGETS)
    assert feed(curve) == [True, True, True, True, False, True, True]
    assert curve.pages == 6
    assert curve.relevant_pages == 4  # A, B, x2, C
    assert curve.targets_found == 3  # A, B, y
    assert curve.precision == pytest.approx(3 / 6)
    assert curve.recall == pytest.approx(3 / 4)
    # precision after each page: 1/1, 1/2, 2/3, 2/4, 3/5, 3/6
    assert [p.precision for p in curve.points] == pytest.approx([1.0, 0.5, 2 / 3, 0.5, 0.6, 0.5])
    assert [p.recall for p in curve.points] == pytest.approx([0.25, 0.25, 0.5, 0.5, 0.75, 0.75])
    assert [p.pages for p in curve.points] == [1, 2, 3, 4, 5, 6]
    assert curve.recall_at(3) == pytest.approx(0.5)
    assert curve.recall_at(100) == pytest.approx(0.75)
    assert curve.precision_at(2) == pytest.approx(0.5)
    # (0.25 + 0.25 + 0.5 + 0.5 + 0.75 + 0.75 + 2 * 0.75) / 8 = 4.5 / 8
    assert curve.auc_recall(8) == pytest.approx(0.5625)
    # (0.25 + 0.25 + 0.5) / 3
    assert curve.auc_recall(3) == pytest.approx(1 / 3)
    summary = curve.summary()
    assert summary["targets"] == 4 and summary["targets_found"] == 3
    assert summary["harvest_rate_relevant"] == pytest.approx(4 / 6)


def test_curve_without_targets_is_relevant_harvest_rate() -> None:
    curve = HarvestCurve(None)
    feed(curve)
    assert curve.recall is None and curve.auc_recall(10) is None
    assert all(p.recall is None for p in curve.points)
    # relevant pages / pages after each page: 1/1, 1/2, 2/3, 3/4, 3/5, 4/6
    assert [p.precision for p in curve.points] == pytest.approx([1.0, 0.5, 2 / 3, 0.75, 0.6, 4 / 6])
    assert HarvestCurve(frozenset()).recall is None
    assert HarvestCurve().precision == 0.0


def test_target_urls_are_compared_canonically() -> None:
    targets = targets_from_labels({"/wiki/AT%26T.html": ["subject.Business"]}, "subject", BASE)
    curve = HarvestCurve(targets)
    assert curve.add("http://127.0.0.1:8000/wiki/AT&T.html#History", False)
    assert curve.targets_found == 1 and curve.recall == 1.0
    # the same page under its percent-encoded spelling is not a second page
    assert not curve.add("http://127.0.0.1:8000/wiki/AT%26T.html", False)


def test_read_labels_and_targets() -> None:
    text = [
        "# path\tcategory\n",
        "\n",
        "/wiki/AT%26T.html\tsubject.Business_Studies.Companies\r\n",
        "/wiki/Oxygen.html\tsubject.Science.Chemistry.Chemical_elements\n",
        "/wiki/Oxygen.html\tsubject.Science.Physics.Space_Astronomy\n",
        "/wiki/%C3%89ire.html\tsubject.Countries\n",
        "/wiki/Water.html\tsubject.Science.Chemistry\n",
        "/wiki/Chemistry_set.html\tsubject.Science.ChemistryToys\n",
        "/wiki/Nothing.html\n",
    ]
    labels = read_labels(text)
    assert labels["/wiki/Oxygen.html"] == [
        "subject.Science.Chemistry.Chemical_elements",
        "subject.Science.Physics.Space_Astronomy",
    ]
    assert labels["/wiki/AT%26T.html"] == ["subject.Business_Studies.Companies"]
    assert labels["/wiki/Nothing.html"] == []
    assert len(labels) == 6
    chem = targets_from_labels(labels, "subject.Science.Chemistry", BASE)
    assert chem == frozenset(
        {"http://127.0.0.1:8000/wiki/Oxygen.html", "http://127.0.0.1:8000/wiki/Water.html"}
    )
    business = targets_from_labels(labels, "subject.Business_Studies", BASE)
    # canonical form of the percent-encoded path, equal to that of the decoded spelling
    assert business == frozenset({"http://127.0.0.1:8000/wiki/AT&T.html"})
    countries = targets_from_labels(labels, "subject.Countries", "http://127.0.0.1:9/x/y.html")
    assert countries == frozenset({"http://127.0.0.1:9/wiki/%C3%89ire.html"})


@pytest.mark.skipif(not WIKISPEEDIA.is_file(), reason=f"wikispeedia labels not at {WIKISPEEDIA}")
def test_wikispeedia_chemistry_has_191_targets() -> None:
    with WIKISPEEDIA.open(encoding="utf-8") as fh:
        labels = read_labels(fh)
    assert len(labels) == 4598  # 4,604 pages, six of them without a category row
    chem = targets_from_labels(labels, "subject.Science.Chemistry", BASE)
    assert len(chem) == 191  # SOURCE.md's count
    assert "http://127.0.0.1:8000/wiki/Oxygen.html" in chem


def test_csv_round_trip_and_plot(tmp_path: Path) -> None:
    curve = HarvestCurve(TARGETS)
    feed(curve)
    path = tmp_path / "metrics.csv"
    curve.to_csv(path)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    assert rows[2]["pages"] == "3" and float(rows[2]["precision"]) == pytest.approx(2 / 3, 1e-5)
    assert rows[4]["url"] == "http://h/y" and rows[4]["is_target"] == "1"
    assert rows[1]["is_target"] == "0"  # unknown on the item: the target set decided
    back = read_points_csv(path)
    assert [p.recall for p in back] == pytest.approx([p.recall for p in curve.points])
    assert back[-1].targets_found == 3

    none = HarvestCurve()
    feed(none)
    none.to_csv(tmp_path / "none.csv")
    first = read_points_csv(tmp_path / "none.csv")[0]
    assert first.recall is None and first.is_target is None  # nothing could decide

    one = plot_curves(path, tmp_path / "one.png", "chemistry")
    many = plot_curves(
        {"annealing": curve.points, "bfs": tmp_path / "none.csv"}, tmp_path / "many.png"
    )
    for png in (one, many):
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_no_test_is_tied_to_one_machine() -> None:
    """Data next to the checkout is found relative to it, never by an absolute path."""
    absolute = "/" + "work/"  # the folder of one machine (spelt so as not to match here)
    for path in Path(__file__).parent.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert f'"{absolute}' not in text and f"'{absolute}" not in text, path.name


def test_make_test_shows_pytest_count_line() -> None:
    """``make test`` adds no ``-q`` of its own (with PYTEST_ARGS=-q, two would hide the
    "N passed" line)."""
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in recipe and "$(PYTEST_ARGS)" in recipe
    assert " -q" not in recipe


def test_an_empty_target_set_is_unknown_not_zero_of_zero(tmp_path: Path) -> None:
    curve = HarvestCurve(frozenset())
    curve.add("http://h/a", True)
    summary = curve.summary()
    assert summary["targets"] is None and summary["recall"] is None
    assert curve.auc_recall(5) is None
    assert HarvestCurve(TARGETS).summary()["targets"] == 4  # a known set keeps its size
    (tmp_path / "summary.json").write_text(
        json.dumps({"topic": "astronomy", "strategy": "bfs", **summary}), encoding="utf-8"
    )
    curve.to_csv(tmp_path / "metrics.csv")
    text = report(tmp_path)
    assert "recall n/a" in text and "not measured" in text
    assert "0/0" not in text and "/None" not in text
    assert text.splitlines()[3].split()[-1] == "n/a"


def test_an_empty_crawl_plots_without_a_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for curves in ({"annealing": []}, [], {"annealing": [], "bfs": []}):
            png = plot_curves(curves, tmp_path / "empty.png", "chemistry / annealing: 0 pages")
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _points_as_before(targets: frozenset[str], pages: list[tuple]) -> list[tuple]:
    """The points :class:`HarvestCurve` kept before its columns: one made per page as it
    was added, with the counts and ratios of that moment."""
    from w3lib.url import canonicalize_url

    seen: set[str] = set()
    found: set[str] = set()
    out: list[tuple] = []
    n = relevant_pages = 0
    for url, relevant, is_target, elapsed, queues in pages:
        canon = canonicalize_url(url)
        if canon in seen:
            continue
        seen.add(canon)
        if is_target is None and targets:
            is_target = canon in targets
        n += 1
        relevant_pages += bool(relevant)
        if is_target:
            found.add(canon)
        hits = len(found) if targets else relevant_pages
        recall = min(1.0, len(found) / len(targets)) if targets else None
        sizes = [(queues or {}).get(q) for q in ("waiting", "in_flight", "done", "error")]
        out.append(
            (n, hits / n, recall, relevant_pages, len(found), url, bool(relevant), is_target)
            + (elapsed, *sizes)
        )
    return out


@pytest.mark.parametrize("with_targets", [True, False])
def test_curve_columns_give_the_points_made_page_by_page(
    tmp_path: Path, with_targets: bool
) -> None:
    """Every point (counts, precision, recall, the page's own fields, unknown cells), the
    CSV read back and the summary numbers match the points made as each page came."""
    import random

    rng = random.Random(11)
    urls = [f"http://h.test/p{i}" for i in range(400)]
    targets = frozenset(u for u in urls[::7]) if with_targets else frozenset()
    pages = []
    for _ in range(1500):
        queues = None
        if rng.random() < 0.8:
            queues = {"waiting": rng.randrange(900), "in_flight": rng.randrange(16)}
            if rng.random() < 0.5:
                queues |= {"done": rng.randrange(500), "error": None}
        pages.append(
            (
                rng.choice(urls),
                rng.random() < 0.4,
                rng.choice([None, None, True, False]),
                None if rng.random() < 0.1 else rng.random() * 100,
                queues,
            )
        )
    curve = HarvestCurve(targets)
    for url, relevant, is_target, elapsed, queues in pages:
        curve.add(url, relevant, is_target, elapsed_s=elapsed, queues=queues)
    before = _points_as_before(targets, pages)
    assert [tuple(p) for p in curve.points] == before
    assert len(before) == curve.pages > 300
    curve.to_csv(tmp_path / "m.csv")
    back = read_points_csv(tmp_path / "m.csv")
    assert [p.pages for p in back] == [p[0] for p in before]
    assert [p.url for p in back] == [p[5] for p in before]
    assert [p.waiting for p in back] == [p[9] for p in before]
    for k in (1, 17, curve.pages, curve.pages + 50):
        point = before[min(k, len(before)) - 1]
        assert curve.precision_at(k) == point[1]
        assert curve.recall_at(k) == point[2]
    if with_targets:
        budget = curve.pages + 30
        recalls = [p[2] for p in before]
        expected = (sum(recalls) + recalls[-1] * 30) / budget
        assert curve.auc_recall(budget) == pytest.approx(expected, rel=1e-12)
