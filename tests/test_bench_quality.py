"""Quality benchmark: the oracle strategy, the harness's planning and, end to end,
``make bench-quality-quick`` (real Scrapy crawls of the wikispeedia site over loopback HTTP)
whose CSV is checked against each crawl's own ``pages.sqlite3``."""

from __future__ import annotations

import csv
import importlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

from bench import quality
from bench.oracle import OracleStrategy
from focused.strategies import Link, Parent

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wikispeedia-site"
needs_data = pytest.mark.skipif(
    not (DATA / "labels.tsv").is_file(), reason=f"wikispeedia site not at {DATA}"
)


def _parent(depth: int = 0) -> Parent:
    return Parent(
        url="http://h/wiki/A.html",
        page_relevance=0.0,
        relevant=False,
        body_relevance=0.0,
        m=0.0,
        hops=0,
        depth=depth,
        link_count=3,
    )


# --- the oracle (pure) ----------------------------------------------------------------
def test_oracle_puts_target_links_first_then_breadth_first_fifo() -> None:
    oracle = OracleStrategy.from_params(
        SimpleNamespace(targets=frozenset({"http://h/wiki/T%26U.html"}))
    )
    assert oracle.name == "oracle" and not oracle.anneal
    shallow_first = oracle.score(_parent(0), Link("http://h/wiki/B.html", 0.0))
    shallow_second = oracle.score(_parent(0), Link("http://h/wiki/C.html", 0.9))
    deep_target = oracle.score(_parent(5), Link("http://h/wiki/T%26U.html#x", 0.0))  # canonical
    deeper = oracle.score(_parent(1), Link("http://h/wiki/D.html", 1.0))
    assert deep_target.priority > shallow_first.priority > shallow_second.priority
    assert shallow_second.priority > deeper.priority  # depth 1 before depth 2, anchors ignored
    assert oracle.seed().priority > deep_target.priority
    assert 0.0 <= deeper.value < shallow_first.value < deep_target.value <= 1.0


def test_oracle_without_targets_is_plain_breadth_first() -> None:
    oracle = OracleStrategy()
    a = oracle.score(_parent(2), Link("http://h/wiki/A.html", 1.0))
    b = oracle.score(_parent(0), Link("http://h/wiki/B.html", 0.0))
    assert b.priority > a.priority


def test_the_oracle_crawl_names_its_class_and_keeps_its_label(tmp_path: Path) -> None:
    """The oracle is not one of the package's strategies: its crawl selects it by dotted
    path; its run folder (and so its rows) still say ``oracle``."""
    site = _site(tmp_path)
    args = quality.build_parser().parse_args(["--topic", "chemistry", "--seeds", "S.html"])
    (group,) = quality.plan(args, site)
    assert quality.strategies_of(quality.build_parser().parse_args(["--strategies", "bfs"])) == [
        "oracle",
        "bfs",
    ]
    commands = {}
    for name in ("oracle", "bfs"):
        job = quality.Job(group, name, None)
        commands[name] = quality.crawl_command(
            job,
            base="http://127.0.0.1:1",
            labels=tmp_path / "labels.tsv",
            out_dir=tmp_path / job.out_dir,
            seed=42,
            scheduler="",
            log_level="INFO",
        )
        assert job.out_dir.name == name
    assert "FOCUSED_STRATEGY=bench.oracle.OracleStrategy" in commands["oracle"]
    assert "FOCUSED_STRATEGY=bfs" in commands["bfs"]
    assert commands["oracle"][:7] == [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "focused",
        "-a",
        "topic=chemistry",
    ]
    module, _, cls = quality.ORACLE_CLASS.rpartition(".")
    assert getattr(importlib.import_module(module), cls) is OracleStrategy


# --- planning (no crawl) --------------------------------------------------------------
def test_seed_sets_and_lists_parse_like_the_make_variables() -> None:
    assert quality._seed_sets(["Chemistry.html Water.html,Iron.html,Salt.html"]) == [
        ("Chemistry.html",),
        ("Water.html", "Iron.html", "Salt.html"),
    ]
    assert quality._seed_sets(["A.html", "B.html,C.html"]) == [("A.html",), ("B.html", "C.html")]
    assert quality._split(["oracle bfs", "gao,bsbs"]) == ["oracle", "bfs", "gao", "bsbs"]
    assert quality.page_name("http://127.0.0.1:1/wiki/AT%26T.html") == "AT&T.html"
    assert quality.page_url("http://h:1/", "AT&T.html") == "http://h:1/wiki/AT%26T.html"


