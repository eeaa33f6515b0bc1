"""Crash-and-fault soak test (``make soak``, not part of ``make test``).

Real ``python -m scrapy crawl focused`` runs of the embedded sandbox (``FOCUSED_WEB=
sandbox``, ``FOCUSED_SANDBOX_PAGES`` small, ``bfs``: every reachable page, so the stored
set does not depend on the crawl order), with the output folder and ``JOBDIR`` on a real
tmpfs (``mount -t tmpfs``, needs root). Each run gets one fault, chosen at random
(seeded):

- ``kill``: ``kill -9`` at a random moment after the spider opened;
- ``disk``: the tmpfs is filled up to a random few hundred KB before the run; the crawl
  must stop by itself (``store_failed``) or finish; the disk is emptied afterwards;
- ``lock``: another connection holds the write lock of ``pages.sqlite3``
  (``BEGIN IMMEDIATE``) for a random 0.5-4 s while ``FOCUSED_STORE_LOCK_TIMEOUT=2``: the
  crawl either waits or stops cleanly.

After every run: no page stored before is lost (the stored set only grows), the store
has no duplicate row and no committed row whose body does not read back (its WARC record
in the segment, hashed against the row). When a crawl finishes (nothing waiting or in
flight) its segments must read as whole WARC records to their end (no torn record left:
the store cuts torn and uncommitted tails when it opens after a kill; the soak counts
those cuts), its stored set is compared with an uninterrupted crawl's and a new round
starts in a fresh folder, until ``--faults`` faults were made. Writes
``out/bench/soak.json``: faults by kind, pages stored, lost, duplicates, whether every
round's union equals the uninterrupted crawl's.

The helpers :class:`SmallDisk`, :func:`stored_urls` and :func:`journal_states` are also
used by ``tests/test_store_failures.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bench.command import crawl_command
from focused.output.segments import SEGMENT_DIR, whole_end
from focused.output.store import READ_ERRORS, content_hash, read_body

PROJECT = Path(__file__).resolve().parent.parent


class SmallDisk:
    """A tmpfs of ``size`` mounted at ``path`` (``PermissionError`` when mounting is not
    permitted). :meth:`fill` leaves only a few KB free, :meth:`grow` remounts it bigger."""

    def __init__(self, path: Path, size: str = "2m") -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError as exc:
            raise PermissionError(f"cannot mount a tmpfs: {exc}") from None
        if proc.returncode != 0:
            raise PermissionError(f"cannot mount a tmpfs: {proc.stderr.strip()}")

    @property
    def filler(self) -> Path:
        return self.path / "filler"

    def free_kb(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize // 1024

    def fill(self, leave_kb: int) -> None:
        """Grow the filler file until only ``leave_kb`` KB are free."""
        extra = self.free_kb() - leave_kb
        if extra > 0:
            with open(self.filler, "ab") as fh:
                fh.write(b"\0" * (extra * 1024))

    def remove_filler(self) -> None:
        self.filler.unlink(missing_ok=True)

    def grow(self, size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False)


def _key(url: str) -> str:
    """A URL without its host and port (the embedded sandbox's port differs per job)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def stored_urls(out: Path) -> set[str]:
    """Paths of the committed rows of the page store in ``out`` (read-only)."""
    db = out / "pages.sqlite3"
    if not db.exists():
        return set()
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {_key(u) for (u,) in con.execute("SELECT url FROM pages")}
    except sqlite3.OperationalError:
        return set()
    finally:
        con.close()


def duplicate_rows(out: Path) -> int:
    db = out / "pages.sqlite3"
    if not db.exists():
        return 0
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        (n,) = con.execute("SELECT COUNT(*) - COUNT(DISTINCT url) FROM pages").fetchone()
        return int(n)
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def journal_states(jobdir: Path) -> dict[str, int]:
    """URL path -> state (0 waiting, 1 in flight, 2 done, 3 error) of a JOBDIR journal."""
    db = jobdir / "frontier.sqlite3"
    if not db.exists():
        return {}
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {_key(u): s for u, s in con.execute("SELECT url, state FROM urls")}
    except sqlite3.OperationalError:
        return {}
    finally:
        con.close()


def rows_without_files(out: Path) -> int:
    """Committed rows whose body cannot be read back (no record at its offset, a torn
    record, no file): right after a ``kill -9``, before the store repairs anything."""
    db = out / "pages.sqlite3"
    if not db.exists():
        return 0
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT content_hash, file_path, record_offset, record_length FROM pages"
        ).fetchall()
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()
    bad = 0
    for digest, rel, offset, length in rows:
        try:
            bad += content_hash(read_body(out, rel, offset, length)) != digest
        except READ_ERRORS:
            bad += 1
    return bad


def torn_segments(out: Path) -> int:
    """Segments of a finished crawl that do not read as whole WARC records to their end
    (a torn record the store did not cut off when it opened again)."""
    folder = out / SEGMENT_DIR
    if not folder.is_dir():
        return 0
    return sum(whole_end(path) != path.stat().st_size for path in sorted(folder.glob("*.warc.gz")))


