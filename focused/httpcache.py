"""Scrapy's HTTP cache (``HTTPCACHE_ENABLED``) on a crawl of the embedded sandbox.

Scrapy keys a cached response by its request: the URL. The sandbox's URLs are
``http://127.0.0.1:PORT/...`` whatever sandbox is served there, so with a fixed
``FOCUSED_SANDBOX_PORT`` (or the port a ``JOBDIR`` keeps) a sandbox of other
``FOCUSED_SANDBOX_PAGES``, ``_SEED`` or ``_MODE`` got the cached pages of the earlier one
(another site's pages, links and targets). The cache of a sandbox crawl is kept in a
folder of ``HTTPCACHE_DIR`` named after the settings that make the sandbox
(:func:`sandbox_cache_dir`), so each sandbox replays only its own pages; the real web's
cache is left as Scrapy keeps it.

:func:`sandbox_cache_dir` is pure; :func:`separate_sandbox_cache` is the Scrapy glue that
the focused spider calls as the spider opens, before the cache middleware opens its
storage.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["sandbox_cache_dir", "separate_sandbox_cache"]


def sandbox_cache_dir(cachedir: str, made: dict[str, object]) -> str:
    """The folder of ``cachedir`` for the sandbox that ``made`` describes (its pages, seed
    and mode: :func:`focused.config.sandbox_made`)."""
    name = "sandbox-" + "-".join(f"{k}{made[k]}" for k in sorted(made))
    return str(Path(cachedir) / name)


def separate_sandbox_cache(crawler: Any, made: dict[str, object]) -> None:
    """Point the storage of each HTTP cache middleware of ``crawler`` (Scrapy's
    ``HttpCacheMiddleware`` or a subclass, with a storage that keeps a ``cachedir``, as
    Scrapy's filesystem and DBM storages do) at the folder of this sandbox. Called on
    ``spider_opened`` before the middleware's own handler opens the storage."""
    from scrapy.downloadermiddlewares.httpcache import HttpCacheMiddleware

    engine = getattr(crawler, "engine", None)
    manager = getattr(getattr(engine, "downloader", None), "middleware", None)
    for mw in getattr(manager, "middlewares", ()):
        storage = getattr(mw, "storage", None)
        if not isinstance(mw, HttpCacheMiddleware) or not isinstance(
            getattr(storage, "cachedir", None), str
        ):
            continue
        folder = sandbox_cache_dir(storage.cachedir, made)
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.cachedir = folder
        logger.info("focused: the HTTP cache of this sandbox is kept in %s", folder)
