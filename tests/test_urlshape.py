"""URL shapes and their waste (focused.web.urlshape), unit by unit and in one real crawl
of a tiny loopback wiki whose talk pages are thin: after three of them the rest wait at
the bottom of the frontier; a ``noindex`` page is not stored, a ``nofollow`` link not
followed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from focused.web.urlshape import ShapeStats, shape, thin
from tests.crawling import run_crawl
from tests.test_content import ARTICLE, Site


def test_shape_keeps_the_layout_and_drops_the_names() -> None:
    assert shape("http://W.test/wiki/Water.html") == ("w.test", "/wiki/*.html", "")
    assert shape("http://w.test/wiki/Talk:Water.html") == ("w.test", "/wiki/Talk:*", "")
    assert shape("http://w.test/w/index.php?title=Water&action=edit") == (
        "w.test",
        "/w/*.php",
        "action&title",
    )
    assert shape("http://f.test/thread/Iron?page=2")[1:] == ("/thread/*", "page")
    assert shape("http://n.test/2024/05/some-story")[1] == "/#/#/*"
    assert shape("http://n.test/")[1] == "/"
    # the same shape whatever the name and the query values
    assert shape("http://f.test/thread/Salt?page=3") == shape("http://f.test/thread/Iron?page=2")


def test_three_waste_pages_make_a_shape_wasteful_on_every_host() -> None:
    stats = ShapeStats()
    assert not stats.wasteful("http://a.test/wiki/Talk:X")  # the prior: 1/4
    for name in ("P", "Q", "R", "S"):  # the host's articles come first
        stats.observe(f"http://a.test/wiki/{name}", waste=False)
    for name in ("A", "B", "C"):
        assert not stats.wasteful(f"http://a.test/wiki/Talk:{name}")
        stats.observe(f"http://a.test/wiki/Talk:{name}", waste=True)
    assert stats.wasteful("http://a.test/wiki/Talk:D")
    assert stats.wasteful("http://b.test/wiki/Talk:D")  # another host of the same layout
    # a host where the shape gave good pages keeps it
    for name in ("E", "F", "G"):
        stats.observe(f"http://c.test/wiki/Talk:{name}", waste=False)
    assert not stats.wasteful("http://c.test/wiki/Talk:H")
    # articles: a few thin ones among many good ones do not hide their kind
    for i in range(20):
        stats.observe(f"http://a.test/wiki/Art{i}", waste=i % 5 == 0)
    assert not stats.wasteful("http://a.test/wiki/Art99")
    assert stats.rate("http://a.test/wiki/Art99") < 0.35


def test_a_host_s_dominant_shape_is_never_waste() -> None:
    """On a site of short articles most off-topic articles are thin and not relevant:
    they stay articles, as the shape of most of the host's good pages; the pages of
    another kind (a thread's later pages) stay waste however many of them are fetched."""
    stats = ShapeStats()
    for i in range(3):  # no good page yet: the shape of most of the host's pages
        stats.observe(f"http://a.test/wiki/Art{i}", waste=True)
    assert not stats.wasteful("http://a.test/wiki/Art99")
    for i in range(3, 12):
        stats.observe(f"http://a.test/wiki/Art{i}", waste=i % 4 != 0)  # 3 in 4 waste
    assert stats.rate("http://a.test/wiki/Art99") > stats.threshold
    assert not stats.wasteful("http://a.test/wiki/Art99")
    for i in range(30):  # another kind grows to most of the host's pages, all waste
        stats.observe(f"http://a.test/wiki/Art{i % 12}?page={i}", waste=True)
    assert stats.wasteful("http://a.test/wiki/Art99?page=2")
    assert not stats.wasteful("http://a.test/wiki/Art99")


def test_one_good_page_in_four_keeps_a_shape_and_bounds_hold() -> None:
    stats = ShapeStats(max_shapes=4)
    for i, waste in enumerate((True, True, True, False)):
        stats.observe(f"http://a.test/u/{i}x", waste=waste)
    assert not stats.wasteful("http://a.test/u/9x")  # (3 + 1) / (4 + 4) = 0.5
    for i in range(10):
        stats.observe(f"http://a.test/p{i}/x", waste=True)
    assert len(stats) == 4
    with pytest.raises(ValueError):
        ShapeStats(threshold=0.0)
    assert thin(120, 30) and not thin(250, 30) and not thin(5, 0, min_words=0)


def _page(title: str, text: str, links: list[tuple[str, str]], head: str = "") -> bytes:
    items = "".join(f'<li><a href="{h}"{r}>{a}</a></li>' for h, a, r in _rel(links))
    return (
        f"<html><head>{head}<title>{title}</title></head><body><div id='content'>"
        f"<h1>{title}</h1><p>{text}</p><ul>{items}</ul></div></body></html>"
    ).encode()


def _rel(links: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [
        (h.removeprefix("!"), a, ' rel="nofollow"' if h.startswith("!") else "") for h, a in links
    ]


N = 10
TALK_ANCHOR = "Discuss acid base salt water chemistry"


def test_waste_shape_waits_and_noindex_is_not_stored(tmp_path: Path) -> None:
    long_text = " ".join([ARTICLE] * 2)
    pages = {}
    for i in range(N):
        links = [(f"/wiki/Talk:A{i}", f"{TALK_ANCHOR} {i}")]  # no repeated block
        if i + 1 < N:  # a chain: the talk link first, then the next article
            links.append((f"/wiki/A{i + 1}", f"Acid {i + 1}"))
        if i == 2:
            links.append(("/w/search?q=acid", "Search acid"))
            links.append(("!/wiki/Secret", "Acid secret salt"))
        pages[f"/wiki/A{i}"] = _page(f"Acid {i}", long_text, links)
        pages[f"/wiki/Talk:A{i}"] = _page(f"Talk:A{i}", "I disagree with this edit. -- Bob", [])
    noindex = '<meta name="robots" content="noindex,follow">'
    pages["/w/search?q=acid"] = _page(
        "Search", "Results", [("/wiki/Found", "Acid found")], head=noindex
    )
    pages["/wiki/Found"] = _page("Acid found", long_text, [])
    pages["/wiki/Secret"] = _page("Acid secret", long_text, [])
    site = Site(pages)
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={site.base}/wiki/A0",
            "FOCUSED_STRATEGY=best_first",
            "CONCURRENT_REQUESTS=1",
            "CLOSESPIDER_PAGECOUNT=60",
            "ROBOTSTXT_OBEY=False",
            timeout=120,
        )
    finally:
        site.close()
    rows = crawl.rows()
    urls = [r["url"].removeprefix(site.base) for r in rows]
    last_article = max(i for i, u in enumerate(urls) if u.startswith("/wiki/A"))
    talks = [i for i, u in enumerate(urls) if u.startswith("/wiki/Talk:")]
    assert len(talks) == N  # kept: fetched once no article link is left
    # three waste pages make the shape wasteful: the talk links found after them wait
    # at the bottom (value 0), fetched when no article link waits
    waited = [i for i in talks if float(rows[i]["link_value"]) == 0.0]
    assert [urls[i] for i in talks[:3]] == ["/wiki/Talk:A0", "/wiki/Talk:A1", "/wiki/Talk:A2"]
    assert waited == talks[3:]
    assert max(talks) > last_article
    assert "/w/search?q=acid" not in urls and "/wiki/Found" in urls  # noindex, follow
    assert "/wiki/Secret" not in urls  # rel="nofollow"
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["focused/pages/noindex"] == 1
    assert stats["focused/links/nofollow"] == 1
    assert stats["focused/links/waste_shape"] == len(waited)


def test_cached_shape_is_shape_and_the_cache_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from focused.web import urlshape

    monkeypatch.setattr(urlshape, "SHAPE_CACHE_SIZE", 8)
    urlshape._shapes.clear()
    urlshape._shape_values.clear()
    urls = [f"http://h.test/wiki/Talk:A{i}?b=1&a={i}" for i in range(20)]
    urls += ["http://h.test/w/index.php?title=X&action=edit", "http://h.test/2024/05/x"]
    for url in urls + urls:
        assert urlshape.cached_shape(url) == urlshape.shape(url)
        assert len(urlshape._shapes) <= 8
        assert len(urlshape._shape_values) <= len(urlshape._shapes)
    # the URLs of one shape share its tuple
    talks = {id(urlshape._shapes[u]) for u in urlshape._shapes if "Talk:" in u}
    assert len(urlshape._shapes) > 2 and len(talks) == 1
    urlshape._shapes.clear()
    urlshape._shape_values.clear()


TALKS = 8
#: a discussion page's title names the topic (A = 4B + C passes the page threshold on
#: the title alone) while its body is a line of talk
TALK_TITLE = "Talk:Acid base salt chemistry"


@pytest.fixture(scope="module")
def hub_crawls(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[object, str]]:
    """One hub page whose links are TALKS talk pages (first, with topical anchors) and
    TALKS articles, crawled best-first one request at a time, with and without the
    re-check of waiting links (FOCUSED_WASTE_SHAPE_RECHECK)."""
    text = " ".join([ARTICLE] * 3)
    links = [(f"/wiki/Talk:A{i}", f"{TALK_ANCHOR} {i}") for i in range(TALKS)]
    links += [(f"/wiki/A{i}", f"Acid {i}") for i in range(TALKS)]
    pages = {"/wiki/Hub": _page("Acid", text, links)}
    for i in range(TALKS):  # no two main contents alike (a host's repeated block is chrome)
        pages[f"/wiki/A{i}"] = _page(f"Acid {i}", f"Note {i}. {text}", [])
        talk = f"I disagree with edit {i} of this page. -- Bob"
        pages[f"/wiki/Talk:A{i}"] = _page(f"{TALK_TITLE} {i}", talk, [])
    return _crawl_on_and_off(
        tmp_path_factory, pages, "FOCUSED_WASTE_SHAPE_RECHECK", strategy="best_first"
    )


def _crawl_on_and_off(
    tmp_path_factory: pytest.TempPathFactory,
    pages: dict[str, bytes],
    setting: str,
    *,
    strategy: str,
) -> dict[bool, tuple[object, str]]:
    """The site of ``pages`` crawled from /wiki/Hub one request at a time, with the
    boolean ``setting`` on and off: {on: (crawl, the site's base URL)}."""
    site = Site(pages)
    crawls = {}
    try:
        for on in (True, False):
            out = tmp_path_factory.mktemp(f"{setting.lower()}-{on}")
            crawls[on] = (
                run_crawl(
                    out,
                    "FOCUSED_WEB=real",
                    f"FOCUSED_SEEDS={site.base}/wiki/Hub",
                    f"FOCUSED_STRATEGY={strategy}",
                    f"{setting}={on}",
                    "CONCURRENT_REQUESTS=1",
                    "ROBOTSTXT_OBEY=False",
                    timeout=120,
                ),
                site.base,
            )
    finally:
        site.close()
    return crawls


def _order(crawl: object, base: str) -> tuple[list[str], list[int], list[int]]:
    rows = crawl.rows()  # type: ignore[attr-defined]
    urls = [r["url"].removeprefix(base) for r in rows]
    talks = [i for i, u in enumerate(urls) if u.startswith("/wiki/Talk:")]
    articles = [i for i, u in enumerate(urls) if u.startswith("/wiki/A")]
    return urls, talks, articles


def test_thin_discussion_page_titled_with_the_topic_is_waste(hub_crawls) -> None:
    """Its title makes it relevant (A = 4B + C), its body does not: it counts as waste
    for its URL shape, and after three of them the shape is wasteful."""
    crawl, base = hub_crawls[True]
    rows = crawl.rows()
    talk_rows = [r for r in rows if "/wiki/Talk:" in r["url"]]
    assert len(talk_rows) == TALKS
    assert all(r["relevant"] for r in talk_rows)  # by its title
    stats = json.loads((crawl.out / "stats.json").read_text())
    assert stats["focused/pages/waste"] == TALKS  # the talk pages, and only they
    assert stats.get("focused/scheduler/waste_requeued", 0) >= TALKS - 4


def test_waiting_link_of_a_shape_learnt_wasteful_is_served_after_content(hub_crawls) -> None:
    """The talk links were all found (on the hub) before any talk page was fetched;
    once three talk pages were waste the others come up, are re-queued at the bottom
    and are fetched after every article. Without the re-check they keep their place."""
    crawl, base = hub_crawls[True]
    urls, talks, articles = _order(crawl, base)
    assert len(talks) == TALKS and len(articles) == TALKS
    early = [i for i in talks if i < max(articles)]
    late = [i for i in talks if i > max(articles)]
    assert 3 <= len(early) <= 4  # learnt from three (one more may be on its way)
    assert len(late) == TALKS - len(early)
    rows = crawl.rows()
    assert all(float(rows[i]["link_value"]) == 0.0 for i in late)  # waited as chrome
    stats = json.loads((crawl.out / "stats.json").read_text())
    assert stats["focused/scheduler/waste_requeued"] == len(late)
    plain, plain_base = hub_crawls[False]
    _, plain_talks, plain_articles = _order(plain, plain_base)
    assert max(plain_talks) < min(plain_articles)  # found first, fetched first
    plain_stats = json.loads((plain.out / "stats.json").read_text())
    assert "focused/scheduler/waste_requeued" not in plain_stats


FOOTBALL = (
    "A striker scored twice in the second half, the keeper saved a penalty and the"
    " midfield held the ball until the final whistle of the league match."
)


@pytest.fixture(scope="module")
def talk_crawls(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[object, str]]:
    """A hub whose links are TALKS talk pages (titled with the topic, thin, waste) and
    articles; each talk page links its poster's user page (a long page off the topic),
    whose name is seen nowhere else. Crawled by ``learning`` one request at a time, with
    and without FOCUSED_LEARNING_WASTE_LABEL."""
    text = " ".join([ARTICLE] * 3)
    links = [(f"/wiki/Talk:A{i}", f"{TALK_ANCHOR} {i}") for i in range(TALKS)]
    links += [(f"/wiki/A{i}", f"Acid {i}") for i in range(TALKS)]
    pages = {"/wiki/Hub": _page("Acid", text, links)}
    for i in range(TALKS):
        user = f"Poster{chr(ord('a') + i)}"
        pages[f"/wiki/A{i}"] = _page(f"Acid {i}", f"Note {i}. {text}", [])
        talk = f"{user} wrote: I disagree with edit {i} of this page."
        pages[f"/wiki/Talk:A{i}"] = _page(f"{TALK_TITLE} {i}", talk, [(f"/u/{user}", user)])
        pages[f"/u/{user}"] = _page(user, " ".join([f"{user} {FOOTBALL}"] * 4), [])
    return _crawl_on_and_off(
        tmp_path_factory, pages, "FOCUSED_LEARNING_WASTE_LABEL", strategy="learning"
    )


def test_a_waste_page_teaches_learning_no_good_label(talk_crawls) -> None:
    """The talk pages are relevant by their titles and waste by their own words: with
    the waste label the links they hold (their posters' pages) are valued lower than
    when the talk pages' high keyword label is learnt; the crawl is otherwise the same."""
    values = {}
    for on, (crawl, _base) in talk_crawls.items():
        rows = crawl.rows()  # type: ignore[attr-defined]
        stats = json.loads((crawl.out / "stats.json").read_text())  # type: ignore[attr-defined]
        assert stats["focused/pages/waste"] == TALKS
        talks = [r for r in rows if "/wiki/Talk:" in r["url"]]
        assert len(talks) == TALKS and all(r["relevant"] for r in talks)
        users = [float(r["link_value"]) for r in rows if "/u/" in r["url"]]
        assert len(users) == TALKS
        values[on] = users
    assert max(values[True]) < min(values[False])


def test_learning_fetches_another_article_before_its_page_s_own_variants(tmp_path: Path) -> None:
    """From an off-topic seed the crawl reaches a chemistry page, then the Acid article;
    both name sodium and acid. Acid's links to its own second page, print copy and talk
    page hold "acid" in their URLs, as the Acid page's own URL does; its link to the
    Sodium article is named "sodium". With FOCUSED_LEARNING_OWN_NAME the variants are
    valued by their anchors ("2", "Printable version", "Talk": words of the Acid page
    alone) and Sodium comes first; without it the first variant, named "acid" like
    Sodium is named "sodium" (words of both good pages), ties with Sodium and, found
    first, is fetched first."""
    text = " ".join([ARTICLE] * 3) + " Sodium hydroxide is a strong base."
    links = [
        ("/wiki/Acid?page=2", "2"),
        ("/wiki/Acid?printable=yes", "Printable version"),
        ("/wiki/Talk:Acid", "Talk"),
        ("/wiki/Sodium", "Sodium"),
    ]
    pages = {
        "/wiki/Goal": _page("Goal", " ".join([FOOTBALL] * 4), [("/wiki/Chem", "Chem")]),
        "/wiki/Chem": _page("Chemistry", f"Chemistry. {text}", [("/wiki/Acid", "Acid")]),
        "/wiki/Acid": _page("Acid", text, links),
        "/wiki/Acid?page=2": _page("Acid - page 2", f"Page two. {text}", []),
        "/wiki/Acid?printable=yes": _page("Acid", text, []),
        "/wiki/Talk:Acid": _page("Talk:Acid", "I disagree. -- Bob", []),
        "/wiki/Sodium": _page("Sodium", f"Sodium is a metal. {text}", []),
    }
    site = Site(pages)
    after = {}
    try:
        for on in (True, False):
            crawl = run_crawl(
                tmp_path / f"own-{on}",
                "FOCUSED_WEB=real",
                f"FOCUSED_SEEDS={site.base}/wiki/Goal",
                "FOCUSED_STRATEGY=learning",
                f"FOCUSED_LEARNING_OWN_NAME={on}",
                "CONCURRENT_REQUESTS=1",
                "ROBOTSTXT_OBEY=False",
                timeout=120,
            )
            urls = [r["url"].removeprefix(site.base) for r in crawl.rows()]
            assert urls[:3] == ["/wiki/Goal", "/wiki/Chem", "/wiki/Acid"]
            assert "/wiki/Sodium" in urls
            after[on] = urls[3]
    finally:
        site.close()
    assert after[True] == "/wiki/Sodium"
    assert after[False] == "/wiki/Acid?page=2"
