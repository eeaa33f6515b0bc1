"""A deterministic, labelled, bilingual website to crawl offline.

The site has one folder per subject (``/chemistry/p0012.html``, ``/sports/p0100.html``),
paginated hub pages (``/hub/chemistry-2.html``) that list a subject's *main* pages, a
home page ``/`` that links every first hub, a ``/private/`` page that robots.txt
disallows, ``/robots.txt`` and ``/labels.tsv`` (wikispeedia's format).

Tunnels (figure 2 of Liu, Xia & Xu 2010: A -> C -> F): about a quarter of each subject's
pages sit in *clusters* that no page of their own subject (nor any hub) links to. The only
way in is a chain ``main page of S -> 1..3 tunnel pages of other subjects -> cluster``,
where the anchors along the chain are off-topic and the anchor into the cluster is
(mostly) on-topic. :meth:`Site.tunnel_targets` computes these pages from the link graph.

Pure Python, no Scrapy: the same seed gives a byte-identical site.
"""

from __future__ import annotations

import html
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from focused.defaults import SANDBOX_MIN_PAGES
from focused.web.sandbox import hostile
from focused.web.sandbox.vocab import (
    FILLER_EN,
    FILLER_ZH,
    HUB_CATEGORY,
    PRIVATE_CATEGORY,
    SUBJECTS,
    UNINFORMATIVE,
    WEIGHTS,
    Subject,
)

#: "hostile": the normal site plus the hostile corner of :mod:`focused.web.sandbox.hostile`
MODES = ("normal", "hostile")
MIN_PAGES = SANDBOX_MIN_PAGES  # the settings check's bound too (FOCUSED_SANDBOX_PAGES)
HUB_SIZE = 30  # main pages listed per hub page
CLUSTER_SHARE = 0.25  # share of a subject's pages that sit behind a tunnel
CLUSTER_SIZE = (4, 12)
TUNNEL_SHARE = 0.06  # share of a subject's pages reserved as tunnel pages
TUNNEL_HOPS = (1, 3)  # irrelevant pages between a subject page and its cluster
CORE_TITLE_RATE = 0.8  # share of titles that start with the subject's core words
# body text: the subject's title words, its body-only words (near-misses), filler words;
# the rest are other subjects' words
TITLE_WORD_SHARE, BODY_WORD_SHARE, FILLER_SHARE = 0.45, 0.12, 0.33
UNINFORMATIVE_RATE = 0.12  # share of ordinary anchors replaced by "click here" & co.

HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
TSV_TYPE = "text/tab-separated-values; charset=utf-8"
PRIVATE_PATH = "/private/lab-notes.html"
ROBOTS_TXT = b"User-agent: *\nDisallow: /private/\n"


@dataclass(slots=True)
class _Page:
    path: str
    title: str
    category: str
    subject: Subject | None = None
    paragraphs: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (href, anchor text)


