"""Speed benchmark: the harness end to end at tiny sizes, and the speed-ups
keeping their results (no timed assertion anywhere: speed is a benchmark, not a test)."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from parsel import Selector

from focused.frontier.memory import Entry, MemoryFrontier
from focused.frontier.seen import FingerprintTable, SeenSet
from focused.ranking.annealing import Annealer
from focused.ranking.relevance import (
    TopicVector,
    joined_and_counts,
    joined_terms,
    term_counts,
    tokenize,
    tokenize_many,
)
from focused.spiders.focused import BODY_TEXT
from focused.web.sandbox import generate_site
from focused.web.topics import load_topic

ROOT = Path(__file__).resolve().parents[1]


# --- the harness ---------------------------------------------------------------------
def test_harness_writes_every_number_with_tiny_sizes(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    cmd = [
        sys.executable,
        "-m",
        "bench.speed",
        "--out",
        str(out),
        "--sites",
        "sandbox",
        "--sandbox-pages",
        "300",
        "--pages",
        "15",
        "--pairs",
        "1",
        "--strategies",
        "bfs",
        "--profile-pages",
        "15",
        "--frontier-sizes",
        "3000",
        "--dedup-sizes",
        "2000,5000",
        "--scrapy-dedup-size",
        "2000",
        "--probes",
        "1000",
        "--replay-pages",
        "15",
        "--replay-pairs",
        "1",
        "--skip",
        "rss",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((out / "speed.json").read_text(encoding="utf-8"))

    tp = data["throughput"]
    site = tp["sites"]["sandbox"]
    assert site["plain"]["median_pages_s"] > 0
    row = site["strategies"]["bfs"]
    assert row["median_pages_s"] > 0 and row["ratio"] > 0 and len(row["pair_ratios"]) == 1
    assert tp["ratio_min"] == row["ratio"] and tp["ratio_min_at"] == "sandbox/bfs"
    for run in (*site["plain"]["runs"], *row["runs"]):
        assert run["returncode"] == 0 and run["items"] >= 15
        assert run["links_per_page"] > 1  # sandbox pages link to several others
        assert 0 < run["thread_cpu_ms_per_page"] <= run["cpu_ms_per_page"] * 1.05

    # the replay: plain Scrapy fetched exactly the pages the focused crawl listed
    pair = tp["replay"]["sites"]["sandbox"]["bfs"]["pairs"][0]
    assert pair["listed"] >= 15 and pair["same_pages"] == 1.0
    assert pair["plain_extra_pages"] == 0 and pair["plain"]["returncode"] == 0
    assert pair["ratio"] > 0 and tp["cpu_ratio_replay"] == {"bfs": pair["ratio"]}
    # both sides timed over the same responses (the 2nd to the 14th of 15), not by items
    assert pair["ratio_of"] == "window_cpu_ms_per_fetched"
    got = pair["plain"]["window_cpu_ms_per_fetched"] / pair["focused"]["window_cpu_ms_per_fetched"]
    assert got == pytest.approx(pair["ratio"], rel=1e-3)
    assert tp["cpu_ratio_replay_min"] == tp["cpu_ratio_replay_min_but_learning"] == pair["ratio"]

    prof = data["profile"]
    names = {r["category"] for r in prof["focused"]["categories"]}
    assert {"tokenising and counting terms", "  SQLite", "  gzip"} <= names
    assert prof["plain"]["profiled_ms_per_page"] > 0

    fr = data["frontier"]
    assert fr["sizes"]["3000"]["held"] == 3000 and fr["sizes"]["3000"]["picked"] == 3000
    assert fr["bytes_per_url"] > 0 and fr["pick_us"] > 0 and fr["push_us"] > 0

    dd = data["dedup"]
    assert dd["false_drops"] == 0 and dd["false_accepts"] == 0
    assert dd["sizes"]["5000"]["held"] == 5000 and dd["at"] == 5000
    assert dd["bytes_per_url"] > 0 and dd["test_us"] > 0
    assert dd["scrapy_bytes_per_url"] > 0 and dd["scrapy"]["false_drops"] == 0

    assert set(data["targets"]) == {
        "throughput.ratio_min",
        "throughput.cpu_ratio_replay_min",
        "throughput.cpu_ratio_replay_min_but_learning",
        "rss.ratio",
        "frontier.bytes_per_url",
        "frontier.pick_us",
        "dedup.bytes_per_url",
        "dedup.false_drops",
    }
    assert data["targets"]["dedup.false_drops"]["met"] is True
    assert data["machine"]["cpus"] and len(data["machine"]["loadavg_start"]) == 3
    md = (out / "speed.md").read_text(encoding="utf-8")
    headings = ("## Targets", "## Throughput", "## CPU per page on the same pages", "## Frontier")
    for heading in (*headings, "## Where the time goes"):
        assert heading in md


# --- relevance: term counting on bytes gives tokenize's terms -----------------------
WORDS = st.sampled_from(
    ["Chemistry", "ACID", "the", "İstanbul", "ΟΔΟΣ", "École", "word’s", "a_b", "x\u00a0y"]
    + ["化学", "和", "H2O", "ﬁnal", "Straße", "ǅ", "Ⅻ", "²", "\ud800", "\x00", "-"]
    + ["–", "“The”", "a—of", "é–é", "THE’S"]  # non-ASCII words that cut to none, or stop words
    + ["İ", "i\u0307"]  # "İ" lowers to two terms, one of them a non-ASCII word itself
)
TEXTS = st.lists(st.one_of(st.text(max_size=12), WORDS), max_size=25).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
@example("İ i\u0307")
def test_term_counts_are_the_counts_of_tokenize(text: str) -> None:
    expected = Counter(t.encode("utf-8", "surrogatepass") for t in tokenize(text))
    assert term_counts(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXTS, st.sampled_from(["", "a\x00b", "A B", "THE cat"])), max_size=6))
@example(["One two", "", "three\x00four", "Five", "化学 six"])
def test_tokenize_many_is_tokenize_of_each(texts: list[str]) -> None:
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXTS, st.sampled_from(["化学反应", "和", "水H2O化学"])), max_size=4))
def test_joined_terms_is_tokenize_joined(parts: list[str]) -> None:
    text = "".join(parts)
    assert joined_terms(text) == " ".join(tokenize(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXTS, st.sampled_from(["化学反应", "和", "水H2O化学"])), max_size=4))
@example(["İ i\u0307"])
def test_joined_and_counts_are_joined_terms_and_term_counts(parts: list[str]) -> None:
    text = "".join(parts)
    joined, counts = joined_and_counts(text)
    assert joined == joined_terms(text)
    assert counts == term_counts(text)


@pytest.fixture(scope="module")
def sandbox_texts() -> list[str]:
    site = generate_site(seed=3, pages=300)
    texts: list[str] = []
    for body in list(site.pages.values())[:120]:
        sel = Selector(text=body.decode("utf-8", "replace"))
        texts.append(" ".join(sel.xpath("//title//text()").getall()))
        texts.append(" ".join(sel.xpath(BODY_TEXT).getall()))
        texts.extend(sel.xpath("//a//text()").getall())
    return texts


def test_cosines_equal_scikit_learns_sparse_product_exactly(sandbox_texts: list[str]) -> None:
    for name in ("chemistry", "physics"):
        vector = TopicVector(load_topic(name).keywords)
        fast = vector.cosines(sandbox_texts)
        assert fast.tolist() == vector.cosines_reference(sandbox_texts).tolist()
        assert vector.cosines(sandbox_texts).tolist() == fast.tolist()  # cached: same
        assert (fast > 0).sum() > 10


# --- frontier: the bucket queue against a plain model of the rules ------------------
class ModelFrontier:
    """The frontier's rules, slowly: best = highest priority, then lowest seq."""

    def __init__(self) -> None:
        self.live: dict[int, Entry] = {}
        self.seq = 0
        self.promoted = 0

    def push(self, e: Entry) -> bool:
        old = self.live.get(e.fp)
        if old is not None:
            if e.priority <= old.priority:
                return False
            self.promoted += 1
        if e.seq < 0:
            e.seq, self.seq = self.seq, self.seq + 1
        else:
            self.seq = max(self.seq, e.seq + 1)
        self.live[e.fp] = dataclasses.replace(e)
        return True

    def _order(self) -> list[Entry]:
        return sorted(self.live.values(), key=lambda e: (-e.priority, e.seq))

    def pop(self) -> Entry | None:
        order = self._order()
        return self.live.pop(order[0].fp) if order else None

    def pop_annealed(self, a: Annealer) -> Entry | None:
        if a.temperature <= 0 or a.k <= 1:
            a.cool()
            return self.pop()
        top = self._order()[: a.k]
        if not top:
            return None
        return self.live.pop(top[a.choose([e.value for e in top])].fp)


