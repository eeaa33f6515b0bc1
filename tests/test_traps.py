"""Site structures that waste a focused crawl's budget: real crawls (``scrapy crawl
focused``) of small loopback sites on 127.0.0.2, counting what the server was asked for."""

from __future__ import annotations

import re
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


def stored_paths_and_queries(out: Path) -> list[str]:
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        return [
            urlsplit(u).path + (f"?{urlsplit(u).query}" if urlsplit(u).query else "")
            for (u,) in con.execute("SELECT url FROM pages")
        ]
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


def test_pairs_that_collapse_onto_one_page_teach_no_key() -> None:
    """Near-duplicates at many ids of one path are one page (a soft 404, a stub) at many
    URLs: without ``id`` they all name ``/item``, so they count once however many."""
    params = IgnoredParams()
    for k in range(90, 100, 2):
        assert (
            params.observe(f"http://h.test/item?id={k}", f"http://h.test/item?id={k + 1}") == set()
        )
    assert params.without("http://h.test/item?id=5") == "http://h.test/item?id=5"
    # the other keys of the query are part of the page: two pages, the key is learnt
    assert params.observe("http://h.test/l?p=1&sort=a", "http://h.test/l?p=1&sort=b") == set()
    assert params.observe("http://h.test/l?p=2&sort=a", "http://h.test/l?sort=b&p=2") == {"sort"}


def test_two_distinct_pages_that_differ_in_one_key_make_it_meaningful() -> None:
    params = IgnoredParams()
    assert params.distinct("http://h.test/item?id=1") == set()
    assert params.distinct("http://h.test/item?id=2") == set()
    assert params.is_meaningful("h.test", "id") and not params.is_meaningful("o.test", "id")
    # near-duplicates on two paths would teach it; it names pages: never ignored
    assert params.observe("http://h.test/item?id=98", "http://h.test/item?id=99") == set()
    assert params.observe("http://h.test/shop?id=98", "http://h.test/shop?id=99") == set()
    assert params.without("http://h.test/item?id=5") == "http://h.test/item?id=5"
    # another path of the host, and other hosts, are told apart by path, not mixed
    assert params.distinct("http://h.test/other?ref=1") == set()
    assert params.distinct("http://h.test/item?ref=1") == set()  # differs in id and ref
    assert not params.is_meaningful("h.test", "ref")


def test_a_key_ignored_too_soon_is_ignored_no_more_once_two_pages_differ_in_it() -> None:
    params = IgnoredParams()
    params.observe("http://h.test/a?v=1", "http://h.test/a?v=2")
    assert params.observe("http://h.test/b?v=1", "http://h.test/b?v=2") == {"v"}
    assert params.without("http://h.test/c?v=3") == "http://h.test/c"
    assert params.distinct("http://h.test/c?v=3") == set()
    assert params.distinct("http://h.test/c?v=4") == {"v"}  # un-ignored
    assert params.without("http://h.test/c?v=5") == "http://h.test/c?v=5"
    assert params.observe("http://h.test/d?v=1", "http://h.test/d?v=2") == set()
    assert params.without("http://h.test/e?v=5") == "http://h.test/e?v=5"


def test_keys_two_distinct_pages_differ_in_are_never_all_ignored() -> None:
    """Two pages kept apart differ in ``id`` and ``ref``: which names them is unknown,
    so one of the two may be ignored, never both (the pages would be one URL)."""
    params = IgnoredParams()
    params.distinct("http://h.test/item?id=1&ref=a")
    assert params.distinct("http://h.test/item?id=2&ref=b") == set()
    assert not params.is_meaningful("h.test", "id")
    params.observe("http://h.test/x?id=1&ref=a", "http://h.test/x?id=2&ref=b")
    assert params.observe("http://h.test/y?ref=a", "http://h.test/y?ref=b") == {"ref"}
    assert params.observe("http://h.test/z?id=1&ref=a", "http://h.test/z?id=2&ref=b") == set()
    assert params.without("http://h.test/item?id=3&ref=c") == "http://h.test/item?id=3"
    # both ignored (learnt before the two pages were seen): both come back
    other = IgnoredParams()
    other.observe("http://o.test/x?id=1&ref=a", "http://o.test/x?id=2&ref=b")
    assert other.observe("http://o.test/y?id=1&ref=a", "http://o.test/y?id=2&ref=b") == {
        "id",
        "ref",
    }
    other.distinct("http://o.test/item?id=1&ref=a")
    assert other.distinct("http://o.test/item?id=2&ref=b") == {"id", "ref"}
    assert other.without("http://o.test/item?id=3&ref=c") == "http://o.test/item?id=3&ref=c"