def test_kendall_tau_and_ranking() -> None:
    assert quality.kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert quality.kendall_tau(["a", "b", "c"], ["c", "b", "a"]) == -1.0
    rows = [
        {"strategy": "oracle", "auc_recall": 1.0},
        {"strategy": "bfs", "auc_recall": 0.3},
        {"strategy": "gao", "auc_recall": 0.5},
        {"strategy": "bfs", "auc_recall": 0.5},
    ]
    assert quality.ranking(rows) == ["gao", "bfs"]


def _site(tmp_path: Path) -> quality.Site:
    """A 6-page labelled web: S -> A -> T1 -> T2, S -> B; T3 is unreachable."""
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    links = {"S": ["A", "B"], "A": ["T1"], "T1": ["T2"], "T2": [], "B": [], "T3": ["T1"]}
    for name, out in links.items():
        hrefs = "".join(f'<a href="{o}.html">{o}</a>' for o in out)
        (wiki / f"{name}.html").write_text(f"<html><body>{hrefs}</body></html>")
    (tmp_path / "labels.tsv").write_text(
        "# path\tcategory\n"
        "/wiki/T1.html\tsubject.Science.Chemistry.Compounds\n"
        "/wiki/T2.html\tsubject.Science.Chemistry\n"
        "/wiki/T3.html\tsubject.Science.Chemistry\n"
        "/wiki/A.html\tsubject.Science.ChemistryX\n"
        "/wiki/B.html\tsubject.Geography\n"
    )
    return quality.Site.load(tmp_path)


def test_budget_counts_only_targets_reachable_from_the_seeds(tmp_path: Path) -> None:
    site = _site(tmp_path)
    assert site.targets("subject.Science.Chemistry") == {"T1.html", "T2.html", "T3.html"}
    args = quality.build_parser().parse_args(
        ["--topic", "chemistry", "--seeds", "S.html B", "--budget", "1.5"]
    )
    with pytest.raises(quality.BenchError, match="no subject.Science.Chemistry page"):
        quality.plan(args, site)
    args = quality.build_parser().parse_args(["--topic", "chemistry", "--seeds", "S.html A"])
    groups = quality.plan(args, site)
    assert [g.seeds for g in groups] == [("S.html",), ("A.html",)]
    assert [sorted(g.targets) for g in groups] == [["T1.html", "T2.html"]] * 2
    assert [g.budget for g in groups] == [4, 4]
    assert all(g.off_topic_start for g in groups)
    assert not any(g.held_out for g in groups)


