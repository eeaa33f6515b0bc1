"""A page title's own words, apart from its site's name, learnt online per host.

Real sites put their name in every page's ``<title>``: "Physics - Wikipedia",
"Thermodynamics | Science News", "Forum 08 :: Thread: Magnets". Scored whole, the site
name dilutes the title's cosine with the topic (the title weighs four times the body in
the page-relevance rule), so the same article scores lower on a real site than on a
clean one, and pages near the threshold are judged off-topic.

:class:`SiteTitles` splits a title at the separators sites put between the page's name
and theirs (a dash, a bar, a bullet, a colon, a guillemet with spaces around it: see
:data:`SEPARATOR`) and drops its first or last part when that part is the site's:

- it ended (or began) ``min_titles`` earlier titles of the same host, each with another
  rest (the host's title template, learnt as the crawl goes, like
  :class:`focused.web.template.HostTemplates` learns its blocks);
- or, for the last part and from the host's first page on, one of its words (three
  letters or more) is, or is inside, a label of the host name ("Wikipedia" on
  ``en.wikipedia.org``, "Phys.org" on ``phys.org``, "Forums" on ``physicsforums.com``),
  the last label (``org``, ``test``) excepted; an IP address has no such labels.

A title with no separator, or whose parts are none of these, is kept whole, so a clean
site's titles are scored as before. At least one part always remains.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from focused.bounded import recent

#: What stands between a page's name and its site's in a title: one of these marks with
#: white space on both sides (a hyphen inside a word, "Talk:Physics", "3:2" are no
#: separators).
SEPARATOR = re.compile(r"\s+(?:[-|:·•»«/~–—]+|::)\s+")
#: Earlier titles of a host that must end (or begin) with a part for it to be the site's.
MIN_TITLES = 2
#: Hosts remembered; the least recently seen is forgotten first.
MAX_HOSTS = 4096
#: Parts remembered per host (a host whose titles share no part learns nothing more).
MAX_PARTS_PER_HOST = 64
_WORD = re.compile(r"[^\W_]{3,}")


def _fold(part: str) -> str:
    return " ".join(part.casefold().split())


class SiteTitles:
    """Strip the site's name from page titles, host by host (see the module's text).

    Bounded: ``max_hosts`` hosts and ``max_parts`` candidate parts per host."""

    def __init__(
        self,
        min_titles: int = MIN_TITLES,
        *,
        max_hosts: int = MAX_HOSTS,
        max_parts: int = MAX_PARTS_PER_HOST,
    ) -> None:
        if min_titles < 1:
            raise ValueError(f"min_titles must be at least 1, got {min_titles}")
        self.min_titles = min_titles
        self.max_hosts = max_hosts
        self.max_parts = max_parts
        #: host -> {("end"|"start", folded part): the folded rests seen with it}
        self._hosts: OrderedDict[str, dict[tuple[str, str], set[str]]] = OrderedDict()

    def own(self, host: str, title: str) -> str:
        """``title`` without the part that names ``host``'s site (the title whole when
        there is none); the title is then learnt as one more of ``host``'s."""
        text = title.strip()
        spans, at = [], 0
        for sep in SEPARATOR.finditer(text):
            spans.append((at, sep.start()))
            at = sep.end()
        spans.append((at, len(text)))
        spans = [(a, b) for a, b in spans if text[a:b].strip()]
        if len(spans) < 2:
            return title
        parts = [text[a:b] for a, b in spans]
        name = host.rsplit(":", 1)[0].casefold() if not host.startswith("[") else ""
        named = "." in name and not name.replace(".", "").isdigit()  # no IP address
        labels = set(name.split(".")[:-1]) if named else set()
        seen = recent(self._hosts, host, dict, self.max_hosts)
        first, last = _fold(parts[0]), _fold(parts[-1])
        keep = slice(0, len(parts))
        if self._site(seen, "end", last, labels):
            keep = slice(0, len(parts) - 1)
        if keep.stop - keep.start > 1 and self._site(seen, "start", first, set()):
            keep = slice(1, keep.stop)
        self._learn(seen, "end", last, _fold(" ".join(parts[:-1])))
        self._learn(seen, "start", first, _fold(" ".join(parts[1:])))
        if keep.stop - keep.start == len(parts):
            return title
        # the kept parts, as they stood in the title (with the separators between them)
        return text[spans[keep.start][0] : spans[keep.stop - 1][1]]

    def _site(
        self, seen: dict[tuple[str, str], set[str]], side: str, part: str, labels: set[str]
    ) -> bool:
        rests = seen.get((side, part))
        if rests is not None and len(rests) >= self.min_titles:
            return True
        return bool(labels) and any(
            w in labels or any(w in label for label in labels if len(label) > len(w))
            for w in _WORD.findall(part)
        )

    def _learn(
        self, seen: dict[tuple[str, str], set[str]], side: str, part: str, rest: str
    ) -> None:
        rests = seen.get((side, part))
        if rests is None:
            if len(seen) >= self.max_parts:
                return
            rests = seen[(side, part)] = set()
        if len(rests) < self.min_titles:
            rests.add(rest)
