"""The hostile corner of the sandbox web (``FOCUSED_SANDBOX_MODE=hostile``).

The hostile site is the normal site of the same seed (byte for byte) plus ``/hostile/``,
linked from the home page, where every hostile-web case of ``docs/robustness.md`` is
served:

- ``/hostile/enc/``: the same Chinese chemistry text in GBK, GB2312 and Big5, with the
  right charset header, with none (``<meta>`` only, or nothing: sniffing), with a wrong
  one (``utf-8`` or ``iso-8859-1`` over GBK bytes, with and without ``<meta>``), and its
  UTF-8 twins ``simplified-utf8.html`` / ``traditional-utf8.html``;
- broken and truncated HTML (cut inside a tag and inside a UTF-8 character), binary
  bytes served as ``text/html``, a body shorter than its ``Content-Length``;
- a 50 MB page with and without ``Content-Length``, a gzip bomb (8 KB that inflate to
  100 MB), a redirect loop and an endless redirect chain, a server that never answers
  and one that resets the connection, 404, 500 and 503;
- infinite URL spaces: a calendar (every month links the next and the previous one),
  session ids in the query and in ``;jsessionid=`` path parameters (a new one on every
  link), and an ever deeper path;
- a page linking ``mailto:``, ``javascript:``, ``file:``, ``data:``, ``ftp:``, ``tel:``,
  malformed URLs, another host (``localhost`` instead of ``127.0.0.1``, same server) and
  a folder robots.txt disallows;
- oversized pages within ``DOWNLOAD_MAXSIZE``: 7.5 MB of varied Chinese text
  (``/hostile/huge-zh.html``) and 200,000 links into the folder robots.txt disallows
  (``/hostile/many-links.html``);
- an RSS 2.0 feed, an Atom feed and an RSS feed served as ``text/xml``
  (``/hostile/feed.rss``, ``feed.atom``, ``feed.xml``), whose items link to
  ``/hostile/feed/*.html``.

Each page that still works links on to a plain page (``after-*.html``), so a test can see
that the crawl went on past it. Pure Python, no Scrapy.
"""

from __future__ import annotations

import contextlib
import html
import random
import re
import socket
import struct
import threading
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from itertools import count
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from focused.web.sandbox import vocab

if TYPE_CHECKING:
    from focused.web.sandbox.generator import Site

INDEX = "/hostile/"
INDEX_ANCHOR = "hostile corner 陷阱"
ENCODINGS = ("gbk", "gb2312", "big5")
FORBIDDEN = "/hostile/forbidden/secret.html"
ROBOTS_EXTRA = b"Disallow: /hostile/forbidden/\n"
OTHER_HOST = "localhost"  # the same server under another host name

HUGE_BYTES = 50 * 1024 * 1024
HUGE_ZH_BYTES = 7_500_000  # below the project's DOWNLOAD_MAXSIZE (8 MiB)
MANY_LINKS = 200_000
BOMB_BYTES = 100 * 1024 * 1024
HANG_SECONDS = 30.0
DATALOSS_CLAIMED = 5000

SIMPLIFIED_TITLE = "化学反应与元素周期表 chemistry reaction"
SIMPLIFIED_TEXT = (
    "化学是研究物质的组成、结构、性质以及变化规律的科学。原子和分子通过化学键结合成化合物。"
    "酸和碱发生中和反应生成盐和水。元素周期表按原子序数排列所有元素。氧化还原反应涉及电子的"
    "转移。有机化学研究碳的化合物，无机化学研究其他元素的化合物。离子在溶液中导电。"
)
TRADITIONAL_TITLE = "化學反應與元素週期表 chemistry reaction"
TRADITIONAL_TEXT = (
    "化學是研究物質的組成、結構、性質以及變化規律的科學。原子和分子通過化學鍵結合成化合物。"
    "酸和鹼發生中和反應生成鹽和水。元素週期表按原子序數排列所有元素。氧化還原反應涉及電子的"
    "轉移。有機化學研究碳的化合物，無機化學研究其他元素的化合物。離子在溶液中導電。"
)
ENGLISH_TEXT = (
    "Chemistry studies the elements, their atoms and molecules, chemical bonds, acids "
    "and bases, and every reaction that turns one compound into another."
)
#: (content-type charset or None, whether the page has a <meta charset>) per variant
ENC_VARIANTS: dict[str, tuple[str | None, bool]] = {
    "header": ("{enc}", True),  # right header and meta
    "meta": (None, True),  # no charset in the header, meta only
    "sniff": (None, False),  # nothing declared: content sniffing
    "wrong-utf8": ("utf-8", True),  # a wrong header, the meta is right
    "wrong-latin1": ("iso-8859-1", True),
    "wrong-utf8-nometa": ("utf-8", False),  # a wrong header and nothing else: sniffing
    "wrong-latin1-nometa": ("iso-8859-1", False),
}


