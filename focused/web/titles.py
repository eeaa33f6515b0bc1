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
- or, for the last part and from the host's first page on, it names the host
  (:func:`names_host`: "Wikipedia" on ``en.wikipedia.org``, "Phys.org" on ``phys.org``,
  "Physics Forums" on ``physicsforums.com``); an IP address names nothing.

A section or tag name repeated across a host's titles ("Neutrinos | Physics") is learnt
as template too; the spider scores the shorter title only when it scores at least as
high as the whole one, so a part with the topic's words is never lost (and a site name
without them costs nothing).

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
SEPARATOR = re.compile(
    r"\s+(?:[-|:·•»«/~–—]+|::)\s+"
    # full-width marks, spaced or not ("物理学｜科学网"), and "_" between two CJK
    # characters ("物理学_百科")
    r"|\s*[｜－：／]\s*|(?<=[\u3000-\u9fff\uf900-\ufaff])_(?=[\u3000-\u9fff\uf900-\ufaff])"
)
#: Earlier titles of a host that must end (or begin) with a part for it to be the site's.
MIN_TITLES = 2
#: Hosts remembered; the least recently seen is forgotten first.
MAX_HOSTS = 4096
#: Parts remembered per host (a host whose titles share no part learns nothing more).
MAX_PARTS_PER_HOST = 64
_WORD = re.compile(r"[^\W_]+")


def _host_labels(host: str) -> tuple[str, ...]:
    """The labels of ``host``'s name (``host:port``), ``www`` left out; none for an IP
    address."""
    name = host.rsplit(":", 1)[0].casefold() if not host.startswith("[") else ""
    if "." not in name or name.replace(".", "").isdigit():
        return ()
    return tuple(label for label in name.split(".") if label and label != "www")


def names_host(part: str, labels: tuple[str, ...]) -> bool:
    """Whether a title's ``part`` is the name of the host of ``labels`` (its labels, the
    last one its top-level domain): its letters and digits run together are a label or
    labels side by side ("Physics Forums" on ``physicsforums.com``, "Phys.org" on
    ``phys.org``), or each of its words of three letters or more is a label other than
    the top-level domain ("Wiki 05" on ``w05.wiki.test``). A word that is only inside a
    label names nothing ("monde" is no name of ``lemonde.fr``)."""
    words = _WORD.findall(part.casefold())
    if not words:
        return False
    joined = "".join(words)
    for i in range(len(labels)):
        run = ""
        for label in labels[i:]:
            run += label
            if run == joined:
                return True
            if len(run) >= len(joined):
                break
    names = set(labels[:-1])
    long_words = [w for w in words if len(w) >= 3]
    return bool(long_words) and all(w in names for w in long_words)


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
        labels = _host_labels(host)
        seen = recent(self._hosts, host, dict, self.max_hosts)
        first, last = _fold(parts[0]), _fold(parts[-1])
        keep = slice(0, len(parts))
        if self._site(seen, "end", last, labels):
            keep = slice(0, len(parts) - 1)
        if keep.stop - keep.start > 1 and self._site(seen, "start", first, ()):
            keep = slice(1, keep.stop)
        self._learn(seen, "end", last, _fold(" ".join(parts[:-1])))
        self._learn(seen, "start", first, _fold(" ".join(parts[1:])))
        if keep.stop - keep.start == len(parts):
            return title
        # the kept parts, as they stood in the title (with the separators between them)
        return text[spans[keep.start][0] : spans[keep.stop - 1][1]]

    def _site(
        self,
        seen: dict[tuple[str, str], set[str]],
        side: str,
        part: str,
        labels: tuple[str, ...],
    ) -> bool:
        rests = seen.get((side, part))
        if rests is not None and len(rests) >= self.min_titles:
            return True
        return bool(labels) and names_host(part, labels)

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
