"""The one-loop walk of :func:`focused.web.template.split_page` and the folded pieces of
SimHash give exactly what the earlier code gave (kept here as the reference): blocks,
keys, word counts, texts, hrefs, content text and near-duplicate verdicts, on sandbox,
hostile and (when the corpus is there) wikispeedia pages."""

from __future__ import annotations

import glob
import random
from pathlib import Path

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from parsel import Selector

from focused.web import neardup, template
from focused.web.neardup import NearDuplicates
from focused.web.sandbox import generate_site
from focused.web.template import MAX_DEPTH, SKIPPED, Block, HostTemplates, Page, split_page

WIKI = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikispeedia-site" / "wiki"


class _ReferenceWalk:
    """The walk as it was: a method call per start and end event."""

    def __init__(self, body: etree._Element) -> None:
        step, hinted = template._describe(body, "body")
        self.blocks = [Block(template._step_hash(0, step), hinted)]
        self.parts: list[tuple[int, str]] = []
        self.current = 0
        self.stack: list[tuple[etree._Element, int]] = [(body, -1)]
        self.skipping = 0
        walk = etree.iterwalk(body, events=("start", "end", "comment", "pi"))
        next(walk)
        if body.text:
            self.parts.append((0, body.text))
        for event, el in walk:
            if event == "start":
                self._start(el)
            elif event != "end":
                if el.tail and not self.skipping:
                    self.parts.append((self.current, el.tail))
            elif self._end(el):
                break
        for i, text in self.parts:
            self.blocks[i].texts.append(text)
        self.page = Page(self.blocks, self.parts)

    def _start(self, el: etree._Element) -> None:
        tag = el.tag
        if self.skipping:
            if tag in SKIPPED:
                self.skipping += 1
            return
        if tag in template.CONTAINERS and self.blocks[self.current].depth < MAX_DEPTH:
            step, hinted = template._describe(el, tag)
            parent = self.blocks[self.current]
            path = template._step_hash(parent.path, step)
            self.blocks.append(Block(path, hinted or parent.hinted, parent.depth + 1))
            self.stack.append((el, self.current))
            self.current = len(self.blocks) - 1
        elif tag == "a":
            href = el.get("href")
            if href:
                self.blocks[self.current].hrefs.append(href)
        elif tag in SKIPPED:
            self.skipping = 1
            return
        if el.text:
            self.parts.append((self.current, el.text))

    def _end(self, el: etree._Element) -> bool:
        if self.skipping:
            if el.tag in SKIPPED:
                self.skipping -= 1
            if self.skipping:
                return False
        elif el is self.stack[-1][0]:
            self.current = self.stack.pop()[1]
            if self.current < 0:
                return True
        if el.tail:
            self.parts.append((self.current, el.tail))
        return False


def _reference_split(root: etree._Element) -> Page:
    body = root if root.tag == "body" else root.find("body")
    if body is None:
        found = root.xpath("//body")
        body = found[0] if found else None
    return Page([], []) if body is None else _ReferenceWalk(body).page


def _reference_key(b: Block) -> tuple[int, int]:
    words = " ".join(b.texts).split()
    own = " ".join(words) if words else "\x01" + "\x00".join(b.hrefs)
    return mmh3.hash64(f"{b.path:x}\x00{own}", signed=False)[0], len(words)


def _reference_simhash(counts: dict[str, int]) -> int:
    import numpy as np

    if not counts:
        return 0
    hashes = np.fromiter(
        (mmh3.hash64(t, signed=False)[0] for t in counts), dtype=np.uint64, count=len(counts)
    )
    weights = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    score = weights @ (bits.astype(np.float64) * 2.0 - 1.0)
    return int(np.packbits(score > 0, bitorder="little").view("<u8")[0])