def twin_path(enc: str) -> str:
    """The UTF-8 page with the same text as the ``enc`` pages."""
    return (
        "/hostile/enc/traditional-utf8.html"
        if enc == "big5"
        else ("/hostile/enc/simplified-utf8.html")
    )


def enc_path(enc: str, variant: str) -> str:
    return f"/hostile/enc/{enc}-{variant}.html"


def _page(
    title: str,
    paragraphs: Iterable[str],
    links: Iterable[tuple[str, str]],
    meta: str | None = "utf-8",
) -> str:
    esc = html.escape
    head = f'<meta charset="{meta}">\n' if meta else ""
    paras = "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    items = "\n".join(f'<li><a href="{esc(h)}">{esc(a)}</a></li>' for h, a in links)
    return (
        f"<!DOCTYPE html>\n<html>\n<head>\n{head}<title>{esc(title)}</title>\n</head>\n"
        f"<body>\n<h1>{esc(title)}</h1>\n{paras}\n<ul>\n{items}\n</ul>\n</body>\n</html>\n"
    )


def _plain(title: str, links: Iterable[tuple[str, str]] = (("/", "home"),)) -> bytes:
    return _page(title, [f"{title}: an ordinary page."], links).encode()


def _encoding_pages() -> dict[str, tuple[bytes, str]]:
    pages: dict[str, tuple[bytes, str]] = {}
    texts = {  # title, text, the anchor back home (Big5 has no simplified characters)
        "simplified": (SIMPLIFIED_TITLE, SIMPLIFIED_TEXT, "首页 home"),
        "traditional": (TRADITIONAL_TITLE, TRADITIONAL_TEXT, "首頁 home"),
    }
    for name, (title, text, home) in texts.items():
        body = _page(title, [text, ENGLISH_TEXT, text], [("/", home)]).encode("utf-8")
        pages[f"/hostile/enc/{name}-utf8.html"] = (body, "text/html; charset=utf-8")
    for enc in ENCODINGS:
        title, text, home = texts["traditional" if enc == "big5" else "simplified"]
        for variant, (charset, has_meta) in ENC_VARIANTS.items():
            paragraphs = [text, ENGLISH_TEXT, text]
            doc = _page(title, paragraphs, [("/", home)], enc if has_meta else None)
            ctype = "text/html" if charset is None else f"text/html; charset={charset}"
            pages[enc_path(enc, variant)] = (doc.encode(enc), ctype.format(enc=enc))
    return pages


