"""How a focused crawl that did not go as asked ended, in one line: the same for
``scrapy crawl`` (:mod:`focused.commands.crawl`) and for a ``CrawlerProcess`` script of
one's own (:func:`focused.cli.watch_script_crawl`).

- :func:`start_error_line`: the web could not be opened as the spider was made (the
  sandbox's port taken, labels out of scope or not fetched: a
  :class:`~focused.web.sites.WebError`); exit status 2, nothing fetched;
- :func:`end_problem`: the crawl ran and failed: it could not store its pages (finish
  reason ``store_failed``, Redis...: :data:`focused.stop.FAILED_REASONS`, whose line
  was logged when it stopped), no page could be fetched (a real web that no host of
  answered, a sandbox whose settings refuse every answer), or Scrapy's memory limit
  stopped it; exit status 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focused import config
from focused.defaults import get
from focused.output.record import stored_count
from focused.stop import FAILED_REASONS, stopped
from focused.web.sites import SandboxError, WebError


def start_error_line(exc: WebError, settings: Any) -> str:
    """The line (without ``focused: error:``) for ``exc``, raised as the crawl with
    ``settings`` opened its web; for a sandbox port that is taken, what to do about it."""
    if not isinstance(exc, SandboxError):
        return str(exc)
    port_file, _ = config.sandbox_port_files(settings)
    if not get(settings, "FOCUSED_SANDBOX_PORT") and port_file is not None:
        if settings.get("JOBDIR") and port_file.parent == Path(settings["JOBDIR"]):
            return (
                f"{exc}; the crawl in JOBDIR serves its sandbox on that port (its URLs use"
                " it): stop what listens there, then resume"
            )
        return (
            f"{exc}; the pages in FOCUSED_OUTPUT_DIR were crawled on that port (a crawl"
            " that adds to them serves the sandbox there, so none is stored twice):"
            " stop what listens there, then run again"
        )
    return (
        f"{exc}; stop what listens there, or choose another -s FOCUSED_SANDBOX_PORT (0: a free one)"
    )


def nothing_fetched_line(crawler: Any, settings: Any) -> str | None:
    """One line when the crawl stored nothing because no download succeeded (no host
    answered, or every answer came too late or too large); None otherwise, and for a
    crawl that had nothing left to fetch (a finished resume fetched without errors)."""
    web = getattr(getattr(crawler.spider, "web", None), "kind", "")
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    if web not in ("real", "sandbox") or stats.get("item_scraped_count"):
        return None
    output = str(get(settings, "FOCUSED_OUTPUT_DIR"))
    if web == "sandbox" and settings.get("JOBDIR") and stored_count(output):
        return None  # a resume whose last pages fail on purpose (the hostile sandbox)
    if stats.get("focused/robotstxt/redirect_refused") and not stats.get(
        "downloader/response_status_count/200"
    ):
        return (
            "no page was fetched: robots.txt redirects where this crawl may not go, so"
            " its rules cannot be read (the WARNING above names the host; FOCUSED_ALLOWED_"
            "DOMAINS names the hosts a crawl may go to)"
        )
    network = any(k.startswith("focused/errors/") for k in stats) or stats.get(
        "focused/robotstxt/unreachable"
    )
    if not network:
        return None
    why = stats.get("focused/errors/first") or "no host answered"
    if web == "real":
        return (
            f"no page could be fetched from the real web ({why}); check the network or"
            " use FOCUSED_WEB=sandbox"
        )
    # the sandbox answers on loopback: the settings refused every answer
    return (
        f"no page could be fetched from the sandbox web ({why}); check the settings"
        " that bound a download (DOWNLOAD_TIMEOUT, DOWNLOAD_MAXSIZE)"
    )


def memory_limit_line(stats: dict[str, Any], settings: Any) -> str | None:
    """The line for a crawl that Scrapy's ``MemoryUsage`` extension stopped (finish
    reason ``memusage_exceeded``): it ended before its budget, as a failure does."""
    if stats.get("finish_reason") != "memusage_exceeded":
        return None
    pages = int(stats.get("item_scraped_count") or 0)
    return (
        f"the crawl stopped at MEMUSAGE_LIMIT_MB ({settings.getint('MEMUSAGE_LIMIT_MB')} MB"
        f" for the whole process) after {pages} pages; raise the limit, or set it to 0"
    )


def failed_to_store(crawler: Any, reason: str) -> bool:
    """Whether the crawl stopped because it could not store its pages (or keep its
    shared frontier): its line was logged when it stopped (:mod:`focused.stop`)."""
    return reason in FAILED_REASONS or stopped(crawler) is not None


def why_no_response(crawler: Any) -> str:
    """Why the crawl of ``crawler`` got no response for the URL asked for, from its
    stats: the first network error, the address filter, robots.txt."""
    stats = crawler.stats.get_stats() if crawler is not None and crawler.stats else {}
    if stats.get("focused/errors/first"):
        return str(stats["focused/errors/first"])
    refused = sorted(k.rsplit("/", 1)[-1] for k in stats if k.startswith("focused/refused/"))
    if refused:
        return (
            f"refused as a {refused[0].replace('_', '-')} address, which the crawl does"
            " not fetch (FOCUSED_ALLOWED_NETWORKS)"
        )
    if stats.get("robotstxt/forbidden"):
        return "forbidden by its robots.txt; -s ROBOTSTXT_OBEY=False fetches it anyway"
    return "see the log"
