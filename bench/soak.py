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
has no duplicate row and no row without its file. When a crawl finishes (nothing waiting
or in flight) its stored set is compared with an uninterrupted crawl's and a new round
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
from pathlib import Path
from urllib.parse import urlsplit

from bench.command import crawl_command

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
    db = out / "pages.sqlite3"
    if not db.exists():
        return 0
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return sum(
            not (out / rel).is_file() for (rel,) in con.execute("SELECT file_path FROM pages")
        )
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


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


def run(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    work = Path(args.work)
    if os.path.ismount(work / "disk"):  # left by a run that was killed
        subprocess.run(["umount", "-l", str(work / "disk")], check=False)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # the uninterrupted crawl
    ref_out = work / "reference"
    proc = _start(ref_out, work / "reference.log", _settings(args.pages, ref_out / "job"))
    if proc.wait() != 0:
        raise RuntimeError(f"the reference crawl failed: see {work / 'reference.log'}")
    reference = stored_urls(ref_out)

    disk = SmallDisk(work / "disk", size="64m")
    # SIGTERM (a timeout) unmounts too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    faults: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    lost = duplicates = without_file = runs = 0
    rounds: list[dict[str, object]] = []
    try:
        rnd = 0
        while sum(faults.values()) < args.faults:
            rnd += 1
            out, job = disk.path / f"round{rnd}", disk.path / f"round{rnd}" / "job"
            before: set[str] = set()
            round_faults = 0
            while True:
                runs += 1
                log = work / f"round{rnd}-run{runs}.log"
                log.write_bytes(b"")
                kind = "none"
                if sum(faults.values()) < args.faults and round_faults < args.max_per_round:
                    kind = rng.choice(("kill", "disk", "lock"))
                settings = _settings(args.pages, job)
                if kind == "disk":
                    disk.fill(leave_kb=rng.randint(120, 400))
                if kind == "lock":
                    settings["FOCUSED_STORE_LOCK_TIMEOUT"] = 2
                    settings["CLOSESPIDER_PAGECOUNT"] = rng.randint(15, 40)
                if kind == "kill":
                    settings["DOWNLOAD_DELAY"] = 0.03  # outlives the kill
                proc = _start(out, log, settings)
                if kind == "kill":
                    if _wait_opened(log, proc):
                        time.sleep(rng.uniform(0.0, 2.5))
                    if proc.poll() is None:
                        os.kill(proc.pid, signal.SIGKILL)  # our own child, by its pid
                elif kind == "lock":
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
                code = proc.wait()
                if kind == "disk":
                    disk.remove_filler()
                if kind != "none":
                    faults[kind] += 1
                    round_faults += 1
                outcomes[f"{kind}:{'killed' if code < 0 else code}"] += 1
                if code not in (0, 1, -signal.SIGKILL):
                    raise RuntimeError(f"run {runs} exited with {code}: see {log}")
                if code == 1 and b"focused: error:" not in log.read_bytes():
                    raise RuntimeError(f"run {runs} failed without its one line: see {log}")
                now = stored_urls(out)
                lost += len(before - now)
                duplicates += duplicate_rows(out)
                without_file += rows_without_files(out)
                before |= now
                if finished(job):  # the crawl is complete: a new round
                    break
                if runs > 20 * args.faults:
                    raise RuntimeError("the soak does not converge")
            rounds.append(
                {
                    "round": rnd,
                    "faults": round_faults,
                    "pages_stored": len(before),
                    "union_equal": before == reference,
                    "missing": sorted(reference - before)[:10],
                    "extra": sorted(before - reference)[:10],
                }
            )
            print(json.dumps(rounds[-1]), flush=True)
    finally:
        disk.unmount()
    return {
        "seed": args.seed,
        "sandbox_pages": args.pages,
        "reference_pages": len(reference),
        "faults": sum(faults.values()),
        "faults_by_kind": dict(sorted(faults.items())),
        "run_outcomes": dict(sorted(outcomes.items())),
        "runs": runs,
        "rounds": rounds,
        "pages_stored": sum(int(r["pages_stored"]) for r in rounds),  # type: ignore[call-overload]
        "lost": lost,
        "duplicates": duplicates,
        "rows_without_file": without_file,
        "union_equal": all(r["union_equal"] for r in rounds),
        "elapsed_s": round(time.monotonic() - started, 1),
    }


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
    ok = result["lost"] == 0 and result["duplicates"] == 0 and result["union_equal"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