@pytest.mark.parametrize("seed", range(12))
def test_frontier_follows_the_model(seed: int) -> None:
    rng = random.Random(seed)
    real, model = MemoryFrontier(), ModelFrontier()
    k, t0 = rng.choice([1, 3, 8]), rng.choice([0.0, 0.05, 2.0])
    a1, a2 = (Annealer(t0=t0, alpha=0.99, t_min=1e-3, k=k, seed=seed) for _ in range(2))
    n_fp, n_prio = rng.choice([(15, 4), (300, 40), (2000, 10**6)])
    seqs = rng.sample(range(10**5), 500)  # entries restored with their own seq
    for step in range(2500):
        r = rng.random()
        if r < 0.6:
            fp = rng.randrange(n_fp) - n_fp // 3  # includes 0 and negative fingerprints
            kw = {
                "url": f"http://h{fp % 5}.example/p/{fp}?s={step}",
                "fp": fp,
                "priority": rng.randrange(n_prio) - n_prio // 2,
                "value": rng.random(),
                "depth": rng.randrange(30),
                "m": rng.choice([100.0, 80.0, 51.2]),
                "hops": rng.randrange(5),
                "anchor_relevance": rng.random(),
                "parent_url": rng.choice(["", "http://p.example/1", "http://p.example/2"]),
                "flags": rng.randrange(4),
                "extra": rng.choice([None, {"step": step}]),
            }
            if step < 500 and rng.random() < 0.3:
                kw["seq"] = seqs.pop()
            x, y = Entry(**kw), Entry(**kw)
            assert real.push(x) == model.push(y)
            assert x.seq == y.seq
        elif r < 0.75:
            assert real.pop() == model.pop()
        elif r < 0.95:
            assert real.pop_annealed(a1) == model.pop_annealed(a2)
        else:
            fp = rng.randrange(n_fp) - n_fp // 3
            assert real.get(fp) == model.live.get(fp)
            assert (fp in real) == (fp in model.live)
        assert len(real) == len(model.live) and real.promoted == model.promoted
    assert sorted(e.fp for e in real.entries()) == sorted(model.live)
    while (x := real.pop_annealed(a1)) is not None:
        assert x == model.pop_annealed(a2)
    assert not model.live


