"""The realistic web of the quality benchmark (bench/realweb): the generator is seeded
and keeps the real article graph, every kind of chrome is there, meta pages and
near-duplicates are never targets; the server answers with each host's latency, refuses
on dead hosts and hangs on hanging ones; and, end to end, ``bench.quality --web
realistic`` on a tiny budget."""

from __future__ import annotations

import csv
import html
import json
import re
import socket
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from w3lib.url import canonicalize_url

from bench import quality
from bench.realweb import measure
from bench.realweb.serve import Hit, RealWebServer
from bench.realweb.web import (
    ARTICLE,
    CHROME,
    DUPLICATE,
    EXTERNAL,
    KINDS,
    META,
    MISSING,
    RealWeb,
)
from focused.output.metrics import targets_from_labels
from focused.web.sites import load_labels

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wikispeedia-site"
pytestmark = pytest.mark.skipif(
    not (DATA / "labels.tsv").is_file(), reason=f"wikispeedia site not at {DATA}"
)
_HREF = re.compile(r'href="([^"]*)"')


@pytest.fixture(scope="module")
def site() -> quality.Site:
    return quality.Site.load(DATA)


@pytest.fixture(scope="module")
def web() -> RealWeb:
    return RealWeb(DATA, seed=7, hosts=32, port=8123)


def _get(web: RealWeb, url: str) -> tuple[int, str]:
    parts = urlsplit(url)
    host = web.host_named(parts.hostname or "")
    assert host is not None, url
    page = web.render(host, parts.path + (f"?{parts.query}" if parts.query else ""))
    return page.status, page.body.decode("utf-8")


def _links(body: str) -> list[str]:
    return [html.unescape(h) for h in _HREF.findall(body)]


def test_the_same_seed_gives_the_same_web_and_another_seed_another(web: RealWeb) -> None:
    again = RealWeb(DATA, seed=7, hosts=32, port=8123)
    other = RealWeb(DATA, seed=8, hosts=32, port=8123)
    assert again.live_hosts == web.live_hosts
    assert other.live_hosts != web.live_hosts
    names = web.articles.names[::97]
    assert [again.article_url(n) for n in names] == [web.article_url(n) for n in names]
    assert sum(other.host_of(n) != web.host_of(n) for n in names) > len(names) // 2
    sample = [web.article_url(n) for n in names[:10]]
    sample += [u for n in names[:5] for u in web.duplicate_urls(n)]
    for url in sample:
        assert _get(again, url) == _get(web, url)
    # the port changes the URLs, nothing else
    moved = web.at_port(9000)
    assert moved.article_url("Hydrogen.html") == web.article_url("Hydrogen.html").replace(
        ":8123/", ":9000/"
    )
    assert moved.host_of("Hydrogen.html") == web.host_of("Hydrogen.html")


def test_hosts_are_loopback_with_latency_every_kind_and_robots_on_some(web: RealWeb) -> None:
    live = web.live_hosts
    assert len(live) == 32 and {h.kind for h in live} == set(KINDS)
    assert len(web.dead_hosts) >= 20 and len(web.hanging_hosts) == 2
    for host in web.all_hosts:
        assert host.ip.startswith("127.0.0.") and host.ip != "127.0.0.1"
    assert len({h.ip for h in web.all_hosts}) == len(web.all_hosts)
    assert web.host_map() == {h.name: h.ip for h in web.all_hosts}
    latencies = sorted(h.latency for h in live)
    assert latencies[0] >= 0.005 and latencies[-3] <= 0.080 and latencies[-1] >= 0.2
    for kind in KINDS:
        of_kind = [h for h in live if h.kind == kind]
        strict = [h for h in of_kind if h.disallow]
        assert 0 < len(strict) < len(of_kind), kind  # some hosts, not all
    wiki = next(h for h in live if h.kind == "wiki" and h.disallow)
    assert "Disallow: /w/" in web.robots(wiki)
    edit = f"{web.base(wiki)}/w/index.php?title=X&action=edit"
    assert not web.allowed(edit)
    open_wiki = next(h for h in live if h.kind == "wiki" and not h.disallow)
    assert web.allowed(f"{web.base(open_wiki)}/w/index.php?title=X&action=edit")


def test_article_pages_keep_the_real_link_graph(web: RealWeb, site: quality.Site) -> None:
    """Every article page links exactly its article's links (at their canonical URLs on
    their own hosts): the same pages are reachable as on the clean site."""
    by_url = {canonicalize_url(web.article_url(n)): n for n in web.articles.names}
    assert len(by_url) == len(site.graph)
    for name in web.articles.names:
        status, body = _get(web, web.article_url(name))
        assert status == 200
        linked = [by_url[canonicalize_url(u)] for u in _links(body) if web.classify(u) == ARTICLE]
        graph = {n for n in site.graph[name] if n in site.graph}
        chrome_picks = set(linked) - graph - {name}  # "related articles", "similar topics"
        assert graph <= set(linked), name
        kind = web.host_of(name).kind
        assert not chrome_picks if kind == "wiki" else len(chrome_picks) <= 11, name