def _static_pages() -> dict[str, tuple[bytes, str]]:
    pages = _encoding_pages()
    utf8 = "text/html; charset=utf-8"
    for name in ("broken", "truncated", "links", "redirect"):
        path = f"/hostile/after-{name}.html"
        pages[path] = (_plain(f"after {name}"), utf8)
    # the other host is the same server: no link back, or it would mirror the whole site
    pages["/hostile/after-elsewhere.html"] = (_plain("after elsewhere", []), utf8)
    pages["/hostile/elsewhere.html"] = (
        _plain("elsewhere", [("/hostile/after-elsewhere.html", "on")]),
        utf8,
    )
    pages[FORBIDDEN] = (_plain("forbidden by robots.txt"), utf8)
    broken = (
        "<html><head><title>Broken <b>page</title><body><div><p>unclosed <table><tr><td>"
        "化学 chemistry</span></td></div></div></div><p <p>>> <a href=/hostile/after-broken.html"
        " >after</a><a href='/hostile/after-broken.html'<b>bad attr</a><script>var x = '<a "
        'href="/nope">\';</scr + ipt><!-- an unterminated comment <a href="/nope2">x</a>'
    )
    pages["/hostile/broken.html"] = (broken.encode(), utf8)
    truncated = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>截断 truncated</title></head>'
        '<body><p><a href="/hostile/after-truncated.html">after</a></p><p>化学元素'
    ).encode() + "周".encode()[:2]  # ends inside a UTF-8 character ...
    pages["/hostile/truncated.html"] = (truncated, utf8)
    pages["/hostile/truncated-tag.html"] = (
        b'<html><head><title>cut</title></head><body><a href="/hostile/after-truncated.html">'
        b'after</a><a href="/hostile/tru',
        utf8,
    )  # ... and inside a tag
    for name in ("internal", "nul", "utf16", "gzip", "limited", "nested", "huge-zh", "many-links"):
        path = f"/hostile/after-{name}.html"
        pages.setdefault(path, (_plain(f"after {name}", []), utf8))
    nul = _page("NUL bytes 化学 chemistry", ["acid\x00 base", ENGLISH_TEXT], [])
    pages["/hostile/nul.html"] = (
        nul.encode().replace(
            b"</ul>", b'<li><a href="/hostile/after-nul.html">after</a></li></ul>'
        ),
        utf8,
    )
    wide = _page(
        SIMPLIFIED_TITLE, [SIMPLIFIED_TEXT], [("/hostile/after-utf16.html", "after")], None
    )
    pages["/hostile/utf16le.html"] = (wide.encode("utf-16-le"), "text/html; charset=utf-16le")
    depth = 5000
    pages["/hostile/nested.html"] = (
        b'<html><head><title>nested</title></head><body><a href="/hostile/after-nested.html">'
        b"after</a>"
        + b"<div>" * depth
        + b'<a href="/hostile/lost.html">lost</a>'
        + b"</div>" * depth
        + b"</body></html>",
        utf8,
    )
    pages.update(_feed_pages())
    rng = _Bytes(7)
    binary = b"\x89PNG\r\n\x1a\n" + rng.take(20_000)
    pages["/hostile/binary.html"] = (binary, "text/html; charset=utf-8")
    pages["/hostile/binary-text.html"] = (
        rng.take(3000).replace(b"\x00", b"\x01") + b'<a href="/hostile/nope">x</a>',
        "text/html",
    )
    return pages


class _Bytes:
    """Seeded pseudo-random bytes (no ``random`` module state shared with the site)."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def take(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            self.state = zlib.crc32(struct.pack(">Q", self.state)) * 2654435761 % 2**64
            out += struct.pack(">Q", self.state)
        return bytes(out[:n])


#: (path, anchor/item title) of the items of each feed; every path is a plain page
FEED_ITEMS: dict[str, tuple[tuple[str, str], ...]] = {
    "/hostile/feed.rss": (
        ("/hostile/feed/rss-1.html", "Acid and base reactions in chemistry"),
        ("/hostile/feed/rss-2.html", "The periodic table of the chemical elements"),
    ),
    "/hostile/feed.atom": (
        ("/hostile/feed/atom-1.html", "Catalyst and oxidation: a chemical reaction"),
        ("/hostile/feed/atom-2.html", "Weekend sports results"),
    ),
    "/hostile/feed.xml": (("/hostile/feed/xml-1.html", "化学反应 chemistry molecule"),),
}
FEED_TYPES = {
    "/hostile/feed.rss": "application/rss+xml; charset=utf-8",
    "/hostile/feed.atom": "application/atom+xml; charset=utf-8",
    "/hostile/feed.xml": "text/xml; charset=utf-8",
}


def _rss(items: Iterable[tuple[str, str]]) -> bytes:
    esc = html.escape
    entries = "".join(
        f"<item><title>{esc(title)}</title><link>{esc(path)}</link>"
        f"<description>{esc(title)}.</description></item>\n"
        for path, title in items
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        "<title>Chemistry news 化学</title><link>/hostile/</link>"
        "<description>What happens in chemistry.</description>\n"
        f"{entries}<item><title>write to us</title><link>mailto:news@example.org</link>"
        "</item>\n</channel></rss>\n"
    ).encode()


def _atom(items: Iterable[tuple[str, str]]) -> bytes:
    esc = html.escape
    entries = "".join(
        f'<entry><title>{esc(title)}</title><link rel="alternate" href="{esc(path)}"/>'
        f'<link rel="enclosure" href="/hostile/nope.mp3"/><id>{esc(path)}</id>'
        f"<summary>{esc(title)}.</summary></entry>\n"
        for path, title in items
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        "<title>Chemistry journal</title><id>urn:hostile:atom</id>\n"
        f"{entries}</feed>\n"
    ).encode()


def _feed_pages() -> dict[str, tuple[bytes, str]]:
    pages: dict[str, tuple[bytes, str]] = {}
    for feed, items in FEED_ITEMS.items():
        body = _atom(items) if feed.endswith(".atom") else _rss(items)
        pages[feed] = (body, FEED_TYPES[feed])
        for path, title in items:
            pages[path] = (_plain(title, []), "text/html; charset=utf-8")
    return pages


_big_lock = threading.Lock()
_big: dict[str, bytes] = {}


def huge_chinese_page() -> bytes:
    """:data:`HUGE_ZH_BYTES` of varied Chinese text (words of the sandbox's subjects and
    single characters, seeded): few of its phrases repeat, so jieba's cache does not help."""
    with _big_lock:
        if "zh" not in _big:
            words = list(vocab.FILLER_ZH)
            for subject in vocab.SUBJECTS:
                words += list(subject.title_zh) + list(subject.body_zh)
            chars = sorted({c for w in words for c in w})
            tokens = words + chars + ["，", "。", "、", "</p>\n<p>"]
            weights = [4] * len(words) + [3] * len(chars) + [60, 30, 10, 3]
            rng = random.Random(20100)  # its own generator: no state shared with the site
            head = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>化学 巨大的页面</title>'
            parts = [head, "</head><body><p>"]
            size = len(head.encode())
            while size < HUGE_ZH_BYTES - 200:
                chunk = "".join(rng.choices(tokens, weights, k=20_000))
                parts.append(chunk)
                size += len(chunk.encode())
            tail = '</p><p><a href="/hostile/after-huge-zh.html">after</a></p></body></html>'
            body = "".join(parts).encode()[: HUGE_ZH_BYTES - len(tail)]
            _big["zh"] = body.decode("utf-8", "ignore").encode() + tail.encode()
        return _big["zh"]


