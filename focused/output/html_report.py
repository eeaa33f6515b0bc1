"""``report.html``: one self-contained page about a finished (or running) crawl.

Built from the files of the crawl's output folder: ``summary.json``, ``metrics.csv`` (one
row per page, with the time and the four queues of Liu, Xia & Xu 2010 after it),
``stats.json`` (Scrapy's final stats) and ``settings.json`` (the ``FOCUSED_*`` settings in
force), both written at the crawl's close by :mod:`focused.extensions`, and
``pages.sqlite3``. Any of them may be missing; its section then says so.

Sections: the final numbers; harvest rate and recall against pages crawled (plot); the
four queues and pages per second over time (plot); the top pages by relevance A = 4B + C,
linked to the web and to their stored copies (relative links to the WARC segment
``segments/….warc.gz`` and the record's offset, or to the earlier layout's ``html/…/*.html.gz``);
pages by host and by depth; errors by kind; the strategy and every setting.

Plots are PNGs from matplotlib, inlined as base64 ``data:`` URLs; the CSS is inline and
there is no script, so the file opens offline and can be mailed. Everything that came
from the web (titles, URLs) is HTML-escaped.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import base64
import errno
import html
import io
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from focused.output.atomic import is_stream, make_parent, write_text  # noqa: E402
from focused.output.metrics import QUEUES, Point, read_points_csv  # noqa: E402
from focused.output.store import DB_NAME  # noqa: E402

__all__ = ["REPORT_NAME", "build_report", "error_counts", "save_report", "write_report"]

REPORT_NAME = "report.html"
STATS_NAME = "stats.json"
SETTINGS_NAME = "settings.json"
TOP_PAGES = 50
#: pages of the moving window of the harvest-rate plot
WINDOW = 50

#: stats prefixes that count something that went wrong, with a readable name
ERROR_PREFIXES = (
    ("downloader/exception_type_count/", "download exception"),
    ("retry/reason_count/", "retried"),
    ("retry/max_reached", "gave up after retries"),
    ("httperror/response_ignored_status_count/", "HTTP status ignored"),
    ("spider_exceptions/", "spider exception"),
    ("focused/robotstxt/", "robots.txt"),
    ("focused/skipped/", "page skipped"),
    ("focused/links/ignored/", "link ignored"),
    ("focused/robustness/", "hostile web"),
    ("scheduler/unserializable", "request not serializable"),
    ("focused/scheduler/unserializable", "request not serializable"),
    ("log_count/ERROR", "ERROR log lines"),
    ("log_count/CRITICAL", "CRITICAL log lines"),
)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans CJK SC',sans-serif;
margin:0 auto;max-width:1120px;padding:16px 24px;color:#222}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:4px 0 12px}td,th{padding:2px 8px;text-align:left;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ddd;border-radius:6px;
padding:6px 12px;min-width:120px}.card b{display:block;font-size:20px}
.muted{color:#777}img.plot{max-width:100%;height:auto;border:1px solid #eee}
.cols{display:flex;flex-wrap:wrap;gap:32px}a{color:#0645ad}
td.url{max-width:420px;overflow-wrap:anywhere}
"""


# --- reading the folder ------------------------------------------------------------------
def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _points(folder: Path) -> list[Point]:
    try:
        return read_points_csv(folder / "metrics.csv")
    except (OSError, KeyError, ValueError):
        return []


def _pages_db(folder: Path) -> sqlite3.Connection | None:
    db = folder / DB_NAME
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        conn.execute("SELECT 1 FROM pages LIMIT 1")
    except sqlite3.Error:
        return None
    return conn


