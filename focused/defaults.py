"""Every ``FOCUSED_*`` setting and its default, in one place.

Scrapy settings are read through :func:`get` so that a value set in ``settings.py``,
with ``-s NAME=VALUE`` or in a scrapyd job overrides the default here. The README's
settings table documents each one; ``tests/test_settings_doc.py`` checks that the two
agree.

:data:`CHECKS` declares each setting's type and constraint (a :class:`Check`);
:func:`focused.config.validate` walks it, so a bad value of any setting is one line and
exit status 2 before anything is fetched. ``tests/test_config.py`` checks that every key
of :data:`DEFAULTS` has a check of its default's type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: the fewest pages of a sandbox web (its generator, :mod:`focused.web.sandbox.generator`,
#: refuses fewer: its hubs, tunnels and clusters need them); the least
#: ``FOCUSED_SANDBOX_PAGES``
SANDBOX_MIN_PAGES = 60

DEFAULTS: dict[str, Any] = {
    # --- which web -------------------------------------------------------------
    # "auto": the real web when the topic's first seed host resolves, else the
    # embedded sandbox; "sandbox": always the sandbox; "real": always the real web.
    "FOCUSED_WEB": "auto",
    # Seed URLs that replace the topic's (list or comma-separated string).
    "FOCUSED_SEEDS": [],
    # Labels TSV (path or URL, "path<TAB>category" rows) that define the targets.
    "FOCUSED_LABELS": "",
    # Label prefix of a target; empty: the topic's `category`.
    "FOCUSED_TARGET_CATEGORY": "",
    # Folder of topic files; empty: the project's topics/ (or the packaged copy).
    "FOCUSED_TOPICS_DIR": "",
    # --- sandbox ---------------------------------------------------------------
    "FOCUSED_SANDBOX_SEED": 7,
    "FOCUSED_SANDBOX_PAGES": 600,
    "FOCUSED_SANDBOX_MODE": "normal",
    # Port of the embedded sandbox (0: a free one; a JOBDIR crawl reuses its first port).
    "FOCUSED_SANDBOX_PORT": 0,
    # --- relevance (page relevance A = 4B + C; anchor threshold f of the m-value rule)
    "FOCUSED_TITLE_WEIGHT": 4.0,  # A = 4B + C
    "FOCUSED_PAGE_THRESHOLD": 2.0,  # relevant when A > threshold
    "FOCUSED_ANCHOR_THRESHOLD": 0.2,  # f: anchor relevant when r > f
    # --- strategy --------------------------------------------------------------
    "FOCUSED_STRATEGY": "annealing",
    # genetic m-value rule (Liu, Xia & Xu 2010)
    "FOCUSED_M_INITIAL": 100.0,
    "FOCUSED_GENETIC_RATIO": 0.8,
    # side channels are dropped after this many irrelevant hops (m < M0 * b**hops)
    "FOCUSED_MAX_TUNNEL_HOPS": 6,
    # simulated-annealing pick (He, Cheng & Cai 2009)
    "FOCUSED_SA_T0": 0.05,
    "FOCUSED_SA_ALPHA": 0.995,
    "FOCUSED_SA_T_MIN": 1e-4,
    "FOCUSED_SA_K": 8,
    # tunneling scope widening (He, Cheng & Cai 2009): below the page threshold, the
    # anchor threshold is multiplied by this factor for the page's links
    "FOCUSED_TUNNEL_WIDENING": 0.5,
    # BS-BS (Lin et al. 2007): at most D irrelevant hops below a relevant page
    "FOCUSED_BSBS_DEPTH": 2,
    # random seed of every random choice of a crawl
    "FOCUSED_SEED": 42,
    # learning strategy (focused/ranking/learning.py, docs/learning.md): a link's value
    # is the mean label of the fetched pages using its best anchor/URL term, shrunk to
    # the crawl's mean with this many pseudo-pages
    "FOCUSED_LEARNING_SHRINKAGE": 3.0,
    # share of the text around a link (mean term) in its value
    "FOCUSED_LEARNING_CONTEXT_SHARE": 0.3,
    # label of a page: log(A / (title weight + 1) + floor), rescaled to [0, 1]
    "FOCUSED_LEARNING_LABEL_FLOOR": 0.002,
    # a link's value = learnt value ** (1 - share) * parent page's label ** share
    "FOCUSED_LEARNING_PARENT_SHARE": 0.1,
    # each topic keyword starts as this many pseudo-pages of label weight / max weight
    # (0: the crawl's own pages only; keyword priors hurt on wikispeedia, docs/learning.md)
    "FOCUSED_LEARNING_KEYWORD_PAGES": 0.0,
    # relevance feedback: at most this many new topic terms, each weighing at most
    # FOCUSED_LEARNING_EXPAND_CAP x the mean keyword weight (the m-value channel's r)
    "FOCUSED_LEARNING_EXPAND_TERMS": 30,
    "FOCUSED_LEARNING_EXPAND_CAP": 0.5,
    # ACHE-style link classifier (SGDRegressor on each fetched page's link), blended in
    # as n / (n + FOCUSED_LEARNING_CLASSIFIER_PRIOR) after n examples; off by default
    "FOCUSED_LEARNING_CLASSIFIER": False,
    "FOCUSED_LEARNING_CLASSIFIER_PRIOR": 400.0,
    # hub evidence: a parent's label shrunk to its fetched children's mean label with
    # this many pseudo-children (0: off)
    "FOCUSED_LEARNING_HUB_PRIOR": 0.0,
    # exploration: a link's value is (1 - w) x learnt + w x its best keyword weight,
    # w = prior / (prior + relevant pages found so far): 1 until the crawl finds its
    # topic (an off-topic start), shrinking as it does (0: off)
    "FOCUSED_LEARNING_EXPLORE_PRIOR": 1.0,
    # optimism for rarely seen terms while exploring: a term seen in n pages scores
    # this x w x shrinkage / (n + shrinkage) more (w the exploration weight; 0: off)
    "FOCUSED_LEARNING_OPTIMISM": 0.3,
    # self-trained page model (focused.ranking.pagemodel): pages whose keyword relevance
    # is clearly high or low teach a model over all their terms, which can raise a
    # page's learning label up to this cap (0: off)
    "FOCUSED_LEARNING_PAGE_MODEL": 0.3,
    # a page the spider judged waste for its URL shape (FOCUSED_WASTE_SHAPE_THRESHOLD)
    # is a label of 0 for the link that led to it, not its keyword relevance
    "FOCUSED_LEARNING_WASTE_LABEL": True,
    # a link's terms are scored without the page it stands on (leave-one-out: that
    # page holds the link's anchor and context words, and would vote for all its links)
    "FOCUSED_LEARNING_LEAVE_PARENT_OUT": False,
    # learning: share of the name prior (a pre-trained sentence-embedding model's rank of
    # a link's name against the topic's keywords; requirements-prior.txt) in a link's
    # value, geometric (0: off), and its model (a sentence-transformers path or name;
    # "": the bundled all-MiniLM-L6-v2)
    "FOCUSED_LEARNING_NAME_PRIOR": 0.0,
    "FOCUSED_LEARNING_NAME_MODEL": "",
    # a link whose URL names the page it stands on (the same last path segment, a
    # namespace like Talk: left out: a variant of that page) is valued without its
    # URL's words
    "FOCUSED_LEARNING_OWN_NAME": True,
    # a link's slot (the container path of the block it stands in: a page's prose, its
    # infobox, a "related articles" list): its value x min(1, slot score / mean label) **
    # this share, the slot score the mean label of the pages fetched through links of
    # that slot from pages at least as good as the mean (0: off)
    "FOCUSED_LEARNING_SLOT_SHARE": 0.5,
    # --- frontier --------------------------------------------------------------
    # rescoring of the waiting links (a strategy that rescores: `learning`): every
    # FOCUSED_RESCORE_EVERY learnt pages (0: never), or every waiting / BUDGET pages
    # when longer (at most BUDGET entries rescored per page on average: a rescore costs
    # ~2.5 us of CPU per waiting entry, so <= ~0.6 ms per page)
    "FOCUSED_RESCORE_EVERY": 16,
    "FOCUSED_RESCORE_BUDGET": 250,
    "FOCUSED_FRONTIER": "memory",  # "memory" (SQLite journal under JOBDIR) or "redis"
    # key prefix of the shared frontier; %(spider)s and %(topic)s as in scrapy-redis
    "FOCUSED_REDIS_KEY": "%(spider)s:%(topic)s",
    "FOCUSED_REDIS_LEASE": 60.0,
    # shared frontier: split into this many partitions by host (crc32 of the host), each
    # under its own hash tag, so that a Redis Cluster spreads them over its masters
    # (1: one key prefix, as before partitions existed)
    "FOCUSED_REDIS_PARTITIONS": 1,
    # shared frontier on a Redis Cluster: its startup nodes, "host:port,host:port"
    # ("": one Redis server at REDIS_URL)
    "FOCUSED_REDIS_CLUSTER_NODES": "",
    # shared frontier: after a round trip that pushed or finished URLs, WAIT for this
    # many replicas to have it (0: do not wait; a failover may then lose those writes)
    "FOCUSED_REDIS_WAIT": 0,
    # the learnt model (`learning`): saved under JOBDIR every this many learnt pages and
    # at the close (memory frontier; 0: only at the close)
    "FOCUSED_MODEL_SAVE_EVERY": 100,
    # shared frontier: each worker sends what it learnt and merges the others' every
    # this many learnt pages (one round trip; 0: workers do not share a model)
    "FOCUSED_REDIS_MODEL_EVERY": 8,
    # shared frontier: while the crawl's model has learnt fewer pages than this, a worker
    # reports after every learnt page (the first pages teach the most)
    "FOCUSED_REDIS_MODEL_YOUNG": 100,
    # shared frontier: at least this many waiting links re-valued per model round trip
    # by the one worker that holds the rescoring lease (FOCUSED_RESCORE_BUDGET per page
    # the crawl learnt since its last scan, up to 8 times this; 0: no rescoring on Redis)
    "FOCUSED_REDIS_RESCORE_CHUNK": 1000,
    # --- a hostile web (focused/robustness.py, focused/web/sanitize.py) ------------
    # at most this many downloads per host name (0: no cap); bounds an endless URL
    # space (a calendar, a session id in every link) on one host
    "FOCUSED_MAX_PAGES_PER_HOST": 0,
    # oversized pages: only the first this many characters of a page's body text (and of
    # its title) are tokenised and scored (0: all; the page and its indexed text are kept
    # whole), and at most this many link elements (<a>/<area> href) of a page are read,
    # in document order (0: all); counted in focused/pages/text_capped and
    # focused/links/capped (the link elements left unread)
    "FOCUSED_MAX_TEXT_CHARS": 120000,
    "FOCUSED_MAX_LINKS_PER_PAGE": 1000,
    # a link whose path holds a segment (or a block of up to 3 segments) more than this
    # many times in a row (/lab/lab/lab/: a relative link on a server that answers every
    # path) is dropped; 0: never
    "FOCUSED_MAX_PATH_REPEATS": 2,
    # only the first this many bytes (1 MiB) and tags of a page's body are parsed (its
    # tree, title, text, links and main content); the page is stored whole; 0: no cap;
    # counted in focused/pages/parse_capped
    "FOCUSED_MAX_PARSE_BYTES": 1048576,
    "FOCUSED_MAX_PARSE_TAGS": 50000,
    # URL shapes (focused.web.urlshape): the links of a shape (host, path with its last
    # segment as *, query keys) whose fetched pages keep being waste (near-duplicates,
    # noindex, a main content of fewer than FOCUSED_THIN_WORDS words outside links) wait
    # at the bottom of the frontier once its waste rate (a beta prior, shrunk to the
    # same shape on all hosts) reaches this (1: off)
    "FOCUSED_WASTE_SHAPE_THRESHOLD": 0.55,
    "FOCUSED_THIN_WORDS": 100,
    # a block that is template (repeated chrome) on this many other hosts is chrome on a
    # host's first pages too: sites of one software share their chrome (0: off)
    "FOCUSED_TEMPLATE_SHARED_HOSTS": 2,
    # a title's first or last part that began or ended this many earlier titles of the
    # host (or, last, that names the host) is the site's name: the title is scored
    # without it (focused.web.titles); 0: titles scored whole
    "FOCUSED_TITLE_SITE_PAGES": 2,
    # a waiting link whose URL shape became wasteful after it was found is re-queued at
    # the bottom when it comes up, instead of being fetched, once (in-memory and Redis
    # frontiers; the judgement comes from a focused.signals.frontier_waste_check handler)
    "FOCUSED_WASTE_SHAPE_RECHECK": True,
    # honour <meta name="robots" content="noindex"> (the page is not stored; its links
    # are followed unless "nofollow" too) and rel="nofollow" links (not followed)
    "FOCUSED_OBEY_META_ROBOTS": True,
    # hosts the crawl may leave the seeds for (Scrapy's allowed_domains: a domain also
    # allows its subdomains); empty: any host
    "FOCUSED_ALLOWED_DOMAINS": [],
    # query (?sid=) and path (;jsessionid=) parameters of these names stripped from
    # every link as session ids and tracking codes (a name ending in * is a prefix)
    "FOCUSED_SESSION_PARAMS": [
        "jsessionid",
        "phpsessid",
        "sid",
        "sessionid",
        "session_id",
        "aspsessionid",
        "cfid",
        "cftoken",
        "utm_*",
        "fbclid",
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "igshid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
    ],
    # --- output ----------------------------------------------------------------
    "FOCUSED_OUTPUT_DIR": "out/crawl",
    # add a crawl of another topic or strategy to a FOCUSED_OUTPUT_DIR whose page store
    # holds pages of an earlier one (False: the crawl command refuses, exit status 2)
    "FOCUSED_CONTINUE": False,
    "FOCUSED_METRICS_LOG_EVERY": 50,
    # page store (focused/output/store.py): rows per SQLite transaction (1 = every page is
    # durable when the pipeline returns; WAL keeps that at thousands of pages/s), and
    # fsync of the segments before each commit + synchronous=FULL (survives power loss,
    # slower)
    "FOCUSED_STORE_COMMIT_EVERY": 1,
    # with batches (COMMIT_EVERY > 1): a batch commits at the latest this many seconds
    # after its first row (its items wait for the commit before the next pipelines)
    "FOCUSED_STORE_COMMIT_SECONDS": 1.0,
    "FOCUSED_STORE_FSYNC": False,
    # gzip level of the WARC records (1: fastest; 6 compresses ~12 % better at twice the
    # cost) and whether compressing and writing them runs in one background thread
    # (rows still inserted on Scrapy's thread, in item order, file first); off: on 2
    # cores it saved Scrapy's thread ~0.1 ms per page for ~0.4 ms more CPU (docs/speed.md)
    "FOCUSED_STORE_GZIP_LEVEL": 1,
    "FOCUSED_STORE_THREAD": False,
    # pages are WARC records appended to segment files; a new segment starts once one
    # would pass this many MiB (fewer, larger files; one seek per page either way)
    "FOCUSED_STORE_SEGMENT_MB": 1024.0,
    # --- Python's garbage collector (focused/collector.py) --------------------------
    # at the engine's start: collect, then freeze what is alive (never walked again by a
    # full collection), and raise the young generation's threshold (0: Python's, 700)
    "FOCUSED_GC_FREEZE": True,
    "FOCUSED_GC_THRESHOLD": 20_000,
    # --- internal addresses and oversized input (focused/addressfilter.py) ---------
    # networks (CIDR) the crawl may fetch from although they are loopback, private,
    # link-local, ...; a seed's own kind is allowed anyway (not link-local)
    "FOCUSED_ALLOWED_NETWORKS": [],
    # behind a proxy, a link's host name that does not resolve on this machine is sent to
    # the proxy anyway (only for a proxy that reaches public hosts alone); else refused
    "FOCUSED_PROXY_RESOLVES": False,
    # host name -> IP address, used instead of a DNS lookup (like curl --resolve)
    "FOCUSED_HOSTS": {},
    # robots.txt: only its first this many bytes are downloaded and parsed (RFC 9309
    # asks for at least 500 KiB)
    "FOCUSED_ROBOTS_MAX_BYTES": 512000,
    # a response whose status and header lines add up to more than this many bytes
    # fails (Twisted kept them all, without bound); 0: no cap
    "FOCUSED_MAX_HEADER_BYTES": 262144,
    # a host whose robots.txt is unreachable (5xx, network error): its URLs wait this many
    # seconds, then robots.txt is fetched again (RFC 9309: complete disallow meanwhile)
    "FOCUSED_ROBOTS_RETRY_AFTER": 60.0,
    # ... this many times in a row; then its URLs wait in JOBDIR for the next run
    "FOCUSED_ROBOTS_UNREACHABLE_TRIES": 5,
    # a robots.txt Crawl-delay is honoured per host, up to this many seconds
    "FOCUSED_MAX_CRAWL_DELAY": 30.0,
    # a 429/503 answer's Retry-After pauses its host, up to this many seconds
    "FOCUSED_MAX_RETRY_AFTER": 60.0,
    # a host whose Retry-After pauses in a row (no other answer between them) add up to
    # more than this many seconds is given up: its other requests dropped (0: never)
    "FOCUSED_MAX_RETRY_AFTER_TOTAL": 600.0,
    # a host that answers 5xx this many times in a row (retries included, no other answer
    # between) is given up for the run: its other requests are dropped; 0: never
    "FOCUSED_MAX_SERVER_ERRORS": 20,
    # ... and only once that streak has lasted this many seconds (a brief outage of the
    # crawl's main host does not end the crawl); 0: at once
    "FOCUSED_SERVER_ERRORS_SECONDS": 60.0,
    # full-text index of the stored pages (focused/output/fulltext.py, docs/search.md):
    # on/off, and the characters of a page's main text that the spider hands on for it
    "FOCUSED_INDEX": True,
    "FOCUSED_INDEX_MAX_CHARS": 100000,
    # the index rows of this many stored pages go in together (1: each with its page's
    # row), at the latest with the first page stored this many seconds after the oldest
    # of them, and when the crawl ends; a page's row is durable at once either way (one
    # index write for 32 pages costs ~0.4 ms a page less than one per page)
    "FOCUSED_INDEX_EVERY": 32,
    "FOCUSED_INDEX_SECONDS": 2.0,
    # progress line (focused/extensions.py): every N pages or T seconds, whichever comes
    # first (0: never by that measure); with pages/s, harvest rate overall and over the
    # pages since the last line, recall, queue sizes and the annealing temperature
    "FOCUSED_PROGRESS_EVERY_PAGES": 500,
    "FOCUSED_PROGRESS_EVERY_SECONDS": 30.0,
    # write report.html (focused/output/html_report.py) at the end of every crawl
    "FOCUSED_REPORT": True,
    # seconds the page store waits for another program's write lock on pages.sqlite3
    # (pages wait in memory, retried from the reactor) before the crawl stops cleanly
    "FOCUSED_STORE_LOCK_TIMEOUT": 60.0,
    # --- politeness that keeps the order (focused/frontier/hostaware.py) --------------
    # the scheduler hands out the best waiting URL among the hosts whose download slot
    # can take a request now (DOWNLOAD_DELAY, Crawl-delay, Retry-After, concurrency), so
    # one busy host does not hold the others back; False: the strict global order
    "FOCUSED_HOST_AWARE": True,
    # at most this many waiting URLs are looked at per pick for a free host
    "FOCUSED_HOST_SCAN": 1024,
    # a fetched page holds its place in CONCURRENT_REQUESTS until its links are scored
    # and queued: the next URL is chosen knowing them (with CONCURRENT_REQUESTS = 1, a
    # strict best-first order that repeats run after run); False: Scrapy's way, a
    # download starts as soon as the previous one ends, while its page is being parsed
    "FOCUSED_WAIT_FOR_LINKS": True,
}


def get(settings: Any, name: str) -> Any:
    """Value of ``name`` from Scrapy ``settings``, falling back to :data:`DEFAULTS`."""
    default = DEFAULTS[name]
    if isinstance(default, bool):
        return settings.getbool(name, default)
    if isinstance(default, int):
        return settings.getint(name, default)
    if isinstance(default, float):
        return settings.getfloat(name, default)
    if isinstance(default, list):
        return settings.getlist(name, default)
    return settings.get(name, default)


@dataclass(frozen=True, slots=True)
class Check:
    """A setting's type and constraint, as :func:`focused.config.validate` checks them.

    ``kind``: ``"bool"``, ``"int"``, ``"float"``, ``"str"``, ``"list"`` (a list or a
    comma-separated string; a string that starts as a JSON or Python literal does, with
    ``[``, ``{`` or ``(``, is refused) or ``"dict"`` (a mapping or a JSON object); the kind
    of the default. A number lies between ``low`` and ``high`` (each bound open or closed, and
    finite); a string is one of ``choices`` when they are given. ``special`` names a
    further check of :mod:`focused.config` on the value (``"urls"``, ``"domains"``,
    ``"networks"``, ``"hosts"``, ``"page_threshold"``, ``"labels"``, ``"topics_dir"``,
    ``"params"``).
    """

    kind: str
    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    choices: tuple[str, ...] = ()
    special: str = ""


def _flag() -> Check:
    return Check("bool")


def _int(low: float = -math.inf, high: float = math.inf, *, open_high: bool = True) -> Check:
    """An integer in [low, high) (or [low, high] with ``open_high=False``)."""
    return Check("int", low, high, open_high=open_high)


def _float(
    low: float = -math.inf,
    high: float = math.inf,
    *,
    open_low: bool = False,
    open_high: bool = True,
    special: str = "",
) -> Check:
    return Check("float", low, high, open_low=open_low, open_high=open_high, special=special)


def _text(*choices: str) -> Check:
    return Check("str", choices=choices)


#: The type and constraint of every :data:`DEFAULTS` key (same order).
CHECKS: dict[str, Check] = {
    "FOCUSED_WEB": _text("auto", "sandbox", "real"),
    "FOCUSED_SEEDS": Check("list", special="urls"),
    # a readable file, or an http(s) URL within the crawl's scope
    "FOCUSED_LABELS": Check("str", special="labels"),
    "FOCUSED_TARGET_CATEGORY": _text(),
    "FOCUSED_TOPICS_DIR": Check("str", special="topics_dir"),  # an existing folder
    "FOCUSED_SANDBOX_SEED": _int(),
    "FOCUSED_SANDBOX_PAGES": _int(SANDBOX_MIN_PAGES, 10_000_000),
    "FOCUSED_SANDBOX_MODE": _text("normal", "hostile"),  # focused.web.sandbox MODES
    "FOCUSED_SANDBOX_PORT": _int(0, 65535, open_high=False),
    "FOCUSED_TITLE_WEIGHT": _float(0.0, 1e6),
    # below the largest page relevance, FOCUSED_TITLE_WEIGHT + 1
    "FOCUSED_PAGE_THRESHOLD": _float(0.0, special="page_threshold"),
    "FOCUSED_ANCHOR_THRESHOLD": _float(0.0, 1.0),
    "FOCUSED_STRATEGY": _text(),  # a registered name or a dotted path: the registry's check
    "FOCUSED_M_INITIAL": _float(0.0, open_low=True),
    "FOCUSED_GENETIC_RATIO": _float(0.0, 1.0, open_low=True),
    "FOCUSED_MAX_TUNNEL_HOPS": _int(0, 1000),
    "FOCUSED_SA_T0": _float(0.0, 1e6),
    "FOCUSED_SA_ALPHA": _float(0.0, 1.0, open_low=True, open_high=False),
    "FOCUSED_SA_T_MIN": _float(0.0, 1e6),
    "FOCUSED_SA_K": _int(1, 1e6),
    "FOCUSED_TUNNEL_WIDENING": _float(0.0, 1.0, open_low=True, open_high=False),
    "FOCUSED_BSBS_DEPTH": _int(0, 1000),
    "FOCUSED_SEED": _int(),
    # the learning strategy's (the same ranges as LearningStrategy.params_from_settings)
    "FOCUSED_LEARNING_SHRINKAGE": _float(0.0, 1e6, open_low=True),
    "FOCUSED_LEARNING_CONTEXT_SHARE": _float(0.0, 1.0, open_high=False),
    "FOCUSED_LEARNING_LABEL_FLOOR": _float(0.0, 1.0, open_low=True),
    "FOCUSED_LEARNING_PARENT_SHARE": _float(0.0, 1.0, open_high=False),
    "FOCUSED_LEARNING_KEYWORD_PAGES": _float(0.0, 1e6),
    "FOCUSED_LEARNING_EXPAND_TERMS": _int(0, 10_000),
    "FOCUSED_LEARNING_EXPAND_CAP": _float(0.0, 1e6),
    "FOCUSED_LEARNING_CLASSIFIER": _flag(),
    "FOCUSED_LEARNING_CLASSIFIER_PRIOR": _float(0.0, 1e9),
    "FOCUSED_LEARNING_HUB_PRIOR": _float(0.0, 1e6),
    "FOCUSED_LEARNING_EXPLORE_PRIOR": _float(0.0, 1e6),
    "FOCUSED_LEARNING_OPTIMISM": _float(0.0, 1.0),
    "FOCUSED_LEARNING_PAGE_MODEL": _float(0.0, 1.0, open_high=False),
    "FOCUSED_LEARNING_WASTE_LABEL": _flag(),
    "FOCUSED_LEARNING_LEAVE_PARENT_OUT": _flag(),
    "FOCUSED_LEARNING_NAME_PRIOR": _float(0.0, 1.0, open_high=False),
    "FOCUSED_LEARNING_NAME_MODEL": _text(),
    "FOCUSED_LEARNING_OWN_NAME": _flag(),
    "FOCUSED_LEARNING_SLOT_SHARE": _float(0.0, 1.0, open_high=False),
    "FOCUSED_RESCORE_EVERY": _int(0, 1e12),
    "FOCUSED_RESCORE_BUDGET": _int(0, 1e12),
    "FOCUSED_FRONTIER": _text("memory", "redis"),
    "FOCUSED_REDIS_KEY": _text(),
    "FOCUSED_REDIS_LEASE": _float(0.0, open_low=True),
    "FOCUSED_REDIS_PARTITIONS": _int(1, 4097),
    "FOCUSED_REDIS_CLUSTER_NODES": _text(),
    "FOCUSED_REDIS_WAIT": _int(0, 100),
    "FOCUSED_MODEL_SAVE_EVERY": _int(0),
    "FOCUSED_REDIS_MODEL_EVERY": _int(0),
    "FOCUSED_REDIS_MODEL_YOUNG": _int(0),
    "FOCUSED_REDIS_RESCORE_CHUNK": _int(0),
    "FOCUSED_MAX_PAGES_PER_HOST": _int(0),
    "FOCUSED_MAX_TEXT_CHARS": _int(0),
    "FOCUSED_MAX_LINKS_PER_PAGE": _int(0),
    "FOCUSED_MAX_PATH_REPEATS": _int(0),
    "FOCUSED_MAX_PARSE_BYTES": _int(0),
    "FOCUSED_MAX_PARSE_TAGS": _int(0),
    "FOCUSED_WASTE_SHAPE_THRESHOLD": _float(0.0, 1.0, open_low=True, open_high=False),
    "FOCUSED_THIN_WORDS": _int(0, 1e9),
    "FOCUSED_TEMPLATE_SHARED_HOSTS": _int(0, 1e9),
    "FOCUSED_TITLE_SITE_PAGES": _int(0, 1e9),
    "FOCUSED_WASTE_SHAPE_RECHECK": _flag(),
    "FOCUSED_OBEY_META_ROBOTS": _flag(),
    "FOCUSED_ALLOWED_DOMAINS": Check("list", special="domains"),
    "FOCUSED_SESSION_PARAMS": Check("list", special="params"),  # query parameter names
    "FOCUSED_OUTPUT_DIR": _text(),  # created (or refused) last: focused.config.validate
    "FOCUSED_CONTINUE": _flag(),
    "FOCUSED_METRICS_LOG_EVERY": _int(0),  # 0: no metrics line
    "FOCUSED_STORE_COMMIT_EVERY": _int(1),
    "FOCUSED_STORE_COMMIT_SECONDS": _float(0.0, open_low=True),
    "FOCUSED_STORE_FSYNC": _flag(),
    "FOCUSED_STORE_GZIP_LEVEL": _int(0, 9, open_high=False),
    "FOCUSED_STORE_THREAD": _flag(),
    "FOCUSED_STORE_SEGMENT_MB": _float(0.0, open_low=True),
    "FOCUSED_GC_FREEZE": _flag(),
    "FOCUSED_GC_THRESHOLD": _int(0, 10_000_000, open_high=False),
    "FOCUSED_ALLOWED_NETWORKS": Check("list", special="networks"),
    "FOCUSED_PROXY_RESOLVES": _flag(),
    "FOCUSED_HOSTS": Check("dict", special="hosts"),
    "FOCUSED_ROBOTS_MAX_BYTES": _int(0),
    "FOCUSED_MAX_HEADER_BYTES": _int(0),
    "FOCUSED_ROBOTS_RETRY_AFTER": _float(0.0, open_low=True),
    "FOCUSED_ROBOTS_UNREACHABLE_TRIES": _int(1),
    "FOCUSED_MAX_CRAWL_DELAY": _float(0.0),
    "FOCUSED_MAX_RETRY_AFTER": _float(0.0),
    "FOCUSED_MAX_RETRY_AFTER_TOTAL": _float(0.0),
    "FOCUSED_MAX_SERVER_ERRORS": _int(0),
    "FOCUSED_SERVER_ERRORS_SECONDS": _float(0.0),
    "FOCUSED_INDEX": _flag(),
    "FOCUSED_INDEX_MAX_CHARS": _int(0),
    "FOCUSED_INDEX_EVERY": _int(1),
    "FOCUSED_INDEX_SECONDS": _float(0.0),
    "FOCUSED_PROGRESS_EVERY_PAGES": _int(0),
    "FOCUSED_PROGRESS_EVERY_SECONDS": _float(0.0),
    "FOCUSED_REPORT": _flag(),
    "FOCUSED_STORE_LOCK_TIMEOUT": _float(0.0),
    "FOCUSED_HOST_AWARE": _flag(),
    "FOCUSED_HOST_SCAN": _int(1),
    "FOCUSED_WAIT_FOR_LINKS": _flag(),
}
