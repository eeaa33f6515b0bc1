"""The hostile benchmark's ReactorHold extension runs in a real crawl and writes its JSON
(a 60-page sandbox crawl, not a measurement: no time is checked)."""

from __future__ import annotations

import json
from pathlib import Path

from crawling import run_crawl


def test_reactor_hold_extension_reports(tmp_path: Path) -> None:
    result = tmp_path / "hold.json"
    extensions = {"focused.extensions.CrawlOutputExtension": 500, "bench.hostile.ReactorHold": 100}
    crawl = run_crawl(
        tmp_path / "out",
        "FOCUSED_SANDBOX_PAGES=60",
        f"EXTENSIONS={json.dumps(extensions)}",
        f"BENCH_HOSTILE_OUT={result}",
    )
    assert crawl.returncode == 0
    got = json.loads(result.read_text())
    assert got["ticks"] > 0 and got["pages"] > 10
    assert got["max_hold_s"] == got["holds"][0]["s"] >= 0
    assert got["peak_rss_mb"] > 20
    assert all(h["responses"] for h in got["holds"])