def test_every_kind_of_chrome_and_meta_page_is_there(web: RealWeb) -> None:
    markers = {
        "wiki": ("Talk", "View history", "Printable version", "Languages", "Portal: "),
        "news": ("Related articles", "Most read", "Tags", "Subscribe", "AMP"),
        "forum": ("Board index", "Similar topics", "Posted by", "page 2", "Members"),
    }
    for kind, words in markers.items():
        name = next(n for n in web.articles.names if web.host_of(n).kind == kind)
        status, body = _get(web, web.article_url(name))
        assert status == 200
        for word in words:
            assert word in body, (kind, word)
        classes = {web.classify(u) for u in _links(body)}
        assert {ARTICLE, CHROME, META, DUPLICATE} <= classes, kind
        for url in _links(body):  # everything the page links is served (or is external)
            cls = web.classify(url)
            assert cls != MISSING, url
            if cls != EXTERNAL:
                assert _get(web, url)[0] == 200, url
    wiki_name = next(n for n in web.articles.names if web.host_of(n).kind == "wiki")
    _, body = _get(web, web.article_url(wiki_name))
    langs = [u for u in _links(body) if web.classify(u) == EXTERNAL and ".wiki.test" in u]
    assert len(langs) == 20


def test_robots_meta_tags_are_where_mediawiki_and_wordpress_put_them(web: RealWeb) -> None:
    noindex = re.compile(r'<meta name="robots" content="(noindex[^"]*)">')
    wiki = next(n for n in web.articles.names if web.host_of(n).kind == "wiki")
    _, body = _get(web, web.article_url(wiki))
    assert not noindex.search(body)  # an article is indexed
    marked = {}
    for url in _links(body):
        if web.classify(url) in (META, DUPLICATE, CHROME) and ".wiki.test" in url:
            found = noindex.search(_get(web, url)[1])
            marked[urlsplit(url).path + "?" + urlsplit(url).query] = found is not None
    edit = next(k for k in marked if "action=edit" in k)
    talk = next(k for k in marked if "/Talk:" in k)
    printable = next(k for k in marked if "printable=yes" in k)
    assert marked[edit] and marked[printable] and not marked[talk]


def test_duplicates_keep_the_main_content_and_meta_pages_are_no_targets(
    web: RealWeb, tmp_path: Path
) -> None:
    labels_path = tmp_path / "labels.tsv"
    labels = load_labels(str(DATA / "labels.tsv"))
    labels_path.write_text("\n".join(web.labels_lines(labels)) + "\n", encoding="utf-8")
    targets = targets_from_labels(
        load_labels(str(labels_path)), "subject.Science.Chemistry", "http://x/"
    )
    assert len(targets) == 191
    assert all(web.classify(t) == ARTICLE for t in targets)
    water = web.article_url("Hydrogen.html")
    assert canonicalize_url(water) in targets
    _, article = _get(web, water)
    main = web.articles.body("Hydrogen.html")[:2000]
    first_paragraph = re.sub(r'href="[^"]*"', "", main.split("</p>")[0])
    for url in web.duplicate_urls("Hydrogen.html"):
        assert web.classify(url) == DUPLICATE
        assert canonicalize_url(url) not in targets
        status, body = _get(web, url)
        assert status == 200 and first_paragraph in re.sub(r'href="[^"]*"', "", body)
    for url in _links(article):
        if web.classify(url) in (META, CHROME, DUPLICATE):
            assert canonicalize_url(url) not in targets, url
    # an article URL on the wrong host, or with a stray query, is not served
    other = next(h for h in web.live_hosts if h != web.host_of("Hydrogen.html"))
    assert web.classify(f"{web.base(other)}{web.article_path('Hydrogen.html', other)}") == MISSING
    assert web.classify(water + "?utm=1") == MISSING


def test_the_server_answers_refuses_and_hangs_on_loopback(web: RealWeb) -> None:
    with RealWebServer(web) as served:
        live = served.web
        name = "Hydrogen.html"
        host = live.host_of(name)
        url = live.article_url(name).replace(host.name, host.ip)
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert answer.status == 200 and b"<h1>Hydrogen</h1>" in answer.read()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://{host.ip}:{served.port}/nothing", timeout=5)
        assert missing.value.code == 404
        dead = live.dead_hosts[0]
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"http://{dead.ip}:{served.port}/wiki/{name}", timeout=5)
        hang = live.hanging_hosts[0]
        with socket.create_connection((hang.ip, served.port), timeout=2) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
            sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                sock.recv(1)
        hits = served.snapshot()
    assert [(h.host, h.status) for h in hits] == [(host.name, 200), (host.name, 404)]
    assert hits[0].end - hits[0].start >= host.latency


