"""Scrapy settings of the focused crawler.

Every ``FOCUSED_*`` setting has its default in :mod:`focused.defaults` and is documented
in the README's settings table; set them here, with ``-s NAME=VALUE`` or per scrapyd job.
"""

BOT_NAME = "focused"
SPIDER_MODULES = ["focused.spiders"]
NEWSPIDER_MODULE = "focused.spiders"
COMMANDS_MODULE = "focused.commands"

# --- hygiene ---------------------------------------------------------------------
# Scrapy 2.19 opens an HTTP endpoint that runs Python; the telnet console is a shell.
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False
ROBOTSTXT_OBEY = True
USER_AGENT = "focused/0.1 (+topical research crawler; Scrapy)"
DOWNLOAD_TIMEOUT = 10  # connect and read time-outs of 10 s (web-crawler thesis, Binzhou 2010)
DOWNLOAD_MAXSIZE = 8 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
REDIRECT_MAX_TIMES = 5
# No cookies (Scrapy's advice for broad crawls): a topical crawl reads public pages, and
# a host that sets thousands of cookies would have them all sent back with every later
# request (megabytes of Cookie header, CPU on the reactor for every host); the first
# cookie also made tldextract fetch the Public Suffix List outside the address filter.
# A site that needs a session: -s COOKIES_ENABLED=True.
COOKIES_ENABLED = False
RETRY_TIMES = 2
# A page that still answers 5xx (or 429) after its retries is a bad page of the web, not
# an error of the crawl: its "Gave up retrying" line is a WARNING, as a failed download's
# line is (focused/network.py). Scrapy's ERROR, one per such URL, filled log_count/ERROR
# (a monitor fails the job on it) and buried the crawl's own errors.
RETRY_GIVE_UP_LOG_LEVEL = "WARNING"
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"

# --- politeness on the real web (the sandbox needs none) ---------------------------
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8

# --- the focused machinery ---------------------------------------------------------
SCHEDULER = "focused.scheduler.FocusedScheduler"
# A host's random delay (DOWNLOAD_DELAY_JITTER) drawn once per download, not at each look
# at its queue: gaps average the delay, and the host-aware pick knows when a host is free.
DOWNLOADER = "focused.downloader.FocusedDownloader"
# FOCUSED_FRONTIER = "redis" sets SCHEDULER to focused.distributed.scheduler.RedisScheduler.
# -s HTTPERROR_ALLOWED_CODES=404 (text) becomes [404]: Scrapy compares it as it is.
ADDONS = {"focused.distributed.addon.FrontierAddon": 0, "focused.habits.SettingsAddon": 0}
# Only used if SCHEDULER is set back to Scrapy's: one global order, not per domain.
SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"
SPIDER_MIDDLEWARES = {
    # Output runs from high to low orders: below DepthMiddleware (900), the strategy
    # sees the request's depth.
    "focused.middlewares.FocusedPriorityMiddleware": 890,
    # Scrapy's logged every over-long link whole at INFO (megabytes per hostile page).
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "focused.robustness.FocusedUrlLengthMiddleware": 800,
}
DOWNLOADER_MIDDLEWARES = {
    # No fetch from loopback, private or link-local addresses, in any spelling, on any
    # redirect hop, before robots.txt (focused/addressfilter.py).
    "focused.addressfilter.AddressFilterMiddleware": 50,
    "focused.addressfilter.RedirectAddressFilterMiddleware": 650,
    # A request through a proxy: its host name resolved and checked here first, as the
    # proxy would resolve it out of the resolver's sight.
    "focused.addressfilter.ProxyAddressFilterMiddleware": 760,
    # Scrapy 2.19's robots.txt middleware lets a request through unchecked when two others
    # already wait for the host's robots.txt, and when robots.txt cannot be fetched.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "focused.robots.FocusedRobotsTxtMiddleware": 100,
    # Charset repair, binary bodies, per-host page cap (see docs/robustness.md).
    "focused.robustness.RobustnessMiddleware": 585,
    # The lowest order: sees every download that failed for good (after the retries),
    # whatever its errback, and tells the scheduler (focused.signals.download_failed).
    "focused.scheduler.DownloadFailureMiddleware": 5,
    # A body that is not what its Content-Encoding says is kept as sent, not lost.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    # With COOKIES_ENABLED=True: no download of the Public Suffix List (focused/robustness.py).
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "focused.robustness.FocusedCookiesMiddleware": 700,
    "focused.robustness.FocusedHttpCompressionMiddleware": 590,
    # A redirect or meta refresh to a URL that is no http(s) link (javascript:, a port
    # out of range, credentials) is dropped and counted, not an error with a traceback.
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "focused.robustness.FocusedRedirectMiddleware": 600,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "focused.robustness.FocusedMetaRefreshMiddleware": 580,
    # A host that does not resolve or answer: one WARNING line (focused/network.py).
    "focused.network.QuietNetworkGiveUp": 560,
    "focused.network.NetworkErrorMiddleware": 540,
}
# Resolves IPv4 and IPv6, refuses internal addresses after resolution (Scrapy 2.19's
# name for DNS_RESOLVER, which it deprecates).
TWISTED_DNS_RESOLVER = "focused.addressfilter.FocusedResolver"
# Only http(s) is crawled: a page linking file:///etc/passwd must not get it read.
DOWNLOAD_HANDLERS = {"file": None, "ftp": None, "s3": None, "data": None}
# Scrapy's JOBDIR spider.state, written atomically (a full disk leaves the old file, not a
# truncated one that the next resume cannot load): focused.stop.SpiderState
EXTENSIONS = {
    # spider.state written atomically (a full disk must not truncate it)
    "scrapy.extensions.spiderstate.SpiderState": None,
    "focused.stop.SpiderState": 0,
    # stats.json, settings.json, report.html and progress lines (focused/extensions.py)
    "focused.extensions.CrawlOutputExtension": 500,
    "focused.collector.GarbageCollectorTuning": 0,
    # a feed (-o) that cannot be written stops the crawl in one line, not a traceback per
    # item (focused/feedexport.py)
    "scrapy.extensions.feedexport.FeedExporter": None,
    "focused.feedexport.FocusedFeedExporter": 0,
}
ITEM_PIPELINES = {
    "focused.pipelines.PageStorePipeline": 300,
    "focused.pipelines.MetricsPipeline": 800,
}
# Progress lines while crawling; stats.json, settings.json and report.html at the end.

# --- FOCUSED_* settings ------------------------------------------------------------
# Set any FOCUSED_* setting here (above or below this comment), e.g.
#   FOCUSED_STRATEGY = "bfs"
# Every one you do not set takes its default from focused/defaults.py, the one place
# where the defaults live: pulled in below, so that `scrapy settings --get FOCUSED_...`
# and get_project_settings() show the value the crawl uses. -s and scrapyd's per-job
# settings still win over settings.py.
from copy import deepcopy as _deepcopy  # noqa: E402

from focused.defaults import DEFAULTS as _focused_defaults  # noqa: E402

for _name, _default in _focused_defaults.items():
    globals().setdefault(_name, _deepcopy(_default))
del _name, _default
