"""Defences against a hostile web: wrong charsets, binary bodies, odd links, session ids.

Pure module (w3lib and charset-normalizer, which Scrapy itself uses; no Scrapy import).
:mod:`focused.robustness` applies these rules inside the crawl.

**Charsets.** Scrapy decodes a page with the charset of its ``Content-Type`` header when
there is one, else the ``<meta charset>``, else by sniffing (charset-normalizer), which is
what a browser does. On the Chinese web a server-wide default header
(``charset=iso-8859-1`` or ``charset=utf-8``) on GBK or Big5 pages is common; the header
then wins and every Chinese word turns into mojibake, so the page scores 0.
:func:`repair_encoding` overrules such a header in this order:

1. a body that is valid UTF-8 (and not plain ASCII) is UTF-8, whatever the header or
   a stale ``<meta>`` says: GBK or Big5 text is practically never valid UTF-8;
2. a ``<meta>`` charset that differs from the header's and decodes the body wins (the
   page's author wrote it; a server-wide default did not look at the page);
3. a header charset that decodes the body stays, unless it is a single-byte Western
   charset (latin-1 decodes any bytes, so that proves nothing);
4. otherwise the sniffed charset wins when it is a multi-byte one that decodes the body.

"Decodes" allows 1 % of the non-ASCII bytes in error and a character cut off at the end
(a stray byte, a truncated page). A byte order mark always wins (Scrapy's rule).

A UTF-16 or UTF-32 header on a body without the zero bytes that encoding gives ASCII
markup (:func:`wide_encoding`) is wrong whatever the body, and so is a label that names
a Python codec but no charset (``charset=undefined``, ``zlib``, ``hex``, ``idna``,
``rot13``, ``base64``: decoding with it raises), in the header or, without a header
charset, in the ``<meta>``: the page is decoded as UTF-8 when it is, else by its
``<meta>`` charset, else as sniffed.
"""

from __future__ import annotations

import codecs
import functools
import io
import re
import time
import unicodedata
import zlib
from collections.abc import Iterable
from datetime import UTC
from email.utils import parsedate_to_datetime
from urllib.parse import SplitResult, urlsplit, urlunsplit

from charset_normalizer import from_bytes
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

from focused.defaults import DEFAULTS
from focused.web.addresses import canonical_host

__all__ = [
    "ALLOWED_SCHEMES",
    "SESSION_PARAMS",
    "canonical_ip_url",
    "inflate_prefix",
    "looks_binary",
    "repair_encoding",
    "retry_after_seconds",
    "scheme_problem",
    "strip_nul",
    "strip_session_ids",
    "tree_cut",
    "wide_encoding",
]

#: Single-byte Western charsets: decoding never fails, so a strict decode proves nothing.
_WEAK = {
    codecs.lookup(name).name
    for name in ("latin-1", "cp1252", "iso8859-15", "ascii", "cp1250", "iso8859-2", "mac-roman")
}
#: Multi-byte charsets the sniffer may pick over a wrong header.
_MULTIBYTE = {
    codecs.lookup(name).name
    for name in (
        "utf-8",
        "gb18030",
        "gbk",
        "gb2312",
        "big5",
        "big5hkscs",
        "cp950",
        "shift_jis",
        "cp932",
        "euc_jp",
        "euc_kr",
        "cp949",
        "iso2022_jp",
        "hz",
    )
}
_SNIFF_BYTES = 16 * 1024
#: UTF-16/32 charsets a header may declare for a body without a byte order mark.
_WIDE_CODECS = ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")
#: :func:`wide_encoding` wants a zero byte where ASCII has one in this share of the units
_WIDE_ZEROS = 1 / 8


#: Python's text codecs that are no charset: they raise on a page, or rewrite it
#: (``unicode_escape`` turns ``\\u0041`` into ``A``)
_NOT_CHARSETS = frozenset(
    codecs.lookup(name).name
    for name in ("undefined", "idna", "punycode", "unicode_escape", "raw_unicode_escape")
)


def _norm(name: str | None) -> str | None:
    """Python codec name of a charset label (``gbk`` -> ``gb18030`` as browsers do), or
    None when it names no charset: unknown, UTF-7 (w3lib refuses it), a bytes-to-bytes
    codec (``zlib``, ``hex``, ``base64``, ``rot13``, ...) or one of :data:`_NOT_CHARSETS`."""
    if not name:
        return None
    resolved = resolve_encoding(name)
    if not resolved:
        return None
    try:
        info = codecs.lookup(resolved)
    except LookupError:
        return None
    if not info._is_text_encoding or info.name in _NOT_CHARSETS:
        return None
    return info.name


