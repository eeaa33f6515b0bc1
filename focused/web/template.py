"""A page's main content, apart from its site's chrome, learnt online per host.

A real site wraps each article in the same chrome: a navigation bar, a tools box (Talk,
edit, history, log in), sidebars, a footer. Scored on all of a page's text, the chrome
words mislead the page's relevance; followed like the article's own links, the chrome
links (the same few pages, or one Talk page per article) eat the crawl's budget.

This module splits a parsed page (an lxml tree, as Scrapy's ``response.selector.root``)
into *blocks* and tells chrome blocks from content blocks, with no library beyond lxml
and no model:

- a block is the text and links whose nearest container element (:data:`CONTAINERS`:
  ``div``, ``p``, ``ul``, ``table``, ``nav``, ...) is the same; a list item or a table
  cell belongs to its list or table, so a navigation list is one block and a page's own
  list of links is another (below :data:`MAX_DEPTH` containers, deeper ones belong to
  their ancestor's block). A block's key is a 64-bit hash of its container path (tags,
  ids and classes from ``body`` down) and its own text (its hrefs when it has no text).
- a block is *chrome* when its container, or one above it, says so (``nav``, ``footer``,
  ``aside``; ``role="navigation"``, ``"contentinfo"``, ``"complementary"``,
  ``"banner"``; an id or class token such as ``navbar``, ``sidebar``, ``footer``: see
  :data:`CHROME_TOKENS`), known from a host's first page on; or when the same key was
  seen on at least ``min_pages`` earlier pages of the host (:class:`HostTemplates`, the
  template learnt during the crawl) and the block holds a link or at least
  :data:`MIN_TEMPLATE_WORDS` words: a repeated one-word heading ("Overview", "See also")
  stays content, so a clean site's text is never changed. Sites that run the same
  software share their chrome (the same navigation, with the same words, in the same
  containers), so a block that became template on ``shared_hosts`` other hosts is
  chrome on a host's first page too. An article copied to other hosts is seen once on
  each, never repeated within one, so it never becomes template anywhere.
- the page's *content text* is the text of its content blocks, in document order; a
  page with no chrome block gets exactly the text of the spider's ``//body//text()``
  query (script and style left out), so clean sites score as before.
- a link is *chrome* when every anchor with its URL on the page stands in a chrome block
  (a URL also found in the content is a content link).

Why not a boilerplate-removal library (trafilatura, jusText, readability-lxml,
resiliparse): measured in ``docs/content.md``, they cost 5 to 60 times the CPU per page of
this one walk (which parses nothing: it reads the tree Scrapy already built), they need
a whole page to decide and some drop a short article outright, and none tells which
*links* are chrome, which the crawl needs most. The price of learning online is that a
host's first pages (before ``min_pages``) keep the chrome the markup does not name.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import mmh3
from lxml import etree

from focused.bounded import recent

#: Elements that open a block of their own.
CONTAINERS = frozenset(
    (
        "body",
        "div",
        "nav",
        "header",
        "footer",
        "aside",
        "section",
        "article",
        "main",
        "ul",
        "ol",
        "dl",
        "table",
        "form",
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "pre",
        "figure",
        "details",
        "menu",
        "center",
    )
)
#: The elements that name a page a crawl follows, and the attribute that names it.
LINK_ATTRS = {"a": "href", "iframe": "src", "frame": "src"}
#: Elements whose text is not text (as the spider's ``BODY_TEXT`` query leaves them out).
SKIPPED = frozenset(("script", "style"))
#: Containers that are chrome by their tag.
CHROME_TAGS = frozenset(("nav", "footer", "aside", "menu"))
#: ARIA landmark roles of chrome.
CHROME_ROLES = frozenset(("navigation", "contentinfo", "complementary", "banner", "search"))
#: An id or class token (split on spaces, ``-`` and ``_``) that names chrome.
CHROME_TOKENS = frozenset(
    (
        "nav",
        "navbar",
        "navigation",
        "menu",
        "menubar",
        "footer",
        "sidebar",
        "breadcrumb",
        "breadcrumbs",
        "toolbar",
        "topbar",
        "masthead",
        "cookie",
        "cookies",
        "share",
        "social",
        "sitenotice",
        "personal",
    )
)
#: A repeated block is template only with a link or at least this many words.
MIN_TEMPLATE_WORDS = 5
#: ... or at least this many links.
MIN_TEMPLATE_LINKS = 2
#: Pages of a host a block must have been seen on (before this one) to be template.
MIN_PAGES = 3
#: Containers nested deeper than this open no block of their own (a hostile page nests
#: thousands of ``div`` s).
MAX_DEPTH = 64
#: Distinct block keys remembered per host, and hosts remembered (least recent dropped).
MAX_KEYS_PER_HOST = 20_000
MAX_HOSTS = 2_000
#: A block that is template on this many other hosts is template on a host's first page
#: too (``FOCUSED_TEMPLATE_SHARED_HOSTS``; 0: each host learns its own).
SHARED_HOSTS = 2
#: Block keys whose template hosts are counted (the count stops growing when full).
MAX_SHARED_KEYS = 200_000

_TOKEN_SPLIT = re.compile(r"[\s_\-]+")


@dataclass(slots=True)
class Block:
    """The text and links of one container element of a page (not its sub-containers)."""

    path: int  # hash of the container path: tags, ids and classes from the body down
    hinted: bool  # chrome by its markup (its container or one above)
    depth: int = 0
    texts: list[str] = field(default_factory=list)
    hrefs: list[str] = field(default_factory=list)
    chrome: bool = False
    _key: int | None = None
    _words: int = 0
    #: ``texts`` with white space folded (``" ".join(t.split())``), when the walk made them
    folded: list[str] | None = None

    def key(self) -> int:
        """64-bit key of the block: its path and its own text (hrefs with no text)."""
        if self._key is None:
            self._norm()
        return self._key  # type: ignore[return-value]

    def words(self) -> int:
        if self._key is None:
            self._norm()
        return self._words

    def _norm(self) -> None:
        folded = self.folded
        if folded is not None and len(folded) == len(self.texts):
            # the same words as " ".join(self.texts).split(), each piece split once
            text = " ".join([f for f in folded if f])
            n = text.count(" ") + 1 if text else 0
        else:
            words = " ".join(self.texts).split()
            text, n = " ".join(words), len(words)
        own = text if n else "\x01" + "\x00".join(self.hrefs)
        self._words = n
        self._key = mmh3.hash64(f"{self.path:x}\x00{own}", signed=False)[0]


@dataclass(slots=True)
class Page:
    """A page split into blocks; ``parts`` are its text nodes as (block index, text)."""

    blocks: list[Block]
    parts: list[tuple[int, str]]
    #: the text of each part with white space folded (``" ".join(t.split())``); None:
    #: folded when first needed
    folded: list[str] | None = None

    @property
    def has_chrome(self) -> bool:
        return any(b.chrome for b in self.blocks)

    def content_text(self) -> str:
        """The text of the content blocks, text nodes joined by spaces in page order."""
        blocks = self.blocks
        return " ".join(t for i, t in self.parts if not blocks[i].chrome)

    def content_words(self) -> int:
        """``len(self.content_text().split())``, from the blocks' word counts (the walk
        split each text node once already; :meth:`content_text` joins them by spaces, so
        no word spans two of them)."""
        return sum(b.words() for b in self.blocks if not b.chrome)

    def content_parts(self) -> list[str]:
        """The text nodes of the content blocks, in page order."""
        blocks = self.blocks
        return [t for i, t in self.parts if not blocks[i].chrome]

    def content_folded(self) -> list[str]:
        """:meth:`content_parts` with white space folded (``" ".join(t.split())``)."""
        folded = self.folded
        if folded is None or len(folded) != len(self.parts):
            folded = self.folded = [" ".join(t.split()) for _, t in self.parts]
        blocks = self.blocks
        return [f for (i, _), f in zip(self.parts, folded, strict=True) if not blocks[i].chrome]

    def chrome_text(self) -> str:
        blocks = self.blocks
        return " ".join(t for i, t in self.parts if blocks[i].chrome)

    def chrome_hrefs(self) -> set[str]:
        """Hrefs (as written) found only in chrome blocks."""
        chrome: set[str] = set()
        content: set[str] = set()
        for b in self.blocks:
            (chrome if b.chrome else content).update(b.hrefs)
        return chrome - content

    def block_keys(self) -> set[int]:
        """Keys of the blocks a template can hold (text or links)."""
        return {b.key() for b in self.blocks if b.texts or b.hrefs}


def _describe(el: etree._Element, tag: str) -> tuple[str, bool]:
    """The element's path step (``tag#id.class``) and whether its markup names chrome."""
    get = el.get
    ident, cls = get("id") or "", get("class") or ""
    step = tag
    if ident:
        step += "#" + ident
    if cls:
        step += "." + ".".join(cls.split())
    hinted = tag in CHROME_TAGS or (get("role") or "").strip().lower() in CHROME_ROLES
    if not hinted and (ident or cls):
        tokens = _TOKEN_SPLIT.split(f"{ident} {cls}".lower())
        hinted = not CHROME_TOKENS.isdisjoint(tokens)
    return step, hinted


