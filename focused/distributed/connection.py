"""The Redis connection of the shared frontier, from Scrapy settings.

As in scrapy-redis (0.9.1): ``REDIS_URL`` (or ``REDIS_HOST`` / ``REDIS_PORT``),
``REDIS_PARAMS``, through :func:`scrapy_redis.connection.get_redis_from_settings`; here
with short time-outs (see :func:`connect`). With ``FOCUSED_REDIS_CLUSTER_NODES``
(``host:port,host:port,...``) the client is redis-py's :class:`redis.cluster.RedisCluster`
on those startup nodes instead (password and database from ``REDIS_URL``; a cluster has
database 0 only). No Scrapy import at module level: :mod:`focused.distributed.frontier`
(pure) uses the error helpers.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from focused.errors import ConfigError, RedisFull, RedisRefused, RedisUnavailable

__all__ = [
    "CLUSTER_DOWN",
    "REDIS_DOWN",
    "WRITES_REFUSED",
    "check",
    "check_url",
    "cluster_nodes",
    "connect",
    "describe",
    "frontier_key",
    "full_message",
    "refused_writes_message",
    "is_cluster",
    "refused_message",
    "safe_url",
    "unreachable_message",
    "writes_refused",
]

#: errors of a Redis Cluster while a node fails or its slots move (a replica taking
#: over: the call is sent again once the cluster's map is read again)
CLUSTER_DOWN = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    redis.exceptions.AskError,  # and MovedError, its subclass
    redis.exceptions.RedisClusterException,  # SlotNotCoveredError and the like
    OSError,
)
#: errors that mean "Redis cannot be reached right now"
REDIS_DOWN = CLUSTER_DOWN

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
    nodes = cluster_nodes(str(settings.get("FOCUSED_REDIS_CLUSTER_NODES") or ""))
    if nodes:
        return _cluster(nodes, settings.get("REDIS_URL"), params)
    local = Settings({name: settings.get(name) for name in _REDIS_SETTINGS})
    local.set("REDIS_PARAMS", params)
    return get_redis_from_settings(local)


def cluster_nodes(text: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` (``FOCUSED_REDIS_CLUSTER_NODES``) as pairs;
    :class:`ConfigError` (one line) for a malformed entry."""
    out: list[tuple[str, int]] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"FOCUSED_REDIS_CLUSTER_NODES: {item!r} is not host:port"
                " (e.g. 10.0.0.1:7000,10.0.0.2:7000)"
            )
        out.append((host.strip("[]"), int(port)))
    return out


def _cluster(nodes: list[tuple[str, int]], url: Any, params: dict[str, Any]) -> RedisCluster:
    """redis-py's cluster client on ``nodes``; user name and password from ``url``."""
    kwargs = dict(params)
    kwargs.pop("retry_on_timeout", None)
    kwargs.pop("health_check_interval", None)
    if url:
        parts = urlsplit(str(url))
        if parts.password:
            kwargs.setdefault("password", parts.password)
        if parts.username:
            kwargs.setdefault("username", parts.username)
    try:
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in nodes], **kwargs
        )
    except CLUSTER_DOWN as exc:
        where = ",".join(f"{h}:{p}" for h, p in nodes)
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise RedisUnavailable(
            f"Redis Cluster at {where} is unreachable ({reason}); start it or set"
            " FOCUSED_REDIS_CLUSTER_NODES (FOCUSED_FRONTIER = 'redis')"
        ) from None


def is_cluster(server: Any) -> bool:
    """``server`` is a Redis Cluster client."""
    return isinstance(server, RedisCluster)


def check(settings: Any, crawl: dict[str, str] | None = None) -> None:
    """Raise :class:`RedisUnavailable` (one line) when the configured Redis does not answer
    or refuses this client (a password, a database index), :class:`ConfigError` for a
    ``REDIS_URL`` that is no Redis URL, and :class:`RedisLayoutError` when the frontier
    of ``crawl`` (``{"spider": ..., "topic": ..., "strategy": ...}``: its key from
    ``FOCUSED_REDIS_KEY``) is recorded as another crawl's (nothing is written)."""
    check_url(settings.get("REDIS_URL"))
    server = connect(settings)
    try:
        server.ping()
        if crawl:
            from focused.distributed.frontier import check_crawl

            key = frontier_key(
                str(settings.get("FOCUSED_REDIS_KEY") or DEFAULT_KEY),
                crawl.get("spider", ""),
                crawl.get("topic", ""),
            )
            check_crawl(server, key, crawl, write=False)
    except REFUSED as exc:  # (an AuthenticationError is a ConnectionError: first)
        raise RedisUnavailable(refused_message(server, exc)) from None
    except REDIS_DOWN as exc:
        raise RedisUnavailable(unreachable_message(server, exc)) from None
    finally:
        server.close()


#: default ``FOCUSED_REDIS_KEY``: one frontier per spider and topic
DEFAULT_KEY = "%(spider)s:%(topic)s"


