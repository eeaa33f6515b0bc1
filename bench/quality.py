"""Quality benchmark: recall and precision of every strategy on a real labelled web.

Serves the wikispeedia site (4,604 real Wikipedia pages with subject labels, see its
``SOURCE.md``) with a real HTTP server on 127.0.0.1 and runs one **real Scrapy crawl**
(``python -m scrapy crawl focused`` from the project root: the same spider, middleware,
scheduler and pipelines a user runs) per (topic, seed set, strategy), all with the same
page budget: ``BUDGET`` x the number of targets reachable from the seed set.

Evaluation as in Liu, Xia & Xu (2010): recall = targets crawled / targets reachable from the seeds,
precision = targets crawled / pages crawled (the harvest rate), both against pages
crawled. The ``oracle`` strategy knows the labels (a link to a known target first, else
breadth-first); it is the ceiling that ``recall_over_oracle`` and ``auc_recall`` (area
under the recall curve up to the budget, divided by the oracle's) are measured against.

Every number is recomputed here from each crawl's ``pages.sqlite3`` (rows in the order
the pipeline stored them, cut at the budget: with several requests in flight Scrapy may
store a few pages past ``CLOSESPIDER_ITEMCOUNT``). Outputs in ``--out`` (``out/bench``):
``quality.csv``, ``quality.md``, one PNG per (topic, seed set), and ``runs/`` with each
crawl's own output folder and log.

Usage: ``python -m bench.quality --help`` or ``make bench-quality``.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import csv
import json
import math
import os
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from w3lib.url import canonicalize_url

from bench import command
from bench.server import StaticServer
from focused.output.metrics import HarvestCurve, read_labels, targets_from_labels
from focused.strategies import STRATEGIES
from focused.web.topics import Topic, TopicError, load_topic

if TYPE_CHECKING:
    from bench.realweb.web import RealWeb

ROOT = Path(__file__).resolve().parents[1]
#: The data lives beside the project, never in it.
DEFAULT_DATA = Path("..") / "shared" / "data" / "wikispeedia-site"
DEFAULT_OUT = Path("out") / "bench"
DEFAULT_REALISTIC_OUT = Path("out") / "bench-realistic"

CSV_COLUMNS = (
    "topic",
    "seeds",
    "strategy",
    "budget",
    "pages",
    "targets",
    "targets_found",
    "recall",
    "precision",
    "oracle_recall",
    "recall_over_oracle",
    "auc_recall",
    "repeats",
    "recall_over_oracle_min",
    "recall_over_oracle_max",
)
#: Columns that are the median over the repeated crawls of a row (``--repeat``).
MEDIAN_COLUMNS = ("recall", "precision", "oracle_recall", "recall_over_oracle", "auc_recall")
#: The realistic web's measures of a crawl that its table in ``quality.md`` shows (column
#: -> heading): the share of the budget by URL class, pages stored per second, and the
#: host measures of :mod:`bench.realweb.measure`.
REALISTIC_SHOWN: dict[str, str] = {
    "non_article_share": "non-article",
    "fetched_non_article_share": "fetched non-article",
    "duplicate_share": "duplicate",
    "meta_share": "meta",
    "chrome_share": "chrome",
    "pages_per_s": "pages/s",
    "host_busy": "host busy",
    "host_utilisation": "host utilisation",
    "mean_waiting_hosts": "mean waiting hosts",
}
#: More columns of ``quality.csv`` on the realistic web (``--web realistic``), after the
#: clean web's, each a median over repeats (see docs/quality.md, "Realistic web"): the
#: :data:`REALISTIC_SHOWN` measures, requests answered and hosts served, and the settings.
REALISTIC_COLUMNS = (*REALISTIC_SHOWN, "requests", "hosts_served", "download_delay", "hosts")

ORACLE = "oracle"
#: The oracle is not in the ``focused`` package: its crawls name its class.
ORACLE_CLASS = "bench.oracle.OracleStrategy"
#: Display order: the reference first, the learnt strategy, then the m-value strategies of
#: Liu, Xia & Xu (2010) (with the annealing of He, Cheng & Cai 2009), then the baselines.
STRATEGY_ORDER = (
    "oracle",
    "learning",
    "annealing",
    "genetic",
    "best_first",
    "bsbs",
    "gao",
    "bfs",
)
DEFAULT_TOPICS = ("chemistry", "physics")
DEFAULT_HELD_OUT = ("mathematics", "music")
#: Two seed sets per shipped topic: one on the topic's hub page, one off-topic (two
#: clicks from the nearest target). Other topics get computed ones (see `auto_seed_sets`).
DEFAULT_SEED_SETS: dict[str, tuple[str, ...]] = {
    "chemistry": ("Chemistry.html", "Football.html"),
    "physics": ("Physics.html", "Cricket.html"),
    "mathematics": ("Mathematics.html", "Volcano.html"),
    "music": ("Music.html", "Chemistry.html"),
}
#: The frozen held-out set (``--held-out-set``): benchmark-only topic files and their seed
#: sets, written once before any measurement (see its README.md).
HELD_OUT_DIR = ROOT / "bench" / "topics" / "heldout"
DEFAULT_SEED = 42
_HREF = re.compile(rb'href="([^"#?]+)"')


class BenchError(RuntimeError):
    """A bad benchmark argument or a failed crawl; the message is one line for the user."""


def held_out_set(folder: Path = HELD_OUT_DIR) -> dict[str, tuple[str, ...]]:
    """Topic argument -> its seed sets, for every topic of the frozen held-out set.

    ``seeds.toml`` names each topic and its sets; a topic with a file in ``folder`` is
    given by that file's path, any other by its name (a project topic of ``topics/``).
    """
    import tomllib

    path = folder / "seeds.toml"
    try:
        sets = tomllib.loads(path.read_text(encoding="utf-8"))["sets"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise BenchError(f"held-out set {path}: {exc}") from None
    out: dict[str, tuple[str, ...]] = {}
    for name, pages in sets.items():
        file = folder / f"{name}.toml"
        out[str(file) if file.is_file() else name] = tuple(pages)
    return out


# --- the labelled web ------------------------------------------------------------------
@dataclass
class Site:
    """The wikispeedia folder: its link graph and labels, keyed by page file name.

    A page name is the decoded file name under ``wiki/`` (``AT&T.html``), which is also
    ``unquote`` of the path of any URL that reaches it.
    """

    root: Path
    graph: dict[str, list[str]]
    labels: dict[str, list[str]]  # labels.tsv: URL path -> categories

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> Site:
        folder = Path(root)
        wiki = folder / "wiki"
        labels_path = folder / "labels.tsv"
        if not wiki.is_dir() or not labels_path.is_file():
            raise BenchError(
                f"{folder} is not the wikispeedia site (needs wiki/ and labels.tsv); "
                "give its path with --data"
            )
        graph: dict[str, list[str]] = {}
        for page in wiki.iterdir():
            if page.suffix == ".html":
                links = (unquote(h.decode("utf-8")) for h in _HREF.findall(page.read_bytes()))
                graph[page.name] = list(dict.fromkeys(links))
        with labels_path.open(encoding="utf-8") as fh:
            labels = read_labels(fh)
        return cls(folder, graph, labels)

    @property
    def labels_path(self) -> Path:
        return self.root / "labels.tsv"

    def targets(self, category: str) -> frozenset[str]:
        """Pages with a label under ``category`` (the pipelines' prefix rule)."""
        urls = targets_from_labels(self.labels, category, "http://site/")
        return frozenset(page_name(u) for u in urls)

    def reachable(self, seeds: Iterable[str]) -> set[str]:
        """Pages reachable from ``seeds`` by following links (seeds included)."""
        seen = set(seeds)
        queue = deque(seen)
        while queue:
            for nxt in self.graph.get(queue.popleft(), ()):
                if nxt not in seen and nxt in self.graph:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def resolve(self, token: str) -> str:
        """Page name of a seed given as ``Water.html``, ``Water``, ``/wiki/Water.html`` or a URL."""
        name = page_name(token.strip())
        if not name.endswith(".html"):
            name += ".html"
        if name not in self.graph:
            alt = name.replace(" ", "_")
            if alt in self.graph:
                return alt
            raise BenchError(f"seed {token!r}: no page {name!r} in {self.root / 'wiki'}")
        return name

    def auto_seed_sets(self, targets: frozenset[str]) -> tuple[tuple[str, ...], ...]:
        """Two seed sets for a topic without defaults: its hub, and an off-topic hub.

        The hub is the target most linked from other targets; the off-topic seed is the
        most linked page that is not a target and links to none (so the crawl starts at
        least two clicks from every target). Ties break by name: repeatable.
        """
        indegree: dict[str, int] = {}
        from_targets: dict[str, int] = {}
        for page, links in self.graph.items():
            for nxt in links:
                indegree[nxt] = indegree.get(nxt, 0) + 1
                if page in targets:
                    from_targets[nxt] = from_targets.get(nxt, 0) + 1
        hub = max(sorted(targets & self.graph.keys()), key=lambda p: from_targets.get(p, 0))
        off = [
            p
            for p in sorted(self.graph)
            if p not in targets and not targets.intersection(self.graph[p])
        ]
        far = max(off, key=lambda p: indegree.get(p, 0))
        return ((hub,), (far,))


def page_name(url_or_path: str) -> str:
    """``AT&T.html`` for ``http://h/wiki/AT%26T.html``, ``/wiki/AT%26T.html`` or ``AT&T.html``."""
    path = urlsplit(url_or_path).path if "://" in url_or_path else url_or_path
    path = unquote(path)
    return path.rsplit("/", 1)[-1] if "/" in path else path


def page_url(base: str, name: str) -> str:
    """URL of page ``name`` on the server at ``base`` (percent-encoded like the site's hrefs)."""
    return f"{base.rstrip('/')}/wiki/{quote(name)}"


# --- what to run ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)  # hashed by identity: one object per group
class Group:
    """One (topic, seed set): every strategy crawls it with the same budget."""

    topic: Topic
    topic_arg: str
    category: str
    seeds: tuple[str, ...]  # page names
    targets: frozenset[str]  # targets reachable from the seeds
    budget: int
    held_out: bool
    index: int = 0  # position in the plan: tables follow the order the sets were given

    @property
    def seeds_label(self) -> str:
        return ",".join(self.seeds)

    @property
    def slug(self) -> str:
        seeds = "+".join(s.removesuffix(".html") for s in self.seeds)
        safe = re.sub(r"[^A-Za-z0-9_+-]+", "_", seeds)[:80]
        return f"{self.topic.name}__{safe}"

    @property
    def off_topic_start(self) -> bool:
        return not self.targets.intersection(self.seeds)


@dataclass(frozen=True)
class Job:
    group: Group
    strategy: str
    concurrency: int | None  # None: the project's settings
    rep: int = 0  # repetition (``--repeat``): 0 is the first crawl

    @property
    def out_dir(self) -> Path:
        name = self.strategy if self.rep == 0 else f"{self.strategy}.r{self.rep}"
        return Path("runs") / f"c{self.concurrency or 'default'}" / self.group.slug / name


@dataclass
class Result:
    job: Job
    curve: HarvestCurve
    elapsed: float
    error: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def project_concurrency() -> tuple[int, int]:
    """(CONCURRENT_REQUESTS, CONCURRENT_REQUESTS_PER_DOMAIN) of the project's settings."""
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    return settings.getint("CONCURRENT_REQUESTS"), settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")


#: Scrapy's own scheduler (with the project's global priority queue).
SCRAPY_SCHEDULER = "scrapy.core.scheduler.Scheduler"


def git_tracks(path: Path, root: Path) -> bool | None:
    """Whether git tracks ``path`` in the checkout that holds ``root``; None when
    ``root`` is in no git checkout (a copy made by ``git archive``, an installed copy) or
    git is not installed."""
    try:
        inside = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        listed = subprocess.run(
            ["git", "ls-files", "--error-unmatch", str(path)],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    return listed.returncode == 0


def default_scheduler(root: Path = ROOT) -> str:
    """The crawls' ``SCHEDULER`` when ``--scheduler`` is not given: ``""`` (the
    project's, ``focused.scheduler.FocusedScheduler``) when ``root/focused/scheduler.py``
    is committed, or is there in a copy outside git (said on stderr: the file is all
    there is); Scrapy's own scheduler, said on stderr, when the file is missing (an
    older tree). :class:`BenchError` when the file is there but git does not track it
    (a file being written, perhaps by someone else): ``--scheduler`` says which."""
    path = root / "focused" / "scheduler.py"
    if not path.is_file():
        print(
            f"warning: no {path}: the crawls use Scrapy's own scheduler ({SCRAPY_SCHEDULER})",
            file=sys.stderr,
        )
        return SCRAPY_SCHEDULER
    tracked = git_tracks(path, root)
    if tracked is None:
        print(
            f"note: {root} is not a git checkout: the crawls use its focused/scheduler.py"
            " as it is (the project's scheduler)",
            file=sys.stderr,
        )
    elif not tracked:
        raise BenchError(
            f"{path} is not tracked by git: commit it, or say which scheduler to crawl with"
            " (--scheduler focused.scheduler.FocusedScheduler, or --scheduler"
            f" {SCRAPY_SCHEDULER})"
        )
    return ""


def strategy_setting(name: str) -> str:
    """``FOCUSED_STRATEGY`` of a crawl of the strategy ``name`` (a row's label; a variant
    ``learning@NAME=VALUE`` crawls ``learning``)."""
    base = name.split("@", 1)[0]
    return ORACLE_CLASS if base == ORACLE else base


def variant_settings(name: str) -> dict[str, str]:
    """The settings of a strategy variant: ``learning@FOCUSED_X=1@FOCUSED_Y=2`` ->
    ``{"FOCUSED_X": "1", "FOCUSED_Y": "2"}`` (several variants of one strategy compared
    in one run, on the same oracle crawls)."""
    out: dict[str, str] = {}
    for item in name.split("@")[1:]:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise BenchError(f"strategy variant {name!r}: give NAME=VALUE after each @")
        out[key] = value
    return out


def crawl_command(
    job: Job,
    *,
    base: str,
    labels: Path,
    out_dir: Path,
    seed: int,
    scheduler: str,
    log_level: str,
    extra: Mapping[str, str] | None = None,
    seed_urls: Sequence[str] | None = None,
) -> list[str]:
    """The ``scrapy crawl`` command line of one job (run from the project root);
    ``extra``: more ``-s`` settings (``--set``), applied last; ``seed_urls``: the seeds'
    URLs when they are not ``page_url(base, seed)`` (the realistic web)."""
    group = job.group
    seeds = ",".join(seed_urls or [page_url(base, s) for s in group.seeds])
    settings = {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": seeds,
        "FOCUSED_LABELS": str(labels),
        "FOCUSED_TARGET_CATEGORY": group.category,
        "FOCUSED_STRATEGY": strategy_setting(job.strategy),
        "FOCUSED_SEED": str(seed),
        "FOCUSED_METRICS_LOG_EVERY": "100",
        "FOCUSED_REPORT": "False",  # (the benchmark reads pages.sqlite3 and draws its own)
        "CLOSESPIDER_ITEMCOUNT": str(group.budget),
        "AUTOTHROTTLE_ENABLED": "False",
        "LOG_LEVEL": log_level,
        "LOG_FILE": str(out_dir / "crawl.log"),
    }
    if job.concurrency:
        settings["CONCURRENT_REQUESTS"] = str(job.concurrency)
        settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = str(job.concurrency)
    if scheduler:
        settings["SCHEDULER"] = scheduler
    settings.update(extra or {})
    settings.update(variant_settings(job.strategy))
    return command.crawl_command(group.topic_arg, output_dir=out_dir, settings=settings)


def read_pages(out_dir: Path, budget: int) -> list[tuple[str, bool, float]]:
    """(url, relevant, fetched_at) of a crawl's first ``budget`` stored pages, from its
    ``pages.sqlite3``, in storage order (a URL stored twice counts once)."""
    db = out_dir / "pages.sqlite3"
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT url, relevant, fetched_at FROM pages ORDER BY id").fetchall()
    finally:
        conn.close()
    seen: set[str] = set()
    out = []
    for url, relevant, fetched_at in rows:
        if len(out) >= budget:
            break
        if url not in seen:
            seen.add(url)
            out.append((str(url), bool(relevant), float(fetched_at or 0.0)))
    return out


def read_aliases(out_dir: Path, budget: int) -> list[tuple[int, str, str]]:
    """``(pages, url, page_url)`` of a crawl's aliases (near-duplicates recorded as other
    URLs of stored pages) found within its first ``budget`` stored pages: ``pages`` is
    how many pages were stored when it was added (it counts right after that page),
    ``page_url`` the URL of its page."""
    db = out_dir / "pages.sqlite3"
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        pages_rows = conn.execute("SELECT id, url FROM pages ORDER BY id").fetchall()
        try:
            rows = conn.execute(
                "SELECT url, stored_after, page_id FROM aliases ORDER BY rowid"
            ).fetchall()
        except sqlite3.OperationalError:  # a store from before aliases
            rows = []
    finally:
        conn.close()
    ids = [i for i, _ in pages_rows]
    url_of = dict(pages_rows)
    out = []
    for url, after, page in rows:
        pages = bisect.bisect_right(ids, int(after))
        if 1 <= pages <= budget:
            out.append((pages, str(url), str(url_of.get(page, ""))))
    return out


def read_curve(
    out_dir: Path, group: Group, target_urls: frozenset[str] | None = None
) -> HarvestCurve:
    """Recall/precision after every page of a crawl, from its ``pages.sqlite3``.

    Rows in storage order, cut at the budget; a page is a target when its name is one of
    the group's reachable targets, or, with ``target_urls`` (canonical URLs: the
    realistic web's article URLs), when its canonical URL is one of them. An alias (a
    near-duplicate recorded as another URL of a stored page) found within the budget
    counts as found when it is a target, right after the page stored before it.
    """
    if target_urls is None:
        targets_urls = frozenset(page_url("http://site", t) for t in group.targets)
    else:
        targets_urls = target_urls

    def is_target(url: str) -> bool:
        if target_urls is None:
            return page_name(url) in group.targets
        return canonicalize_url(url) in target_urls

    curve = HarvestCurve(targets_urls)
    aliases = read_aliases(out_dir, group.budget)
    at = 0
    for url, relevant, _ in read_pages(out_dir, group.budget):
        curve.add(url, relevant, is_target(url))
        while at < len(aliases) and aliases[at][0] <= curve.pages:
            _, alias, of = aliases[at]
            curve.add_alias(alias, is_target(alias), of)
            at += 1
    return curve


class _Children:
    """The crawl subprocesses alive, so that an interrupted benchmark stops them too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._alive: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    @contextlib.contextmanager
    def start(self, cmd: list[str], **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
        with self._lock:
            if self.stopping:
                raise BenchError("benchmark interrupted")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
            self._alive.add(proc)
        try:
            yield proc
        finally:
            with self._lock:
                self._alive.discard(proc)

    def stop_all(self, grace: float = 5.0) -> None:
        """Refuse new crawls; SIGTERM the running ones, SIGKILL them after ``grace`` s."""
        with self._lock:
            self.stopping = True
            alive = list(self._alive)
        for proc in alive:
            proc.terminate()
        deadline = time.monotonic() + grace
        for proc in alive:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()


_CHILDREN = _Children()


@dataclass(frozen=True)
class Realistic:
    """The realistic web of ``--web realistic`` (:mod:`bench.realweb`) and its settings:
    ``delay`` is every crawl's ``DOWNLOAD_DELAY`` (0: none), ``download_timeout`` its
    ``DOWNLOAD_TIMEOUT`` (what a hanging host costs)."""

    web: RealWeb
    delay: float = 0.0
    download_timeout: float = 5.0

    def settings(self) -> dict[str, str]:
        out = {
            "FOCUSED_HOSTS": command.setting_value(self.web.host_map()),
            "DOWNLOAD_TIMEOUT": f"{self.download_timeout:g}",
        }
        if self.delay > 0:
            out["DOWNLOAD_DELAY"] = f"{self.delay:g}"
        return out


def _run_crawl(cmd: list[str], out_dir: Path, *, seed: int, timeout: float) -> tuple[str, float]:
    """Run one crawl command; (error, seconds), error ``""`` when it succeeded."""
    (out_dir / "command.txt").write_text(" ".join(cmd) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    started = time.monotonic()
    error = ""
    with _CHILDREN.start(cmd, cwd=ROOT, env=env) as proc:
        try:
            output, _ = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                tail = output.decode("utf-8", "replace").strip().splitlines()[-3:]
                error = f"exit {proc.returncode}: {' | '.join(tail)}"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            error = f"timed out after {timeout:.0f} s"
    return error, time.monotonic() - started


def run_job(
    job: Job,
    *,
    base: str,
    site: Site,
    out: Path,
    seed: int,
    scheduler: str,
    log_level: str,
    timeout: float,
    extra: Mapping[str, str] | None = None,
    realistic: Realistic | None = None,
) -> Result:
    """Run one crawl as a subprocess and read its curve (on the realistic web when
    ``realistic``: its own server, see :func:`run_realistic_job`)."""
    out_dir = out / job.out_dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    if realistic is not None:
        return run_realistic_job(
            job,
            realistic,
            site=site,
            out_dir=out_dir,
            seed=seed,
            scheduler=scheduler,
            log_level=log_level,
            timeout=timeout,
            extra=extra,
        )
    cmd = crawl_command(
        job,
        base=base,
        labels=site.labels_path.resolve(),
        out_dir=out_dir.resolve(),
        seed=seed,
        scheduler=scheduler,
        log_level=log_level,
        extra=extra,
    )
    error, elapsed = _run_crawl(cmd, out_dir, seed=seed, timeout=timeout)
    curve = read_curve(out_dir, job.group)
    if not error and curve.pages == 0:
        error = f"no page stored (see {out_dir / 'crawl.log'})"
    return Result(job, curve, elapsed, error)


def run_realistic_job(
    job: Job,
    realistic: Realistic,
    *,
    site: Site,
    out_dir: Path,
    seed: int,
    scheduler: str,
    log_level: str,
    timeout: float,
    extra: Mapping[str, str] | None = None,
) -> Result:
    """One crawl of the realistic web, served for it alone (its own port: the server's
    log is this crawl's), then its curve and :data:`REALISTIC_COLUMNS` (also written to
    the run folder's ``metrics.json``)."""
    from bench.realweb.measure import fetch_shares, host_use, page_shares
    from bench.realweb.serve import RealWebServer

    with RealWebServer(realistic.web) as served:
        web = served.web
        labels = out_dir / "labels.tsv"
        labels.write_text("\n".join(web.labels_lines(site.labels)) + "\n", encoding="utf-8")
        cmd = crawl_command(
            job,
            base="",
            labels=labels.resolve(),
            out_dir=out_dir.resolve(),
            seed=seed,
            scheduler=scheduler,
            log_level=log_level,
            extra={**realistic.settings(), **(extra or {})},
            seed_urls=[web.article_url(s) for s in job.group.seeds],
        )
        error, elapsed = _run_crawl(cmd, out_dir, seed=seed, timeout=timeout)
        hits = served.snapshot()
    with (out_dir / "requests.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)  # the server's log: every request answered, in order
        writer.writerow(["host", "target", "start", "end", "status"])
        for hit in hits:
            writer.writerow(
                [hit.host, hit.target, f"{hit.start:.4f}", f"{hit.end:.4f}", hit.status]
            )
    targets = frozenset(canonicalize_url(web.article_url(t)) for t in job.group.targets)
    curve = read_curve(out_dir, job.group, targets)
    if not error and curve.pages == 0:
        error = f"no page stored (see {out_dir / 'crawl.log'})"
    pages = read_pages(out_dir, job.group.budget)
    metrics: dict[str, float] = {}
    metrics.update(page_shares(web, [u for u, _, _ in pages]))
    times = [t for _, _, t in pages if t > 0]
    span = (times[-1] - times[0]) if len(times) > 1 else 0.0
    metrics["pages_per_s"] = (len(times) - 1) / span if span > 0 else 0.0
    metrics.update(fetch_shares(web, hits, times[-1] if times else None))
    use = host_use(
        web,
        hits,
        seeds=[web.article_url(s) for s in job.group.seeds],
        end=times[-1] if times else None,
        delay=realistic.delay,
    )
    metrics.update({k: v for k, v in use.items() if v is not None})
    metrics["download_delay"] = realistic.delay
    metrics["hosts"] = len(web.live_hosts)
    record = {
        "topic": job.group.topic.name,
        "seeds": job.group.seeds_label,
        "strategy": job.strategy,
        "concurrency": job.concurrency or "default",
        "repetition": job.rep + 1,
        "budget": job.group.budget,
        "pages": curve.pages,
        "targets": len(job.group.targets),
        "targets_found": curve.targets_found,
        "recall": curve.recall_at(job.group.budget),
        "precision": curve.precision,
        "seconds": round(elapsed, 2),
        "error": error,
        **metrics,
    }
    (out_dir / "metrics.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return Result(job, curve, elapsed, error, metrics)


def run_jobs(
    jobs: Sequence[Job],
    *,
    site: Site,
    out: Path,
    parallel: int,
    seed: int,
    scheduler: str,
    log_level: str,
    timeout: float,
    progress: bool = True,
    extra: Mapping[str, str] | None = None,
    realistic: Realistic | None = None,
) -> list[Result]:
    """Serve the site and run ``jobs``, ``parallel`` at a time (largest budgets first);
    with ``realistic``, each crawl serves the realistic web for itself."""
    results: list[Result] = []
    ordered = sorted(jobs, key=lambda j: -j.group.budget)
    server = contextlib.nullcontext("") if realistic is not None else StaticServer(site.root)
    with server as base, ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [
            pool.submit(
                run_job,
                job,
                base=base,
                site=site,
                out=out,
                seed=seed,
                scheduler=scheduler,
                log_level=log_level,
                timeout=timeout,
                extra=extra,
                realistic=realistic,
            )
            for job in ordered
        ]
        try:
            finished = list(_progress(futures, len(jobs), progress))
        except BaseException:
            for future in futures:
                future.cancel()
            _CHILDREN.stop_all()
            raise
        results.extend(finished)
    return results


def _progress(futures: list[Future[Result]], total: int, progress: bool) -> Iterator[Result]:
    """Results as they finish, with one line per crawl when ``progress``."""
    for done, future in enumerate(as_completed(futures), 1):
        result = future.result()
        if progress:
            j = result.job
            status = result.error or (
                f"{result.curve.pages} pages, recall {result.curve.recall or 0:.3f}"
            )
            if not result.error and "non_article_share" in result.extra:
                status += f", non-article {result.extra['non_article_share']:.2f}"
            print(
                f"[{done}/{total}] {j.group.topic.name} {j.group.seeds_label} "
                f"{j.strategy} c={j.concurrency or 'default'}: {status} "
                f"({result.elapsed:.1f} s)",
                flush=True,
            )
        yield result


# --- numbers ----------------------------------------------------------------------------
def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def rows_of(results: Sequence[Result]) -> list[dict[str, object]]:
    """One ``quality.csv`` row per (group, strategy, concurrency): the median over its
    repeated crawls (each normalised by the oracle crawl of the same repetition)."""
    return aggregate_rows(run_rows(results))


def run_rows(results: Sequence[Result]) -> list[dict[str, object]]:
    """One row per crawl, normalised by its group's oracle of the same repetition."""
    oracles = {
        (r.job.group, r.job.concurrency, r.job.rep): r.curve
        for r in results
        if r.job.strategy == ORACLE
    }
    rows = []
    for r in sorted(results, key=_result_key):
        group, curve = r.job.group, r.curve
        oracle = oracles.get((group, r.job.concurrency, r.job.rep))
        recall = curve.recall_at(group.budget) if not r.error else None
        oracle_recall = oracle.recall_at(group.budget) if oracle else None
        auc = curve.auc_recall(group.budget) if not r.error else None
        oracle_auc = oracle.auc_recall(group.budget) if oracle else None
        rows.append(
            {
                "topic": group.topic.name,
                "seeds": group.seeds_label,
                "strategy": r.job.strategy,
                "budget": group.budget,
                "pages": curve.pages,
                "targets": len(group.targets),
                "targets_found": curve.targets_found,
                "recall": recall,
                "precision": curve.precision if not r.error else None,
                "oracle_recall": oracle_recall,
                "recall_over_oracle": _ratio(recall, oracle_recall),
                "auc_recall": _ratio(auc, oracle_auc),
                "repeats": 1,
                "recall_over_oracle_min": None,
                "recall_over_oracle_max": None,
                "_held_out": group.held_out,
                "_concurrency": r.job.concurrency,
                "_group": group,
                "_error": r.error,
                "_elapsed": r.elapsed,
                "_curve": curve,
                **{c: r.extra.get(c) for c in REALISTIC_COLUMNS if r.extra},
            }
        )
    return rows


def aggregate_rows(rows: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """Merge the rows of repeated crawls: the median of each `MEDIAN_COLUMNS` (failed
    crawls left out), the min and max of recall / oracle, ``repeats`` = crawls that did
    not fail. The page and target counts, the curve (plots, claim section) and the
    elapsed time are those of the median crawl by recall / oracle (the lower middle one
    for an even count); a row is marked failed only when every crawl of it failed."""
    merged: dict[tuple, list[dict[str, object]]] = {}
    for row in rows:
        key = (row["_group"], row["strategy"], row.get("_concurrency"))
        merged.setdefault(key, []).append(row)
    out = []
    for runs in merged.values():
        ok = [r for r in runs if not r["_error"]]
        if not ok:
            out.append({**runs[0], "repeats": 0})
            continue
        ranked = sorted(ok, key=lambda r: _num(r["recall_over_oracle"]))
        row = dict(ranked[(len(ranked) - 1) // 2])
        for col in (*MEDIAN_COLUMNS, *(c for c in REALISTIC_COLUMNS if c in row)):
            values = [float(v) for r in ok if isinstance(v := r[col], (int, float))]
            row[col] = statistics.median(values) if values else None
        ratios = [float(v) for r in ok if isinstance(v := r["recall_over_oracle"], float)]
        row["repeats"] = len(ok)
        row["recall_over_oracle_min"] = min(ratios) if ratios else None
        row["recall_over_oracle_max"] = max(ratios) if ratios else None
        out.append(row)
    return out


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else -math.inf


def _result_key(r: Result) -> tuple:
    g = r.job.group
    order = STRATEGY_ORDER.index(r.job.strategy) if r.job.strategy in STRATEGY_ORDER else 99
    return (g.held_out, g.index, order, r.job.strategy, r.job.rep)


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def cpu_time() -> float:
    """CPU minutes used so far by this process and the crawls it waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total / 60


def write_runs(results: Sequence[Result], path: Path) -> None:
    """One row per crawl: where it ran, how long it took, whether it failed."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            ["topic", "seeds", "strategy", "concurrency", "repetition", "pages", "seconds", "error"]
        )
        for r in sorted(results, key=lambda r: (r.job.concurrency or 0, _result_key(r))):
            g = r.job.group
            writer.writerow(
                [
                    g.topic.name,
                    g.seeds_label,
                    r.job.strategy,
                    r.job.concurrency or "default",
                    r.job.rep + 1,
                    r.curve.pages,
                    f"{r.elapsed:.1f}",
                    r.error,
                ]
            )


def _columns(rows: Sequence[dict[str, object]]) -> tuple[str, ...]:
    """The CSV columns of ``rows``: the clean web's, and the realistic web's after them
    when the rows have them."""
    realistic = any("non_article_share" in row for row in rows)
    return CSV_COLUMNS + REALISTIC_COLUMNS if realistic else CSV_COLUMNS


def write_csv(rows: Sequence[dict[str, object]], path: Path) -> None:
    columns = _columns(rows)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_cell(row.get(c), c) for c in columns])


#: Realistic columns that are counts: written as whole numbers.
_COUNT_COLUMNS = frozenset({"requests", "hosts_served", "hosts"})


def _csv_cell(value: object, column: str) -> str:
    if column in _COUNT_COLUMNS and isinstance(value, (int, float)):
        return str(round(value))
    return _fmt(value, 6)


def write_json(rows: Sequence[dict[str, object]], path: Path) -> None:
    """The rows of ``quality.csv`` as a JSON list (numbers as numbers), with the web."""
    columns = _columns(rows)
    data = [{c: row.get(c) for c in columns} for row in rows]
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def ranking(rows: Sequence[dict[str, object]], key: str = "auc_recall") -> list[str]:
    """Strategies (oracle excluded) by their mean ``key`` over the rows, best first."""
    values: dict[str, list[float]] = {}
    for row in rows:
        v = row[key]
        if row["strategy"] != ORACLE and isinstance(v, float):
            values.setdefault(str(row["strategy"]), []).append(v)
    means = {s: sum(v) / len(v) for s, v in values.items()}
    return sorted(means, key=lambda s: (-means[s], s))


def kendall_tau(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Kendall's tau between two rankings of the same items (1 = same order)."""
    common = [x for x in a if x in b]
    n = len(common)
    if n < 2:
        return None
    pos = {x: i for i, x in enumerate(b)}
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            score += 1 if pos[common[i]] < pos[common[j]] else -1
    return score / (n * (n - 1) / 2)


def plot_groups(results: Sequence[Result], out: Path, suffix: str = "") -> list[Path]:
    """One PNG per (topic, seed set): recall and precision vs pages, a line per strategy."""
    from focused.output.plot import plot_curves  # matplotlib only when drawing

    by_group: dict[Group, list[Result]] = {}
    for r in sorted(results, key=_result_key):
        if not r.error:
            by_group.setdefault(r.job.group, []).append(r)
    paths = []
    for group, rs in by_group.items():
        start = "off-topic start" if group.off_topic_start else "on-topic start"
        tag = " (held-out)" if group.held_out else ""
        title = (
            f"{group.topic.name}{tag}: seeds {group.seeds_label} ({start}), "
            f"{len(group.targets)} targets, budget {group.budget}{suffix and ', ' + suffix}"
        )
        path = out / f"{group.slug}{'-' + suffix if suffix else ''}.png"
        plot_curves({r.job.strategy: r.curve.points for r in rs}, path, title=title)
        paths.append(path)
    return paths


# --- the report -------------------------------------------------------------------------
def _table(rows: Sequence[dict[str, object]]) -> list[str]:
    lines = [
        "| topic | seeds | start | strategy | budget | pages | targets | found | recall "
        "| precision | recall / oracle | AUC / oracle |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        group = row["_group"]
        assert isinstance(group, Group)
        start = "off-topic" if group.off_topic_start else "on-topic"
        name = f"**{row['strategy']}**" if row["strategy"] == ORACLE else str(row["strategy"])
        if row["_error"]:
            name += f" (failed: {row['_error']})"
        lines.append(
            f"| {row['topic']} | {row['seeds']} | {start} | {name} | {row['budget']} "
            f"| {row['pages']} | {row['targets']} | {row['targets_found']} "
            f"| {_fmt(row['recall'])} | {_fmt(row['precision'])} "
            f"| {_ratio_cell(row)} | {_fmt(row['auc_recall'])} |"
        )
    return lines


def _ratio_cell(row: Mapping[str, object]) -> str:
    """recall / oracle, with its range over the crawls when the row was repeated."""
    cell = _fmt(row["recall_over_oracle"])
    low, high = row.get("recall_over_oracle_min"), row.get("recall_over_oracle_max")
    if cell and int(row.get("repeats") or 0) > 1 and low is not None and high is not None:
        cell += f" ({_fmt(low, 2)}-{_fmt(high, 2)})"
    return cell


def _means(rows: Sequence[dict[str, object]]) -> list[str]:
    """Mean of each strategy over the rows' groups."""
    keys = ("recall", "precision", "recall_over_oracle", "auc_recall")
    values: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        per = values.setdefault(str(row["strategy"]), {k: [] for k in keys})
        for k in keys:
            if isinstance(row[k], float):
                per[k].append(float(row[k]))  # type: ignore[arg-type]
    order = sorted(
        values,
        key=lambda s: STRATEGY_ORDER.index(s) if s in STRATEGY_ORDER else 99,
    )
    lines = [
        "| strategy | mean recall | mean precision | mean recall / oracle | mean AUC / oracle |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in order:
        cells = [_fmt(sum(v) / len(v)) if (v := values[s][k]) else "" for k in keys]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return lines


def realistic_section(rows: Sequence[dict[str, object]]) -> list[str]:
    """The realistic web's table: recall, precision, where the budget went, speed and
    host use of every crawl, then the means per strategy."""
    shown = {"recall": "recall", "precision": "precision", **REALISTIC_SHOWN}
    lines = [
        "## Realistic web: where the budget went",
        "",
        "non-article = duplicate + meta + chrome pages among the pages crawled (the rest: "
        "articles, and external/missing answers, which are not stored); fetched = the same "
        "among every page fetched until the budget, stored or not; pages/s over the "
        "crawl; host busy = busy-host-seconds / waiting-host-seconds; host utilisation "
        "(with DOWNLOAD_DELAY=d) = requests / (waiting-host-seconds / d) (docs/quality.md).",
        "",
        "| topic | seeds | strategy | " + " | ".join(shown.values()) + " |",
        "|---|---|---|" + "---:|" * len(shown),
    ]
    for row in rows:
        name = str(row["strategy"]) + (f" (failed: {row['_error']})" if row["_error"] else "")
        cells = [_fmt(row.get(c), 3 if c != "pages_per_s" else 1) for c in shown]
        lines.append(f"| {row['topic']} | {row['seeds']} | {name} | " + " | ".join(cells) + " |")
    keys = ("recall", "precision", "non_article_share", "fetched_non_article_share")
    keys += ("pages_per_s", "host_busy")
    keys += ("host_utilisation",)
    values: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        per = values.setdefault(str(row["strategy"]), {k: [] for k in keys})
        for k in keys:
            if isinstance(v := row.get(k), (int, float)):
                per[k].append(float(v))
    lines += [
        "",
        "| strategy | mean recall | mean precision | mean non-article "
        "| mean fetched non-article | mean pages/s | mean host busy | mean host utilisation |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = sorted(values, key=lambda s: STRATEGY_ORDER.index(s) if s in STRATEGY_ORDER else 99)
    for s in order:
        cells = [_fmt(sum(v) / len(v)) if (v := values[s][k]) else "" for k in keys]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def headline_numbers(rows: Sequence[dict[str, object]]) -> dict[str, dict[str, float | None]]:
    """Per strategy (oracle excluded): mean recall / oracle over the held-out rows (all,
    on-topic starts, off-topic starts), its worst held-out row, the held-out rows where it
    is at least annealing's, and the mean over the main (development) rows."""
    ratio: dict[tuple[Group, str], float] = {}
    for row in rows:
        v = row["recall_over_oracle"]
        if isinstance(v, float) and row["strategy"] != ORACLE:
            ratio[(row["_group"], str(row["strategy"]))] = v  # type: ignore[index]
    out: dict[str, dict[str, float | None]] = {}
    for name in sorted({s for _, s in ratio}, key=_strategy_rank):
        mine = {g: v for (g, s), v in ratio.items() if s == name}
        held = [v for g, v in mine.items() if g.held_out]
        versus = [
            v >= ratio[(g, "annealing")] - 1e-9
            for g, v in mine.items()
            if g.held_out and (g, "annealing") in ratio
        ]
        out[name] = {
            "held_out": _mean(held),
            "held_on": _mean([v for g, v in mine.items() if g.held_out and not g.off_topic_start]),
            "held_off": _mean([v for g, v in mine.items() if g.held_out and g.off_topic_start]),
            "held_worst": min(held) if held else None,
            "held_rows": float(len(held)),
            "vs_annealing": float(sum(versus)) if versus else None,
            "vs_rows": float(len(versus)),
            "main": _mean([v for g, v in mine.items() if not g.held_out]),
        }
    return out


def _strategy_rank(name: str) -> int:
    return STRATEGY_ORDER.index(name) if name in STRATEGY_ORDER else 99


def _headline(rows: Sequence[dict[str, object]]) -> list[str]:
    """The report's first table: held-out means first, the main topics beside them."""
    numbers = headline_numbers(rows)
    if not any(n["held_out"] is not None for n in numbers.values()):
        return [
            "## Headline",
            "",
            "No held-out topic in this run: the tables below are of the topics the "
            "strategies were developed on and say nothing of other topics "
            "(`--held-out-set` or `make bench-quality-heldout` measures them).",
            "",
        ]
    lines = [
        "## Headline: held-out topics first",
        "",
        "Mean recall / oracle per strategy over the held-out rows (topics no parameter was "
        "tuned on), by how the crawl starts, its worst held-out row, the held-out rows on "
        "which it is at least as good as `annealing`, and beside them the main topics "
        "(the ones the strategies were developed on).",
        "",
        "| strategy | held-out | on-topic starts | off-topic starts | worst held-out row "
        "| rows >= annealing | main topics |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n in numbers.items():
        versus = (
            f"{n['vs_annealing']:.0f} / {n['vs_rows']:.0f}"
            if n["vs_annealing"] is not None and name != "annealing"
            else ""
        )
        lines.append(
            f"| {name} | {_fmt(n['held_out'])} | {_fmt(n['held_on'])} | {_fmt(n['held_off'])} "
            f"| {_fmt(n['held_worst'])} | {versus} | {_fmt(n['main'])} |"
        )
    return [*lines, ""]


def write_markdown(
    path: Path,
    rows: Sequence[dict[str, object]],
    *,
    concurrency_label: str,
    compare: tuple[str, Sequence[dict[str, object]]] | None,
    settings_lines: Sequence[str],
    plots: Sequence[Path],
    elapsed: float,
    crawls: int,
    realistic: bool = False,
) -> None:
    """``quality.md``: the tables a person reads (``realistic``: of the realistic web,
    with its own table first)."""
    tuned = [r for r in rows if not r["_held_out"]]
    held = [r for r in rows if r["_held_out"]]
    served = (
        "dressed as real sites (chrome, meta pages, near-duplicates, dead and hanging "
        "hosts, robots.txt) over many loopback hosts with latency (bench/realweb)"
        if realistic
        else "served on 127.0.0.1"
    )
    lines = [
        "# Quality benchmark: recall and precision of each strategy "
        f"({'realistic web' if realistic else 'wikispeedia'})",
        "",
        "Real Scrapy crawls of the wikispeedia site (4,604 Wikipedia pages, real link graph, "
        f"reconstructed anchors) {served}. recall = targets crawled / targets "
        "reachable from the seeds; precision = targets crawled / pages crawled (harvest "
        "rate); both at the budget (BUDGET x reachable targets, equal for every strategy "
        "of a row group). *recall / oracle* and *AUC / oracle* (area under the recall "
        "curve up to the budget) divide by the oracle, which knows the labels (a link to "
        "a known target first, otherwise breadth-first).",
        "",
        *_headline(rows),
        *[f"- {line}" for line in settings_lines],
        f"- concurrency of the tables below: {concurrency_label}",
        f"- {crawls} crawls in {elapsed / 60:.1f} min wall time; {cpu_time():.1f} CPU-min "
        f"(crawls + server), load average {os.getloadavg()[0]:.1f} at the end",
        "",
        "Reading the numbers: precision can be at most targets / pages = 1 / BUDGET, which "
        "the oracle reaches when targets are near. The oracle is a strong reference, not a "
        "proven optimum: from an off-topic start its breadth-first part may find the "
        "first target later than a lucky strategy (AUC / oracle above 1). A strategy "
        "that stops before the budget (its frontier ran dry, e.g. `gao` drops every link "
        "of an irrelevant page) keeps its last recall.",
        "",
        *(realistic_section(rows) if realistic else []),
        "## Main topics",
        "",
        *_table(tuned),
        "",
        "Means over the main topics' seed sets:",
        "",
        *_means(tuned),
        "",
    ]
    if held:
        lines += [
            "## Held-out topics",
            "",
            "Topic files written once from general knowledge and never adjusted after "
            "seeing a result; the project's parameters were tuned on chemistry, physics and "
            "the development topics (biology, IT, religion). A "
            "strategy that is better only on chemistry shows here.",
            "",
            *_table(held),
            "",
            "Means over the held-out topics' seed sets:",
            "",
            *_means(held),
            "",
        ]
    lines += [
        "## Ranking (oracle excluded)",
        "",
        "| topics | by mean AUC / oracle | by mean recall at the budget |",
        "|---|---|---|",
    ]
    for name, part in (("main", tuned), ("held-out", held), ("all", rows)):
        if part:
            lines.append(
                f"| {name} | {' > '.join(ranking(part))} | {' > '.join(ranking(part, 'recall'))} |"
            )
    lines += ["", *_claim_section(rows)]
    if compare is not None:
        other_label, other_rows = compare
        lines += _concurrency_section(concurrency_label, rows, other_label, other_rows)
    if plots:
        lines += ["## Plots", ""]
        lines += [f"- [{p.name}]({p.name})" for p in plots]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def _claim_section(rows: Sequence[dict[str, object]]) -> list[str]:
    """The claim of Liu, Xia & Xu (2010): the m-value crawler's recall beats best-first
    late in the crawl."""
    lines = [
        "## The claim of Liu, Xia & Xu (2010): recall above best-first late in the crawl",
        "",
        "Recall difference to `best_first` at half the budget and at the budget (positive: "
        "the strategy found more targets). With targets as the measure, precision at a "
        "given page count is recall x targets / pages, so it differs by the same ratio.",
        "",
        "| topic | seeds | annealing @1/2 | annealing @end | genetic @1/2 | genetic @end |",
        "|---|---|---:|---:|---:|---:|",
    ]
    curves: dict[tuple[Group, str], HarvestCurve] = {}
    for row in rows:
        curve = row.get("_curve")
        if isinstance(curve, HarvestCurve) and not row["_error"]:
            curves[(row["_group"], str(row["strategy"]))] = curve  # type: ignore[index]
    groups = sorted({g for g, _ in curves}, key=lambda g: (g.held_out, g.index))
    wins = {"annealing": 0, "genetic": 0}
    compared = 0
    for g in groups:
        base = curves.get((g, "best_first"))
        if base is None:
            continue
        cells = []
        for name in ("annealing", "genetic"):
            curve = curves.get((g, name))
            for pages in (max(1, g.budget // 2), g.budget):
                if curve is None:
                    cells.append("")
                    continue
                diff = (curve.recall_at(pages) or 0.0) - (base.recall_at(pages) or 0.0)
                cells.append(f"{diff:+.3f}")
            if curve is not None:
                end = (curve.recall_at(g.budget) or 0) - (base.recall_at(g.budget) or 0)
                wins[name] += end >= 0.05
        compared += 1
        held = " (held-out)" if g.held_out else ""
        lines.append(f"| {g.topic.name}{held} | {g.seeds_label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Recall at the budget at least 0.05 above best-first: annealing in {wins['annealing']} "
        f"of {compared} seed sets, genetic in {wins['genetic']} of {compared}.",
        "",
    ]
    return lines


def _concurrency_section(
    label_a: str,
    rows_a: Sequence[dict[str, object]],
    label_b: str,
    rows_b: Sequence[dict[str, object]],
) -> list[str]:
    lines = [
        "## Does concurrency change the ranking?",
        "",
        "Scrapy lets later requests overtake earlier ones when several are in flight; "
        f"every crawl was run again at {label_b} (one request at a time: the frontier "
        "order is followed exactly). Ranking by AUC / oracle, oracle excluded.",
        "",
        f"| row group | {label_a} | {label_b} | same order | Kendall tau |",
        "|---|---|---|---|---:|",
    ]
    groups = sorted({r["_group"] for r in rows_a}, key=lambda g: (g.held_out, g.index))  # type: ignore[union-attr]
    changed = 0
    for g in groups:
        a = ranking([r for r in rows_a if r["_group"] == g])
        b = ranking([r for r in rows_b if r["_group"] == g])
        same = a == b
        changed += not same
        tau = kendall_tau(a, b)
        lines.append(
            f"| {g.topic.name}{' (held-out)' if g.held_out else ''} {g.seeds_label} "
            f"| {' > '.join(a)} | {' > '.join(b)} | {'yes' if same else 'no'} "
            f"| {_fmt(tau, 2)} |"
        )
    a, b = ranking(rows_a), ranking(rows_b)
    tau = kendall_tau(a, b)
    lines += [
        f"| **all** | {' > '.join(a)} | {' > '.join(b)} | {'yes' if a == b else 'no'} "
        f"| {_fmt(tau, 2)} |",
        "",
        f"Verdict: the overall ranking {'does not change' if a == b else 'changes'} "
        f"(Kendall tau {_fmt(tau, 2)}); {changed} of {len(groups)} row groups change order.",
        "",
        f"Means at {label_b}:",
        "",
        *_means(rows_b),
        "",
    ]
    return lines


# --- command line -----------------------------------------------------------------------
def _split(values: Sequence[str] | None) -> list[str]:
    """Flatten values given as several arguments and/or spaces/commas inside one."""
    out: list[str] = []
    for v in values or ():
        out += [x for x in re.split(r"[\s,]+", v) if x]
    return out


def _seed_sets(values: Sequence[str] | None) -> list[tuple[str, ...]]:
    """Seed sets: sets separated by spaces (or arguments), pages by commas."""
    sets = []
    for v in values or ():
        for chunk in v.split():
            pages = tuple(p for p in chunk.split(",") if p)
            if pages:
                sets.append(pages)
    return sets


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.quality",
        description=(
            "Crawl the labelled wikispeedia site with every strategy (real Scrapy crawls "
            "over loopback HTTP) and write quality.csv, quality.md and one plot per "
            "(topic, seed set)."
        ),
    )
    p.add_argument(
        "--topic",
        nargs="+",
        metavar="TOPIC",
        help=f"topic names (topics/) or topic file paths; default: {' '.join(DEFAULT_TOPICS)}",
    )
    p.add_argument(
        "--held-out",
        nargs="*",
        metavar="TOPIC",
        help="topics measured separately, labelled held-out; default: "
        f"{' '.join(DEFAULT_HELD_OUT)} (none with --topic, unless given; '--held-out' "
        "alone: none)",
    )
    p.add_argument(
        "--held-out-set",
        action="store_true",
        help="the frozen held-out set (bench/topics/heldout: twelve topics, an on-topic "
        "and an off-topic seed set each) as the held-out topics, instead of --held-out",
    )
    p.add_argument(
        "--category",
        nargs="+",
        metavar="PREFIX",
        help="label prefix of the targets (e.g. subject.Science.Chemistry): one for every "
        "topic, or one per topic in order (--topic, then --held-out); default: the "
        "topic file's category",
    )
    p.add_argument(
        "--seeds",
        nargs="+",
        metavar="SET",
        help="seed sets for every topic: pages separated by commas, sets by spaces, e.g. "
        "'Chemistry.html Water.html,Iron.html,Salt.html'; default: per topic (two sets, "
        "one starting off-topic)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=2.0,
        help="pages per crawl as a multiple of the targets reachable from the seeds (default 2)",
    )
    p.add_argument(
        "--strategies",
        nargs="+",
        metavar="NAME",
        help=f"strategies (default all: {' '.join(STRATEGY_ORDER)}); the oracle always runs",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        help="CONCURRENT_REQUESTS and CONCURRENT_REQUESTS_PER_DOMAIN of the crawls "
        "(default: the project's settings)",
    )
    p.add_argument(
        "--compare-concurrency",
        action="store_true",
        help="also run every crawl with CONCURRENT_REQUESTS=1 and report whether the "
        "ranking changes",
    )
    p.add_argument("--jobs", type=int, default=2, help="crawls run at a time (default 2)")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="crawl every (topic, seed set, strategy) N times (the oracle too) and report "
        "the median and the range of recall / oracle (default 1)",
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="FOCUSED_SEED of every crawl")
    p.add_argument(
        "--data",
        type=Path,
        help=f"the wikispeedia site folder (default: {DEFAULT_DATA} from the project root)",
    )
    p.add_argument(
        "--out", type=Path, help=f"output folder (default: {DEFAULT_OUT} in the project root)"
    )
    p.add_argument(
        "--scheduler",
        help="SCHEDULER of the crawls (default: the project's when focused/scheduler.py "
        "is committed, or there in a copy outside git; scrapy.core.scheduler.Scheduler "
        "when it is missing; an error when git does not track it)",
    )
    p.add_argument("--log-level", default="INFO", help="LOG_LEVEL of the crawls' logs")
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting for every crawl (repeatable), e.g. FOCUSED_RESCORE_EVERY=0",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before a crawl is killed")
    p.add_argument(
        "--web",
        choices=("clean", "realistic"),
        default="clean",
        help="clean: the site as it is, on 127.0.0.1 (default); realistic: dressed as real "
        "sites over --hosts loopback hosts (bench/realweb; docs/quality.md)",
    )
    p.add_argument(
        "--hosts", type=int, default=32, help="live hosts of the realistic web (default 32)"
    )
    p.add_argument(
        "--markup",
        choices=("named", "anonymous"),
        default="named",
        help='how the realistic web marks its regions: named (id="sidebar", default) or '
        "anonymous (generated class names: only what repeats across a host's pages tells "
        "chrome apart)",
    )
    p.add_argument(
        "--web-seed",
        type=int,
        help="seed of the realistic web's generator (default: --seed)",
    )
    p.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="DOWNLOAD_DELAY of the realistic web's crawls (politeness run: 1; default 0)",
    )
    p.add_argument(
        "--download-timeout",
        type=float,
        default=5.0,
        help="DOWNLOAD_TIMEOUT of the realistic web's crawls: what a hanging host costs "
        "(default 5)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line per crawl")
    return p


def _planned_topics(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """(topic argument, held out?) for every topic ``args`` name, held-out ones last."""
    topics = _split(args.topic) or list(DEFAULT_TOPICS)
    if getattr(args, "held_out_set", False):
        held = list(held_out_set())
    elif args.held_out is None:
        held = [] if args.topic else list(DEFAULT_HELD_OUT)
    else:
        held = _split(args.held_out)
    return [(t, False) for t in topics] + [(t, True) for t in held]


def _group_category(categories: list[str], i: int, topic: Topic) -> str:
    """The label prefix of the ``i``-th topic: its ``--category`` (one for all or one per
    topic), else the topic's own."""
    category = (categories[i] if len(categories) > 1 else categories[0]) if categories else ""
    category = category or topic.category
    if not category:
        raise BenchError(f"topic {topic.name}: no category; give one with --category")
    return category


def _topic_seed_sets(
    seed_sets: list[tuple[str, ...]],
    topic: Topic,
    site: Site,
    all_targets: frozenset[str],
    frozen: tuple[str, ...] = (),
) -> list[tuple[str, ...]]:
    """The seed sets a topic is crawled from: the given ones, else the held-out set's
    (``frozen``), else its defaults, else sets picked from the link graph."""
    if seed_sets:
        return seed_sets
    if frozen:
        return [tuple(s.split(",")) for s in frozen]
    if topic.name in DEFAULT_SEED_SETS:
        return [tuple(s.split(",")) for s in DEFAULT_SEED_SETS[topic.name]]
    return list(site.auto_seed_sets(all_targets))


def plan(args: argparse.Namespace, site: Site) -> list[Group]:
    """The (topic, seed set) groups that ``args`` describe."""
    everything = _planned_topics(args)
    categories = _split(args.category)
    if categories and len(categories) not in (1, len(everything)):
        raise BenchError(
            f"--category: give one prefix or one per topic ({len(everything)}), "
            f"got {len(categories)}"
        )
    seed_sets = _seed_sets(args.seeds)
    if args.budget <= 0:
        raise BenchError(f"--budget must be > 0, got {args.budget}")
    frozen = held_out_set() if getattr(args, "held_out_set", False) else {}
    groups: list[Group] = []
    for i, (arg, held_out) in enumerate(everything):
        try:
            topic = load_topic(arg)
        except TopicError as exc:
            raise BenchError(str(exc)) from None
        category = _group_category(categories, i, topic)
        all_targets = site.targets(category)
        if not all_targets:
            raise BenchError(f"no page of {site.root} is labelled under {category!r}")
        topic_arg = str(Path(arg).resolve()) if Path(arg).is_file() else topic.name
        sets = _topic_seed_sets(
            seed_sets, topic, site, all_targets, frozen.get(arg, ()) if held_out else ()
        )
        for pages in sets:
            seeds = tuple(dict.fromkeys(site.resolve(p) for p in pages))
            reachable = all_targets & site.reachable(seeds)
            if not reachable:
                raise BenchError(f"{topic.name}: no {category} page is reachable from {seeds}")
            budget = max(1, round(args.budget * len(reachable)))
            groups.append(
                Group(
                    topic,
                    topic_arg,
                    category,
                    seeds,
                    frozenset(reachable),
                    budget,
                    held_out,
                    len(groups),
                )
            )
    return groups


def strategies_of(args: argparse.Namespace) -> list[str]:
    names = _split(args.strategies) or list(STRATEGY_ORDER)
    valid = {*STRATEGIES, ORACLE}
    unknown = [n for n in names if strategy_setting(n).replace(ORACLE_CLASS, ORACLE) not in valid]
    for n in names:
        variant_settings(n)
    if unknown:
        raise BenchError(
            f"unknown strategy {', '.join(unknown)}; valid: {', '.join(sorted(valid))}"
        )
    if ORACLE not in names:
        names.insert(0, ORACLE)
    return list(dict.fromkeys(names))


def _extra_settings(items: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` arguments as a settings dict."""
    extra: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise BenchError(f"--set takes NAME=VALUE, got {item!r}")
        extra[name.strip()] = value
    return extra


def _concurrency_label(concurrency: int | None) -> str:
    """How the report names the concurrency the main crawls ran at."""
    if concurrency:
        return f"CONCURRENT_REQUESTS={concurrency} (per domain {concurrency})"
    requests, per_domain = project_concurrency()
    return (
        f"project default (CONCURRENT_REQUESTS={requests}, per domain {per_domain}: "
        f"{min(requests, per_domain)} in flight on the one host)"
    )


def _settings_lines(
    args: argparse.Namespace,
    site: Site,
    *,
    scheduler: str | None,
    compare: bool,
    repeat: int,
    extra: dict[str, str],
) -> list[str]:
    """The report's "settings" list: data, scheduler, budget, files and any extras."""
    lines = [
        f"data: {site.root.resolve()} (labels.tsv, {len(site.graph)} pages)",
        f"scheduler: {scheduler or 'project default (focused.scheduler.FocusedScheduler)'}",
        f"budget: {args.budget:g} x reachable targets; FOCUSED_SEED={args.seed}, "
        f"PYTHONHASHSEED={args.seed}, AUTOTHROTTLE_ENABLED=False, {args.jobs} crawls at a time",
        "CSV: quality.csv"
        + (" (and quality-c1.csv at CONCURRENT_REQUESTS=1)" if compare else "")
        + "; each crawl's folder, log and timing: runs/, runs.csv",
    ]
    if repeat > 1:
        lines.append(
            f"every crawl repeated {repeat} times (the oracle too; each crawl divided by the "
            "oracle of its repetition): the tables give the median of each number and, after "
            "recall / oracle, its min-max; plots and page counts are the median crawl's"
        )
    if extra:
        lines.append("settings: " + ", ".join(f"{k}={v}" for k, v in extra.items()))
    if scheduler:
        lines.append(
            "annealing runs without its simulated-annealing pick (it lives in "
            "focused.scheduler.FocusedScheduler): its link scores only (genetic + tunneling)"
        )
    return lines


def realistic_of(args: argparse.Namespace, site: Site) -> Realistic | None:
    """The realistic web ``args`` ask for (``--web realistic``), else None."""
    if args.web != "realistic":
        return None
    from bench.realweb.web import MAX_HOSTS, RealWeb

    if not 3 <= args.hosts <= MAX_HOSTS:
        raise BenchError(f"--hosts must be in 3..{MAX_HOSTS}, got {args.hosts}")
    if args.delay < 0 or args.download_timeout <= 0:
        raise BenchError("--delay must be >= 0 and --download-timeout > 0")
    seed = args.seed if args.web_seed is None else args.web_seed
    web = RealWeb(site.root, seed=seed, hosts=args.hosts, markup=args.markup)
    return Realistic(web, delay=args.delay, download_timeout=args.download_timeout)


def _realistic_lines(realistic: Realistic, args: argparse.Namespace) -> list[str]:
    web = realistic.web
    kinds = ", ".join(
        f"{sum(h.kind == k for h in web.live_hosts)} {k}" for k in ("wiki", "news", "forum")
    )
    return [
        f"web: realistic (bench/realweb, generator seed {web.seed}, {web.markup} markup): "
        f"{len(web.live_hosts)} "
        f"live hosts ({kinds}), {len(web.dead_hosts)} dead, {len(web.hanging_hosts)} "
        "hanging; each crawl serves it on its own port",
        f"DOWNLOAD_DELAY={realistic.delay:g}, DOWNLOAD_TIMEOUT="
        f"{realistic.download_timeout:g}, FOCUSED_HOSTS maps every host name to its "
        "loopback address; quality.json: the rows of quality.csv; runs/*/*/*/metrics.json: "
        "each crawl's numbers",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    try:
        data = (args.data if args.data is not None else ROOT / DEFAULT_DATA).resolve()
        site = Site.load(data)
        groups = plan(args, site)
        names = strategies_of(args)
        realistic = realistic_of(args, site)
        scheduler = args.scheduler if args.scheduler is not None else default_scheduler()
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    default_out = DEFAULT_OUT if realistic is None else DEFAULT_REALISTIC_OUT
    out = (args.out if args.out is not None else ROOT / default_out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    extra = _extra_settings(args.settings)
    label = _concurrency_label(args.concurrency)
    levels: list[int | None] = [args.concurrency]
    if args.compare_concurrency and args.concurrency != 1:
        levels.append(1)
    repeat = max(1, args.repeat)
    jobs = [Job(g, s, c, k) for k in range(repeat) for c in levels for g in groups for s in names]
    print(
        f"quality benchmark: {len(groups)} seed sets x {len(names)} strategies x "
        f"{len(levels)} concurrency x {repeat} repeats = {len(jobs)} crawls, "
        f"{args.jobs} at a time; "
        f"out {out}",
        flush=True,
    )
    results = run_jobs(
        jobs,
        site=site,
        out=out,
        parallel=max(1, args.jobs),
        seed=args.seed,
        scheduler=scheduler,
        log_level=args.log_level,
        timeout=args.timeout,
        progress=not args.quiet,
        extra=extra,
        realistic=realistic,
    )
    main_results = [r for r in results if r.job.concurrency == args.concurrency]
    rows = rows_of(main_results)
    write_csv(rows, out / "quality.csv")
    if realistic is not None:
        write_json(rows, out / "quality.json")
    plots = plot_groups(main_results, out)
    compare = None
    if len(levels) > 1:
        c1 = [r for r in results if r.job.concurrency == 1]
        c1_rows = rows_of(c1)
        write_csv(c1_rows, out / "quality-c1.csv")
        plots += plot_groups(c1, out, suffix="c1")
        compare = ("CONCURRENT_REQUESTS=1", c1_rows)
    elapsed = time.monotonic() - started
    settings_lines = _settings_lines(
        args, site, scheduler=scheduler, compare=compare is not None, repeat=repeat, extra=extra
    )
    if realistic is not None:
        settings_lines = [*settings_lines, *_realistic_lines(realistic, args)]
    write_runs(results, out / "runs.csv")
    write_markdown(
        out / "quality.md",
        rows,
        concurrency_label=label,
        compare=compare,
        settings_lines=settings_lines,
        plots=plots,
        elapsed=elapsed,
        crawls=len(jobs),
        realistic=realistic is not None,
    )
    failed = [r for r in results if r.error]
    print(
        f"wrote {out / 'quality.csv'}, {out / 'quality.md'} and {len(plots)} plots "
        f"in {elapsed:.0f} s",
        flush=True,
    )
    if failed:
        print(f"error: {len(failed)} crawl(s) failed; see quality.md", file=sys.stderr)
        return 1
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)  # stop the crawls too, as on Ctrl-C
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: running crawls stopped", file=sys.stderr)
        sys.exit(130)
