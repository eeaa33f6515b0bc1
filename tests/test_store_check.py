"""``python -m focused.output.store check`` on real crawl folders: it reports what is
wrong and changes no byte of the folder; ``check --repair`` repairs and says what it
changed; a check beside a crawl that writes the store neither disturbs it nor reports
the records it has not committed yet."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crawling import PROJECT, run_crawl, sandbox_crawl_command

from focused.output.store import DB_NAME, PageStore, _connect_read_only, check_store

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def crawl_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short sandbox crawl whose pages fill several segments (left as the crawl left
    it: copy it before changing it)."""
    out = tmp_path_factory.mktemp("check") / "crawl"
    run_crawl(out, "CLOSESPIDER_ITEMCOUNT=30", "FOCUSED_STORE_SEGMENT_MB=0.02")
    assert len(list((out / "segments").iterdir())) >= 3
    return out


def folder_bytes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by relative path (new files show too)."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def store_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "focused.output.store", "check", *args, "--dir", str(folder)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def rows_of(folder: Path, segment: str) -> list[str]:
    con = sqlite3.connect(folder / DB_NAME)
    try:
        return [u for (u,) in con.execute("SELECT url FROM pages WHERE file_path = ?", (segment,))]
    finally:
        con.close()


def damage(folder: Path, away: Path) -> tuple[dict[str, str], list[str]]:
    """Break ``folder`` as a crash, a power cut and a careless hand would: bytes past
    the last segment's committed end, a segment gone (its rows without their record), a
    segment no commit names, an orphan body file and a temp file of the earlier layout.
    The names, and the lines ``check`` must print (in its order)."""
    names = sorted(p.name for p in (folder / "segments").iterdir())
    last, gone = f"segments/{names[-1]}", f"segments/{names[1]}"
    lost = rows_of(folder, gone)
    assert lost
    with open(folder / last, "ab") as fh:
        fh.write(b"torn record")
    shutil.move(folder / gone, away)
    orphan = f"segments/{names[-1].replace('-0000', '-0099')}"
    shutil.copy(away, folder / orphan)
    orphan_file = f"html/ab/cd/{'abcd' + '0' * 60}.html.gz"
    temp = "html/ab/cd/.abcd.0123.tmp"
    (folder / orphan_file).parent.mkdir(parents=True)
    (folder / orphan_file).write_bytes(gzip.compress(b"no row"))
    (folder / temp).write_bytes(b"half")
    lines = [f"row without segment: {url} -> {gone}" for url in lost] + [
        f"bytes past the committed end: {last} (11)",
        f"segment without commit: {orphan}",
        f"file without row: {orphan_file}",
        f"stray file: {temp}",
    ]
    return {"last": last, "gone": gone, "orphan": orphan, "temp": temp}, lines


@pytest.mark.parametrize("state", ["as the crawl left it", "closed (no -wal, no -shm)"])
def test_check_reports_a_damaged_crawl_folder_and_changes_no_byte(
    crawl_folder: Path, tmp_path: Path, state: str
) -> None:
    folder = tmp_path / "crawl"
    shutil.copytree(crawl_folder, folder)
    if state.startswith("closed"):
        PageStore(folder).open().close()  # the last connection removes -wal and -shm
        assert not (folder / f"{DB_NAME}-wal").exists()
    _names, lines = damage(folder, tmp_path / "away.warc.gz")
    before = folder_bytes(folder)
    for args in ((), ("--verify",)):
        checked = store_cli(folder, *args)
        assert checked.returncode == 1, checked.stderr
        assert checked.stdout.splitlines() == lines
        assert checked.stderr == ""
        assert folder_bytes(folder) == before  # nothing swept, cut, deleted or created
    assert check_store(folder) == (lines, False)
    assert folder_bytes(folder) == before


