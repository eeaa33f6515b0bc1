"""The Redis connection of the shared frontier, from Scrapy settings.

As in scrapy-redis (0.9.1): ``REDIS_URL`` (or ``REDIS_HOST`` / ``REDIS_PORT``),
``REDIS_PARAMS``, through :func:`scrapy_redis.connection.get_redis_from_settings`; here
with short time-outs (see :func:`connect`). No Scrapy import at module level:
:mod:`focused.distributed.frontier` (pure) uses the error helpers.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from focused.errors import RedisUnavailable

__all__ = ["REDIS_DOWN", "check", "connect", "describe", "safe_url", "unreachable_message"]

#: errors that mean "Redis cannot be reached right now"
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

_REDIS_SETTINGS = ("REDIS_URL", "REDIS_HOST", "REDIS_PORT", "REDIS_DB", "REDIS_ENCODING")


def connect(settings: Any) -> redis.Redis:
    """A Redis client from Scrapy ``settings``, via scrapy-redis's connection helper.

    ``REDIS_URL`` (or ``REDIS_HOST`` / ``REDIS_PORT``) and ``REDIS_PARAMS`` as in
    scrapy-redis, but with short time-outs and one retry without back-off unless
    ``REDIS_PARAMS`` says otherwise: the client runs in the reactor thread, and
    scrapy-redis's 30 s time-outs (with redis-py's retries) would freeze the crawl.
    """
    from scrapy.settings import Settings
    from scrapy_redis.connection import get_redis_from_settings

    params = {
        "socket_timeout": 10,
        "socket_connect_timeout": 3,
        "retry_on_timeout": False,
        "retry": Retry(NoBackoff(), 1),
        "health_check_interval": 0,
    }
    params.update(settings.getdict("REDIS_PARAMS"))
    local = Settings({name: settings.get(name) for name in _REDIS_SETTINGS})
    local.set("REDIS_PARAMS", params)
    return get_redis_from_settings(local)


def check(settings: Any) -> None:
    """Raise :class:`RedisUnavailable` (one line) when the configured Redis does not answer."""
    server = connect(settings)
    try:
        server.ping()
    except REDIS_DOWN as exc:
        raise RedisUnavailable(unreachable_message(server, exc)) from None
    finally:
        server.close()


def safe_url(url: str) -> str:
    """``url`` without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


def describe(server: redis.Redis) -> str:
    """``redis://host:port/db`` of a client (no password)."""
    kw = server.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"


def unreachable_message(server: redis.Redis, exc: BaseException) -> str:
    """The one line a user reads when ``server`` does not answer."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"Redis at {describe(server)} is unreachable ({reason}); start it or set REDIS_URL"
        " (FOCUSED_FRONTIER = 'redis')"
    )
