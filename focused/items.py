"""The item a focused crawl yields for every page it fetched."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

#: Characters of the page's main text in :attr:`PageItem.excerpt`.
EXCERPT_CHARS = 300


class _RawBody:
    """Where a :class:`PageItem` keeps the raw response bytes (and its main text cut
    into terms for the full-text index): slots, not fields."""

    __slots__ = ("_raw_body", "_text_terms")

    @property
    def text_terms(self) -> str | None:
        """``text`` cut into the index's terms, joined by spaces
        (:func:`focused.ranking.relevance.joined_terms`), when the spider cut it already;
        None: the store cuts it. The store pipeline takes it (then None)."""
        return getattr(self, "_text_terms", None)

    @text_terms.setter
    def text_terms(self, value: str | None) -> None:
        self._text_terms = value

    @property
    def body(self) -> bytes:
        """The raw response bytes, until the store pipeline takes them (then ``b""``)."""
        return getattr(self, "_raw_body", b"")

    @body.setter
    def body(self, value: bytes) -> None:
        self._raw_body = value


@dataclass(slots=True)
class PageItem(_RawBody):
    """One fetched page with its relevance scores (handled through itemadapter).

    Its fields are what a feed export (``-O items.jsonl``, ``.json``, ``.csv``,
    ``.xml``, ``FEEDS``) and scrapyd's ``items_dir`` write: the page's URL, title and
    scores (the page-relevance rule A = 4B + C; the m-value rule's ``m``, Liu, Xia & Xu
    2010), where the page store put it (``file_path``, the WARC segment relative to
    ``FOCUSED_OUTPUT_DIR``, ``record_offset`` and ``record_length`` of the page's
    record in it, and the SHA-256 ``content_hash`` of the raw body; filled by
    :class:`~focused.pipelines.PageStorePipeline`), an ``excerpt`` and the
    main ``text``. Every field is a str, number, bool or None, which every exporter
    Scrapy ships can write.

    The raw response bytes are *not* a field: ``PageItem(..., body=response.body)``
    (an init-only argument) keeps them in a slot, read and written as ``item.body``,
    which :class:`~itemadapter.ItemAdapter`, and so every exporter, does not see.
    The store pipeline takes them (``item.body`` is ``b""`` afterwards), so no copy of
    the page outlives it. (Scrapy hands a pipeline the item alone, and calls the feed
    exporter on ``item_scraped``, after every pipeline: bytes in a field would reach
    it.)
    """

    url: str
    title: str = ""
    title_relevance: float = 0.0  # B = cos(topic, title)
    body_relevance: float = 0.0  # C = cos(topic, body)
    page_relevance: float = 0.0  # A = 4B + C (the page-relevance rule)
    relevant: bool = False  # A > FOCUSED_PAGE_THRESHOLD
    is_target: bool | None = None  # from labels / topic targets; None when unknown
    #: message value of the request that fetched it (the m-value rule, Liu, Xia & Xu 2010)
    m: float = 0.0
    anchor_relevance: float = 0.0  # r of the link that led here
    link_value: float = 0.0  # the strategy's value of that link
    depth: int = 0
    parent_url: str = ""
    fetched_at: float = 0.0  # unix time
    status: int = 0
    encoding: str = ""
    link_count: int = 0
    strategy: str = ""
    #: the first EXCERPT_CHARS characters of the main text, whitespace collapsed
    excerpt: str = ""
    # main text (body text without script/style), at most FOCUSED_INDEX_MAX_CHARS
    # characters, for the store's full-text index; "" with FOCUSED_INDEX off
    text: str = field(default="", repr=False)
    content_hash: str = ""
    file_path: str = ""
    #: the page's WARC response record in the segment ``file_path``: byte offset and
    #: length (None for a body in a file of its own, the store's earlier layout)
    record_offset: int | None = None
    record_length: int | None = None
    body: InitVar[bytes] = b""  # the raw bytes: kept in a slot, see above

    def __post_init__(self, body: bytes) -> None:
        self._raw_body = body


# The dataclass left the init-only argument's default (b"") as a class attribute, which
# would hide the slot's property: drop it (``__init__`` keeps its own copy of it).
del PageItem.body


def excerpt(text: str, chars: int = EXCERPT_CHARS) -> str:
    """The first ``chars`` characters of ``text`` with its whitespace collapsed (only the
    start of a long text is split)."""
    window = chars * 4
    while True:
        words = " ".join(text[:window].split())
        if len(words) >= chars or window >= len(text):
            return words[:chars].rstrip()
        window *= 4