def _pages() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for mode in ("normal", "hostile"):
        site = generate_site(seed=5, pages=300, mode=mode)
        out += [(f"{mode}{p}", b) for p, b in site.pages.items() if b.lstrip()[:1] == b"<"]
    out.append(
        (
            "edge",
            b"<html><body>a<!--c-->b<?pi x?>c<script>s<style>t</style>u</script>"
            b"v<div> x <b>y</b>\t</div>z<nav><a href='/n'>N</a></nav>w</body>tail</html>",
        )
    )
    out.append(("nested", b"<html><body>" + b"<div>d" * 300 + b"</div>" * 300 + b"</body></html>"))
    files = sorted(glob.glob(str(WIKI / "*.html")))
    random.Random(2).shuffle(files)
    out += [(f, Path(f).read_bytes()) for f in files[:150]]
    return out


def test_split_page_and_near_duplicates_as_before() -> None:
    new_t, old_t = HostTemplates(), HostTemplates()
    new_d, old_d = NearDuplicates(), NearDuplicates()
    pages = _pages()
    assert len(pages) > 300
    for name, body in pages * 2:  # twice: templates learnt, near-duplicates found
        root = Selector(text=body.decode("utf-8", "replace"), type="html").root
        new, old = split_page(root), _reference_split(root)
        assert new.parts == old.parts, name
        assert [(b.path, b.hinted, b.depth, b.texts, b.hrefs) for b in new.blocks] == [
            (b.path, b.hinted, b.depth, b.texts, b.hrefs) for b in old.blocks
        ], name
        assert [(b.key(), b.words()) for b in new.blocks] == [
            _reference_key(b) for b in old.blocks
        ], name
        host = "h" if name.startswith("/") else name[:6]
        new_t.classify(host, new)
        old_t.classify(host, old)
        assert [b.chrome for b in new.blocks] == [b.chrome for b in old.blocks], name
        assert new.content_text() == old.content_text(), name
        # the thin-page test's word count, from the blocks
        assert new.content_words() == len(old.content_text().split()), name
        folded = new.content_folded()
        assert folded == [" ".join(t.split()) for t in old.content_parts()], name
        assert neardup.pieces(folded, folded=True) == neardup.pieces(old.content_parts())
        dup = new_d.check(folded, name[-5:], folded=True)
        assert dup == old_d.check(old.content_parts(), name[-5:]), name
        if not dup:
            new_t.learn(host, new)
            old_t.learn(host, old)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(" \t\n\xa0\u2003\x1cab\u00e9\u4e2d"), max_size=12)))
def test_folded_key_and_simhash_match_the_reference(texts: list[str]) -> None:
    b = Block(path=7, hinted=False, texts=list(texts), hrefs=["/x"])
    b.folded = [" ".join(t.split()) for t in texts]
    plain = Block(path=7, hinted=False, texts=list(texts), hrefs=["/x"])
    assert (b.key(), b.words()) == (plain.key(), plain.words()) == _reference_key(plain)
    counts = neardup.pieces(texts)
    assert neardup.simhash(counts) == _reference_simhash(counts)


@pytest.mark.parametrize("text", ["", "x"])
def test_a_page_made_by_hand_folds_its_parts_when_asked(text: str) -> None:
    page = Page([Block(1, False)], [(0, f"  {text} \n y ")])
    assert page.content_folded() == [f"{text} y".strip()]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.text(st.sampled_from(" \t\n\xa0\u2003\x1c\x85ab\u00e9\u4e2d"))
        ),
        max_size=12,
    ),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.booleans(),
)
def test_content_words_are_the_words_of_the_content_text(
    parts: list[tuple[int, str]], chrome: list[bool], walked: bool
) -> None:
    """The word count of the main content from its blocks (folded by the walk, or not)
    is ``len(content_text().split())``, whichever blocks are chrome."""
    blocks = [Block(i, False, chrome=c) for i, c in enumerate(chrome)]
    for i, text in parts:
        blocks[i].texts.append(text)
        if walked:
            blocks[i].folded = [*(blocks[i].folded or []), " ".join(text.split())]
    page = Page(blocks, parts)
    assert page.content_words() == len(page.content_text().split())