def test_host_use_counts_busy_and_waiting_host_seconds(web: RealWeb) -> None:
    """One seed on host A linking pages on other hosts: A is busy 1 s of the 3 s it
    waits or serves; the others wait from the answer on."""
    seed = "Hydrogen.html"
    host = web.host_of(seed)
    path = web.article_path(seed, host)
    hits = [
        Hit(host.name, path, 10.0, 11.0, 200),
        Hit(host.name, "/robots.txt", 12.0, 12.5, 200),
    ]
    use = measure.host_use(web, hits, seeds=[web.article_url(seed)], end=13.0, delay=1.0)
    assert use["requests"] == 2 and use["hosts_served"] == 1
    _, body = _get(web, web.article_url(seed))
    linked_hosts = {
        web.host_named(urlsplit(u).hostname or "")
        for u in _links(body)
        if web.classify(u) not in (EXTERNAL,) and web.allowed(u)
    }
    waiting_after = len(linked_hosts)  # every host with a link known and not requested
    expected_waiting = 1.0 * 1 + 2.0 * waiting_after  # [10, 11]: A serving; then all wait
    assert use["mean_waiting_hosts"] == pytest.approx(expected_waiting / 3.0)
    assert use["host_busy"] == pytest.approx(1.5 / expected_waiting)
    assert use["host_utilisation"] == pytest.approx(2 / (expected_waiting / 1.0))
    shares = measure.page_shares(web, [web.article_url(seed), *web.duplicate_urls(seed)[:1]])
    assert shares["article_share"] == 0.5 and shares["non_article_share"] == 0.5


def test_bench_quality_realistic_end_to_end(tmp_path: Path) -> None:
    """A tiny realistic benchmark (oracle and bfs, 9 pages each): its CSV, JSON and
    per-run files agree with each crawl's pages.sqlite3."""
    out = tmp_path / "out"
    code = quality.main(
        [
            "--web",
            "realistic",
            "--topic",
            "chemistry",
            "--held-out",
            "--seeds",
            "Chemistry.html",
            "--budget",
            "0.05",
            "--strategies",
            "bfs",
            "--hosts",
            "8",
            "--data",
            str(DATA),
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    with (out / "quality.csv").open(encoding="utf-8") as fh:
        rows = {r["strategy"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"oracle", "bfs"}
    assert list(next(iter(rows.values())))[-len(quality.REALISTIC_COLUMNS) :] == list(
        quality.REALISTIC_COLUMNS
    )
    web = RealWeb(DATA, seed=quality.DEFAULT_SEED, hosts=8)
    for name, row in rows.items():
        run = out / "runs" / "cdefault" / "chemistry__Chemistry" / name
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        conn = sqlite3.connect(run / "pages.sqlite3")
        urls = [u for (u,) in conn.execute("SELECT url FROM pages ORDER BY id")][
            : metrics["budget"]
        ]
        conn.close()
        assert int(row["pages"]) == len(urls) == metrics["pages"] == 9
        port = urlsplit(urls[0]).port
        assert port is not None
        at_port = web.at_port(port)
        classes = [at_port.classify(u) for u in urls]
        non_article = sum(c in (DUPLICATE, META, CHROME) for c in classes) / len(urls)
        assert float(row["non_article_share"]) == pytest.approx(non_article, abs=1e-6)
        assert metrics["non_article_share"] == pytest.approx(non_article)
        assert int(row["targets_found"]) == metrics["targets_found"]
        assert float(row["pages_per_s"]) > 0 and 0 < float(row["host_busy"]) <= 1
        assert int(row["hosts"]) == 8
        with (run / "requests.csv").open(encoding="utf-8") as fh:
            assert len(list(csv.DictReader(fh))) >= len(urls)
    assert float(rows["oracle"]["recall"]) >= float(rows["bfs"]["recall"])
    assert json.loads((out / "quality.json").read_text(encoding="utf-8"))[0]["strategy"] in rows


def test_anonymous_markup_names_no_region_but_keeps_every_word_and_link(web: RealWeb) -> None:
    from lxml import html as lxml_html

    from focused.web.template import split_page

    anon = RealWeb(DATA, seed=7, hosts=32, port=8123, markup="anonymous")
    assert anon.live_hosts == web.live_hosts
    for name in web.articles.names[:200:20]:
        url = web.article_url(name)
        _, named_body = _get(web, url)
        _, anon_body = _get(anon, url)
        assert anon_body != named_body
        assert _links(anon_body) == _links(named_body)
        strip = re.compile(r"<[^>]*>")
        assert strip.sub("", anon_body) == strip.sub("", named_body)
        # the named markup tells the sidebar and footer apart on a host's first page;
        # the anonymous one tells nothing: only a template learnt over pages can
        named_page = split_page(lxml_html.document_fromstring(named_body))
        anon_page = split_page(lxml_html.document_fromstring(anon_body))
        assert any(b.hinted for b in named_page.blocks)
        assert not any(b.hinted for b in anon_page.blocks)
    kinds = {h.kind: anon.region_attributes(h.kind) for h in anon.live_hosts}
    assert len({a["sidebar"] for a in kinds.values()}) == len(kinds)  # one per software
    with pytest.raises(ValueError, match="markup must be one of"):
        RealWeb(DATA, seed=7, hosts=32, markup="semantic")
