"""How much a link's evidence can tell before the page is fetched.

`bench.judgement` bounds what ordering by the crawler's own relevance could reach when
that relevance is *known in advance* for every waiting page. A crawl never knows it: a
waiting page is known only by the evidence its links give (the words of its name, the
labels of the fetched pages that link to it). This module measures how far that evidence
goes. It takes a finished `bench.quality` crawl of one seed set, stops it after a share
of its pages (``--at``), and ranks the pages then waiting (every unfetched page linked
from a fetched one) by several predictors built from the crawl's own labels only:

- ``parent_first``: the label of the first fetched page that linked it;
- ``parents_mean``: the mean label of the fetched pages that link it, shrunk to the
  crawl's mean label with 2 pseudo-parents;
- ``name_best`` / ``name_mean``: the best / mean term of the page's name under the term
  model of :mod:`focused.ranking.learning` (mean label of the fetched pages using a
  term, shrunk to the mean), learnt from the fetched pages;
- ``learning_like``: ``name_best ** 0.9 * parent_first ** 0.1``, the two parts of
  ``learning``'s value without its context and exploration terms;
- ``name_and_parents``: ``name_mean ** 0.7 * parents_mean ** 0.3``;
- ``paragraph_keywords``: the best topic cosine (the hand-written keywords) of the
  paragraph a fetched page links it from: keyword evidence that needs no learning;
- ``learning_like_paragraph``: ``learning_like ** 0.7 * paragraph_keywords ** 0.3``;
- ``own_relevance``: the page's own relevance A (clairvoyant: what `bench.judgement`'s
  graded replay orders by).

For each it reports the AUC of "is a target" over the waiting pages and the share of
the waiting targets within its top N, N being the pages left in the crawl's budget.

Usage: ``python -m bench.link_evidence out/bench/RUN/runs/cdefault/ROW ...``
(``--strategy`` names the crawl of each row to stop, ``learning`` by default).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from bench.judgement import PageText, own_relevance, page_texts
from bench.quality import DEFAULT_DATA, ROOT, Site
from focused.defaults import DEFAULTS
from focused.ranking.learning import TermModel, degree, label
from focused.ranking.relevance import TopicVector, tokenize
from focused.web.topics import load_topic

PREDICTORS = (
    "parent_first",
    "parents_mean",
    "name_best",
    "name_mean",
    "learning_like",
    "name_and_parents",
    "paragraph_keywords",
    "learning_like_paragraph",
    "own_relevance",
)


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Probability that a random positive outranks a random negative (ties: half);
    NaN without both."""
    s = np.asarray(scores, dtype=np.float64)
    p = np.asarray(positive, dtype=bool)
    n_pos = int(p.sum())
    n_neg = len(p) - n_pos
    if not n_pos or not n_neg:
        return float("nan")
    order = np.argsort(s, kind="stable")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[p].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def recall_at(scores: Sequence[float], positive: Sequence[bool], n: int) -> float:
    """Share of the positives among the ``n`` best scores (first listed first on ties)."""
    p = np.asarray(positive, dtype=bool)
    if not p.any():
        return float("nan")
    top = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:n]
    return float(p[top].sum() / p.sum())


def paragraph_keywords(root: Path, fetched: Sequence[str], vector: TopicVector) -> dict[str, float]:
    """Page name -> the best topic cosine of a paragraph (``<p>``) of a fetched page
    that links it (the site's anchors stand in their paragraphs)."""
    from lxml import html as lxml_html

    best: dict[str, float] = {}
    for page in fetched:
        path = root / "wiki" / page
        if not path.is_file():
            continue
        tree = lxml_html.fromstring(path.read_bytes())
        for paragraph in tree.iter("p"):
            hrefs = [unquote(a.get("href", "")) for a in paragraph.iter("a")]
            if not hrefs:
                continue
            cosine = float(vector.cosine(paragraph.text_content()))
            for href in hrefs:
                if cosine > best.get(href, -1.0):
                    best[href] = cosine
    return best