def _step_hash(parent: int, step: str) -> int:
    return mmh3.hash64(f"{parent:x}/{step}", signed=False)[0]


def split_page(root: etree._Element) -> Page:
    """Split the ``body`` of an lxml HTML tree into :class:`Block` s, in one walk."""
    body = root if root.tag == "body" else root.find("body")
    if body is None:
        found = root.xpath("//body")
        body = found[0] if found else None
    if body is None:
        return Page([], [])
    return _Walk(body).page


class _Walk:
    """One walk of a ``body`` (start and end events): blocks and text nodes in order."""

    def __init__(self, body: etree._Element) -> None:
        step, hinted = _describe(body, "body")
        self.blocks = [Block(_step_hash(0, step), hinted)]
        self.parts: list[tuple[int, str]] = []
        self.current = 0
        self.stack: list[tuple[etree._Element, int]] = [(body, -1)]  # open containers
        self.skipping = 0  # depth inside script/style
        walk = etree.iterwalk(body, events=("start", "end", "comment", "pi"))
        next(walk)  # the body's own start
        if body.text:
            self.parts.append((0, body.text))
        for event, el in walk:
            if event == "start":
                self._start(el)
            elif event != "end":  # a comment or a processing instruction: its tail
                if el.tail and not self.skipping:
                    self.parts.append((self.current, el.tail))
            elif self._end(el):
                break
        blocks = self.blocks
        # white space folded once per text node: for the block keys and SimHash's pieces
        folded = [" ".join(text.split()) for _, text in self.parts]
        for b in blocks:
            b.folded = []
        for (i, text), f in zip(self.parts, folded, strict=True):
            b = blocks[i]
            b.texts.append(text)
            b.folded.append(f)  # type: ignore[union-attr]
        self.page = Page(blocks, self.parts, folded)

    def _start(self, el: etree._Element) -> None:
        tag = el.tag
        if self.skipping:
            if tag in SKIPPED:
                self.skipping += 1
            return
        if tag in CONTAINERS and self.blocks[self.current].depth < MAX_DEPTH:
            step, hinted = _describe(el, tag)
            parent = self.blocks[self.current]
            path = _step_hash(parent.path, step)
            self.blocks.append(Block(path, hinted or parent.hinted, parent.depth + 1))
            self.stack.append((el, self.current))
            self.current = len(self.blocks) - 1
        elif tag in LINK_ATTRS:  # a frame's page is a link of its block, as an <a>'s
            href = el.get(LINK_ATTRS[tag])
            if href:
                self.blocks[self.current].hrefs.append(href)
        elif tag in SKIPPED:
            self.skipping = 1
            return
        text = el.text
        if text:
            self.parts.append((self.current, text))

    def _end(self, el: etree._Element) -> bool:
        """The end of ``el``; True at the end of the body (its tail is not in it)."""
        if self.skipping:  # the end of an element inside script/style, or of one
            if el.tag in SKIPPED:
                self.skipping -= 1
            if self.skipping:
                return False
        elif el is self.stack[-1][0]:
            self.current = self.stack.pop()[1]
            if self.current < 0:
                return True
        tail = el.tail
        if tail:
            self.parts.append((self.current, tail))
        return False