@dataclass
class Site:
    """A generated website: bodies, content types, labels and the link graph."""

    seed: int
    mode: str
    pages: dict[str, bytes]  # URL path -> body (HTML pages, /robots.txt, /labels.tsv)
    content_types: dict[str, str]
    labels: dict[str, list[str]]  # HTML path -> categories
    links: dict[str, list[str]]  # HTML path -> linked paths (absolute, in page order)
    titles: dict[str, str]
    hubs: dict[str, list[str]]  # subject slug -> its hub pages in order
    # answers the requests it knows (hostile mode's dynamic cases); True when it did
    responder: Callable[[BaseHTTPRequestHandler, bool], bool] | None = field(
        default=None, repr=False
    )

    def targets(self, prefix: str) -> set[str]:
        """Paths with a category that starts with ``prefix``."""
        return {p for p, cats in self.labels.items() if any(c.startswith(prefix) for c in cats)}

    def seeds(self, prefix: str) -> list[str]:
        """Sensible seed paths for a topic: the home page and its subjects' first hubs."""
        found = [
            hubs[0]
            for slug, hubs in self.hubs.items()
            if _subject(slug).category.startswith(prefix)
            or prefix.startswith(_subject(slug).category)
        ]
        return ["/", *found]

    def reachable(self, start: Iterable[str] = ("/",), through: set[str] | None = None) -> set[str]:
        """Paths reachable from ``start``; when ``through`` is given, only pages in it are
        expanded (others are reached but their links not followed)."""
        seen = set(start)
        queue = deque(seen)
        while queue:
            path = queue.popleft()
            if through is not None and path not in through:
                continue
            for nxt in self.links.get(path, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def tunnel_targets(self, prefix: str) -> set[str]:
        """Targets of ``prefix`` that no path from ``/`` reaches without passing through
        a page that is neither a target nor a hub (the tunnel case of Liu, Xia & Xu 2010)."""
        targets = self.targets(prefix)
        hubs = self.targets(HUB_CATEGORY)
        return targets - self.reachable(["/"], through=targets | hubs)

    def labels_tsv(self) -> bytes:
        """The labels in wikispeedia's ``labels.tsv`` format."""
        rows = ["# path\tcategory (one row per category; a page may have several)"]
        rows += [f"{p}\t{c}" for p in sorted(self.labels) for c in self.labels[p]]
        return ("\n".join(rows) + "\n").encode()


def _subject(slug: str) -> Subject:
    return next(s for s in SUBJECTS if s.slug == slug)


class _Writer:
    """Draws titles, text and anchors from one seeded random generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        # one weighted word pool per subject and language
        self.pools: dict[tuple[str, str], tuple[list[str], list[float]]] = {}
        for s in SUBJECTS:
            for lang in ("en", "zh"):
                titled = getattr(s, f"title_{lang}")
                extra = getattr(s, f"body_{lang}")
                filler = FILLER_EN if lang == "en" else FILLER_ZH
                other = [w for o in SUBJECTS if o is not s for w in getattr(o, f"title_{lang}")]
                words = [*titled, *extra, *filler, *other]
                # title words by Zipf's law (the vocabularies list core words first)
                zipf = [1 / rank for rank in range(1, len(titled) + 1)]
                weights = [TITLE_WORD_SHARE * z / sum(zipf) for z in zipf]
                weights += [BODY_WORD_SHARE / len(extra)] * len(extra)
                weights += [FILLER_SHARE / len(filler)] * len(filler)
                rest = 1 - TITLE_WORD_SHARE - BODY_WORD_SHARE - FILLER_SHARE
                weights += [rest / len(other)] * len(other)
                cum, total = [], 0.0
                for w in weights:
                    total += w
                    cum.append(total)
                self.pools[s.slug, lang] = (words, cum)

    def _pick(self, words: tuple[str, ...], k: int) -> list[str]:
        """``k`` distinct words, earlier (core) words more likely (Zipf)."""
        picked: list[str] = []
        weights = [1 / rank for rank in range(1, len(words) + 1)]
        while len(picked) < k:
            word = self.rng.choices(words, weights)[0]
            if word not in picked:
                picked.append(word)
        return picked

    def title(self, s: Subject) -> str:
        """Subject words only; the subject's core words (its first ones) lead most titles."""
        core = self.rng.random() < CORE_TITLE_RATE
        zh = self._pick(s.title_zh[core:], self.rng.randint(1, 2) - core)
        en = self._pick(s.title_en[core:], self.rng.randint(2, 3) - core)
        if core:
            zh, en = [s.title_zh[0], *zh], [s.title_en[0], *en]
        return " ".join(zh + en)

    def sentence(self, s: Subject, lang: str) -> str:
        words, cum = self.pools[s.slug, lang]
        drawn = self.rng.choices(words, cum_weights=cum, k=self.rng.randint(8, 18))
        if lang == "zh":
            return "".join(drawn) + "。"
        return " ".join(drawn).capitalize() + "."

    def paragraphs(self, s: Subject) -> list[str]:
        return [
            self.sentence(s, "zh") + " " + self.sentence(s, "en") + " " + self.sentence(s, "en")
            for _ in range(self.rng.randint(3, 5))
        ]

    def anchor(self, title: str) -> str:
        """The target's title, a part of it, or (sometimes) an uninformative phrase."""
        roll = self.rng.random()
        if roll < UNINFORMATIVE_RATE:
            return self.rng.choice(UNINFORMATIVE)
        words = title.split()
        if roll < 0.5 or len(words) <= 2:
            return title
        return " ".join(self.rng.sample(words, 2))


def _render(page: _Page) -> bytes:
    esc = html.escape
    paras = "\n".join(f"<p>{esc(p)}</p>" for p in page.paragraphs)
    items = "\n".join(f'<li><a href="{esc(h)}">{esc(a)}</a></li>' for h, a in page.links)
    return (
        '<!DOCTYPE html>\n<html lang="zh">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{esc(page.title)}</title>\n</head>\n<body>\n<h1>{esc(page.title)}</h1>\n"
        f"{paras}\n<ul>\n{items}\n</ul>\n</body>\n</html>\n"
    ).encode()


def _split(total: int) -> dict[str, int]:
    """Content pages per subject, in proportion to :data:`WEIGHTS`, summing to total."""
    counts = {s.slug: int(total * WEIGHTS[s.slug]) for s in SUBJECTS}
    counts[SUBJECTS[0].slug] += total - sum(counts.values())
    return counts


def generate_site(seed: int = 7, pages: int = 600, mode: str = "normal") -> Site:
    """Generate the sandbox web: about ``pages`` HTML pages, deterministic in ``seed``."""
    if mode not in MODES:
        raise ValueError(f"unknown sandbox mode {mode!r} (known: {', '.join(MODES)})")
    if pages < MIN_PAGES:
        raise ValueError(f"a sandbox needs at least {MIN_PAGES} pages, got {pages}")
    # the hostile site is the normal one plus its hostile corner: same random stream
    builder = _Builder(random.Random(f"focused-sandbox/{seed}/{pages}/normal"))
    # budget: home + private + hubs + content pages
    n_hubs = len(SUBJECTS) + int(pages * (1 - CLUSTER_SHARE - TUNNEL_SHARE) / HUB_SIZE)
    counts = _split(pages - 2 - n_hubs)
    # the steps draw from one random stream: their order is part of the site
    for s in SUBJECTS:
        builder.content_pages(s, counts[s.slug])
    builder.tunnels()
    builder.ordinary_links()
    home, hubs = builder.hub_pages()
    builder.private_page(home, hubs)
    if mode == "hostile":
        home.links.append((hostile.INDEX, hostile.INDEX_ANCHOR))

    site = _build(seed, mode, builder.out, hubs)
    if mode == "hostile":
        hostile.install(site)
    return site


class _Builder:
    """The pages of one sandbox and their links, drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.writer = _Writer(rng)
        self.out: dict[str, _Page] = {}
        self.main: dict[str, list[str]] = {}  # slug -> pages listed on hubs and linked freely
        self.spare: dict[str, list[str]] = {}  # slug -> dedicated tunnel pages
        self.clusters: list[tuple[Subject, list[str]]] = []
        self.hops: list[str] = []  # tunnel pages, in the order the tunnels pass them

    def link(self, src: str, dst: str, anchor: str | None = None) -> None:
        text = anchor if anchor is not None else self.writer.anchor(self.out[dst].title)
        self.out[src].links.append((dst, text))

    def content_pages(self, s: Subject, n: int) -> None:
        """``n`` pages of subject ``s``, shuffled into clusters, tunnel pages and main
        pages."""
        rng, writer = self.rng, self.writer
        width = max(4, len(str(n)))
        paths = [f"/{s.slug}/p{i:0{width}d}.html" for i in range(1, n + 1)]
        for p in paths:
            self.out[p] = _Page(p, writer.title(s), s.category, s, writer.paragraphs(s))
        order = paths[:]
        rng.shuffle(order)  # roles do not show in the URL
        k = max(CLUSTER_SIZE[0], int(n * CLUSTER_SHARE))
        t = math.ceil(n * TUNNEL_SHARE)
        pool, self.spare[s.slug], self.main[s.slug] = order[:k], order[k : k + t], order[k + t :]
        while pool:  # cut the reserved pages into clusters
            size = rng.randint(*CLUSTER_SIZE)
            if len(pool) - size < CLUSTER_SIZE[0]:
                size = len(pool)
            self.clusters.append((s, pool[:size]))
            del pool[:size]

    def tunnels(self) -> None:
        """Tunnels: subject page -> 1..3 dedicated off-topic pages -> cluster."""
        for s, members in self.clusters:
            self._tunnel_into(s, members)
            self._cluster_links(members)
        for s in SUBJECTS:  # unused tunnel pages become ordinary pages
            self.main[s.slug] = sorted(self.main[s.slug] + self.spare[s.slug])

    def _tunnel_into(self, s: Subject, members: list[str]) -> None:
        rng, out, main, spare = self.rng, self.out, self.main, self.spare
        chain = [rng.choice(main[s.slug])]
        for _ in range(rng.randint(*TUNNEL_HOPS)):
            other = rng.choice([o for o in SUBJECTS if o is not s])
            # a dedicated page if one is left, else an ordinary off-topic page
            hop = spare[other.slug].pop() if spare[other.slug] else rng.choice(main[other.slug])
            chain.append(hop)
            self.hops.append(hop)
        for a, b in itertools.pairwise(chain):
            self.link(a, b, out[b].title)  # the off-topic title: an irrelevant anchor
        head = members[0]
        into = rng.choice(UNINFORMATIVE) if rng.random() < 0.25 else out[head].title
        self.link(chain[-1], head, into)

    def _cluster_links(self, members: list[str]) -> None:
        """Inside a cluster: a ring plus random chords, and one link back out."""
        rng = self.rng
        for i, p in enumerate(members):
            self.link(p, members[(i + 1) % len(members)])
            for q in rng.sample(members, min(2, len(members))):
                if q != p:
                    self.link(p, q)
            self.link(p, rng.choice(self.main[rng.choice(SUBJECTS).slug]))

    def ordinary_links(self) -> None:
        """Ordinary links between main pages; tunnel pages link on into their subject too."""
        rng = self.rng
        all_main = [p for s in SUBJECTS for p in self.main[s.slug]]
        for p in dict.fromkeys(self.hops):
            own = self.main[self.out[p].subject.slug]  # type: ignore[union-attr]
            for q in rng.sample(own, min(2, len(own))):
                self.link(p, q)
        for s in SUBJECTS:
            self._main_links(s, all_main)

    def _main_links(self, s: Subject, all_main: list[str]) -> None:
        rng, out = self.rng, self.out
        own = self.main[s.slug]
        for i, p in enumerate(own):
            for q in rng.sample(own, min(len(own), rng.randint(3, 6))):
                if q != p:
                    self.link(p, q)
            for q in rng.sample(all_main, rng.randint(1, 3)):
                if out[q].subject is not s:
                    self.link(p, q)
            if i + 1 < len(own):
                nxt = own[i + 1].rsplit("/", 1)[1]  # a relative href
                out[p].links.append((nxt, rng.choice(["下一页", "next page", "更多", "next"])))

    def hub_pages(self) -> tuple[_Page, dict[str, list[str]]]:
        """The home page and the hubs: paginated lists of each subject's main pages."""
        hubs: dict[str, list[str]] = {}
        home = _Page("/", "Sandbox web 沙盒网站 — home 首页", HUB_CATEGORY)
        home.paragraphs = ["欢迎访问沙盒网站。Welcome to the sandbox web: a small labelled site."]
        for s in SUBJECTS:
            hubs[s.slug] = self._subject_hubs(s, home)
        return home, hubs

    def _subject_hubs(self, s: Subject, home: _Page) -> list[str]:
        """Subject ``s``'s hub pages (their paths, in order), linked from ``home``."""
        rng, out = self.rng, self.out
        own = self.main[s.slug]
        chunks = [own[i : i + HUB_SIZE] for i in range(0, len(own), HUB_SIZE)] or [[]]
        names = [f"/hub/{s.slug}.html"] + [
            f"/hub/{s.slug}-{k}.html" for k in range(2, len(chunks) + 1)
        ]
        for k, (name, chunk) in enumerate(zip(names, chunks, strict=True)):
            hub = _Page(name, f"{s.name_zh} {s.name_en} 目录 index {k + 1}", HUB_CATEGORY)
            hub.paragraphs = [f"{s.name_zh}页面目录。Index of {s.name_en} pages."]
            hub.links = [(q, out[q].title) for q in chunk]
            if k + 1 < len(names):
                hub.links.append((names[k + 1].removeprefix("/hub/"), "下一页 next page"))
            hub.links.append(("/", "首页 home"))
            out[name] = hub
        home.links.append((names[0], f"{s.name_zh} {s.name_en}"))
        for q in rng.sample(own, min(3, len(own))):
            home.links.append((q, out[q].title))
        for q in own[:: max(1, len(own) // 3)][:3]:
            self.link(q, names[0], rng.choice(["返回目录", "back to index", "目录"]))
        return names

    def private_page(self, home: _Page, hubs: dict[str, list[str]]) -> None:
        """The page robots.txt disallows, linked from home and the first chemistry hub;
        files the home page too."""
        out = self.out
        home.links.append((PRIVATE_PATH, "内部资料 private notes"))
        out["/"] = home
        private = _Page(PRIVATE_PATH, "化学 chemistry 实验室 lab notes", PRIVATE_CATEGORY)
        private.paragraphs = ["内部资料,请勿抓取。Private: robots.txt disallows this page."]
        private.links = [("/", "首页 home")]
        out[PRIVATE_PATH] = private
        out[hubs["chemistry"][0]].links.insert(0, (PRIVATE_PATH, "实验室 lab notes"))


def _build(seed: int, mode: str, out: dict[str, _Page], hubs: dict[str, list[str]]) -> Site:
    bodies: dict[str, bytes] = {}
    types: dict[str, str] = {}
    links: dict[str, list[str]] = {}
    for path in sorted(out):
        page = out[path]
        bodies[path] = _render(page)
        types[path] = HTML_TYPE
        base = path.rsplit("/", 1)[0] + "/"
        links[path] = [h if h.startswith("/") else base + h for h, _ in page.links]
    site = Site(
        seed=seed,
        mode=mode,
        pages=bodies,
        content_types=types,
        labels={p: [out[p].category] for p in sorted(out)},
        links=links,
        titles={p: out[p].title for p in sorted(out)},
        hubs=hubs,
    )
    site.pages["/robots.txt"] = ROBOTS_TXT
    site.content_types["/robots.txt"] = TEXT_TYPE
    site.pages["/labels.tsv"] = site.labels_tsv()
    site.content_types["/labels.tsv"] = TSV_TYPE
    return site
