"""The realistic web: the wikispeedia articles spread over many hosts, each dressed as a
wiki, a news site or a forum, with the chrome, meta pages and near-duplicates real sites
have. Pure and seeded: the same ``(site, seed, hosts, port)`` gives the same bytes for
every URL, whatever the order of the requests.

The article pages keep the real link graph: each article lives on one host, chosen by a
stable hash of its name and the seed (:meth:`RealWeb.host_of`), at one canonical URL
(:meth:`RealWeb.article_url`: ``/wiki/<name>`` on a wiki host, ``/story/<name>`` on a news
host, ``/thread/<name>`` on a forum host), and each of its article links points to the
canonical URL of the linked article on that article's host. Around the article text
(the page's *main content*, unchanged) each kind of host adds its own chrome:

- **wiki**: tabs (Talk, Edit, History), a navigation bar (main page, portals, recent
  changes, log in), tools (what links here, printable and mobile versions, permanent
  link, a search link), about 20 interlanguage links to hosts that refuse connections,
  a footer, and on some pages an external "archived copy" link to a hanging host;
- **news**: a header with sections, log in, subscribe and search, a "most read" sidebar
  and "related articles" (random articles), a tag cloud, share links to a dead host,
  comments, print and AMP versions, and on some pages a "source" link to a hanging host;
- **forum**: the article as the first post of a thread (by a user), a few replies,
  pagination of the thread, "similar topics" (random articles), board and member lists,
  search and log in.

Every URL has a class (:meth:`RealWeb.classify`): ``article`` (a canonical article URL,
the only class a target can have), ``duplicate`` (print, mobile/AMP and ``?oldid=``
versions of an article: the same main content at another URL), ``meta`` (talk, edit,
history, log in, search results, comments, thread pages 2+, users), ``chrome`` (main
pages, portals, sections, tags, boards: hubs that link random articles), ``robots``
(``/robots.txt``), ``external`` (a dead or hanging host) and ``missing`` (a 404).

Hosts: ``hosts`` live ones on ``127.0.0.2`` up (``w07.wiki.test`` is host 7, a wiki, on
``127.0.0.9``), each with a seeded latency (5-80 ms, two slow ones at 200-400 ms) and a
robots.txt (half the hosts of each kind disallow their edit/history/search/login paths,
the others nothing); 21 dead hosts (20 interlanguage wikis and a share service: loopback
addresses nobody listens on, ``127.0.0.220`` up) and two hanging hosts (they accept a
connection and never answer: ``127.0.0.250``, ``127.0.0.251``). Every name maps to a
loopback address (:meth:`RealWeb.host_map`, the crawler's ``FOCUSED_HOSTS``): no lookup,
no packet off 127.0.0.0/8.
"""

from __future__ import annotations

import functools
import hashlib
import html
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

ARTICLE = "article"
DUPLICATE = "duplicate"
META = "meta"
CHROME = "chrome"
ROBOTS = "robots"
EXTERNAL = "external"
MISSING = "missing"
#: Every class of URL, the article one first.
CLASSES = (ARTICLE, DUPLICATE, META, CHROME, ROBOTS, EXTERNAL, MISSING)
#: The classes of pages that are not articles (what a crawl should not spend its budget on).
NON_ARTICLE = (DUPLICATE, META, CHROME)

WIKI, NEWS, FORUM = "wiki", "news", "forum"
#: How a page's regions are marked up: ``named`` (``id="sidebar"``, as most sites and
#: every CMS theme do) or ``anonymous`` (generated class names that name nothing).
NAMED, ANONYMOUS = "named", "anonymous"
MARKUPS = (NAMED, ANONYMOUS)
REGIONS = ("header", "main", "sidebar", "footer")
KINDS = (WIKI, NEWS, FORUM)
DEAD, HANG = "dead", "hang"
#: Where the article of each kind of host lives.
ARTICLE_PREFIX = {WIKI: "/wiki/", NEWS: "/story/", FORUM: "/thread/"}
#: The mobile/AMP copy of an article: this prefix before the article path.
MOBILE_PREFIX = {WIKI: "/m", NEWS: "/amp", FORUM: "/m"}
#: The query that makes an article URL its print version.
PRINT_QUERY = {WIKI: "printable=yes", NEWS: "print=1", FORUM: "view=print"}
#: What half the hosts of each kind disallow in robots.txt (the other half: nothing).
DISALLOW = {
    WIKI: ("/w/", "/wiki/Special:"),
    NEWS: ("/search", "/login", "/subscribe"),
    FORUM: ("/search.php", "/ucp.php", "/members"),
}
LANGUAGES = [
    "fr",
    "de",
    "es",
    "it",
    "nl",
    "pl",
    "pt",
    "ru",
    "ja",
    "zh",
    "sv",
    "fi",
    "no",
    "da",
    "cs",
    "hu",
    "tr",
    "ko",
    "ar",
    "he",
]  # 20 wikis
HANGING_NAMES = ("archive.hang.test", "cdn.hang.test")
SHARE_NAME = "share.social.test"
MAX_HOSTS = 200
PORTALS = ("Science", "Geography", "History", "People", "Arts", "Technology")
SECTIONS = ("world", "science", "business", "culture", "sport", "opinion")
BOARDS = ("general", "science", "history", "places", "people")
USERS = tuple(
    [
        "Alder",
        "Birch",
        "Cedar",
        "Dune",
        "Ember",
        "Fjord",
        "Grove",
        "Heath",
        "Inlet",
        "Juniper",
        "Kestrel",
        "Larch",
        "Moss",
        "Nettle",
        "Oriel",
        "Pike",
        "Quill",
        "Rowan",
        "Sedge",
        "Thorn",
        "Umber",
        "Vale",
        "Willow",
        "Yarrow",
    ]
)
TAG_WORDS = tuple(
    [
        "analysis",
        "breaking",
        "climate",
        "economy",
        "election",
        "energy",
        "europe",
        "features",
        "health",
        "history",
        "interview",
        "lifestyle",
        "markets",
        "opinion",
        "politics",
        "review",
        "science",
        "society",
        "sport",
        "technology",
        "travel",
        "weather",
        "world",
    ]
)
#: The robots meta tag of the pages the real software marks (kind, handler) -> content:
#: MediaWiki sends ``noindex,nofollow`` on edit and history pages, old revisions,
#: printable versions and special pages (search, log in, recent changes, what links
#: here); WordPress (the news kind) ``noindex`` on its log-in page and search results.
#: Talk pages, user pages, comments and forum pages are indexed as those engines do by
#: default (the crawler must tell them by what they yield).
NOINDEX = {
    (WIKI, "edit"): "noindex,nofollow",
    (WIKI, "history"): "noindex,nofollow",
    (WIKI, "oldid"): "noindex,nofollow",
    (WIKI, "print"): "noindex,nofollow",
    (WIKI, "search"): "noindex,nofollow",
    (WIKI, "login"): "noindex,nofollow",
    (WIKI, "recent"): "noindex,nofollow",
    (WIKI, "whatlinkshere"): "noindex,nofollow",
    (NEWS, "login"): "noindex,follow",
    (NEWS, "search"): "noindex,follow",
}
#: Pages of a paginated listing (search results, sections, boards, thread pages).
MAX_LISTING_PAGES = 5
RESULTS_PER_PAGE = 20
_HREF = re.compile(r'href="([^"#]*)"')
_TAG = re.compile(r"<[^>]+>")
_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S | re.I)
_WORD = re.compile(r"[A-Za-z]{4,}")


