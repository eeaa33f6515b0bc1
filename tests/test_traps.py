"""Site structures that waste a focused crawl's budget: real crawls (``scrapy crawl
focused``) of small loopback sites on 127.0.0.2, counting what the server was asked for."""

from __future__ import annotations

import sqlite3
from itertools import count
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focused.web.params import IgnoredParams, differing_keys
from tests.crawling import crawl_real_web
from tests.loopback import Answer, LoopbackServer

SUBJECTS = ["acid", "salt", "oxide", "catalyst", "polymer", "crystal", "ion", "molecule"]


def article(i: int) -> str:
    s = SUBJECTS[i % len(SUBJECTS)]
    return (
        f"The {s} is studied in chemistry, lesson {i}. A chemical reaction of the {s} with"
        f" an acid gives a salt and water; the molecule of the {s} has atoms held by a"
        f" bond. Organic and inorganic compounds of the {s} take part in oxidation and"
        f" reduction, and its crystal lattice of ions is described in paragraph {i * 7}. "
    ) * 3


def html(title: str, content: str) -> bytes:
    return (
        f"<html><head><title>{title}</title></head><body>"
        f'<div class="top"><a href="/">Home</a></div>'
        f"<div><h1>{title}</h1>{content}</div></body></html>"
    ).encode()


def stored_paths(out: Path) -> list[str]:
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        return [urlsplit(u).path for (u,) in con.execute("SELECT url FROM pages")]
    finally:
        con.close()


# --- query keys that make no other page (tracking codes, unknown session ids) ----------
def test_differing_keys_are_those_of_one_path_whose_values_differ() -> None:
    a = "http://h.test/a?utm_source=x&utm_campaign=1&id=7"
    assert differing_keys(a, "http://h.test/a?utm_source=x&utm_campaign=2&id=7") == {"utm_campaign"}
    assert differing_keys(a, "http://h.test/a?id=7") == {"utm_source", "utm_campaign"}
    assert differing_keys(a, "http://h.test/b?utm_source=x&utm_campaign=2&id=7") == set()
    assert differing_keys(a, "http://other.test/a?id=8") == set()
    assert differing_keys(a, a) == set()


def test_a_key_is_ignored_on_its_host_after_two_pairs_only() -> None:
    params = IgnoredParams()
    assert params.observe("http://h.test/a?ref=1", "http://h.test/a?ref=2") == set()
    assert params.without("http://h.test/b?ref=3&id=4") == "http://h.test/b?ref=3&id=4"
    assert params.observe("http://h.test/c?ref=5", "http://h.test/c?ref=6") == {"ref"}
    assert params.without("http://h.test/b?ref=3&id=4") == "http://h.test/b?id=4"
    assert params.without("http://h.test/b?ref=3") == "http://h.test/b"
    assert params.without("http://other.test/b?ref=3") == "http://other.test/b?ref=3"
    # a pair that differs elsewhere than in its query teaches nothing
    assert params.observe("http://h.test/x?id=1", "http://h.test/y?id=2") == set()
    assert params.without("http://h.test/b?id=4") == "http://h.test/b?id=4"


@pytest.mark.integration
def test_tracking_codes_in_every_link_do_not_fetch_each_page_again_and_again(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Every link of the site carries a tracking code of its own (``?utm_campaign=``, a
    new value each time a page is served): each code made another URL of the same
    article, fetched and found a near-duplicate (not stored twice, but fetched). 20
    articles, each linked from the three before it, cost 40 fetches, and the crawl
    ended with 4 of them never fetched. Now the keys in which two near-duplicates of
    one path differ are learnt to make no other page of the host and left out of its
    links: 28 fetches, every article stored."""
    articles = 20
    codes = count()

    def link(i: int) -> str:
        return f'<p><a href="/article/{i}?utm_campaign=c{next(codes)}">chemistry lesson {i}</a></p>'

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/":
            return 200, {}, html("Chemistry lessons", article(99) + link(0))
        if parts.path.startswith("/article/"):
            i = int(parts.path.rsplit("/", 1)[1])
            links = "".join(link(j) for j in (i + 1, i + 2, i + 3) if j < articles)
            return 200, {}, html(f"Chemistry lesson {i}", article(i) + links)
        return 404, {}, b""

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root, venv_scrapy, out, f"{site.url}/", "CONCURRENT_REQUESTS=1"
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    fetched = [p for p in site.log if p.startswith("/article/")]
    # every article found and stored once
    assert sorted(stored_paths(out)) == sorted(["/", *(f"/article/{i}" for i in range(articles))])
    assert len(fetched) <= articles + 10, (len(fetched), fetched)
    assert "'focused/params/ignored': 1" in result.stderr


# --- soft 404s: "page not found" answered with 200 -------------------------------------
@pytest.mark.integration
def test_soft_404_pages_are_stored_once_not_once_per_broken_link(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A site answers every unknown URL with 200 and its "page not found" page (a soft
    404), and its home page links to 20 pages that are gone. The page is too short for
    the near-duplicate check (under 200 characters of content), so each broken link was
    stored as a page of its own: 20 rows of "Page not found". Now a short page with the
    same title and exactly the same main content as a stored page of its host is that
    page's copy: an alias, one row."""
    gone = 20

    def answer(path: str) -> Answer:
        if path == "/":
            links = "".join(
                f'<p><a href="/old/lesson-{k}.html">old chemistry lesson {k}</a></p>'
                for k in range(gone)
            )
            links += '<p><a href="/lesson.html">chemistry lesson</a></p>'
            return 200, {}, html("Chemistry lessons", article(99) + links)
        if path == "/lesson.html":
            return 200, {}, html("Chemistry lesson", article(1))
        return 200, {}, html("Page not found", "<p>Sorry, that page does not exist.</p>")

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root, venv_scrapy, out, f"{site.url}/", "CONCURRENT_REQUESTS=1"
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert len([p for p in site.log if p.startswith("/old/")]) == gone
    paths = stored_paths(out)
    assert "/" in paths and "/lesson.html" in paths
    soft = [p for p in paths if p.startswith("/old/")]
    assert 1 <= len(soft) <= 2, soft
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        (aliases,) = con.execute("SELECT COUNT(*) FROM aliases").fetchone()
    finally:
        con.close()
    assert len(soft) + aliases == gone