class HostTemplates:
    """Block keys counted per host over the pages seen: a host's template, learnt online.

    Bounded: at most ``max_keys`` keys per host (a full host learns no new keys; its
    template is seen on its first pages) and ``max_hosts`` hosts, the least recently seen
    host forgotten first.
    """

    def __init__(
        self,
        min_pages: int = MIN_PAGES,
        *,
        shared_hosts: int = SHARED_HOSTS,
        max_keys: int = MAX_KEYS_PER_HOST,
        max_hosts: int = MAX_HOSTS,
        max_shared_keys: int = MAX_SHARED_KEYS,
        min_words: int = MIN_TEMPLATE_WORDS,
    ) -> None:
        if min_pages < 1:
            raise ValueError(f"min_pages must be at least 1, got {min_pages}")
        if shared_hosts < 0:
            raise ValueError(f"shared_hosts must be at least 0, got {shared_hosts}")
        self.min_pages = min_pages
        self.shared_hosts = shared_hosts
        self.max_keys = max_keys
        self.max_hosts = max_hosts
        self.max_shared_keys = max_shared_keys
        self.min_words = min_words
        self._hosts: OrderedDict[str, dict[int, int]] = OrderedDict()
        #: block key -> hosts on which it became template (``shared_hosts`` > 0)
        self._shared: dict[int, int] = {}

    def classify(self, host: str, page: Page) -> Page:
        """Mark ``page``'s chrome blocks (markup, template of ``host``, or template on
        ``shared_hosts`` other hosts); returns it."""
        counts = self._hosts.get(host)
        shared = self._shared if self.shared_hosts else None
        if not counts and not shared:
            for b in page.blocks:
                if b.hinted:
                    b.chrome = True
            return page
        counts = counts or {}
        need, hosts = self.min_pages, self.shared_hosts
        for b in page.blocks:
            if b.hinted:
                b.chrome = True
            elif len(b.hrefs) >= MIN_TEMPLATE_LINKS or b.words() >= self.min_words:
                k = b.key()
                n = counts.get(k, 0)
                # a host's own template, else the template of enough other hosts (this
                # host's count is below ``need``, so it is none of those hosts)
                b.chrome = n >= need or (shared is not None and shared.get(k, 0) >= hosts)
        return page

    def learn(self, host: str, page: Page) -> None:
        """Count ``page``'s blocks as seen once more on ``host``."""
        counts = recent(self._hosts, host, dict, self.max_hosts)
        full = len(counts) >= self.max_keys
        need = self.min_pages
        shared = self._shared if self.shared_hosts else None
        for k in page.block_keys():
            n = counts.get(k)
            if n is not None:
                counts[k] = n + 1
                if n + 1 == need and shared is not None:
                    self._count_shared(shared, k)
            elif not full:
                counts[k] = 1
                if need == 1 and shared is not None:
                    self._count_shared(shared, k)

    def _count_shared(self, shared: dict[int, int], key: int) -> None:
        """One more host on which ``key`` is template (new keys stop when full)."""
        n = shared.get(key)
        if n is not None:
            shared[key] = n + 1
        elif len(shared) < self.max_shared_keys:
            shared[key] = 1

    def hosts(self) -> int:
        return len(self._hosts)


