"""The ``focused`` spider: fetch, score and follow the pages of one topic."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from typing import Any
from urllib.parse import urlsplit

import mmh3
import numpy as np
import scrapy
from scrapy import signals
from scrapy.http import Response, TextResponse
from w3lib.url import canonicalize_url

from focused import config, habits, meta, robustness
from focused.bounded import recent
from focused.cli import (
    UNKNOWN_ARGS,
    fail,
    fail_script_crawl,
    guard_log_file,
    in_command,
    refuse_in_script,
    script_crawl,
    script_crawler,
    stores_nothing,
    watch_script_crawl,
)
from focused.defaults import get
from focused.httpcache import separate_sandbox_cache
from focused.items import PageItem, excerpt
from focused.meta import PageFacts
from focused.outcome import (
    failed_to_store,
    memory_limit_line,
    nothing_fetched_line,
    start_error_line,
)
from focused.ranking.learning import MAX_ANCHOR_CHARS, link_contexts
from focused.ranking.relevance import (
    TopicVector,
    hold_words,
    jieba_words,
    joined_and_counts,
    page_relevance,
    release_words,
    term_buckets,
    term_counts,
)
from focused.signals import frontier_opened, frontier_waste_check, page_aliased, page_skipped
from focused.stop import stopped
from focused.strategies import Strategy
from focused.web.neardup import NearDuplicates, key_of, later_is_main
from focused.web.safeurls import SafeUrls
from focused.web.sanitize import (
    WIRE_LENGTH,
    is_wide,
    parse_cut,
    partial_content,
    robots_agent_names,
    robots_header_directives,
    strip_session_ids,
)
from focused.web.sites import Web, WebError, open_web
from focused.web.template import HostTemplates, Page, chrome_urls, link_slots, split_page
from focused.web.titles import SiteTitles
from focused.web.topics import TopicError, load_topic
from focused.web.urlshape import ShapeStats, thin

#: the fields of the spider's items, as a feed exports them
_ITEM_FIELDS = [f.name for f in dataclasses.fields(PageItem)]

#: short pages remembered by their exact content (FocusedSpider._short_key)
MAX_SHORT_PAGES = 50_000
BODY_TEXT = "//body//text()[not(ancestor::script) and not(ancestor::style)]"
TITLE_TEXT = "//title//text()"
#: the letters ``translate()`` lowers in an XPath (a meta tag's ``name`` in any case)
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
#: ``<link rel="canonical" href="...">`` of a page (``rel`` one token of it, any case).
CANONICAL_LINK = (
    "/html/head/link[contains(concat(' ', normalize-space(translate(@rel, 'CANOIL', 'canoil')),"
    " ' '), ' canonical ')]/@href"
)
#: how far into a page its ``<head>`` is looked for a ``rel=canonical`` link
_HEAD_BYTES = 65536
_CANONICAL_WORDS = (b"canonical", b"Canonical", b"CANONICAL")


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 seed", "2 seeds", "0 seeds"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _partial(response: Response) -> bool:
    """Whether ``response`` is a part of its page, not the page
    (:func:`~focused.web.sanitize.partial_content`)."""
    request = response.request
    asked = request is not None and b"Range" in request.headers
    content_range = response.headers.get(b"Content-Range")
    length = len(response.body)
    if request is not None:  # the length as sent, before the body was decoded
        length = request.meta.get(WIRE_LENGTH, length)
    return partial_content(response.status, asked, content_range, length)


def release_selector(response: Response) -> None:
    """Drop the selector a parsed response keeps (``TextResponse.selector`` caches one,
    and Scrapy's ``Selector`` keeps its response: a reference cycle). Without the cycle
    the response, its body and its lxml tree are freed as soon as Scrapy lets go of the
    response, not at the garbage collector's next young collection, which
    ``FOCUSED_GC_THRESHOLD`` makes rarer (:mod:`focused.collector`). Reading
    ``response.selector`` later parses the body again."""
    if getattr(response, "_cached_selector", None) is not None:
        response._cached_selector = None  # type: ignore[attr-defined]


#: the selector types whose pages are parsed (a text response of another, JSON, is not)
MARKUP = frozenset({"html", "xml"})


def texts(response: TextResponse, query: str) -> list[str]:
    """``response.xpath(query).getall()`` for a text-node query, without one parsel
    ``Selector`` per node (hundreds per page: a few ms per page on a large one)."""
    xpath = getattr(response.selector.root, "xpath", None)
    if xpath is not None:
        try:
            found = xpath(query, smart_strings=False)
        except Exception:  # noqa: BLE001 - let parsel raise its own error
            found = None
        if isinstance(found, list) and all(type(x) is str for x in found):
            return found
    return response.xpath(query).getall()


def _runs(crawler: Any) -> bool:
    """Whether ``crawler``'s crawl goes on: starting or crawling, or stopped but with its
    spider still open (the downloads under way drain; its engine lets the spider go when
    it closes)."""
    if getattr(crawler, "crawling", False):
        return True
    engine = getattr(crawler, "_engine", None)
    return engine is not None and getattr(engine, "spider", None) is not None


class _Crawls:
    """The focused crawls that run in this process (a ``CrawlerProcess`` script may start
    several), for what they cannot share: jieba's dictionary, to which each topic adds its
    Chinese keywords (:class:`~focused.ranking.relevance.TopicVector`). A crawl of a topic
    that adds other words than a running crawl's is refused (each would cut the other's
    text with its words, and score it differently than alone); one that runs after another
    cuts as alone (:func:`~focused.ranking.relevance.release_words`)."""

    #: id(crawler) -> (the crawler, weakly; its topic's name; the words it adds)
    running: dict[int, tuple[weakref.ref[Any], str, frozenset[str]]] = {}  # noqa: RUF012

    @classmethod
    def join(cls, crawler: Any, topic: str, words: frozenset[str]) -> None:
        """``crawler`` starts a crawl of ``topic``: a :class:`config.ConfigError` when a
        running crawl's topic adds other words; else it holds the dictionary."""
        for key, (ref, _, _) in list(cls.running.items()):
            other = ref()
            if other is None or not _runs(other):
                cls.leave_key(key)  # ended without closing (failed as it opened)
        for ref, name, theirs in cls.running.values():
            if ref() is not crawler and theirs != words:
                raise config.ConfigError(
                    f"a crawl of topic {name} runs in this process: a crawl of topic {topic}"
                    f" beside it would cut Chinese text with the keywords of both (jieba's"
                    f" dictionary is one per process) and score pages unlike alone; start"
                    f" it once that crawl has ended (yield runner.crawl(...)) or in a"
                    f" process of its own"
                )
        if id(crawler) not in cls.running:
            cls.running[id(crawler)] = (weakref.ref(crawler), topic, words)
            hold_words()

    @classmethod
    def leave(cls, crawler: Any) -> None:
        cls.leave_key(id(crawler))

    @classmethod
    def leave_key(cls, key: int) -> None:
        if cls.running.pop(key, None) is not None:
            release_words()


