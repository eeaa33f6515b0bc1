"""The crash-safe page store (focused/output/store.py) on real SQLite and real files."""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from focused.output import segments
from focused.output.store import PageStore, file_path_for, migrate, read_body, stored_pages

ROOT = Path(__file__).resolve().parents[1]


def record(url: str, **extra: object) -> dict[str, object]:
    return {"url": url, "title": "T", "relevant": True, "is_target": None, **extra}


def committed_rows(out: Path) -> int:
    """Rows another process would see (committed only)."""
    conn = sqlite3.connect(out / "pages.sqlite3")
    try:
        return conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    finally:
        conn.close()


def test_round_trip(tmp_path: Path) -> None:
    body = "<html><title>Säure</title>é</html>".encode() * 50
    rec = record(
        "http://h/wiki/Acid.html",
        title="Säure",
        page_relevance=2.5,
        is_target=True,
        depth=3,
        m=80.0,
        fetched_at=1700000000.5,
        status=200,
        encoding="utf-8",
        strategy="genetic",
        body=b"ignored",
    )
    with PageStore(tmp_path) as store:
        assert store.add(rec, body) is True
        digest = hashlib.sha256(body).hexdigest()
        assert rec["content_hash"] == digest
        assert str(rec["file_path"]).startswith("segments/")
        assert str(rec["file_path"]).endswith(".warc.gz")
        offset, length = rec["record_offset"], rec["record_length"]
        assert isinstance(offset, int) and offset > 0 and isinstance(length, int)
        assert read_body(tmp_path, rec["file_path"], offset, length) == body  # one seek
        assert not (tmp_path / "html").exists()
        assert store.body("http://h/wiki/Acid.html") == body
        assert store.has("http://h/wiki/Acid.html") and not store.has("http://h/other")
        assert store.count() == 1 and store.urls() == ["http://h/wiki/Acid.html"]
        row = store.get("http://h/wiki/Acid.html")
        assert row is not None
        assert row["title"] == "Säure" and row["relevant"] is True and row["is_target"] is True
        assert row["page_relevance"] == 2.5 and row["depth"] == 3 and row["m"] == 80.0
        assert row["fetched_at"] == 1700000000.5 and row["strategy"] == "genetic"
        assert row["anchor_relevance"] == 0.0  # missing keys take the column default
        assert store.check(verify=True) == []
    with PageStore(tmp_path) as again:  # reopen: the row is durable
        assert list(again.rows())[0]["url"] == "http://h/wiki/Acid.html"
        assert list(again.rows())[0]["is_target"] is True
    assert stored_pages(tmp_path) == [
        {"url": "http://h/wiki/Acid.html", "relevant": True, "is_target": True}
    ]
    assert stored_pages(tmp_path / "nowhere") == []


def test_duplicate_url_ignored_and_identical_bodies_share_a_file(tmp_path: Path) -> None:
    with PageStore(tmp_path, layout="files") as store:
        assert store.add(record("http://h/a"), b"one")
        dup = record("http://h/a")
        assert store.add(dup, b"two") is False
        assert dup["file_path"] == file_path_for(hashlib.sha256(b"one").hexdigest())
        assert store.duplicates == 1 and store.stored == 1 and store.count() == 1
        assert store.body("http://h/a") == b"one"
        assert store.add(record("http://h/b"), b"one")  # same content, other URL
        files = [p for p in (tmp_path / "html").rglob("*") if p.is_file()]
        assert len(files) == 1  # "two" never written, "one" shared
        rows = list(store.rows())
        assert rows[0]["file_path"] == rows[1]["file_path"]
        assert store.check() == []


def test_file_names_come_from_the_hash_not_the_url(tmp_path: Path) -> None:
    url = "http://evil.example/../../etc/passwd?name=secret-page.html"
    with PageStore(tmp_path) as store:
        rec = record(url)
        store.add(rec, b"<p>x</p>")
    name = str(rec["file_path"])  # a segment's name has nothing of the URL either
    assert "evil" not in name and "passwd" not in name and "secret" not in name
    assert segments.SEGMENT_RE.match(Path(name).name)
    assert (tmp_path / name).resolve().is_relative_to((tmp_path / "segments").resolve())
    with PageStore(tmp_path / "files", layout="files") as store:
        rec = record(url)
        store.add(rec, b"<p>x</p>")
    path = str(rec["file_path"])
    assert "evil" not in path and "passwd" not in path and "secret" not in path
    digest = hashlib.sha256(b"<p>x</p>").hexdigest()
    assert Path(path).name == f"{digest}.html.gz"
    assert (
        (tmp_path / "files" / path)
        .resolve()
        .is_relative_to((tmp_path / "files" / "html").resolve())
    )