def many_links_page() -> bytes:
    """A page of :data:`MANY_LINKS` links into the folder robots.txt disallows (none is
    fetched), after one link to a plain page."""
    with _big_lock:
        if "links" not in _big:
            links = "".join(f"<a href=forbidden/{i}>{i}</a>\n" for i in range(MANY_LINKS))
            _big["links"] = (
                "<!DOCTYPE html><html><head><title>many links</title></head><body>"
                '<a href="/hostile/after-many-links.html">after</a>\n'
                f"{links}</body></html>"
            ).encode()
        return _big["links"]


def _index() -> bytes:
    links = [(p, p.rsplit("/", 1)[1]) for p in sorted(_encoding_pages())]
    links += [
        ("/hostile/broken.html", "broken"),
        ("/hostile/truncated.html", "truncated"),
        ("/hostile/truncated-tag.html", "truncated tag"),
        ("/hostile/binary.html", "binary"),
        ("/hostile/binary-text.html", "binary text"),
        ("/hostile/dataloss.html", "data loss"),
        ("/hostile/huge.html", "huge"),
        ("/hostile/huge-stream.html", "huge stream"),
        ("/hostile/bomb.html", "bomb"),
        ("/hostile/loop-a.html", "loop"),
        ("/hostile/redirect/1.html", "redirect chain"),
        ("/hostile/redirect-ok.html", "redirect once"),
        ("/hostile/hang.html", "hang"),
        ("/hostile/reset.html", "reset"),
        ("/hostile/status/404.html", "not found"),
        ("/hostile/status/500.html", "server error"),
        ("/hostile/status/503.html", "unavailable"),
        ("/hostile/calendar/2024-06.html", "calendar"),
        ("/hostile/session/cart.html?sid=0f3a9c", "cart"),
        ("/hostile/session/shop.html;jsessionid=A1B2C3", "shop"),
        ("/hostile/deep/", "deep"),
        ("/hostile/links.html", "links"),
        ("/hostile/internal.html", "internal addresses"),
        ("/hostile/redirect-metadata.html", "redirect to the metadata service"),
        ("/hostile/nul.html", "NUL bytes"),
        ("/hostile/utf16le.html", "UTF-16LE without BOM"),
        ("/hostile/fake-gzip.html", "fake gzip"),
        ("/hostile/limited.html", "rate limited"),
        ("/hostile/nested.html", "nested"),
        ("/hostile/huge-zh.html", "7.5 MB of Chinese text"),
        ("/hostile/many-links.html", "200,000 links"),
        ("/hostile/feed.rss", "RSS feed"),
        ("/hostile/feed.atom", "Atom feed"),
        ("/hostile/feed.xml", "RSS feed as text/xml"),
    ]
    return _page("hostile corner", ["Every page here misbehaves."], links).encode()


