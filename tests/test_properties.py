"""Property tests (hypothesis): the tokenizer on any Unicode, relevance bounds, the m-value
rule (Liu, Xia & Xu 2010), and URL canonicalisation on a hostile web."""

from __future__ import annotations

import math
from urllib.parse import quote

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse, TextResponse
from w3lib.url import canonicalize_url

from focused.frontier.seen import url_fingerprint
from focused.ranking.mvalue import M_SCALE, child_m, priority, side_channel_hops
from focused.ranking.relevance import STOP_WORDS, TopicVector, page_relevance, tokenize
from focused.robustness import RobustnessMiddleware
from focused.web.sanitize import repair_encoding, scheme_problem, strip_session_ids
from focused.web.topics import load_topic

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples on every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Text from every Unicode block, with CJK and Latin words mixed in so both tokenizers run.
WORDS = st.sampled_from(["化学", "元素周期表", "acid", "Chemistry", "的", "İstanbul", "ß", "Ω"])
TEXT = st.lists(st.one_of(st.text(), WORDS), max_size=8).map(" ".join)

CHEMISTRY = TopicVector(load_topic("chemistry").keywords)


# --- tokenizer ---------------------------------------------------------------------------
@SETTINGS
@given(TEXT)
def test_tokenizer_takes_any_unicode(text):
    tokens = tokenize(text)
    assert tokens == tokenize(text)  # deterministic
    for token in tokens:
        assert isinstance(token, str) and token
        assert not any(ch.isspace() for ch in token)
        assert token not in STOP_WORDS
        assert token == token.lower() or not token.isascii()


@SETTINGS
@given(st.lists(st.from_regex(r"[a-z]{1,12}", fullmatch=True), max_size=10))
def test_latin_words_are_their_own_tokens(words):
    assert tokenize(" ".join(words).upper()) == [w for w in words if w not in STOP_WORDS]


# --- relevance ---------------------------------------------------------------------------
# Random topics use Latin keywords only: a Chinese keyword is added to jieba's (global)
# dictionary and would change how other tests segment.
KEYWORDS = st.dictionaries(
    st.from_regex(r"[a-z]{2,10}( [a-z]{2,10})?", fullmatch=True),
    st.floats(min_value=1e-3, max_value=1e3, allow_nan=False),
    min_size=1,
    max_size=12,
).filter(lambda d: any(w not in STOP_WORDS for k in d for w in k.split()))


@SETTINGS
@given(KEYWORDS, st.lists(TEXT, min_size=1, max_size=5))
def test_relevance_is_finite_and_in_unit_interval(keywords, texts):
    vector = TopicVector(keywords)
    for cos in (*vector.cosines(texts), *CHEMISTRY.cosines(texts)):
        assert math.isfinite(cos) and 0.0 <= cos <= 1.0
    assert vector.cosine(texts[0]) == vector.cosines(texts)[0]


@SETTINGS
@given(KEYWORDS)
def test_the_topic_scores_its_own_keywords_highest(keywords):
    vector = TopicVector(keywords)
    text = " ".join(f"{k} " * max(1, round(w)) for k, w in keywords.items())
    assert 0.0 < vector.cosine(text) <= 1.0
    assert vector.cosine("") == 0.0


@SETTINGS
@given(st.floats(0, 1), st.floats(0, 1), st.floats(min_value=0, max_value=100, allow_nan=False))
def test_page_relevance_is_bounded_and_monotone(title, body, weight):
    a = page_relevance(title, body, weight)
    assert math.isfinite(a) and 0.0 <= a <= weight + 1.0 + 1e-9
    assert page_relevance(min(1.0, title + 0.1), body, weight) >= a
    assert page_relevance(title, min(1.0, body + 0.1), weight) >= a


# --- the m-value rule (Liu, Xia & Xu 2010) -----------------------------------------------
M0 = st.floats(min_value=1.0, max_value=1000.0)
RATIO = st.floats(min_value=0.01, max_value=0.99)
UNIT = st.floats(min_value=0.0, max_value=1.0)
THRESHOLD = st.floats(min_value=0.0, max_value=0.99)