def test_check_finds_missing_and_orphan_files_and_repair_removes_orphans(tmp_path: Path) -> None:
    with PageStore(tmp_path, layout="files") as store:
        for i in range(3):
            store.add(record(f"http://h/{i}"), f"page {i}".encode())
        kept = store.get("http://h/0")["file_path"]
        deleted = store.get("http://h/1")["file_path"]
        (tmp_path / deleted).unlink()
        orphan_digest = hashlib.sha256(b"orphan").hexdigest()
        orphan = tmp_path / file_path_for(orphan_digest)
        orphan.parent.mkdir(parents=True, exist_ok=True)
        orphan.write_bytes(gzip.compress(b"orphan"))
        tmp = orphan.parent / f".{orphan_digest}.0123abcd.tmp"  # a write cut short
        tmp.write_bytes(b"half")
        problems = store.check()
        assert f"row without file: http://h/1 -> {deleted}" in problems
        assert f"file without row: {file_path_for(orphan_digest)}" in problems
        assert any(p.startswith("stray file:") and p.endswith(".tmp") for p in problems)
        assert len(problems) == 3
        removed = store.repair()
        assert sorted(removed) == sorted(
            [file_path_for(orphan_digest), tmp.relative_to(tmp_path).as_posix()]
        )
        assert not orphan.exists() and not tmp.exists() and (tmp_path / kept).exists()
        # repair never invents or drops rows: the missing file stays reported
        assert store.check() == [f"row without file: http://h/1 -> {deleted}"]


def test_verify_finds_a_corrupt_file(tmp_path: Path) -> None:
    with PageStore(tmp_path, layout="files") as store:
        rec = record("http://h/a")
        store.add(rec, b"good")
        (tmp_path / rec["file_path"]).write_bytes(gzip.compress(b"bad"))
        assert store.check() == []
        assert store.check(verify=True) == [f"corrupt file: {rec['file_path']}"]


def test_batches_commit_after_before_commit_hook(tmp_path: Path) -> None:
    seen: list[int] = []
    store = PageStore(
        tmp_path, commit_every=3, before_commit=lambda: seen.append(committed_rows(tmp_path))
    ).open()
    store.add(record("http://h/1"), b"1")
    store.add(record("http://h/2"), b"2")
    assert committed_rows(tmp_path) == 0 and store.count() == 2  # own connection sees them
    store.add(record("http://h/3"), b"3")
    assert committed_rows(tmp_path) == 3
    store.add(record("http://h/4"), b"4")
    store.flush()
    assert committed_rows(tmp_path) == 4
    store.flush()  # nothing pending: no hook call
    store.close()
    assert seen == [0, 3]  # the hook runs before each commit


def test_after_commit_hook_gets_the_urls_that_commit_made_durable(tmp_path: Path) -> None:
    told: list[tuple[list[str], int]] = []
    store = PageStore(
        tmp_path,
        commit_every=2,
        after_commit=lambda urls: told.append((urls, committed_rows(tmp_path))),
    ).open()
    store.add(record("http://h/1"), b"1")
    assert told == [] and store.pending == 1
    assert not store.add(record("http://h/1"), b"1")  # duplicate: no row, not told
    store.add(record("http://h/2"), b"2")
    assert told == [(["http://h/1", "http://h/2"], 2)]  # called after the commit
    assert store.pending == 0
    store.add(record("http://h/3"), b"3")
    store.close()  # the last batch is committed and told at close
    assert told[1:] == [(["http://h/3"], 3)]


def test_repair_waits_for_other_writers(tmp_path: Path) -> None:
    first = PageStore(tmp_path, layout="files").open()
    orphan = tmp_path / file_path_for("ab" * 32)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(gzip.compress(b"another writer's uncommitted page"))
    second = PageStore(tmp_path, layout="files").open()  # `first` is open: maybe its file, keep it
    assert orphan.exists() and second.repaired == []
    second.close()
    first.close()
    third = PageStore(tmp_path, layout="files").open()  # alone now
    assert not orphan.exists() and third.repaired == [file_path_for("ab" * 32)]
    third.close()


CRASH = textwrap.dedent(
    """
    import os, sys
    from focused.output.store import PageStore
    out, mode, layout = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "between":
        store = PageStore(out, layout=layout).open()
        store.add({"url": "http://h/kept"}, b"kept page")
        store._insert = lambda row: os._exit(3)  # die after the record, before the row
        store.add({"url": "http://h/lost"}, b"lost page")
    elif mode == "torn":  # die in the middle of writing a record
        store = PageStore(out, layout=layout).open()
        store.add({"url": "http://h/kept"}, b"kept page")
        real = os.write
        os.write = lambda fd, data: (real(fd, bytes(data)[: len(data) // 2]), os._exit(3))
        store.add({"url": "http://h/lost"}, b"lost page" * 100)
    else:  # "batch": rows of an open transaction die with the process
        store = PageStore(out, commit_every=100, layout=layout).open()
        store.add({"url": "http://h/kept"}, b"kept page")
        store.flush()
        for i in range(5):
            store.add({"url": f"http://h/p{i}"}, b"page %d" % i)
        os._exit(3)
    """
)