_bomb_lock = threading.Lock()
_bomb: bytes | None = None


def gzip_bomb() -> bytes:
    """A gzip stream (about 100 KB) of an HTML page of :data:`BOMB_BYTES` bytes."""
    global _bomb
    with _bomb_lock:
        if _bomb is None:
            z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            parts = [z.compress(b"<html><head><title>bomb</title></head><body><p>")]
            chunk = b" " * (1 << 20)
            parts += [z.compress(chunk) for _ in range(BOMB_BYTES >> 20)]
            parts.append(z.flush())
            _bomb = b"".join(parts)
        return _bomb


def _build_big_pages() -> None:
    gzip_bomb()
    huge_chinese_page()
    many_links_page()


_session_ids = count(1)


def _new_sid() -> str:
    return f"{zlib.crc32(str(next(_session_ids)).encode()):08x}{next(_session_ids):06d}"


_CALENDAR = re.compile(r"^/hostile/calendar/(\d{1,4})-(\d{2})\.html$")
_STATUS = re.compile(r"^/hostile/status/(\d{3})\.html$")
_REDIRECT = re.compile(r"^/hostile/redirect/(\d+)\.html$")
DEEP_SEGMENT = "level-" + "x" * 33 + "/"  # 40 characters per level


class Responder:
    """Serves the dynamic cases; ``__call__`` is the site's responder hook."""

    def __init__(self) -> None:
        self.index = _index()
        self.limited = 1  # 429 answers /hostile/limited.html still gives
        self._lock = threading.Lock()
        # build the bomb now, not while a client waits with a short DOWNLOAD_TIMEOUT
        threading.Thread(target=_build_big_pages, name="gzip-bomb", daemon=True).start()

    def __call__(self, h: BaseHTTPRequestHandler, with_body: bool) -> bool:
        """Answer ``h``'s request if it is a dynamic hostile case; False otherwise."""
        try:
            return self._answer(h, with_body)
        except OSError:  # the client gave up (a time-out, a size limit): nothing to say
            h.close_connection = True
            return True

    def _answer(self, h: BaseHTTPRequestHandler, with_body: bool) -> bool:
        path = unquote(urlsplit(h.path).path)
        if not path.startswith(INDEX):
            return False
        if path == INDEX:
            _send(h, 200, self.index, with_body)
            return True
        if path == "/hostile/limited.html":
            self._limited(h, with_body)
            return True
        handler = _ROUTES.get(path)
        if handler is not None:
            handler(h, with_body)
            return True
        return _answer_generated(h, with_body, path)

    def _limited(self, h: BaseHTTPRequestHandler, with_body: bool) -> None:
        """429 with ``Retry-After: 1`` the first time, then a page."""
        with self._lock:
            busy, self.limited = self.limited > 0, max(0, self.limited - 1)
        if busy:
            _send(h, 429, b"slow down", with_body, headers=[("Retry-After", "1")])
        else:
            _send(h, 200, _plain("limited", [("/hostile/after-limited.html", "after")]), with_body)


def _answer_generated(h: BaseHTTPRequestHandler, with_body: bool, path: str) -> bool:
    """Answer the pages whose path carries their content (a status code, a redirect
    step, a month, a depth, a session id); False when ``path`` is none of them."""
    for pattern, route in _PATTERNS:
        match = pattern.match(path)
        if match:
            route(h, with_body, match)
            return True
    if path.startswith("/hostile/deep/"):
        _deep(h, with_body, path)
        return True
    if path.startswith(("/hostile/session/cart.html", "/hostile/session/shop.html")):
        _session(h, with_body, path)
        return True
    return False


