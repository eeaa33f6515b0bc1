"""Topic relevance in the vector space model (ALGORITHMS.md section 1).

``sim(p, R) = sum_i w_ip * w_iR / (|w_p| * |w_R|)``: the cosine between the term
frequencies of a text and the keyword weights of a topic. Chinese runs are segmented with
jieba, Latin text is split into lower-cased words; mixed text works. Vectors are hashed
with scikit-learn's ``HashingVectorizer`` scheme (2**20 features, signed 32-bit
murmurhash3 of each term with seed 0, here computed by ``mmh3``; no alternating sign, l2
norm), without importing scikit-learn: a crawl that does not learn never loads it. The
cosine needs only the text's term counts per hashed feature and the topic's few
features, so it is computed from a ``Counter`` of the terms and a cache of term ->
feature instead of building a sparse matrix per text (the matrix path cost ~1.5 ms per
call and dominated a crawl's CPU time; see ``docs/speed.md``). Results are the same
numbers: counts are integers, so the norm is exact, and the dot product adds the same
terms in the same (ascending feature) order as scikit-learn's sparse product
(``tests/test_relevance.py`` compares with scikit-learn itself).

- anchor relevance ``r = sim(anchor, topic)`` (the m-value rule, Liu, Xia & Xu 2010);
- page relevance ``A = 4B + C``, B the title's cosine, C the body's (the page-relevance
  rule A = 4B + C).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import filterfalse
from operator import mul
from typing import TYPE_CHECKING

import mmh3
import numpy as np

from focused.bounded import remember

if TYPE_CHECKING:
    import rjieba

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
_WORD = re.compile(r"[^\W_]+")  # = _TOKEN on a text without Chinese (a little faster)
# every byte but the UTF-8 lead bytes of the characters of _CJK (U+3400-U+9FFF: 0xE3 to
# 0xE9; U+F900-U+FAFF: 0xEF): a text whose UTF-8 keeps none of them has no Chinese
_NOT_CJK_LEAD = bytes(b for b in range(256) if not (0xE3 <= b <= 0xE9 or b == 0xEF))

#: Function words that carry no topic (kept small on purpose).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "with",
        "的",
        "了",
        "和",
        "是",
        "在",
        "与",
        "及",
        "或",
        "也",
        "就",
        "都",
        "而",
        "之",
        "其",
        "这",
        "那",
        "有",
        "为",
        "把",
        "被",
    ]
)

N_FEATURES = 2**20


#: Terms whose hashed feature is cached (cleared when full).
FEATURE_CACHE_SIZE = 1 << 18
#: Short texts (anchors, titles) whose cosine is cached (cleared when full): the same
#: anchor text comes back on page after page.
TEXT_CACHE_SIZE = 1 << 16
TEXT_CACHE_MAX_CHARS = 200
#: From this many distinct terms, a text's terms are hashed in one C loop and added up
#: by numpy (:func:`hashed_features`; its fixed overhead beats a Python lookup per term
#: on long texts).
HASH_IN_C_FROM = 400


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese character (of ``_CJK``). The regular expression
    steps through every character (~0.17 ms on a 20 kB page); most texts are settled in
    C first: ASCII, or UTF-8 without a lead byte of a Chinese character."""
    if text.isascii():
        return False
    try:
        lead = text.encode("utf-8").translate(None, _NOT_CJK_LEAD)
    except UnicodeError:  # a lone surrogate
        return _CJK_RUN.search(text) is not None
    return bool(lead) and _CJK_RUN.search(text) is not None


def tokenize(text: str) -> list[str]:
    """Terms of ``text``: jieba words for Chinese runs (each followed by the topic's
    keywords inside it, :func:`_cut`), lower-cased words for the rest."""
    return _tokenize(text, _cut)


def keyword_terms(keyword: str) -> list[str]:
    """Terms of a topic's keyword: :func:`tokenize` with jieba's words alone for the
    Chinese runs (:func:`_words`). A keyword such as 化学元素 is one term, as jieba
    keeps it whole; the topic's other keywords inside it (化学, 元素) are not added to
    it, so a compound keyword adds no weight to the keywords it holds."""
    return _tokenize(keyword, _words)