# --- seen set: the open-addressing table against a dict ------------------------------
def test_fingerprint_table_behaves_like_a_dict() -> None:
    rng = random.Random(1)
    table, ref = FingerprintTable(values=True), {}
    # clustered low bits make long probe runs (backward-shift deletion at work)
    keys = [0, 1, -1, 2**63 - 1, -(2**63)] + [(rng.randrange(64) << 20) for _ in range(3000)]
    keys += [rng.getrandbits(64) - 2**63 for _ in range(3000)]
    for _ in range(40_000):
        fp, r = rng.choice(keys), rng.random()
        if r < 0.45:
            value = rng.randrange(2**40)
            assert table.add(fp, value) == (fp not in ref)
            ref.setdefault(fp, value)
        elif r < 0.6:
            table.set(fp, 7)
            ref[fp] = 7
        elif r < 0.85:
            assert table.discard(fp) == (fp in ref)
            ref.pop(fp, None)
        else:
            assert (fp in table) == (fp in ref) and table.get(fp) == ref.get(fp, -1)
        assert len(table) == len(ref)
    assert dict(table.items()) == ref and sorted(table.keys()) == sorted(ref)
    assert "x" not in table and None not in table


def test_seen_set_grows_and_round_trips(tmp_path: Path) -> None:
    rng = random.Random(2)
    fps = [rng.getrandbits(64) - 2**63 for _ in range(50_000)] + [0]
    seen = SeenSet()
    assert all(seen.add(fp) for fp in fps)
    assert not any(seen.add(fp) for fp in fps[:1000])
    assert len(seen) == len(fps) and 8 * len(fps) < seen.nbytes < 32 * len(fps)
    seen.dump(tmp_path / "seen.bin")
    again = SeenSet.load(tmp_path / "seen.bin")
    assert sorted(again) == sorted(fps)
    assert sum(fp in again for fp in range(1, 1000)) == sum(fp in seen for fp in range(1, 1000))


