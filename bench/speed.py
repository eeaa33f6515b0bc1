"""Speed benchmark (``make bench-speed``): what focusing costs next to plain Scrapy.

Four parts, written to ``out/bench/speed.json`` and ``out/bench/speed.md``:

- **throughput**: real crawls (``python -m scrapy crawl focused`` per strategy, and the
  plain-Scrapy spider of :mod:`bench.plain`: Scrapy's default scheduler and
  dupefilter, no focused middleware or pipeline, items to a JSON lines feed) of the same
  site served by a separate process: the sandbox (``python -m focused.web.sandbox --pages
  20000 --port 0``) and the wikispeedia site (``python -m bench.server``). Runs
  alternate plain / focused (A B A B ...), one pair per strategy per round; every run has
  the same page budget (``CLOSESPIDER_ITEMCOUNT``), ``CONCURRENT_REQUESTS``, AutoThrottle
  off and ``LOG_LEVEL=WARNING``. The :class:`Probe` extension times each crawl from its
  first item to its last (start-up excluded) and reads the process's CPU time over the
  same span. Per strategy: median pages/s, and the ratio focused/plain as the median of
  the per-pair ratios (a pair runs back to back, so a shared machine's load hits both);
  ``throughput.ratio_min`` is the worst (site, strategy).
- **profile**: one focused crawl and one plain crawl under cProfile; the cost per page of
  parsing, tokenising, vectorising, SQLite, gzip, scheduling ...
- **frontier**: N pushes then N annealing picks on :class:`focused.frontier.memory.MemoryFrontier`
  (100k and 1M): µs per push and per pick, bytes per URL held (tracemalloc, RSS).
- **dedup**: :class:`focused.frontier.seen.SeenSet` at 1M and 10M fingerprints against Scrapy's
  ``RFPDupeFilter`` at 1M: bytes per URL, µs per test, false drops (a new URL reported
  seen: must be 0).

The micro-benchmarks run in child processes (``--worker``), so that each one measures its
own memory; their µs are CPU time (``time.process_time``), which other work on a shared
machine disturbs far less than wall time. Nothing here is a test:
``tests/test_bench_speed.py`` runs the harness with tiny sizes and checks its output,
never a time.

Usage: ``python -m bench.speed --help``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from scrapy import signals

from bench import command
from bench.process import URLServer
from focused import settings as project_settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path("..") / "shared" / "data" / "wikispeedia-site"
DEFAULT_OUT = Path("out") / "bench"
CHEMISTRY = "subject.Science.Chemistry"
WIKI_SEED = "/wiki/Chemistry.html"

#: The project's speed targets: (key, comparison, limit, aim)
TARGETS = (
    ("throughput.ratio_min", ">=", 0.9, 0.95),
    ("throughput.cpu_ratio_replay_min", ">=", 0.9, 1.0),
    ("throughput.cpu_ratio_replay_min_but_learning", ">=", 1.0, 1.0),
    ("rss.ratio", "<=", 1.2, 1.0),
    ("frontier.bytes_per_url", "<=", 200, 100),
    ("frontier.pick_us", "<=", 50, 20),
    ("dedup.bytes_per_url", "<=", 32, 16),
    ("dedup.false_drops", "==", 0, 0),
)


# --- the probe inside each crawl ----------------------------------------------------------
class Probe:
    """Extension: times a crawl from its first scraped item to its last.

    Writes ``{"items", "responses", "seconds", "cpu_seconds", "reason"}`` to the file named
    by the setting ``SPEED_PROBE_FILE`` when the spider closes. ``seconds`` and
    ``cpu_seconds`` (this process's CPU time, all threads; ``thread_cpu_seconds``: Scrapy's
    thread alone) span first item to last item, so start-up
    (imports, jieba's dictionary, the topic) and shutdown (plots) are left out. With
    ``SPEED_PROFILE_FILE`` set, the same span is profiled with cProfile (up to the
    ``CLOSESPIDER_ITEMCOUNT``-th item) and the stats dumped there. With
    ``SPEED_URLS_FILE`` set, the URLs of the pages fetched (robots.txt and redirect
    targets left out) until the budget's last item are written there, one a line, in
    the order their responses came: what a replay fetches. ``responses_in_span``: the
    responses received from the first item to the last; ``max_rss_kb``: the process's
    peak resident set (``ru_maxrss``) at close. ``SPEED_WINDOW_FROM`` and
    ``SPEED_WINDOW_TO`` (response counts): ``window_cpu_seconds`` is the CPU time (user +
    sys, all threads) from the ``FROM``-th response received to the ``TO``-th, a window
    counted in responses, which items cannot shift (a page store that commits in
    batches hands its first item out only with its first commit).
    """

    def __init__(
        self,
        path: str,
        profile_path: str = "",
        budget: int = 0,
        urls_path: str = "",
        window: tuple[int, int] = (0, 0),
    ) -> None:
        self.path = path
        self.window = window
        self.window_cpu: list[float] = []
        self.profile_path = profile_path
        self.budget = budget
        self.urls_path = urls_path
        self.urls: list[str] = []
        self.responses_first = self.responses_last = 0
        self.profiler: Any = None
        self.items = 0
        self.responses = 0
        self.body_bytes = 0
        self.scheduled = 0  # requests handed to the scheduler after the first item
        self.t_first = self.t_last = 0.0
        self.cpu_first = self.cpu_last = 0.0
        self.thread_first = self.thread_last = 0.0
        self.times_first = self.times_last = os.times()
        self.gc_seconds = 0.0
        self.gc_collections = 0
        self._gc_start = 0.0

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
        elif self.items:
            self.gc_seconds += time.process_time() - self._gc_start
            self.gc_collections += 1

    @classmethod
    def from_crawler(cls, crawler: Any) -> Probe:
        s = crawler.settings
        probe = cls(
            s.get("SPEED_PROBE_FILE") or "speed-probe.json",
            s.get("SPEED_PROFILE_FILE") or "",
            s.getint("CLOSESPIDER_ITEMCOUNT"),
            s.get("SPEED_URLS_FILE") or "",
            (s.getint("SPEED_WINDOW_FROM"), s.getint("SPEED_WINDOW_TO")),
        )
        crawler.signals.connect(probe.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(probe.response_received, signal=signals.response_received)
        crawler.signals.connect(probe.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(probe.spider_closed, signal=signals.spider_closed)
        gc.callbacks.append(probe._gc)
        return probe

    def response_received(self, response: Any = None, request: Any = None, **kwargs: Any) -> None:
        self.responses += 1
        if self.window[1] and self.responses in self.window:
            self.window_cpu.append(time.process_time())
        if self.items and response is not None:
            self.body_bytes += len(response.body)
        if (
            self.urls_path
            and request is not None
            and (not self.budget or self.items < self.budget)
            and "redirect_urls" not in request.meta
            and not request.url.endswith("/robots.txt")
        ):
            self.urls.append(request.url)

    def request_scheduled(self, **kwargs: Any) -> None:
        if self.items and (not self.budget or self.items < self.budget):
            self.scheduled += 1

    def item_scraped(self, **kwargs: Any) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        if not self.items:
            self.t_first, self.cpu_first = now, cpu
            self.thread_first = time.thread_time()
            self.times_first = os.times()
            self.responses_first = self.responses
            if self.profile_path:
                import cProfile

                self.profiler = cProfile.Profile()
                self.profiler.enable()
        self.items += 1
        self.t_last, self.cpu_last = now, cpu
        self.thread_last = time.thread_time()
        self.responses_last = self.responses
        if self.items == self.budget:
            self.times_last = os.times()
            self._stop_profile()

    def _stop_profile(self) -> None:
        if self.profiler is not None:
            self.profiler.disable()
            self.profiler.dump_stats(self.profile_path)
            self.profiler = None
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._gc)

    def spider_closed(self, reason: str = "") -> None:
        self._stop_profile()
        if self.items != self.budget:
            self.times_last = os.times()
        data = {
            "items": self.items,
            "responses": self.responses,
            "seconds": self.t_last - self.t_first,
            "cpu_seconds": self.cpu_last - self.cpu_first,
            "thread_cpu_seconds": self.thread_last - self.thread_first,
            "user_seconds": self.times_last.user - self.times_first.user,
            "system_seconds": self.times_last.system - self.times_first.system,
            "kb_per_page": self.body_bytes / 1024 / max(1, self.items - 1),
            "links_per_page": self.scheduled / max(1, self.items - 1),
            "gc_seconds": self.gc_seconds,
            "gc_collections": self.gc_collections,
            "gc_tracked_objects": len(gc.get_objects()),
            "responses_in_span": self.responses_last - self.responses_first,
            "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "window_cpu_seconds": (
                self.window_cpu[1] - self.window_cpu[0] if len(self.window_cpu) == 2 else None
            ),
            "window_responses": self.window[1] - self.window[0],
            "reason": reason,
        }
        if self.urls_path:
            Path(self.urls_path).write_text("".join(u + "\n" for u in self.urls), "utf-8")
        Path(self.path).write_text(json.dumps(data), encoding="utf-8")


PROBE = "bench.speed.Probe"


def probe_class(tree: Path) -> str:
    """The :class:`Probe`'s dotted path in the copy of the project at ``tree``: a tree
    from before the benchmarks left the ``focused`` package has it in ``focused.bench``."""
    if (
        not (tree / "bench" / "speed.py").is_file()
        and (tree / "focused" / "bench" / "speed.py").is_file()
    ):
        return "focused.bench.speed.Probe"
    return PROBE


# --- servers in their own processes ------------------------------------------------------
#: A command that prints its base URL on its first line, then serves until stopped.
ServerProcess = URLServer


def sandbox_server(pages: int, seed: int = 7) -> ServerProcess:
    cmd = [sys.executable, "-m", "focused.web.sandbox", "--port", "0"]
    cmd += ["--pages", str(pages), "--seed", str(seed)]
    return ServerProcess(cmd, "sandbox server")


def static_server(folder: Path) -> ServerProcess:
    cmd = [sys.executable, "-m", "bench.server", str(folder), "--port", "0"]
    return ServerProcess(cmd, "wikispeedia server")


def sandbox_seeds(base: str, pages: int, seed: int = 7) -> list[str]:
    """The chemistry seeds the embedded sandbox would give (same generator, same seed)."""
    from focused.web.sandbox import generate_site

    site = generate_site(seed=seed, pages=pages)
    return [base + path for path in site.seeds(CHEMISTRY)]


# --- one crawl -----------------------------------------------------------------------------
def common_settings(pages: int, concurrency: int, probe_file: Path) -> dict[str, str]:
    return {
        "CLOSESPIDER_ITEMCOUNT": str(pages),
        "CONCURRENT_REQUESTS": str(concurrency),
        "CONCURRENT_REQUESTS_PER_DOMAIN": str(concurrency),
        "AUTOTHROTTLE_ENABLED": "False",
        "LOG_LEVEL": "WARNING",
        "EXTENSIONS": json.dumps({PROBE: 0}),
        "SPEED_PROBE_FILE": str(probe_file),
    }


#: the project's garbage-collector tuning (``--plain-gc-tuning`` gives it to plain Scrapy)
GC_TUNING = "focused.collector.GarbageCollectorTuning"


def crawl_command(
    kind: str,
    *,
    seeds: Sequence[str],
    labels: str,
    out_dir: Path,
    pages: int,
    concurrency: int,
    probe_file: Path,
    extra: dict[str, str] | None = None,
    replay: Path | None = None,
    plain_extensions: Sequence[str] = (),
) -> list[str]:
    """``kind`` is ``plain`` or a strategy name (``name@SETTING=value@...``: with those
    settings); ``extra`` settings go last. ``replay``
    (plain only): fetch exactly the URLs listed in that file (:mod:`bench.plain`).
    ``plain_extensions``: extensions a plain crawl runs beside the probe (e.g. the
    project's garbage-collector tuning, for a like-for-like baseline)."""
    settings = common_settings(pages, concurrency, probe_file)
    kind, *variant = kind.split("@")  # strategy@SETTING=value@...: a variant of it
    if kind != "plain":
        settings.update(
            {
                "FOCUSED_WEB": "real",
                "FOCUSED_SEEDS": ",".join(seeds),
                "FOCUSED_LABELS": labels,
                "FOCUSED_TARGET_CATEGORY": CHEMISTRY,
                "FOCUSED_STRATEGY": kind,
                "FOCUSED_METRICS_LOG_EVERY": "0",
                # the project's own extensions (the crawl's output, the atomic
                # spider.state) stay on beside the probe: their cost is the crawl's
                "EXTENSIONS": json.dumps({**project_settings.EXTENSIONS, PROBE: 0}),
            }
        )
        settings.update(dict(v.split("=", 1) for v in variant))
        settings.update(extra or {})
        return command.crawl_command("chemistry", output_dir=out_dir, settings=settings)
    if plain_extensions:
        settings["EXTENSIONS"] = json.dumps({PROBE: 0, **dict.fromkeys(plain_extensions, 0)})
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench/plain.py")]
    cmd += ["-a", f"seeds={','.join(seeds)}"]
    if replay is not None:
        cmd += ["-a", f"replay={replay}"]
        settings["CLOSESPIDER_ITEMCOUNT"] = "0"  # it closes once every URL is answered
        settings["DOWNLOADER_MIDDLEWARES"] = json.dumps(
            {"focused.robustness.RobustnessMiddleware": None, "bench.plain.ReplayOnly": 50}
        )
    feed = {str(out_dir / "items.jsonl"): {"format": "jsonlines"}}
    settings["FEEDS"] = json.dumps(feed)
    # Scrapy's own resolver: the project's refuses loopback unless its address filter
    # middleware (not in a plain crawl) has seen loopback seeds
    settings["TWISTED_DNS_RESOLVER"] = "scrapy.resolver.CachingThreadedResolver"
    settings.update(extra or {})
    for name, value in settings.items():
        cmd += ["-s", f"{name}={command.setting_value(value)}"]
    return cmd


class Children:
    """Child processes alive, so that an interrupted benchmark stops them too."""

    alive: set[subprocess.Popen[bytes]] = set()  # noqa: RUF012 - one per process

    @classmethod
    def run(cls, cmd: list[str], timeout: float, log: Path, cwd: Path = ROOT) -> int:
        with log.open("wb") as fh:
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
            cls.alive.add(proc)
            try:
                return proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                return -9
            finally:
                cls.alive.discard(proc)

    @classmethod
    def stop_all(cls) -> None:
        for proc in list(cls.alive):
            with contextlib.suppress(OSError):
                proc.kill()


def _no_log(msg: str) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What the crawls of one part share: each crawl's page budget (``pages``),
    ``CONCURRENT_REQUESTS`` (``concurrency``), the scratch folder (``work``), the seconds a
    crawl may take (``timeout``), the rounds of pairs (``pairs``) and the progress
    ``log``; :meth:`on` gives the plan of one site (its name, seed URLs and labels)."""

    pages: int
    concurrency: int
    work: Path
    timeout: float
    pairs: int = 1
    log: Callable[[str], None] = _no_log
    site: str = ""
    seeds: Sequence[str] = ()
    labels: str = ""
    plain_extensions: Sequence[str] = ()

    def on(self, site: str, seeds: Sequence[str], labels: str) -> RunPlan:
        """This plan on ``site``."""
        return dataclasses.replace(self, site=site, seeds=seeds, labels=labels)

    def command(self, kind: str, out_dir: Path, probe_file: Path, **kw: Any) -> list[str]:
        """:func:`crawl_command` of a ``kind`` crawl of this plan's site."""
        return crawl_command(
            kind,
            seeds=self.seeds,
            labels=self.labels,
            out_dir=out_dir,
            pages=self.pages,
            concurrency=self.concurrency,
            probe_file=probe_file,
            plain_extensions=self.plain_extensions,
            **kw,
        )


def run_crawl(
    kind: str,
    plan: RunPlan,
    *,
    tag: str,
    extra: dict[str, str] | None = None,
    replay: Path | None = None,
) -> dict[str, Any]:
    """One crawl of ``plan``'s site in a subprocess; its probe's numbers plus pages/s and
    CPU ms per page. ``extra[TREE]``: crawl with the copy of the project in that folder (a
    before/after); ``replay``: a plain crawl of exactly the URLs listed in that file."""
    extra = dict(extra or {})
    tree = Path(extra.pop(TREE, ROOT))
    if probe_class(tree) != PROBE:  # an older tree crawls with its own probe
        extra["EXTENSIONS"] = json.dumps({probe_class(tree): 0})
    out_dir = plan.work / f"{plan.site}-{kind}-{tag}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    probe_file = out_dir / "probe.json"
    cmd = plan.command(kind, out_dir, probe_file, extra=extra, replay=replay)
    started = time.monotonic()
    code = Children.run(cmd, plan.timeout, out_dir / "crawl.log", cwd=tree)
    result: dict[str, Any] = {"kind": kind, "returncode": code}
    result["wall_s"] = round(time.monotonic() - started, 3)
    if probe_file.exists():
        probe = json.loads(probe_file.read_text(encoding="utf-8"))
        result.update(probe)
        n, secs = probe["items"], probe["seconds"]
        result["pages_s"] = round((n - 1) / secs, 2) if n > 1 and secs > 0 else None
        cpu = probe["cpu_seconds"]
        result["cpu_ms_per_page"] = round(1000 * cpu / (n - 1), 3) if n > 1 else None
        if n > 1 and "thread_cpu_seconds" in probe:
            result["thread_cpu_ms_per_page"] = round(
                1000 * probe["thread_cpu_seconds"] / (n - 1), 3
            )
        result["kb_per_page"] = round(probe.get("kb_per_page", 0.0), 2)
        result["links_per_page"] = round(probe.get("links_per_page", 0.0), 2)
        if n > 1 and "system_seconds" in probe:
            result["sys_ms_per_page"] = round(1000 * probe["system_seconds"] / (n - 1), 3)
        fetched = probe.get("responses_in_span", 0)
        result["cpu_ms_per_fetched"] = round(1000 * cpu / fetched, 3) if fetched else None
        gc_s = probe.get("gc_seconds")
        result["gc_ms_per_fetched"] = (
            round(1000 * gc_s / fetched, 3) if fetched and gc_s is not None else None
        )
        result["fetched_s"] = round(fetched / secs, 2) if fetched and secs > 0 else None
        win, win_n = probe.get("window_cpu_seconds"), probe.get("window_responses")
        result["window_cpu_ms_per_fetched"] = (
            round(1000 * win / win_n, 3) if win is not None and win_n else None
        )
    else:
        result["pages_s"] = result["cpu_ms_per_page"] = None
    shutil.rmtree(out_dir / "html", ignore_errors=True)  # page bodies: not needed
    return result


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.median(got), 4) if got else None


#: (key of a row, key of its crawls): the medians over a row's crawls, in the JSON's order
_MEDIANS = (
    ("median_pages_s", "pages_s"),
    ("median_cpu_ms_per_page", "cpu_ms_per_page"),
    ("median_sys_ms_per_page", "sys_ms_per_page"),
    ("median_thread_cpu_ms_per_page", "thread_cpu_ms_per_page"),
    ("median_kb_per_page", "kb_per_page"),
    ("median_links_per_page", "links_per_page"),
)


def _medians(
    runs: Sequence[dict[str, Any]], keys: Sequence[tuple[str, str]] = _MEDIANS
) -> dict[str, Any]:
    """The medians (``keys``) over ``runs``, the crawls of one row (a crawl without a
    number does not count)."""
    return {name: _median([x.get(key) for x in runs]) for name, key in keys}


def throughput(
    sites: dict[str, tuple[list[str], str]], strategies: Sequence[str], plan: RunPlan
) -> dict[str, Any]:
    """Alternating plain / focused runs (``plan.pairs`` rounds); per site and strategy the
    medians and ratios."""
    pairs, log = plan.pairs, plan.log
    out: dict[str, Any] = {
        "pages_per_run": plan.pages,
        "pairs": pairs,
        "concurrency": plan.concurrency,
        "order": "per round, for each strategy: plain then focused (A B A B ...)",
        "sites": {},
    }
    ratios: dict[str, float] = {}
    for site, (seeds, labels) in sites.items():
        at = plan.on(site, seeds, labels)
        runs: dict[str, list[dict[str, Any]]] = {"plain": []}
        pair_ratios: dict[str, list[float]] = {s: [] for s in strategies}
        cpu_ratios: dict[str, list[float]] = {s: [] for s in strategies}
        for s in strategies:
            runs[s] = []
        for r in range(pairs):
            for s in strategies:
                a = run_crawl("plain", at, tag=str(r))
                b = run_crawl(s, at, tag=str(r))
                runs["plain"].append({**a, "round": r, "paired_with": s})
                runs[s].append({**b, "round": r})
                if a["pages_s"] and b["pages_s"]:
                    pair_ratios[s].append(b["pages_s"] / a["pages_s"])
                if a["cpu_ms_per_page"] and b["cpu_ms_per_page"]:
                    cpu_ratios[s].append(a["cpu_ms_per_page"] / b["cpu_ms_per_page"])
                log(
                    f"throughput {site} round {r + 1}/{pairs}: plain {a['pages_s']} pages/s,"
                    f" {s} {b['pages_s']} pages/s"
                )
        plain = runs["plain"]
        site_out: dict[str, Any] = {
            "plain": {**_medians(plain), "runs": plain},
            "strategies": {},
        }
        for s in strategies:
            ratio = _median(pair_ratios[s])
            site_out["strategies"][s] = {
                **_medians(runs[s]),
                "ratio": ratio,
                "pair_ratios": [round(x, 4) for x in pair_ratios[s]],
                "cpu_ratio": _median(cpu_ratios[s]),
                "runs": runs[s],
            }
            if ratio is not None:
                ratios[f"{site}/{s}"] = ratio
        out["sites"][site] = site_out
    if ratios:
        worst = min(ratios, key=ratios.__getitem__)
        out["ratio_min"] = ratios[worst]
        out["ratio_min_at"] = worst
    else:
        out["ratio_min"] = None
    return out


# --- replay: plain Scrapy fetches the pages a focused crawl fetched -------------------
def _spread(values: Sequence[float | None]) -> list[float] | None:
    got = [v for v in values if v is not None]
    return [round(min(got), 4), round(max(got), 4)] if got else None


def _replay_pair(strategy: str, plan: RunPlan, r: int) -> dict[str, Any]:
    """A focused crawl of ``plan``'s site that lists the pages it fetched, then plain
    Scrapy replaying them."""
    lists = plan.work / "replay-lists"
    lists.mkdir(exist_ok=True)
    listed = lists / f"{plan.site}-{strategy}-{r}.txt"
    plain_urls = lists / f"{plan.site}-{strategy}-{r}-plain.txt"
    # CPU from the (pages/10)-th response to the (pages - pages/10)-th, on both sides
    window = {
        "SPEED_WINDOW_FROM": str(max(2, plan.pages // 10)),
        "SPEED_WINDOW_TO": str(plan.pages - plan.pages // 10),
    }
    b = run_crawl(
        strategy, plan, tag=f"replay-{r}", extra={"SPEED_URLS_FILE": str(listed), **window}
    )
    urls = listed.read_text(encoding="utf-8").split() if listed.exists() else []
    a: dict[str, Any] = {"returncode": None, "cpu_ms_per_fetched": None, "fetched_s": None}
    if urls:
        a = run_crawl(
            "plain",
            plan,
            tag=f"replay-{r}-{strategy}",
            extra={"SPEED_URLS_FILE": str(plain_urls), **window},
            replay=listed,
        )
    got = set(plain_urls.read_text(encoding="utf-8").split()) if plain_urls.exists() else set()
    same = len(got & set(urls)) / len(urls) if urls else None
    # the window counted in responses when both crawls reached it, else first to last item
    key = "window_cpu_ms_per_fetched"
    if not (a.get(key) and b.get(key)):
        key = "cpu_ms_per_fetched"
    ratio = None
    if a.get(key) and b.get(key):
        ratio = a[key] / b[key]
    keep = (
        "returncode",
        "items",
        "responses_in_span",
        "cpu_ms_per_fetched",
        "window_cpu_ms_per_fetched",
        "gc_ms_per_fetched",
        "fetched_s",
    )
    return {
        "round": r,
        "listed": len(urls),
        "same_pages": None if same is None else round(same, 4),
        "plain_extra_pages": len(got - set(urls)),
        "ratio": None if ratio is None else round(ratio, 4),
        "ratio_of": key,
        "focused": {k: b.get(k) for k in (*keep, "links_per_page")},
        "plain": {k: a.get(k) for k in keep},
    }


def replay(
    sites: dict[str, tuple[list[str], str]], strategies: Sequence[str], plan: RunPlan
) -> dict[str, Any]:
    """Per site and strategy, ``plan.pairs`` alternated pairs: a focused crawl of
    ``plan.pages`` items that lists the pages it fetched, then plain Scrapy
    (:mod:`bench.plain`, ``-a replay=``) fetching exactly that list with the same
    concurrency from the same server. Per pair: CPU ms per page fetched (user + sys from
    the first item to the last, over the responses in that span) of both, and plain /
    focused; per strategy the medians and their spreads (min, max)."""
    pairs, log = plan.pairs, plan.log
    out: dict[str, Any] = {
        "pages_per_run": plan.pages,
        "pairs": pairs,
        "plain_extensions": list(plan.plain_extensions),
        "sites": {},
    }
    for site, (seeds, labels) in sites.items():
        at = plan.on(site, seeds, labels)
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
        for r in range(pairs):
            for s in strategies:
                pair = _replay_pair(s, at, r)
                runs[s].append(pair)
                log(
                    f"replay {site} round {r + 1}/{pairs} {s}:"
                    f" focused {pair['focused']['cpu_ms_per_fetched']} CPU ms/page,"
                    f" plain {pair['plain']['cpu_ms_per_fetched']}, ratio {pair['ratio']},"
                    f" same pages {pair['same_pages']}"
                )
        site_out: dict[str, Any] = {}
        for s, rs in runs.items():
            fc = [x["focused"]["cpu_ms_per_fetched"] for x in rs]
            pc = [x["plain"]["cpu_ms_per_fetched"] for x in rs]
            ratios = [x["ratio"] for x in rs]
            site_out[s] = {
                "cpu_ratio": _median(ratios),
                "cpu_ratio_spread": _spread(ratios),
                "focused_cpu_ms_per_page": _median(fc),
                "focused_cpu_ms_spread": _spread(fc),
                "plain_cpu_ms_per_page": _median(pc),
                "plain_cpu_ms_spread": _spread(pc),
                "focused_gc_ms_per_page": _median(
                    [x["focused"].get("gc_ms_per_fetched") for x in rs]
                ),
                "plain_gc_ms_per_page": _median([x["plain"].get("gc_ms_per_fetched") for x in rs]),
                "focused_pages_s": _median([x["focused"]["fetched_s"] for x in rs]),
                "plain_pages_s": _median([x["plain"]["fetched_s"] for x in rs]),
                "same_pages_min": min((x["same_pages"] or 0.0) for x in rs),
                "pairs": rs,
            }
        out["sites"][site] = site_out
    ratios_by_strategy: dict[str, float] = {}
    for s in strategies:
        got = [v[s]["cpu_ratio"] for v in out["sites"].values() if v[s]["cpu_ratio"]]
        if got:
            ratios_by_strategy[s] = min(got)  # the worst site
    out["cpu_ratio"] = ratios_by_strategy
    return out


def sandbox_crawl(
    strategy: str,
    *,
    pages: int,
    sandbox_pages: int,
    work: Path,
    tag: str,
    extensions: dict[str, int],
    extra: dict[str, str],
) -> dict[str, Any]:
    """One focused crawl of ``pages`` items of a sandbox of ``sandbox_pages`` pages served
    by its own process, with the settings of the peak-RSS crawl (``CONCURRENT_REQUESTS``
    16, the chemistry seeds): the project's own extensions, the :class:`Probe` and
    ``extensions`` (dotted path -> order) on, ``extra`` settings last (an ``EXTENSIONS``
    among them replaces the lot)."""
    server = sandbox_server(sandbox_pages)
    base = server.start()
    try:
        seeds = sandbox_seeds(base, sandbox_pages)
        plan = RunPlan(pages=pages, concurrency=16, work=work, timeout=3 * pages / 10 + 600).on(
            "sandbox", seeds, f"{base}/labels.tsv"
        )
        settings = {
            "EXTENSIONS": json.dumps({**project_settings.EXTENSIONS, PROBE: 0, **extensions}),
            **extra,
        }
        return run_crawl(strategy, plan, tag=tag, extra=settings)
    finally:
        server.stop()


def peak_rss(plan: RunPlan, *, strategy: str) -> dict[str, Any]:
    """One plain and one focused crawl of up to ``plan.pages`` pages of ``plan.site``: the
    peak resident set of each crawler process (``ru_maxrss`` at close) and focused /
    plain."""
    site = plan.site
    out: dict[str, Any] = {"site": site, "pages_per_run": plan.pages, "strategy": strategy}
    for kind in ("plain", strategy):
        run = run_crawl(kind, plan, tag="rss")
        row = {
            "items": run.get("items"),
            "max_rss_mb": round(run["max_rss_kb"] / 1024, 1) if "max_rss_kb" in run else None,
            "wall_s": run.get("wall_s"),
            "pages_s": run.get("pages_s"),
            "returncode": run.get("returncode"),
        }
        out["plain" if kind == "plain" else "focused"] = row
        plan.log(f"peak RSS {site} {kind}: {row}")
    a, b = out["plain"]["max_rss_mb"], out["focused"]["max_rss_mb"]
    out["ratio"] = round(b / a, 3) if a and b else None
    return out


# --- ablation ------------------------------------------------------------------------------
#: key of an ablation's settings that names another copy of the project to crawl with
TREE = "__tree__"
#: focused crawls with one part taken out (settings given on the command line replace the
#: project's dicts): the difference to the full crawl is that part's real cost per page.
ABLATIONS: dict[str, dict[str, str]] = {
    "full": {},
    "without the page store": {
        "ITEM_PIPELINES": json.dumps({"focused.pipelines.MetricsPipeline": 800})
    },
    "page store with its writer thread": {"FOCUSED_STORE_THREAD": "True"},
    "without the metrics pipeline": {
        "ITEM_PIPELINES": json.dumps({"focused.pipelines.PageStorePipeline": 300})
    },
    "without the priority middleware": {"SPIDER_MIDDLEWARES": "{}"},
    "with Scrapy's scheduler": {"SCHEDULER": "scrapy.core.scheduler.Scheduler"},
    "without pipelines": {"ITEM_PIPELINES": "{}"},
    # the project's downloader middlewares less the robustness one (an empty dict would
    # also drop the address filter, which the crawl refuses to run without)
    "without the robustness middleware": {
        "DOWNLOADER_MIDDLEWARES": json.dumps(
            {
                **project_settings.DOWNLOADER_MIDDLEWARES,
                "focused.robustness.RobustnessMiddleware": None,
            }
        )
    },
}


def ablation(
    plan: RunPlan, *, strategy: str, reps: int, trees: Sequence[Path] = ()
) -> dict[str, Any]:
    """Plain, full focused, and focused with one part out, in turn, ``reps`` rounds, on
    ``plan``'s site."""
    variants = {**ABLATIONS, **{f"the tree in {t}": {TREE: str(t)} for t in trees}}
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], **{name: [] for name in variants}}
    for r in range(reps):
        for name in runs:
            kind = "plain" if name == "plain" else strategy
            extra = None if name == "plain" else variants[name]
            tag = f"ablation-{r}-{len(runs[name])}-{abs(hash(name)) % 10**6}"
            runs[name].append(run_crawl(kind, plan, tag=tag, extra=extra))
        plan.log(f"ablation round {r + 1}/{reps} done")
    out: dict[str, Any] = {"site": plan.site, "strategy": strategy, "reps": reps, "rows": {}}
    full = _median([x["cpu_ms_per_page"] for x in runs["full"]])
    for name, rs in runs.items():
        row = _medians(rs, _MEDIANS[:4])  # per page: no bytes or links
        cpu = row["median_cpu_ms_per_page"]
        row["cpu_ms_saved"] = None if cpu is None or full is None else round(full - cpu, 3)
        out["rows"][name] = row
    return out


# --- profile -------------------------------------------------------------------------------
#: (category, how to find it in the profile): ("cum"|"tot", file part, function name).
#: Cumulative entries must not contain one another (except where subtracted below).
CATEGORIES: tuple[tuple[str, str, str, str], ...] = (
    ("spider callback (parse), total", "cum", "/spiders/focused.py", "parse"),
    ("spider callback (parse), total", "cum", "bench/plain.py", "parse"),
    ("parsing: title and body text (lxml)", "cum", "focused/spiders/focused.py", "texts"),
    ("link extraction (Scrapy LinkExtractor)", "cum", "linkextractors/", "extract_links"),
    ("link extraction (FocusedLinkExtractor)", "cum", "focused/robustness.py", "_fast_links"),
    ("tokenising and counting terms", "cum", "focused/ranking/relevance.py", "term_counts"),
    ("hashing terms and cosine", "cum", "focused/ranking/relevance.py", "cosines"),
    ("link requests (scrapy.Request, session ids)", "cum", "/spiders/focused.py", "_request"),
    ("priority middleware (strategy)", "cum", "focused/middlewares.py", "get_processed_request"),
    ("scheduler: enqueue (dedup, frontier)", "cum", "focused/scheduler.py", "enqueue_request"),
    ("scheduler: next request (annealing pick)", "cum", "focused/scheduler.py", "next_request"),
    ("Scrapy scheduler: enqueue (plain)", "cum", "scrapy/core/scheduler.py", "enqueue_request"),
    ("Scrapy scheduler: next request (plain)", "cum", "scrapy/core/scheduler.py", "next_request"),
    ("page store (total)", "cum", "focused/output/store.py", "add"),
    ("  gzip", "tot", "~", "<built-in method zlib.compress>"),
    ("  SQLite", "tot", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
    ("  SHA-256", "tot", "~", "<built-in method _hashlib.openssl_sha256>"),
    ("metrics pipeline", "cum", "focused/pipelines.py", "process_item"),
    ("feed export (plain)", "cum", "scrapy/extensions/feedexport.py", "item_scraped"),
    ("stats collector calls", "tot", "scrapy/statscollectors.py", "__getattribute__"),
)


def _profile_rows(prof: Path, pages: int) -> tuple[list[dict[str, Any]], float]:
    import pstats

    st = pstats.Stats(str(prof))
    table: dict[tuple[str, int, str], tuple] = st.stats  # type: ignore[attr-defined]
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in table.values())
    rows: list[dict[str, Any]] = []
    for name, how, part, func in CATEGORIES:
        secs = 0.0
        calls = 0
        for (file, line, f), (_cc, nc, tt, ct, _callers) in table.items():
            if f == func and (part in file or (part == "~" and file == "~")):
                if func == "process_item" and "MetricsPipeline" not in _source_line(file, line):
                    continue
                secs += ct if how == "cum" else tt
                calls += nc
        if calls:
            rows = [r for r in rows if r["category"] != name]  # one of two alternatives
            rows.append(
                {
                    "category": name,
                    "ms_per_page": round(1000 * secs / max(1, pages), 3),
                    "calls_per_page": round(calls / max(1, pages), 1),
                }
            )
    by_name = {r["category"]: r for r in rows}
    tok = by_name.get("tokenising and counting terms")
    vec = by_name.get("hashing terms and cosine")
    if tok and vec:
        vec["ms_per_page"] = round(vec["ms_per_page"] - tok["ms_per_page"], 3)
    return rows, total


def _source_line(file: str, line: int) -> str:
    """The class that defines the function at ``file:line`` (nearest ``class`` above)."""
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()[:line]
    except OSError:
        return ""
    for text in reversed(lines):
        if text.startswith("class "):
            return text
    return ""


def profile(plan: RunPlan, *, strategy: str) -> dict[str, Any]:
    """A focused and a plain crawl of ``plan``'s site under cProfile; cost per page by
    category."""
    site, pages = plan.site, plan.pages
    out: dict[str, Any] = {"site": site, "strategy": strategy, "pages_per_run": pages}
    for kind in ("plain", strategy):
        out_dir = plan.work / f"profile-{site}-{kind}"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        probe_file = out_dir / "probe.json"
        prof = out_dir / "crawl.prof"
        cmd = plan.command(kind, out_dir, probe_file)
        cmd += ["-s", f"SPEED_PROFILE_FILE={prof}"]
        if kind != "plain":  # cProfile sees one thread: the page store's work on Scrapy's
            cmd += ["-s", "FOCUSED_STORE_THREAD=False"]  # (the default, said again)
        Children.run(cmd, plan.timeout, out_dir / "crawl.log")
        items = pages
        if probe_file.exists():
            items = json.loads(probe_file.read_text(encoding="utf-8"))["items"] or pages
        if not prof.exists():
            out[kind] = {"error": "no profile written"}
            continue
        rows, total = _profile_rows(prof, items)
        shutil.rmtree(out_dir / "html", ignore_errors=True)
        out["plain" if kind == "plain" else "focused"] = {
            "pages": items,
            "profiled_ms_per_page": round(1000 * total / max(1, items), 3),
            "categories": rows,
            "profile_file": str(prof),
        }
    return out


# --- frontier ------------------------------------------------------------------------------
_WORDS = [
    "chemistry",
    "acid",
    "atom",
    "bond",
    "carbon",
    "element",
    "energy",
    "gas",
    "ion",
    "metal",
    "molecule",
    "oxygen",
    "reaction",
    "salt",
    "water",
    "physics",
    "force",
    "light",
    "mass",
    "football",
    "cup",
    "match",
    "recipe",
    "bread",
    "rice",
    "empire",
    "war",
    "river",
    "mountain",
    "city",
    "island",
]


def frontier_entries(n: int, seed: int = 1) -> Iterator[Any]:
    """``n`` distinct frontier entries with realistic URLs, parents and m-value scores.

    Pages of 2,000 hosts link 40 URLs each; anchor relevance ``r`` is skewed low, ``m``
    follows the genetic rule's channels (M0 * 0.8**hops), and the priority, value, m and
    hops are what :class:`~focused.strategies.annealing.AnnealingStrategy` would give.
    """
    from focused.frontier.memory import Entry
    from focused.ranking import mvalue

    rng = random.Random(seed)
    parent = ""
    m_parent = 100.0
    for i in range(n):
        if i % 40 == 0:
            parent = f"https://www.site{rng.randrange(2000):04d}.example.org/wiki/page_{i}"
            m_parent = 100.0 * 0.8 ** rng.choice((0, 0, 0, 1, 1, 2, 3, 4, 5))
        r = rng.random() ** 3
        m = mvalue.child_m(m_parent, r, m0=100.0, ratio=0.8, threshold=0.2)
        host = f"www.site{rng.randrange(2000):04d}.example.org"
        word = _WORDS[i % len(_WORDS)]
        yield Entry(
            url=f"https://{host}/wiki/{word}_{i}",
            fp=i * 0x9E3779B97F4A7C15 % (1 << 64) - (1 << 63),
            priority=mvalue.priority(m, r),
            value=0.9 * m / 100.0 + 0.1 * r,
            depth=rng.randrange(1, 20),
            m=m,
            hops=mvalue.side_channel_hops(m, m0=100.0, ratio=0.8),
            anchor_relevance=r,
            parent_url=parent,
        )


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def frontier_worker(n: int) -> dict[str, Any]:
    """``n`` pushes then ``n`` annealing picks; memory held after the pushes.

    Entries are made in chunks and dropped once pushed, so that the memory left is what
    the frontier keeps alive (an object it only refers to counts too). Memory: a first
    frontier filled (only the pushes timed, RSS read before and after) and emptied
    without tracing; then a second one filled under ``tracemalloc``.
    """

    from focused.frontier.memory import MemoryFrontier
    from focused.ranking.annealing import Annealer

    chunk = 5000

    def fill(frontier: Any) -> tuple[float, float]:
        push, push_s, chars = frontier.push, 0.0, 0
        entries = frontier_entries(n)
        for start in range(0, n, chunk):
            batch = [next(entries) for _ in range(min(chunk, n - start))]
            chars += sum(len(e.url) for e in batch)
            t = time.process_time()
            for e in batch:
                push(e)
            push_s += time.process_time() - t
            del batch
        return push_s, chars

    gc.collect()
    rss0 = rss_bytes()  # first, in a fresh process: no memory freed by an earlier phase
    frontier = MemoryFrontier()
    push_s, chars = fill(frontier)
    gc.collect()
    out: dict[str, Any] = {"n": n, "bytes_per_url_rss": (rss_bytes() - rss0) / n}
    out["url_chars_mean"] = chars / n
    out["held"] = len(frontier)
    out["push_us"] = 1e6 * push_s / n
    annealer = Annealer(t0=0.05, alpha=0.995, t_min=1e-4, k=8, seed=42)
    pick = frontier.pop_annealed
    t = time.process_time()
    picked = 0
    while pick(annealer) is not None:
        picked += 1
    out["pick_us"] = 1e6 * (time.process_time() - t) / max(1, picked)
    out["picked"] = picked
    del frontier
    out["bytes_per_url_tracemalloc"] = traced_bytes_per_url(MemoryFrontier, fill, n)
    return out


def traced_bytes_per_url(make: Callable[[], Any], fill: Callable[[Any], object], n: int) -> float:
    """Bytes per URL (tracemalloc) that a structure made by ``make`` keeps alive once
    ``fill`` has put ``n`` URLs in it."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    mem0 = tracemalloc.get_traced_memory()[0]
    held = make()
    fill(held)
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - mem0
    tracemalloc.stop()
    del held
    return traced / n


# --- dedup ---------------------------------------------------------------------------------
def _mix(x: Any) -> Any:
    """splitmix64's finaliser on a numpy uint64 array: a bijection, so distinct in, distinct
    out; the result looks like the random 64-bit prefix of a SHA-1."""
    import numpy as np

    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x.view(np.int64)


def fingerprints(start: int, stop: int, absent: bool = False) -> list[int]:
    """Fingerprints number ``start..stop``: ``mix(2i)`` (added) or ``mix(2i+1)`` (never
    added), so an absent one can never equal an added one."""
    import numpy as np

    i = np.arange(start, stop, dtype=np.uint64) * np.uint64(2) + np.uint64(absent)
    return _mix(i).tolist()


def dedup_worker(n: int, probes: int) -> dict[str, Any]:
    """Add ``n`` fingerprints to :class:`~focused.frontier.seen.SeenSet`, then test ``probes`` added
    and ``probes`` never-added ones; count every wrong answer.

    Fingerprints are made in chunks (new int objects, as a crawl makes them) and dropped
    once added, so the memory left is what the set keeps alive. Time and RSS: a first set
    filled and tested without tracing; then a second one filled under ``tracemalloc``.
    """

    from focused.frontier.seen import SeenSet, url_fingerprint

    chunk = 50_000

    def fill(seen: Any) -> tuple[float, int]:
        add, add_s, drops = seen.add, 0.0, 0
        for start in range(0, n, chunk):
            batch = fingerprints(start, min(n, start + chunk))
            t = time.process_time()
            for fp in batch:
                if not add(fp):
                    drops += 1  # a new URL reported as seen: it would never be crawled
            add_s += time.process_time() - t
            del batch
        return add_s, drops

    gc.collect()
    rss0 = rss_bytes()  # first, in a fresh process: no memory freed by an earlier phase
    seen = SeenSet()
    add_s, false_drops = fill(seen)
    gc.collect()
    out: dict[str, Any] = {"n": n, "bytes_per_url_rss": (rss_bytes() - rss0) / n}
    out["add_us"] = 1e6 * add_s / n
    out["held"] = len(seen)
    rng = random.Random(5)
    k = max(1, min(probes, n))
    start = rng.randrange(0, max(1, n - k + 1))
    present = fingerprints(start, start + k)
    absent = fingerprints(start, start + k, absent=True)
    t = time.process_time()
    missed = sum(1 for fp in present if fp not in seen)  # would be crawled twice
    hit_s = time.process_time() - t
    t = time.process_time()
    false_drops += sum(1 for fp in absent if fp in seen)
    miss_s = time.process_time() - t
    out["test_us_seen"] = 1e6 * hit_s / k
    out["test_us_new"] = 1e6 * miss_s / k
    out["test_us"] = 1e6 * (hit_s + miss_s) / (2 * k)
    out["false_drops"] = false_drops
    out["false_accepts"] = missed
    m = min(k, 100_000)
    urls = [f"https://www.site{i % 2000:04d}.example.org/wiki/page_{i}?b=2&a=1" for i in range(m)]
    url_fingerprint.cache_clear()
    t = time.process_time()
    for u in urls:
        url_fingerprint(u)
    out["fingerprint_us"] = 1e6 * (time.process_time() - t) / m
    del seen, present, absent, urls
    out["bytes_per_url_tracemalloc"] = traced_bytes_per_url(SeenSet, fill, n)
    return out


def _allocated(size: int) -> int:
    """Bytes pymalloc gives an object of ``size`` bytes (16-byte size classes up to 512)."""
    return (size + 15) // 16 * 16 if size <= 512 else size


def scrapy_dedup_worker(n: int) -> dict[str, Any]:
    """Scrapy's ``RFPDupeFilter`` (in memory) fed ``n`` distinct requests.

    Time: ``request_seen`` (which computes Scrapy's request fingerprint). Memory: the set
    and its fingerprint objects, summed with ``sys.getsizeof`` rounded to pymalloc's size
    classes (tracing a million ``Request`` objects would take minutes), and RSS.
    """
    from scrapy import Request
    from scrapy.dupefilters import RFPDupeFilter

    chunk = 20_000
    df = RFPDupeFilter()
    gc.collect()
    rss0 = rss_bytes()
    seen_s = 0.0
    false_drops = 0
    for start in range(0, n, chunk):
        batch = [
            Request(f"https://www.site{i % 2000:04d}.example.org/wiki/page_{i}")
            for i in range(start, min(n, start + chunk))
        ]
        t = time.process_time()
        for request in batch:
            if df.request_seen(request):
                false_drops += 1
        seen_s += time.process_time() - t
        del batch
    gc.collect()
    held = getattr(df, "_fingerprints", None)
    out: dict[str, Any] = {"n": n, "held": len(held) if held is not None else None}
    out["bytes_per_url_rss"] = (rss_bytes() - rss0) / n
    if held is not None:
        total = sys.getsizeof(held) + sum(_allocated(sys.getsizeof(x)) for x in held)
        out["bytes_per_url_objects"] = total / n
    out["test_us"] = 1e6 * seen_s / n  # includes Scrapy's request fingerprint
    out["false_drops"] = false_drops
    return out


def run_worker(args: list[str], timeout: float) -> dict[str, Any]:
    """``python -m bench.speed --worker ...`` in a child; its JSON answer."""
    cmd = [sys.executable, "-m", "bench.speed", "--worker", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    Children.alive.add(proc)  # type: ignore[arg-type]
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        Children.alive.discard(proc)  # type: ignore[arg-type]
    if proc.returncode != 0:
        return {"error": stderr.decode("utf-8", "replace").strip().splitlines()[-1:]}
    return json.loads(stdout.decode("utf-8").strip().splitlines()[-1])


def frontier_bench(sizes: Sequence[int], timeout: float, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": {}}
    for n in sizes:
        row = _rounded(run_worker(["frontier", str(n)], timeout))
        out["sizes"][str(n)] = row
        log(f"frontier {n:,}: {row}")
    if sizes:
        top = out["sizes"][str(max(sizes))]
        out["at"] = max(sizes)
        out["bytes_per_url"] = top.get("bytes_per_url_tracemalloc")
        out["bytes_per_url_rss"] = top.get("bytes_per_url_rss")
        out["pick_us"] = top.get("pick_us")
        out["push_us"] = top.get("push_us")
    return out


def dedup_bench(
    sizes: Sequence[int], scrapy_size: int, probes: int, timeout: float, log: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": {}}
    for n in sizes:
        row = _rounded(run_worker(["dedup", str(n), "--probes", str(probes)], timeout))
        out["sizes"][str(n)] = row
        log(f"dedup {n:,}: {row}")
    if sizes:
        top = out["sizes"][str(max(sizes))]
        out["at"] = max(sizes)
        out["bytes_per_url"] = top.get("bytes_per_url_tracemalloc")
        out["bytes_per_url_rss"] = top.get("bytes_per_url_rss")
        out["test_us"] = top.get("test_us")
        rows = out["sizes"].values()
        out["false_drops"] = sum(int(r.get("false_drops", 1)) for r in rows)
        out["false_accepts"] = sum(int(r.get("false_accepts", 1)) for r in rows)
    if scrapy_size:
        row = _rounded(run_worker(["scrapy-dedup", str(scrapy_size)], timeout))
        out["scrapy"] = row
        out["scrapy_at"] = scrapy_size
        out["scrapy_bytes_per_url"] = row.get("bytes_per_url_objects")
        out["scrapy_bytes_per_url_rss"] = row.get("bytes_per_url_rss")
        out["scrapy_test_us"] = row.get("test_us")
        log(f"scrapy RFPDupeFilter {scrapy_size:,}: {row}")
    return out


def _shown(path: Path) -> str:
    """``path`` relative to the project when inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _rounded(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 3)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


# --- report --------------------------------------------------------------------------------
def _lookup(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def check_targets(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, op, limit, aim in TARGETS:
        value = _lookup(data, key)
        if value is None:
            out[key] = {"value": None, "target": f"{op} {limit}", "met": None}
            continue
        ok = {">=": value >= limit, "<=": value <= limit, "==": value == limit}[op]
        aimed = {">=": value >= aim, "<=": value <= aim, "==": value == aim}[op]
        out[key] = {
            "value": value,
            "target": f"{op} {limit}",
            "aim": f"{op} {aim}",
            "met": bool(ok),
            "aim_met": bool(aimed),
        }
    return out


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _md_throughput(tp: dict[str, Any] | None) -> list[str]:
    """The throughput section: focused against plain Scrapy, per site."""
    if not tp:
        return []
    lines = [
        "",
        "## Throughput: focused against plain Scrapy",
        "",
        f"{tp['pages_per_run']} pages per crawl (`CLOSESPIDER_ITEMCOUNT`),"
        f" `CONCURRENT_REQUESTS` = {tp['concurrency']} (also per domain), AutoThrottle off,"
        f" {tp['pairs']} pairs per strategy, {tp['order']}. pages/s from the first item"
        " to the last (start-up excluded); ratio = median of the per-pair ratios"
        " focused/plain; CPU ratio = plain CPU ms per page / focused CPU ms per page"
        " (what the ratio would be if the crawl were CPU-bound); links/page = requests"
        " handed to the scheduler per page (the crawlers visit different pages: more"
        " links per page is more work per page for both).",
    ]
    for site, s_out in tp["sites"].items():
        p = s_out["plain"]
        lines += [
            "",
            f"### {site}",
            "",
            "| crawler | median pages/s | CPU ms/page | KB/page | links/page | ratio |"
            " CPU ratio | pair ratios |",
            "|---|---|---|---|---|---|---|---|",
            f"| plain Scrapy | {_fmt(p['median_pages_s'], 1)} |"
            f" {_fmt(p['median_cpu_ms_per_page'])} | {_fmt(p.get('median_kb_per_page'), 1)} |"
            f" {_fmt(p.get('median_links_per_page'), 1)} | 1 | 1 | |",
        ]
        for s, row in s_out["strategies"].items():
            lines.append(
                f"| focused `{s}` | {_fmt(row['median_pages_s'], 1)} |"
                f" {_fmt(row['median_cpu_ms_per_page'])} |"
                f" {_fmt(row.get('median_kb_per_page'), 1)} |"
                f" {_fmt(row.get('median_links_per_page'), 1)} | {_fmt(row['ratio'], 3)} |"
                f" {_fmt(row['cpu_ratio'], 3)} |"
                f" {', '.join(f'{x:.2f}' for x in row['pair_ratios'])} |"
            )
    lines += ["", f"Worst: `{tp.get('ratio_min_at')}` at {_fmt(tp.get('ratio_min'), 3)}."]
    return lines


def _md_replay(tp: dict[str, Any] | None) -> list[str]:
    """The replay section: plain Scrapy on exactly the pages of each focused crawl."""
    rp = (tp or {}).get("replay")
    if not rp:
        return []
    intro = (
        f"Each pair: a focused crawl of {rp['pages_per_run']} pages that lists the pages it"
        " fetched, then plain Scrapy (`bench/plain.py -a replay=FILE`) fetching exactly that"
        " list, in its order, with the same concurrency from the same server, and doing on"
        " each page what a plain crawl does (`LinkExtractor`, a `scrapy.Request` per link"
        " through Scrapy's middlewares, dupefilter and queue, one item); a link is never"
        f" fetched. {rp['pairs']} alternated pairs per strategy. CPU ms per page = user +"
        " sys of the crawler process from its first item to its last, over the pages"
        " fetched in that span; ratio = median of the per-pair plain / focused (> 1:"
        " focused is cheaper); spreads are min-max over the pairs; GC ms/page = the part"
        " of that CPU spent in Python's cyclic garbage collector (medians); same pages ="
        " the smallest share of a focused list that plain fetched."
        + (
            f" Plain Scrapy ran with {', '.join(f'`{e}`' for e in rp['plain_extensions'])} too."
            if rp.get("plain_extensions")
            else ""
        )
    )
    header = (
        "site",
        "strategy",
        "CPU ratio (plain/focused)",
        "ratio spread",
        "focused CPU ms/page",
        "plain CPU ms/page",
        "focused / plain GC ms/page",
        "focused pages/s",
        "plain pages/s",
        "same pages",
    )
    rows = [
        f"| {site} | `{s}` | **{_fmt(row['cpu_ratio'], 3)}** |"
        f" {'-'.join(_fmt(x, 3) for x in row['cpu_ratio_spread'] or [])} |"
        f" {_fmt(row['focused_cpu_ms_per_page'])}"
        f" ({'-'.join(_fmt(x) for x in row['focused_cpu_ms_spread'] or [])}) |"
        f" {_fmt(row['plain_cpu_ms_per_page'])}"
        f" ({'-'.join(_fmt(x) for x in row['plain_cpu_ms_spread'] or [])}) |"
        f" {_fmt(row.get('focused_gc_ms_per_page'))} / {_fmt(row.get('plain_gc_ms_per_page'))} |"
        f" {_fmt(row['focused_pages_s'], 1)} | {_fmt(row['plain_pages_s'], 1)} |"
        f" {_fmt(row['same_pages_min'], 3)} |"
        for site, by_strategy in rp["sites"].items()
        for s, row in by_strategy.items()
    ]
    rows.append(
        f"\nWorst: {_fmt(tp.get('cpu_ratio_replay_min'), 3)}; worst but `learning`:"
        f" {_fmt(tp.get('cpu_ratio_replay_min_but_learning'), 3)}."
    )
    return _md_section("CPU per page on the same pages (replay)", [intro], header, rows)


def _md_rss(rss: dict[str, Any] | None) -> list[str]:
    if not rss:
        return []
    intro = (
        f"One crawl each of up to {rss['pages_per_run']:,} pages of the {rss['site']};"
        f" focused: `{rss['strategy']}`. Peak resident set of the crawler process"
        " (`ru_maxrss` at close)."
    )
    header = ("crawler", "pages", "peak RSS MB", "wall s")
    rows = [
        f"| {name} | {_fmt(row.get('items'))} | {_fmt(row.get('max_rss_mb'), 1)} |"
        f" {_fmt(row.get('wall_s'), 0)} |"
        for name, row in (("plain Scrapy", rss["plain"]), ("focused", rss["focused"]))
    ]
    rows.append(f"\nfocused / plain: {_fmt(rss.get('ratio'), 3)}.")
    return _md_section("Peak memory", [intro], header, rows)


def _md_profile(prof: dict[str, Any] | None) -> list[str]:
    """The profile section: cProfile cost categories, plain against focused."""
    if not (prof and "focused" in prof):
        return []
    lines = [
        "",
        "## Where the time goes",
        "",
        f"cProfile of one crawl of {prof['pages_per_run']} pages of {prof['site']}"
        f" (focused: `{prof['strategy']}`) from its first item to its last (start-up"
        " and shutdown left out), ms per page *under the profiler* (which inflates"
        " Python-heavy code ~2x: compare rows and columns, not with the throughput)."
        " cProfile sees one thread, so the profiled crawl writes its page files on"
        " Scrapy's thread (`FOCUSED_STORE_THREAD=False`): the same work, in one place.",
        "",
        "| cost | plain ms/page | focused ms/page | focused calls/page |",
        "|---|---|---|---|",
    ]
    plain_rows = {r["category"]: r for r in prof.get("plain", {}).get("categories", [])}
    focused_rows = {r["category"]: r for r in prof["focused"]["categories"]}
    for name in dict.fromkeys(c[0] for c in CATEGORIES):
        a, b = plain_rows.get(name), focused_rows.get(name)
        if a is None and b is None:
            continue
        lines.append(
            f"| {name} | {_fmt(a and a['ms_per_page'])} | {_fmt(b and b['ms_per_page'])} |"
            f" {_fmt(b and b['calls_per_page'], 1)} |"
        )
    lines.append(
        f"| **everything profiled** | {_fmt(prof.get('plain', {}).get('profiled_ms_per_page'))}"
        f" | {_fmt(prof['focused']['profiled_ms_per_page'])} | |"
    )
    return lines


def _md_section(
    title: str, intro: Sequence[str], header: Sequence[str], rows: Iterable[str]
) -> list[str]:
    """A report section: its heading, its intro paragraphs, then a table of ``rows``."""
    lines = ["", f"## {title}", ""]
    for paragraph in intro:
        lines += [paragraph, ""]
    return [*lines, "| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows]


def _md_ablation(ab: dict[str, Any] | None) -> list[str]:
    """The ablation section: what taking each part out saves."""
    if not ab:
        return []
    intro = (
        f"Focused `{ab['strategy']}` crawls of {ab['site']} with one part taken out,"
        f" in turn with the full crawl and plain Scrapy, {ab['reps']} rounds; median CPU"
        " ms per page (first item to last) and what taking the part out saves; Scrapy's"
        " thread = the CPU time of Scrapy's own thread only (the page store's writer"
        " thread works beside it)."
    )
    header = (
        "crawl",
        "median pages/s",
        "CPU ms/page",
        "of which system",
        "Scrapy's thread ms/page",
        "CPU ms/page saved",
    )
    rows = (
        f"| {name} | {_fmt(row['median_pages_s'], 1)} |"
        f" {_fmt(row['median_cpu_ms_per_page'])} |"
        f" {_fmt(row.get('median_sys_ms_per_page'))} |"
        f" {_fmt(row.get('median_thread_cpu_ms_per_page'))} | {_fmt(row['cpu_ms_saved'])} |"
        for name, row in ab["rows"].items()
    )
    return _md_section("What each part costs (ablation, no profiler)", [intro], header, rows)


def _md_frontier(fr: dict[str, Any] | None) -> list[str]:
    """The frontier section: push and pick cost and memory per URL."""
    if not (fr and fr.get("sizes")):
        return []
    intro = (
        "N pushes of distinct entries (m-value scores, 2,000 hosts, 40 links per parent),"
        " then N annealing picks (K = 8, T0 = 0.05)."
    )
    header = (
        "N",
        "µs/push",
        "µs/pick",
        "bytes/URL (tracemalloc)",
        "bytes/URL (RSS)",
        "URL chars",
    )
    rows = (
        f"| {int(n):,} | {_fmt(row.get('push_us'))} | {_fmt(row.get('pick_us'))} |"
        f" {_fmt(row.get('bytes_per_url_tracemalloc'), 1)} |"
        f" {_fmt(row.get('bytes_per_url_rss'), 1)} | {_fmt(row.get('url_chars_mean'), 1)} |"
        for n, row in fr["sizes"].items()
    )
    return _md_section("Frontier (`focused.frontier.memory.MemoryFrontier`)", [intro], header, rows)


def _md_dedup(dd: dict[str, Any] | None) -> list[str]:
    """The seen-URL section: SeenSet against Scrapy's RFPDupeFilter."""
    if not (dd and dd.get("sizes")):
        return []
    header = (
        "set",
        "N",
        "bytes/URL (tracemalloc)",
        "bytes/URL (RSS)",
        "µs/add",
        "µs/test",
        "false drops",
    )
    rows = [
        f"| `SeenSet` (exact, 64-bit) | {int(n):,} |"
        f" {_fmt(row.get('bytes_per_url_tracemalloc'), 1)} |"
        f" {_fmt(row.get('bytes_per_url_rss'), 1)} | {_fmt(row.get('add_us'))} |"
        f" {_fmt(row.get('test_us'))} | {_fmt(row.get('false_drops'))} |"
        for n, row in dd["sizes"].items()
    ]
    sc = dd.get("scrapy")
    if sc:
        rows.append(
            f"| Scrapy `RFPDupeFilter` | {int(dd['scrapy_at']):,} |"
            f" {_fmt(sc.get('bytes_per_url_objects'), 1)} (objects) |"
            f" {_fmt(sc.get('bytes_per_url_rss'), 1)} | – |"
            f" {_fmt(sc.get('test_us'))} (with its fingerprint) |"
            f" {_fmt(sc.get('false_drops'))} |"
        )
    top = dd["sizes"].get(str(dd.get("at")), {})
    if top.get("fingerprint_us") is not None:
        rows.append(
            f"\nThe project's URL fingerprint (canonical URL, SHA-1, first 8 bytes) costs"
            f" {_fmt(top['fingerprint_us'])} µs on a new URL (an LRU cache answers repeats)."
        )
    return _md_section("Seen-URL test", [], header, rows)


def write_markdown(data: dict[str, Any], path: Path) -> None:
    m = data["machine"]
    lines = [
        "# Speed benchmark",
        "",
        f"{m['cpus']} CPUs, load average {m['loadavg_start']} at start and"
        f" {m['loadavg_end']} at the end (other work on the machine slows both sides of a"
        f" pair alike; compare ratios, not absolute pages/s). Python {m['python']},"
        f" Scrapy {m['scrapy']}. Whole benchmark: {_fmt(data.get('elapsed_s'), 0)} s.",
        "",
        "## Targets",
        "",
        "| key | value | target | met | aim |",
        "|---|---|---|---|---|",
    ]
    for key, t in data["targets"].items():
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        aim = {True: "yes", False: "no", None: "–"}[t.get("aim_met")]
        lines.append(f"| `{key}` | {_fmt(t['value'], 3)} | {t['target']} | {met} | {aim} |")
    if data.get("throughput", {}).get("sites"):
        lines += _md_throughput(data.get("throughput"))
    lines += _md_replay(data.get("throughput"))
    lines += _md_rss(data.get("rss"))
    lines += _md_profile(data.get("profile"))
    lines += _md_ablation(data.get("ablation"))
    lines += _md_frontier(data.get("frontier"))
    lines += _md_dedup(data.get("dedup"))
    notes = data.get("notes")
    if notes:
        lines += ["", "## Notes", "", *notes]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- main ----------------------------------------------------------------------------------
def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.speed",
        description="Speed benchmark: throughput against plain Scrapy, profile, frontier and"
        " seen-URL set at scale. Writes speed.json and speed.md in --out.",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="wikispeedia-site folder")
    p.add_argument("--sites", default="sandbox,wikispeedia", help="sites to crawl")
    p.add_argument("--sandbox-pages", type=int, default=20_000, help="sandbox size")
    p.add_argument("--pages", type=int, default=250, help="page budget of each crawl")
    p.add_argument("--pairs", type=int, default=3, help="plain/focused pairs per strategy")
    p.add_argument("--strategies", default="", help="comma-separated; default: all but oracle")
    p.add_argument("--concurrency", type=int, default=16, help="CONCURRENT_REQUESTS")
    p.add_argument("--replay-sites", default="wikispeedia,sandbox", help="sites of the replay")
    p.add_argument("--replay-pages", type=int, default=300, help="page budget of a replay pair")
    p.add_argument("--replay-pairs", type=int, default=5, help="replay pairs per strategy")
    p.add_argument("--rss-pages", type=int, default=20_000, help="pages of the peak-RSS crawls")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a few minutes: the replay (wikispeedia, else the sandbox; 150 pages, 5 pairs)"
        " and peak RSS at 3,000 pages only",
    )
    p.add_argument(
        "--plain-gc-tuning",
        action="store_true",
        help="plain Scrapy runs with the project's garbage-collector tuning too"
        " (focused.collector.GarbageCollectorTuning): a like-for-like baseline",
    )
    p.add_argument("--profile-pages", type=int, default=300, help="pages of the profiled crawls")
    p.add_argument("--profile-site", default="wikispeedia", help="site of the profiled crawls")
    p.add_argument("--frontier-sizes", type=_ints, default=[100_000, 1_000_000])
    p.add_argument("--dedup-sizes", type=_ints, default=[1_000_000, 10_000_000])
    p.add_argument("--scrapy-dedup-size", type=int, default=1_000_000)
    p.add_argument("--probes", type=int, default=1_000_000, help="membership tests per size")
    p.add_argument(
        "--ablation",
        type=int,
        default=0,
        metavar="N",
        help="also N rounds of focused crawls with one part taken out (not by default)",
    )
    p.add_argument(
        "--ablation-tree",
        type=Path,
        action="append",
        default=[],
        help="with --ablation: also crawl with the project copy in this folder (e.g. `git"
        " archive COMMIT | tar -x -C DIR`): a before/after under the same load",
    )
    p.add_argument(
        "--skip",
        default="",
        help="parts to skip: throughput,replay,rss,profile,frontier,dedup",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    return p


def _worker(argv: list[str], probes: int) -> int:
    kind, n = argv[0], int(argv[1])
    if kind == "frontier":
        out = frontier_worker(n)
    elif kind == "dedup":
        out = dedup_worker(n, probes)
    elif kind == "scrapy-dedup":
        out = scrapy_dedup_worker(n)
    else:
        raise SystemExit(f"unknown worker {kind!r}")
    print(json.dumps(out))
    return 0


def default_strategies() -> list[str]:
    from focused.strategies import STRATEGIES

    return [s for s in STRATEGIES if s != "oracle"]


def _interrupt(signum: int, frame: object) -> None:
    Children.stop_all()
    raise SystemExit(128 + signum)


Sites = dict[str, tuple[list[str], str]]  # site -> (seed URLs, labels.tsv location)


def _serve_sites(
    wanted: list[str],
    *,
    sandbox_pages: int,
    data_dir: Path,
    servers: list[ServerProcess],
    log: Callable[[str], None],
) -> Sites:
    """Start one server process per wanted site (appended to ``servers`` as it starts, so
    the caller stops every one even if a later one fails)."""
    sites: Sites = {}
    for site in wanted:
        if site == "sandbox":
            server = sandbox_server(sandbox_pages)
            base = server.start()
            servers.append(server)
            seeds = sandbox_seeds(base, sandbox_pages)
            sites[site] = (seeds, f"{base}/labels.tsv")
        elif site == "wikispeedia":
            if not data_dir.is_dir():
                log(f"no wikispeedia site at {data_dir}: skipped")
                continue
            server = static_server(data_dir)
            base = server.start()
            servers.append(server)
            sites[site] = ([base + WIKI_SEED], str(data_dir / "labels.tsv"))
        else:
            raise SystemExit(f"unknown site {site!r}: sandbox or wikispeedia")
        log(f"{site} served by its own process at {base}")
    return sites


def _profiled_site(args: argparse.Namespace, sites: Sites, plan: RunPlan) -> RunPlan:
    """``plan`` on the site of the profiled and ablation crawls."""
    site = args.profile_site if args.profile_site in sites else next(iter(sites))
    seeds, labels = sites[site]
    return plan.on(site, seeds, labels)


def _profiled_strategy(strategies: list[str]) -> str:
    return "annealing" if "annealing" in strategies else strategies[0]


def _profile_part(
    args: argparse.Namespace, sites: Sites, strategies: list[str], plan: RunPlan, out_dir: Path
) -> dict[str, Any]:
    """Profile one plain and one focused crawl; keep their profiles in ``out_dir``."""
    at = _profiled_site(args, sites, dataclasses.replace(plan, pages=args.profile_pages))
    result = profile(at, strategy=_profiled_strategy(strategies))
    prof_out = out_dir / "speed-profiles"
    prof_out.mkdir(exist_ok=True)
    for kind in ("plain", "focused"):
        entry = result.get(kind, {})
        if "profile_file" in entry:
            target = prof_out / f"{kind}.prof"
            shutil.copy(entry["profile_file"], target)
            entry["profile_file"] = _shown(target)
    return result


def _replay_part(
    args: argparse.Namespace,
    data: dict[str, Any],
    sites: Sites,
    strategies: list[str],
    plan: RunPlan,
) -> None:
    """The replay pairs on ``--replay-sites``; the headline ratios into ``throughput``."""
    wanted = [x.strip() for x in args.replay_sites.split(",") if x.strip()]
    chosen = {k: v for k, v in sites.items() if k in wanted} or dict([next(iter(sites.items()))])
    plan = dataclasses.replace(plan, pages=args.replay_pages, pairs=args.replay_pairs)
    rp = replay(chosen, strategies, plan)
    log = plan.log
    tp = data.setdefault("throughput", {})
    tp["replay"] = rp
    tp["cpu_ratio_replay"] = rp["cpu_ratio"]
    ratios = rp["cpu_ratio"]
    tp["cpu_ratio_replay_min"] = min(ratios.values()) if ratios else None
    rest = [v for k, v in ratios.items() if k != "learning"]
    tp["cpu_ratio_replay_min_but_learning"] = min(rest) if rest else None
    log(f"replay done: {ratios}")


def _crawl_parts(
    args: argparse.Namespace,
    data: dict[str, Any],
    *,
    skip: set[str],
    strategies: list[str],
    out_dir: Path,
    data_dir: Path,
    log: Callable[[str], None],
) -> None:
    """The parts that crawl (throughput, profile, ablation), against server processes
    that stop when they are done."""
    servers: list[ServerProcess] = []
    work = Path(tempfile.mkdtemp(prefix="focused-speed-"))
    plan = RunPlan(
        pages=args.pages,
        concurrency=args.concurrency,
        work=work,
        timeout=args.timeout,
        pairs=args.pairs,
        log=log,
        plain_extensions=(GC_TUNING,) if args.plain_gc_tuning else (),
    )
    try:
        sites: Sites = {}
        if not {"throughput", "profile", "replay", "rss"} <= skip or args.ablation:
            wanted = [s.strip() for s in args.sites.split(",") if s.strip()]
            sites = _serve_sites(
                wanted,
                sandbox_pages=args.sandbox_pages,
                data_dir=data_dir,
                servers=servers,
                log=log,
            )
        if "throughput" not in skip and sites:
            data["throughput"] = throughput(sites, strategies, plan)
        if "replay" not in skip and sites:
            _replay_part(args, data, sites, strategies, plan)
        if "rss" not in skip and "sandbox" in sites:
            timeout = max(args.timeout, 3 * args.rss_pages / 10)
            rss = dataclasses.replace(plan, pages=args.rss_pages, timeout=timeout)
            data["rss"] = peak_rss(
                rss.on("sandbox", *sites["sandbox"]), strategy=_profiled_strategy(strategies)
            )
        if "profile" not in skip and sites:
            data["profile"] = _profile_part(args, sites, strategies, plan, out_dir)
            log("profile done")
        if args.ablation and sites:
            data["ablation"] = ablation(
                _profiled_site(args, sites, plan),
                strategy=_profiled_strategy(strategies),
                reps=args.ablation,
                trees=[t.resolve() for t in args.ablation_tree],
            )
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.probes)
    if args.quick:
        args.skip = ",".join(filter(None, [args.skip, "throughput,profile,frontier,dedup"]))
        args.replay_pages, args.replay_pairs = 150, max(5, args.replay_pairs)
        args.rss_pages = min(args.rss_pages, 3000)
        args.replay_sites = "wikispeedia"  # the sandbox when there is no wikispeedia
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    out_dir = args.out if args.out.is_absolute() else ROOT / args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir = args.data if args.data.is_absolute() else (ROOT / args.data).resolve()
    strategies = [s for s in args.strategies.split(",") if s] or default_strategies()

    def log(msg: str) -> None:
        print(f"[speed {time.monotonic() - started:6.1f}s] {msg}", file=sys.stderr, flush=True)

    import scrapy

    data: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "scrapy": scrapy.__version__,
        },
    }
    _crawl_parts(
        args,
        data,
        skip=skip,
        strategies=strategies,
        out_dir=out_dir,
        data_dir=data_dir,
        log=log,
    )
    if "frontier" not in skip:
        data["frontier"] = frontier_bench(args.frontier_sizes, args.timeout, log)
    if "dedup" not in skip:
        data["dedup"] = dedup_bench(
            args.dedup_sizes, args.scrapy_dedup_size, args.probes, args.timeout, log
        )
    data["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    data["elapsed_s"] = round(time.monotonic() - started, 1)
    data["targets"] = check_targets(data)
    (out_dir / "speed.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    write_markdown(data, out_dir / "speed.md")
    log(f"wrote {out_dir / 'speed.json'} and {out_dir / 'speed.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
