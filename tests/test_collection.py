"""A real sandbox crawl, then its collection: search, report (in headless Chromium), export.

Chromium (Debian packages ``chromium`` and ``fonts-noto-cjk``) renders ``report.html``;
the report test is skipped when it is missing, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from crawling import PROJECT, Crawl, run_crawl

from focused.output import fulltext
from focused.output.store import read_body
from focused.ranking.relevance import tokenize

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None
)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    out = tmp_path_factory.mktemp("collection") / "out"
    return run_crawl(out, "FOCUSED_PROGRESS_EVERY_PAGES=100", "FOCUSED_REPORT=True")


def scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def pages_with_term(crawl: Crawl, term: str) -> set[str]:
    """URLs of the stored pages whose title or main text holds ``term`` (as segmented)."""
    found = set()
    for row in crawl.rows():
        body = read_body(crawl.out, row["file_path"], row["record_offset"], row["record_length"])
        title, text = fulltext.html_text(body, row["encoding"])
        if term in tokenize(row["title"]) or term in tokenize(text):
            found.add(row["url"])
    return found


@pytest.mark.parametrize("query", ["滴定", "titration"])  # chemistry's body-only words
def test_search_finds_the_chemistry_pages(crawl: Crawl, query: str) -> None:
    proc = scrapy("search", query, "--dir", str(crawl.out), "--limit", "1000", "--json")
    assert proc.returncode == 0, proc.stderr
    hits = [json.loads(line) for line in proc.stdout.splitlines()]
    urls = {h["url"] for h in hits}
    assert len(urls) == len(hits) >= 20
    assert all("/chemistry/" in u for u in urls)  # only chemistry pages carry the term
    assert urls == pages_with_term(crawl, query)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(f"[{query}]" in h["snippet"] for h in hits)
    text = scrapy("search", f"{query} catalyst", "--dir", str(crawl.out), "--limit", "3")
    assert text.returncode == 0 and text.stdout.count("http://127.0.0.1") == 3


def test_index_repaired_after_a_row_is_lost_and_reindex(crawl: Crawl) -> None:
    db = crawl.out / "pages.sqlite3"
    conn = sqlite3.connect(db)
    url = conn.execute("SELECT url FROM pages WHERE url LIKE '%/chemistry/%' LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM pages_fts WHERE rowid = (SELECT id FROM pages WHERE url = ?)", (url,))
    conn.commit()
    total = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    conn.close()
    from focused.output.store import PageStore

    with PageStore(crawl.out) as store:  # what a resumed crawl does at open
        assert store.reindexed == 1
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM pages_fts").fetchone()[0] == total
    conn.close()
    proc = scrapy("search", "--reindex", "--dir", str(crawl.out))
    assert proc.returncode == 0 and f"indexed {total} pages" in proc.stdout, proc.stderr


def test_progress_lines_and_files_at_close(crawl: Crawl) -> None:
    lines = [ln for ln in crawl.log.splitlines() if "focused: progress" in ln]
    assert len(lines) >= 4, crawl.log[-2000:]
    assert "pages/s" in lines[0] and "harvest rate" in lines[0] and "last" in lines[0]
    assert "recall" in lines[0] and "queues waiting" in lines[0] and "temperature" in lines[0]
    stats = json.loads((crawl.out / "stats.json").read_text())
    assert stats["finish_reason"] == "finished" and stats["focused/pages"] == len(crawl.rows())
    # the start-up heap frozen (Scrapy, Twisted, lxml, numpy, jieba: far more than 10,000)
    assert stats["focused/gc/frozen"] > 10_000 and stats["focused/gc/threshold"] == 20_000
    settings = json.loads((crawl.out / "settings.json").read_text())
    assert settings["topic"] == "chemistry" and settings["focused"]["FOCUSED_WEB"] == "sandbox"
    header = (crawl.out / "metrics.csv").read_text().splitlines()
    assert header[0].endswith("elapsed_s,waiting,in_flight,done,error")
    assert all(cell != "" for cell in header[-1].split(",")[-5:])
    assert (crawl.out / "report.html").is_file()


def test_report_opens_in_headless_chromium_with_plots(crawl: Crawl, tmp_path: Path) -> None:
    proc = scrapy("report", "--dir", str(crawl.out))
    assert proc.returncode == 0, proc.stderr
    report = crawl.out / "report.html"
    page = report.read_text(encoding="utf-8")
    assert "<script" not in page and "http-equiv" not in page
    assert 'src="http' not in page and "<link" not in page  # nothing fetched when opened
    assert page.count('src="data:image/png;base64,') == 2
    assert 'href="segments/' in page and "Errors by kind" in page and "FOCUSED_STRATEGY" in page
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing (Debian packages chromium fonts-noto-cjk)")
        pytest.skip("chromium is not installed")
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,2000", report.resolve().as_uri()],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]  # floats in [0, 1], rows x columns x RGB
    assert pixels.shape[:2] == (2000, 1200)
    ink = (pixels < 0.9).any(axis=2)
    # the first plot (recall and harvest rate) fills rows ~300-940, the second ~1010-1650
    for top, bottom in ((320, 900), (1030, 1600)):
        band = ink[top:bottom, 40:1000]
        assert band.mean() > 0.03, (top, band.mean())  # drawn curves, axes, labels
        coloured = (
            pixels[top:bottom, 40:1000].max(axis=2) - pixels[top:bottom, 40:1000].min(axis=2)
        ) > 0.3
        assert coloured.sum() > 2000, (top, coloured.sum())  # the coloured lines and bars


def test_warc_export_round_trips_with_warcio(crawl: Crawl, tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    out = tmp_path / "crawl.warc.gz"
    proc = scrapy("export", "--format", "warc", "--output", str(out), "--dir", str(crawl.out))
    assert proc.returncode == 0, proc.stderr
    stored = {
        r["url"]: (
            r["status"],
            read_body(crawl.out, r["file_path"], r["record_offset"], r["record_length"]),
        )
        for r in crawl.rows()
    }
    responses, requests, kinds = {}, set(), []
    with open(out, "rb") as fh:
        for record in ArchiveIterator(fh):
            kinds.append(record.rec_type)
            assert record.rec_headers.protocol == "WARC/1.1"
            url = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type == "response":
                status = int(record.http_headers.get_statuscode())
                responses[url] = (status, record.content_stream().read())
            elif record.rec_type == "request":
                requests.add(url)
                assert record.http_headers.protocol == "GET"
    assert kinds[0] == "warcinfo"
    assert responses == stored and requests == set(stored)

    jsonl = tmp_path / "pages.jsonl"
    proc = scrapy("export", "--format", "jsonl", "--output", str(jsonl), "--dir", str(crawl.out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [r["url"] for r in rows] == [r["url"] for r in crawl.rows()]
    chem = next(r for r in rows if "/chemistry/" in r["url"])
    assert chem["text"] and chem["title"] and "page_relevance" in chem and "relevant" in chem