@dataclass(frozen=True)
class Host:
    """One host name: its loopback address, what it is, and how it answers."""

    name: str
    ip: str
    kind: str  # one of KINDS, or DEAD / HANG
    latency: float = 0.0  # seconds before each answer
    disallow: tuple[str, ...] = ()  # robots.txt Disallow paths

    @property
    def live(self) -> bool:
        return self.kind in KINDS


@dataclass(frozen=True)
class Page:
    """An answer: status, content type and body."""

    status: int
    content_type: str
    body: bytes
    location: str = ""


def _stable(*parts: object) -> int:
    """A hash of ``parts`` that is the same in every process (not Python's ``hash``)."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


class _Articles:
    """The article files of the site, read once each (shared by every port's web)."""

    def __init__(self, root: Path) -> None:
        self.wiki = root / "wiki"
        if not self.wiki.is_dir():
            raise FileNotFoundError(f"no wiki/ folder in {root}")
        self.names: tuple[str, ...] = tuple(
            sorted(p.name for p in self.wiki.iterdir() if p.suffix == ".html")
        )
        self.known = frozenset(self.names)

    @functools.lru_cache(maxsize=8192)  # noqa: B019 (one object per site, kept for the run)
    def body(self, name: str) -> str:
        """The inner HTML of the page's ``<body>`` (its ``<h1>`` and text, site links)."""
        text = (self.wiki / name).read_text(encoding="utf-8")
        match = _BODY.search(text)
        return match.group(1) if match else text

    @functools.lru_cache(maxsize=8192)  # noqa: B019
    def links(self, name: str) -> tuple[str, ...]:
        """The page names the article links to, in page order, once each."""
        out = []
        for href in _HREF.findall(self.body(name)):
            target = unquote(href)
            if target in self.known:
                out.append(target)
        return tuple(dict.fromkeys(out))


def title_of(name: str) -> str:
    """``Earth's atmosphere`` for ``Earth's_atmosphere.html``."""
    return name.removesuffix(".html").replace("_", " ")


@dataclass(frozen=True)
class _Route:
    """What a URL is: its class, the handler that renders it, and its arguments."""

    cls: str
    handler: str = ""
    name: str = ""  # the article's page name, for pages about one article
    arg: str = ""  # query word, section, board, user, ...
    page: int = 1  # listing page


_Build = Callable[["RealWeb", Host, str, dict[str, str]], "_Route | None"]


@dataclass(frozen=True)
class _Rule:
    """One routing rule of a site kind: a path (exact, or a prefix when ``prefix``), the
    query keys it needs (``required``) and may have (``allowed``), and its builder (given
    the rest of the path after a prefix; None from it means a 404)."""

    path: str
    build: _Build
    required: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    prefix: bool = False

    def match(self, path: str, q: dict[str, str]) -> str | None:
        """The rest of ``path`` when the rule applies to ``path`` and ``q``, else None."""
        if self.prefix:
            if not path.startswith(self.path):
                return None
        elif path != self.path:
            return None
        keys = set(q)
        if not self.required <= keys <= self.allowed:
            return None
        return path[len(self.path) :]


class RealWeb:
    """The realistic web over the wikispeedia folder ``root`` (see the module docstring).

    ``port``: the port every live and hanging host listens on (URLs carry it); the
    generator is otherwise independent of it (:meth:`at_port` gives the same web on
    another port).
    """

    def __init__(
        self,
        root: str | Path,
        *,
        seed: int = 0,
        hosts: int = 32,
        port: int = 0,
        markup: str = NAMED,
        _articles: _Articles | None = None,
    ) -> None:
        if not 3 <= hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be in 3..{MAX_HOSTS}, got {hosts}")
        if markup not in MARKUPS:
            raise ValueError(f"markup must be one of {', '.join(MARKUPS)}, got {markup!r}")
        self.root = Path(root)
        self.seed = seed
        self.markup = markup
        self.port = port
        self.articles = _articles or _Articles(self.root)
        self.live_hosts = self._make_hosts(hosts)
        self.dead_hosts = tuple(
            Host(f"{lang}.wiki.test", f"127.0.0.{220 + i}", DEAD)
            for i, lang in enumerate(LANGUAGES)
        ) + (Host(SHARE_NAME, "127.0.0.240", DEAD),)
        self.hanging_hosts = tuple(
            Host(n, f"127.0.0.{250 + i}", HANG) for i, n in enumerate(HANGING_NAMES)
        )
        self.all_hosts = self.live_hosts + self.dead_hosts + self.hanging_hosts
        self._by_name = {h.name: h for h in self.all_hosts}
        self._by_ip = {h.ip: h for h in self.all_hosts}

    def region_attributes(self, kind: str) -> dict[str, str]:
        """The attribute of each region's ``div`` (header, main, sidebar, footer) on a
        host of ``kind``: ``id="header"`` ... with the named markup; with the anonymous
        one, a class made by a CSS-in-JS build (``css-3f9a1c``), the same on every host of
        a kind (one site software), so that only what repeats tells chrome apart."""
        if self.markup == NAMED:
            return {r: f'id="{r}"' for r in REGIONS}
        return {r: f'class="css-{_stable(self.seed, kind, r) % 16**6:06x}"' for r in REGIONS}

    def at_port(self, port: int) -> RealWeb:
        """The same web (same hosts, pages, classes) served on ``port``."""
        web = object.__new__(RealWeb)
        web.__dict__.update(self.__dict__)
        web.port = port
        return web

    # --- hosts ---------------------------------------------------------------------
    def _make_hosts(self, count: int) -> tuple[Host, ...]:
        rng = random.Random(f"{self.seed}|hosts")
        # every kind present: about half wikis, a quarter news sites, a quarter forums
        kinds = [KINDS[0] if i % 4 in (0, 1) else KINDS[i % 4 - 1] for i in range(count)]
        rng.shuffle(kinds)
        latencies = [rng.uniform(0.005, 0.080) for _ in range(count)]
        for i in rng.sample(range(count), 2):  # a few slow hosts
            latencies[i] = rng.uniform(0.200, 0.400)
        hosts = []
        for kind in KINDS:  # half the hosts of each kind disallow their meta paths
            of_kind = [i for i, k in enumerate(kinds) if k == kind]
            strict = set(rng.sample(of_kind, len(of_kind) // 2)) if of_kind else set()
            for i in of_kind:
                hosts.append((i, kind, DISALLOW[kind] if i in strict else ()))
        made = []
        for i, kind, disallow in sorted(hosts):
            name = f"{kind[0]}{i:02d}.{kind}.test"
            made.append(Host(name, f"127.0.0.{2 + i}", kind, round(latencies[i], 4), disallow))
        return tuple(made)

    def host_map(self) -> dict[str, str]:
        """Every host name -> its loopback address (``FOCUSED_HOSTS``)."""
        return {h.name: h.ip for h in self.all_hosts}

    def host_named(self, name: str) -> Host | None:
        return self._by_name.get(name.lower().rstrip("."))

    def host_at(self, ip: str) -> Host | None:
        return self._by_ip.get(ip)

    def host_of(self, name: str) -> Host:
        """The live host an article lives on: a stable hash of its name and the seed."""
        return self.live_hosts[_stable(self.seed, "article", name) % len(self.live_hosts)]

    # --- URLs ----------------------------------------------------------------------
    def base(self, host: Host) -> str:
        return f"http://{host.name}:{self.port}"

    def article_path(self, name: str, host: Host | None = None) -> str:
        host = host or self.host_of(name)
        return ARTICLE_PREFIX[host.kind] + quote(name)

    def article_url(self, name: str) -> str:
        """The canonical URL of article ``name`` (``Water.html``): the only target URL."""
        host = self.host_of(name)
        return self.base(host) + self.article_path(name, host)

    def duplicate_urls(self, name: str) -> list[str]:
        """The print and mobile versions of an article and its ``?oldid=`` revisions."""
        host = self.host_of(name)
        path = self.article_path(name, host)
        out = [
            f"{self.base(host)}{path}?{PRINT_QUERY[host.kind]}",
            f"{self.base(host)}{MOBILE_PREFIX[host.kind]}{path}",
        ]
        if host.kind == WIKI:
            out += [f"{self.base(host)}{path}?oldid={r}" for r in self._revisions(name)]
        return out

    def labels_lines(self, labels: Mapping[str, Iterable[str]]) -> Iterator[str]:
        """``labels.tsv`` rows with the canonical article URLs (absolute) as paths."""
        yield "# url\tcategory (the realistic web's canonical article URLs)"
        for path, cats in labels.items():
            name = unquote(path).rsplit("/", 1)[-1]
            if name not in self.articles.known:
                continue
            url = self.article_url(name)
            for cat in cats or ("",):
                yield f"{url}\t{cat}" if cat else url

    # --- classes -------------------------------------------------------------------
    def classify(self, url: str) -> str:
        """The class of ``url`` (one of :data:`CLASSES`)."""
        parts = urlsplit(url)
        host = self.host_named(parts.hostname or "")
        if host is None:
            return MISSING
        if not host.live:
            return EXTERNAL
        return self._route(host, parts.path, parts.query).cls

    def allowed(self, url: str) -> bool:
        """Whether the host's robots.txt allows ``url`` (always true off a live host)."""
        parts = urlsplit(url)
        host = self.host_named(parts.hostname or "")
        if host is None or not host.live:
            return True
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return not any(path.startswith(d) for d in host.disallow)

    def _route(self, host: Host, path: str, query: str) -> _Route:
        q = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
        kind = host.kind
        prefix = ARTICLE_PREFIX[kind]
        if path == "/robots.txt" and not q:
            return _Route(ROBOTS, "robots")
        mobile = MOBILE_PREFIX[kind] + prefix
        if path.startswith((prefix, mobile)):
            is_mobile = path.startswith(mobile)
            rest = unquote(path[len(mobile if is_mobile else prefix) :])
            if self._lives_here(rest, host):
                return self._article_route(kind, rest, q, mobile=is_mobile)
        for rule in _RULES[kind]:
            rest = rule.match(path, q)
            if rest is not None:
                return rule.build(self, host, rest, q) or _Route(MISSING)
        return _Route(MISSING)

    def _lives_here(self, name: str, host: Host) -> bool:
        return name in self.articles.known and self.host_of(name) == host

    def _article_route(self, kind: str, name: str, q: dict[str, str], *, mobile: bool) -> _Route:
        if mobile:
            return _Route(DUPLICATE, "mobile", name) if not q else _Route(MISSING)
        if not q:
            return _Route(ARTICLE, "article", name)
        key, _, value = PRINT_QUERY[kind].partition("=")
        if q == {key: value}:
            return _Route(DUPLICATE, "print", name)
        return _ARTICLE_EXTRA[kind](name, q) or _Route(MISSING)

    def _page_arg(self, q: dict[str, str], key: str, step: int = 1) -> int | None:
        """The listing page a query names (1 without ``key``), None when out of range."""
        raw = q.get(key, "")
        if not raw:
            return 1
        if not raw.isdigit() or int(raw) % step:
            return None
        page = int(raw) // step + (1 if step > 1 else 0)
        return page if 1 <= page <= MAX_LISTING_PAGES else None

    def _wiki_page(self, host: Host, rest: str) -> _Route | None:
        """A ``/wiki/<rest>`` page that is no article: main page or a namespace page."""
        rest = unquote(rest)
        space, colon, tail = rest.partition(":")
        if not colon:
            return _Route(CHROME, "main") if rest == "Main_Page" else None
        namespace = _WIKI_SPACES.get(space)
        return namespace(self, host, tail) if namespace else None

    def _listing(
        self, cls: str, handler: str, arg: str, q: dict[str, str], *, key: str, step: int = 1
    ) -> _Route | None:
        """A paginated listing page, None when the page is out of range."""
        page = self._page_arg(q, key, step)
        return None if page is None else _Route(cls, handler, arg=arg, page=page)

    # --- pages ---------------------------------------------------------------------
    def render(self, host: Host, target: str) -> Page:
        """The answer of ``host`` to the request target ``target`` (path and query)."""
        parts = urlsplit(target)
        if not host.live:
            return Page(404, "text/plain", b"not here\n")
        route = self._route(host, parts.path, parts.query)
        if route.cls == MISSING:
            return Page(404, "text/html; charset=utf-8", b"<html><body>Not found</body></html>")
        if route.cls == ROBOTS:
            return Page(200, "text/plain", self.robots(host).encode())
        body = _Renderer(self, host, route).render()
        return Page(200, "text/html; charset=utf-8", body.encode("utf-8"))

    def robots(self, host: Host) -> str:
        lines = ["User-agent: *"]
        lines += [f"Disallow: {d}" for d in host.disallow] or ["Disallow:"]
        return "\n".join(lines) + "\n"

    # --- seeded choices ------------------------------------------------------------
    def rng(self, *parts: object) -> random.Random:
        return random.Random("|".join(str(p) for p in (self.seed, *parts)))

    def random_articles(self, count: int, *parts: object) -> list[str]:
        return self.rng("pick", *parts).sample(self.articles.names, count)

    def _revisions(self, name: str) -> list[int]:
        rng = self.rng("revisions", name)
        return sorted({rng.randrange(10**6, 10**7) for _ in range(6)}, reverse=True)

    def has_archive_link(self, name: str) -> bool:
        """Whether the article's page links a hanging host (one article in 20)."""
        return _stable(self.seed, "archive", name) % 20 == 0

    def search_word(self, name: str) -> str:
        words = _WORD.findall(title_of(name)) or ["article"]
        return words[0].lower()


class _Renderer:
    """Renders one page of one host (the chrome of the host's kind around the content)."""

    def __init__(self, web: RealWeb, host: Host, route: _Route) -> None:
        self.web = web
        self.host = host
        self.route = route
        self.base = web.base(host)

    # --- helpers -------------------------------------------------------------------
    def a(self, href: str, text: str) -> str:
        return f'<a href="{html.escape(href, quote=True)}">{html.escape(text)}</a>'

    def article_link(self, name: str) -> str:
        return self.a(self.web.article_url(name), title_of(name))

    def article_list(self, names: Iterable[str]) -> str:
        return "<ul>" + "".join(f"<li>{self.article_link(n)}</li>" for n in names) + "</ul>"

    def content(self, name: str) -> str:
        """The article's main content, its links pointing at the canonical article URLs."""
        known = self.web.articles.known

        def link(match: re.Match[str]) -> str:
            target = unquote(match.group(1))
            if target in known:
                return f'href="{html.escape(self.web.article_url(target), quote=True)}"'
            return match.group(0)

        return _HREF.sub(link, self.web.articles.body(name))

    def plain(self, name: str) -> str:
        return html.escape(html.unescape(_TAG.sub(" ", self.web.articles.body(name))))

    def pager(self, href_of: Iterable[tuple[int, str]]) -> str:
        items = [self.a(href, f"page {n}") for n, href in href_of]
        return '<div class="pager">' + " ".join(items) + "</div>"

    def doc(self, title: str, header: str, main: str, side: str, footer: str) -> str:
        site = f"{self.host.kind.title()} {self.host.name.split('.')[0][1:]}"
        robots = NOINDEX.get((self.host.kind, self.route.handler))
        head = f'<meta name="robots" content="{robots}">' if robots else ""
        at = self.web.region_attributes(self.host.kind)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"{head}<title>{html.escape(title)} - {site}</title></head><body>\n"
            f"<div {at['header']}>{header}</div>\n<div {at['main']}>{main}</div>\n"
            f"<div {at['sidebar']}>{side}</div>\n<div {at['footer']}>{footer}</div>\n"
            "</body></html>\n"
        )

    def render(self) -> str:
        handler = getattr(self, f"_{self.host.kind}_{self.route.handler}")
        return handler()

    # --- wiki ----------------------------------------------------------------------
    def _wiki_header(self, name: str = "") -> str:
        b = self.base
        nav = [self.a(f"{b}/wiki/Main_Page", "Main page")]
        nav += [self.a(f"{b}/wiki/Portal:{p}", f"Portal: {p}") for p in PORTALS]
        nav.append(self.a(f"{b}/wiki/Special:RecentChanges", "Recent changes"))
        login = urlencode({"title": "Special:UserLogin", "returnto": name or "Main_Page"})
        nav.append(self.a(f"{b}/w/index.php?{login}", "Log in"))
        if name:
            q = quote(name)
            nav += [
                self.a(f"{b}/wiki/{q}", "Article"),
                self.a(f"{b}/wiki/Talk:{q}", "Talk"),
                self.a(f"{b}/w/index.php?{urlencode({'title': name, 'action': 'edit'})}", "Edit"),
                self.a(
                    f"{b}/w/index.php?{urlencode({'title': name, 'action': 'history'})}",
                    "View history",
                ),
            ]
        return " | ".join(nav)

    def _wiki_tools(self, name: str) -> str:
        b, web = self.base, self.web
        path = web.article_path(name, self.host)
        tools = [
            self.a(f"{b}/wiki/Special:WhatLinksHere/{quote(name)}", "What links here"),
            self.a(f"{b}{path}?printable=yes", "Printable version"),
            self.a(f"{b}/m{path}", "Mobile view"),
            self.a(f"{b}{path}?oldid={web._revisions(name)[0]}", "Permanent link"),
            self.a(
                f"{b}/w/index.php?{urlencode({'search': web.search_word(name)})}",
                f"Search pages containing {web.search_word(name)}",
            ),
        ]
        langs = [
            self.a(f"http://{lang}.wiki.test:{web.port}/wiki/{quote(name)}", lang)
            for lang in LANGUAGES
        ]
        return "<h3>Tools</h3>" + " | ".join(tools) + "<h3>Languages</h3>" + " ".join(langs)

    def _wiki_footer(self) -> str:
        b = self.base
        return " | ".join(
            self.a(f"{b}/wiki/Project:{p}", p)
            for p in ("About", "Disclaimers", "Privacy", "Contact")
        )

    def _wiki_page(self, title: str, main: str, name: str = "") -> str:
        side = self._wiki_tools(name) if name else ""
        return self.doc(title, self._wiki_header(name), main, side, self._wiki_footer())

    def _archive(self, name: str, text: str) -> str:
        if not self.web.has_archive_link(name):
            return ""
        host = HANGING_NAMES[_stable(self.web.seed, "hang", name) % len(HANGING_NAMES)]
        return "<p>" + self.a(f"http://{host}:{self.web.port}/web/{quote(name)}", text) + "</p>"

    def _wiki_article(self) -> str:
        name = self.route.name
        main = self.content(name) + self._archive(name, "Archived copy")
        return self._wiki_page(title_of(name), main, name)

    def _wiki_print(self) -> str:  # the main content alone
        name = self.route.name
        return self.doc(title_of(name), "", self.content(name), "", "")

    def _wiki_mobile(self) -> str:
        name = self.route.name
        header = self.a(f"{self.base}/wiki/Main_Page", "Main page")
        return self.doc(title_of(name), header, self.content(name), "", "")

    def _wiki_oldid(self) -> str:
        name = self.route.name
        banner = f"<p><i>This is an old revision of this page ({self.route.arg}).</i></p>"
        return self._wiki_page(title_of(name), banner + self.content(name), name)

    def _wiki_talk(self) -> str:
        name = self.route.name
        rng = self.web.rng("talk", name)
        posts = []
        for other in self.web.random_articles(3, "talk", name):
            user = rng.choice(USERS)
            posts.append(
                f"<p>Should this article on {html.escape(title_of(name))} mention "
                f"{self.article_link(other)}? -- "
                f"{self.a(f'{self.base}/wiki/User:{user}', user)}</p>"
            )
        main = f"<h1>Talk:{html.escape(title_of(name))}</h1>" + "".join(posts)
        return self._wiki_page(f"Talk:{title_of(name)}", main, name)

    def _wiki_edit(self) -> str:
        name = self.route.name
        main = (
            f"<h1>Editing {html.escape(title_of(name))}</h1>"
            f'<form><textarea name="text">{self.plain(name)}</textarea></form>'
        )
        return self._wiki_page(f"Editing {title_of(name)}", main, name)

    def _wiki_history(self) -> str:
        name = self.route.name
        path = self.web.article_path(name, self.host)
        rng = self.web.rng("history", name)
        rows = []
        for rev in self.web._revisions(name):
            user = rng.choice(USERS)
            rows.append(
                f"<li>{self.a(f'{self.base}{path}?oldid={rev}', f'revision {rev}')} by "
                f"{self.a(f'{self.base}/wiki/User:{user}', user)}</li>"
            )
        main = f"<h1>{html.escape(title_of(name))}: revision history</h1><ul>{''.join(rows)}</ul>"
        return self._wiki_page(f"{title_of(name)}: history", main, name)

    def _wiki_login(self) -> str:
        main = "<h1>Log in</h1><form><input name='user'><input name='password'></form>"
        return self._wiki_page("Log in", main)

    def _wiki_user(self) -> str:
        user = self.route.arg
        edits = self.web.random_articles(5, "user", self.host.name, user)
        main = f"<h1>User:{user}</h1><p>Recent edits:</p>" + self.article_list(edits)
        return self._wiki_page(f"User:{user}", main)

    def _results(self, word: str, page: int) -> str:
        names = self.web.random_articles(RESULTS_PER_PAGE, "search", self.host.name, word, page)
        return f"<h1>Search results for {html.escape(word)}</h1>" + self.article_list(names)

    def _wiki_search(self) -> str:
        r = self.route
        pages = [
            (n, f"{self.base}/w/index.php?{urlencode({'search': r.arg, 'offset': (n - 1) * 20})}")
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != r.page
        ]
        return self._wiki_page("Search results", self._results(r.arg, r.page) + self.pager(pages))

    def _wiki_main(self) -> str:
        names = self.web.random_articles(30, "main", self.host.name)
        main = "<h1>Welcome</h1><p>Featured and recent articles:</p>" + self.article_list(names)
        return self._wiki_page("Main page", main)

    def _wiki_portal(self) -> str:
        names = self.web.random_articles(40, "portal", self.host.name, self.route.arg)
        main = f"<h1>Portal: {self.route.arg}</h1>" + self.article_list(names)
        return self._wiki_page(f"Portal:{self.route.arg}", main)

    def _wiki_recent(self) -> str:
        names = self.web.random_articles(20, "recent", self.host.name)
        main = "<h1>Recent changes</h1>" + self.article_list(names)
        return self._wiki_page("Recent changes", main)

    def _wiki_whatlinkshere(self) -> str:
        name = self.route.name
        names = self.web.random_articles(15, "whatlinkshere", name)
        main = f"<h1>Pages that link to {html.escape(title_of(name))}</h1>"
        return self._wiki_page("What links here", main + self.article_list(names))

    def _wiki_about(self) -> str:
        main = f"<h1>{self.route.arg}</h1><p>This wiki is written by its readers.</p>"
        return self._wiki_page(self.route.arg, main)

    # --- news ----------------------------------------------------------------------
    def _news_header(self, next_path: str = "/") -> str:
        b = self.base
        nav = [self.a(f"{b}/", "Home")]
        nav += [self.a(f"{b}/section/{s}", s.title()) for s in SECTIONS]
        nav += [
            self.a(f"{b}/login?{urlencode({'next': next_path})}", "Log in"),
            self.a(f"{b}/subscribe", "Subscribe"),
        ]
        return " | ".join(nav)

    def _news_side(self, key: str) -> str:
        b = self.base
        most = self.web.random_articles(5, "mostread", self.host.name, key)
        tags = self.web.rng("tags", key).sample(TAG_WORDS, 10)
        cloud = " ".join(self.a(f"{b}/tag/{t}", t) for t in tags)
        return "<h3>Most read</h3>" + self.article_list(most) + f"<h3>Tags</h3><p>{cloud}</p>"

    def _news_footer(self) -> str:
        b = self.base
        return " | ".join(self.a(f"{b}/{p}", p.title()) for p in ("about", "contact", "subscribe"))

    def _news_page(self, title: str, main: str, key: str, next_path: str = "/") -> str:
        return self.doc(
            title, self._news_header(next_path), main, self._news_side(key), self._news_footer()
        )

    def _news_article(self) -> str:
        name = self.route.name
        path = self.web.article_path(name, self.host)
        b, port = self.base, self.web.port
        word = self.web.search_word(name)
        related = self.web.random_articles(6, "related", name)
        share = urlencode({"u": self.web.article_url(name)})
        extras = (
            f"<p>{self.a(f'{b}{path}?print=1', 'Print')} | "
            f"{self.a(f'{b}/amp{path}', 'AMP')} | "
            f"{self.a(f'{b}{path}?comments=1', 'Comments')} | "
            f"{self.a(f'http://{SHARE_NAME}:{port}/share?{share}', 'Share')} | "
            f"{self.a(b + '/search?' + urlencode({'q': word}), f'More on {word}')}</p>"
            f"<h3>Related articles</h3>{self.article_list(related)}"
        )
        main = f"<article>{self.content(name)}{self._archive(name, 'Source')}</article>{extras}"
        return self._news_page(title_of(name), main, name, path)

    def _news_print(self) -> str:
        name = self.route.name
        return self.doc(title_of(name), "", self.content(name), "", "")

    def _news_mobile(self) -> str:
        name = self.route.name
        return self.doc(title_of(name), self.a(f"{self.base}/", "Home"), self.content(name), "", "")

    def _news_comments(self) -> str:
        name = self.route.name
        rng = self.web.rng("comments", name)
        rows = [
            f"<p>{rng.choice(USERS)}: interesting, see also {self.article_link(other)}</p>"
            for other in self.web.random_articles(4, "comments", name)
        ]
        main = f"<h1>Comments on {html.escape(title_of(name))}</h1>" + "".join(rows)
        return self._news_page(f"Comments: {title_of(name)}", main, name)

    def _news_search(self) -> str:
        r = self.route
        pages = [
            (n, f"{self.base}/search?{urlencode({'q': r.arg, 'page': n})}")
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != r.page
        ]
        main = self._results(r.arg, r.page) + self.pager(pages)
        return self._news_page("Search", main, f"search-{r.arg}")

    def _news_login(self) -> str:
        main = "<h1>Log in</h1><form><input name='email'><input name='password'></form>"
        return self._news_page("Log in", main, "login")

    def _news_home(self) -> str:
        names = self.web.random_articles(30, "home", self.host.name)
        return self._news_page("Home", "<h1>Top stories</h1>" + self.article_list(names), "home")

    def _news_section(self) -> str:
        r = self.route
        names = self.web.random_articles(20, "section", self.host.name, r.arg, r.page)
        pages = [
            (n, f"{self.base}/section/{r.arg}?page={n}")
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != r.page
        ]
        main = f"<h1>{r.arg.title()}</h1>" + self.article_list(names) + self.pager(pages)
        return self._news_page(r.arg.title(), main, f"section-{r.arg}")

    def _news_tag(self) -> str:
        names = self.web.random_articles(15, "tag", self.host.name, self.route.arg)
        main = f"<h1>Tagged {self.route.arg}</h1>" + self.article_list(names)
        return self._news_page(self.route.arg, main, f"tag-{self.route.arg}")

    def _news_about(self) -> str:
        main = f"<h1>{self.route.arg.title()}</h1><p>An independent newsroom.</p>"
        return self._news_page(self.route.arg.title(), main, "about")

    # --- forum ---------------------------------------------------------------------
    def _forum_header(self) -> str:
        b = self.base
        nav = [self.a(f"{b}/", "Board index")]
        nav += [self.a(f"{b}/board/{x}", x.title()) for x in BOARDS]
        nav += [
            self.a(f"{b}/members", "Members"),
            self.a(f"{b}/faq", "FAQ"),
            self.a(f"{b}/ucp.php?{urlencode({'mode': 'login', 'redirect': 'index'})}", "Login"),
        ]
        return " | ".join(nav)

    def _forum_page(self, title: str, main: str, side: str = "") -> str:
        footer = self.a(f"{self.base}/faq", "FAQ") + " | Powered by a forum engine"
        return self.doc(title, self._forum_header(), main, side, footer)

    def _user_link(self, user: str) -> str:
        return self.a(f"{self.base}/user/{user}", user)

    def _thread_pager(self, name: str, current: int) -> str:
        path = self.web.article_path(name, self.host)
        pages = [
            (n, f"{self.base}{path}" + (f"?page={n}" if n > 1 else ""))
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != current
        ]
        return self.pager(pages)

    def _replies(self, name: str, page: int) -> str:
        rng = self.web.rng("replies", name, page)
        return "".join(
            f"<div class='post'>{self._user_link(rng.choice(USERS))} wrote: I read about "
            f"{self.article_link(other)} too.</div>"
            for other in self.web.random_articles(3, "replies", name, page)
        )

    def _forum_article(self) -> str:
        name = self.route.name
        path = self.web.article_path(name, self.host)
        author = self.web.rng("author", name).choice(USERS)
        similar = self.web.random_articles(5, "similar", name)
        word = self.web.search_word(name)
        main = (
            f"<div class='post'>Posted by {self._user_link(author)}<div class='content'>"
            f"{self.content(name)}</div></div>{self._replies(name, 1)}"
            f"{self._thread_pager(name, 1)}"
            f"<p>{self.a(f'{self.base}{path}?view=print', 'Print view')} | "
            f"{self.a(f'{self.base}/m{path}', 'Mobile')} | "
            f"{self.a(self.base + '/search.php?' + urlencode({'keywords': word}), 'Search')}</p>"
        )
        side = "<h3>Similar topics</h3>" + self.article_list(similar)
        return self._forum_page(title_of(name), main, side)

    def _forum_print(self) -> str:
        name = self.route.name
        return self.doc(title_of(name), "", self.content(name), "", "")

    def _forum_mobile(self) -> str:
        name = self.route.name
        return self.doc(
            title_of(name), self.a(f"{self.base}/", "Board index"), self.content(name), "", ""
        )

    def _forum_thread_page(self) -> str:
        name, page = self.route.name, self.route.page
        main = (
            f"<h1>Re: {html.escape(title_of(name))} (page {page})</h1>"
            f"{self._replies(name, page)}{self._thread_pager(name, page)}"
        )
        return self._forum_page(f"{title_of(name)} - page {page}", main)

    def _forum_user(self) -> str:
        user = self.route.arg
        posts = self.web.random_articles(5, "posts", self.host.name, user)
        main = f"<h1>Profile of {user}</h1><p>Recent posts:</p>" + self.article_list(posts)
        return self._forum_page(user, main)

    def _forum_members(self) -> str:
        page = self.route.page
        users = USERS[(page - 1) * 5 : page * 5] or USERS[:5]
        pages = [
            (n, f"{self.base}/members?page={n}")
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != page
        ]
        main = "<h1>Members</h1>" + " ".join(self._user_link(u) for u in users) + self.pager(pages)
        return self._forum_page("Members", main)

    def _forum_search(self) -> str:
        r = self.route
        pages = [
            (
                n,
                f"{self.base}/search.php?{urlencode({'keywords': r.arg, 'start': (n - 1) * 20})}",
            )
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != r.page
        ]
        return self._forum_page("Search", self._results(r.arg, r.page) + self.pager(pages))

    def _forum_login(self) -> str:
        main = "<h1>Login</h1><form><input name='username'><input name='password'></form>"
        return self._forum_page("Login", main)

    def _forum_home(self) -> str:
        b = self.base
        boards = "".join(f"<li>{self.a(f'{b}/board/{x}', x.title())}</li>" for x in BOARDS)
        latest = self.web.random_articles(10, "latest", self.host.name)
        main = f"<h1>Board index</h1><ul>{boards}</ul><h3>Latest topics</h3>"
        return self._forum_page("Board index", main + self.article_list(latest))

    def _forum_board(self) -> str:
        r = self.route
        threads = self.web.random_articles(25, "board", self.host.name, r.arg, r.page)
        pages = [
            (n, f"{self.base}/board/{r.arg}?page={n}")
            for n in range(1, MAX_LISTING_PAGES + 1)
            if n != r.page
        ]
        main = f"<h1>{r.arg.title()}</h1>" + self.article_list(threads) + self.pager(pages)
        return self._forum_page(r.arg.title(), main)

    def _forum_about(self) -> str:
        return self._forum_page("FAQ", "<h1>FAQ</h1><p>Be kind. Search before posting.</p>")


__all__ = [
    "ARTICLE",
    "CHROME",
    "CLASSES",
    "DUPLICATE",
    "EXTERNAL",
    "KINDS",
    "META",
    "MISSING",
    "NON_ARTICLE",
    "ROBOTS",
    "Host",
    "Page",
    "RealWeb",
]


def _keys(*names: str) -> frozenset[str]:
    return frozenset(names)


def _wiki_edit(web: RealWeb, host: Host, _rest: str, q: dict[str, str]) -> _Route | None:
    if q["action"] in ("edit", "history") and web._lives_here(q["title"], host):
        return _Route(META, q["action"], q["title"])
    return None


def _wiki_login(_web: RealWeb, _host: Host, _rest: str, q: dict[str, str]) -> _Route | None:
    return _Route(META, "login", q["returnto"]) if q["title"] == "Special:UserLogin" else None


def _wiki_special(web: RealWeb, host: Host, tail: str) -> _Route | None:
    if tail == "RecentChanges":
        return _Route(CHROME, "recent")
    name = tail.removeprefix("WhatLinksHere/")
    if tail.startswith("WhatLinksHere/") and web._lives_here(name, host):
        return _Route(CHROME, "whatlinkshere", name)
    return None


def _among(values: tuple[str, ...], build: Callable[[str], _Route]) -> _Build:
    """A builder for ``<prefix><value>`` pages, one for each of ``values``."""
    return lambda _web, _host, rest, _q: build(rest) if rest in values else None


def _fixed(route: _Route) -> _Build:
    return lambda _web, _host, _rest, _q: route


#: ``/wiki/<space>:<tail>`` pages by namespace: (web, host, tail) -> route or None.
_WIKI_SPACES: dict[str, Callable[[RealWeb, Host, str], _Route | None]] = {
    "Talk": lambda web, host, tail: (
        _Route(META, "talk", tail) if web._lives_here(tail, host) else None
    ),
    "User": lambda _web, _host, tail: _Route(META, "user", arg=tail) if tail in USERS else None,
    "Portal": lambda _web, _host, tail: (
        _Route(CHROME, "portal", arg=tail) if tail in PORTALS else None
    ),
    "Special": _wiki_special,
    "Project": lambda _web, _host, tail: (
        _Route(CHROME, "about", arg=tail)
        if tail in ("About", "Disclaimers", "Privacy", "Contact")
        else None
    ),
}

#: The query variants of an article page beyond print: (name, query) -> route or None.
_ARTICLE_EXTRA: dict[str, Callable[[str, dict[str, str]], _Route | None]] = {
    WIKI: lambda name, q: (
        _Route(DUPLICATE, "oldid", name, q["oldid"])
        if set(q) == {"oldid"} and q["oldid"].isdigit()
        else None
    ),
    NEWS: lambda name, q: _Route(META, "comments", name) if q == {"comments": "1"} else None,
    FORUM: lambda name, q: (
        _Route(META, "thread_page", name, page=int(q["page"]))
        if set(q) == {"page"} and q["page"].isdigit() and 2 <= int(q["page"]) <= MAX_LISTING_PAGES
        else None
    ),
}

#: The pages of each site kind that are no article, first matching rule wins.
_RULES: dict[str, tuple[_Rule, ...]] = {
    WIKI: (
        _Rule(
            "/w/index.php",
            lambda web, _host, _rest, q: web._listing(
                META, "search", q["search"], q, key="offset", step=RESULTS_PER_PAGE
            ),
            _keys("search"),
            _keys("search", "offset"),
        ),
        _Rule("/w/index.php", _wiki_edit, _keys("title", "action"), _keys("title", "action")),
        _Rule("/w/index.php", _wiki_login, _keys("title", "returnto"), _keys("title", "returnto")),
        _Rule("/wiki/", lambda web, host, rest, _q: web._wiki_page(host, rest), prefix=True),
    ),
    NEWS: (
        _Rule("/", _fixed(_Route(CHROME, "home"))),
        _Rule(
            "/section/",
            lambda web, _host, rest, q: (
                web._listing(CHROME, "section", rest, q, key="page") if rest in SECTIONS else None
            ),
            allowed=_keys("page"),
            prefix=True,
        ),
        _Rule("/tag/", _among(TAG_WORDS, lambda tag: _Route(CHROME, "tag", arg=tag)), prefix=True),
        _Rule(
            "/search",
            lambda web, _host, _rest, q: web._listing(META, "search", q["q"], q, key="page"),
            _keys("q"),
            _keys("q", "page"),
        ),
        _Rule(
            "/login",
            lambda _web, _host, _rest, q: _Route(META, "login", arg=q["next"]),
            _keys("next"),
            _keys("next"),
        ),
        _Rule("/subscribe", _fixed(_Route(META, "about", arg="subscribe"))),
        _Rule("/about", _fixed(_Route(CHROME, "about", arg="about"))),
        _Rule("/contact", _fixed(_Route(CHROME, "about", arg="contact"))),
    ),
    FORUM: (
        _Rule("/", _fixed(_Route(CHROME, "home"))),
        _Rule(
            "/board/",
            lambda web, _host, rest, q: (
                web._listing(CHROME, "board", rest, q, key="page") if rest in BOARDS else None
            ),
            allowed=_keys("page"),
            prefix=True,
        ),
        _Rule("/user/", _among(USERS, lambda user: _Route(META, "user", arg=user)), prefix=True),
        _Rule(
            "/members",
            lambda web, _host, _rest, q: web._listing(META, "members", "", q, key="page"),
            allowed=_keys("page"),
        ),
        _Rule(
            "/search.php",
            lambda web, _host, _rest, q: web._listing(
                META, "search", q["keywords"], q, key="start", step=RESULTS_PER_PAGE
            ),
            _keys("keywords"),
            _keys("keywords", "start"),
        ),
        _Rule(
            "/ucp.php",
            lambda _web, _host, _rest, q: (
                _Route(META, "login", arg=q["redirect"]) if q["mode"] == "login" else None
            ),
            _keys("mode", "redirect"),
            _keys("mode", "redirect"),
        ),
        _Rule("/faq", _fixed(_Route(CHROME, "about", arg="faq"))),
    ),
}