def cut_tails(log: Path) -> int:
    """How many segment tails (torn or uncommitted records) the store cut off at open."""
    return log.read_bytes().count(b"(a torn or uncommitted record) off the end of")


def _settings(pages: int, job: Path, **extra: object) -> dict[str, object]:
    return {
        "FOCUSED_WEB": "sandbox",
        "FOCUSED_SANDBOX_PAGES": pages,
        "FOCUSED_STRATEGY": "bfs",
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "JOBDIR": str(job),
        **extra,
    }


def _start(out: Path, log: Path, settings: dict[str, object]) -> subprocess.Popen[bytes]:
    cmd = crawl_command("chemistry", output_dir=out, settings=settings)
    fh = open(log, "ab")  # noqa: SIM115 - the child writes it
    try:
        return subprocess.Popen(cmd, cwd=PROJECT, stdout=fh, stderr=subprocess.STDOUT)
    finally:
        fh.close()


def _wait_opened(log: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if b"Spider opened" in log.read_bytes():
            return True
        time.sleep(0.02)
    return False


def _hold_lock(db: Path, seconds: float, holding: threading.Event) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        holding.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
    finally:
        conn.close()


def finished(job: Path) -> bool:
    states = journal_states(job)
    return bool(states) and not [s for s in states.values() if s in (0, 1)]


@dataclass
class _Tally:
    """What the soak counted so far, over every round."""

    faults: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    duplicates: int = 0
    without_file: int = 0
    torn: int = 0  # segments left with a torn record after a finished round
    tails_cut: int = 0  # segment tails the store cut off at open (after a kill)
    runs: int = 0
    rounds: list[dict[str, object]] = field(default_factory=list)

    @property
    def total_faults(self) -> int:
        return sum(self.faults.values())


@dataclass
class _Soak:
    """What every run of the soak shares: the options, the seeded fault sequence, the
    work folder, the tmpfs and the tally."""

    args: argparse.Namespace
    rng: random.Random
    work: Path
    disk: SmallDisk
    tally: _Tally = field(default_factory=_Tally)


@dataclass
class _Round:
    """One round: a fresh folder crawled, run after run, until its crawl finishes."""

    number: int
    out: Path
    job: Path
    before: set[str] = field(default_factory=set)
    faults: int = 0


def _fresh_work(work: Path) -> None:
    """Empty ``work`` (unmounting a tmpfs left by a soak that was killed)."""
    if os.path.ismount(work / "disk"):
        subprocess.run(["umount", "-l", str(work / "disk")], check=False)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)


def _reference_crawl(work: Path, pages: int) -> set[str]:
    """The uninterrupted crawl's stored set."""
    ref_out = work / "reference"
    proc = _start(ref_out, work / "reference.log", _settings(pages, ref_out / "job"))
    if proc.wait() != 0:
        raise RuntimeError(f"the reference crawl failed: see {work / 'reference.log'}")
    return stored_urls(ref_out)


def _pick_fault(rng: random.Random, args: argparse.Namespace, tally: _Tally, rnd: _Round) -> str:
    """The next run's fault, or ``none`` once enough were made (overall or this round)."""
    if tally.total_faults < args.faults and rnd.faults < args.max_per_round:
        return rng.choice(("kill", "disk", "lock"))
    return "none"


def _prepare_fault(
    kind: str, rng: random.Random, disk: SmallDisk, settings: dict[str, object]
) -> None:
    """Set up ``kind`` before the run starts: fill the disk or adjust the settings."""
    if kind == "disk":
        disk.fill(leave_kb=rng.randint(120, 400))
    elif kind == "lock":
        settings["FOCUSED_STORE_LOCK_TIMEOUT"] = 2
        settings["CLOSESPIDER_PAGECOUNT"] = rng.randint(15, 40)
    elif kind == "kill":
        settings["DOWNLOAD_DELAY"] = 0.03  # outlives the kill


def _kill_fault(rng: random.Random, log: Path, proc: subprocess.Popen[bytes]) -> None:
    """``kill -9`` the crawl at a random moment after its spider opened."""
    if _wait_opened(log, proc):
        time.sleep(rng.uniform(0.0, 2.5))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)  # our own child, by its pid


def _lock_fault(rng: random.Random, out: Path, log: Path, proc: subprocess.Popen[bytes]) -> None:
    """Hold the page store's write lock for a random 0.5-4 s once the spider opened."""
    db = out / "pages.sqlite3"
    if _wait_opened(log, proc) and db.exists():
        holding = threading.Event()
        holder = threading.Thread(
            target=_hold_lock,
            args=(db, rng.uniform(0.5, 4.0), holding),
            daemon=True,
        )
        holder.start()
        holder.join()