def _send(
    h: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    with_body: bool,
    *,
    ctype: str = "text/html; charset=utf-8",
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        h.send_header(name, value)
    h.end_headers()
    if with_body:
        _write(h, body)


def _write(h: BaseHTTPRequestHandler, data: bytes) -> bool:
    """Write ``data``; False when the client has gone (it gave up on a huge page)."""
    try:
        h.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError, OSError):
        h.close_connection = True
        return False
    return True


def _port(h: BaseHTTPRequestHandler) -> int:
    return int(h.server.server_address[1])


def _links(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    port = _port(h)
    links = [
        ("mailto:chemist@example.org", "write to us"),
        ("javascript:alert(document.cookie)", "script"),
        ("javascript:void(0)", "nothing"),
        ("file:///etc/passwd", "local file"),
        ("data:text/html;base64,PGgxPmhpPC9oMT4=", "inline page"),
        (f"ftp://127.0.0.1:{port}/pub/file.txt", "ftp"),
        ("tel:+861012345678", "call"),
        ("http://[::1", "broken IPv6"),
        (f"http://127.0.0.1:{port + 70000}/", "port out of range"),
        (f"http://{OTHER_HOST}:{port}/hostile/elsewhere.html", "another host"),
        (FORBIDDEN, "forbidden"),
        ("/hostile/after-links.html", "after"),
    ]
    _send(h, 200, _page("links", ["Links of every kind."], links).encode(), with_body)


#: Links of ``/hostile/internal.html`` that a crawl with loopback seeds must refuse
#: (``{port}``: the sandbox's), and loopback spellings it may fetch.
INTERNAL_REFUSED = (
    "http://169.254.169.254/latest/meta-data/",
    "http://0xa9fea9fe/latest/meta-data/",
    "http://[::ffff:169.254.169.254]/latest/meta-data/",
    "http://10.0.0.1/",
    "http://0.0.0.0:{port}/hostile/after-internal.html",
)
INTERNAL_LOOPBACK = ("0x7f000001", "2130706433", "0177.0.0.1", "127.1")
METADATA_URL = "http://169.254.169.254/latest/meta-data/iam/"


def _internal(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    port = _port(h)
    links = [(u.format(port=port), "internal") for u in INTERNAL_REFUSED]
    links += [
        (f"http://{host}:{port}/hostile/after-internal.html", "loopback spelling")
        for host in INTERNAL_LOOPBACK
    ]
    links.append(("/hostile/after-internal.html", "after"))
    body = _page("internal addresses", ["Links into the network."], links).encode()
    _send(h, 200, body, with_body)


def _fake_gzip(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    """Says gzip, sends plain HTML."""
    body = _plain("fake gzip", [("/hostile/after-gzip.html", "after")])
    _send(h, 200, body, with_body, headers=[("Content-Encoding", "gzip")])


def _dataloss(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Content-Length", str(DATALOSS_CLAIMED))
    h.send_header("Connection", "close")
    h.end_headers()
    h.close_connection = True
    if with_body:
        _write(h, b"<html><head><title>data loss</title></head><body><p>short")


def _huge(h: BaseHTTPRequestHandler, with_body: bool, with_length: bool = True) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    if with_length:
        h.send_header("Content-Length", str(HUGE_BYTES))
    else:
        h.send_header("Connection", "close")
    h.end_headers()
    h.close_connection = True
    if not with_body:
        return
    chunk = b"<p>" + b"filler " * 9360 + b"</p>\n"
    sent = 0
    while sent < HUGE_BYTES:
        piece = chunk[: HUGE_BYTES - sent]
        if not _write(h, piece):
            return
        sent += len(piece)


def _bomb_page(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    _send(h, 200, gzip_bomb(), with_body, headers=[("Content-Encoding", "gzip")])


def _loop(target: str):  # noqa: ANN202
    def route(h: BaseHTTPRequestHandler, with_body: bool) -> None:
        _send(h, 302, b"", with_body, headers=[("Location", target)])

    return route


def _hang(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    """Read the request, then say nothing until :data:`HANG_SECONDS` have passed."""
    threading.Event().wait(HANG_SECONDS)
    h.close_connection = True


def _reset(h: BaseHTTPRequestHandler, with_body: bool) -> None:
    """Close the connection with a TCP reset (SO_LINGER 0) before any answer."""
    sock: socket.socket = h.connection  # type: ignore[attr-defined]
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.close_connection = True
    with contextlib.suppress(OSError):
        sock.close()


def _status(h: BaseHTTPRequestHandler, with_body: bool, match: re.Match[str]) -> None:
    code = int(match.group(1))
    body = _page(f"error {code}", [f"status {code}"], [("/", "home")]).encode()
    _send(h, code, body, with_body)


def _redirect_chain(h: BaseHTTPRequestHandler, with_body: bool, match: re.Match[str]) -> None:
    n = int(match.group(1))
    _send(h, 302, b"", with_body, headers=[("Location", f"/hostile/redirect/{n + 1}.html")])


def _calendar(h: BaseHTTPRequestHandler, with_body: bool, match: re.Match[str]) -> None:
    year, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12 or year < 1:
        _send(h, 404, b"no such month", with_body)
        return
    prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
    next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
    links = [(f"{next_y}-{next_m:02d}.html", "next month")]
    if prev_y >= 1:
        links.append((f"{prev_y}-{prev_m:02d}.html", "previous month"))
    body = _page(f"events {year}-{month:02d}", ["Nothing happens this month."], links)
    _send(h, 200, body.encode(), with_body)


def _session(h: BaseHTTPRequestHandler, with_body: bool, path: str) -> None:
    """Every link carries a fresh session id: without stripping, an endless space."""
    links = [
        (f"cart.html?sid={_new_sid()}", "cart"),
        (f"shop.html;jsessionid={_new_sid()}", "shop"),
        (f"cart.html?item=3&PHPSESSID={_new_sid()}", "item 3"),
    ]
    title = "shop" if "shop.html" in path else "cart"
    _send(h, 200, _page(title, ["Your session."], links).encode(), with_body)


def _deep(h: BaseHTTPRequestHandler, with_body: bool, path: str) -> None:
    """``/hostile/deep/`` and below: each page links one level deeper (relative href)."""
    level = path.count(DEEP_SEGMENT)
    body = _page(f"level {level}", ["Deeper."], [(DEEP_SEGMENT, "deeper")]).encode()
    _send(h, 200, body, with_body)


_ROUTES = {
    "/hostile/links.html": _links,
    "/hostile/dataloss.html": _dataloss,
    "/hostile/huge.html": _huge,
    "/hostile/huge-stream.html": lambda h, b: _huge(h, b, with_length=False),
    "/hostile/bomb.html": _bomb_page,
    "/hostile/loop-a.html": _loop("/hostile/loop-b.html"),
    "/hostile/loop-b.html": _loop("/hostile/loop-a.html"),
    "/hostile/redirect-ok.html": _loop("/hostile/after-redirect.html"),
    "/hostile/hang.html": _hang,
    "/hostile/reset.html": _reset,
    "/hostile/internal.html": _internal,
    "/hostile/redirect-metadata.html": _loop(METADATA_URL),
    "/hostile/fake-gzip.html": _fake_gzip,
    "/hostile/huge-zh.html": lambda h, b: _send(h, 200, huge_chinese_page(), b),
    "/hostile/many-links.html": lambda h, b: _send(h, 200, many_links_page(), b),
}
_PATTERNS = [(_STATUS, _status), (_REDIRECT, _redirect_chain), (_CALENDAR, _calendar)]


def install(site: Site) -> None:
    """Add the hostile corner to a generated ``site``: its static pages, the robots.txt
    rule and the responder for the dynamic cases."""
    for path, (body, ctype) in _static_pages().items():
        site.pages[path] = body
        site.content_types[path] = ctype
    site.pages["/robots.txt"] += ROBOTS_EXTRA
    site.responder = Responder()


def expected_text(enc: str) -> tuple[str, str]:
    """(title, first paragraph) that every ``enc`` page must decode to."""
    if enc == "big5":
        return TRADITIONAL_TITLE, TRADITIONAL_TEXT
    return SIMPLIFIED_TITLE, SIMPLIFIED_TEXT


__all__ = [
    "ENCODINGS",
    "FEED_ITEMS",
    "ENC_VARIANTS",
    "INDEX",
    "INTERNAL_LOOPBACK",
    "INTERNAL_REFUSED",
    "METADATA_URL",
    "Responder",
    "enc_path",
    "expected_text",
    "gzip_bomb",
    "huge_chinese_page",
    "install",
    "many_links_page",
    "twin_path",
]
