"""An ``href`` made absolute as the link extractor makes it, remembered across pages.

Pages of one site share their links (a wiki's pages in one folder link to the same
names), and ``urllib.parse.urljoin`` takes ~30 µs a link in the text-around-links pass
of a learning crawl. A relative ``href`` resolves against the base URL's scheme, host
and folder only (``urljoin``'s own steps: the base's last path segment, query and
fragment are not used once the ``href`` has a path or parameters), so the result is
remembered under that folder and the ``href``. Only an ``href`` without ``:`` (no
scheme of its own) that starts with none of ``?``, ``#``, ``//`` and a control
character (``urlsplit`` drops those first) is remembered: for those the rule above
holds in ``urljoin``'s code; every other one is joined each time.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urljoin, urlparse

from w3lib.url import safe_url_string

#: Remembered ``href``s, in all; all are forgotten when there are more.
CACHE_SIZE = 1 << 17


def _join(base: str, href: str, encoding: str) -> str:
    url = urljoin(base, href)
    return url if url.isascii() and " " not in url else safe_url_string(url, encoding)


class HrefJoiner:
    """``href`` -> absolute URL for the pages of a crawl (:meth:`for_base`)."""

    def __init__(self, cache_size: int = CACHE_SIZE) -> None:
        self.cache_size = cache_size
        self._folders: dict[tuple[str, str, str, str], dict[str, str]] = {}
        self._entries = 0

    def for_base(self, base: str, encoding: str) -> Callable[[str], str]:
        """The function that makes an ``href`` of a page with this base URL and encoding
        absolute: ``urljoin(base, href.strip())``, made safe (``safe_url_string``) unless
        it is ASCII without spaces."""
        if not base:
            return lambda href: _join(base, href.strip(), encoding)
        scheme, netloc, path = urlparse(base)[:3]  # as urljoin splits the base
        parts = path.split("/")
        if parts[-1] != "":  # urljoin drops the last segment (not a folder)
            del parts[-1]
        key = (scheme, netloc, "/".join(parts), encoding)
        if self._entries >= self.cache_size:
            self._folders.clear()
            self._entries = 0
        known = self._folders.get(key)
        if known is None:
            known = self._folders[key] = {}

        def absolute(href: str) -> str:
            href = href.strip()
            url = known.get(href)
            if url is not None:
                return url
            url = _join(base, href, encoding)
            if href and href[0] > " " and href[0] not in "?#" and ":" not in href:
                if href.startswith("//"):
                    return url
                known[href] = url
                self._entries += 1
            return url

        return absolute