def _tokenize(text: str, cut: Callable[[str], list[str]]) -> list[str]:
    """:func:`tokenize` with ``cut`` for the Chinese runs (a topic's own keywords are
    jieba's words alone: :func:`_words`)."""
    if not _has_cjk(text):  # no Chinese: one C-level pass (same terms)
        return [w for w in map(str.lower, _WORD.findall(text)) if w not in STOP_WORDS]
    tokens: list[str] = []
    for run in _TOKEN.findall(text):
        if _CJK_RUN.match(run):
            tokens.extend(w for w in cut(run) if w not in STOP_WORDS)
        else:
            word = run.lower()
            if word not in STOP_WORDS:
                tokens.append(word)
    return tokens


_WORD_OR_NUL = re.compile(r"[^\W_]+|\x00")


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """:func:`tokenize` of each of ``texts``: the ones without Chinese (and without NUL)
    in one C-level pass over them all, joined by NUL and split again at it."""
    out: list[list[str] | None] = [None] * len(texts)
    plain = [i for i, t in enumerate(texts) if t.isascii() and "\x00" not in t]
    if len(plain) > 1:
        words = [
            w
            for w in _WORD_OR_NUL.findall("\x00".join([texts[i] for i in plain]).lower())
            if w not in STOP_WORDS
        ]
        start = 0
        for i in plain[:-1]:
            end = words.index("\x00", start)
            out[i] = words[start:end]
            start = end + 1
        out[plain[-1]] = words[start:]
    return [tokenize(t) if got is None else got for t, got in zip(texts, out, strict=True)]


def _words(run: str) -> list[str]:
    """jieba's words of a Chinese run (its default mode, with the HMM for words not in
    the dictionary), by jieba-rs: the same words as Python's ``jieba.lcut`` (the same
    dictionary and algorithm: a prefix-dictionary DAG, the most probable path, Viterbi
    for unknown words; every one of 41,000 sandbox runs alike, with and without the
    topics' words), ~12x faster, and a dictionary of ~25 MB built in ~0.07 s instead of
    ~90 MB of Python objects loaded in ~0.7 s."""
    return _segmenter().cut(run)


def _cut(run: str) -> list[str]:
    """The terms of a Chinese run: jieba's words (:func:`_words`), each followed by the
    topic's keywords found inside it (:func:`_inner_keywords`): jieba keeps a dictionary
    compound such as 化学元素 whole, and without its inner keywords (化学, 元素) a page
    of such compounds would score 0 for its topic and a search for 元素 miss it. The
    one place Chinese text is cut: term counts, joined terms (the full-text index),
    search queries and anchors alike."""
    words = _segmenter().cut(run)
    if not _inside:
        return words
    cache = _inner
    out: list[str] = []
    for word in words:
        out.append(word)
        if len(word) > 1:
            inner = cache.get(word)
            if inner is None:
                inner = remember(cache, word, _inner_keywords(word), INNER_CACHE_SIZE)
            if inner:
                out.extend(inner)
    return out


#: Words whose inner keywords are cached (emptied when full, and when the topic's words
#: change).
INNER_CACHE_SIZE = 1 << 16
#: Where a keyword of one character counts inside a word: "end" (硫酸, 盐酸 hold 酸; 酸奶
#: and 不酸不甜 do not), "never" or "any" (docs/speed.md, "Chinese compounds": "end"
#: measured best on the sandbox).
INNER_SINGLE = "end"
#: the Chinese keywords the topics added to jieba's dictionary (all Chinese
#: characters: only those can sit inside a word of a Chinese run), and their lengths,
#: longest first; empty until a topic adds one
_inside: frozenset[str] = frozenset()
_inside_lengths: tuple[int, ...] = ()
#: word -> the keywords inside it (:func:`_inner_keywords`)
_inner: dict[str, tuple[str, ...]] = {}


