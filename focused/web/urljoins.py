"""``urllib.parse.urljoin`` cached across the pages of a site.

The URL that an ``href`` with a path (not empty, not starting with ``?`` or ``#``) makes
against a base URL depends on the base's scheme, network location and folder only
(RFC 3986, section 5.2.2, as ``urljoin`` implements it): the query, fragment and last
path segment of the base are not used. The pages of one folder then share the joins of
the ``href``s they repeat (a wiki's navigation, the same articles linked from page after
page), and a join costs one dictionary lookup instead of two URL parses.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from focused.bounded import remember


class FolderJoins:
    """``urljoin(base, href)`` with the joins of ``href``s that have a path cached by the
    base's scheme, network location and folder; at most ``size`` of them (the cache is
    emptied when full)."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self._joins: dict[tuple[str, str, str, str], str] = {}

    def of(self, base: str) -> Callable[[str], str]:
        """The join of an ``href`` with ``base`` (raises ``ValueError`` as ``urljoin``)."""
        try:
            parts = urlsplit(base)
        except ValueError:  # urljoin raises it for each href: nothing to share
            parts = None
        if parts is None or not base:  # no base: urljoin returns each href as it is
            return lambda href: urljoin(base, href)
        path = parts.path
        scheme, netloc, folder = parts.scheme, parts.netloc, path[: path.rfind("/") + 1]
        joins, size = self._joins, self.size

        def join(href: str) -> str:
            if not href or href[0] in "?#":  # it takes the base's path or query too
                return urljoin(base, href)
            key = (scheme, netloc, folder, href)
            url = joins.get(key)
            if url is None:
                url = remember(joins, key, urljoin(base, href), size)
            return url

        return join