def frontier_key(template: str, spider: str, topic: str) -> str:
    """The key prefix: ``template`` with ``%(spider)s`` (scrapy-redis's placeholder) and
    ``%(topic)s`` filled in (``{spider}`` / ``{topic}`` work too); without a topic, a
    trailing ``:`` is dropped (``alpha`` for spider ``alpha``)."""
    key = template
    for name, value in (("spider", spider), ("topic", topic)):
        key = key.replace(f"%({name})s", value).replace("{" + name + "}", value)
    return key.rstrip(":") or spider


#: errors of a server that answered and refused this client
REFUSED = (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)

_URL_FORM = "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... or unix:///PATH?db=DB"


def check_url(url: Any) -> None:
    """:class:`ConfigError` (one line) for a ``REDIS_URL`` that redis-py would refuse with
    a traceback (another scheme, a port that is no number) or read as something else than
    it says: a database that is no number (``/abc``) was database 0."""
    if not url:
        return
    text = str(url)
    shown = safe_url(text)
    try:
        from redis.connection import parse_url

        parse_url(text)
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError as exc:
        raise ConfigError(
            f"REDIS_URL {shown!r} is not a Redis URL ({exc}); say {_URL_FORM}"
        ) from None
    dbs = [unquote(parts.path).replace("/", "")] if parts.scheme != "unix" else []
    dbs += parse_qs(parts.query).get("db", [])
    for db in dbs:
        if db and not db.isdigit():
            raise ConfigError(
                f"REDIS_URL {shown!r}: the database {db!r} is not a number; say {_URL_FORM}"
            )


def safe_url(url: str) -> str:
    """``url`` without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


def describe(server: redis.Redis | RedisCluster) -> str:
    """``redis://host:port/db`` of a client (no password); ``redis-cluster://host:port,...``
    (its startup nodes) for a cluster."""
    if isinstance(server, RedisCluster):
        nodes = server.nodes_manager.startup_nodes.values()
        return "redis-cluster://" + ",".join(n.name for n in nodes)
    kw = server.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"


def refused_message(server: redis.Redis | RedisCluster, exc: BaseException) -> str:
    """The one line a user reads when ``server`` answers but refuses this client."""
    if isinstance(exc, redis.exceptions.OutOfMemoryError):
        return full_message(server)
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if "NOAUTH" in reason or "HELLO must be called" in reason:
        reason = "it needs a password"
    setting = "FOCUSED_REDIS_CLUSTER_NODES" if is_cluster(server) else "REDIS_URL"
    return (
        f"Redis at {describe(server)} refused this worker ({reason}); check the password"
        f" and the database in {setting} ({_URL_FORM}) and REDIS_PARAMS"
    )


def full_message(server: redis.Redis | RedisCluster) -> str:
    """The one line a user reads when ``server`` refuses writes at its ``maxmemory``."""
    return (
        f"Redis at {describe(server)} refuses the shared frontier's writes: it reached its"
        " maxmemory (command not allowed when used memory > 'maxmemory'); nothing of the"
        " refused changes was written. Raise its maxmemory (CONFIG SET maxmemory) or give"
        " it a server of its own, then start the crawl again with the same output folder"
    )


#: the error replies of a Redis that refuses writes for a while (not a lost frontier)
WRITES_REFUSED = ("MISCONF", "READONLY", "NOPERM")


def refused_writes_message(server: redis.Redis | RedisCluster, exc: BaseException) -> str:
    """The one line a user reads when ``server`` refuses writes mid-crawl (MISCONF,
    READONLY, NOPERM): Redis's own reason, without redis-py's pipeline annotation."""
    reason = " ".join(str(exc).split())
    _, sep, rest = reason.partition(" of pipeline caused error: ")
    reason = (rest if sep else reason).split(". ", 1)[0]
    return (
        f"Redis at {describe(server)} refuses the shared frontier's writes ({reason});"
        " nothing of the refused changes was written. Fix Redis (its log says why), then"
        " start the crawl again with the same output folder"
    )


def writes_refused(server: redis.Redis | RedisCluster, exc: BaseException) -> RedisRefused | None:
    """The one-line error for an error reply of a Redis that refuses writes for now (its
    maxmemory: :class:`RedisFull`; ``MISCONF``, ``READONLY``, ``NOPERM``); None for any
    other error."""
    if isinstance(exc, redis.exceptions.OutOfMemoryError):
        return RedisFull(full_message(server))
    reply = str(exc).rpartition(" of pipeline caused error: ")[2]
    if reply.startswith(WRITES_REFUSED) or isinstance(
        exc, redis.exceptions.ReadOnlyError | redis.exceptions.NoPermissionError
    ):
        return RedisRefused(refused_writes_message(server, exc))
    return None


def unreachable_message(server: redis.Redis | RedisCluster, exc: BaseException) -> str:
    """The one line a user reads when ``server`` does not answer."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    setting = "FOCUSED_REDIS_CLUSTER_NODES" if is_cluster(server) else "REDIS_URL"
    return (
        f"Redis at {describe(server)} is unreachable ({reason}); start it or set {setting}"
        " (FOCUSED_FRONTIER = 'redis')"
    )