def error_counts(stats: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """``(kind, stats key, count)`` of every stats counter that counts a failure, plus
    the non-2xx/3xx response statuses; largest first."""
    found: list[tuple[str, str, int]] = []
    for key, value in stats.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or not value:
            continue
        kind = next((name for prefix, name in ERROR_PREFIXES if key.startswith(prefix)), None)
        if kind is None and key.startswith("downloader/response_status_count/"):
            status = key.rsplit("/", 1)[-1]
            if status[:1] in ("4", "5"):
                kind = f"HTTP {status}"
        if kind is not None:
            found.append((kind, key, int(value)))
    return sorted(found, key=lambda x: (-x[2], x[1]))


# --- plots -----------------------------------------------------------------------------
def _png(fig: Any) -> str:
    buf = io.BytesIO()
    try:
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _moving(values: Sequence[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def harvest_plot(points: Sequence[Point]) -> str:
    """Recall (top) and harvest rate (bottom: overall, and over the last
    :data:`WINDOW` pages) against pages crawled, as a ``data:`` URL."""
    fig, (ax_r, ax_h) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.4))
    pages = [p.pages for p in points]
    recall = [(p.pages, p.recall) for p in points if p.recall is not None]
    if recall:
        ax_r.plot([x for x, _ in recall], [r for _, r in recall], color="C0", lw=1.8)
        ax_r.fill_between([x for x, _ in recall], [r for _, r in recall], color="C0", alpha=0.12)
    else:
        ax_r.text(
            0.5,
            0.5,
            "no targets known",
            ha="center",
            va="center",
            transform=ax_r.transAxes,
            color="gray",
        )
    ax_r.set_ylabel("recall")
    ax_r.set_ylim(0, 1.02)
    relevant = [p.relevant_pages / p.pages for p in points]
    ax_h.plot(pages, relevant, color="C2", lw=1.8, label="relevant / pages")
    ax_h.plot(
        pages,
        _moving([float(p.relevant) for p in points], WINDOW),
        color="C1",
        lw=1,
        alpha=0.8,
        label=f"relevant, last {WINDOW} pages",
    )
    if recall:
        ax_h.plot(
            pages,
            [p.precision for p in points],
            color="C0",
            lw=1.2,
            ls="--",
            label="targets / pages (precision)",
        )
    ax_h.set_ylabel("harvest rate")
    ax_h.set_ylim(0, 1.02)
    ax_h.set_xlabel("pages crawled")
    ax_h.set_xlim(left=0)
    ax_h.legend(loc="upper right", fontsize="small")
    for ax in (ax_r, ax_h):
        ax.grid(True, alpha=0.3)
    return _png(fig)


def queue_plot(points: Sequence[Point]) -> str | None:
    """The four queues (top) and pages per second (bottom) against time; None when
    ``metrics.csv`` has no times (a file written before they were recorded)."""
    timed = [p for p in points if p.elapsed_s is not None]
    if len(timed) < 2:
        return None
    fig, (ax_q, ax_s) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.4))
    t = [p.elapsed_s or 0.0 for p in timed]
    for i, name in enumerate(QUEUES):
        values = [getattr(p, name) for p in timed]
        if any(v is not None for v in values):
            ax_q.plot(
                t,
                [float("nan") if v is None else v for v in values],
                color=f"C{i}",
                lw=1.6,
                label=name.replace("_", " "),
            )
    ax_q.set_ylabel("URLs")
    ax_q.set_yscale("symlog", linthresh=10)
    ax_q.legend(loc="upper left", fontsize="small", ncol=4)
    span = max(t[-1] - t[0], 1e-6)
    bins = max(1, min(60, len(timed) // 5))
    width = span / bins
    counts = [0] * bins
    for x in t:
        counts[min(bins - 1, int((x - t[0]) / width))] += 1
    ax_s.bar(
        [t[0] + (i + 0.5) * width for i in range(bins)],
        [c / width for c in counts],
        width=width * 0.9,
        color="C4",
    )
    ax_s.set_ylabel("pages / s")
    ax_s.set_xlabel("seconds since the crawl started")
    for ax in (ax_q, ax_s):
        ax.grid(True, alpha=0.3)
    return _png(fig)


# --- HTML pieces -------------------------------------------------------------------------
def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _link(url: str, text: str | None = None) -> str:
    if urlsplit(url).scheme in ("http", "https"):
        return f'<a href="{_e(url)}">{_e(text if text is not None else url)}</a>'
    return _e(text if text is not None else url)


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Iterable[int] = ()) -> str:
    nums = set(numeric)
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            raw = isinstance(cell, _Raw)
            text = str(cell) if raw else _e(cell)
            cls = ' class="n"' if i in nums else ""
            cells.append(f"<td{cls}>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


class _Raw(str):
    """HTML already escaped (a link)."""


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "–"


# --- the page ----------------------------------------------------------------------------
def build_report(folder: str | os.PathLike[str]) -> str:
    """The report of the crawl in ``folder`` as one HTML string."""
    root = Path(folder)
    summary = _json(root / "summary.json")
    stats = _json(root / STATS_NAME)
    config = _json(root / SETTINGS_NAME)
    points = _points(root)
    focused_settings: dict[str, Any] = config.get("focused", {}) or {}
    strategy = summary.get("strategy") or focused_settings.get("FOCUSED_STRATEGY", "")
    topic = summary.get("topic") or config.get("topic", "")
    pages = summary.get("pages", len(points))
    title = f"focused crawl: {topic or 'unknown topic'} / {strategy or 'unknown strategy'}"

    body: list[str] = [f"<h1>{_e(title)}</h1>", _header_line(root, summary, stats)]
    body.append(_cards(summary, pages))
    body.extend(_plot_sections(points))
    body.extend(_pages_db_sections(root))
    body.extend(_error_section(stats))
    body.append("<h2>Strategy and settings</h2>")
    body.append(f"<p>strategy <b>{_e(strategy or '–')}</b>, topic <b>{_e(topic or '–')}</b></p>")
    body.extend(_settings_tables(focused_settings, config.get("scrapy", {}) or {}))
    if stats:
        body.append(
            "<details><summary>all Scrapy stats</summary>"
            + _table(("key", "value"), sorted((k, _fmt(v, 6)) for k, v in stats.items()))
            + "</details>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _header_line(root: Path, summary: dict[str, Any], stats: dict[str, Any]) -> str:
    """The line under the title: the output folder, when the crawl finished and why."""
    finished = summary.get("finished_at")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(finished)) if finished else "–"
    return (
        f'<p class="muted">output folder {_e(root.resolve())}; finished {_e(when)}; '
        f"reason {_e(stats.get('finish_reason', '–'))}</p>"
    )


def _cards(summary: dict[str, Any], pages: Any) -> str:
    """The headline numbers of the crawl, one card each."""
    elapsed = summary.get("elapsed_s")
    cards = [
        ("pages crawled", pages),
        ("relevant", summary.get("relevant", "–")),
        ("harvest rate", _fmt(summary.get("harvest_rate_relevant"))),
        ("precision", _fmt(summary.get("precision"))),
        ("recall", _fmt(summary.get("recall"))),
        ("targets", f"{summary.get('targets_found', '–')} / {summary.get('targets', '–')}"),
        ("seconds", _fmt(elapsed, 1) if elapsed is not None else "–"),
        ("pages / s", _fmt(pages / elapsed, 1) if elapsed and pages else "–"),
    ]
    return (
        '<div class="cards">'
        + "".join(f'<div class="card"><b>{_e(v)}</b>{_e(k)}</div>' for k, v in cards)
        + "</div>"
    )


def _plot_sections(points: list[Point]) -> list[str]:
    """The harvest-rate-and-recall plot and the queues-and-speed plot (or why not)."""
    out = ["<h2>Harvest rate and recall</h2>"]
    if points:
        out.append(
            f'<img class="plot" id="harvest" alt="harvest rate and recall" '
            f'src="{harvest_plot(points)}">'
        )
    else:
        out.append('<p class="muted">no metrics.csv in this folder</p>')
    out.append("<h2>Queues and speed</h2>")
    queues = queue_plot(points) if points else None
    if queues:
        out.append(f'<img class="plot" id="queues" alt="queues over time" src="{queues}">')
    else:
        out.append('<p class="muted">metrics.csv has no times and queue sizes</p>')
    return out


def _pages_db_sections(root: Path) -> list[str]:
    """The sections read from the page store in ``root`` (or a note that it has none)."""
    conn = _pages_db(root)
    if conn is None:
        return [f'<h2>Pages</h2><p class="muted">no {DB_NAME} in this folder</p>']
    try:
        return _page_sections(conn)
    finally:
        conn.close()


def _error_section(stats: dict[str, Any]) -> list[str]:
    """The errors of the crawl by kind, from its Scrapy stats."""
    out = ["<h2>Errors by kind</h2>"]
    errors = error_counts(stats)
    if not stats:
        out.append(f'<p class="muted">no {STATS_NAME} in this folder</p>')
    elif errors:
        out.append(_table(("kind", "stats key", "count"), errors, numeric=(2,)))
    else:
        out.append("<p>none</p>")
    return out


def _settings_tables(focused: dict[str, Any], scrapy: dict[str, Any]) -> list[str]:
    """The crawl's FOCUSED_* settings and, with them, its Scrapy settings, as tables."""
    if not focused:
        return [f'<p class="muted">no {SETTINGS_NAME} in this folder</p>']
    out = [_settings_table("setting", focused)]
    if scrapy:
        out.append(_settings_table("Scrapy setting", scrapy))
    return out


def _settings_table(heading: str, settings: dict[str, Any]) -> str:
    return _table(
        (heading, "value"),
        ((k, json.dumps(v, ensure_ascii=False)) for k, v in sorted(settings.items())),
    )


def _stored_copy(path: str, offset: int | None) -> str:
    """A link to a page's stored copy: its WARC segment and the record's offset (read it
    with ``python -m focused.output.store get URL``), or the earlier layout's file."""
    if offset is None:
        return f'<a href="{_e(path)}">html.gz</a>'
    return f'<a href="{_e(path)}" title="WARC record at byte {int(offset)}">WARC</a> @{int(offset)}'


def _page_sections(conn: sqlite3.Connection) -> list[str]:
    out = [f"<h2>Top {TOP_PAGES} pages by relevance A = 4B + C</h2>"]
    columns = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    offset = "record_offset" if "record_offset" in columns else "NULL"  # the earlier layout
    rows = conn.execute(
        "SELECT url, title, page_relevance, relevant, is_target, depth, file_path, "
        f"{offset} FROM pages "
        "ORDER BY page_relevance DESC, id LIMIT ?",
        (TOP_PAGES,),
    ).fetchall()
    out.append(
        _table(
            ("#", "A", "title", "URL", "stored copy", "target", "depth"),
            (
                (
                    i,
                    f"{rel:.3f}",
                    page_title or "(no title)",
                    _Raw(_link(url)),
                    _Raw(_stored_copy(path, offset)),
                    "–" if target is None else ("yes" if target else "no"),
                    depth,
                )
                for i, (url, page_title, rel, _relevant, target, depth, path, offset) in enumerate(
                    rows, 1
                )
            ),
            numeric=(0, 1, 6),
        )
    )
    by_host: dict[str, list[int]] = {}
    by_depth: dict[int, list[int]] = {}
    for url, relevant, depth in conn.execute("SELECT url, relevant, depth FROM pages"):
        host = urlsplit(url).netloc or "?"
        for key, table in ((host, by_host), (depth, by_depth)):
            counts = table.setdefault(key, [0, 0])  # type: ignore[arg-type]
            counts[0] += 1
            counts[1] += int(bool(relevant))
    hosts = sorted(by_host.items(), key=lambda kv: (-kv[1][0], kv[0]))
    shown = hosts[:30]
    host_table = _table(
        ("host", "pages", "relevant", "share relevant"),
        ((h, n, r, _pct(r, n)) for h, (n, r) in shown),
        numeric=(1, 2, 3),
    )
    if len(hosts) > len(shown):
        host_table += f'<p class="muted">and {len(hosts) - len(shown)} more hosts</p>'
    depth_table = _table(
        ("depth", "pages", "relevant", "share relevant"),
        ((d, n, r, _pct(r, n)) for d, (n, r) in sorted(by_depth.items())),
        numeric=(0, 1, 2, 3),
    )
    out.append(
        '<div class="cols"><div><h2>Pages by host</h2>'
        + host_table
        + "</div><div><h2>Pages by depth</h2>"
        + depth_table
        + "</div></div>"
    )
    return out


def write_report(
    folder: str | os.PathLike[str], path: str | os.PathLike[str] | None = None
) -> Path:
    """Write :func:`build_report` to ``folder/report.html`` (or ``path``), atomically
    (:func:`save_report`)."""
    out = Path(path) if path is not None else Path(folder) / REPORT_NAME
    save_report(build_report(folder), out)
    return out


def save_report(text: str, out: str | os.PathLike[str]) -> None:
    """Write the report ``text`` to ``out``, atomically. A symbolic link's target is
    written (the link stays); a path that is no regular file nor a folder (a pipe,
    ``/dev/stdout``, a device) is written as it is, not replaced by a file renamed over
    it. ``OSError`` when it cannot be written (a folder, a file in the way of its folder,
    no permission); nothing is left then."""
    if is_stream(out):  # a pipe, /dev/stdout, /dev/null
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    real = Path(os.path.realpath(out))
    if real.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(out))
    make_parent(real)
    write_text(real, text)