def _check_exit(code: int, run_no: int, log: Path) -> None:
    """A run ends by success, by its one-line error (exit 1) or by our ``kill -9``."""
    if code not in (0, 1, -signal.SIGKILL):
        raise RuntimeError(f"run {run_no} exited with {code}: see {log}")
    if code == 1 and b"focused: error:" not in log.read_bytes():
        raise RuntimeError(f"run {run_no} failed without its one line: see {log}")


def _check_store(rnd: _Round, tally: _Tally) -> None:
    """Count pages lost since the previous run, duplicate rows and rows without files."""
    now = stored_urls(rnd.out)
    tally.lost += len(rnd.before - now)
    tally.duplicates += duplicate_rows(rnd.out)
    tally.without_file += rows_without_files(rnd.out)
    rnd.before |= now


def _one_run(soak: _Soak, rnd: _Round) -> None:
    """One crawl of the round's folder with at most one fault, then the checks."""
    args, rng, disk, tally = soak.args, soak.rng, soak.disk, soak.tally
    tally.runs += 1
    log = soak.work / f"round{rnd.number}-run{tally.runs}.log"
    log.write_bytes(b"")
    kind = _pick_fault(rng, args, tally, rnd)
    settings = _settings(args.pages, rnd.job)
    _prepare_fault(kind, rng, disk, settings)
    proc = _start(rnd.out, log, settings)
    if kind == "kill":
        _kill_fault(rng, log, proc)
    elif kind == "lock":
        _lock_fault(rng, rnd.out, log, proc)
    code = proc.wait()
    if kind == "disk":
        disk.remove_filler()
    if kind != "none":
        tally.faults[kind] += 1
        rnd.faults += 1
    tally.outcomes[f"{kind}:{'killed' if code < 0 else code}"] += 1
    _check_exit(code, tally.runs, log)
    tally.tails_cut += cut_tails(log)
    _check_store(rnd, tally)


def _round_report(rnd: _Round, reference: set[str]) -> dict[str, object]:
    return {
        "round": rnd.number,
        "faults": rnd.faults,
        "pages_stored": len(rnd.before),
        "union_equal": rnd.before == reference,
        "missing": sorted(reference - rnd.before)[:10],
        "extra": sorted(rnd.before - reference)[:10],
    }


def _soak_round(soak: _Soak, number: int) -> _Round:
    """Crawl a fresh folder run after run (at most one fault each) until it finishes."""
    out = soak.disk.path / f"round{number}"
    rnd = _Round(number=number, out=out, job=out / "job")
    while True:
        _one_run(soak, rnd)
        if finished(rnd.job):  # the crawl is complete: a new round
            soak.tally.torn += torn_segments(rnd.out)
            return rnd
        if soak.tally.runs > 20 * soak.args.faults:
            raise RuntimeError("the soak does not converge")


def _report(
    args: argparse.Namespace, reference: set[str], tally: _Tally, started: float
) -> dict[str, object]:
    """The contents of ``soak.json``."""
    rounds = tally.rounds
    return {
        "seed": args.seed,
        "sandbox_pages": args.pages,
        "reference_pages": len(reference),
        "faults": tally.total_faults,
        "faults_by_kind": dict(sorted(tally.faults.items())),
        "run_outcomes": dict(sorted(tally.outcomes.items())),
        "runs": tally.runs,
        "rounds": rounds,
        "pages_stored": sum(int(r["pages_stored"]) for r in rounds),  # type: ignore[call-overload]
        "lost": tally.lost,
        "duplicates": tally.duplicates,
        "rows_without_file": tally.without_file,
        "torn_segments": tally.torn,
        "segment_tails_cut": tally.tails_cut,
        "union_equal": all(r["union_equal"] for r in rounds),
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    """The reference crawl, then rounds of faulted runs until ``args.faults`` were made."""
    rng = random.Random(args.seed)
    work = Path(args.work)
    _fresh_work(work)
    started = time.monotonic()
    reference = _reference_crawl(work, args.pages)
    disk = SmallDisk(work / "disk", size="64m")
    # SIGTERM (a timeout) unmounts too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    soak = _Soak(args=args, rng=rng, work=work, disk=disk)
    tally = soak.tally
    try:
        number = 0
        while tally.total_faults < args.faults:
            number += 1
            rnd = _soak_round(soak, number)
            tally.rounds.append(_round_report(rnd, reference))
            print(json.dumps(tally.rounds[-1]), flush=True)
    finally:
        disk.unmount()
    return _report(args, reference, tally, started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=50)
    parser.add_argument("--pages", type=int, default=150, help="sandbox size")
    parser.add_argument("--max-per-round", type=int, default=18)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--work", default="out/bench/soak-work")
    parser.add_argument("--out", default="out/bench")
    args = parser.parse_args(argv)
    result = run(args)
    path = Path(args.out) / "soak.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    ok = (
        result["lost"] == 0
        and result["duplicates"] == 0
        and result["union_equal"]
        and result["rows_without_file"] == 0
        and result["torn_segments"] == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