_ASCII = bytes(range(128))
#: share of non-ASCII bytes that may fail to decode (one stray byte, a cut last character)
_MAX_ERRORS = 0.01


def _decodes(body: bytes, encoding: str) -> bool:
    """True when ``encoding`` decodes ``body`` with at most 1 % of its non-ASCII bytes in
    error, not counting a multi-byte character cut off at the end (a truncated page)."""
    try:
        text = codecs.getincrementaldecoder(encoding)("replace").decode(body, final=False)
    except (LookupError, ValueError):  # UnicodeError: utf-32 without a BOM raises
        return False
    errors = text.count("\ufffd")
    return errors == 0 or errors <= len(body.translate(None, _ASCII)) * _MAX_ERRORS


def repair_encoding(content_type: str | None, body: bytes) -> str | None:
    """The charset to decode ``body`` with when its header's charset is wrong, else None.

    ``None`` also when there is nothing to overrule: no header charset, a byte order mark
    (it always wins), or a plain-ASCII body (unless the header says UTF-16 or UTF-32).
    See the module docstring for the rules.
    """
    if not body or read_bom(body)[0] is not None:
        return None
    label = http_content_type_encoding(content_type or "")
    if label is None:  # Scrapy decodes by the <meta> charset, if there is one
        return _sniffed(body) if _bad_meta(body) else None
    header = _norm(label)
    if header is None:  # a codec, not a charset: charset=zlib, hex, undefined, ...
        return _sniffed(body)
    if header in _WIDE_CODECS:  # right only with its zero bytes (then wide_encoding decodes)
        return None if wide_encoding(content_type, body) else _sniffed(body)
    return None if body.isascii() else _overruled(header, body)


def _bad_meta(body: bytes) -> bool:
    """Whether ``body`` has a ``<meta>`` charset that is none (``zlib``, ``undefined``)
    or UTF-16/32, which a page of ASCII markup cannot be in (the Encoding Standard
    reads such a ``<meta>`` as UTF-8)."""
    label = html_body_declared_encoding(body)
    if label is None:
        return False
    charset = _norm(label)
    return charset is None or charset in _WIDE_CODECS


def _overruled(header: str, body: bytes) -> str | None:
    """The charset that overrules ``header`` for a non-ASCII ``body`` (the module
    docstring's rules 1 to 4), or None when the header stays."""
    if _decodes(body, "utf-8"):
        return None if header == "utf-8" else "utf-8"
    meta = _norm(html_body_declared_encoding(body))
    if meta is not None and meta != header and _decodes(body, meta):
        return meta
    if header not in _WEAK and _decodes(body, header):
        return None
    match = from_bytes(body[:_SNIFF_BYTES]).best()
    sniffed = _norm(match.encoding) if match is not None else None
    if sniffed and sniffed != header and sniffed in _MULTIBYTE and _decodes(body, sniffed):
        return sniffed
    return None


def _sniffed(body: bytes) -> str:
    """The charset of a body whose declared one is wrong: UTF-8 when it decodes, else a
    ``<meta>`` charset that decodes it, else charset-normalizer's guess, else cp1252
    (what w3lib reads latin-1 and ASCII as)."""
    if _decodes(body, "utf-8"):
        return "utf-8"
    meta = _norm(html_body_declared_encoding(body))
    if meta is not None and meta not in _WIDE_CODECS and _decodes(body, meta):
        return meta
    match = from_bytes(body[:_SNIFF_BYTES]).best()
    sniffed = _norm(match.encoding) if match is not None else None
    if sniffed is not None and sniffed not in _WIDE_CODECS and _decodes(body, sniffed):
        return sniffed
    return "cp1252"


#: a ``Content-Range`` of some bytes of a representation of known length (RFC 9110)
_CONTENT_RANGE = re.compile(rb"\s*bytes\s+(\d+)\s*-\s*(\d+)\s*/\s*(\d+)\s*", re.IGNORECASE)


#: the ``meta`` key of a request whose 206 answer came with a ``Content-Encoding``: the
#: length of its body as sent (compressed), which its ``Content-Range`` counts in
WIRE_LENGTH = "focused_wire_length"


