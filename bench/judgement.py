"""How much of the gap to the oracle is ordering, and how much is judgement.

The label oracle of :mod:`bench.oracle` fetches a link to a labelled target first. A
crawler never knows the labels: the best it can do is to fetch first the pages *its own
relevance judgement* calls relevant (A = 4B + C above the page threshold, the
page-relevance rule of the web-crawler thesis, Binzhou University 2010). This module
computes that judgement offline for every page of the labelled site, with the spider's
own code (:func:`focused.web.template.split_page` for the main content, the same
:class:`~focused.ranking.relevance.TopicVector` and threshold), then replays on the
site's link graph two orderings with the crawl's budget:

- ``label``: a link to a labelled target first, else breadth-first (the oracle);
- ``judged``: a link to a page the crawler judges relevant first, else breadth-first
  ("perfect ordering by the crawler's own page relevance").

``judged / label`` is the **judgement bound**: what perfect ordering could reach with
the crawler's own notion of relevance. A strategy's recall over ``judged`` is what its
*ordering* reaches of that bound. With ``--page-model`` the judged set is widened by a
self-trained page model (:mod:`focused.ranking.pagemodel`) trained on the keyword
judgement of the pages the judged replay fetched, as a crawl would train it.

Usage: ``python -m bench.judgement --topic chemistry physics``.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import pickle
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.quality import DEFAULT_DATA, ROOT, Site, build_parser, plan
from focused.defaults import DEFAULTS
from focused.ranking.relevance import TopicVector, page_relevance, term_counts
from focused.web.topics import load_topic

CACHE = ROOT / "out" / "bench" / "judgement-pages.pickle"
#: every page's hashed terms (the page model's features), computed once
_BUCKETS: dict[str, np.ndarray] = {}


@dataclass
class PageText:
    """What the spider scores of one page: its title, and its main content's terms."""

    title: str
    body: Counter[bytes]


def _page_texts(site: Site) -> dict[str, PageText]:
    """Title and main-content terms of every page, as the spider extracts them (the
    host's template learnt in name order, as a crawl learns it in fetch order)."""
    from scrapy.http import HtmlResponse

    from focused.spiders.focused import BODY_TEXT, TITLE_TEXT, texts
    from focused.web.template import HostTemplates, split_page

    cap = int(DEFAULTS["FOCUSED_MAX_TEXT_CHARS"]) or None
    templates = HostTemplates()
    out: dict[str, PageText] = {}
    for name in sorted(site.graph):
        body = (site.root / "wiki" / name).read_bytes()
        response = HtmlResponse(url=f"http://site/wiki/{name}", body=body, encoding="utf-8")
        title = " ".join(texts(response, TITLE_TEXT)).strip()[:cap]
        root = response.selector.root
        page = split_page(root) if getattr(root, "tag", None) == "html" else None
        if page is None or not page.blocks:
            text = " ".join(texts(response, BODY_TEXT))
        else:
            templates.classify("site", page)
            text = page.content_text()
            templates.learn("site", page)
        out[name] = PageText(title, term_counts(text[:cap]))
    return out


def page_texts(site: Site) -> dict[str, PageText]:
    """:func:`_page_texts`, cached in ``out/bench`` (a minute of parsing otherwise)."""
    key = str(site.root.resolve())
    if CACHE.is_file():
        with CACHE.open("rb") as fh:
            cached = pickle.load(fh)  # noqa: S301 - our own cache file
        if cached.get("key") == key:
            return cached["pages"]
    pages = _page_texts(site)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump({"key": key, "pages": pages}, fh)
    tmp.replace(CACHE)
    return pages


def own_relevance(pages: dict[str, PageText], topic_name: str) -> tuple[dict[str, float], float]:
    """A = 4B + C of every page for the topic, and the topic's page threshold."""
    topic = load_topic(topic_name)
    vector = TopicVector(topic.keywords)
    weight = float(DEFAULTS["FOCUSED_TITLE_WEIGHT"])
    threshold = float(topic.thresholds.get("page", DEFAULTS["FOCUSED_PAGE_THRESHOLD"]))
    scores = {
        name: page_relevance(vector.cosine(p.title), vector.cosine_of_counts(p.body), weight)
        for name, p in pages.items()
    }
    return scores, threshold


def replay(
    graph: dict[str, list[str]],
    seeds: Sequence[str],
    preferred: Iterable[str] | dict[str, float],
    budget: int,
) -> list[str]:
    """Pages fetched, in order: a link to a ``preferred`` page first, else breadth-first
    (shallower first, first found first), as :class:`bench.oracle.OracleStrategy`. Given
    a mapping page -> score, the best-scored waiting page first (graded)."""
    graded = preferred if isinstance(preferred, dict) else None
    want = set(preferred)
    order = itertools.count()
    heap: list[tuple[float, int, int, str]] = []
    seen = set(seeds)
    for s in seeds:
        heapq.heappush(heap, (-1, 0, next(order), s))
    fetched: list[str] = []
    while heap and len(fetched) < budget:
        _pref, depth, _n, page = heapq.heappop(heap)
        fetched.append(page)
        for nxt in graph.get(page, ()):
            if nxt in graph and nxt not in seen:
                seen.add(nxt)
                key = -graded.get(nxt, 0.0) if graded is not None else float(nxt not in want)
                heapq.heappush(heap, (key, depth + 1, next(order), nxt))
    return fetched


