"""Site structures that waste a focused crawl's budget: real crawls (``scrapy crawl
focused``) of small loopback sites on 127.0.0.2, counting what the server was asked for."""

from __future__ import annotations

import sqlite3
from itertools import count
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.crawling import crawl_one_host
from tests.loopback import Answer

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


def stored_paths_and_queries(out: Path) -> list[str]:
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        return [
            urlsplit(u).path + (f"?{urlsplit(u).query}" if urlsplit(u).query else "")
            for (u,) in con.execute("SELECT url FROM pages")
        ]
    finally:
        con.close()


@pytest.mark.integration
def test_tracking_codes_in_every_link_do_not_fetch_each_page_again_and_again(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Every link of the site carries a tracking code of its own (``?utm_campaign=``, a
    new value each time a page is served): each code made another URL of the same
    article, fetched and found a near-duplicate (not stored twice, but fetched): 20
    articles, each linked from the home page and from the three before it, were
    fetched again and again. Now the common tracking parameters (``utm_*``,
    ``fbclid``, ``gclid``, ...) are stripped from links as session ids are
    (``FOCUSED_SESSION_PARAMS``): each article is fetched once."""
    articles = 20
    codes = count()

    def link(i: int) -> str:
        return f'<p><a href="/article/{i}?utm_campaign=c{next(codes)}">chemistry lesson {i}</a></p>'

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/":
            home = "".join(link(j) for j in range(articles))
            return 200, {}, html("Chemistry lessons", article(99) + home)
        if parts.path.startswith("/article/"):
            i = int(parts.path.rsplit("/", 1)[1])
            links = "".join(link(j) for j in (i + 1, i + 2, i + 3) if j < articles)
            return 200, {}, html(f"Chemistry lesson {i}", article(i) + links)
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1")
    fetched = [p for p in site.log if p.startswith("/article/")]
    # every article found and stored once
    assert sorted(stored_paths(out)) == sorted(["/", *(f"/article/{i}" for i in range(articles))])
    assert sorted(fetched) == sorted(f"/article/{i}" for i in range(articles)), fetched


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

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1")
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


# --- a key that names pages is never learnt as one that names none ----------------------
@pytest.mark.integration
def test_a_key_that_names_the_pages_is_kept_although_its_soft_404s_are_near_duplicates(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """The site's articles are ``/item?id=N`` (each links to the next three), and the home
    page first links to 10 ids that are gone, each answered with 200 and the same long
    "no such item" page (near-duplicates by SimHash). A rule that learnt from two such
    pairs that ``id`` names no page took it out of every later link (``/item?id=1``
    fetched as ``/item``): no near-duplicate may take a key out of a link; only the
    named session and tracking parameters are stripped. Every article is fetched under
    its own ``?id=`` and stored."""
    articles, gone = 20, range(100, 110)
    missing = (
        "<p>Sorry, there is no item with this number in our chemistry catalogue. It may"
        " have been sold, withdrawn or merged with another entry of the catalogue; the"
        " numbers of withdrawn items are not given again. Please go back to the home page"
        " of the catalogue, search it again, or write to the editors, who answer every"
        " letter about a missing item within a week of receiving it.</p>"
    )

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/":
            links = "".join(
                f'<p><a href="/item?id={k}">chemistry acid salt reaction lesson {k}</a></p>'
                for k in gone
            )
            links += '<p><a href="/item?id=0">more</a></p>'
            return 200, {}, html("Chemistry lessons", article(99) + links)
        if parts.path == "/item":
            i = int(parts.query[3:]) if parts.query.startswith("id=") else -1
            if 0 <= i < articles:
                links = "".join(
                    f'<p><a href="/item?id={j}">chemistry acid salt reaction lesson {j}</a></p>'
                    for j in (i + 1, i + 2, i + 3)
                    if j < articles
                )
                return 200, {}, html(f"Chemistry lesson {i}", article(i) + links)
            return 200, {}, html("No such item", missing)
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1")
    assert len(missing) >= 300
    # gone ids came first (two pairs of near-duplicates), and were near-duplicates
    assert site.log[:2] == ["/robots.txt", "/"], site.log
    assert {int(p[9:]) for p in site.log[2:5]} <= set(gone), site.log
    assert "focused/pages/near_duplicates" in result.stderr
    # every article fetched under its own id, once; no id ever left out of a link
    assert "/item" not in site.log, site.log
    ids = sorted(int(p[9:]) for p in site.log if p.startswith("/item?id="))
    assert [i for i in ids if i < 100] == list(range(articles)), (site.log, result.stderr[-6000:])
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = {u for (u,) in con.execute("SELECT url FROM pages")}
    finally:
        con.close()
    assert {f"{site.url}/item?id={i}" for i in range(articles)} <= urls


@pytest.mark.integration
def test_short_pages_alike_but_for_their_links_are_each_stored_and_followed(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A gallery: every photo page has the same title and the same short text, and
    links to the next photo. Taken for exact copies of the first (title and text), the
    later photos became its aliases, whose links are not followed: the chain stopped at
    the second photo. The links are part of a short page's key: every photo is stored."""
    photos = 8

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/":
            return 200, {}, html("Chemistry lessons", article(1) + '<a href="/photo?n=0">x</a>')
        if parts.path == "/photo":
            n = int(parts.query[2:])
            after = f'<a href="/photo?n={n + 1}">Next</a>' if n + 1 < photos else ""
            return 200, {}, html("Chemistry gallery", f"<p>A photo of the laboratory.</p>{after}")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1")
    fetched = [p for p in site.log if p.startswith("/photo")]
    assert fetched == [f"/photo?n={n}" for n in range(photos)], fetched