def _inner_keywords(word: str) -> tuple[str, ...]:
    """The topic's keywords inside ``word`` (not one itself), in their order in it: each
    occurrence not inside a longer one found there (有机化学家 gives 有机化学, not 化学
    again: the word counts as the keywords it is made of); a keyword of one character
    only as :data:`INNER_SINGLE` says."""
    if word in _inside:
        return ()
    n = len(word)
    found: list[tuple[int, int]] = []  # (start, end) of each occurrence
    for length in _inside_lengths:
        if length >= n:
            continue
        if length == 1 and INNER_SINGLE != "any":
            if INNER_SINGLE == "end" and word[-1] in _inside:
                found.append((n - 1, n))
            continue
        for start in range(n - length + 1):
            if word[start : start + length] in _inside:
                found.append((start, start + length))
    if not found:
        return ()
    # longest first: an occurrence inside one already kept is left out
    kept: list[tuple[int, int]] = []
    for start, end in found:
        if not any(s <= start and end <= e for s, e in kept):
            kept.append((start, end))
    kept.sort()
    return tuple(word[s:e] for s, e in kept)


def _words_changed() -> None:
    """The topics' words changed: the keywords looked for inside words, and the cache."""
    global _inside, _inside_lengths
    _inside = frozenset(w for w in (*_kept, *_held) if _ALL_CJK.fullmatch(w))
    _inside_lengths = tuple(sorted({len(w) for w in _inside}, reverse=True))
    _inner.clear()


_ALL_CJK = re.compile(rf"[{_CJK}]+")


# ASCII letters and digits stay (upper case folded to lower case), every other ASCII byte
# becomes a space; bytes of non-ASCII characters stay, for a second look.
_FOLD = bytes(
    b + 32 if 65 <= b <= 90 else b if 48 <= b <= 57 or 97 <= b <= 122 or b >= 128 else 32
    for b in range(256)
)
_STOP_BYTES = frozenset(w.encode("utf-8") for w in STOP_WORDS if w.isascii())


def term_counts(text: str) -> Counter[bytes]:
    """How often each term of :func:`tokenize` occurs in ``text``, terms in UTF-8.

    Same terms, counted without making a string per word: a text without Chinese is
    encoded once, ASCII punctuation mapped to spaces and lower-cased with one
    ``bytes.translate``, split and counted in C; only the few words holding non-ASCII
    characters (accents, typographic quotes, non-breaking spaces) go through the regular
    expression of :func:`tokenize` again.
    """
    if _has_cjk(text):
        return _mixed_term_counts(text)
    try:
        data = text.encode("utf-8")
    except UnicodeError:  # a lone surrogate
        return Counter(t.encode("utf-8", "surrogatepass") for t in tokenize(text))
    counts = Counter(data.translate(_FOLD).split())
    if not data.isascii():
        # all taken out before any is added back (see _plain_joined_and_counts)
        for term, n in [(t, counts.pop(t)) for t in [t for t in counts if not t.isascii()]]:
            for word in _cut_word(term).split():
                counts[word] += n
    for stop in _STOP_BYTES & counts.keys():
        del counts[stop]
    return counts


_CJK_SPLIT = re.compile(rf"([{_CJK}]+)")


def joined_terms(text: str) -> str:
    """``" ".join(tokenize(text))``, the same string made as :func:`term_counts` counts:
    text outside Chinese runs folded and split as bytes in C, only words holding
    non-ASCII characters through the regular expression again, jieba on the Chinese
    runs; in the order of the text (for the full-text index)."""
    if not _has_cjk(text):
        return _joined_plain(text)
    parts = _CJK_SPLIT.split(text)  # other text, a Chinese run, other text, ...
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2:
            out.extend(w for w in _cut(part) if w not in STOP_WORDS)
        elif part:
            joined = _joined_plain(part)
            if joined:
                out.append(joined)
    return " ".join(out)


