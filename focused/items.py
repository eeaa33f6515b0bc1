"""The item a focused crawl yields for every page it fetched."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class PageItem:
    """One fetched page with its relevance scores (handled through itemadapter).

    ``body`` carries the raw response bytes to the store pipeline, which writes them
    compressed to disk, fills ``content_hash`` and ``file_path`` and drops ``body``
    (sets it to ``b""``) so that feed exports stay small.
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
    body: bytes = field(default=b"", repr=False)
    # main text (body text without script/style), at most FOCUSED_INDEX_MAX_CHARS
    # characters, for the store's full-text index; "" with FOCUSED_INDEX off
    text: str = field(default="", repr=False)
    content_hash: str = ""
    file_path: str = ""