class FocusedSpider(scrapy.Spider):
    """Crawl the pages of a topic: ``scrapy crawl focused -a topic=chemistry``.

    ``topic`` is a name from ``topics/`` or a path to a topic file. Each page is scored
    (the page-relevance rule A = 4B + C) and yielded as a :class:`PageItem` after its
    links; each link carries the relevance of its anchor text (the m-value rule, Liu,
    Xia & Xu 2010), from which :class:`~focused.middlewares.FocusedPriorityMiddleware`
    sets its priority with the crawl's strategy (:attr:`strategy`, built once here).
    What the spider found about the page goes to the middleware as a frozen
    :class:`~focused.meta.PageFacts` in ``response.meta[focused.meta.PAGE]``.

    Settings: ``FOCUSED_WEB``, ``FOCUSED_SEEDS``, ``FOCUSED_LABELS``,
    ``FOCUSED_TARGET_CATEGORY``, ``FOCUSED_TOPICS_DIR``, ``FOCUSED_SANDBOX_*``,
    ``FOCUSED_TITLE_WEIGHT``, ``FOCUSED_PAGE_THRESHOLD``, ``FOCUSED_STRATEGY`` and its
    parameters; on a hostile web
    ``FOCUSED_ALLOWED_DOMAINS`` (its ``allowed_domains``), ``FOCUSED_SESSION_PARAMS``
    (stripped from links) and :class:`~focused.robustness.RobustnessMiddleware`;
    ``FOCUSED_MAX_PARSE_BYTES``, ``FOCUSED_MAX_PARSE_TAGS``, ``FOCUSED_MAX_TEXT_CHARS`` and
    ``FOCUSED_MAX_LINKS_PER_PAGE`` (what one page may cost). An RSS or Atom feed is not
    stored: its items' links are followed (:meth:`_parse_feed`).
    ``FOCUSED_OBEY_META_ROBOTS``: a page whose robots meta tag (or ``X-Robots-Tag``
    header) says ``noindex`` is not stored, ``nofollow`` (there, or
    ``rel="nofollow"`` on a link) is not followed. ``FOCUSED_WASTE_SHAPE_THRESHOLD`` and
    ``FOCUSED_THIN_WORDS``: the links of a URL shape whose pages keep being waste wait at
    the bottom of the frontier with the chrome links (:mod:`focused.web.urlshape`); with
    ``FOCUSED_WASTE_SHAPE_RECHECK`` the spider hands :meth:`wasteful_link` to the scheduler
    (in-memory or Redis) through :data:`focused.signals.frontier_waste_check`, so that a
    link found before its shape was learnt wasteful is re-checked when it comes up.
    ``FOCUSED_TEMPLATE_SHARED_HOSTS``: chrome learnt as a template on that many other
    hosts is chrome from a host's first page on (:class:`~focused.web.template.HostTemplates`).

    A subclass may name its topic in a class attribute ``topic`` (``-a topic=`` wins:
    :meth:`topic_argument`) and its seeds and scope in ``start_urls`` and
    ``allowed_domains`` (:meth:`update_settings`); ``scrapy crawl`` and ``scrapy parse``
    check it as they check ``focused``.
    """

    name = "focused"
    #: the project's focused components serve this spider (:mod:`focused.scope`)
    focused_crawl = True

    def __init__(self, topic: str = "", *args: Any, **kwargs: Any) -> None:
        config.check_spider_args(kwargs)  # -a strategy=bfs: an error, not ignored
        super().__init__(*args, **kwargs)
        self.topic_arg = self.topic_argument(topic)

    @classmethod
    def topic_argument(cls, given: str | None = None) -> str:
        """The topic to crawl: ``-a topic=`` (``given``) when given, else a subclass's
        class attribute ``topic`` (a name or the path of a topic file), else "" (then
        :func:`~focused.web.topics.load_topic` says that no topic was given). Raises
        :class:`~focused.web.topics.TopicError` for a class attribute of another type."""
        if given:
            return str(given)
        declared = getattr(cls, "topic", None)
        if declared is None or isinstance(declared, str | os.PathLike):
            return os.fspath(declared or "")
        raise TopicError(
            f"{cls.__name__}.topic must be a topic name or the path of a topic file,"
            f" got {declared!r}"
        )

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        """Scrapy's (``custom_settings``), then a subclass's class attributes
        ``start_urls`` and ``allowed_domains`` as the crawl's ``FOCUSED_SEEDS`` and
        ``FOCUSED_ALLOWED_DOMAINS`` (the spider's seeds and scope come from those), at the
        priority of ``custom_settings``: a setting given there or with ``-s`` wins. The
        address filter's middlewares are enabled when the settings name none of them
        (:func:`focused.habits.add_address_guards`). ``custom_settings`` that Scrapy
        cannot set (a dict setting given a list) are a :class:`~focused.errors.ConfigError`
        naming the setting (:func:`focused.config.check_custom_settings`)."""
        crawl = script_crawl()
        errors = (config.ConfigError, TopicError)
        if crawl is None:
            if in_command():  # scrapy parse, fetch, shell make the crawler in their run
                refuse_in_script(lambda: cls._update_settings(settings), errors)
            else:  # a CrawlerRunner's crawl: its exception
                cls._update_settings(settings)
            return
        # no command checks a script's crawl: bad input ends it, as scrapy crawl's does
        refuse_in_script(lambda: cls._update_settings(settings), errors)
        refuse_in_script(lambda: cls._check_script_crawl(settings, crawl), errors)
        # and so does a web that cannot be opened, or a crawl that fails
        watch_script_crawl((WebError,), start_error_line)

    @classmethod
    def _check_script_crawl(cls, settings: Any, kwargs: dict[str, Any]) -> None:
        """The crawl command's checks of a crawl a script starts, without creating any
        folder: its arguments and topic (when ``process.crawl`` gave them), its settings,
        and its output folder and ``JOBDIR`` (:func:`focused.config.output_problem`)."""
        if kwargs is UNKNOWN_ARGS:  # process.create_crawler(...): the topic comes later
            config.validate(settings, reach_redis=False, folders=False)
            return
        config.check_spider_args(kwargs)
        topic = load_topic(cls.topic_argument(kwargs.get("topic")), config.topics_dir(settings))
        config.validate(settings, topic, reach_redis=False, folders=False)
        problem = config.output_problem(settings, topic.name)
        if problem:
            raise config.ConfigError(problem)

    @classmethod
    def _update_settings(cls, settings: Any) -> None:
        try:
            super().update_settings(settings)
        except (ValueError, TypeError):
            config.check_custom_settings(settings, cls.__name__, cls.custom_settings)
            raise
        custom = cls.custom_settings or {}
        for attribute, setting in (
            ("start_urls", "FOCUSED_SEEDS"),
            ("allowed_domains", "FOCUSED_ALLOWED_DOMAINS"),
        ):
            value = getattr(cls, attribute, None)
            if value and setting not in custom:
                values = [value] if isinstance(value, str) else list(value)
                settings.set(setting, [str(v) for v in values], priority="spider")
        habits.add_address_guards(settings)  # a script without the project's settings

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> FocusedSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        try:
            spider.setup(crawler.settings)
        except BaseException:
            _Crawls.leave(crawler)
            raise
        if not stores_nothing(crawler.settings):  # scripts too, not only scrapy crawl
            for line in habits.missing_components(
                crawler.settings,
                str(get(crawler.settings, "FOCUSED_OUTPUT_DIR")),
                spider.strategy_name,
            ):
                logging.getLogger(__name__).warning("focused: %s", line)
            for line in habits.ignored_environment(os.environ):
                logging.getLogger(__name__).warning("focused: %s", line)
            for line in habits.unknown_feed_fields(crawler.settings, _ITEM_FIELDS):
                logging.getLogger(__name__).warning("focused: %s", line)
        crawler.signals.connect(spider.close_web, signal=signals.spider_closed)
        if script_crawler(crawler):  # its end explained as scrapy crawl explains it
            crawler.signals.connect(spider._script_closed, signal=signals.spider_closed)
            crawler.signals.connect(spider._script_stopped, signal=signals.engine_stopped)
        if spider.web.kind == "sandbox" and crawler.settings.getbool("HTTPCACHE_ENABLED"):
            # connected before the cache middleware's own handler, which opens its storage
            crawler.signals.connect(spider._separate_cache, signal=signals.spider_opened)
        crawler.signals.connect(guard_log_file, signal=signals.spider_opened, weak=False)
        crawler.signals.connect(spider._frontier_opened, signal=frontier_opened)
        crawler.signals.connect(spider._waste_check, signal=frontier_waste_check)
        return spider

    def _script_closed(self, reason: str) -> None:
        """The end of a crawl that a script's ``CrawlerProcess`` runs, as ``scrapy crawl``
        ends it: a crawl that could not store its pages (its line logged already), that
        fetched no page, or that Scrapy's memory limit stopped is one line and exit
        status 1 when the process's ``start()`` returns (the script ended with status
        0); its finish reason is in ``crawler.stats`` as ever."""
        crawler = self.crawler
        settings = crawler.settings
        stats = {**crawler.stats.get_stats(), "finish_reason": reason}
        if failed_to_store(crawler, reason):
            fail_script_crawl(crawler, 1)
            return
        if reason == "shutdown":  # a Ctrl-C: the crawl was stopped, not failed
            return
        line = nothing_fetched_line(crawler, settings) or memory_limit_line(stats, settings)
        if line:
            fail(line)
            fail_script_crawl(crawler, 1)

    def _script_stopped(self) -> None:
        """A failure logged while the spider closed, after :meth:`_script_closed` ran (a
        feed whose last write failed as it was finished: JSON's ``]``, the flush of its
        buffer): exit status 1, as ``scrapy crawl`` gives; the script ended with status
        0. ``engine_stopped`` comes once every ``spider_closed`` handler has ended."""
        if stopped(self.crawler):
            fail_script_crawl(self.crawler, 1)

    def _separate_cache(self, spider: Any) -> None:
        """The HTTP cache of a sandbox crawl is kept apart for each sandbox
        (:mod:`focused.httpcache`): its URLs are the same on a fixed port."""
        separate_sandbox_cache(self.crawler, config.sandbox_made(self.crawler.settings))

    def _frontier_opened(self, drop_done: Callable[..., bool], **kwargs: Any) -> None:
        """The scheduler's test for links to URLs it has done (no request is built for
        them: it would drop them, :meth:`focused.scheduler.FocusedScheduler.drop_done`)."""
        self.drop_done = drop_done

    def _waste_check(self, **kwargs: Any) -> Callable[[str], bool] | None:
        """The scheduler asks, when it opens, how to re-check a waiting link when it
        comes up (``FOCUSED_WASTE_SHAPE_RECHECK``): :meth:`wasteful_link`, or ``None``
        when URL shapes are off (``FOCUSED_WASTE_SHAPE_THRESHOLD`` = 1)."""
        return self.wasteful_link if self.shapes is not None else None

    def setup(self, settings: Any) -> None:
        """Load and check the topic and the settings, then open the web to crawl."""
        self.topic = load_topic(self.topic_arg, config.topics_dir(settings))
        crawler = getattr(self, "crawler", None)
        if crawler is not None:  # refused beside a crawl of a topic that adds other words
            words = frozenset(jieba_words(self.topic.keywords))
            _Crawls.join(crawler, self.topic.name, words)
        # Redis was reached by the crawl command; if it went away since, the scheduler
        # says so in one line and stops (not a traceback here)
        config.validate(settings, self.topic, reach_redis=False)
        # the crawl command asked already; a crawl from a script of one's own did not
        # (not for scrapy fetch, shell, view or parse: they store nothing)
        # (honoured only as those commands set it, not from -s or settings.py)
        nothing_stored = stores_nothing(settings)
        problem = None if nothing_stored else config.output_problem(settings, self.topic.name)
        if problem:
            raise config.ConfigError(problem)
        # (the crawl command took it already; a script's other crawl may have it)
        config.claim_jobdir(settings, crawler)
        self.vector = TopicVector(self.topic.keywords)
        self.title_weight = get(settings, "FOCUSED_TITLE_WEIGHT")
        self.page_threshold = config.threshold(settings, self.topic, "page")
        self.strategy_name = str(get(settings, "FOCUSED_STRATEGY"))
        port_file, port_records = config.sandbox_port_files(settings)
        if nothing_stored:  # a kept port is read (its pages' URLs), none is recorded
            port_records = []
        self.web: Web = open_web(
            self.topic,
            mode=get(settings, "FOCUSED_WEB"),
            seeds=config.seeds_setting(settings),
            labels=get(settings, "FOCUSED_LABELS"),
            category=get(settings, "FOCUSED_TARGET_CATEGORY"),
            sandbox_seed=get(settings, "FOCUSED_SANDBOX_SEED"),
            sandbox_pages=get(settings, "FOCUSED_SANDBOX_PAGES"),
            sandbox_mode=get(settings, "FOCUSED_SANDBOX_MODE"),
            sandbox_port=get(settings, "FOCUSED_SANDBOX_PORT"),
            port_file=port_file,
            port_records=port_records,
            scope=config.probe_scope(settings),
        )
        self.targets = self.web.targets
        #: the crawl's one strategy; the priority middleware and the scheduler read it
        self.strategy: Strategy = config.strategy(settings, self.topic, targets=self.targets)
        # a strategy that asks for them gets each link's anchor text and context, and the
        # page's terms
        self.link_evidence = self.strategy.link_evidence
        self.link_slots = self.link_evidence and self.strategy.link_slots
        self.learns = self.strategy.learns
        self.allowed_domains = [d.strip() for d in get(settings, "FOCUSED_ALLOWED_DOMAINS")]
        self.session_params = config.session_params(settings)
        self.link_extractor = robustness.FocusedLinkExtractor(
            count=self._count,
            max_links=get(settings, "FOCUSED_MAX_LINKS_PER_PAGE"),
            max_path_repeats=get(settings, "FOCUSED_MAX_PATH_REPEATS"),
        )
        #: characters of the main text the page store indexes (0: the index is off)
        self.index_chars = (
            int(get(settings, "FOCUSED_INDEX_MAX_CHARS")) if get(settings, "FOCUSED_INDEX") else 0
        )
        #: only the first this many bytes and tags of a page are parsed (0: all)
        self.max_parse_bytes = int(get(settings, "FOCUSED_MAX_PARSE_BYTES"))
        self.max_parse_tags = int(get(settings, "FOCUSED_MAX_PARSE_TAGS"))
        #: only the first this many characters of a page's text are scored (None: all)
        self.max_text_chars: int | None = get(settings, "FOCUSED_MAX_TEXT_CHARS") or None
        #: each host's template, learnt from its pages (focused.web.template)
        self.templates = HostTemplates(
            shared_hosts=int(get(settings, "FOCUSED_TEMPLATE_SHARED_HOSTS"))
        )
        #: each host's site name in its titles, learnt from its pages (focused.web.titles)
        pages = int(get(settings, "FOCUSED_TITLE_SITE_PAGES"))
        self.site_titles = SiteTitles(pages) if pages else None
        #: main contents seen, by SimHash (focused.web.neardup)
        self.near_duplicates = NearDuplicates()
        #: pages too short for a SimHash, by host, title and exact content (_short_key)
        self.short_pages: OrderedDict[tuple[str, int], tuple[str, str]] = OrderedDict()
        #: waste per URL shape (focused.web.urlshape); None: off
        threshold = float(get(settings, "FOCUSED_WASTE_SHAPE_THRESHOLD"))
        self.shapes: ShapeStats | None = (
            ShapeStats(threshold=threshold) if threshold < 1.0 else None
        )
        self.thin_words = int(get(settings, "FOCUSED_THIN_WORDS"))
        self.obey_meta_robots = bool(get(settings, "FOCUSED_OBEY_META_ROBOTS"))
        #: the names robots meta tags and X-Robots-Tag headers address this crawl by
        #: (``robots`` aside): BOT_NAME and the user agent's product token
        self.robots_agents = robots_agent_names(
            str(settings.get("BOT_NAME") or ""),
            str(settings.get("ROBOTSTXT_USER_AGENT") or ""),
            str(settings.get("USER_AGENT") or ""),
        )
        names = " or ".join(
            f"translate(@name, '{_UPPER}', '{_LOWER}')='{n}'"
            for n in ("robots", *sorted(self.robots_agents))
        )
        self.meta_robots_query = f"//head/meta[{names}]/@content"
        self.meta_robots_words = tuple(n.encode() for n in ("robots", *sorted(self.robots_agents)))
        #: the scheduler's "is this URL done?" (None: every link gets its request)
        self.drop_done: Callable[..., bool] | None = None
        #: the URLs of the links' requests, made once per URL
        self.safe_urls = SafeUrls()
        self.logger.info(
            "focused: topic %s on the %s web, %s, %s, strategy %s",
            self.topic.name,
            self.web.kind,
            counted(len(self.web.seeds), "seed"),
            counted(len(self.targets), "known target"),
            self.strategy_name,
        )

    def close_web(self, spider: scrapy.Spider) -> None:
        try:
            self.web.close()
        finally:
            crawler = getattr(self, "crawler", None)
            if crawler is not None:
                _Crawls.leave(crawler)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.web.seeds:
            yield scrapy.Request(url, meta={meta.ANCHOR_RELEVANCE: 1.0, meta.PARENT_URL: ""})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if robustness.settle_base_url(response):  # a <base href> that makes no URL
            self._count("focused/pages/bad_base")
        parsed = self._parsed_part(response)
        robustness.settle_base_url(parsed)
        try:
            yield from self._parse_page(parsed, whole=response)
        finally:
            release_selector(parsed)
            if parsed is not response:
                release_selector(response)

    def _parsed_part(self, response: Response) -> Response:
        """The part of a text response that is parsed: its first
        ``FOCUSED_MAX_PARSE_BYTES`` bytes and ``FOCUSED_MAX_PARSE_TAGS`` tags
        (:func:`focused.web.sanitize.parse_cut`), the whole response when it is not
        longer. Everything the spider reads from a page (its tree, main content, title,
        text, links, robots meta tag) costs time and memory in proportion to the part
        parsed: the elements drive lxml's tree and the main-content walk, a Python
        object and a few hundred bytes each. The page is stored whole
        (``PageItem.body``); ``focused/pages/parse_capped`` counts the pages cut."""
        if not isinstance(response, TextResponse):
            return response
        body = response.body
        cut = parse_cut(
            body, self.max_parse_bytes, self.max_parse_tags, wide=is_wide(response.encoding)
        )
        if cut >= len(body):
            return response
        self._count("focused/pages/parse_capped")
        return response.replace(body=body[:cut], encoding=response.encoding)

    def _parse_page(self, response: Response, whole: Response) -> Iterator[Any]:
        """Score ``response`` (the part of ``whole`` that is parsed: :meth:`_parsed_part`)
        and yield its links and its item (``whole``'s body)."""
        if not self._readable(response, whole):
            return
        assert isinstance(response, TextResponse)
        feed = robustness.read_feed(response, self.link_extractor.max_links, self._count)
        if feed is not None:  # an RSS/Atom feed: its items are followed, it is not stored
            yield from self._parse_feed(response, feed)
            return
        cap = self.max_text_chars  # FOCUSED_MAX_TEXT_CHARS: what is tokenised and scored
        title = " ".join(texts(response, TITLE_TEXT)).strip()[:cap]
        robots = self._robots(response)
        body, page = self._content(response)
        if page is not None and self._near_duplicate(
            response, page, title, noindex="noindex" in robots
        ):
            return
        if cap is not None and len(body) > cap:
            self._count("focused/pages/text_capped")
        text_terms = None  # the index's terms of the text, when it is indexed whole
        if self.index_chars and len(body) <= self.index_chars and (cap is None or len(body) <= cap):
            # cut once for the relevance and the full-text index (jieba too)
            text_terms, body_terms = joined_and_counts(body)
        else:
            body_terms = term_counts(body[:cap])  # counted once: a learning strategy learns them
        scored, title_cos = self._scored_title(response.url, title)  # stored whole
        title_terms = term_counts(scored).keys()  # counted once: the strategy, thin pages
        learns = self.learns
        buckets = None  # of the page's terms, for a strategy that learns: hashed once
        if learns:
            body_cos, buckets = self.vector.cosine_and_buckets(body_terms)
            title_only = title_terms - body_terms.keys()
            if title_only:
                buckets = np.union1d(buckets, term_buckets(title_only))
        else:
            body_cos = self.vector.cosine_of_counts(body_terms)
        relevance = page_relevance(title_cos, body_cos, self.title_weight)
        relevant = relevance > self.page_threshold
        # href -> the extractor's URL of it on this page: no href is joined twice
        found, url_of = self.link_extractor.links_and_urls(response)
        links = self._followed(found, robots)
        links, chrome_links = self._split_links(page, links, url_of)
        own = self._learn_shape(
            response.url,
            body,
            links,
            body_terms,
            title_terms,
            noindex="noindex" in robots,
            page=page,
        )
        links, waste_links = self._split_waste(links)
        response.meta[meta.PAGE] = PageFacts(
            page_relevance=relevance,
            relevant=relevant,
            body_relevance=float(body_cos),
            link_count=len(links),
            # the page's distinct terms (title and body, UTF-8) for a strategy that learns
            terms=tuple(body_terms.keys() | title_terms) if learns else None,
            waste=own is not None,
            # of a waste page, the words of its main content beside its title's
            own_terms=tuple(own) if learns and own is not None else None,
            buckets=buckets,
        )
        yield from self._link_requests(response, links, page, url_of)
        yield from self._chrome_requests(response, chrome_links)
        yield from self._chrome_requests(response, waste_links, droppable=False)
        if "noindex" in robots:  # its links followed, the page not stored
            self._count("focused/pages/noindex")
            self.crawler.signals.send_catch_log(page_skipped, response=response)
            return
        got = response.meta
        item = PageItem(
            url=response.url,
            title=title[:1000],
            title_relevance=float(title_cos),
            body_relevance=float(body_cos),
            page_relevance=float(relevance),
            relevant=bool(relevant),
            is_target=canonicalize_url(response.url) in self.targets if self.targets else None,
            m=got.get(meta.M, 0.0),
            anchor_relevance=got.get(meta.ANCHOR_RELEVANCE, 0.0),
            link_value=got.get(meta.LINK_VALUE, 0.0),
            depth=got.get(meta.DEPTH, 0),
            parent_url=got.get(meta.PARENT_URL, ""),
            fetched_at=time.time(),
            status=response.status,
            encoding=response.encoding,
            link_count=len(links) + len(chrome_links),
            strategy=self.strategy_name,
            body=whole.body,  # for the page store only: not a field (focused.items)
            excerpt=excerpt(body),
            text=body[: self.index_chars] if self.index_chars else "",
        )
        item.text_terms = text_terms
        yield item

    def _readable(self, response: Response, whole: Response | None = None) -> bool:
        """Whether ``response`` is HTML or XML text; else it is counted and skipped
        (``page_skipped``): not text (``focused/skipped/not_text``), no text at all (a 204
        No Content, an empty or blank body: ``focused/skipped/empty``), or text of
        another kind, JSON (``focused/skipped/not_markup``: a JSON API, JSON-LD), or a
        part of a page (``focused/skipped/partial``: a 206 Partial Content to a request
        that asked for no range; its body is a piece of the page, not the page). A part
        of a page is no page skipped: the scheduler counts it an error (a failed fetch),
        not done. A 206 whose ``Content-Range`` covers the whole page is the page (told
        on ``whole``, the response as downloaded, when ``response`` is the part of it
        that is parsed)."""
        if _partial(whole if whole is not None else response):
            kind = "partial"
        elif not isinstance(response, TextResponse):
            kind = "not_text"
        elif not response.body.strip():
            kind = "empty"
        elif response.selector.type not in MARKUP:
            kind = "not_markup"
        else:
            return True
        self.crawler.stats.inc_value(f"focused/skipped/{kind}")
        if kind != "partial":  # a failed fetch (FocusedScheduler._on_response), not done
            self.crawler.signals.send_catch_log(page_skipped, response=response)
        return False

    def _link_requests(
        self,
        response: TextResponse,
        links: list[Any],
        page: Page | None,
        url_of: Callable[[str], str],
    ) -> Iterator[scrapy.Request]:
        """The requests of the page's content links; for a strategy that asks for link
        evidence, each with its anchor text, context and slot."""
        anchors = self.vector.cosines([link.text for link in links])
        contexts = link_contexts(response.selector.root, url_of) if self.link_evidence else None
        slots = link_slots(page, url_of) if self.link_slots and page is not None else {}
        for link, r in zip(links, anchors, strict=True):
            request = self._request(link.url, float(r), response.url)
            if request is not None:
                if contexts is not None:
                    request.meta[meta.ANCHOR_TEXT] = link.text[:MAX_ANCHOR_CHARS]
                    request.meta[meta.LINK_CONTEXT] = contexts.get(link.url, "")
                    slot = slots.get(link.url)
                    if slot:
                        request.meta[meta.LINK_SLOT] = slot
                yield request

    def _parse_feed(self, response: TextResponse, feed: robustness.Feed) -> Iterator[Any]:
        """An RSS or Atom feed is a list of links, not a page: each item's link is
        followed with the item's title as its anchor text (scored as any link, from the
        feed's relevance as a parent: its title, and its items' titles and summaries as
        the body), and the feed is not stored (``focused/feeds/fetched``,
        ``focused/feeds/links``)."""
        cap = self.max_text_chars
        title_cos = self.vector.cosine(feed.title[:cap])
        body_cos = self.vector.cosine(feed.text[:cap])
        relevance = page_relevance(title_cos, body_cos, self.title_weight)
        response.meta[meta.PAGE] = PageFacts(
            page_relevance=relevance,
            relevant=relevance > self.page_threshold,
            body_relevance=float(body_cos),
            link_count=len(feed.links),
        )
        self._count("focused/feeds/fetched")
        anchors = self.vector.cosines([link.text for link in feed.links])
        for link, r in zip(feed.links, anchors, strict=True):
            request = self._request(link.url, float(r), response.url)
            if request is not None:
                self._count("focused/feeds/links")
                if self.link_evidence:
                    request.meta[meta.ANCHOR_TEXT] = link.text[:MAX_ANCHOR_CHARS]
                    request.meta[meta.LINK_CONTEXT] = ""
                yield request
        self.crawler.signals.send_catch_log(page_skipped, response=response)

    def _scored_title(self, url: str, title: str) -> tuple[str, float]:
        """The title a page is scored by, and its cosine with the topic: ``title``
        without its site's name (:class:`focused.web.titles.SiteTitles`) when that
        scores no lower than the whole title (a section name a host repeats, "Neutrinos
        | Physics", may be the topic's word), else the whole title."""
        cos = self.vector.cosine(title)
        if self.site_titles is None:
            return title, cos
        own = self.site_titles.own(urlsplit(url).netloc, title)
        if own is not title:
            own_cos = self.vector.cosine(own)
            if own_cos >= cos:
                return own, own_cos
        return title, cos

    # --- main content and chrome (focused.web.template, focused.web.neardup) -----------
    def _content(self, response: TextResponse) -> tuple[str, Page | None]:
        """The page's main content text, and its blocks (None when it has no HTML body).

        Blocks the markup names chrome, or the host's template (blocks seen on earlier
        pages of the host), are left out; a page with no chrome block gets exactly the
        text of ``BODY_TEXT``."""
        root = response.selector.root
        page = split_page(root) if getattr(root, "tag", None) == "html" else None
        if page is None or not page.blocks:
            return " ".join(texts(response, BODY_TEXT)), None
        self.templates.classify(urlsplit(response.url).netloc, page)
        return page.content_text(), page

    def _near_duplicate(
        self, response: TextResponse, page: Page, title: str, *, noindex: bool = False
    ) -> bool:
        """Whether the page's main content was seen at another URL (the same title, a
        SimHash within 3 bits) of a page stored before: then it is counted
        (``focused/pages/near_duplicates``), gets no item and no links, and is recorded
        as another URL of that page (``page_aliased``: the page store writes an alias
        row, ``focused/pages/aliased``); the first copy's ``rel=canonical`` decides which
        of the two URLs is the main one (:func:`focused.web.neardup.later_is_main`). A
        ``noindex`` near-duplicate is skipped (``page_skipped``), not recorded. Otherwise
        its blocks join its host's template counts, and, unless it is ``noindex`` (it is
        not stored, so it is the copy of nothing), it becomes the page its later
        near-duplicates are recorded against."""
        index = self.near_duplicates
        folded = page.content_folded()
        key = key_of(folded, title, folded=True, min_chars=index.min_chars)
        short = None if key is not None else self._short_key(response, folded, title)
        if key is not None:
            seen, owner = index.owner_of(key)
        else:
            owner = None if short is None else self.short_pages.get(short)
            seen = owner is not None
        if not seen:
            if not noindex:
                if key is not None:
                    index.add(*key, owner=(response.url, self._canonical(response)))
                elif short is not None:
                    recent(
                        self.short_pages,
                        short,
                        lambda: (response.url, self._canonical(response)),
                        MAX_SHORT_PAGES,
                    )
            self.templates.learn(urlsplit(response.url).netloc, page)
            return False
        self._count("focused/pages/near_duplicates")
        if self.shapes is not None:
            self.shapes.observe(response.url, waste=True)
        if noindex or owner is None:
            self.crawler.signals.send_catch_log(page_skipped, response=response)
            return True
        first, first_canonical = owner
        url = response.url
        canonical = canonicalize_url(url)
        main = later_is_main(canonicalize_url(first), first_canonical, canonical)
        if main and key is not None:  # later near-duplicates are recorded against it
            index.set_owner(key, (url, self._canonical(response)))
        elif main and short is not None:
            self.short_pages[short] = (url, self._canonical(response))
        got = response.meta
        alias = {
            "url": url,
            "fetched_at": time.time(),
            "parent_url": got.get(meta.PARENT_URL, ""),
            "depth": got.get(meta.DEPTH, 0),
            "status": response.status,
            "is_target": canonical in self.targets if self.targets else None,
        }
        self._count("focused/pages/aliased")
        self.crawler.signals.send_catch_log(
            page_aliased, response=response, alias=alias, of=first, main=main
        )
        return True

    @staticmethod
    def _short_key(response: TextResponse, folded: list[str], title: str) -> tuple[str, int] | None:
        """The key of a page too short for a SimHash (:func:`focused.web.neardup.key_of`)
        by which another page of its host with the same title, exactly the same main
        content and the same links is its copy: a "page not found" answered with 200 for
        every broken link (a soft 404), the same stub at many URLs. None for a page with
        no content text (pages of chrome only, a calendar's months, are not the same
        page). The links count because a short page's copy gets no links followed: the
        photos of a gallery, "Gallery" and "« Previous | Next »" each, differ in theirs."""
        text = "\n".join(t for t in folded if t)
        if not text:
            return None
        hrefs = "\0".join(response.xpath("//a/@href").getall())
        digest = mmh3.hash64(f"{' '.join(title.split())}\0{text}\0{hrefs}", signed=False)[0]
        return urlsplit(response.url).netloc.lower(), digest

    def _canonical(self, response: TextResponse) -> str:
        """The canonical URL (``w3lib``'s form) the page names with ``rel=canonical``, ""
        for none (or one that makes no http(s) URL)."""
        body = response.body
        # runs on every page stored: a look at the head's bytes (no copy), the XPath only
        # when it may name one ("rel" is matched in any case, the word in its usual ones);
        # a UTF-16/32 page spells its words in other bytes: the XPath always reads it
        if not is_wide(response.encoding):
            end = body.find(b"</head", 0, _HEAD_BYTES)
            end = min(len(body), _HEAD_BYTES) if end < 0 else end
            if not any(body.find(word, 0, end) >= 0 for word in _CANONICAL_WORDS):
                return ""
        found = texts(response, CANONICAL_LINK)
        if not found:
            return ""
        try:
            joined = response.urljoin(found[0].strip())
        except ValueError:
            return ""
        return canonicalize_url(joined) if joined.startswith(("http://", "https://")) else ""

    # --- robots meta tags and URL shapes (focused.web.urlshape) ------------------------
    def _robots(self, response: TextResponse) -> frozenset[str]:
        """The page's robots directives (``noindex``, ``nofollow``, ...; ``none`` is
        both), from its meta tags named ``robots`` or one of this crawl's names
        (``robots_agents``: ``focused``) and its ``X-Robots-Tag`` headers, but for those
        that name another crawler (``<meta name="googlebot">``, ``X-Robots-Tag:
        otherbot: noindex``); none when ``FOCUSED_OBEY_META_ROBOTS`` is off."""
        if not self.obey_meta_robots:
            return frozenset()
        meta = []
        # the XPath only when the head's bytes may name a robots meta tag; a UTF-16/32
        # page spells the words in other bytes (``r\x00o\x00...``): always read
        if is_wide(response.encoding):
            meta = texts(response, self.meta_robots_query)
        else:
            head = response.body[:_HEAD_BYTES].lower()  # sliced and lowered once a page
            if any(word in head for word in self.meta_robots_words):
                meta = texts(response, self.meta_robots_query)
        found = {d.strip().lower() for v in meta for d in v.split(",")}
        headers = [v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")]
        found |= robots_header_directives(headers, self.robots_agents)
        if "none" in found:
            found |= {"noindex", "nofollow"}
        return frozenset(found)

    def _followed(self, links: list[Any], robots: frozenset[str]) -> list[Any]:
        """``links`` without those the page asks not to follow (all of them under a
        ``nofollow`` robots directive, else the ``rel="nofollow"`` ones)."""
        if not self.obey_meta_robots:
            return links
        kept = [] if "nofollow" in robots else [k for k in links if not k.nofollow]
        if len(kept) < len(links):
            self._count("focused/links/nofollow", len(links) - len(kept))
        return kept

    def _learn_shape(
        self,
        url: str,
        body: str,
        links: list[Any],
        body_terms: Counter[bytes],
        title_terms: Collection[bytes],
        *,
        noindex: bool,
        page: Page | None = None,
    ) -> Counter[bytes] | None:
        """Count the page as one more of its URL shape, waste when it is marked
        ``noindex``, or when its main content is thin (fewer than ``FOCUSED_THIN_WORDS``
        words outside its content links' anchors) and not relevant *in its own words*:
        the cosine C' of its main content without the words of its title, counted as
        the page-relevance rule would count a page whose title said as much,
        (w + 1) C', does not pass the page threshold. A thin page is not judged on
        A = 4B + C: a talk page, the second page of a thread or an article's comments
        carry the article's title (in the title and again as their heading) and little
        else of its subject; a short article on the topic, or a list of links on it (a
        hub: its anchors are in its main content), says more than its title.

        Returns the terms of a thin waste page's main content without its title's
        words (the strategy must not learn from it as a good page:
        :attr:`focused.meta.PageFacts.waste`), None for any other page (a page marked
        ``noindex`` is no outcome a strategy learns from, and its links keep its
        relevance as their parent's: a site's search results may be a good list of
        links), and always while shapes are off. ``page``: the blocks whose content
        text ``body`` is (their word counts are its words), None when it is not."""
        if self.shapes is None:
            return None
        waste = noindex
        own: Counter[bytes] | None = None
        if not waste:
            link_words = sum(len(k.text.split()) for k in links)
            # the words of the main content (``body``): counted by the blocks of its page
            words = page.content_words() if page is not None else len(body.split())
            if thin(words, link_words, self.thin_words):
                own = Counter({t: n for t, n in body_terms.items() if t not in title_terms})
                c = float(self.vector.cosine_of_counts(own))
                waste = page_relevance(c, c, self.title_weight) <= self.page_threshold
        if waste:
            self._count("focused/pages/waste")
        self.shapes.observe(url, waste=waste)
        return own if waste else None

    def wasteful_link(self, url: str) -> bool:
        """Whether a link to ``url`` is of a URL shape learnt wasteful by now (the
        scheduler asks when the link comes up, so that links found before their shape
        was learnt wait at the bottom too: ``FOCUSED_WASTE_SHAPE_RECHECK``, handed over
        by :meth:`_waste_check`)."""
        shapes = self.shapes
        return shapes is not None and shapes.wasteful(url)

    def _split_waste(self, links: list[Any]) -> tuple[list[Any], list[Any]]:
        """The content links as (kept, of a wasteful URL shape): the second wait at the
        bottom of the frontier with the chrome links."""
        shapes = self.shapes
        if shapes is None or not links:
            return links, []
        kept, waste = [], []
        for k in links:
            (waste if shapes.wasteful(k.url) else kept).append(k)
        if waste:
            self._count("focused/links/waste_shape", len(waste))
        return kept, waste

    def _split_links(
        self, page: Page | None, links: list[Any], url_of: Callable[[str], str]
    ) -> tuple[list[Any], list[Any]]:
        """The page's links as (content links, chrome links): a chrome link stands only
        in chrome blocks (``url_of``: ``href`` -> the link extractor's URL)."""
        if page is None or not page.has_chrome:
            return links, []
        chrome = chrome_urls(page, url_of)
        if not chrome:
            return links, []
        return [k for k in links if k.url not in chrome], [k for k in links if k.url in chrome]

    def _chrome_requests(
        self, response: TextResponse, links: list[Any], *, droppable: bool = True
    ) -> Iterator[Any]:
        """Requests of chrome links, scored here (value 0, the bottom of the frontier):
        kept, as they may be the only way into parts of a site, but fetched only when
        no content link is waiting (breadth-first among them). One hop only: no strategy
        sees them, so none can drop them, and the chrome links of a page reached by a
        chrome link are dropped (a calendar's "next month" would be an endless chain).
        Content links of a wasteful URL shape (``droppable=False``) wait there too but
        are never dropped: they stand in a page's content."""
        if not links:
            return
        got = response.meta
        if droppable and got.get(meta.CHROME):
            for _ in links:
                self._count("focused/links/chrome_dropped")
            return
        depth = got.get(meta.DEPTH, 0) + 1
        hops = got.get(meta.HOPS, 0) + 1
        for link in links:
            request = self._request(link.url, 0.0, response.url)
            if request is None:
                continue
            request.priority = meta.CHROME_PRIORITY - depth
            request.meta.update(
                {meta.CHROME: True, meta.LINK_VALUE: 0.0, meta.M: 0.0, meta.HOPS: hops}
            )
            self._count("focused/links/chrome")
            yield request

    def _request(self, url: str, anchor_relevance: float, parent: str) -> scrapy.Request | None:
        """The request of a link, without session ids; None for a URL Scrapy refuses, and
        for one the scheduler has done (it would drop it: ``drop_done``)."""
        # only a path parameter (";") or a query ("?") can carry a session id
        clean = strip_session_ids(url, self.session_params) if ";" in url or "?" in url else url
        if clean != url:
            self._count("focused/links/session_ids_stripped")
        elif self.drop_done is not None and self.drop_done(url, parent):
            return None  # done: the scheduler would drop it (counted there as filtered)
        try:
            # the URL scrapy.Request would make of it, made once per URL (SafeUrls) and
            # taken as given ("verbatim_url", dropped again: a copy of the request, a
            # redirect, makes its own URL safe as usual)
            request = scrapy.Request(
                self.safe_urls.of(clean),
                meta={
                    meta.ANCHOR_RELEVANCE: anchor_relevance,
                    meta.PARENT_URL: parent,
                    "verbatim_url": True,
                },
            )
        except ValueError:  # e.g. a port out of range
            self._count("focused/links/ignored/bad_url")
            return None
        del request.meta["verbatim_url"]
        return request

    def _count(self, key: str, n: int = 1) -> None:
        self.crawler.stats.inc_value(key, n)