def partial_content(
    status: int, asked_range: bool, content_range: bytes | None, length: int
) -> bool:
    """Whether an answer of ``status`` with a body of ``length`` bytes is a part of its
    page, not the page: a ``206 Partial Content`` to a request that asked for no range,
    unless its ``Content-Range`` covers the whole representation (``bytes 0-(N-1)/N``,
    as some CDNs answer a plain GET) and the body is those N bytes. ``length`` is the
    body's length as sent: compressed when it came with a ``Content-Encoding`` (the
    range counts the bytes of the representation sent, :data:`WIRE_LENGTH`)."""
    if status != 206 or asked_range:
        return False
    found = _CONTENT_RANGE.fullmatch(content_range or b"")
    if found is None:
        return True
    first, last, complete = (int(g) for g in found.groups())
    return not (first == 0 and last == complete - 1 == length - 1)


_CONTROL = bytes(sorted(set(range(32)) - {9, 10, 12, 13, 27}))


def looks_binary(body: bytes, sample: int = 4096) -> bool:
    """True when the first ``sample`` bytes are not text: more than 5 % control
    characters (NUL bytes included). A UTF-16/32 byte order mark marks text; a few NUL
    bytes in an HTML page do not make it binary (:func:`strip_nul` removes them)."""
    head = body[:sample]
    if not head or read_bom(head)[0] is not None:
        return False
    controls = len(head) - len(head.translate(None, _CONTROL))
    return controls > len(head) * 0.05


#: The only link schemes a crawl follows (Scrapy's link extractor also lets ``file:`` and
#: ``ftp:`` through: a hostile page could make the crawler read local files).
ALLOWED_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")


#: ``http(s)://host[:port]`` then the path, query, fragment or the end, with a plain host
#: (ASCII letters, digits, ``.-_``): what almost every link is, and what ``urlsplit``
#: always accepts with that host (only the port's range is left to check).
# (labels of 1 to 63 characters, one dot between them, a trailing dot allowed: a host
# with an empty or longer label takes the long way, where IDNA refuses it)
_PLAIN_HTTP = re.compile(
    r"https?://(?:[A-Za-z0-9\-_]{1,63}\.)*[A-Za-z0-9\-_]{1,63}\.?(?::([0-9]*))?(?:[/?#]|\Z)"
)
#: an ASCII character that no host name has (Twisted refuses it: "invalid hostname");
#: other characters are an IDN's, which ``safe_url_string`` encodes when IDNA can
#: (:func:`_idna_encodes`)
_NOT_IN_HOST = re.compile(r"[^A-Za-z0-9.\-_\x80-\U0010ffff]")


#: the longest block of path segments :func:`repeated_path` looks for repeats of
REPEAT_BLOCK = 3


def repeated_path(path: str, max_repeats: int) -> bool:
    """Whether ``path`` holds one segment, or a block of up to :data:`REPEAT_BLOCK`
    segments, more than ``max_repeats`` times in a row (``/lab/lab/lab/``,
    ``/a/b/a/b/a/b/``): the ever deeper path of a relative link on a server that answers
    every path (``<a href="lab/">``, each level a page of its own), bounded only by
    ``URLLENGTH_LIMIT`` (500 levels). Only a block with a word in it counts (a segment
    of 3 characters or more with a letter): numbers and placeholders repeat in real
    paths (``/tiles/0/0/0``, ``/2019/12/12/12/``, ``/files/00/00/00/``, ``/search/-/-/-/``).
    ``max_repeats`` 0: never."""
    if max_repeats <= 0:
        return False
    segments = [s for s in path.split("/") if s]
    wordy = [len(s) >= 3 and any(c.isalpha() for c in s) for s in segments]
    for size in range(1, REPEAT_BLOCK + 1):
        run = 0  # segments in a row equal to the one ``size`` before: a block repeated
        for i in range(size, len(segments)):
            if segments[i] == segments[i - size] and any(wordy[i - size : i]):
                run += 1
                if run >= max_repeats * size:  # max_repeats + 1 copies of the block
                    return True
            else:
                run = 0
    return False


