"""Pages a site names outside its ``<a>`` links: real crawls (``scrapy crawl focused``)
of small loopback sites on 127.0.0.2, a listener on 127.0.0.3 counting the connections
that must not be made."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.crawling import crawl_one_host, crawl_real_web
from tests.loopback import Answer, Listener, LoopbackServer

WORDS = "chemistry acid salt molecule reaction oxide catalyst crystal "


def html(title: str, head: str = "", body: str = "") -> bytes:
    text = f"{title} {WORDS}" * 40
    return (
        f"<html><head>{head}<title>{title}</title></head><body><p>{text}</p>{body}</body></html>"
    ).encode()


def stored_paths(out: Path) -> list[str]:
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        return [urlsplit(url).path for (url,) in con.execute("SELECT url FROM pages")]
    finally:
        con.close()


def _crawl_paged_listing(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    answer: Callable[[str], Answer],
    *,
    off: Listener,
    pages: int,
) -> tuple[subprocess.CompletedProcess[str], LoopbackServer]:
    """A breadth-first crawl of the listing ``answer`` serves on 127.0.0.2 (pages
    ``/list/1.html``..``pages``, each with its ``/article/N.html``), kept to that host:
    checked to store every listing page and article, to fetch each listing page once,
    and to make no connection to ``off`` (the host the last page's next names)."""
    try:
        result, site = crawl_one_host(
            project_root,
            venv_scrapy,
            out,
            answer,
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.2",
        )
        assert off.connections() == 0
    finally:
        off.close()
    want = ["/", *(f"/list/{n}.html" for n in range(1, pages + 1))]
    want += [f"/article/{n}.html" for n in range(1, pages + 1)]
    assert sorted(stored_paths(out)) == sorted(want)
    assert sorted(p for p in site.log if p.startswith("/list/")) == want[1 : pages + 1]
    return result, site


@pytest.mark.integration
def test_a_listing_paged_only_by_link_rel_next_is_crawled_to_its_end(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A chemistry listing whose pages 2..6 are named only by ``<link rel="next">`` in
    each page's ``<head>`` (no ``<a>`` to them), each page linking one article: the
    crawl stopped at page 1 and its article. Now the pages a ``rel=next`` (or ``prev``)
    names are followed as links: every page and every article is stored once. The
    ``next`` of the last page points off the crawl's domains (127.0.0.3): it is refused
    before any connection, as any link there is, and ``<link rel="alternate">`` language
    copies and stylesheets are not followed."""
    pages = 6
    off = Listener("127.0.0.3")
    far = f"http://127.0.0.3:{off.port}"

    def answer(path: str) -> Answer:
        if path == "/":
            return 200, {}, html("Chemistry", body='<a href="/list/1.html">chemistry list</a>')
        if path.startswith("/list/"):
            n = int(path.rsplit("/", 1)[1].split(".")[0])
            nxt = f"/list/{n + 1}.html" if n < pages else f"{far}/list/{n + 1}.html"
            head = (
                f'<link rel="stylesheet" href="/style.css"><link rel="Next" href="{nxt}">'
                f'<link rel="alternate" hreflang="de" href="/de/list/{n}.html">'
            )
            if n > 1:
                head += f'<link rel="prev" href="/list/{n - 1}.html">'
            body = f'<a href="/article/{n}.html">chemistry article {n}</a>'
            return 200, {}, html(f"Chemistry listing page {n}", head, body)
        if path.startswith("/article/"):
            return 200, {}, html(f"Chemistry article {path}")
        return 404, {}, b""

    result, site = _crawl_paged_listing(
        project_root, venv_scrapy, tmp_path / "out", answer, off=off, pages=pages
    )
    assert not [p for p in site.log if p.startswith("/de/") or p.endswith(".css")], site.log
    # each page's next, and its prev from page 2 on (the off-site next counted too)
    assert f"'focused/links/pager': {2 * pages - 1}" in result.stderr
    assert "'offsite/filtered': 1," in result.stderr  # the next of the last page


@pytest.mark.integration
def test_a_listing_paged_only_by_a_link_header_is_crawled_to_its_end(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A chemistry listing whose pages 2..6 are named only by an HTTP ``Link`` header
    (RFC 8288: ``Link: <2.html>; rel="prefetch next"``, as APIs and some sites page):
    the crawl stopped at page 1 and its article. Now a ``Link`` header's ``next`` and
    ``prev`` are followed as ``<link rel=next>`` is: several links in one header, a
    quoted ``rel`` of several words, a ``title`` holding a comma, a relative URL joined
    to the page's URL. The ``next`` of the last page points off the crawl's domains
    (127.0.0.3): refused before any connection; the stylesheet, ``preload`` and
    ``alternate`` links of the same header are not followed."""
    pages = 6
    off = Listener("127.0.0.3")
    far = f"http://127.0.0.3:{off.port}"

    def answer(path: str) -> Answer:
        if path == "/":
            return 200, {}, html("Chemistry", body='<a href="/list/1.html">chemistry list</a>')
        if path.startswith("/list/"):
            n = int(path.rsplit("/", 1)[1].split(".")[0])
            nxt = f"{n + 1}.html" if n < pages else f"{far}/list/{n + 1}.html"
            header = (
                f'</style.css>; rel=stylesheet, <{nxt}>; title="page {n + 1}, acids";'
                f' rel="prefetch Next", </de/list/{n}.html>; rel=alternate; hreflang=de,'
                " </font.woff2>; rel=preload; as=font"
            )
            if n > 1:
                header += f", <{n - 1}.html>; rel=prev"
            body = f'<a href="/article/{n}.html">chemistry article {n}</a>'
            return 200, {"Link": header}, html(f"Chemistry listing page {n}", body=body)
        if path.startswith("/article/"):
            return 200, {}, html(f"Chemistry article {path}")
        return 404, {}, b""

    result, site = _crawl_paged_listing(
        project_root, venv_scrapy, tmp_path / "out", answer, off=off, pages=pages
    )
    assert not {"/style.css", "/font.woff2"} & set(site.log), site.log
    assert not [p for p in site.log if p.startswith("/de/")], site.log
    # each page's next, and its prev from page 2 on (the off-site next counted too)
    assert f"'focused/links/pager': {2 * pages - 1}" in result.stderr
    assert "'offsite/filtered': 1," in result.stderr  # the next of the last page


@pytest.mark.integration
def test_the_pages_of_frames_and_iframes_are_followed(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A site whose home page is a ``<frameset>`` (a menu frame and a content frame)
    and whose articles show a chemistry table in an ``<iframe>``: the frames' pages were
    never fetched, as the link extractor read ``<a>`` and ``<area>`` alone, so the
    crawl stored the empty frameset and nothing else. Now a ``<frame src>`` or an
    ``<iframe src>`` is followed as a link (checked as one: an iframe of an ad host off
    the crawl's domains, 127.0.0.3, gets no connection)."""
    off = Listener("127.0.0.3")
    far = f"http://127.0.0.3:{off.port}"

    def answer(path: str) -> Answer:
        if path == "/":
            frames = '<frameset cols="20%,80%"><frame src="/menu.html" name="menu">'
            frames += '<frame src="/main.html" name="main"></frameset>'
            return 200, {}, f"<html><head><title>Chemistry</title></head>{frames}</html>".encode()
        if path == "/menu.html":
            links = "".join(f'<a href="/article/{n}.html">chemistry {n}</a> ' for n in (1, 2))
            return 200, {}, html("Chemistry menu", body=links)
        if path == "/main.html":
            return 200, {}, html("Chemistry welcome")
        if path.startswith("/article/"):
            n = path.rsplit("/", 1)[1].split(".")[0]
            table = f'<iframe src="/table/{n}.html" title="acid table"></iframe>'
            table += f'<iframe src="{far}/ad.html"></iframe><iframe src="about:blank"></iframe>'
            return 200, {}, html(f"Chemistry article {n}", body=table)
        if path.startswith("/table/"):
            return 200, {}, html(f"Chemistry table {path}")
        return 404, {}, b""

    out = tmp_path / "out"
    try:
        result, site = crawl_one_host(
            project_root,
            venv_scrapy,
            out,
            answer,
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.2",
        )
        assert off.connections() == 0
    finally:
        off.close()
    want = ["/", "/menu.html", "/main.html", "/article/1.html", "/article/2.html"]
    want += ["/table/1.html", "/table/2.html"]
    assert sorted(stored_paths(out)) == sorted(want)
    assert sorted(p for p in site.log if p != "/robots.txt") == sorted(want)
    # two frames, and two iframes of each article (the ad off the domains counted)
    assert "'focused/links/frames': 6," in result.stderr
    # the ad, from each article (once, when the scheduler had seen it already)
    assert re.search(r"'offsite/filtered': [12],", result.stderr)
    assert "'focused/links/ignored/about': 2," in result.stderr


@pytest.mark.integration
def test_an_iframe_in_noscript_is_not_followed_and_one_in_chrome_is_a_chrome_link(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Articles with a tag manager's ``<noscript><iframe src="/ns.html?id=GTM-X">`` and
    an ad ``<iframe>`` in their ``<aside>`` (a chrome block) beside a content iframe:
    both were followed as content links (the ``ns.html`` fetched, the ad scored as
    content). Now a frame inside ``<noscript>`` (no content: shown only when scripts are
    off) is not followed, and a frame in a chrome block is a chrome link, as the block's
    ``<a>`` links are (fetched at the bottom of the frontier)."""

    def answer(path: str) -> Answer:
        if path == "/":
            links = "".join(f'<a href="/article/{n}.html">chemistry {n}</a> ' for n in (1, 2))
            return 200, {}, html("Chemistry", body=links)
        if path.startswith("/article/"):
            n = path.rsplit("/", 1)[1].split(".")[0]
            body = '<noscript><iframe src="/ns.html?id=GTM-X"></iframe></noscript>'
            body += f'<iframe src="/table/{n}.html" title="acid table"></iframe>'
            body += '<aside><a href="/about.html">about</a><iframe src="/ad.html"></iframe></aside>'
            return 200, {}, html(f"Chemistry article {n}", body=body)
        if path.startswith("/table/") or path in ("/about.html", "/ad.html"):
            return 200, {}, html(f"Chemistry page {path}")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "FOCUSED_STRATEGY=bfs")
    assert not [p for p in site.log if p.startswith("/ns.html")]
    fetched = sorted(p for p in site.log if p != "/robots.txt")
    want = ["/", "/about.html", "/ad.html", "/article/1.html", "/article/2.html"]
    assert fetched == sorted([*want, "/table/1.html", "/table/2.html"])
    # the aside's link and its iframe (counted once each), and no more
    assert re.search(r"'focused/links/chrome': 2\b", result.stderr)
    assert re.search(r"'focused/links/frames': 4\b", result.stderr)  # a table, the ad


@pytest.mark.integration
def test_a_partial_content_answer_to_a_plain_get_is_skipped_not_stored(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A server that answers a plain GET (no ``Range`` asked) with ``206 Partial
    Content`` and the first 300 bytes of the page: the piece was stored as the page (its
    title, a cut text, none of its links). Now it is a bad page: counted in
    ``focused/skipped/partial``, not stored, fetched once, and the crawl goes on."""
    whole = html("Chemistry of salts", body='<a href="/after.html">chemistry more</a>')

    def answer(path: str) -> Answer:
        if path == "/":
            links = '<a href="/part.html">chemistry part</a> <a href="/other.html">acid</a>'
            return 200, {}, html("Chemistry", body=links)
        if path == "/part.html":
            return 206, {"Content-Range": f"bytes 0-299/{len(whole)}"}, whole[:300]
        if path in ("/other.html", "/after.html"):
            return 200, {}, html(f"Chemistry page {path}")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "FOCUSED_STRATEGY=bfs")
    assert sorted(stored_paths(out)) == ["/", "/other.html"]
    assert site.log.count("/part.html") == 1
    assert "'focused/skipped/partial': 1," in result.stderr
    assert "'focused/queue/in_flight': 0," in result.stderr


@pytest.mark.integration
def test_a_206_of_the_whole_page_is_the_page_and_a_piece_is_fetched_again_on_resume(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A 206 to a plain GET whose ``Content-Range`` covers the whole page (``bytes
    0-(N-1)/N``, N bytes of body: some CDNs answer so) was skipped as a piece and
    journaled done: the page was never stored, its links never followed, and a resume
    never fetched it. Now it is the page. A real piece (``bytes 0-299/N``) is an error
    of the crawl (``focused/queue/error``), not done: a resume with the same ``JOBDIR``
    fetches it again, and does not fetch the whole one again."""
    whole = html("Chemistry of salts", body='<a href="/after.html">chemistry more</a>')
    n = len(whole)

    def answer(path: str) -> Answer:
        if path == "/":
            links = '<a href="/whole.html">chemistry whole</a> <a href="/part.html">acid</a>'
            return 200, {}, html("Chemistry", body=links)
        if path == "/whole.html":
            return 206, {"Content-Range": f"bytes 0-{n - 1}/{n}"}, whole
        if path == "/part.html":
            return 206, {"Content-Range": f"bytes 0-299/{n}"}, whole[:300]
        if path == "/after.html":
            return 200, {}, html("Chemistry page after")
        return 404, {}, b""

    out, job = tmp_path / "out", tmp_path / "job"
    site = LoopbackServer("127.0.0.2", answer)
    try:
        runs = [
            crawl_real_web(
                project_root,
                venv_scrapy,
                out,
                f"{site.url}/",
                "FOCUSED_STRATEGY=bfs",
                f"JOBDIR={job}",
            )
            for _ in range(2)
        ]
    finally:
        site.close()
    for result in runs:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert "'focused/skipped/partial': 1," in result.stderr
        assert "'focused/queue/error': 1," in result.stderr
    assert sorted(stored_paths(out)) == ["/", "/after.html", "/whole.html"]
    assert site.log.count("/whole.html") == 1 and site.log.count("/after.html") == 1
    assert site.log.count("/part.html") == 2  # once per run


def test_a_whole_206_longer_than_the_parse_cap_is_stored(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A whole-page 206 longer than ``FOCUSED_MAX_PARSE_BYTES`` (1 MiB by default; 4,000
    bytes here) was told a piece by the part of it that is parsed, skipped and journaled
    done: never stored, never fetched again. Whether it is the page is told on the
    response as downloaded."""
    whole = html("Chemistry of salts", body="<p>acid salt chemistry</p>" * 200)
    n = len(whole)
    assert n > 4000

    def answer(path: str) -> Answer:
        if path == "/":
            return 200, {}, html("Chemistry", body='<a href="/whole.html">chemistry</a>')
        if path == "/whole.html":
            return 206, {"Content-Range": f"bytes 0-{n - 1}/{n}"}, whole
        return 404, {}, b""

    out = tmp_path / "out"
    result, _ = crawl_one_host(
        project_root, venv_scrapy, out, answer, "FOCUSED_MAX_PARSE_BYTES=4000"
    )
    assert "focused/skipped/partial" not in result.stderr
    assert sorted(stored_paths(out)) == ["/", "/whole.html"], result.stderr[-6000:]


@pytest.mark.integration
def test_a_compressed_206_of_the_whole_page_is_the_page(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A 206 to a plain GET of the whole page sent gzipped: ``Content-Encoding: gzip``
    and ``Content-Range: bytes 0-(G-1)/G``, G the length of the gzip body (the range
    counts the bytes sent). The check compared G with the decoded body's length, so the
    page was skipped as a piece, neither stored nor its links followed. Now the body's
    length as sent is compared: the page is stored and its link followed; a compressed
    answer whose range says fewer bytes than were sent is still a piece."""
    import gzip

    whole = gzip.compress(html("Chemistry of salts", body='<a href="/after.html">acid</a>'))
    piece = gzip.compress(html("Chemistry of oxides"))
    g, p = len(whole), len(piece)

    def answer(path: str) -> Answer:
        if path == "/":
            links = '<a href="/whole.html">chemistry whole</a> <a href="/part.html">acid</a>'
            return 200, {}, html("Chemistry", body=links)
        if path == "/whole.html":
            sent = {"Content-Encoding": "gzip", "Content-Range": f"bytes 0-{g - 1}/{g}"}
            return 206, sent, whole
        if path == "/part.html":  # says the whole is longer than what was sent
            sent = {"Content-Encoding": "gzip", "Content-Range": f"bytes 0-{p - 1}/{p + 500}"}
            return 206, sent, piece
        if path == "/after.html":
            return 200, {}, html("Chemistry page after")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "FOCUSED_STRATEGY=bfs")
    assert sorted(stored_paths(out)) == ["/", "/after.html", "/whole.html"]
    assert site.log.count("/whole.html") == 1
    assert "'focused/skipped/partial': 1," in result.stderr


@pytest.mark.integration
def test_a_refresh_header_is_followed_as_a_meta_refresh_is(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Pages that move with a ``Refresh: 0; url=...`` HTTP header (browsers follow it
    as they follow ``<meta http-equiv="refresh">``) over a stub body: Scrapy reads the
    meta tag only, so the stub was stored and the page it names never fetched. Now the
    header is followed by the meta refresh's rules: the new page is stored, the stub is
    not; a header to a host off ``FOCUSED_ALLOWED_DOMAINS`` (127.0.0.3) gets no
    connection, and one of 300 s (over ``METAREFRESH_MAXDELAY``, 100) or to the page
    itself (a page that reloads) leaves its page as it is."""
    off = Listener("127.0.0.3")
    far = f"http://127.0.0.3:{off.port}"
    stub = b"<html><head><title>Moved</title></head><body>moved</body></html>"

    def answer(path: str) -> Answer:
        if path == "/":
            links = " ".join(
                f'<a href="/{name}.html">chemistry {name}</a>'
                for name in ("moved", "away", "slow", "self")
            )
            return 200, {}, html("Chemistry", body=links)
        refreshes = {
            "/moved.html": ("0; url=/new.html", stub),
            "/away.html": (f"0;URL='{far}/x.html'", stub),
            "/slow.html": ("300; url=/later.html", html("Chemistry slow")),
            "/self.html": ("5; url=/self.html", html("Chemistry live")),
        }
        if path in refreshes:
            refresh, body = refreshes[path]
            return 200, {"Refresh": refresh}, body
        if path in ("/new.html", "/later.html"):
            return 200, {}, html(f"Chemistry page {path}")
        return 404, {}, b""

    out = tmp_path / "out"
    try:
        result, site = crawl_one_host(
            project_root,
            venv_scrapy,
            out,
            answer,
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.2",
        )
        assert off.connections() == 0
    finally:
        off.close()
    assert sorted(stored_paths(out)) == ["/", "/new.html", "/self.html", "/slow.html"]
    assert site.log.count("/new.html") == 1 and "/later.html" not in site.log
    assert "'focused/redirects/refresh_header': 2," in result.stderr
    assert "'offsite/filtered': 1," in result.stderr
    assert "'focused/queue/in_flight': 0," in result.stderr


@pytest.mark.integration
def test_a_refresh_header_to_a_non_ascii_url_is_fetched_as_written(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A ``Refresh: 0; url=/café.html`` header sent as raw UTF-8 (as a ``Location`` is
    by many servers): the header was read as latin-1 and the request encoded that again
    as UTF-8, so the crawl fetched ``/caf%C3%83%C2%A9.html`` (a 404) and lost the page.
    Now its URL is read as Scrapy reads a ``Location``: ``/caf%C3%A9.html`` is fetched
    and stored."""

    def raw(value: str) -> str:  # sent as these UTF-8 bytes (the server writes latin-1)
        return value.encode().decode("latin-1")

    def answer(path: str) -> Answer:
        if path == "/":
            return 200, {}, html("Chemistry", body='<a href="/moved.html">chemistry moved</a>')
        if path == "/moved.html":
            stub = b"<html><head><title>Moved</title></head><body>moved</body></html>"
            return 200, {"Refresh": raw("0; url=/café.html")}, stub
        if path == "/caf%C3%A9.html":
            return 200, {}, html("Chemistry café")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "FOCUSED_STRATEGY=bfs")
    assert sorted(stored_paths(out)) == ["/", "/caf%C3%A9.html"]
    assert [p for p in site.log if p != "/robots.txt"] == ["/", "/moved.html", "/caf%C3%A9.html"]
    assert "'focused/redirects/refresh_header': 1," in result.stderr


@pytest.mark.integration
def test_a_refresh_to_the_page_itself_in_another_spelling_keeps_the_page(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Pages whose ``<meta http-equiv="refresh">`` (or ``Refresh`` header) names the
    page itself within ``METAREFRESH_MAXDELAY``: as written (a news page reloading every
    30 s), with a fragment, with ``./``, with an escaped letter, or back to the URL that
    refreshed to it with ``?r=1`` (a cache-busting query). The refresh was followed, the
    scheduler dropped the request as a URL it had seen, and the page was lost: neither
    stored nor its links followed. Now such a refresh is no move: each page is stored
    once, under the URL it was fetched at, and its link is followed."""
    stub = "<a href='/after{0}'>chemistry after</a>"
    metas = {
        "/exact.html": "30; url=/exact.html",
        "/frag.html": "0; url=/frag.html#top",
        "/dots.html": "0; url=./sub/../dots.html",
        "/escaped.html": "0; url=/%65scaped.html",
        "/bust.html": "0; url=/bust.html?r=1",
    }
    headers = {"/header.html": "0; url=/header.html?r=1"}

    def answer(path: str) -> Answer:
        if path == "/":
            names = [*metas, *headers]
            links = " ".join(f'<a href="{n}">chemistry {n}</a>' for n in names)
            return 200, {}, html("Chemistry", body=links)
        page, _, query = path.partition("?")
        if page in metas or page in headers:
            refresh = metas.get(page) or headers[page]
            if query:  # the cache-busted copy refreshes back to the plain URL
                refresh = f"0; url={page}"
            head = f'<meta http-equiv="refresh" content="{refresh}">' if page in metas else ""
            sent = {"Refresh": refresh} if page in headers else {}
            return 200, sent, html(f"Chemistry {page}", head, stub.format(page))
        if path.startswith("/after/"):
            return 200, {}, html(f"Chemistry {path}")
        return 404, {}, b""

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "FOCUSED_STRATEGY=bfs")
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [urlsplit(u) for (u,) in con.execute("SELECT url FROM pages")]
    finally:
        con.close()
    stored = sorted(u.path + (f"?{u.query}" if u.query else "") for u in urls)
    pages = ["/exact.html", "/frag.html", "/dots.html", "/escaped.html"]
    pages += ["/bust.html?r=1", "/header.html?r=1"]
    after = [f"/after{p}" for p in (*metas, *headers)]
    assert stored == sorted(["/", *pages, *after])
    for page in [*metas, *headers]:  # fetched once (and its cache-busted copy once)
        assert site.log.count(page) == 1, site.log
    assert "'focused/redirects/ignored/self': 6," in result.stderr
    assert "'focused/queue/in_flight': 0," in result.stderr


@pytest.mark.integration
def test_a_refresh_to_the_page_itself_with_its_default_port_written_or_not_keeps_the_page(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A site on port 80 whose seed is given as ``http://127.0.0.2:80/a.html`` and whose
    page reloads itself every 30 s with ``Refresh: 30; url=http://127.0.0.2/a.html``
    (the same page: the default port written or not). The seen-URL form keeps the port,
    so the refresh was taken for a move and the page fetched once more. Now it is no
    move: the page is fetched once and stored, its link followed; and a refresh back
    the other way (``/b.html`` to ``:80/b.html``) too."""
    try:
        site = LoopbackServer("127.0.0.2", lambda path: answer(path), port=80)
    except OSError as exc:  # (port 80 taken, or no right to bind it)
        pytest.skip(f"port 80 on 127.0.0.2: {exc}")

    def answer(path: str) -> Answer:
        if path == "/a.html":
            refresh = {"Refresh": "30; url=http://127.0.0.2/a.html"}
            return 200, refresh, html("Chemistry a", body='<a href="/b.html">chemistry b</a>')
        if path == "/b.html":
            return 200, {"Refresh": "0; url=http://127.0.0.2:80/b.html"}, html("Chemistry b")
        return 404, {}, b""

    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root, venv_scrapy, out, "http://127.0.0.2:80/a.html", "FOCUSED_STRATEGY=bfs"
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert [p for p in site.log if p != "/robots.txt"] == ["/a.html", "/b.html"]
    assert sorted(stored_paths(out)) == ["/a.html", "/b.html"]
    assert "'focused/redirects/ignored/self': 2," in result.stderr


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("0; url=/x.html", (0, "/x.html")),
        ("5;URL='http://h.test/b'", (5, "http://h.test/b")),
        ("3, /next", (3, "/next")),
        ('0;url="a b"', (0, "a b")),
        ("1.5; url=x", (1, "x")),
        ("0", (0, "")),
        ("soon; url=/x", None),
        ("", None),
        # as HTML's "shared declarative refresh steps" read them
        ("0; url='/x", (0, "/x")),  # an unclosed quote runs to the end
        ("0 url=/x", (0, "/x")),  # whitespace alone after the seconds
        (".5; url=/x", (0, "/x")),  # a fraction alone is 0 seconds
        ("0;URL = /x", (0, "/x")),
        ("0 , url = '/a'b", (0, "/a")),  # what follows the closing quote is dropped
        ("0; url", (0, "url")),  # no "=": the rest is the URL
        ("0; urx", (0, "urx")),
        ("0;;url=/x", (0, ";url=/x")),  # one separator only
        ("5x; url=/y", None),  # junk after the seconds: no refresh
        ("-1; url=/y", None),
        ("9" * 5000 + "; url=/y", (10**18, "/y")),  # no ValueError
    ],
)
def test_a_refresh_header_is_read_as_browsers_read_it(
    value: str, want: tuple[int, str] | None
) -> None:
    """Each value as browsers read a ``Refresh`` header; a value they do not parse is
    no refresh (no junk URL followed)."""
    from focused.web.sanitize import refresh_header

    assert refresh_header(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("</a>; rel=next", [("/a", {"rel": "next"})]),
        (
            '<b.html>; title="2, acids"; rel="prefetch Next", </c>; REL=prev; rel=next',
            [("b.html", {"title": "2, acids", "rel": "prefetch Next"}), ("/c", {"rel": "prev"})],
        ),
        ("<http://h.test/a,b>;rel=next", [("http://h.test/a,b", {"rel": "next"})]),
        ('<x>; rel="a\\"b"', [("x", {"rel": 'a"b'})]),
        ("junk <x>; rel=next, <y>; rel=prev", [("y", {"rel": "prev"})]),
        ("<x", []),
        ("", []),
    ],
)
def test_a_link_header_is_read_as_rfc_8288_writes_it(
    value: str, want: list[tuple[str, dict[str, str]]]
) -> None:
    from focused.web.sanitize import link_header

    assert link_header(value) == want
    if want:  # at most the limit's number of links
        assert link_header(value + ", </more>; rel=next", 1) == want[:1]


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        ({"restrict_xpaths": '//div[@id="main"]'}, ["/article"]),
        ({"restrict_css": "#main"}, ["/article"]),
        ({"tags": ("a",)}, ["/nav", "/article"]),
        ({"attrs": ("data-x",)}, []),
    ],
)
def test_an_extractor_built_with_restrictions_reads_no_pager_or_frame_links(
    kwargs: dict, want: list[str]
) -> None:
    """An extractor built with ``restrict_xpaths``, ``restrict_css``, ``tags`` or
    ``attrs`` (a spider of the user's own) also gave the page's ``<link rel="next">``
    and its frames, outside the part, tags or attributes it was told to read. Now it
    gives the links Scrapy's gives with those arguments, and no pager or frame link is
    read or counted; built without them (the focused spider's) it reads both."""
    from collections import Counter

    from scrapy.http import HtmlResponse

    from focused.robustness import FocusedLinkExtractor

    base = "http://127.0.0.2:8000"
    page = HtmlResponse(
        f"{base}/p.html",
        body=b'<html><head><link rel="next" href="/list/2"></head><body>'
        b'<div id="nav"><a href="/nav">nav</a><iframe src="/ad-frame"></iframe></div>'
        b'<div id="main"><a href="/article">art</a></div></body></html>',
        encoding="utf-8",
    )
    counted: Counter[str] = Counter()
    links = FocusedLinkExtractor(count=lambda k, n=1: counted.update({k: n}), **kwargs)
    assert [urlsplit(link.url).path for link in links.extract_links(page)] == want
    assert counted == {}
    everything = [urlsplit(link.url).path for link in FocusedLinkExtractor().extract_links(page)]
    assert everything == ["/nav", "/article", "/list/2", "/ad-frame"]


@pytest.mark.parametrize(
    ("status", "asked", "content_range", "length", "partial"),
    [
        (206, False, b"bytes 0-9/10", 10, False),
        (206, False, b"BYTES 0 - 9 / 10", 10, False),
        (206, False, b"bytes 0-9/10", 9, True),
        (206, False, b"bytes 0-9/20", 10, True),
        (206, False, b"bytes 5-9/10", 5, True),
        (206, False, b"bytes */10", 10, True),
        (206, False, None, 10, True),
        (206, True, b"bytes 0-9/20", 10, False),
        (200, False, None, 10, False),
    ],
)
def test_which_206_is_a_piece_of_its_page(
    status: int, asked: bool, content_range: bytes | None, length: int, partial: bool
) -> None:
    from focused.web.sanitize import partial_content

    assert partial_content(status, asked, content_range, length) is partial


def test_link_header_pages_share_the_cap_and_keep_to_their_anchor() -> None:
    """A ``Link`` header's ``next`` links had a cap of their own on top of the page's
    ``FOCUSED_MAX_LINKS_PER_PAGE`` (1,500 ``<a>`` and 1,500 header links under a cap
    of 1,000 gave 2,000 links); now they get what the page's other links leave, the
    rest counted capped. A link whose ``anchor`` names another resource (RFC 8288: the
    next page *of /other/1*) is not this page's next page."""
    from collections import Counter

    from scrapy.http import HtmlResponse

    from focused.robustness import FocusedLinkExtractor

    base = "http://127.0.0.2:8000"
    anchors = "".join(f'<a href="/a{i}">a</a>' for i in range(3))
    header = ", ".join(f"</n{i}>; rel=next" for i in range(4))
    header += ', </other/2>; rel=next; anchor="/other/1", </mine>; rel=next; anchor="#top"'
    page = HtmlResponse(
        f"{base}/p.html",
        body=f"<html><body>{anchors}</body></html>".encode(),
        headers={"Link": header},
        encoding="utf-8",
    )
    counted: Counter[str] = Counter()
    capped = FocusedLinkExtractor(count=lambda k, n=1: counted.update({k: n}), max_links=5)
    paths = [urlsplit(link.url).path for link in capped.extract_links(page)]
    assert paths == ["/a0", "/a1", "/a2", "/n0", "/n1"]
    assert counted["focused/links/capped"] == 2  # /n2, /n3 (the header read to the cap)
    whole = [urlsplit(link.url).path for link in FocusedLinkExtractor().extract_links(page)]
    assert whole == ["/a0", "/a1", "/a2", "/n0", "/n1", "/n2", "/n3", "/mine"]


def test_nested_templates_walk_each_element_a_bounded_number_of_times() -> None:
    """Each ``<template>`` had its whole content walked for the links inside it, the
    nested ones again: 2,000 nested templates around 48,000 links took 4.3 s to extract
    (quadratic). Now only the outermost template's content is walked. Counted by an
    element class whose ``iter`` tallies every element it gives: the walk stays within
    a few times the page's elements, however deep the nesting, and its links are the
    same (those after the templates; each inside one counted)."""
    from collections import Counter

    from lxml import etree
    from lxml import html as lxml_html

    from focused.robustness import _LINK_TAGS, _shown

    given = Counter[str]()

    class Counting(lxml_html.HtmlElement):
        def iter(self, *tags: object) -> object:  # type: ignore[override]
            for el in super().iter(*tags):
                given["elements"] += 1
                yield el

    parser = lxml_html.HTMLParser(huge_tree=True)  # as Scrapy parses: nesting past 256
    parser.set_element_class_lookup(etree.ElementDefaultClassLookup(element=Counting))
    depth, links = 300, 300
    body = (
        "<html><body>"
        + "<template><p>" * depth
        + '<a href="/inside">x</a>' * links
        + "</p></template>" * depth
        + '<a href="/shown">y</a></body></html>'
    )
    root = lxml_html.document_fromstring(body, parser=parser)
    inert: list[object] = []
    shown = [el.get("href") for el in _shown(root, _LINK_TAGS, inert.append)]
    assert shown == ["/shown"]
    assert len(inert) == links
    elements = sum(1 for _ in etree.ElementBase.iter(root))
    assert elements > 2 * depth + links  # the page is what it is meant to be
    assert given["elements"] <= 3 * elements, given  # was ~depth * links (> 90,000)


def test_the_links_of_a_declarative_shadow_root_are_followed() -> None:
    """A ``<template shadowrootmode="open">`` (or ``closed``, or the older ``shadowroot``
    attribute) is a declarative shadow root: browsers render its content as the page's.
    Its links and frames were skipped as an inert template's; now they are followed, and
    a plain template (inside a shadow root or around one) still is not."""
    from collections import Counter

    from scrapy.http import HtmlResponse

    from focused.robustness import FocusedLinkExtractor

    body = (
        '<html><body><div><template shadowrootmode="open"><a href="/open">a</a>'
        '<iframe src="/open-frame"></iframe>'
        '<template><a href="/inert-in-shadow">a</a></template></template></div>'
        '<div><template shadowrootmode="Closed"><a href="/closed">a</a></template></div>'
        '<div><template shadowroot="open"><a href="/legacy">a</a></template></div>'
        '<template><div><template shadowrootmode="open"><a href="/shadow-in-inert">a</a>'
        "</template></div></template>"
        '<template shadowrootmode="bogus"><a href="/bogus">a</a></template>'
        '<a href="/plain">a</a></body></html>'
    )
    page = HtmlResponse("http://127.0.0.2:8000/p.html", body=body.encode(), encoding="utf-8")
    counted: Counter[str] = Counter()
    links = FocusedLinkExtractor(count=lambda k, n=1: counted.update({k: n}))
    got = [urlsplit(link.url).path for link in links.extract_links(page)]
    assert got == ["/open", "/closed", "/legacy", "/plain", "/open-frame"]
    assert counted["focused/links/ignored/template"] == 3  # in-shadow, in-inert, bogus


@pytest.mark.parametrize(
    ("url", "anchor", "own"),
    [
        ("http://127.0.0.2/p/1", "HTTP://127.0.0.2/p/1", True),
        ("http://127.0.0.2/p/1", "http://127.0.0.2:80/p/1", True),
        ("http://127.0.0.2/p/1", "/p/1#top", True),
        ("http://127.0.0.2/caf%C3%A9", "/café", True),
        ("http://127.0.0.2", "http://127.0.0.2/", True),
        ("http://127.0.0.2/p/1", "http://127.0.0.2:8080/p/1", False),
        ("http://127.0.0.2/p/1", "/p/10", False),
        ("http://127.0.0.2/p/1", "http://[x", False),
    ],
)
def test_a_link_header_anchor_names_its_page_in_any_spelling(
    url: str, anchor: str, own: bool
) -> None:
    """A ``Link: </p/2>; rel=next; anchor="..."`` whose anchor is the page itself spelt
    another way (the host in capitals, the default port, ``/café`` for ``/caf%C3%A9``,
    ``http://h/`` for ``http://h``) was taken for another page's, and its next page was
    not followed. The anchor is now compared in the seen-URL form without the default
    port; another port or path is still another page."""
    from scrapy.http import HtmlResponse

    from focused.robustness import FocusedLinkExtractor

    page = HtmlResponse(
        url,
        body=b"<html><body><p>acid</p></body></html>",
        headers={"Link": f'</p/2>; rel=next; anchor="{anchor}"'.encode()},
        encoding="utf-8",
    )
    got = [link.url for link in FocusedLinkExtractor().extract_links(page)]
    assert got == (["http://127.0.0.2/p/2"] if own else [])
