"""The commands over a crawl's output folder (``scrapy search``, ``scrapy export``,
``python -m focused.output.report``) given a damaged or foreign folder: one line naming
the file and the problem, a non-zero exit, no traceback, and no output file left behind.

Each command runs for real in a subprocess from the project root (about 1.5 s each).
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from focused.output.export import ExportError, export
from focused.output.store import PageStore

PROJECT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.run(
        [sys.executable, *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120
    )


def scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return run("-m", "scrapy", *args)


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single ``focused: error:`` line of a run that failed with status 2."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("focused: error: "), proc.stderr[-3000:]
    return lines[0]


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- a page store SQLite cannot read -------------------------------------------------------
@pytest.fixture(params=["garbage", "foreign"])
def bad_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A folder whose ``pages.sqlite3`` is not a database, or a database of something
    else (no ``pages`` table); and what SQLite says about it."""
    folder = tmp_path / "crawl"
    folder.mkdir()
    db = folder / "pages.sqlite3"
    if request.param == "garbage":
        db.write_text("garbage\n")
        return folder, "file is not a database"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    return folder, "no such table: pages"


def test_search_of_a_bad_store(bad_store: tuple[Path, str]) -> None:
    folder, says = bad_store
    line = one_error(scrapy("search", "acid", "--dir", str(folder)))
    assert line == f"focused: error: cannot read the page store {folder}/pages.sqlite3: {says}"


def test_reindex_of_a_bad_store_changes_nothing(bad_store: tuple[Path, str]) -> None:
    folder, says = bad_store
    db = folder / "pages.sqlite3"
    before = db.read_bytes()
    line = one_error(scrapy("search", "--reindex", "--dir", str(folder)))
    assert line == f"focused: error: cannot reindex the page store {db}: {says}"
    if says == "file is not a database":
        assert db.read_bytes() == before
        return
    # the foreign database got no index table: the transaction was rolled back
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
def test_export_of_a_bad_store_writes_nothing(
    bad_store: tuple[Path, str], tmp_path: Path, fmt: str
) -> None:
    folder, says = bad_store
    output = tmp_path / "export" / ("pages.jsonl" if fmt == "jsonl" else "pages.warc.gz")
    proc = scrapy("export", "--format", fmt, "--output", str(output), "--dir", str(folder))
    line = one_error(proc)
    assert line == f"focused: error: cannot read the page store {folder}/pages.sqlite3: {says}"
    assert not output.parent.exists()  # not even its folder was made


