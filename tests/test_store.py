"""The crash-safe page store (focused/output/store.py) on real SQLite and real files."""

from __future__ import annotations

import gzip
import hashlib
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from focused.output.store import PageStore, file_path_for, stored_pages

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
        assert rec["file_path"] == f"html/{digest[:2]}/{digest[2:4]}/{digest}.html.gz"
        assert gzip.decompress((tmp_path / rec["file_path"]).read_bytes()) == body
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
    with PageStore(tmp_path) as store:
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
    path = str(rec["file_path"])
    assert "evil" not in path and "passwd" not in path and "secret" not in path
    digest = hashlib.sha256(b"<p>x</p>").hexdigest()
    assert Path(path).name == f"{digest}.html.gz"
    assert (tmp_path / path).resolve().is_relative_to((tmp_path / "html").resolve())


def test_check_finds_missing_and_orphan_files_and_repair_removes_orphans(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
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
    with PageStore(tmp_path) as store:
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
    first = PageStore(tmp_path).open()
    orphan = tmp_path / file_path_for("ab" * 32)
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(gzip.compress(b"another writer's uncommitted page"))
    second = PageStore(tmp_path).open()  # `first` is open: maybe its file, keep it
    assert orphan.exists() and second.repaired == []
    second.close()
    first.close()
    third = PageStore(tmp_path).open()  # alone now
    assert not orphan.exists() and third.repaired == [file_path_for("ab" * 32)]
    third.close()


CRASH = textwrap.dedent(
    """
    import os, sys
    from focused.output.store import PageStore
    out, mode = sys.argv[1], sys.argv[2]
    if mode == "between":
        store = PageStore(out).open()
        store.add({"url": "http://h/kept"}, b"kept page")
        store._insert = lambda row: os._exit(3)  # die after the file, before the row
        store.add({"url": "http://h/lost"}, b"lost page")
    else:  # "batch": rows of an open transaction die with the process
        store = PageStore(out, commit_every=100).open()
        store.add({"url": "http://h/kept"}, b"kept page")
        store.flush()
        for i in range(5):
            store.add({"url": f"http://h/p{i}"}, b"page %d" % i)
        os._exit(3)
    """
)


@pytest.mark.parametrize("mode, orphans", [("between", 1), ("batch", 5)])
def test_crash_leaves_only_orphans_that_repair_removes(
    tmp_path: Path, mode: str, orphans: int
) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, str(out), mode], cwd=ROOT, capture_output=True, timeout=60
    )
    assert proc.returncode == 3, proc.stderr.decode()
    store = PageStore(out).open(repair=False)
    problems = store.check()
    assert len(problems) == orphans
    assert all(p.startswith("file without row:") for p in problems)  # never a lost file
    assert store.urls() == ["http://h/kept"]
    store.close()
    with PageStore(out) as repaired:
        assert len(repaired.repaired) == orphans
        assert repaired.check(verify=True) == []
        assert repaired.body("http://h/kept") == b"kept page"
        # the crawl goes on: the lost page can be stored now
        assert repaired.add({"url": "http://h/lost"}, b"lost page")
        assert repaired.check(verify=True) == []


def test_gzip_level_and_a_removed_folder_is_made_again(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="gzip_level"):
        PageStore(tmp_path, gzip_level=10)
    body = b"<p>" + b"compressible text " * 2000 + b"</p>"
    sizes = {}
    for level in (1, 9):
        out = tmp_path / str(level)
        with PageStore(out, gzip_level=level) as store:
            assert store.add(record("http://h/a"), body)
            rel = store.get("http://h/a")["file_path"]
            sizes[level] = (out / rel).stat().st_size
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