def chrome_urls(page: Page, absolute: Callable[[str], str]) -> set[str]:
    """Absolute URLs (by ``absolute(href)``) of the links that stand only in chrome.

    An ``href`` that makes no URL (``absolute`` raises ``ValueError``, e.g. ``//[x``)
    is no link: it is left out, and the page is judged on the rest."""
    hrefs = page.chrome_hrefs()
    if not hrefs:
        return set()

    def urls(of: Iterable[str]) -> Iterator[str]:
        for h in of:
            try:
                yield absolute(h)
            except ValueError:
                continue

    content = set(urls(h for b in page.blocks if not b.chrome for h in b.hrefs))
    return {u for u in urls(hrefs) if u not in content}


#: A slot is the low 32 bits of a block's path hash; 0 stands for "no slot".
SLOT_MASK = 0xFFFFFFFF


def link_slots(page: Page, absolute: Callable[[str], str]) -> dict[str, int]:
    """The slot of each content link of ``page``, by absolute URL: the low 32 bits of
    the container path of the first content block that holds it (never 0).

    The path names tags, ids and classes from the body down, not the block's text, so
    every article of a site puts the links of its prose in one slot and those of its
    "related articles" list in another, whatever the list holds."""
    slots: dict[str, int] = {}
    for b in page.blocks:
        if b.chrome or not b.hrefs:
            continue
        slot = (b.path & SLOT_MASK) or 1
        for h in b.hrefs:
            try:
                url = absolute(h)
            except ValueError:
                continue
            slots.setdefault(url, slot)
    return slots


def blocks_text(blocks: Iterable[Block]) -> str:
    return " ".join(t for b in blocks for t in b.texts)