def _damaged_midway(folder: Path, pages: int = 200) -> None:
    """A store of ``pages`` pages whose ``pages`` table has a damaged page in its middle:
    its first rows read, then SQLite says "database disk image is malformed"."""
    with PageStore(folder, index=False) as store:
        for i in range(pages):
            title = f"Page {i} " + "x" * 400  # a few rows per database page
            body = f"<html><title>{title}</title><p>acid</p></html>".encode()
            assert store.add({"url": f"http://h/p{i}", "title": title, "text": "acid"}, body)
    conn = sqlite3.connect(folder / "pages.sqlite3")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
        leaves = [
            n
            for (n,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'pages' AND pagetype = 'leaf'"
                " ORDER BY pageno"
            )
        ]
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    assert len(leaves) > 10
    with open(folder / "pages.sqlite3", "r+b") as fh:
        fh.seek((leaves[len(leaves) // 2] - 1) * size)
        fh.write(b"\xff" * 64)


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
def test_export_that_fails_midway_leaves_the_old_file(tmp_path: Path, fmt: str) -> None:
    """The store breaks after some pages were written: the output is not replaced by a
    part, and no temporary file stays."""
    folder = tmp_path / "crawl"
    _damaged_midway(folder)
    out_dir = tmp_path / "export"
    out_dir.mkdir()
    output = out_dir / f"pages.{fmt}"
    output.write_bytes(b"an earlier export\n")
    with pytest.raises(ExportError, match="database disk image is malformed") as err:
        export(folder, fmt, output)
    assert str(folder / "pages.sqlite3") in str(err.value)
    assert output.read_bytes() == b"an earlier export\n"
    assert files(out_dir) == [output.name]
    # the same through the command: one line
    fresh = out_dir / f"new.{fmt}"
    proc = scrapy("export", "--format", fmt, "--output", str(fresh), "--dir", str(folder))
    assert "database disk image is malformed" in one_error(proc)
    assert files(out_dir) == [output.name]


def test_export_to_an_output_that_cannot_be_written(tmp_path: Path) -> None:
    folder = tmp_path / "crawl"
    with PageStore(folder, index=False) as store:
        store.add({"url": "http://h/a", "title": "A", "text": "acid"}, b"<html>acid</html>")
    target = tmp_path / "a-folder"
    target.mkdir()
    proc = scrapy("export", "--format", "jsonl", "--output", str(target), "--dir", str(folder))
    assert one_error(proc).startswith(f"focused: error: cannot write {target}: ")
    assert files(target) == []


# --- an output that is one of the crawl's own files ---------------------------------------
def _crawl_folder(tmp_path: Path) -> Path:
    """A crawl's output folder: its page store (with a segment), metrics and summary."""
    folder = tmp_path / "crawl"
    with PageStore(folder) as store:
        store.add({"url": "http://h/a", "title": "Acid", "text": "acid"}, b"<html>acid</html>")
    (folder / "metrics.csv").write_text(GOOD_METRICS, encoding="utf-8")
    (folder / "summary.json").write_text(GOOD_SUMMARY, encoding="utf-8")
    return folder


def every_file(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


#: outputs that are, or lead to, the crawl's own files: how to make them, what they are
OWN_OUTPUTS = {
    "store": lambda folder: folder / "pages.sqlite3",
    "wal": lambda folder: folder / "pages.sqlite3-wal",
    "dotdot": lambda folder: folder / "segments" / ".." / "pages.sqlite3",
    "relative": lambda folder: Path(os.path.relpath(folder / "pages.sqlite3", PROJECT)),
    "segment": lambda folder: next((folder / "segments").iterdir()),
    "metrics": lambda folder: folder / "metrics.csv",
    "symlink": lambda folder: _linked(folder, os.symlink),
    "hardlink": lambda folder: _linked(folder, os.link),
}


def _linked(folder: Path, link: Any) -> Path:
    """A link, outside the crawl folder, to its page store."""
    path = folder.parent / "elsewhere.jsonl"
    link(folder / "pages.sqlite3", path)
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
@pytest.mark.parametrize("kind", sorted(OWN_OUTPUTS))
def test_export_never_writes_over_the_crawls_own_files(tmp_path: Path, kind: str, fmt: str) -> None:
    """``--output DIR/pages.sqlite3 --dir DIR`` replaced the page store with the export:
    each of the crawl's files, however named, is refused in one line, nothing written."""
    folder = _crawl_folder(tmp_path)
    output = OWN_OUTPUTS[kind](folder)
    before = every_file(folder)
    proc = scrapy("export", "--format", fmt, "--output", str(output), "--dir", str(folder))
    line = one_error(proc)
    assert line.startswith(f"focused: error: cannot export to {output}: it is the crawl's own ")
    assert every_file(folder) == before  # the store, its segments, metrics... as they were


def test_export_into_the_crawl_folder_under_a_name_of_its_own(tmp_path: Path) -> None:
    """An export of its own name may go into the crawl folder, and be written again."""
    folder = _crawl_folder(tmp_path)
    output = folder / "pages.jsonl"
    for _ in range(2):
        proc = scrapy("export", "--format", "jsonl", "--output", str(output), "--dir", str(folder))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert output.read_text(encoding="utf-8").count("\n") == 1


def test_report_never_writes_over_the_crawls_own_files(tmp_path: Path) -> None:
    """``scrapy report --output`` may rewrite the crawl's report.html, no other of its files."""
    folder = _crawl_folder(tmp_path)
    before = every_file(folder)
    for name in ("pages.sqlite3", "summary.json", "segments/../metrics.csv"):
        output = folder / name
        line = one_error(scrapy("report", "--dir", str(folder), "--output", str(output)))
        assert line.startswith(f"focused: error: cannot write the report to {output}: it is the")
        assert every_file(folder) == before
    proc = scrapy("report", "--dir", str(folder), "--output", str(folder / "report.html"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (folder / "report.html").is_file()


# --- python -m focused.output.report -----------------------------------------------------
GOOD_SUMMARY = '{"pages": 2, "relevant": 1, "precision": 0.5, "recall": null, "targets": null}'
GOOD_METRICS = (
    "pages,precision,recall,relevant_pages,targets_found,url,relevant,is_target\n"
    "1,1.0,,1,0,http://h/a,1,\n2,0.5,,1,0,http://h/b,0,\n"
)


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("summary.json", "garbage\n", "summary.json is not valid JSON: Expecting value"),
        ("summary.json", "[1, 2]\n", "summary.json is not a crawl summary (a JSON object)"),
        ("summary.json", '{"pages": "many"}', "summary.json is not a crawl summary: 'pages'"),
        ("metrics.csv", "garbage\n1\n", "metrics.csv is not a crawl's metrics: no column 'pages'"),
        ("metrics.csv", "pages,precision\nx,1\n", "metrics.csv is not a crawl's metrics: invalid"),
    ],
)
def test_report_of_a_damaged_file(tmp_path: Path, name: str, text: str, says: str) -> None:
    (tmp_path / "summary.json").write_text(GOOD_SUMMARY, encoding="utf-8")
    (tmp_path / "metrics.csv").write_text(GOOD_METRICS, encoding="utf-8")
    assert run("-m", "focused.output.report", str(tmp_path)).returncode == 0  # both good
    (tmp_path / name).write_text(text, encoding="utf-8")
    line = one_error(run("-m", "focused.output.report", str(tmp_path)))
    assert line.startswith(f"focused: error: {tmp_path}/{says}"), line


# --- scrapy report, scrapy search: bad arguments -----------------------------------------
def test_report_of_an_empty_folder_is_an_error_like_a_missing_one(tmp_path: Path) -> None:
    """An empty folder gave a report.html of nothing, and exit status 0."""
    missing = one_error(scrapy("report", "--dir", str(tmp_path / "nowhere")))
    assert missing == f"focused: error: no crawl output folder {tmp_path / 'nowhere'}"
    line = one_error(scrapy("report", "--dir", str(tmp_path)))
    assert line.startswith(f"focused: error: no crawl output in {tmp_path} (none of ")
    assert files(tmp_path) == []  # no report.html
    # a crawl killed before its end left its page store only: that is reported
    with PageStore(tmp_path, index=False) as store:
        store.add({"url": "http://h/a", "title": "A", "text": "acid"}, b"<html>acid</html>")
    proc = scrapy("report", "--dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "report.html").is_file()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["search", ""], 'give a query: scrapy search "催化剂 catalyst"'),
        (["search", "  "], 'give a query: scrapy search "催化剂 catalyst"'),
        (["search"], 'give a query: scrapy search "催化剂 catalyst"'),
        (["search", "acid", "--limit", "-1"], "--limit must be at least 1, got -1"),
        (["search", "acid", "--limit", "0"], "--limit must be at least 1, got 0"),
    ],
)
def test_search_without_a_query_or_with_no_limit(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """Each printed "no pages found" with exit status 0 (or, with no query at all,
    Scrapy's usage text)."""
    with PageStore(tmp_path) as store:
        store.add({"url": "http://h/a", "title": "Acid", "text": "acid"}, b"<html>acid</html>")
    assert one_error(scrapy(*args, "--dir", str(tmp_path))) == f"focused: error: {says}"
    found = scrapy("search", "acid", "--limit", "1", "--dir", str(tmp_path))
    assert found.returncode == 0 and "http://h/a" in found.stdout, found.stderr[-3000:]


def test_export_writes_into_a_pipe_and_through_a_link(tmp_path: Path) -> None:
    """A pipe (as ``/dev/stdout`` or ``>(...)`` is) is written as it is, not replaced by a
    file renamed over it; a symbolic link's target gets the export, the link stays."""
    import threading

    folder = tmp_path / "crawl"
    with PageStore(folder, index=False) as store:
        for i in range(3):
            body = f"<html><title>P{i}</title><p>acid</p></html>".encode()
            assert store.add({"url": f"http://h/p{i}", "title": f"P{i}", "text": "acid"}, body)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert export(folder, "jsonl", fifo) == 3
    reader.join(30)
    assert fifo.is_fifo() and got and got[0].count(b"\n") == 3
    target = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert export(folder, "jsonl", link) == 3
    assert link.is_symlink() and target.read_bytes().count(b"\n") == 3


# --- scrapy export --output -: the standard output, and a reader that goes away ----------
def _big_store(folder: Path, pages: int = 100) -> None:
    """A store whose JSON lines (about 1.3 MB) are far more than a pipe holds (64 KiB), so
    a reader that stops early leaves the export writing into a closed pipe."""
    words = " ".join(f"acid{j}" for j in range(1500))
    with PageStore(folder, index=False) as store:
        for i in range(pages):
            body = f"<html><title>P{i}</title><p>{words}</p></html>".encode()
            assert store.add({"url": f"http://h/p{i}", "title": f"P{i}", "text": "acid"}, body)


def _export_to_stdout(folder: Path, fmt: str) -> list[str]:
    """The command that exports ``folder`` as ``fmt`` to the standard output."""
    args = ["export", "--format", fmt, "--output", "-", "--dir", str(folder)]
    return [sys.executable, "-m", "scrapy", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
def test_export_to_stdout(tmp_path: Path, fmt: str) -> None:
    """``--output -`` was a file named ``-`` in the current folder."""
    from warcio.archiveiterator import ArchiveIterator

    folder = tmp_path / "crawl"
    _big_store(folder, pages=5)
    try:
        proc = subprocess.run(
            _export_to_stdout(folder, fmt),
            cwd=PROJECT,
            env=_env(),
            capture_output=True,
            timeout=120,
        )
        assert not (PROJECT / "-").exists()
    finally:
        (PROJECT / "-").unlink(missing_ok=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.decode().splitlines() == [f"focused: wrote 5 pages to stdout ({fmt})"]
    if fmt == "jsonl":
        rows = [json.loads(line) for line in proc.stdout.decode().splitlines()]
        assert [r["url"] for r in rows] == [f"http://h/p{i}" for i in range(5)]
    else:
        kinds = [r.rec_type for r in ArchiveIterator(io.BytesIO(proc.stdout))]
        assert kinds[0] == "warcinfo" and sorted(kinds[1:]) == ["request"] * 5 + ["response"] * 5


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
def test_export_into_a_pipe_closed_early(tmp_path: Path, fmt: str) -> None:
    """``scrapy export ... --output - | head -1``: the reader goes after one line; one
    error line and exit status 2 (it was a BrokenPipeError traceback)."""
    folder = tmp_path / "crawl"
    _big_store(folder)
    export_proc = subprocess.Popen(
        _export_to_stdout(folder, fmt),
        cwd=PROJECT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert export_proc.stdout is not None and export_proc.stderr is not None
    head = subprocess.run(
        ["head", "-1"], stdin=export_proc.stdout, capture_output=True, text=True, timeout=120
    )
    export_proc.stdout.close()  # only head reads it
    stderr = export_proc.stderr.read()
    export_proc.stderr.close()
    try:
        returncode = export_proc.wait(120)
    finally:
        (PROJECT / "-").unlink(missing_ok=True)
    assert head.returncode == 0 and head.stdout.count("\n") == 1
    if fmt == "jsonl":
        assert json.loads(head.stdout)["url"] == "http://h/p0"
    else:
        assert head.stdout == "WARC/1.1\n"
    assert returncode == 2, stderr[-3000:]
    assert stderr.splitlines() == [
        "focused: error: cannot write to stdout: its reader closed the pipe before the"
        " export ended (broken pipe)"
    ], stderr[-3000:]


# --- scrapy report / export --output: a pipe, /dev/stdout, a link, a path that is none ----
def _read_fifo(fifo: Path) -> tuple[Any, list[bytes]]:
    import threading

    got: list[bytes] = []
    # a daemon: a command that renames a file over the pipe leaves it waiting for ever
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader, got


@pytest.mark.parametrize("command", ["report", "export"])
def test_report_and_export_write_through_a_pipe_dev_stdout_and_a_link(
    tmp_path: Path, command: str
) -> None:
    """``scrapy report --output`` renamed a file over whatever it named: a named pipe (and,
    run as root, ``/dev/null`` or ``/dev/full``) became a regular file, a symbolic link
    was replaced by the report instead of its target getting it, and ``/dev/stdout``
    into a pipe was ``No such file or directory`` (``scrapy export`` too). Now a pipe or
    a device is written as it is, a link's target gets the file, and the line that
    says where it went is on stderr when it went into a stream (it was appended to the
    report or export on stdout)."""
    folder = _crawl_folder(tmp_path)
    args = (
        ["report", "--dir", str(folder)]
        if command == "report"
        else ["export", "--format", "jsonl", "--dir", str(folder)]
    )
    first = b"<!DOCTYPE html>" if command == "report" else b'{"url": "http://h/a"'

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = _read_fifo(fifo)
    proc = scrapy(*args, "--output", str(fifo))
    reader.join(10)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert fifo.is_fifo() and got and got[0].startswith(first), got

    target = tmp_path / "target.out"
    link = tmp_path / "link.out"
    link.symlink_to(target)
    proc = scrapy(*args, "--output", str(link))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert link.is_symlink() and target.read_bytes().startswith(first)

    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    # "-" is stdout for both (report wrote a file named "-" in the current folder)
    for output in ("/dev/stdout", "-"):
        piped = subprocess.run(
            [sys.executable, "-m", "scrapy", *args, "--output", output],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert piped.returncode == 0, piped.stderr[-3000:]
        assert piped.stdout.startswith(first) and b"focused:" not in piped.stdout
        assert piped.stdout.rstrip().endswith(b"</html>" if command == "report" else b"}")
        if output == "/dev/stdout":  # where it went, on stderr
            assert piped.stderr.decode().startswith("focused: ")
    assert not (PROJECT / "-").exists()


@pytest.mark.parametrize("command", ["report", "export"])
def test_report_and_export_to_a_path_that_cannot_be_a_file(tmp_path: Path, command: str) -> None:
    """``scrapy report --output`` a folder or a path under a file: an ``IsADirectoryError``
    or ``FileExistsError`` traceback, exit 1 (``scrapy export`` said "File exists" of a
    path under a file). Now one line each, exit 2, nothing left there."""
    folder = _crawl_folder(tmp_path)
    args = (
        ["report", "--dir", str(folder)]
        if command == "report"
        else ["export", "--format", "jsonl", "--dir", str(folder)]
    )
    verb = "cannot write the report to" if command == "report" else "cannot write"
    a_folder = tmp_path / "a-folder"
    a_folder.mkdir()
    line = one_error(scrapy(*args, "--output", str(a_folder)))
    assert line == f"focused: error: {verb} {a_folder}: Is a directory"
    assert files(a_folder) == []
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    under = a_file / "out.html"
    line = one_error(scrapy(*args, "--output", str(under)))
    assert line == f"focused: error: {verb} {under}: Not a directory"
    assert a_file.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder", "crawl"]


@pytest.mark.parametrize("json_lines", [False, True], ids=["text", "json"])
def test_search_into_a_closed_pipe_or_a_full_disk(tmp_path: Path, json_lines: bool) -> None:
    """``scrapy search QUERY --json | head -1``: a ``BrokenPipeError`` traceback, exit 1;
    stdout on a full disk (``> /dev/full``): an ``OSError`` traceback. Now one line each
    on stderr, exit status 2, as ``scrapy export --output -`` does."""
    folder = tmp_path / "crawl"
    with PageStore(folder) as store:
        for i in range(5):
            body = f"<html><title>P{i}</title><p>acid</p></html>".encode()
            assert store.add({"url": f"http://h/p{i}", "title": f"P{i}", "text": "acid"}, body)
    cmd = [sys.executable, "-m", "scrapy", "search", "acid", "--dir", str(folder)]
    cmd += ["--json"] if json_lines else []
    search_proc = subprocess.Popen(
        cmd, cwd=PROJECT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert search_proc.stdout is not None
    search_proc.stdout.close()  # the reader is gone before the first hit is written
    _, stderr = search_proc.communicate(timeout=120)
    assert search_proc.returncode == 2, stderr[-3000:]
    assert stderr.splitlines() == [
        "focused: error: cannot write the hits to stdout: its reader closed the pipe (broken pipe)"
    ], stderr[-3000:]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            cmd,
            cwd=PROJECT,
            env=_env(),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == [
        "focused: error: cannot write the hits to stdout: No space left on device"
    ], proc.stderr[-3000:]


# --- a page store of an earlier version ---------------------------------------------------
def _earlier_store(folder: Path) -> None:
    """A store as the first versions wrote it: one gzip file per page (``html/``), no
    ``record_offset`` / ``record_length`` columns, no ``segments`` table, no full-text
    index."""
    with PageStore(folder, layout="files") as store:
        for i in range(2):
            body = f"<html><title>Acid {i}</title><body><p>acid base {i}</p></body></html>"
            item = {"url": f"http://h/p{i}", "title": f"Acid {i}", "text": f"acid base {i}"}
            assert store.add(item, body.encode())
    conn = sqlite3.connect(folder / "pages.sqlite3")
    for sql in (
        "DROP TABLE pages_fts",
        "DROP TABLE segments",
        "ALTER TABLE pages DROP COLUMN record_offset",
        "ALTER TABLE pages DROP COLUMN record_length",
    ):
        conn.execute(sql)
    conn.commit()
    conn.close()


def test_a_store_of_an_earlier_version_is_reindexed_searched_exported_and_read(
    tmp_path: Path,
) -> None:
    """The README says a store of the earlier layout stays readable, but ``scrapy search
    --reindex`` (which its missing index calls for), ``scrapy export`` and ``python -m
    focused.output.store get`` each stopped with ``no such column: record_offset``: only
    a crawl, which opens the store for writing, added the column. Now the tools that
    only read it read the missing columns as NULL (a page of the earlier layout), and
    leave the table as it was."""
    folder = tmp_path / "crawl"
    _earlier_store(folder)
    proc = scrapy("search", "--reindex", "--dir", str(folder))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"focused: indexed 2 pages in {folder}"
    found = scrapy("search", "base 1", "--all", "--json", "--dir", str(folder))
    assert found.returncode == 0, found.stderr[-3000:]
    assert [json.loads(x)["url"] for x in found.stdout.splitlines()] == ["http://h/p1"]
    out = tmp_path / "pages.jsonl"
    proc = scrapy("export", "--format", "jsonl", "--output", str(out), "--dir", str(folder))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["url"], r["record_offset"], r["text"]) for r in rows] == [
        ("http://h/p0", None, "acid base 0"),
        ("http://h/p1", None, "acid base 1"),
    ]
    warc = tmp_path / "pages.warc.gz"
    proc = scrapy("export", "--format", "warc", "--output", str(warc), "--dir", str(folder))
    assert proc.returncode == 0 and "wrote 2 pages" in proc.stdout, proc.stderr[-3000:]
    got = run("-m", "focused.output.store", "get", "http://h/p1", "--dir", str(folder))
    assert got.returncode == 0, got.stderr[-3000:]
    assert "acid base 1" in got.stdout
    conn = sqlite3.connect(folder / "pages.sqlite3")
    have = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    conn.close()
    assert "record_offset" not in have  # read, not changed
