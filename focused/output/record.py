"""Which crawl an output folder holds: ``crawl.json`` (topic, strategy, web).

:class:`~focused.pipelines.PageStorePipeline` (and the
:class:`~focused.pipelines.MetricsPipeline`) writes the record when a crawl opens on a
folder without pages, or with its first stored page; the
``crawl`` command reads it before anything is fetched and refuses to add a crawl of
another topic or strategy to a folder whose page store holds pages (they would be
mixed in one ``pages.sqlite3`` while ``summary.json`` and ``curve.png`` describe only
the last one), unless ``FOCUSED_CONTINUE`` says so. A folder written before the record
existed is recognised by its ``summary.json``. It also refuses a new crawl into a folder
of stored pages that its ``JOBDIR`` does not resume (:func:`reuse_error`: the pages
would be fetched and stored again) and a crawl into a folder whose store another crawl
has open (:func:`in_use`, the store's ``pages.lock``).

``JOBDIR/crawl.json`` (:func:`write_jobdir_record`, written by the ``crawl`` command the
first time a crawl takes the ``JOBDIR``) names the topic, strategy and web of the crawl
whose frontier the ``JOBDIR`` holds, and its output folder: :func:`jobdir_error` refuses
a crawl of another topic, strategy or web on it.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

try:  # POSIX advisory locks; without them no crawl is known to hold a store
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "RECORD",
    "in_use",
    "jobdir_error",
    "mixing_error",
    "read_record",
    "resumes",
    "reuse_error",
    "stored_count",
    "write_jobdir_record",
    "write_record",
]

RECORD = "crawl.json"
LOCK_NAME = "pages.lock"  # focused.output.store.LOCK_NAME: a crawl holds it while open
PORT_FILE = "sandbox.port"  # written into JOBDIR by a sandbox crawl (focused.web.sites)


def write_record(folder: str | os.PathLike[str], **fields: Any) -> Path:
    """Write ``folder/crawl.json`` (atomically) with ``fields`` and the start time."""
    path = Path(folder) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**fields, "started_at": time.time()}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_record(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The topic and strategy of the crawl in ``folder``: its ``crawl.json``, else its
    ``summary.json``; None when neither is there or readable."""
    for name in (RECORD, "summary.json"):
        path = Path(folder) / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and (data.get("topic") or data.get("strategy")):
            return data
    return None


def stored_count(folder: str | os.PathLike[str]) -> int:
    """Rows in ``folder/pages.sqlite3`` (0 when there is no store), read-only."""
    path = Path(folder) / "pages.sqlite3"
    if not path.is_file():
        return 0
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT count(*) FROM pages").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def mixing_error(folder: str | os.PathLike[str], topic: str, strategy: str) -> str | None:
    """One line when ``folder`` holds stored pages of a crawl of another topic or
    strategy than ``topic`` / ``strategy``; None when a crawl of them may go there."""
    record = read_record(folder)
    if record is None:
        return None
    held_topic, held_strategy = str(record.get("topic", "")), str(record.get("strategy", ""))
    if (held_topic, held_strategy.strip()) == (topic, strategy.strip()):
        return None
    if not stored_count(folder):
        return None
    return (
        f"{folder} holds a crawl of topic {held_topic or '?'} with strategy"
        f" {held_strategy or '?'}; use another FOCUSED_OUTPUT_DIR, or"
        " -s FOCUSED_CONTINUE=True to add to it"
    )