# --- links: the fast path of FocusedLinkExtractor gives Scrapy's links and counts ---
EDGE_LINKS = (
    b'<html><head><base href="http://other.example/dir/"></head><body>'
    b'<a href=" rel/x.html ">t1</a><a href="/abs?q=1&amp;b=\xc3\xa9">t2</a>'
    b'<a href="mailto:a@b">m</a><a href="javascript:void(0)">j</a><a href="ftp://h/f">f</a>'
    b'<a href="file:///etc/passwd">p</a><a href="http://[::1">bad</a>'
    b'<a href="http://h:99999/x">port</a><a href="x.pdf">pdf</a><a href="feed.rss">rss</a>'
    b'<a href="#frag">frag</a><a href="">empty</a><a>no href</a>'
    b'<area href="/map" alt="m"><a href="rel/x.html" rel="NoFollow">again</a>'
    b'<a href="//cdn.example/a b">space</a><a href="http://H\xc3\xa9.example/\xc3\xa9">idn</a>'
    b'<a href="http://h.example/p?">q</a><a href="HTTP://h.example/P#">h</a>'
    b'<a href="/n" rel="nofollow"><b>bold</b> <i>text</i></a></body></html>'
)


def _scrapy_links(ext: object, response: object) -> list[tuple[str, str, bool]]:
    from scrapy.linkextractors import LinkExtractor

    found = LinkExtractor.extract_links(ext, response)  # type: ignore[arg-type]
    return [(k.url, k.text, k.nofollow) for k in found]


@pytest.mark.parametrize("max_links", [0, 7])
def test_fast_link_extraction_gives_scrapys_links(max_links: int) -> None:
    from scrapy.http import HtmlResponse

    from focused.robustness import FocusedLinkExtractor

    site = generate_site(seed=3, pages=300)
    pages = [(p, b) for p, b in site.pages.items() if p.endswith(".html")][:150]
    pages += [("/edge/page.html", EDGE_LINKS), ("/edge/2", EDGE_LINKS.replace(b"<base", b"<x"))]
    slow, fast = Counter[str](), Counter[str]()
    for encoding in ("utf-8", "cp1252"):
        # one extractor each for all pages: later pages hit the URL cache
        a = FocusedLinkExtractor(count=lambda k, n=1: slow.update({k: n}), max_links=max_links)
        b = FocusedLinkExtractor(count=lambda k, n=1: fast.update({k: n}), max_links=max_links)
        for path, body in pages * 2:
            slow.clear()
            fast.clear()
            response = HtmlResponse("http://127.0.0.1:8000" + path, body=body, encoding=encoding)
            got = [(k.url, k.text, k.nofollow) for k in b.extract_links(response)]
            assert got == _scrapy_links(a, response), path
            # hrefs that make no URL are counted on the fast path only (Scrapy's drops them)
            bad = fast.pop("focused/links/ignored/bad_url", 0)
            edge = path.startswith("/edge/")  # "http://[::1" (the 7th href), port 99999
            assert bad == (0 if not edge else 1 if max_links == 7 else 2), path
            assert fast == slow, path
    assert b._urls  # the cache was used


_EXTENSIONS = ("pdf", "PDF", "rss", "jpg", "tar.gz", "gz", "html", "htm", "x", "")
_URL_PARTS = st.sampled_from(
    [
        "http://",
        "https://",
        "HTTP://",
        "ftp://",
        "file://",
        "mailto:",
        "h",
        "/",
        ".",
        "?",
        "#",
        ";",
        "a",
        "Z",
        "%2E",
        "é",
        "pdf",
        "PDF",
        ".pdf",
        ".Pdf",
        ".rss",
        ".tar.gz",
        "x.jpg?y=1",
        "x.html#p.pdf",
        "/a.b/",
        "::",
        "@",
        ":80",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_URL_PARTS, max_size=10).map("".join),
    st.sampled_from([None, (), ("pdf",), ("rss", "PDF", "tar.gz", "jpg")]),
)
def test_link_verdict_is_scrapys(url: str, deny: tuple[str, ...] | None) -> None:
    """The fast extension test gives Scrapy's ``_link_allowed`` verdict on any URL."""
    from scrapy.link import Link
    from scrapy.linkextractors import LinkExtractor

    from focused.robustness import FocusedLinkExtractor

    ext = FocusedLinkExtractor() if deny is None else FocusedLinkExtractor(deny_extensions=deny)
    assert ext._scrapy_allows(url) == LinkExtractor._link_allowed(ext, Link(url))
    for e in _EXTENSIONS:  # each extension at the end of the path, then a query
        for u in (f"{url}.{e}", f"http://h.example/{url}.{e}", f"http://h/p.{e}?q={url}"):
            assert ext._scrapy_allows(u) == LinkExtractor._link_allowed(ext, Link(u)), u