def joined_and_counts(text: str) -> tuple[str, Counter[bytes]]:
    """``(joined_terms(text), term_counts(text))`` from one pass over ``text``: the
    counts are those of the joined terms (no term holds ASCII white space), so a page's
    text is cut once (jieba too) for its relevance and its full-text index."""
    if not _has_cjk(text):
        try:
            data = text.encode("utf-8")
        except UnicodeError:  # a lone surrogate
            return " ".join(tokenize(text)), term_counts(text)
        return _plain_joined_and_counts(data)
    joined = joined_terms(text)
    try:
        data = joined.encode("utf-8")
    except UnicodeError:  # a lone surrogate
        return joined, term_counts(text)
    return joined, Counter(data.split())


def _plain_joined_and_counts(data: bytes) -> tuple[str, Counter[bytes]]:
    """:func:`joined_and_counts` of the UTF-8 ``data`` of a text without Chinese: split
    once, the stop words filtered and the terms counted in C; then only the few words
    holding non-ASCII bytes (accents, dashes, typographic quotes) are cut again by the
    regular expression, in the counts and, in place, in the joined bytes."""
    kept = list(filterfalse(_STOP_BYTES.__contains__, data.translate(_FOLD).split()))
    counts = Counter(kept)
    joined = b" ".join(kept)
    if data.isascii():
        return joined.decode("ascii"), counts
    cut: dict[bytes, bytes] = {}  # a word holding non-ASCII bytes -> its terms, joined
    # all taken out before any term is added: a term may be such a word itself ("İ"
    # lowers to "i" and a combining dot, a word of its own)
    for word, n in [(w, counts.pop(w)) for w in [w for w in counts if not w.isascii()]]:
        cut[word] = terms = _cut_word(word)
        for term in terms.split():
            counts[term] += n
    return _recut(joined, cut.__getitem__).decode("utf-8"), counts


# ASCII bytes stay, every other byte becomes 0x80: one ``find`` in C reaches the next
# word holding a non-ASCII character
_MARK_HIGH = bytes(b if b < 128 else 128 for b in range(256))


def _cut_word(word: bytes) -> bytes:
    """The terms of a (UTF-8) word holding non-ASCII bytes, joined: the regular
    expression's words, lower-cased, without the stop words."""
    words = map(str.lower, _WORD.findall(word.decode("utf-8")))
    return b" ".join([w.encode("utf-8") for w in words if w not in STOP_WORDS])


def _recut(joined: bytes, cut: Callable[[bytes], bytes]) -> bytes:
    """``joined`` (words between single spaces) with each word holding non-ASCII bytes
    replaced by ``cut(word)``, or left out where that is empty."""
    marked = joined.translate(_MARK_HIGH)
    i = marked.find(128)
    if i < 0:
        return joined
    chunks: list[bytes] = []
    pos, end = 0, len(joined)
    while i >= 0:
        start = joined.rfind(32, 0, i) + 1  # the word holding byte i
        stop = joined.find(32, i)
        if stop < 0:
            stop = end
        if start > pos:
            chunks.append(joined[pos : start - 1])
        terms = cut(joined[start:stop])
        if terms:
            chunks.append(terms)
        pos = stop + 1
        i = marked.find(128, pos)
    if pos < end:
        chunks.append(joined[pos:])
    return b" ".join(chunks)


def _joined_plain(text: str) -> str:
    """:func:`joined_terms` of a text without Chinese: its words filtered as bytes; only
    those holding non-ASCII characters (a few dozen on a page with accents or dashes) go
    through the regular expression."""
    try:
        data = text.encode("utf-8")
    except UnicodeError:  # a lone surrogate
        return " ".join(tokenize(text))
    joined = b" ".join(filterfalse(_STOP_BYTES.__contains__, data.translate(_FOLD).split()))
    if data.isascii():
        return joined.decode("ascii")
    return _recut(joined, _cut_word).decode("utf-8")


def _mixed_term_counts(text: str) -> Counter[bytes]:
    """:func:`term_counts` of a text with Chinese: jieba cuts only the Chinese runs, the
    rest (a space in place of each run, which ends a word there as the run did) takes the
    fast path. The same terms as :func:`tokenize`, counted in another key order."""
    parts = _CJK_SPLIT.split(text)  # other text, a Chinese run, other text, ...
    counts = term_counts(" ".join(parts[0::2]))
    for run in parts[1::2]:
        for word in _cut(run):
            if word not in STOP_WORDS:
                counts[word.encode("utf-8")] += 1
    return counts