def predictors(
    graph: dict[str, list[str]],
    texts: dict[str, PageText],
    labels: dict[str, float],
    relevance: dict[str, float],
    fetched: Sequence[str],
    *,
    paragraphs: dict[str, float] | None = None,
) -> tuple[list[str], dict[str, list[float]]]:
    """The pages waiting after ``fetched`` (in the order first linked) and each
    predictor's score of them (``paragraphs``: :func:`paragraph_keywords` of
    ``fetched``; without it those predictors score 0)."""
    done = set(fetched)
    parents: dict[str, list[float]] = {}
    for page in fetched:
        for nxt in graph.get(page, ()):
            if nxt in graph and nxt not in done:
                parents.setdefault(nxt, []).append(labels.get(page, 0.0))
    waiting = list(parents)
    terms = TermModel(shrinkage=float(DEFAULTS["FOCUSED_LEARNING_SHRINKAGE"]))
    for page in fetched:
        text = texts.get(page)
        if text is not None:
            terms.learn_page(list(text.body) + tokenize(text.title), labels.get(page, 0.0))
    mean = float(np.mean([labels.get(p, 0.0) for p in fetched])) if fetched else 0.0
    k = terms.shrinkage

    def name_score(page: str, pool: Callable[[np.ndarray], float]) -> float:
        words = tokenize(unquote(page).removesuffix(".html").replace("_", " "))
        if not words:
            return terms.mean
        buckets = [terms.feature(w) for w in words]
        return float(pool((terms.sums[buckets] + k * terms.mean) / (terms.counts[buckets] + k)))

    first = [parents[q][0] for q in waiting]
    shrunk = [(sum(parents[q]) + 2 * mean) / (len(parents[q]) + 2) for q in waiting]
    best = [name_score(q, np.max) for q in waiting]
    average = [name_score(q, np.mean) for q in waiting]
    paragraph = [(paragraphs or {}).get(q, 0.0) for q in waiting]
    learning_like = [b**0.9 * max(1e-3, f) ** 0.1 for b, f in zip(best, first, strict=True)]
    scores = {
        "parent_first": first,
        "parents_mean": shrunk,
        "name_best": best,
        "name_mean": average,
        "learning_like": learning_like,
        "name_and_parents": [
            a**0.7 * max(1e-3, s) ** 0.3 for a, s in zip(average, shrunk, strict=True)
        ],
        "paragraph_keywords": paragraph,
        "learning_like_paragraph": [
            v**0.7 * max(1e-3, c) ** 0.3 for v, c in zip(learning_like, paragraph, strict=True)
        ],
        "own_relevance": [relevance.get(q, 0.0) for q in waiting],
    }
    return waiting, scores


def measure_row(
    site: Site, texts: dict[str, PageText], row: Path, strategy: str, at: float
) -> dict[str, object]:
    """One crawl folder ``row/strategy`` stopped after ``at`` of its pages."""
    command = (row / strategy / "command.txt").read_text(encoding="utf-8").split()
    topic_arg = next(w.removeprefix("topic=") for w in command if w.startswith("topic="))
    topic = load_topic(topic_arg)
    with (row / strategy / "metrics.csv").open(encoding="utf-8") as fh:
        fetched = [unquote(r["url"].rsplit("/", 1)[-1]) for r in csv.DictReader(fh)]
    relevance, _threshold = own_relevance(texts, topic_arg)
    weight = float(DEFAULTS["FOCUSED_TITLE_WEIGHT"])
    floor = float(DEFAULTS["FOCUSED_LEARNING_LABEL_FLOOR"])
    labels = {p: label(degree(a, weight), floor) for p, a in relevance.items()}
    targets = site.targets(topic.category)
    cut = max(1, int(len(fetched) * at))
    paragraphs = paragraph_keywords(site.root, fetched[:cut], TopicVector(topic.keywords))
    waiting, scores = predictors(
        site.graph, texts, labels, relevance, fetched[:cut], paragraphs=paragraphs
    )
    positive = [q in targets for q in waiting]
    left = len(fetched) - cut
    out: dict[str, object] = {
        "row": row.name,
        "at": at,
        "fetched": cut,
        "waiting": len(waiting),
        "waiting_targets": sum(positive),
    }
    for name in PREDICTORS:
        out[f"auc_{name}"] = round(auc(scores[name], positive), 4)
        out[f"recall_{name}"] = round(recall_at(scores[name], positive, left), 4)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="+", help="bench.quality row folders (runs/cdefault/ROW)")
    parser.add_argument("--strategy", default="learning")
    parser.add_argument("--at", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--data", default=str(ROOT / DEFAULT_DATA))
    parser.add_argument("--out", default=str(ROOT / "out" / "bench" / "link_evidence.json"))
    args = parser.parse_args(argv)
    site = Site.load(args.data)
    texts = page_texts(site)
    rows = [
        measure_row(site, texts, Path(row), args.strategy, at)
        for row in args.rows
        for at in args.at
    ]
    for row in rows:
        print(json.dumps(row))
    for at in args.at:
        mine = [r for r in rows if r["at"] == at]
        means = {
            name: (
                float(np.nanmean([float(r[f"auc_{name}"]) for r in mine])),  # type: ignore[arg-type]
                float(np.nanmean([float(r[f"recall_{name}"]) for r in mine])),  # type: ignore[arg-type]
            )
            for name in PREDICTORS
        }
        print(f"stopped at {at:.0%} of the pages, {len(mine)} rows: mean AUC, recall in budget")
        for name, (a, r) in means.items():
            print(f"  {name:18} {a:.3f}  {r:.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
