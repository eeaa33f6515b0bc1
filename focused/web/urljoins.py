"""``urllib.parse.urljoin`` cached across the pages of a site.

The URL that an ``href`` with a path (or path parameters) makes against a base URL with a
host depends on the base's scheme, network location and folder only (RFC 3986, section
5.2.2, as ``urljoin`` implements it): the query, fragment and last path segment of the
base are not used. The pages of one folder then share the joins of the ``href``s they
repeat (a wiki's navigation, the same articles linked from page after page), and a join
costs one dictionary lookup instead of two URL parses. An ``href`` without a path
(``?page=2``, ``#top``, ``http:``, ``//``) takes the base's path or query too: it is
joined with each page's own URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin, urlparse, urlsplit

from focused.bounded import remember

#: cached for an ``href`` whose join takes more of the base than its folder
_OWN = ""

#: an ``href``'s scheme (``urlsplit``'s rule: a letter, then letters, digits, ``+-.``)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
#: the schemes in which the URL standard reads ``\`` as ``/`` (its "special" schemes)
SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})


def backslashes_as_slashes(href: str) -> str:
    """``href`` with each ``\\`` before its query or fragment read as ``/``, as browsers
    read a link of an http(s) page (the WHATWG URL standard, for its special schemes):
    ``\\\\127.0.0.2\\page`` is ``//127.0.0.2/page`` (another host), ``..\\x`` is ``../x``.
    ``urljoin`` took them for path characters (``http://host/dir/\\\\127.0.0.2\\page``,
    which ``safe_url_string`` made ``http://host/dir///127.0.0.2/page``: a page of the
    same host that does not exist, the dot segments of ``..\\x`` left unresolved). An
    ``href`` with a scheme that is not special (``mailto:``) is left alone, and so is a
    backslash in the query or fragment (browsers keep it there)."""
    if "\\" not in href:
        return href
    scheme = _SCHEME.match(href)
    if scheme is not None and scheme.group(1).lower() not in SPECIAL_SCHEMES:
        return href
    end = len(href)
    for mark in "?#":
        at = href.find(mark)
        if at != -1:
            end = min(end, at)
    return href[:end].replace("\\", "/") + href[end:]


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
        if parts is None or not parts.scheme or not parts.netloc:
            return lambda href: urljoin(base, href)  # no host: nothing shared
        path = parts.path  # "" or from "/": its folder ends at its last "/"
        scheme, netloc, folder = parts.scheme, parts.netloc, path[: path.rfind("/") + 1]
        joins, size = self._joins, self.size

        def join(href: str) -> str:
            if not href or href[0] in "?#":  # no path: the base's path or query too
                return urljoin(base, href)
            key = (scheme, netloc, folder, href)
            url = joins.get(key)
            if url is None:
                url = urljoin(base, href)
                if _takes_the_folder_only(href, scheme):
                    remember(joins, key, url, size)
                else:
                    remember(joins, key, _OWN, size)
                return url
            return url or urljoin(base, href)  # _OWN: joined with this page's URL

        return join


def _takes_the_folder_only(href: str, scheme: str) -> bool:
    """Whether ``urljoin`` uses no more of a base (of ``scheme``, with a host) than its
    scheme, host and folder for ``href``: ``href`` parses with a path, path parameters or
    a host of its own (``http:?q``, ``//`` and ``"\\x01?q"`` parse without any)."""
    try:
        parsed = urlparse(href, scheme)
    except ValueError:
        return False
    return bool(parsed.path or parsed.params or parsed.netloc)