@SETTINGS
@given(m0=M0, ratio=RATIO, f=THRESHOLD, share1=UNIT, share2=UNIT, r1=UNIT, r2=UNIT)
def test_child_m_is_bounded_and_monotone(*, m0, ratio, f, share1, share2, r1, r2):
    p1, p2 = sorted((m0 * max(share1, 1e-6), m0 * max(share2, 1e-6)))
    r1, r2 = sorted((r1, r2))

    def child(p: float, r: float) -> float:
        return child_m(p, r, m0=m0, ratio=ratio, threshold=f)

    for p in (p1, p2):
        for r in (r1, r2):
            m = child(p, r)
            assert 0.0 < m <= m0  # bounded by M0
            if r > f:
                assert m == m0  # a relevant anchor keeps or restores the main channel
            else:
                assert m == p * ratio < p  # a side channel decays by b per hop
    assert child(p1, r1) <= child(p2, r1) and child(p1, r2) <= child(p2, r2)  # in m_parent
    assert child(p1, r1) <= child(p1, r2) and child(p2, r1) <= child(p2, r2)  # in r


@SETTINGS
@given(M0, RATIO, st.integers(min_value=0, max_value=60))
def test_side_channel_hops_count_the_decay(m0, ratio, hops):
    m = m0
    for _ in range(hops):
        m = child_m(m, 0.0, m0=m0, ratio=ratio, threshold=0.2)
    assume(m > 0)
    assert side_channel_hops(m, m0=m0, ratio=ratio) == hops


@SETTINGS
@given(
    st.floats(min_value=0, max_value=1e6),
    st.floats(min_value=0, max_value=1e6),
    UNIT,
    UNIT,
)
def test_priority_orders_by_m_then_r(m1, m2, r1, r2):
    q1, q2 = round(m1 * M_SCALE), round(m2 * M_SCALE)
    if q1 > q2:
        assert priority(m1, r1) > priority(m2, r2)  # m first, whatever r
    elif q1 == q2:
        assert (priority(m1, r1) >= priority(m2, r2)) == (r1 >= r2) or abs(r1 - r2) < 2e-3


@SETTINGS
@given(
    st.floats(min_value=10, max_value=1000),
    st.floats(min_value=0.5, max_value=0.95),
    st.integers(min_value=0, max_value=5),
    UNIT,
    UNIT,
)
def test_each_irrelevant_hop_ranks_below_the_last(m0, ratio, k, r1, r2):
    """With the paper's kind of parameters, a link one more hop down a side channel
    always waits behind, whatever the anchors (the m-value rule orders by m first)."""
    assert priority(m0 * ratio**k, r1) > priority(m0 * ratio ** (k + 1), r2)


# --- URLs --------------------------------------------------------------------------------
HOST = st.one_of(
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?(\.[a-z]{2,6}){1,2}", fullmatch=True),
    st.sampled_from(["127.0.0.1", "例子.中国", "bücher.de", "EXAMPLE.org"]),
)
SEGMENT = st.text(max_size=12).map(lambda s: quote(s, safe="%;=@:+!$&'()*,")) | st.text(
    alphabet="abc%20%zz/;=é中 ", max_size=12
)
QUERY = st.lists(
    st.tuples(st.text(alphabet="abcsidSID_é中 %+=", max_size=8), st.text(max_size=8)),
    max_size=4,
).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))