def _same_folder(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def jobdir_error(
    jobdir: str | os.PathLike[str],
    topic: str,
    strategy: str,
    web: str,
    sandbox: dict[str, object] | None = None,
) -> str | None:
    """One line when ``jobdir`` holds the frontier of a crawl of another topic, strategy
    or web (its ``crawl.json``, :func:`write_jobdir_record`; a ``sandbox.port`` there
    means a sandbox crawl), or of another sandbox (``sandbox``: the settings that make
    it, pages, seed and mode); None when a crawl of them may resume it. ``web``
    ``auto`` matches either web."""
    record = read_record(jobdir)
    if record is None:
        return None
    held_topic = str(record.get("topic", ""))
    held_strategy = str(record.get("strategy", "")).strip()
    held_web = "sandbox" if (Path(jobdir) / PORT_FILE).is_file() else str(record.get("web", ""))
    webs = {held_web, web} - {"", "auto"}
    held_sandbox = record.get("sandbox")
    if (
        held_web == "sandbox"
        and web in ("sandbox", "auto")
        and isinstance(held_sandbox, dict)
        and sandbox is not None
        and held_sandbox != sandbox
    ):
        made = ", ".join(f"FOCUSED_SANDBOX_{k.upper()}={v}" for k, v in held_sandbox.items())
        return (
            f"JOBDIR {jobdir} holds the frontier of a crawl of another sandbox ({made});"
            " resume it with those settings, or use another JOBDIR for this crawl"
        )
    if (held_topic, held_strategy) == (topic, strategy.strip()) and len(webs) <= 1:
        return None
    return (
        f"JOBDIR {jobdir} holds the frontier of a crawl of topic {held_topic or '?'} with"
        f" strategy {held_strategy or '?'} on the {held_web or '?'} web; resume it with"
        " those, or use another JOBDIR for this crawl"
    )


def write_jobdir_record(
    jobdir: str | os.PathLike[str],
    *,
    topic: str,
    strategy: str,
    web: str,
    output_dir: str,
    sandbox: dict[str, object] | None = None,
) -> None:
    """Record in ``jobdir/crawl.json`` which crawl its frontier belongs to, the output
    folder it stores into and the settings that make its sandbox (``sandbox``), the
    first time a crawl takes it (kept as it is afterwards)."""
    if (Path(jobdir) / RECORD).is_file():
        return
    write_record(
        jobdir,
        topic=topic,
        strategy=strategy.strip(),
        web=web,
        output_dir=os.path.realpath(output_dir),
        **({"sandbox": sandbox} if sandbox is not None else {}),
    )


def resumes(jobdir: str | os.PathLike[str] | None, folder: str | os.PathLike[str]) -> bool:
    """``jobdir`` is the frontier of the crawl that stored into ``folder``: its record
    names ``folder``, or it has a journal but no record (made before records were)."""
    if not jobdir:
        return False
    record = read_record(jobdir)
    if record is None:
        return (Path(jobdir) / "frontier.sqlite3").is_file()
    held = record.get("output_dir")
    return isinstance(held, str) and _same_folder(held, folder)


def reuse_error(
    folder: str | os.PathLike[str], jobdir: str | os.PathLike[str] | None
) -> str | None:
    """One line when ``folder`` holds stored pages and ``jobdir`` is not the frontier
    that stored them (a new crawl there would fetch and store them again, and its
    summary would describe only itself); None when a crawl may go there."""
    pages = stored_count(folder)
    if not pages or resumes(jobdir, folder):
        return None
    how = (
        "resume it with -s JOBDIR=... if it was crawled with one (a crawl without a JOBDIR"
        " cannot be resumed)"
        if not jobdir
        else f"JOBDIR {jobdir} is not the one it was crawled with: resume it with that one"
    )
    return (
        f"{folder} already holds {pages} pages of an earlier crawl; {how}, add to it with"
        " -s FOCUSED_CONTINUE=True, or choose another FOCUSED_OUTPUT_DIR (or remove the"
        " folder)"
    )


def in_use(folder: str | os.PathLike[str]) -> bool:
    """Another process (a crawl) has the page store in ``folder`` open: it holds the
    store's ``pages.lock`` (:meth:`focused.output.store.PageStore.open`)."""
    path = Path(folder) / LOCK_NAME
    if fcntl is None or not path.is_file():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock
    return False