def test_the_keys_of_a_seed_are_never_ignored_on_its_host() -> None:
    params = IgnoredParams()
    params.protect("http://h.test/index.php?title=Acid")
    params.observe("http://h.test/a?title=1", "http://h.test/a?title=2")
    assert params.observe("http://h.test/b?title=1", "http://h.test/b?title=2") == set()
    assert params.without("http://h.test/c?title=3") == "http://h.test/c?title=3"
    params.observe("http://o.test/a?title=1", "http://o.test/a?title=2")
    assert params.observe("http://o.test/b?title=1", "http://o.test/b?title=2") == {"title"}


def test_what_is_remembered_per_host_and_path_is_bounded() -> None:
    params = IgnoredParams(max_hosts=3, max_keys=4, max_paths=5)
    for n in range(50):
        params.distinct(f"http://h{n}.test/p{n}?id={n}")
        params.distinct(f"http://h.test/p{n}?a{n}=1")
        params.distinct(f"http://h.test/p{n}?a{n}=2")
        params.observe(f"http://h{n}.test/a?k{n}=1", f"http://h{n}.test/a?k{n}=2")
        params.observe(f"http://h.test/a?k{n}=1&x{n}=1", f"http://h.test/a?k{n}=2&x{n}=2")
    assert len(params._last) <= 5
    assert len(params._seen) <= 3 and len(params._meaningful) <= 3
    assert all(len(keys) <= 4 for keys in params._seen.values())
    assert all(len(keys) <= 4 for keys in params._meaningful.values())
    assert all(len(sets) <= 16 for sets in params._apart.values())


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


