"""Chinese compounds and the topic's keywords: jieba's default mode (its words alone)
against its search mode (for every text and the topic's keywords alike) and against
jieba's words each followed by the topic's keywords inside it (``relevance._cut``, the
topic's vector as before; a keyword of one character never, at a word's end, anywhere),
on the sandbox's pages (docs/speed.md, "Chinese compounds").

(a) For each topic (chemistry, physics): the mean page relevance (A = 4B + C) of the
target and the non-target content pages, and how many are over the topic's page
threshold, scoring only the Chinese text of each page (its Chinese title words and
sentences), then the whole page (Chinese and English, as a crawl scores it).
(b) The CPU cost of cutting every Chinese run of the pages (title and body text, as the
spider extracts them) in each mode, the topics' Chinese keywords added to the
dictionary (the method of docs/speed.md's jieba row): median of ``--rounds``.

    python -m bench.chinese_terms [--pages 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

from focused.output.fulltext import html_text
from focused.ranking import relevance
from focused.web.sandbox.generator import generate_site
from focused.web.topics import available, load_topic, topics_dir

TOPICS = ("chemistry", "physics")
#: everything but Chinese characters, CJK punctuation and white space
_NOT_CHINESE = re.compile(rf"[^{relevance._CJK}\u3000-\u303f\uff00-\uffef\s]+")


_JIEBA_WORDS = relevance._words
_INNER = relevance._cut


def _modes() -> dict[str, tuple[Callable[[str], list[str]], Callable[[str], list[str]], str]]:
    """mode -> (how a text's Chinese runs are cut, how the topic's keywords are,
    :data:`relevance.INNER_SINGLE`)."""
    default = _JIEBA_WORDS  # jieba's words alone (before the inner keywords)
    search = relevance._segmenter().cut_for_search
    inner = _INNER  # jieba's words, each followed by the keywords inside it
    return {
        "default": (default, default, "end"),
        "search": (search, search, "end"),
        "inner-never": (inner, default, "never"),
        "inner-end": (inner, default, "end"),
        "inner-any": (inner, default, "any"),
    }


def _use(mode: tuple[Callable[[str], list[str]], Callable[[str], list[str]], str]) -> None:
    relevance._cut, relevance._words, relevance.INNER_SINGLE = mode
    relevance._inner.clear()


def _pages(pages: int) -> list[tuple[str, str, set[str]]]:
    """(title, text, categories) of every content page of the sandbox."""
    site = generate_site(seed=7, pages=pages)
    out = []
    for path, cats in sorted(site.labels.items()):
        title, text = html_text(site.pages[path], "utf-8")
        out.append((title, text, set(cats)))
    return out


def relevance_table(pages: list[tuple[str, str, set[str]]]) -> None:
    print("(a) page relevance A = 4B + C, mean over target / non-target pages;")
    print("    'over' = pages over the topic's page threshold")
    print(
        f"{'topic':10} {'text':8} {'mode':8} {'targets':>8} {'mean':>6} {'over':>6}  "
        f"{'others':>7} {'mean':>6} {'over':>6}"
    )
    original = (relevance._cut, relevance._words, relevance.INNER_SINGLE)
    try:
        for name in TOPICS:
            # this topic's words alone in jieba's dictionary, as in a crawl of it
            relevance._kept.clear()
            relevance._dictionary = None
            relevance._words_changed()
            topic = load_topic(name)
            relevance.TopicVector(topic.keywords)
            threshold = topic.thresholds.get("page", 0.3)
            for text_kind in ("chinese", "whole"):
                for mode, cuts in _modes().items():
                    _use(cuts)
                    vector = relevance.TopicVector(topic.keywords)  # its terms in this mode
                    scores: dict[bool, list[float]] = {True: [], False: []}
                    for title, text, cats in pages:
                        if text_kind == "chinese":
                            title, text = _NOT_CHINESE.sub(" ", title), _NOT_CHINESE.sub(" ", text)
                        target = any(c.startswith(topic.category) for c in cats)
                        a = relevance.page_relevance(vector.cosine(title), vector.cosine(text))
                        scores[target].append(a)
                    row = [name, text_kind, mode]
                    for target in (True, False):
                        s = scores[target]
                        over = sum(a > threshold for a in s)
                        row += [f"{len(s):>8}", f"{statistics.fmean(s):6.3f}", f"{over:6d}"]
                    print(
                        f"{row[0]:10} {row[1]:8} {row[2]:8} "
                        + " ".join(row[3:6])
                        + "  "
                        + " ".join(row[6:])
                    )
    finally:
        _use(original)


def cut_cost(pages: list[tuple[str, str, set[str]]], rounds: int) -> None:
    runs = [
        run
        for title, text, _ in pages
        for part in (title, text)
        for run in relevance._CJK_SPLIT.split(part)[1::2]
    ]
    chars = sum(map(len, runs))
    directory = topics_dir()
    words = {
        k
        for name in available(directory)
        for k in load_topic(name, directory).keywords
        if relevance._has_cjk(k)
    }
    for word in sorted(words):
        relevance._add_word(word)
    print(
        f"(b) {len(runs)} Chinese runs ({chars} characters) of {len(pages)} pages, "
        f"{len(words)} topic keywords added; CPU s for all, median of {rounds}"
    )
    modes = _modes()
    modes.pop("inner-never"), modes.pop("inner-any")
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    terms: dict[str, int] = {}
    for _ in range(rounds):
        for mode, (cut, _, single) in modes.items():
            relevance.INNER_SINGLE = single
            relevance._inner.clear()  # each round from an empty cache, as a crawl starts
            start = time.process_time()
            n = 0
            for run in runs:
                n += len(cut(run))
            times[mode].append(time.process_time() - start)
            terms[mode] = n
    for mode, ts in times.items():
        print(
            f"    {mode:8} {statistics.median(ts):.3f} s ({min(ts):.3f}-{max(ts):.3f}), "
            f"{terms[mode]} words"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    pages = _pages(args.pages)
    relevance_table(pages)
    cut_cost(pages, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