_murmur = mmh3.hash


def feature(term: str | bytes) -> int:
    """Hashed feature of ``term`` (a ``str`` or its UTF-8), as scikit-learn's ``FeatureHasher``
    computes it."""
    h = _murmur(term, 0, True)  # = sklearn.utils.murmurhash3_32(term, 0)
    if h == -2147483648:  # abs(-2**31) is undefined: FeatureHasher's special case
        return (2147483647 - (N_FEATURES - 1)) % N_FEATURES
    return abs(h) % N_FEATURES


def hashed_features(terms: Iterable[str | bytes], n: int = -1) -> np.ndarray:
    """:func:`feature` of each term (``n`` of them, when known), hashed in one C loop."""
    h = np.fromiter(map(_murmur, terms), dtype=np.int64, count=n)
    # abs(-2**31) % N_FEATURES is 0 in int64, as in FeatureHasher's special case
    np.abs(h, out=h)
    h %= N_FEATURES
    return h


def term_buckets(terms: Collection[str | bytes]) -> np.ndarray:
    """The distinct :func:`feature` buckets of ``terms``, ascending."""
    if not terms:
        return np.zeros(0, dtype=np.int64)
    return np.unique(hashed_features(terms, len(terms)))


def jieba_words(keywords: Iterable[str]) -> list[str]:
    """The keywords a :class:`TopicVector` adds to jieba's dictionary (those with
    Chinese), in their order."""
    return [term for term in keywords if _has_cjk(term)]


# jieba's dictionary is one per process: the words a topic adds change how every later
# text is cut, whichever crawl cuts it. A crawl holds the dictionary while it runs
# (:func:`hold_words`); the words its topic added are dropped when the last crawl that
# holds it ends (:func:`release_words`), so a crawl run after another in the same
# process (``yield runner.crawl(...)``) cuts text as in a process of its own.
_dictionary: rjieba.Jieba | None = None
#: words added outside any crawl (a script's TopicVector): kept for the process
_kept: list[str] = []
#: words the held crawls' topics added, in their order: dropped at the last release
_held: list[str] = []
_holders = 0


def _segmenter() -> rjieba.Jieba:
    """jieba's dictionary with the words added so far, built at the first cut: a crawl
    whose topic and pages have no Chinese never builds it, nor imports rjieba (0.13 s of
    every ``scrapy`` command's start, a one-line error included, when it was imported
    with this module)."""
    global _dictionary
    if _dictionary is None:
        import rjieba

        dictionary = rjieba.Jieba()
        for word in (*_kept, *_held):
            dictionary.add_word(word, None, None)  # its frequency as jieba suggests it
        _dictionary = dictionary
    return _dictionary


def hold_words() -> None:
    """A crawl starts: the words its topic's :class:`TopicVector` adds are dropped by
    :func:`release_words` once no crawl holds the dictionary."""
    global _holders
    _holders += 1


def release_words() -> None:
    """A crawl that called :func:`hold_words` ended: when it was the last, jieba's
    dictionary is built again without the words the held crawls added."""
    global _holders, _dictionary
    if _holders == 0:
        return
    _holders -= 1
    if _holders or not _held:
        return
    _held.clear()
    _dictionary = None
    _words_changed()


def _add_word(term: str) -> None:
    """Add ``term`` to jieba's dictionary (once), held by the running crawls if any."""
    if term in _kept or term in _held:
        return
    (_held if _holders else _kept).append(term)
    if _dictionary is not None:
        _dictionary.add_word(term, None, None)
    _words_changed()