# --- the micro-benchmarks of docs/speed.md run (their numbers are not checked) ---------
def test_done_links_benchmark_runs() -> None:
    from bench import done_links

    got = done_links.main(n=60, per_page=30, reps=1)
    assert set(got) == {"request_us_per_link", "drop_done_us_per_link"}
    assert all(v >= 0 for v in got.values())


def test_waiting_links_benchmark_runs() -> None:
    from bench import waiting_links

    got = waiting_links.main(n=60, per_page=30, reps=1)
    assert got["request_us_per_link"] >= 0 and got["drop_waiting_us_per_link"] >= 0
    # every link filtered either way; with drop_waiting none reached the scheduler
    assert got["filtered_per_round"] == {
        "request": 60,
        "request_reached_scheduler": 60,
        "drop_waiting": 60,
        "drop_waiting_reached_scheduler": 0,
    }


def test_content_speed_benchmark_runs(tmp_path: Path) -> None:
    from bench import content_speed

    site = generate_site(seed=3, pages=300)
    for i, body in enumerate([b for p, b in site.pages.items() if p.endswith(".html")][:20]):
        (tmp_path / f"{i}.html").write_bytes(body)
    assert content_speed.main(str(tmp_path), pages=20, runs=1) >= 0


@pytest.mark.parametrize("name", ["link_verdict", "content_words"])
def test_cpu_micro_benchmarks_run(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    site = generate_site(seed=3, pages=300)
    (tmp_path / "wiki").mkdir()
    for i, body in enumerate([b for p, b in site.pages.items() if p.endswith(".html")][:20]):
        (tmp_path / "wiki" / f"{i}.html").write_bytes(body)
    bench = importlib.import_module(f"bench.{name}")
    assert bench.main(["--data", str(tmp_path), "--pages", "20", "--rounds", "1"]) == 0
    assert "CPU" in capsys.readouterr().out  # the two ways gave the same results


def test_learning_contexts_benchmark_runs(tmp_path: Path) -> None:
    from bench import learning_contexts

    site = generate_site(seed=3, pages=300)
    (tmp_path / "wiki").mkdir()
    for i, body in enumerate([b for p, b in site.pages.items() if p.endswith(".html")][:20]):
        (tmp_path / "wiki" / f"{i}.html").write_bytes(body)
    # 0: the joiner's contexts are the urljoin ones
    assert learning_contexts.main(["--data", str(tmp_path), "--pages", "20", "--rounds", "1"]) == 0


def test_learning_calls_record_and_replay(tmp_path: Path) -> None:
    """A real 40-page sandbox crawl recorded, replayed twice: the same outputs."""
    from bench import learning_calls

    calls = tmp_path / "calls.pkl"
    cmd = [sys.executable, "-m", "bench.learning_calls", "record", "--site", "sandbox"]
    cmd += ["--pages", "40", "--out", str(calls)]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=300, capture_output=True)
    got = learning_calls.replay(calls, 1, tmp_path / "a.out")
    assert got["pages"] >= 40 and got["total_ms_per_page"] >= 0
    learning_calls.replay(calls, 1, tmp_path / "b.out")
    assert learning_calls.compare(tmp_path / "a.out", tmp_path / "b.out") == 0


def test_focused_crawls_keep_the_project_extensions(tmp_path: Path) -> None:
    """The probe is added to the project's extensions, not put in their place: their
    cost (the crawl's output, the atomic spider.state) is part of a focused crawl's."""
    from bench import speed
    from focused import settings as project_settings

    def extensions(kind: str) -> dict[str, int | None]:
        cmd = speed.crawl_command(
            kind,
            seeds=["http://127.0.0.1:1/a.html"],
            labels="",
            out_dir=tmp_path,
            pages=10,
            concurrency=2,
            probe_file=tmp_path / "probe.json",
        )
        (value,) = [a.split("=", 1)[1] for a in cmd if a.startswith("EXTENSIONS=")]
        return json.loads(value)

    focused = extensions("annealing")
    assert focused[speed.PROBE] == 0
    for name, order in project_settings.EXTENSIONS.items():
        assert focused[name] == order
    assert extensions("plain") == {speed.PROBE: 0}