# --- a key that names pages is never learnt as one that names none ----------------------
@pytest.mark.integration
def test_a_key_that_names_the_pages_is_kept_although_its_soft_404s_are_near_duplicates(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """The site's articles are ``/item?id=N`` (each links to the next three), and the home
    page first links to 10 ids that are gone, each answered with 200 and the same long
    "no such item" page (near-duplicates by SimHash). Two such pairs taught that ``id``
    names no page, so every later link lost it: ``/item?id=1`` was fetched as ``/item``
    and the articles after the first were never reached. Now a key is learnt only when
    its near-duplicates collapse onto two different pages (they all collapse onto
    ``/item`` here), and two stored articles that differ in ``id`` alone mark it as one
    that names pages: every article is fetched under its own ``?id=`` and stored."""
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
    assert len(missing) >= 300
    # gone ids came first (two pairs of near-duplicates), and were near-duplicates
    assert site.log[:2] == ["/robots.txt", "/"], site.log
    assert {int(p[9:]) for p in site.log[2:5]} <= set(gone), site.log
    assert "focused/pages/near_duplicates" in result.stderr
    # every article fetched under its own id, once; no id ever left out of a link
    assert "/item" not in site.log, site.log
    ids = sorted(int(p[9:]) for p in site.log if p.startswith("/item?id="))
    assert [i for i in ids if i < 100] == list(range(articles)), (site.log, result.stderr[-6000:])
    assert "focused/links/params_stripped" not in result.stderr
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = {u for (u,) in con.execute("SELECT url FROM pages")}
    finally:
        con.close()
    assert {f"{site.url}/item?id={i}" for i in range(articles)} <= urls


@pytest.mark.integration
def test_short_pages_that_match_exactly_teach_no_key(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A short "no such item" page (too short for a SimHash) answered for the gone ids of
    two paths, ``/item?id=N`` and ``/shop?id=N``, met before the articles: those exact
    copies (soft 404s) are aliases, but they teach nothing about the keys their URLs
    differ in; only near-duplicates by the SimHash of real main content do. Otherwise
    ``id`` would be learnt from the two paths and the listing's links to the articles
    fetched as one ``/item``. (A breadth-first crawl: the listing, two levels down, is
    reached after the soft 404s one level down, which do not wait as waste.)"""
    articles, gone = 5, range(100, 105)

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/":
            links = "".join(
                f'<p><a href="/{where}?id={k}">chemistry acid salt reaction lesson {k}</a></p>'
                for k in gone
                for where in ("item", "shop")
            )
            links += '<p><a href="/more">more chemistry lessons</a></p>'
            return 200, {}, html("Chemistry lessons", article(99) + links)
        if parts.path == "/more":
            links = '<p><a href="/list">the list of chemistry lessons</a></p>'
            return 200, {}, html("More chemistry lessons", article(97) + links)
        if parts.path == "/list":
            links = "".join(
                f'<p><a href="/item?id={i}">chemistry acid salt reaction lesson {i}</a></p>'
                for i in range(articles)
            )
            return 200, {}, html("Chemistry lesson list", article(98) + links)
        i = int(parts.query[3:]) if parts.query.startswith("id=") else -1
        if parts.path == "/item" and 0 <= i < articles:
            return 200, {}, html(f"Chemistry lesson {i}", article(i))
        what = "item" if parts.path == "/item" else "product"  # each path its own
        return 200, {}, html(f"No such {what}", f"<p>Sorry, there is no such {what}.</p>")

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            out,
            f"{site.url}/",
            "CONCURRENT_REQUESTS=1",
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_WASTE_SHAPE_THRESHOLD=1",
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    # the soft 404s of both paths came before the listing, and were aliased
    assert site.log.index("/list") > max(site.log.index(f"/shop?id={k}") for k in gone)
    assert "focused/pages/aliased" in result.stderr
    assert "/item" not in site.log, site.log
    assert "focused/params/ignored" not in result.stderr
    assert {f"/item?id={i}" for i in range(articles)} <= set(stored_paths_and_queries(out))


@pytest.mark.integration
def test_two_articles_that_differ_in_a_key_keep_it_although_soft_404s_of_two_paths_agree(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Long "no such item" and "no such product" pages (near-duplicates by SimHash) are
    answered for the gone ids of ``/item?id=N`` and ``/shop?id=N``: their pairs collapse
    onto two pages, ``/item`` and ``/shop``, which would teach ``id``. But two articles
    ``/item?id=0`` and ``/item?id=1`` were stored before as pages of their own, so ``id``
    names pages of the host and is never ignored: the articles of the listing met
    afterwards are fetched under their ids. (Breadth first: the articles one level down,
    the soft 404s two, the listing three.)"""
    gone = range(100, 104)

    def missing(what: str) -> str:
        return (
            f"<p>Sorry, there is no {what} with this number in our chemistry catalogue. It"
            " may have been sold, withdrawn or merged with another entry of the catalogue;"
            " the numbers of withdrawn entries are not given again. Please go back to the"
            " home page of the catalogue, search it again, or write to the editors, who"
            f" answer every letter about a missing {what} within a week.</p>"
        )

    def links(urls: list[str]) -> str:
        return "".join(f'<p><a href="{u}">chemistry acid salt reaction {u}</a></p>' for u in urls)

    def answer(path: str) -> Answer:
        parts = urlsplit(path)
        pages = {
            "/": links(["/item?id=0", "/item?id=1", "/next"]),
            "/next": links([f"/{w}?id={k}" for k in gone for w in ("item", "shop")] + ["/more"]),
            "/more": links(["/list"]),
            "/list": links([f"/item?id={i}" for i in range(2, 6)]),
        }
        if parts.path in pages:
            return 200, {}, html(f"Chemistry {parts.path}", article(90 + len(path)) + pages[path])
        i = int(parts.query[3:]) if parts.query.startswith("id=") else -1
        if parts.path == "/item" and 0 <= i < 6:
            return 200, {}, html(f"Chemistry lesson {i}", article(i))
        what = "item" if parts.path == "/item" else "product"
        return 200, {}, html(f"No such {what}", missing(what))

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            out,
            f"{site.url}/",
            "CONCURRENT_REQUESTS=1",
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_WASTE_SHAPE_THRESHOLD=1",
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    log = site.log
    assert max(log.index("/item?id=0"), log.index("/item?id=1")) < log.index("/item?id=100")
    assert log.index("/list") > max(log.index(f"/shop?id={k}") for k in gone), log
    near = re.search(r"'focused/pages/near_duplicates': (\d+)", result.stderr)
    assert near is not None and int(near.group(1)) >= 4  # two pairs per path at least
    assert "/item" not in log, log
    assert "focused/params/ignored" not in result.stderr
    assert {f"/item?id={i}" for i in range(6)} <= set(stored_paths_and_queries(out))