def test_unknown_seed_page_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    _site(tmp_path)
    code = quality.main(
        ["--topic", "chemistry", "--seeds", "Nowhere.html", "--data", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: seed 'Nowhere.html'") and err.count("\n") == 1


def test_auto_seed_sets_start_on_the_hub_and_two_clicks_away(tmp_path: Path) -> None:
    site = _site(tmp_path)
    on, off = site.auto_seed_sets(site.targets("subject.Science.Chemistry"))
    assert on == ("T1.html",)  # linked from T3, a target
    assert off[0] not in site.targets("subject.Science.Chemistry")
    assert not {"T1.html", "T2.html", "T3.html"} & set(site.graph[off[0]])


# --- end to end: make bench-quality-quick ----------------------------------------------
def _labelled_targets(prefix: str) -> set[str]:
    found = set()
    for line in (DATA / "labels.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        path, category = line.split("\t", 1)
        if category == prefix or category.startswith(prefix + "."):
            found.add(unquote(path))
    return found


@needs_data
@pytest.mark.integration
def test_make_bench_quality_quick_end_to_end(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "bench"
    proc = subprocess.run(
        ["make", "-s", "bench-quality-quick", f"PY={sys.executable}", f"BENCH_QUICK_OUT={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    with (out / "quality.csv").open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == quality.CSV_COLUMNS
        rows = list(reader)
    assert sorted(r["strategy"] for r in rows) == sorted(quality.STRATEGY_ORDER)
    by_strategy = {r["strategy"]: r for r in rows}
    oracle = by_strategy["oracle"]
    # SOURCE.md: 187 of the 191 chemistry pages are reachable from Chemistry.html.
    assert {int(r["targets"]) for r in rows} == {187}
    budget = round(0.25 * 187)
    assert {int(r["budget"]) for r in rows} == {budget}
    for row in rows:
        assert float(oracle["recall"]) >= float(row["recall"]) - 0.02, row
        assert float(row["oracle_recall"]) == pytest.approx(float(oracle["recall"]))
    assert float(oracle["recall_over_oracle"]) == pytest.approx(1.0)
    assert float(oracle["auc_recall"]) == pytest.approx(1.0)

    targets = _labelled_targets("subject.Science.Chemistry")
    runs = out / "runs" / "cdefault" / "chemistry__Chemistry"
    for strategy, row in by_strategy.items():
        db = runs / strategy / "pages.sqlite3"
        with sqlite3.connect(db) as conn:
            urls = [u for (u,) in conn.execute("SELECT url FROM pages ORDER BY id")]
        assert len(urls) >= budget, strategy  # the crawl reached the budget
        crawled = urls[:budget]
        assert all(u.startswith("http://127.0.0.1:") for u in crawled)
        found = sum(unquote(urlsplit(u).path) in targets for u in crawled)
        assert int(row["pages"]) == budget
        assert int(row["targets_found"]) == found, strategy
        assert float(row["recall"]) == pytest.approx(found / 187, abs=1e-6), strategy
        assert float(row["precision"]) == pytest.approx(found / budget, abs=1e-6), strategy
        assert (runs / strategy / "crawl.log").stat().st_size > 0
    # the oracle, knowing the labels, fetches almost only targets (with 8 requests in
    # flight later requests overtake earlier ones, so not exactly only targets)
    assert float(oracle["precision"]) >= 0.75
    assert all(float(oracle["precision"]) >= float(r["precision"]) - 0.02 for r in rows)
    assert float(by_strategy["bfs"]["precision"]) < 0.9

    md = (out / "quality.md").read_text(encoding="utf-8")
    assert "| chemistry | Chemistry.html | on-topic | **oracle** |" in md
    assert "concurrency of the tables below" in md
    png = out / "chemistry__Chemistry.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_repeated_crawls_report_the_median_and_range_per_row(tmp_path: Path) -> None:
    """--repeat N: one row per (group, strategy), the median over its crawls, each crawl
    divided by the oracle of its own repetition; a failed crawl is left out."""
    site = _site(tmp_path)
    args = quality.build_parser().parse_args(
        ["--topic", "chemistry", "--seeds", "S.html", "--repeat", "3"]
    )
    assert args.repeat == 3
    (group,) = quality.plan(args, site)
    targets = frozenset(quality.page_url("http://site", t) for t in group.targets)

    def result(strategy: str, rep: int, found: int, error: str = "") -> quality.Result:
        curve = quality.HarvestCurve(targets)
        names = ["T1.html", "T2.html"][:found] + ["A.html", "B.html", "S.html"]
        for name in names[: group.budget]:
            curve.add(quality.page_url("http://site", name), False, name in group.targets)
        return quality.Result(quality.Job(group, strategy, None, rep), curve, 1.0, error)

    results = [
        result("oracle", 0, 2),
        result("oracle", 1, 1),  # a bad oracle crawl: its repetition's ratios double
        result("oracle", 2, 2),
        result("bfs", 0, 0),
        result("bfs", 1, 1),
        result("bfs", 2, 2, error="exit 1"),
        result("gao", 0, 1),
        result("gao", 1, 0),
        result("gao", 2, 2),
    ]
    assert quality.Job(group, "bfs", None, 2).out_dir.name == "bfs.r2"
    assert quality.Job(group, "bfs", None).out_dir.name == "bfs"
    rows = {r["strategy"]: r for r in quality.rows_of(results)}
    assert len(rows) == 3
    bfs, gao = rows["bfs"], rows["gao"]
    # bfs: ratios 0/1 and 0.5/0.5 -> median of [0, 1] = 0.5; the failed crawl left out
    assert bfs["repeats"] == 2 and not bfs["_error"]
    assert bfs["recall_over_oracle"] == pytest.approx(0.5)
    assert (bfs["recall_over_oracle_min"], bfs["recall_over_oracle_max"]) == (0.0, 1.0)
    # gao: ratios 0.5, 0.0, 1.0 -> median 0.5, the crawl of repetition 0 is the median one
    assert gao["repeats"] == 3
    assert gao["recall_over_oracle"] == pytest.approx(0.5)
    assert gao["recall"] == pytest.approx(0.5)  # median of 0.5, 0, 1
    assert gao["targets_found"] == 1
    assert gao["_curve"] is results[6].curve
    assert rows["oracle"]["recall_over_oracle"] == pytest.approx(1.0)

    out = tmp_path / "q.csv"
    quality.write_csv(list(rows.values()), out)
    with out.open(newline="", encoding="utf-8") as fh:
        written = {r["strategy"]: r for r in csv.DictReader(fh)}
    assert written["gao"]["repeats"] == "3"
    assert float(written["gao"]["recall_over_oracle_max"]) == pytest.approx(1.0)
    table = "\n".join(quality._table([gao]))
    assert "| 0.500 (0.00-1.00) |" in table
    # all crawls of a row failed: the row says so
    failed = quality.rows_of([result("oracle", 0, 2), result("bfs", 0, 0, error="boom")])
    assert [r["_error"] for r in failed if r["strategy"] == "bfs"] == ["boom"]


# --- which scheduler the crawls use when --scheduler is not given ---------------------
def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_scheduler_is_never_swapped_for_scrapys_silently(tmp_path: Path, capsys) -> None:
    root = tmp_path / "copy"
    (root / "focused").mkdir(parents=True)
    shutil.copy(ROOT / "focused" / "scheduler.py", root / "focused" / "scheduler.py")
    # a copy outside git (as `git archive` makes): its scheduler.py is used, and said so
    assert quality.git_tracks(root / "focused" / "scheduler.py", root) is None
    assert quality.default_scheduler(root) == ""
    err = capsys.readouterr().err
    assert "not a git checkout" in err and "project's scheduler" in err and err.count("\n") == 1
    # in a checkout that does not track the file: refused, in one line
    _git(root, "init", "-q")
    with pytest.raises(quality.BenchError, match="not tracked by git") as refused:
        quality.default_scheduler(root)
    assert "\n" not in str(refused.value) and "--scheduler" in str(refused.value)
    _git(root, "add", "focused/scheduler.py")  # tracked: the project's, nothing said
    assert quality.default_scheduler(root) == ""
    assert capsys.readouterr().err == ""
    (root / "focused" / "scheduler.py").unlink()  # an older tree without one: said
    assert quality.default_scheduler(root) == quality.SCRAPY_SCHEDULER
    assert "Scrapy's own scheduler" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_benchmark_in_a_checkout_that_does_not_track_the_scheduler_stops_first(
    tmp_path: Path,
) -> None:
    if quality.git_tracks(ROOT / "focused" / "scheduler.py", ROOT) is not True:
        pytest.skip("the project is not a git checkout that tracks focused/scheduler.py")
    copy = tmp_path / "copy"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):  # the working tree's files
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, copy / name)
    _git(copy, "init", "-q")  # a checkout in which nothing is tracked yet
    site = tmp_path / "site"
    site.mkdir()
    _site(site)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bench.quality", "--topic", "chemistry", "--seeds", "S.html"]
    cmd += ["--data", str(site), "--out", str(out), "--strategies", "bfs", "--timeout", "60"]
    done = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert "scheduler.py is not tracked by git" in done.stderr
    assert not out.exists()  # nothing crawled, nothing written


def test_the_static_server_queues_a_burst(tmp_path: Path) -> None:
    """The benchmark's wikispeedia server had the stdlib's listen queue of 5: the kernel
    dropped the SYNs of a crawl's 16 connections at once over it, and each of those
    downloads waited a second for the client's retry, inside the measured crawl."""
    import socket

    from bench.server import StaticServer

    (tmp_path / "a.html").write_text("<title>a</title>")
    server = StaticServer(tmp_path)
    server.start()
    httpd = server._httpd
    assert httpd is not None
    httpd.shutdown()  # the socket listens on, nobody accepts
    socks: list[socket.socket] = []
    try:
        for _ in range(64):
            socks.append(socket.create_connection(httpd.server_address[:2], timeout=0.5))
    finally:
        for sock in socks:
            sock.close()
        httpd.server_close()
