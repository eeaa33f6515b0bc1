"""The page store's full-text index and the search API, on real SQLite and real files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from focused.output import fulltext
from focused.output.metrics import CSV_FIELDS, HarvestCurve, read_points_csv
from focused.output.progress import Progress, Snapshot
from focused.output.search import SearchError, reindex, search
from focused.output.store import PageStore

ROOT = Path(__file__).resolve().parents[1]


def html(title: str, text: str) -> bytes:
    return (
        f"<html><head><title>{title}</title><script>var catalyst = 1;</script></head>"
        f"<body><p>{text}</p><style>.catalyst{{}}</style></body></html>"
    ).encode()


PAGES = {
    "http://h/acid": ("酸 Acid", "催化剂可以加快化学反应。A catalyst speeds up a reaction."),
    "http://h/cat": ("Catalyst", "催化剂 and enzymes."),
    "http://h/ball": ("足球 Football", "足球比赛。The match ended with a goal."),
}


def fill(store: PageStore, pages: dict[str, tuple[str, str]] = PAGES) -> None:
    for url, (title, text) in pages.items():
        assert store.add({"url": url, "title": title, "text": text}, html(title, text))


def fts_rows(out: Path) -> int:
    conn = sqlite3.connect(out / "pages.sqlite3")
    try:
        return conn.execute("SELECT COUNT(*) FROM pages_fts").fetchone()[0]
    finally:
        conn.close()


def test_chinese_and_english_queries_ranked_by_bm25_with_snippets(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        fill(store)
    zh = search(tmp_path, "催化剂")
    assert {h.url for h in zh} == {"http://h/acid", "http://h/cat"}
    en = search(tmp_path, "catalyst")
    # the term in the title counts four times: Catalyst's page first
    assert [h.url for h in en] == ["http://h/cat", "http://h/acid"]
    assert en[0].score > en[1].score
    assert "[catalyst]" in en[1].snippet
    assert [h.url for h in search(tmp_path, "FOOTBALL")] == ["http://h/ball"]  # case folded
    # terms are OR-ed, pages with more of them first; --all wants every term
    both = search(tmp_path, "催化剂 goal")
    assert {h.url for h in both} == set(PAGES)
    assert search(tmp_path, "催化剂 goal", all_terms=True) == []
    assert [h.url for h in search(tmp_path, "catalyst 催化剂", all_terms=True)][0] == "http://h/cat"
    assert search(tmp_path, "the of 的") == []  # stop words only: no term
    assert search(tmp_path, 'x" OR "y') == []  # quotes cannot break out of a term
    assert len(search(tmp_path, "catalyst", limit=1)) == 1


def test_query_segmented_like_the_pages(own_words: None) -> None:
    assert fulltext.segment("催化剂可以加快化学反应") == "催化剂 可以 加快 化学反应"
    assert fulltext.match_expression("化学反应 Catalyst") == '"化学反应" OR "catalyst"'


def test_a_keyword_inside_a_compound_finds_its_page(tmp_path: Path, own_words: None) -> None:
    """jieba keeps 化学元素 (chemical element) whole; a crawl of the chemistry topic
    indexes the chemistry keywords inside it too, so a search for 元素 finds the page
    after the crawl (in another process: the words the crawl added are gone)."""
    from focused.ranking import relevance
    from focused.web.topics import load_topic

    pages = {
        "http://h/element": ("化学元素", "化学家用化学物质研究生物化学。"),
        "http://h/ball": ("足球 Football", "足球比赛。"),
    }
    relevance.hold_words()  # a crawl of the chemistry topic
    try:
        relevance.TopicVector(load_topic("chemistry").keywords)
        with PageStore(tmp_path) as store:
            fill(store, pages)
    finally:
        relevance.release_words()
    assert [h.url for h in search(tmp_path, "元素")] == ["http://h/element"]
    assert [h.url for h in search(tmp_path, "化学")] == ["http://h/element"]
    # the compound itself is still a term, and in a phrase the keywords follow it
    assert [h.url for h in search(tmp_path, "化学元素")] == ["http://h/element"]
    assert [h.url for h in search(tmp_path, '"化学元素"')] == ["http://h/element"]
    assert search(tmp_path, "物质") == []  # no keyword of the topic: not looked for inside


TABLE_PAGES = {
    "http://h/table": ("周期表", "化学元素周期表是化学家的工具。"),
    "http://h/ball": ("足球 Football", "足球是球员的工具。"),
}


def _crawled(folder: Path, pages: dict[str, tuple[str, str]], topic: str | None) -> None:
    """``pages`` stored as a crawl of ``topic`` stores them (its words in jieba's
    dictionary while it runs, recorded by the store); ``None``: a crawl that adds none."""
    from focused.ranking import relevance
    from focused.web.topics import load_topic

    keywords = load_topic(topic).keywords if topic else {"football": 1.0}
    relevance.hold_words()
    try:
        relevance.TopicVector(keywords)
        with PageStore(folder, words=relevance.jieba_words(keywords)) as store:
            fill(store, pages)
    finally:
        relevance.release_words()


def test_search_and_reindex_cut_with_the_words_of_the_crawls_topic(
    tmp_path: Path, own_words: None
) -> None:
    """The chemistry crawl indexed 化学元素周期表 as 化学元素 化学 元素 周期表; this process
    has no chemistry words (jieba alone cuts 化学元素 周期表), yet a phrase, a left-out
    phrase and a reindex cut as the crawl did; a store of a crawl without those words is
    searched with none of them, before and after."""
    chem, plain = tmp_path / "chem", tmp_path / "plain"
    _crawled(chem, TABLE_PAGES, "chemistry")
    _crawled(plain, TABLE_PAGES, None)
    assert fulltext.segment("化学元素周期表") == "化学元素 周期表"  # the words are gone
    for folder in (chem, plain, chem):  # each with its own words
        assert [h.url for h in search(folder, '"化学元素周期表"')] == ["http://h/table"]
        assert [h.url for h in search(folder, "工具 -化学元素周期表")] == ["http://h/ball"]
        assert [h.url for h in search(folder, "工具 -化学元素")] == ["http://h/ball"]
    assert [h.url for h in search(chem, "元素")] == ["http://h/table"]
    assert search(plain, "元素") == []  # indexed without the chemistry words
    assert fulltext.segment("化学元素周期表") == "化学元素 周期表"  # and dropped again
    assert reindex(chem) == 2  # from the stored HTML, cut as the crawl cut it
    assert [h.url for h in search(chem, "元素")] == ["http://h/table"]
    assert [h.url for h in search(chem, '"化学元素周期表"')] == ["http://h/table"]
    assert reindex(plain) == 2
    assert search(plain, "元素") == []
    # a row without its index row is indexed at open with the recorded words too (a
    # tool's store, which records none of its own)
    conn = sqlite3.connect(chem / "pages.sqlite3")
    conn.execute("DELETE FROM pages_fts WHERE rowid = (SELECT id FROM pages WHERE url = ?)",
                 ("http://h/table",))  # fmt: skip
    conn.commit()
    conn.close()
    with PageStore(chem) as store:
        assert store.reindexed == 1
    assert [h.url for h in search(chem, "元素")] == ["http://h/table"]
    assert fulltext.segment("化学元素周期表") == "化学元素 周期表"


@pytest.mark.integration
def test_a_crawl_records_its_topics_words_for_the_search_command(
    tmp_path: Path, project_root: Path, venv_scrapy: list[str], own_words: None
) -> None:
    """A real crawl of the chemistry topic (a loopback server) records the words its
    index was cut with; ``scrapy search`` (a process of its own) finds its page by a
    phrase cut with them, and so does this process after ``scrapy search --reindex``."""
    import json

    from tests.crawling import crawl_real_web, run_scrapy
    from tests.loopback import LoopbackServer

    page = (
        "<html><head><title>周期表</title></head><body><p>化学元素周期表是化学家的工具。"
        "化学反应和化学元素。</p></body></html>"
    ).encode()
    server = LoopbackServer("127.0.0.1", lambda path: (200, {}, page))
    out = tmp_path / "out"
    try:
        result = crawl_real_web(project_root, venv_scrapy, out, server.url + "/")
    finally:
        server.close()
    assert result.returncode == 0, result.stderr[-3000:]
    conn = sqlite3.connect(out / "pages.sqlite3")
    try:
        assert "化学" in fulltext.recorded_words(conn)
    finally:
        conn.close()
    found = run_scrapy([*venv_scrapy, "search", '"化学元素周期表"', "--dir", str(out), "--json"])
    assert found.returncode == 0, found.stderr[-2000:]
    assert [json.loads(line)["url"] for line in found.stdout.splitlines()] == [server.url + "/"]
    done = run_scrapy([*venv_scrapy, "search", "--reindex", "--dir", str(out)])
    assert done.returncode == 0, done.stderr[-2000:]
    assert [h.url for h in search(out, "元素")] == [server.url + "/"]
    assert [h.url for h in search(out, '"化学元素周期表"')] == [server.url + "/"]


def test_html_text_is_the_spiders_text() -> None:
    from focused.spiders.focused import BODY_TEXT, TITLE_TEXT

    assert (fulltext.TITLE_XPATH, fulltext.TEXT_XPATH) == (TITLE_TEXT, BODY_TEXT)
    title, text = fulltext.html_text(html("T", "body words"), "utf-8")
    assert title == "T" and "body words" in text and "catalyst" not in text  # no script/style


def test_index_row_is_repaired_at_open_from_the_stored_html(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        fill(store)
    conn = sqlite3.connect(tmp_path / "pages.sqlite3")
    conn.execute("DELETE FROM pages_fts WHERE rowid = (SELECT id FROM pages WHERE url = ?)",
                 ("http://h/cat",))  # fmt: skip
    conn.commit()
    conn.close()
    assert {h.url for h in search(tmp_path, "enzymes")} == set()
    with PageStore(tmp_path) as store:
        assert store.reindexed == 1
    assert [h.url for h in search(tmp_path, "enzymes")] == ["http://h/cat"]
    with PageStore(tmp_path) as store:
        assert store.reindexed == 0  # nothing left to do


def test_store_without_index_then_repaired_and_reindex(tmp_path: Path) -> None:
    with PageStore(tmp_path, index=False) as store:
        fill(store)
    with pytest.raises(SearchError, match="no full-text index"):
        search(tmp_path, "catalyst")
    with PageStore(tmp_path) as store:  # index on: every page indexed from its HTML
        assert store.reindexed == 3
    assert {h.url for h in search(tmp_path, "催化剂")} == {"http://h/acid", "http://h/cat"}
    before = [(h.url, round(h.score, 6)) for h in search(tmp_path, "catalyst goal")]
    assert reindex(tmp_path) == 3
    assert [(h.url, round(h.score, 6)) for h in search(tmp_path, "catalyst goal")] == before
    assert fts_rows(tmp_path) == 3
    with pytest.raises(SearchError, match="no page store"):
        search(tmp_path / "nowhere", "x")


def test_index_text_is_capped(tmp_path: Path) -> None:
    with PageStore(tmp_path, index_max_chars=23) as store:
        text = "alpha " * 3 + "omega"  # omega: characters 18-22
        store.add({"url": "http://h/a", "title": "", "text": text + " zeta"}, b"<p>x</p>")
    assert search(tmp_path, "alpha") and search(tmp_path, "omega")
    assert search(tmp_path, "zeta") == []


def test_text_cut_by_the_spider_indexes_as_the_store_would_cut_it(tmp_path: Path) -> None:
    """The spider hands the store the text already cut into terms (``text_terms``, from
    its relevance pass): the index rows are those the store makes from the text; past
    the cap the store cuts the capped text itself."""
    from focused.ranking.relevance import joined_and_counts

    def rows(out: Path, handed: bool, cap: int = 100_000) -> list[tuple]:
        with PageStore(out, index_max_chars=cap) as store:
            for url, (title, text) in PAGES.items():
                record = {"url": url, "title": title, "text": text}
                if handed:
                    record["text_terms"] = joined_and_counts(text)[0]
                store.add(record, html(title, text))
        conn = sqlite3.connect(out / "pages.sqlite3")
        try:
            query = "SELECT rowid, title, text FROM pages_fts ORDER BY rowid"
            return conn.execute(query).fetchall()
        finally:
            conn.close()

    want = rows(tmp_path / "store", False)
    assert rows(tmp_path / "spider", True) == want
    assert any("催化剂" in r[2] for r in want)
    assert rows(tmp_path / "capped", True, cap=12) == rows(tmp_path / "capped0", False, cap=12)


CRASH = textwrap.dedent(
    """
    import os, sys
    from focused.output.store import PageStore
    store = PageStore(
        sys.argv[1], commit_every=int(sys.argv[2]), index_every=int(sys.argv[3])
    ).open()
    for i in range(7):
        store.add({"url": f"http://h/{i}", "title": "t", "text": f"word{i} catalyst"},
                  b"<title>t</title><p>catalyst</p>")
    os._exit(3)  # kill -9: no close, no flush
    """
)


@pytest.mark.parametrize(
    "commit_every, index_every, kept, indexed",
    [(1, 1, 7, 7), (5, 1, 5, 5), (1, 5, 7, 5), (1, 3, 7, 6)],
)
def test_index_survives_a_crash_with_its_rows(
    tmp_path: Path, commit_every: int, index_every: int, kept: int, indexed: int
) -> None:
    """Index rows written with each row (``index_every`` 1) commit and are lost with
    their rows; written in batches, the rows still waiting at a ``kill -9`` are made
    from the stored pages when the store next opens. No committed row is lost."""
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, str(tmp_path), str(commit_every), str(index_every)],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr.decode()
    assert fts_rows(tmp_path) == indexed
    with PageStore(tmp_path) as store:
        assert store.count() == kept and store.reindexed == kept - indexed
    assert fts_rows(tmp_path) == kept
    assert len(search(tmp_path, "catalyst", limit=100)) == kept
    assert [h.url for h in search(tmp_path, "word4")] == ["http://h/4"]


def test_index_rows_go_in_batches_by_count_and_by_time(tmp_path: Path) -> None:
    """``index_every`` pages' index rows go in with the commit of the last of them, or
    with the first commit ``index_seconds`` after the oldest; the rest at close. Every
    page row is committed at once all the while."""
    pages = {f"http://h/{i}": ("t", f"word{i} catalyst") for i in range(7)}
    store = PageStore(tmp_path, index_every=3, index_seconds=3600).open()
    counts = []
    for url, (title, text) in pages.items():
        store.add({"url": url, "title": title, "text": text}, html(title, text))
        counts.append((store.count(), fts_rows(tmp_path), store.unindexed))
    assert counts == [
        (1, 0, 1), (2, 0, 2), (3, 3, 0), (4, 3, 1), (5, 3, 2), (6, 6, 0), (7, 6, 1),
    ]  # fmt: skip
    store.close()
    assert fts_rows(tmp_path) == 7
    assert [h.url for h in search(tmp_path, "word6")] == ["http://h/6"]

    timed = tmp_path / "timed"
    with PageStore(timed, index_every=100, index_seconds=0.2) as store:
        store.add({"url": "http://h/a", "title": "t", "text": "alpha"}, html("t", "alpha"))
        assert fts_rows(timed) == 0
        time.sleep(0.3)
        store.add({"url": "http://h/b", "title": "t", "text": "beta"}, html("t", "beta"))
        assert fts_rows(timed) == 2 and store.unindexed == 0


def test_index_rows_held_back_while_another_process_opens_the_store(tmp_path: Path) -> None:
    """Another writer that opens the store (a worker of a distributed crawl) indexes the
    rows whose index rows this one holds back, from their HTML; this one's later write
    of them replaces those rows (no constraint error, no row twice)."""
    first = PageStore(tmp_path, index_every=5, index_seconds=3600).open()
    for i in range(2):
        first.add({"url": f"http://h/{i}", "title": "t", "text": f"w{i}"}, html("t", f"w{i}"))
    assert fts_rows(tmp_path) == 0
    second = PageStore(tmp_path).open()
    assert second.reindexed == 2 and fts_rows(tmp_path) == 2
    for i in range(2, 5):
        first.add({"url": f"http://h/{i}", "title": "t", "text": f"w{i}"}, html("t", f"w{i}"))
    assert first.unindexed == 0 and fts_rows(tmp_path) == 5
    second.close()
    first.close()
    assert sorted(h.url for h in search(tmp_path, "w0 w1 w2 w3 w4")) == [
        f"http://h/{i}" for i in range(5)
    ]


def test_a_rolled_back_page_gets_no_index_row_and_the_waiting_ones_stay(tmp_path: Path) -> None:
    """A commit that fails rolls back its page's row and the index rows written with it;
    the pages committed before keep waiting and are indexed later, the rolled-back one
    never (its row is gone)."""

    class FailOnce(PageStore):
        fail = False

        def _commit(self) -> None:
            if self.fail:
                self.fail = False
                raise sqlite3.OperationalError("disk I/O error")
            super()._commit()

    store = FailOnce(tmp_path, index_every=3, index_seconds=3600).open()
    for i in range(2):
        store.add({"url": f"http://h/{i}", "title": "t", "text": f"w{i}"}, html("t", f"w{i}"))
    store.fail = True
    with pytest.raises(sqlite3.OperationalError):
        store.add({"url": "http://h/lost", "title": "t", "text": "lost"}, html("t", "lost"))
    assert store.abort() == ["http://h/lost"]
    assert store.unindexed == 2 and fts_rows(tmp_path) == 0
    store.add({"url": "http://h/2", "title": "t", "text": "w2"}, html("t", "w2"))
    assert fts_rows(tmp_path) == 3 and store.unindexed == 0
    store.close()
    assert search(tmp_path, "lost") == []
    assert sorted(h.url for h in search(tmp_path, "w0 w1 w2")) == [
        "http://h/0",
        "http://h/1",
        "http://h/2",
    ]


def test_metrics_csv_has_times_and_queues_and_old_files_stay_readable(tmp_path: Path) -> None:
    curve = HarvestCurve(frozenset({"http://h/a"}))
    curve.add("http://h/a", True, elapsed_s=0.5, queues={"waiting": 3, "in_flight": 2})
    curve.add("http://h/b", False)
    curve.to_csv(tmp_path / "m.csv")
    points = read_points_csv(tmp_path / "m.csv")
    assert points[0].elapsed_s == 0.5 and points[0].waiting == 3 and points[0].in_flight == 2
    assert points[0].done is None and points[1].elapsed_s is None and points[1].waiting is None
    old = tmp_path / "old.csv"  # the columns before times and queues were recorded
    old.write_text(",".join(CSV_FIELDS[:8]) + "\n1,1.000000,1.000000,1,1,http://h/a,1,1\n")
    (point,) = read_points_csv(old)
    assert point.pages == 1 and point.recall == 1.0 and point.elapsed_s is None


def test_progress_line_shows_the_window_and_flags_a_drift() -> None:
    progress = Progress(every_pages=100, every_seconds=30, now=0.0)
    assert not progress.due(99, 29.0) and progress.due(100, 29.0) and progress.due(5, 30.0)
    line = progress.line(Snapshot(100, 80, 0.5, 10, 20, {"waiting": 7}, 0.01), now=10.0)
    assert "100 pages, 10.0 pages/s" in line and "harvest rate 0.800" in line
    assert "last 100 pages 0.800" in line and "recall 0.500 (10/20 targets)" in line
    assert "queues waiting 7" in line and "temperature 0.01" in line
    assert "drifting" not in line
    line = progress.line(Snapshot(200, 85, None), now=20.0)  # 5 relevant of the last 100
    assert "harvest rate 0.425, last 100 pages 0.050 (falling: drifting off-topic?)" in line
    assert "recall" not in line and not progress.due(250, 21.0)


PHRASES = {
    "http://h/speed": ("Reaction rates", "A catalyst speeds up a reaction; heat speeds it too."),
    "http://h/enzyme": ("Enzymes", "An enzyme is a catalyst. The reaction speeds up."),
    "http://h/title": ("Catalyst speeds", "Nothing here says it."),
}


def test_phrases_left_out_terms_and_the_title_filter(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        fill(store, PHRASES)
    urls = lambda q: {h.url for h in search(tmp_path, q)}  # noqa: E731
    assert urls("catalyst speeds") == set(PHRASES)  # words: any of them
    # a quoted phrase: its words next to each other, in order
    assert urls('"catalyst speeds"') == {"http://h/speed", "http://h/title"}
    assert urls('"speeds catalyst"') == set()
    # a leading minus leaves out the pages with the word, or with the phrase
    assert urls("catalyst -enzyme") == {"http://h/speed", "http://h/title"}
    assert urls('reaction -"catalyst speeds"') == {"http://h/enzyme"}
    # title: looks in the title only
    assert urls("title:catalyst") == {"http://h/title"}
    assert urls('title:"reaction rates" enzyme') == {"http://h/speed", "http://h/enzyme"}
    assert urls("-catalyst") == set()  # nothing wanted: no pages
    # FTS5's own syntax is not read: a column the index lacks, NEAR, a star are words
    assert urls("url:catalyst") == set(PHRASES)
    assert search(tmp_path, "NEAR(catalyst speeds) cat*") != []


def test_the_match_expression_of_each_form() -> None:
    m = fulltext.match_expression
    assert m('"Catalyst Speeds" -enzyme') == '("catalyst speeds") NOT ("enzyme")'
    assert m("title:催化剂") == 'title : "催化剂"'
    assert m('-"催化剂 可以"') == ""
    assert m("acid base", all_terms=True) == '"acid" AND "base"'


def test_a_tiny_score_is_printed_with_its_digits() -> None:
    from focused.output.search import Hit, format_hits

    hit = Hit("http://h/a", "A", 2.4e-06, "", 0.5, True, 1, "x")
    assert "score 2.4e-06;" in format_hits([hit])
