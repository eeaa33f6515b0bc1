"""Main content, chrome links and near-duplicates (focused.web.template,
focused.web.neardup), unit by unit and in a real crawl of a tiny loopback site."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from scrapy.http import HtmlResponse

from focused.ranking.relevance import TopicVector
from focused.spiders.focused import BODY_TEXT, texts
from focused.web.neardup import NearDuplicates, distance, simhash
from focused.web.template import HostTemplates, chrome_urls, split_page
from tests.crawling import run_crawl
from tests.loopback import QuickHTTPServer, serve_in_thread

ARTICLE = (
    "An acid is a molecule or ion capable of donating a proton. Acids react with bases"
    " to form a salt and water; strong acids such as hydrochloric acid dissociate fully"
    " in water, weak acids only in part. The pH of an acidic solution is below seven."
)
NAV_WORDS = "Main page Random article Donate Log in Talk Edit History Privacy policy"


def html(title: str, article: str, links: list[tuple[str, str]], chrome: str = "") -> bytes:
    items = "".join(f'<li><a href="{h}">{a}</a></li>' for h, a in links)
    return (
        f"<html><head><title>{title}</title></head><body>{chrome}"
        f"<div id='content'><h1>{title}</h1><p>{article}</p><ul>{items}</ul></div>"
        "</body></html>"
    ).encode()


def nav(markup: bool = True) -> str:
    tag = "nav" if markup else "div class='top'"
    end = "nav" if markup else "div"
    return (
        f"<{tag}><ul><li><a href='/Main'>Main page</a></li><li><a href='/Random'>Random"
        " article</a></li><li><a href='/Donate'>Donate</a></li><li><a href='/Login'>Log"
        f" in</a></li></ul></{end}><div class='footer'><a href='/Privacy'>Privacy"
        " policy</a> Text is available under a free licence.</div>"
    )


def parsed(body: bytes, url: str = "http://wiki.test/a") -> HtmlResponse:
    return HtmlResponse(url, body=body, encoding="utf-8")


def test_clean_page_text_is_the_body_text() -> None:
    r = parsed(
        b"<html><body><h1>T</h1><!-- c -->x<p>one <b>two</b> three</p>tail"
        b"<script>var s</script>after<div><ul><li>four</li></ul></div></body></html>"
    )
    page = split_page(r.selector.root)
    HostTemplates().classify("wiki.test", page)
    assert not page.has_chrome
    assert page.content_text() == " ".join(texts(r, BODY_TEXT))


def test_two_page_host_nav_links_are_chrome_article_links_are_not() -> None:
    templates = HostTemplates()
    found = []
    for name, link in (("a", "/Base"), ("b", "/Salt")):
        r = parsed(html(name, ARTICLE, [(link, "article link")], nav()), f"http://wiki.test/{name}")
        page = templates.classify("wiki.test", split_page(r.selector.root))
        templates.learn("wiki.test", page)
        found.append(chrome_urls(page, lambda h: "http://wiki.test" + h))
        assert "Donate" not in page.content_text() and "Acid" not in page.chrome_text()
    for chrome, article in zip(found, ("/Base", "/Salt"), strict=True):
        assert "http://wiki.test/Donate" in chrome and "http://wiki.test/Privacy" in chrome
        assert "http://wiki.test" + article not in chrome


def test_unmarked_template_is_learnt_after_min_pages() -> None:
    templates = HostTemplates(min_pages=2)
    chrome_seen = []
    for i in range(4):
        r = parsed(html(f"p{i}", f"{ARTICLE} {i}", [(f"/A{i}", "x")], nav(markup=False)))
        page = templates.classify("wiki.test", split_page(r.selector.root))
        templates.learn("wiki.test", page)
        chrome_seen.append("Random article" in page.chrome_text())
    assert chrome_seen == [False, False, True, True]
    # another host has its own template
    r = parsed(html("q", ARTICLE, [], nav(markup=False)))
    page = templates.classify("other.test", split_page(r.selector.root))
    assert "Random article" in page.content_text()  # its footer is named chrome, though
    assert "Privacy policy" in page.chrome_text()


def _learn_host(templates: HostTemplates, host: str, pages: int) -> None:
    for i in range(pages):
        r = parsed(html(f"{host}{i}", f"{ARTICLE} {host} {i}", [], nav(markup=False)))
        templates.learn(host, templates.classify(host, split_page(r.selector.root)))


@pytest.mark.parametrize("shared_hosts", [2, 0])
def test_template_of_other_hosts_is_chrome_on_a_new_hosts_first_page(shared_hosts: int) -> None:
    templates = HostTemplates(min_pages=2, shared_hosts=shared_hosts)
    _learn_host(templates, "a.test", 3)
    first = split_page(
        parsed(html("n", ARTICLE, [("/Acid", "Acid")], nav(markup=False))).selector.root
    )
    # one other host is not enough
    assert "Random article" in templates.classify("new.test", first).content_text()
    _learn_host(templates, "b.test", 3)
    page = templates.classify(
        "new.test",
        split_page(
            parsed(html("n", ARTICLE, [("/Acid", "Acid")], nav(markup=False))).selector.root
        ),
    )
    chrome = chrome_urls(page, lambda h: "http://new.test" + h)
    if shared_hosts:
        assert "Random article" in page.chrome_text() and "Random" not in page.content_text()
        assert "http://new.test/Random" in chrome and "http://new.test/Login" in chrome
    else:
        assert "Random article" in page.content_text()
        assert "http://new.test/Random" not in chrome
    # the article's own text and link stay content either way
    assert "hydrochloric acid" in page.content_text()
    assert "http://new.test/Acid" not in chrome


def test_an_article_copied_to_many_hosts_stays_content() -> None:
    # a copy is seen once on each host, never on earlier pages of the same host, so it
    # becomes template on none of them
    templates = HostTemplates(shared_hosts=2)
    copy = html("Acid", ARTICLE, [("/Base", "Base"), ("/Salt", "Salt")])
    for host in ("a.test", "b.test", "c.test", "d.test"):
        templates.learn(host, templates.classify(host, split_page(parsed(copy).selector.root)))
    page = templates.classify("e.test", split_page(parsed(copy).selector.root))
    assert not page.has_chrome
    assert "hydrochloric acid" in page.content_text()


def test_repeated_short_heading_stays_content() -> None:
    templates = HostTemplates(min_pages=1)
    for i in range(3):
        body = f"<html><body><p>See also</p><p>{ARTICLE} {i}</p></body></html>".encode()
        page = templates.classify("h", split_page(parsed(body).selector.root))
        templates.learn("h", page)
        assert not page.has_chrome


def test_relevance_of_a_heavily_dressed_page_is_that_of_its_article() -> None:
    vector = TopicVector({"acid": 1.0, "base": 0.8, "salt": 0.6, "water": 0.4})
    heavy = nav() * 20 + "<aside class='sidebar'>" + NAV_WORDS * 30 + "</aside>"
    templates = HostTemplates()
    page = templates.classify(
        "h", split_page(parsed(html("Acid", ARTICLE, [], heavy)).selector.root)
    )
    clean = " ".join(texts(parsed(html("Acid", ARTICLE, [])), BODY_TEXT))
    dressed = " ".join(texts(parsed(html("Acid", ARTICLE, [], heavy)), BODY_TEXT))
    assert vector.cosine(page.content_text()) == pytest.approx(vector.cosine(clean), abs=1e-9)
    assert vector.cosine(dressed) < 0.7 * vector.cosine(clean)  # the chrome did matter


def test_deep_nesting_is_cheap() -> None:
    for depth in (200, 5000):  # libxml2 keeps 255 levels: the deeper link is lost
        body = b"<html><body>" + b"<div>" * depth + b'<a href="/x">x</a>' + b"</div>" * depth
        r = parsed(body + b"</body></html>")
        page = split_page(r.selector.root)
        assert len(page.blocks) <= 100  # one block per level down to MAX_DEPTH
        assert page.content_text() == " ".join(texts(r, BODY_TEXT))
        if depth == 200:
            assert page.content_text() == "x" and page.blocks[-1].hrefs == ["/x"]


def test_simhash_near_and_far() -> None:
    a = {f"paragraph {i} of the article": 30 for i in range(20)}
    b = {**a, "Printable version": 17}
    c = {f"another text {i}": 30 for i in range(20)}
    assert distance(simhash(a), simhash(b)) <= 3
    assert distance(simhash(a), simhash(c)) > 10
    index = NearDuplicates()
    parts = [f"Paragraph {i}: {ARTICLE}" for i in range(3)]
    assert not index.check(parts, "Acid")
    assert index.check(["From the free encyclopedia", *parts], "Acid")  # a print copy
    assert not index.check(parts, "Acid (chemistry)")  # another title: another page
    assert not index.check(["short"], "Acid") and len(index) == 2


def test_index_is_bounded() -> None:
    index = NearDuplicates(capacity=3)
    for i in range(10):
        index.check([f"text number {i} " * 20], str(i))
    assert len(index) == 3
    assert not index.check(["text number 0 " * 20], "0")  # forgotten


class Site:
    def __init__(self, pages: dict[str, bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = pages.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.httpd = QuickHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        serve_in_thread(self.httpd)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_print_copy_is_stored_once(tmp_path: Path) -> None:
    body = " ".join([ARTICLE] * 3)
    pages = {
        "/wiki/Acid": html(
            "Acid",
            body,
            [("/wiki/Acid?printable=yes", "Printable version"), ("/wiki/Base", "Base")],
            nav(),
        ),
        "/wiki/Acid?printable=yes": html("Acid", body, [("/wiki/Salt", "Salt")]),
        "/wiki/Base": html("Base", "A base accepts protons. " * 10, [], nav()),
        "/wiki/Salt": html("Salt", "A salt is made by an acid and a base. " * 10, [], nav()),
    }
    site = Site(pages)
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={site.base}/wiki/Acid",
            "FOCUSED_STRATEGY=best_first",
            "CLOSESPIDER_PAGECOUNT=20",
            "ROBOTSTXT_OBEY=False",
            timeout=120,
        )
    finally:
        site.close()
    urls = [r["url"].removeprefix(site.base) for r in crawl.rows()]
    assert urls.count("/wiki/Acid") == 1 and "/wiki/Acid?printable=yes" not in urls
    assert "/wiki/Salt" not in urls  # the copy's links are not followed again
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["focused/pages/near_duplicates"] == 1
    assert stats["focused/links/chrome"] >= 5
    # the chrome links (404 here) come after the article's: Base is fetched first
    assert urls.index("/wiki/Base") == 1


def test_an_href_that_makes_no_url_is_no_chrome_link() -> None:
    """A hostile chrome block with ``//[x`` (urljoin raises "Invalid IPv6 URL"): the
    page's other chrome links are still found, and nothing raises."""
    from focused.robustness import FocusedLinkExtractor

    broken = nav().replace(
        "<li><a href='/Main'>", "<li><a href='//[x'>broken</a></li><li><a href='/Main'>"
    )
    templates = HostTemplates()
    found = []
    for name in ("a", "b"):
        r = parsed(
            html(name, ARTICLE, [("/Salt", "article link")], broken), f"http://wiki.test/{name}"
        )
        links, url_of = FocusedLinkExtractor().links_and_urls(r)
        page = templates.classify("wiki.test", split_page(r.selector.root))
        templates.learn("wiki.test", page)
        with pytest.raises(ValueError):
            url_of("//[x")
        found.append(chrome_urls(page, url_of))
    assert "http://wiki.test/Donate" in found[1] and "http://wiki.test/Salt" not in found[1]