def scheme_problem(url: str) -> str | None:
    """``None`` for an http(s) URL with a host, else why it is not followed: its scheme
    (``mailto``, ``javascript``, ``file``, ``data``, ``ftp``, ...), ``bad_url`` (a port
    out of range or 0, no host),
    ``credentials`` (``http://user:pw@host/``: Scrapy cannot fetch it, and a crawl has no
    business with an account) or ``bad_host`` (a host name with a character no host
    name has, ``%31%30.0.0.1`` or ``a~b``, one that IDNA cannot encode, ``x1\ufffd.test``,
    or with an empty or over-63-character label, ``a..b``, ``.example.org``; an IPv6
    literal's ASCII zone id is allowed)."""
    plain = _PLAIN_HTTP.match(url)
    if plain is not None:  # the same answer as below without a urlsplit per link
        port = plain.group(1)
        if not port:
            return None
        if len(port) <= 9:
            return None if 0 < int(port) <= 65535 else "bad_url"
    return _parsed_problem(url)


def _parsed_problem(url: str) -> str | None:
    """:func:`scheme_problem` the long way, for URLs the plain-host pattern does not
    settle: the scheme, then ``urlsplit``'s port and host."""
    match = _SCHEME.match(url.strip())
    if match is None:
        return "bad_url"
    scheme = match.group(1).lower()
    if scheme not in ALLOWED_SCHEMES:
        return scheme if len(scheme) <= 16 else "other"
    try:
        parts = urlsplit(url)
        if parts.port == 0:  # raises ValueError when out of range
            return "bad_url"  # Scrapy would connect to port 80
    except ValueError:
        return "bad_url"
    return _host_problem(parts)


def _host_problem(parts: SplitResult) -> str | None:
    """What is wrong with the host part of a split http(s) URL (:func:`scheme_problem`'s
    ``credentials``, ``bad_url`` when there is no host, ``bad_host``), else None."""
    if parts.username is not None:
        return "credentials"
    host = parts.hostname
    if not host:
        return "bad_url"
    if parts.netloc.startswith("["):  # an IPv6 literal: Scrapy encodes it as ASCII
        return None if host.isascii() else "bad_host"
    if _NOT_IN_HOST.search(host) or not _idna_encodes(host):
        return "bad_host"
    return None


@functools.lru_cache(maxsize=4096)
def _idna_encodes(host: str) -> bool:
    """Whether ``safe_url_string`` (Scrapy's ``Request``) can IDNA-encode ``host``: a
    host it cannot (``x1\ufffd.test``, what invalid UTF-8 in an ``href`` decodes to; an
    empty or over-long label of an IDN) stays non-ASCII in the URL, and every download
    of it (robots.txt first) failed with "'ascii' codec can't encode" and a traceback.
    An ASCII host is encoded too: Python's ``getaddrinfo`` IDNA-encodes the name it
    looks up, and raised ``UnicodeError`` for an empty or over-63-character label
    (``a..b``, ``.example.org``) in Twisted's resolver thread, which left the download
    hanging until ``DOWNLOAD_TIMEOUT`` and logged "Unhandled error in Deferred" twice."""
    try:
        (host if host.isascii() else unicodedata.normalize("NFKC", host)).encode("idna")
    except UnicodeError:
        return False
    return True


#: Query parameters (case-insensitive) that carry a session id (``FOCUSED_SESSION_PARAMS``);
#: ``aspsessionid`` is a prefix (ASP appends random letters). Heritrix strips the same ones.
SESSION_PARAMS = tuple(DEFAULTS["FOCUSED_SESSION_PARAMS"])