def _crash(out: Path, mode: str, layout: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, str(out), mode, layout],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr.decode()


@pytest.mark.parametrize("mode, orphans", [("between", 1), ("batch", 5)])
def test_crash_leaves_only_orphans_that_repair_removes(
    tmp_path: Path, mode: str, orphans: int
) -> None:
    """The earlier layout: a crash leaves files without rows, never a row without file."""
    out = tmp_path / "out"
    _crash(out, mode, "files")
    store = PageStore(out, layout="files").open(repair=False)
    problems = store.check()
    assert len(problems) == orphans
    assert all(p.startswith("file without row:") for p in problems)  # never a lost file
    assert store.urls() == ["http://h/kept"]
    store.close()
    with PageStore(out, layout="files") as repaired:
        assert len(repaired.repaired) == orphans
        assert repaired.check(verify=True) == []
        assert repaired.body("http://h/kept") == b"kept page"
        # the crawl goes on: the lost page can be stored now
        assert repaired.add({"url": "http://h/lost"}, b"lost page")
        assert repaired.check(verify=True) == []


def warcio_index(path: Path) -> list[dict[str, str]]:
    """``warcio index`` (the command line tool of the venv) on a segment."""
    tool = Path(sys.executable).with_name("warcio")
    proc = subprocess.run(
        [str(tool), "index", "-f", "warc-type,warc-target-uri,offset,length", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("mode", ["between", "torn", "batch"])
def test_a_kill_leaves_records_past_the_committed_end_which_open_cuts(
    tmp_path: Path, mode: str
) -> None:
    out = tmp_path / "out"
    _crash(out, mode, "segments")
    store = PageStore(out).open(repair=False)
    (problem,) = store.check()  # never a row without its record
    assert problem.startswith("bytes past the committed end: segments/")
    assert store.urls() == ["http://h/kept"]
    store.close()
    with PageStore(out) as repaired:
        assert repaired.truncated > 0 and repaired.lost == []
        assert repaired.check(verify=True) == []
        assert repaired.body("http://h/kept") == b"kept page"
        (segment,) = (out / "segments").iterdir()
        records = warcio_index(segment)  # a WARC tool reads it to its end
        assert [(r["warc-type"], r.get("warc-target-uri")) for r in records] == [
            ("warcinfo", None),
            ("response", "http://h/kept"),
            ("request", "http://h/kept"),
        ]
        row = repaired.get("http://h/kept")
        assert row is not None and int(records[1]["offset"]) == row["record_offset"]
        assert int(records[1]["length"]) == row["record_length"]
        # the crawl goes on: the lost page is stored now, in a segment of its own
        assert repaired.add({"url": "http://h/lost"}, b"lost page")
        assert repaired.check(verify=True) == []


def test_a_row_past_the_end_of_its_segment_is_removed_and_reported_lost(tmp_path: Path) -> None:
    """A power cut with fsync off may keep a commit but lose the segment's last bytes."""
    with PageStore(tmp_path) as store:
        for i in range(4):
            store.add(record(f"http://h/{i}"), b"page %d " % i * 200)
        rows = {r["url"]: r for r in store.rows()}
    seg = tmp_path / rows["http://h/3"]["file_path"]
    cut = rows["http://h/2"]["record_offset"] + rows["http://h/2"]["record_length"] // 2
    with open(seg, "r+b") as fh:
        fh.truncate(cut)  # page 3 gone, page 2 torn
    with PageStore(tmp_path) as store:
        assert store.lost == ["http://h/2", "http://h/3"]
        lost = store.conn.execute("SELECT url FROM lost_pages ORDER BY url").fetchall()
        assert [u for (u,) in lost] == store.lost  # durable, for the crawl to fetch again
        assert store.urls() == ["http://h/0", "http://h/1"]
        assert store.check(verify=True) == []
        assert store.body("http://h/1") == b"page 1 " * 200
    assert [r["warc-type"] for r in warcio_index(seg)] == ["warcinfo"] + [
        "response",
        "request",
    ] * 2


def test_segments_roll_over_and_an_orphan_segment_is_removed(tmp_path: Path) -> None:
    bodies = {f"http://h/{i}": bytes(range(256)) * (4 + i) for i in range(6)}
    with PageStore(tmp_path, segment_bytes=3000) as store:
        for url, body in bodies.items():
            store.add(record(url), body)
        assert all(store.body(url) == body for url, body in bodies.items())
    names = sorted(p.name for p in (tmp_path / "segments").iterdir())
    assert len(names) >= 3  # a page never split, a large page in a segment of its own
    orphan = tmp_path / "segments" / names[0].replace("-00001.", "-00099.")
    orphan.write_bytes(b"a writer that died before its first commit")
    with PageStore(tmp_path) as store:
        assert store.repaired == [f"segments/{orphan.name}"] and not orphan.exists()
        assert store.check(verify=True) == []


def test_verify_finds_a_corrupt_record(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        rec = record("http://h/a")
        store.add(rec, b"good" * 100)
        seg = tmp_path / rec["file_path"]
        data = bytearray(seg.read_bytes())
        data[rec["record_offset"] + 30] ^= 0xFF
        seg.write_bytes(bytes(data))
        assert store.check() == []
        assert store.check(verify=True) == [
            f"corrupt record: {rec['file_path']}@{rec['record_offset']} (http://h/a)"
        ]


def test_the_earlier_layout_stays_readable_and_migrates_into_segments(tmp_path: Path) -> None:
    bodies = {f"http://h/{i}": b"<p>page %d</p>" % i for i in range(5)}
    bodies["http://h/same"] = bodies["http://h/0"]  # one file for two rows
    with PageStore(tmp_path, layout="files") as store:
        for url, body in bodies.items():
            store.add(record(url, title=url), body)
    with PageStore(tmp_path) as store:  # an old store opens as it is; new pages in segments
        assert all(store.body(url) == body for url, body in bodies.items())
        store.add(record("http://h/new"), b"new")
        bodies["http://h/new"] = b"new"
        assert store.check(verify=True) == []
    assert migrate(tmp_path, batch=2) == 6
    assert not (tmp_path / "html").exists()
    with PageStore(tmp_path) as store:
        assert store.check(verify=True) == []
        assert all(store.body(url) == body for url, body in bodies.items())
        assert all(r["record_offset"] is not None for r in store.rows())
    assert migrate(tmp_path) == 0  # nothing left to move
    # the command line: a stored page by URL, bytes as stored
    proc = subprocess.run(
        [sys.executable, "-m", "focused.output.store", "get", "http://h/3", "--dir", tmp_path],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == bodies["http://h/3"], proc.stderr


def test_gzip_level_and_a_removed_folder_is_made_again(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="gzip_level"):
        PageStore(tmp_path, gzip_level=10)
    body = b"<p>" + b"compressible text " * 2000 + b"</p>"
    sizes = {}
    for level in (1, 9):
        out = tmp_path / str(level)
        with PageStore(out, gzip_level=level) as store:
            assert store.add(record("http://h/a"), body)
            sizes[level] = store.get("http://h/a")["record_length"]
            assert store.body("http://h/a") == body
    for level in (1, 9):
        out = tmp_path / f"files{level}"
        with PageStore(out, gzip_level=level, layout="files") as store:
            assert store.add(record("http://h/a"), body)
            rel = store.get("http://h/a")["file_path"]
            assert store.body("http://h/a") == body
            # the folder is remembered, not made again per page: remove it behind the
            # store's back and the next page with a file there still gets written
            for path in (out / rel).parent.iterdir():
                path.unlink()
            (out / rel).parent.rmdir()
            same_folder = next(
                b
                for i in range(100_000)
                if file_path_for(hashlib.sha256(b := b"%d" % i).hexdigest())[:10] == rel[:10]
            )
            assert store.add(record("http://h/b"), same_folder)
            assert store.body("http://h/b") == same_folder
    assert sizes[9] < sizes[1]


def test_a_segment_writer_puts_the_pages_fields_in_its_warc_records(tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    body = "<html><title>Säure</title></html>".encode()
    digest = hashlib.sha256(body).hexdigest()
    page = segments.WarcPage(
        "http://h.test/wiki/Acid.html?x=1", body, digest, 404, "utf-8", 1700000000.5
    )
    writer = segments.SegmentWriter(tmp_path)
    try:
        where = writer.append(page)
        assert writer.records(page)[0] != b""  # the same records, without I/O
    finally:
        writer.close()
    assert segments.read_payload(tmp_path / where.file_path, where.offset, where.length) == body
    with open(tmp_path / where.file_path, "rb") as fh:
        records = [(r.rec_type, r.rec_headers, r.http_headers) for r in ArchiveIterator(fh)]
    assert [t for t, _, _ in records] == ["warcinfo", "response", "request"]
    _, response, http = records[1]
    assert response.get_header("WARC-Target-URI") == page.url
    assert response.get_header("WARC-Date") == "2023-11-14T22:13:20.500000Z"
    assert response.get_header("WARC-Payload-Digest") == "sha256:" + digest
    assert http.get_statuscode() == "404"
    assert http.get_header("Content-Type") == "text/html; charset=utf-8"
    request = records[2][2]
    assert request.statusline == "/wiki/Acid.html?x=1 HTTP/1.1" and request.protocol == "GET"
    assert request.get_header("Host") == "h.test"