@dataclass
class Split:
    topic: str
    seeds: str
    budget: int
    targets: int
    judged_relevant: int  # reachable pages the crawler judges relevant
    judged_precision: float  # of those, share labelled targets
    judged_recall: float  # share of the reachable targets the crawler judges relevant
    label_recall: float  # the oracle replay's recall at the budget
    judged_replay_recall: float  # perfect ordering by the crawler's own judgement
    judgement_bound: float  # judged_replay_recall / label_recall
    graded_replay_recall: float  # the page of highest own relevance A first
    graded_bound: float  # graded_replay_recall / label_recall


def split_of(
    site: Site,
    pages: dict[str, PageText],
    topic_name: str,
    seeds: tuple[str, ...],
    *,
    budget_ratio: float = 2.0,
    relevant: set[str] | None = None,
    scores: dict[str, float] | None = None,
) -> Split:
    """The ordering/judgement split of one (topic, seed set)."""
    topic = load_topic(topic_name)
    targets = site.targets(topic.category)
    reach = site.reachable(seeds)
    reachable = targets & reach
    budget = max(1, round(budget_ratio * len(reachable)))
    own, threshold = own_relevance(pages, topic_name)
    scores = scores if scores is not None else own
    if relevant is None:
        relevant = {p for p, a in scores.items() if a > threshold}
    judged = relevant & reach
    label = replay(site.graph, seeds, reachable, budget)
    judged_run = replay(site.graph, seeds, judged, budget)
    graded_run = replay(site.graph, seeds, scores, budget)
    lr = len(reachable.intersection(label)) / len(reachable)
    jr = len(reachable.intersection(judged_run)) / len(reachable)
    gr = len(reachable.intersection(graded_run)) / len(reachable)
    return Split(
        topic.name,
        ",".join(seeds),
        budget,
        len(reachable),
        len(judged),
        len(judged & reachable) / len(judged) if judged else 0.0,
        len(judged & reachable) / len(reachable),
        lr,
        jr,
        jr / lr if lr else 0.0,
        gr,
        gr / lr if lr else 0.0,
    )


def model_judgement(
    site: Site,
    pages: dict[str, PageText],
    topic_name: str,
    seeds: tuple[str, ...],
    *,
    budget_ratio: float,
    cap: float,
) -> tuple[set[str], dict[str, float]]:
    """The judgement widened by the page model: trained, as a crawl trains it, on the
    keyword relevance of the pages the graded replay and a breadth-first replay fetch
    (interleaved), then applied to every page. Returns the pages judged relevant (by
    the keywords, or by the model with p > 3/4) and every page's label (the keyword
    label raised by the model)."""
    from focused.ranking.learning import degree, label
    from focused.ranking.pagemodel import PageModel

    scores, threshold = own_relevance(pages, topic_name)
    reachable = site.targets(load_topic(topic_name).category) & site.reachable(seeds)
    budget = max(1, round(budget_ratio * len(reachable)))
    model = PageModel(threshold, cap=cap)
    if not _BUCKETS:
        _BUCKETS.update((n, PageModel.features(list(p.body))) for n, p in pages.items())
    buckets = _BUCKETS
    # a crawl's stream holds both: the pages of highest A and their neighbourhood (the
    # graded replay alone fetches almost no clearly off-topic page)
    best = replay(site.graph, seeds, scores, budget)
    near = replay(site.graph, seeds, (), budget)
    for name in dict.fromkeys(itertools.chain.from_iterable(zip(best, near, strict=False))):
        model.learn(buckets[name], scores[name])
    weight = float(DEFAULTS["FOCUSED_TITLE_WEIGHT"])
    labels = {n: model.label(label(degree(scores[n], weight)), b) for n, b in buckets.items()}
    relevant = {n for n, a in scores.items() if a > threshold}
    relevant |= {n for n, b in buckets.items() if model.probability(b) > 0.75}
    return relevant, labels


def seed_sets(
    topics: Sequence[str], site: Site, *, held_out_set: bool = False
) -> list[tuple[str, tuple[str, ...]]]:
    """(topic argument, seeds) of every seed set :mod:`bench.quality` crawls them from.

    With ``held_out_set`` the frozen held-out topics' seed sets follow the topics'.
    """
    extra = ["--held-out-set"] if held_out_set else ["--held-out"]
    args = build_parser().parse_args(["--topic", *topics, *extra])
    return [(g.topic_arg, g.seeds) for g in plan(args, site)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topic", nargs="+", default=["chemistry", "physics"])
    parser.add_argument("--data", default=str(ROOT / DEFAULT_DATA))
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument(
        "--page-model",
        type=float,
        default=0.0,
        metavar="CAP",
        help="widen the judgement with the self-trained page model of this cap",
    )
    parser.add_argument(
        "--held-out-set",
        action="store_true",
        help="also the frozen held-out topics (bench/topics/heldout), as bench.quality "
        "crawls them; a measurement only, never a basis for a choice",
    )
    parser.add_argument("--out", default=str(ROOT / "out" / "bench" / "judgement.json"))
    args = parser.parse_args(argv)
    site = Site.load(args.data)
    pages = page_texts(site)
    rows = []
    for topic, seeds in seed_sets(args.topic, site, held_out_set=args.held_out_set):
        relevant, scores = (
            model_judgement(
                site, pages, topic, seeds, budget_ratio=args.budget, cap=args.page_model
            )
            if args.page_model
            else (None, None)
        )
        row = split_of(
            site,
            pages,
            topic,
            seeds,
            budget_ratio=args.budget,
            relevant=relevant,
            scores=scores,
        )
        rows.append(row.__dict__)
        print(json.dumps(row.__dict__))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