@contextmanager
def cutting_with(words: Iterable[str]) -> Iterator[None]:
    """Cut text with ``words`` in jieba's dictionary too (and as keywords inside words,
    :func:`_cut`) until the block ends: the words a store's full-text index was cut
    with (its crawl's topic), for its queries and its reindex in a process that has no
    crawl of that topic. The words this block added are dropped at its end (jieba's
    dictionary is built again without them), so a process that searches two stores cuts
    each with its own words, and a crawl running beside it keeps cutting with its own."""
    global _dictionary
    new = [w for w in dict.fromkeys(words) if w not in _kept and w not in _held]
    for word in new:
        _add_word(word)
    try:
        yield
    finally:
        if new:
            gone = set(new)
            _kept[:] = [w for w in _kept if w not in gone]
            _held[:] = [w for w in _held if w not in gone]
            _dictionary = None
            _words_changed()


#: The largest keyword weight kept as it is (and the inverse of the smallest): beyond it
#: the sum of the squared weights overflows to ``inf`` (from ~1e154: every unit weight
#: became 0, so every text scored 0; two keywords of one term summed to ``inf``, a NaN
#: cosine) or loses precision in subnormal numbers (under ~1e-154).
WEIGHT_SCALE_LIMIT = 1e100


def scaled_weights(keywords: Mapping[str, float]) -> Mapping[str, float]:
    """``keywords`` as they are, or each weight divided by the largest when that is over
    :data:`WEIGHT_SCALE_LIMIT` or under its inverse: the cosine does not depend on the
    scale of the topic's weights, only on their ratios, so the scores are those of the
    same topic written with moderate weights."""
    top = max((float(w) for w in keywords.values()), default=0.0)
    if not top > 0.0 or 1.0 / WEIGHT_SCALE_LIMIT <= top <= WEIGHT_SCALE_LIMIT:
        return keywords
    return {term: float(weight) / top for term, weight in keywords.items()}