@functools.lru_cache(maxsize=64)
def _path_session(names: tuple[str, ...]) -> re.Pattern[str]:
    """The ``;name=value`` path parameters of ``names`` (lower case; ``aspsessionid`` a
    prefix, as in the query), case-insensitively."""
    alternatives = "|".join(
        re.escape(name.removesuffix("*"))
        + ("[^=/?#;]*" if name == "aspsessionid" or name.endswith("*") else "")
        for name in sorted(set(names), key=len, reverse=True)
    )
    return re.compile(rf";(?:{alternatives})=[^/?#;]*", re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _prefixes(names: tuple[str, ...]) -> tuple[str, ...]:
    """The prefixes among ``names``: ``utm_*`` (any name that begins ``utm_``), and
    ``aspsessionid`` (ASP's cookie-less ids carry a suffix of their own)."""
    return tuple(n.removesuffix("*") for n in names if n.endswith("*") or n == "aspsessionid")


def strip_session_ids(url: str, params: Iterable[str] = SESSION_PARAMS) -> str:
    """``url`` without the session-id and tracking query parameters and path parameters
    (``;jsessionid=...``) named in ``params`` (``FOCUSED_SESSION_PARAMS``, any case; a
    name ending in ``*`` is a prefix: ``utm_*``), so that one page reached under many
    session ids or tracking codes is one URL (an infinite URL space otherwise).
    Idempotent; other parameters keep their order and spelling."""
    names = tuple(p.lower() for p in params)
    if not names:
        return url
    parts = urlsplit(url)
    path = _path_session(names).sub("", parts.path) if ";" in parts.path else parts.path
    query = parts.query
    if query:
        prefixes = _prefixes(names)
        kept = []
        for pair in query.split("&"):
            key = pair.split("=", 1)[0].lower()
            if key in names or (prefixes and key.startswith(prefixes)):
                continue
            kept.append(pair)
        query = "&".join(kept)
    if path == parts.path and query == parts.query:
        return url
    return urlunsplit((parts.scheme, parts.netloc, path, query, parts.fragment))


#: digits of a ``Retry-After`` number of seconds that are read; a longer one (5,000
#: digits: more than Python's ``int`` reads) counts as :data:`RETRY_AFTER_HUGE`
_RETRY_AFTER_DIGITS = 10
#: the seconds of an over-long ``Retry-After`` (every cap, ``FOCUSED_MAX_RETRY_AFTER``, is lower)
RETRY_AFTER_HUGE = float(10**_RETRY_AFTER_DIGITS)


def retry_after_seconds(value: str | bytes | None, now: float | None = None) -> float | None:
    """Seconds that an HTTP ``Retry-After`` value asks to wait (RFC 9110, section 10.2.3):
    a number of seconds (ASCII digits only: ``"²"`` is a digit to ``str.isdigit`` but
    not to ``int``; more than 10 digits are :data:`RETRY_AFTER_HUGE`) or an HTTP date
    (``now``: the current Unix time, default ``time.time()``). None when it is missing
    or neither; never negative; never raises."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        digits = text.lstrip("0") or "0"
        if len(digits) > _RETRY_AFTER_DIGITS:
            return RETRY_AFTER_HUGE
        return float(int(digits))
    return _seconds_until(text, now)


def _seconds_until(text: str, now: float | None) -> float | None:
    """Seconds from ``now`` (default ``time.time()``) to the HTTP date ``text``, at
    least 0; None when ``text`` is no date (also a year out of range)."""
    try:
        when = parsedate_to_datetime(text)
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def wide_encoding(content_type: str | None, body: bytes) -> str | None:
    """The codec for a body whose header declares UTF-16 or UTF-32 and that has no byte
    order mark, when the body is in it; else None.

    Such a body is half NUL bytes, so :func:`looks_binary` calls it binary. Its ASCII
    markup has a zero byte last in each unit in little-endian, first in big-endian:
    ``utf-16`` (or ``utf-32``) without a BOM is read in the byte order with more of them,
    and the body is taken for UTF-16/32 only when at least one unit in 8 of its first
    4 KB has that zero byte (an ASCII or UTF-8 page under a wrong header has none).
    """
    label = http_content_type_encoding(content_type or "")
    if not label or not body or read_bom(body)[0] is not None:
        return None
    name = _norm(label)
    if name not in _WIDE_CODECS:
        return None
    width = 2 if name.startswith("utf-16") else 4
    head = body[: 4096 - 4096 % width]
    little = head[width - 1 :: width].count(0)
    big = head[::width].count(0)
    if name in ("utf-16", "utf-32"):
        name = f"{name}-le" if little >= big else f"{name}-be"
    zeros = little if name.endswith("-le") else big
    if zeros < len(head) // width * _WIDE_ZEROS or zeros == 0:
        return None
    return name if _decodes(body[: len(body) - len(body) % 4], name) else None


def wide_bom(body: bytes) -> str | None:
    """The codec a UTF-16 or UTF-32 byte order mark at the start of ``body`` names
    (``utf-16-le``, ...), else None. Browsers let the mark win over a header's charset
    (WHATWG encoding sniffing), and so does Scrapy: such a body's NUL bytes are its
    text's, not to be stripped."""
    codec = read_bom(body[:4])[0]
    return codec if codec is not None and is_wide(codec) else None


def strip_nul(body: bytes) -> bytes:
    """``body`` without its NUL bytes (they end an HTML page for lxml's C strings)."""
    return body.replace(b"\x00", b"")


_TAG_CHUNK = 65536


def is_wide(encoding: str) -> bool:
    """Whether ``encoding`` is UTF-16 or UTF-32 (in any spelling)."""
    return encoding.lower().replace("-", "").replace("_", "").startswith(("utf16", "utf32"))


def parse_cut(body: bytes, max_bytes: int = 0, max_tags: int = 0, *, wide: bool = False) -> int:
    """How many bytes of ``body`` to parse: all of it, or at most ``max_bytes`` (cut
    before the last ``<`` in the second half of them, so that no tag is cut in two) and
    at most ``max_tags`` tags (cut before the next ``<``: markup is a ``<`` per tag,
    so the count of elements, which the parse and the main-content walk cost, is
    bounded whatever the page's bytes per element). 0: no cap. ``wide``: a UTF-16/32
    body, cut at a multiple of 4 bytes only (its ``<`` bytes are not its characters).
    """
    size = len(body)
    if max_bytes and size > max_bytes:
        if wide:
            return max_bytes - max_bytes % 4
        cut = body.rfind(b"<", max_bytes // 2, max_bytes)
        size = cut if cut > 0 else max_bytes
    if not max_tags or wide or body.count(b"<", 0, size) <= max_tags:
        return size
    seen = 0
    for start in range(0, size, _TAG_CHUNK):
        end = min(start + _TAG_CHUNK, size)
        n = body.count(b"<", start, end)
        if seen + n > max_tags:  # the (max_tags + 1)th tag starts in this chunk
            at = start - 1
            for _ in range(max_tags + 1 - seen):
                at = body.find(b"<", at + 1, end)
            return at
        seen += n
    return size


#: libxml2's nesting limit (with ``huge_tree``, as parsel parses): deeper elements are
#: dropped, with everything after them.
LXML_MAX_DEPTH = 2048
_CHUNK = 4096


def tree_cut(body: bytes, limit: int = LXML_MAX_DEPTH) -> bool:
    """True when lxml's HTML parser stops at its nesting limit on ``body`` (what it drops
    is lost silently: 100,000 nested ``<div>`` keep only their first 2,046 levels).

    A page needs about ``limit`` tags to be that deep: others cost one ``bytes.count``.
    Then an upper bound of the depth (tags opened minus closed, per 4 KB chunk) clears
    most; only a page still above it is parsed to see.
    """
    if body.count(b"<") < limit:
        return False
    depth = peak = 0
    for start in range(0, len(body), _CHUNK):
        chunk = body[start : start + _CHUNK]
        closes = chunk.count(b"</")
        opens = chunk.count(b"<") - closes - chunk.count(b"<!") - chunk.count(b"<?")
        peak = max(peak, depth + opens)
        depth = max(0, depth + opens - closes - chunk.count(b"/>"))
    if peak < limit - 2:
        return False
    from lxml import etree  # only for the rare deep page

    parser = etree.HTMLParser(recover=True, huge_tree=True)
    try:
        etree.fromstring(body, parser=parser)
    except (etree.LxmlError, ValueError):
        return False
    return any("Excessive depth" in entry.message for entry in parser.error_log)


def inflate_prefix(body: bytes, codings: Iterable[str], limit: int) -> bytes | None:
    """At most the first ``limit`` bytes that ``body`` inflates to, decoding the
    ``Content-Encoding`` ``codings`` (``gzip``, ``x-gzip``, ``deflate``, ``br``, ``zstd``)
    in the order given (the last one applied first); each layer stops at ``limit`` bytes,
    so a bomb costs no more. A prefix of these streams decodes to a prefix of their
    output. None when a layer is of another coding or does not decode."""
    for coding in codings:
        try:
            body = _inflate_prefix(body, coding.strip().lower(), limit)
        except Exception:  # noqa: BLE001 - zlib, brotli and zstd errors alike
            return None
        if body is None:
            return None
    return body


def _inflate_prefix(body: bytes, coding: str, limit: int) -> bytes | None:
    if coding in ("gzip", "x-gzip", "deflate"):
        # 32 + 15: a gzip or zlib header, read as such; raw deflate (a Microsoft habit) after
        try:
            return zlib.decompressobj(47).decompress(body, limit)
        except zlib.error:
            if coding != "deflate":
                raise
            return zlib.decompressobj(-15).decompress(body, limit)
    if coding == "br":
        import brotli  # Scrapy's own dependencies for these two codings

        decompressor = brotli.Decompressor()
        out = decompressor.process(body, output_buffer_limit=limit)
        while len(out) < limit and not decompressor.is_finished():
            chunk = decompressor.process(b"", output_buffer_limit=limit - len(out))
            if not chunk:
                break
            out += chunk
        return out[:limit]  # its limit is a hint: it may give more
    if coding == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:  # Python < 3.14
            from backports import zstd

        with zstd.ZstdFile(io.BytesIO(body)) as reader:
            out = bytearray()
            while len(out) < limit:
                try:
                    chunk = reader.read(limit - len(out))
                except EOFError:  # a cut stream: what came out of it
                    break
                if not chunk:
                    break
                out += chunk
            return bytes(out)
    return None


#: the authority of an absolute URL (userinfo, host, port), as its first group
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^/?#\\]*)")


def canonical_ip_url(url: str) -> str:
    """``url`` with an IP address host written as browsers write it
    (:func:`focused.web.addresses.canonical_host`: ``http://0x7f000001:8080/a`` is
    ``http://127.0.0.1:8080/a``), else ``url`` itself. A hostile page can spell one
    address in endless ways (``0177.0.0.1``, ``00177.0.0.1``, ``0x7f.1``, ...): each was
    another host to the crawl, its own download slot, robots.txt, ``Crawl-delay`` and
    ``FOCUSED_MAX_PAGES_PER_HOST``, and each page was fetched once per spelling."""
    match = _AUTHORITY.match(url)
    if match is None:
        return url
    authority = match.group(1)
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        host, _, rest = hostport.partition("]")
        host += "]"
    else:
        host, colon, port = hostport.partition(":")
        rest = colon + port
    if not host or not (host[-1].isdigit() or host[-1] in ".]" or "0x" in host.lower()):
        return url  # a name (it does not end in a number): the common case, at once
    written = canonical_host(host)
    if written is None:
        return url
    start, end = match.span(1)
    return f"{url[:start]}{userinfo}{at}{written}{rest}{url[end:]}"


#: the port each scheme takes when a URL names none
_DEFAULT_PORTS = {"http": 80, "https": 443}


def without_default_port(url: str) -> str:
    """``url`` without the port its scheme takes by default (``http://h:80/a`` is
    ``http://h/a``, ``https://h:443/`` ``https://h/``), as browsers and servers take it:
    one page. w3lib's canonical form (the seen-URL set's, Scrapy's fingerprint) keeps
    such a port. A URL that does not split is returned as it is."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    if port is None or port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        return url
    netloc = parts.netloc.rpartition(":")[0]
    return urlunsplit(parts._replace(netloc=netloc))


#: HTML's ASCII whitespace (tab, line feed, form feed, carriage return, space)
_HTML_SPACE = "\t\n\f\r "


def _skip_space(value: str, at: int) -> int:
    while at < len(value) and value[at] in _HTML_SPACE:
        at += 1
    return at


def refresh_header(value: str) -> tuple[int, str] | None:
    """``(seconds, url)`` of a ``Refresh`` header's ``value`` (``url`` as written, ""
    when it names none: a reload of the page itself), None when it is no refresh.

    Read as browsers read it (HTML's "shared declarative refresh steps"): seconds, a
    fraction ignored (``.5`` is 0), then ``;``, ``,`` or whitespace, then ``url=`` (any
    case, whitespace around ``=``) or not, then the URL, in quotes or not (an unclosed
    quote runs to the end). A value those steps refuse (``soon``, ``5x; url=/y``) is
    None: no junk URL is followed."""
    at = _skip_space(value, 0)
    digits = at
    while at < len(value) and "0" <= value[at] <= "9":
        at += 1
    if at == digits and not value.startswith(".", at):
        return None
    written = value[digits:at]
    seconds = int(written or 0) if len(written) <= 18 else 10**18  # (int() refuses 4,300 digits)
    while at < len(value) and (value[at] == "." or "0" <= value[at] <= "9"):
        at += 1
    if at < len(value):
        if value[at] not in ";," + _HTML_SPACE:
            return None
        at = _skip_space(value, at)
        if at < len(value) and value[at] in ";,":
            at += 1
        at = _skip_space(value, at)
    url = value[at:]
    if value[at : at + 3].lower() == "url":
        after = _skip_space(value, at + 3)
        if after < len(value) and value[after] == "=":
            at = _skip_space(value, after + 1)
            url = value[at:]
        else:
            return seconds, url.strip(_HTML_SPACE)
    elif value[at : at + 1] in ("u", "U") and value[at + 1 : at + 2] not in ("r", "R"):
        return seconds, url.strip(_HTML_SPACE)  # "u" then not "r": the URL as it is
    if url[:1] in ("'", '"'):
        url = url[1:].partition(url[0])[0]  # to the closing quote, or to the end
    return seconds, url.strip(_HTML_SPACE)


#: one parameter of a ``Link`` header's link (RFC 8288 section 3): ``; name`` then
#: optionally ``= token`` or ``= "quoted string"`` (with its backslash escapes)
_LINK_PARAM = re.compile(
    r"""\s*;\s*([^\s;,=]*)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"?|([^\s;,]*)))?""", re.DOTALL
)
_LINK_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def link_header(value: str, limit: int = 0) -> list[tuple[str, dict[str, str]]]:
    """The links of an HTTP ``Link`` header's ``value`` (RFC 8288 section 3), in order:
    ``(target, params)``, the target as written between ``<`` and ``>`` (a URI
    reference, which may hold commas), ``params`` by lower-cased name, the first of a
    name kept (as the RFC says of ``rel``), a quoted value unescaped. A link that is not
    well formed is skipped up to the next comma; at most ``limit`` links (0: all). The
    header is read once from left to right: its cost grows with its length."""
    links: list[tuple[str, dict[str, str]]] = []
    at, end = 0, len(value)
    while at < end and (not limit or len(links) < limit):
        start = value.find("<", at)
        if start < 0:
            break
        # junk before the link (no "<...>" of its own): the link after its last comma
        comma = value.rfind(",", at, start)
        if value[comma + 1 if comma >= 0 else at : start].strip(" \t"):
            at = value.find(",", start)  # no link starts inside junk
            if at < 0:
                break
            at += 1
            continue
        close = value.find(">", start + 1)
        if close < 0:
            break
        target = value[start + 1 : close].strip()
        params: dict[str, str] = {}
        at = close + 1
        while True:
            found = _LINK_PARAM.match(value, at)
            if found is None or found.end() == at:
                break
            at = found.end()
            name = found.group(1).lower()
            if found.group(2) is not None:
                param = _LINK_ESCAPE.sub(r"\1", found.group(2))
            else:
                param = found.group(3) or ""
            if name:
                params.setdefault(name, param)
        links.append((target, params))
        rest = value.find(",", at)  # anything up to the next comma is no parameter
        if rest < 0:
            break
        at = rest + 1
    return links


#: robots directives that take a value after a colon (``unavailable_after: <date>``),
#: not a crawler's name
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
#: a crawler's name in robots directives (``googlebot``, ``focused``)
_AGENT_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_AGENT_PREFIX = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:(.*)", re.S)


def robots_agent_names(bot_name: str, *user_agents: str) -> frozenset[str]:
    """The names a crawl answers to in robots meta tags and ``X-Robots-Tag`` headers
    (lower case): ``bot_name`` and each user agent's product token (``focused`` of
    ``focused/0.1 (+...)``). Only names of ``[A-Za-z0-9_.-]`` (as a header's crawler
    name is): a ``BOT_NAME`` such as ``o'bot`` or ``my bot`` is no name a header can
    give, and would break the XPath its meta tags are read with."""
    names = {bot_name.strip().lower()}
    for agent in user_agents:
        token = _AGENT_NAME.match(agent.strip())
        if token:
            names.add(token.group(0).lower())
    return frozenset(n for n in names if _AGENT_NAME.fullmatch(n) and n != "robots")


def robots_header_directives(values: Iterable[str], agents: frozenset[str]) -> set[str]:
    """The directives of ``X-Robots-Tag`` header ``values`` that apply to a crawler
    named ``agents``: those without a crawler's name, and those after one of its names.
    A value that begins with another crawler's name (``otherbot: noindex, nofollow``) is
    that crawler's alone, each of its comma-separated directives included, as Google
    reads the header; ``unavailable_after: <date>`` and the other valued directives are
    no names."""
    found: set[str] = set()
    for value in values:
        agent: str | None = None
        for piece in value.split(","):
            named = _AGENT_PREFIX.match(piece)
            if named and named.group(1).lower() not in _VALUED_DIRECTIVES:
                agent, piece = named.group(1).lower(), named.group(2)
            directive = piece.strip().lower()
            if directive and (agent is None or agent in agents):
                found.add(directive)
    return found