@st.composite
def urls(draw) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    port = draw(st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")))
    path = "/".join(draw(st.lists(SEGMENT, max_size=4)))
    query = draw(QUERY)
    fragment = draw(st.one_of(st.just(""), st.text(max_size=6).map(lambda s: "#" + s)))
    return f"{scheme}://{draw(HOST)}{port}/{path}" + (f"?{query}" if query else "") + fragment


@SETTINGS
@given(urls())
def test_canonicalisation_is_idempotent(url):
    canonical = canonicalize_url(url)
    assert canonicalize_url(canonical) == canonical
    assert url_fingerprint(url) == url_fingerprint(canonical)  # dedup sees one URL


@SETTINGS
@given(urls())
def test_session_id_stripping_is_idempotent_and_keeps_urls_crawlable(url):
    once = strip_session_ids(url)
    assert strip_session_ids(once) == once
    assert scheme_problem(once) == scheme_problem(url)
    assert canonicalize_url(strip_session_ids(canonicalize_url(once))) == canonicalize_url(once)


CHARSETS = ["utf-8", "gbk", "big5", "iso-8859-1", "x", "utf-16", "utf-32", "zlib", "undefined"]


@SETTINGS
@given(st.binary(max_size=2000), st.sampled_from(CHARSETS))
def test_charset_repair_never_fails(body, charset):
    encoding = repair_encoding(f"text/html; charset={charset}", body)
    assert encoding is None or body.decode(encoding, "replace") is not None


@SETTINGS
@given(
    st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([b"<p>", b"\xe9", b"\x00"]))),
    st.sampled_from([*CHARSETS, "idna", "hex", "rot13", "base64", "utf-16le", None]),
    st.sampled_from([None, "zlib", "utf-16", "gbk", "undefined"]),
)
def test_every_page_decodes_after_the_robustness_middleware(parts, charset, meta):
    """Whatever its body, header charset and ``<meta>`` charset, a text page that the
    middleware lets through decodes (Scrapy raised on ``charset=zlib``, ``undefined``...)."""
    body = b"".join(parts)
    if meta is not None:
        body = f'<meta charset="{meta}">'.encode() + body
    content_type = "text/html" + (f"; charset={charset}" if charset else "")
    response = HtmlResponse("http://h.org/", body=body, headers={"Content-Type": content_type})
    page = RobustnessMiddleware().process_response(response.request, response)
    if isinstance(page, TextResponse):
        assert isinstance(page.text, str)


def _scheme_problem_reference(url: str) -> str | None:
    """``scheme_problem`` the long way, a ``urlsplit`` per URL (its fast path must agree)."""
    import re
    from urllib.parse import urlsplit

    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):", url.strip())
    if match is None:
        return "bad_url"
    scheme = match.group(1).lower()
    if scheme not in ("http", "https"):
        return scheme if len(scheme) <= 16 else "other"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        return "bad_url"
    if parts.username is not None:
        return "credentials"
    host = parts.hostname
    if not host:
        return "bad_url"
    if parts.netloc.startswith("["):  # an IPv6 literal: an ASCII zone id is allowed
        bad = not host.isascii()
    else:
        bad = any(c.isascii() and not (c.isalnum() or c in ".-_") for c in host)
        bad = bad or not _idna_reference(host)
    return "bad_host" if bad else None


def _idna_reference(host: str) -> bool:
    """Whether safe_url_string IDNA-encodes a non-ASCII host (U+FFFD, an empty label fail),
    and getaddrinfo an ASCII one (an empty or over-63-character label fail)."""
    import unicodedata

    try:
        (host if host.isascii() else unicodedata.normalize("NFKC", host)).encode("idna")
    except UnicodeError:
        return False
    return True


_URL_PARTS = st.sampled_from(
    ["http://", "https://", "HTTP://", "h", "a.b", "-", "_", "~", ":", "80", "65535",
     "65536", "0" * 12, "99999", "@", "[", "]", "::1", "/", "?", "#", "%", "é", "\t",
     "\n", " ", "１", "x" * 3, "\ufffd", ".", "é" * 33]
)  # fmt: skip


@SETTINGS
@given(st.lists(_URL_PARTS, max_size=8).map("".join))
@example("http://~")  # a host the fast path took for plain
@example("http://h@h")
@example("http://%")
@example("http://h:0")
@example("http://x1\ufffd.test")  # IDNA cannot encode it
@example("http://é..h")
@example("http://a..b")  # an empty label: getaddrinfo cannot IDNA-encode it
@example("http://.h")
@example("http://" + "x" * 64 + ".h")  # a label over 63 characters
def test_scheme_problem_fast_path_agrees_with_urlsplit(url):
    assert scheme_problem(url) == _scheme_problem_reference(url)
    if url.startswith(("http://", "https://")):
        for tail in ("/p?q#f", ":8080/x", ":", ":123456", "\n"):
            assert scheme_problem(url + tail) == _scheme_problem_reference(url + tail)