class TopicVector:
    """A topic's weighted keywords as a unit vector; scores texts by cosine.

    Chinese keywords are added to jieba's dictionary so that a keyword such as
    ``元素周期表`` is one term in the topic and in the texts alike.
    """

    def __init__(self, keywords: Mapping[str, float]) -> None:
        for term in jieba_words(keywords):
            _add_word(term)
        weights: dict[str, float] = {}
        for term, weight in scaled_weights(keywords).items():
            # jieba's words alone: the topic's vector is the same with or without the
            # keywords inside words (a keyword jieba keeps whole is one term either way)
            for token in keyword_terms(term):
                weights[token] = weights.get(token, 0.0) + float(weight)
        if not weights:
            raise ValueError("the topic has no usable keyword")
        self.weights = weights
        # the topic as scikit-learn's FeatureHasher(input_type="dict") + normalize() make
        # it: zero weights skipped, weights sharing a feature added, features ascending,
        # divided by the l2 norm summed in that order
        summed: dict[int, float] = {}
        for token, weight in weights.items():
            if weight != 0:
                f = feature(token)
                summed[f] = summed.get(f, 0.0) + weight
        columns = sorted(summed)
        squares = 0.0
        for f in columns:
            squares += summed[f] * summed[f]
        norm = math.sqrt(squares) if squares != 0.0 else 1.0
        #: the topic's features (ascending) and their unit weights
        self._columns = np.array(columns, dtype=np.int32)
        self._values = np.array([summed[f] / norm for f in columns], dtype=np.float64)
        # feature -> unit topic weight, in ascending feature order (scikit-learn's order)
        self._topic: dict[int, float] = dict(zip(columns, self._values.tolist(), strict=True))
        self._features: dict[bytes, int] = {}
        self._short: dict[str, float] = {}

    def _cosine(self, text: str) -> float:
        return self.cosine_of_counts(term_counts(text))

    def cosine_and_buckets(self, counts: Counter[bytes]) -> tuple[float, np.ndarray]:
        """:meth:`cosine_of_counts` and :func:`term_buckets` of the counted terms, hashed
        once for both (a strategy that learns from the page's terms needs its buckets)."""
        if len(counts) > HASH_IN_C_FROM:
            return self._cosine_hashed(counts)
        return self.cosine_of_counts(counts), term_buckets(counts)

    def cosine_of_counts(self, counts: Counter[bytes]) -> float:
        """Cosine of a text given by its :func:`term_counts` (for a caller that needs the
        counts too: the ``learning`` strategy learns the page's terms)."""
        if not counts:
            return 0.0
        if len(counts) > HASH_IN_C_FROM:
            return self._cosine_hashed(counts)[0]
        features = self._features
        fs = list(map(features.get, counts))
        if None in fs:  # terms not met before
            if len(features) + len(fs) > FEATURE_CACHE_SIZE:
                features.clear()
            for i, (term, f) in enumerate(zip(counts, fs, strict=True)):
                if f is None:
                    fs[i] = features[term] = feature(term)
        n_terms = counts.values()
        per_feature = dict(zip(fs, n_terms, strict=True))
        if len(per_feature) < len(fs):  # two terms hashed to one feature: add their counts
            per_feature = {}
            for f, n in zip(fs, n_terms, strict=True):
                per_feature[f] = per_feature.get(f, 0) + n
            n_terms = per_feature.values()
        # integer counts: the sum of squares is exact, in any order
        norm = math.sqrt(sum(map(mul, n_terms, n_terms)))
        topic = self._topic
        dot = 0.0
        for f in sorted(per_feature.keys() & topic.keys()):
            # ascending features: scikit-learn's sparse product adds them in this order
            dot += (per_feature[f] / norm) * topic[f]
        return 0.0 if dot < 0.0 else 1.0 if dot > 1.0 else dot

    def _cosine_hashed(self, counts: Counter[bytes]) -> tuple[float, np.ndarray]:
        """:meth:`_cosine` of a long text, and its distinct buckets (:func:`term_buckets`):
        the terms are hashed in one C loop (:func:`features`) and the counts of terms
        sharing a feature added by numpy; same norm and same ordered sum."""
        features, inverse = np.unique(
            hashed_features(counts, len(counts)), return_inverse=True
        )  # ascending features
        n_terms = np.bincount(
            inverse, weights=np.fromiter(counts.values(), np.float64, len(counts))
        )
        norm = math.sqrt(float(np.dot(n_terms, n_terms)))  # integer-valued: exact
        topic = self._topic
        common = np.isin(features, self._columns)
        dot = 0.0
        for f, n in zip(features[common].tolist(), n_terms[common].tolist(), strict=True):
            dot += (n / norm) * topic[f]
        return (0.0 if dot < 0.0 else 1.0 if dot > 1.0 else dot), features

    def _cached_cosine(self, text: str) -> float:
        if len(text) > TEXT_CACHE_MAX_CHARS:
            return self._cosine(text)
        short = self._short
        cos = short.get(text)
        if cos is None:
            cos = remember(short, text, self._cosine(text), TEXT_CACHE_SIZE)
        return cos

    def cosines(self, texts: Sequence[str] | Iterable[str]) -> np.ndarray:
        """Cosine of each text with the topic, in [0, 1]."""
        return np.array(list(map(self._cached_cosine, texts)), dtype=np.float64)

    def cosines_reference(self, texts: Sequence[str] | Iterable[str]) -> np.ndarray:
        """:meth:`cosines` through scikit-learn's ``HashingVectorizer`` and sparse
        matrices (slow, and it imports scikit-learn; for tests)."""
        from sklearn.feature_extraction.text import HashingVectorizer

        texts = list(texts)
        if not texts:
            return np.zeros(0)
        vectorizer = HashingVectorizer(
            analyzer=tokenize, n_features=N_FEATURES, alternate_sign=False, norm="l2"
        )
        matrix = vectorizer.transform(texts)
        return np.asarray(matrix[:, self._columns] @ self._values).ravel().clip(0.0, 1.0)

    def cosine(self, text: str) -> float:
        """Cosine of one text with the topic."""
        return self._cached_cosine(text)


def page_relevance(title_cosine: float, body_cosine: float, title_weight: float = 4.0) -> float:
    """A = 4B + C (the page-relevance rule): the title counts four times the body."""
    return title_weight * title_cosine + body_cosine