def test_check_repair_repairs_says_what_and_then_check_is_clean(
    crawl_folder: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "crawl"
    shutil.copytree(crawl_folder, folder)
    names, _lines = damage(folder, tmp_path / "away.warc.gz")
    lost = rows_of(folder, names["gone"])
    repaired = store_cli(folder, "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    said = repaired.stdout.splitlines()
    gone, orphan_file = names["gone"], "html/ab/cd/" + "abcd" + "0" * 60 + ".html.gz"
    assert said == [
        *(
            f"repaired: removed row: {u} (its record is not in {gone}; listed in lost_pages)"
            for u in lost
        ),
        f"repaired: forgot the end of the missing segment {gone}",
        f"repaired: cut 11 bytes past the committed end off {names['last']}",
        f"repaired: removed segment without commit: {names['orphan']}",
        f"repaired: removed file without row: {orphan_file}",
        f"repaired: removed temp file: {names['temp']}",
        "focused: the store is consistent",
    ]
    assert repaired.stderr == ""  # each change said once
    con = sqlite3.connect(f"{(folder / DB_NAME).as_uri()}?mode=ro", uri=True)
    try:
        assert sorted(u for (u,) in con.execute("SELECT url FROM lost_pages")) == sorted(lost)
    finally:
        con.close()
    checked = store_cli(folder, "--verify")
    assert (checked.returncode, checked.stdout) == (0, "focused: the store is consistent\n")
    again = store_cli(folder, "--repair")  # nothing left to repair
    assert (again.returncode, again.stdout) == (0, "focused: the store is consistent\n")


def test_check_of_a_folder_without_a_store_creates_nothing(tmp_path: Path) -> None:
    checked = store_cli(tmp_path / "typo")
    assert checked.returncode == 2
    assert checked.stderr.splitlines() == [
        f"focused: error: no page store in {tmp_path / 'typo'} ({DB_NAME} not found)"
    ]
    assert not (tmp_path / "typo").exists()


def test_check_beside_a_writer_reports_only_what_is_committed(tmp_path: Path) -> None:
    """A writer in the middle of a batch: its records are past the committed end, its
    new segment named by no commit yet. Not a fault while it writes; and the check
    leaves the writer free to commit."""
    with PageStore(tmp_path) as first:
        first.add({"url": "http://h/0"}, b"committed" * 50)
    writer = PageStore(tmp_path, commit_every=100, busy_timeout=0).open()
    try:
        for i in range(1, 4):
            writer.add({"url": f"http://h/{i}"}, b"page %d " % i * 50)
        assert writer.pending == 3
        checked = store_cli(tmp_path, "--verify")
        assert (checked.returncode, checked.stdout) == (0, "focused: the store is consistent\n")
        assert checked.stderr.splitlines() == [
            f"focused: {tmp_path} is open in another program (a crawl?): checked what it"
            " has committed, not the records it may be writing"
        ]
        # a reader in the middle of its snapshot does not hold the writer back either
        reader = _connect_read_only(tmp_path / DB_NAME, immutable=False)
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM pages").fetchone() == (1,)
        writer.flush()  # busy_timeout 0: a lock in the way would raise StoreBusy
        assert reader.execute("SELECT COUNT(*) FROM pages").fetchone() == (1,)  # its snapshot
        reader.close()
    finally:
        writer.close()
    assert check_store(tmp_path, verify=True) == ([], False)


def test_check_reads_a_store_whose_wal_has_no_shm(tmp_path: Path) -> None:
    """SQLite makes a database's -wal before its -shm and removes the -shm first, and
    read-only SQLite cannot open a WAL database without its -shm: a check made at that
    moment of a crawl's start or end failed ("unable to open database file", about
    once in five checks made during a crawl). An empty -wal holds no commit, so the
    database file is read alone; a -wal with commits is waited for."""
    import threading

    with PageStore(tmp_path) as first:
        first.add({"url": "http://h/0"}, b"committed" * 50)
    db, wal, shm = (tmp_path / (DB_NAME + x) for x in ("", "-wal", "-shm"))
    # a crawl closing its store: an empty -wal left for a moment, no -shm, no lock
    wal.write_bytes(b"")
    assert check_store(tmp_path, verify=True) == ([], False)
    assert wal.read_bytes() == b"" and not shm.exists()  # nothing made or changed
    wal.unlink()
    # a crawl with commits in its -wal (a process of its own: SQLite shares one -shm
    # within a process), and a moment without the -shm
    code = (
        "import sys; from focused.output.store import PageStore; s = PageStore(sys.argv[1])"
        ".open(); s.add({'url': 'http://h/1'}, b'in the wal ' * 50); print('open', flush=True);"
        " sys.stdin.read(); s.close()"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=PROJECT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"open\n"
        assert wal.stat().st_size > 0
        saved = shm.read_bytes()
        shm.unlink()
        with pytest.raises(sqlite3.OperationalError):
            _connect_read_only(db, immutable=False).execute("BEGIN").execute(
                "SELECT COUNT(*) FROM pages"
            )
        later = threading.Timer(0.05, shm.write_bytes, (saved,))  # the -shm is back
        later.start()
        try:
            assert check_store(tmp_path, verify=True) == ([], True)
        finally:
            later.join()
    finally:
        writer.communicate(b"", timeout=30)
    assert writer.returncode == 0


def test_check_during_a_crawl_disturbs_it_not(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    cmd = sandbox_crawl_command(
        out, "CLOSESPIDER_ITEMCOUNT=80", "DOWNLOAD_DELAY=0.05", "FOCUSED_STORE_SEGMENT_MB=0.03"
    )
    crawl = subprocess.Popen(cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    reports = []
    try:
        deadline = time.monotonic() + 240
        while crawl.poll() is None and time.monotonic() < deadline:
            if (out / DB_NAME).is_file():
                reports.append(check_store(out, verify=True))
            time.sleep(0.05)
        log = crawl.communicate(timeout=60)[0].decode()
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert crawl.returncode == 0 and "Traceback" not in log, log[-3000:]
    assert any(live for _problems, live in reports), "no check ran while the crawl wrote"
    assert [p for p, _live in reports if p] == []
    stored = sqlite3.connect(out / DB_NAME).execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    assert stored >= 80 and "'focused/stored': " + str(stored) in log
    assert check_store(out, verify=True) == ([], False)
