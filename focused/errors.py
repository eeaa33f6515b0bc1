"""The errors the focused crawler reports to its user as one line.

The ``crawl`` command prints any of them as ``focused: error: <message>`` and exits with
status 2 before anything is fetched. They live apart from the modules that raise them so
that :mod:`focused.config` (settings checks) and :mod:`focused.distributed` (the Redis
frontier) both use them without importing each other.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "FrontierLost",
    "RedisFull",
    "RedisLayoutError",
    "RedisRefused",
    "RedisUnavailable",
]


class ConfigError(ValueError):
    """A bad setting; the message is one line meant for the user."""


class RedisUnavailable(ConfigError):
    """Redis cannot be reached; the message is one line meant for the user.

    A :class:`ConfigError`, so ``scrapy crawl`` prints it as ``focused: error: ...`` and
    exits with status 2 when it checks the settings.
    """


class RedisLayoutError(ConfigError):
    """The shared frontier in Redis is split into another number of partitions than this
    worker's ``FOCUSED_REDIS_PARTITIONS``; the message is one line meant for the user."""


class FrontierLost(RuntimeError):
    """The shared frontier's keys vanished from Redis during the crawl (Redis restarted
    without its data or with an older copy of it, or they were deleted or evicted, all or
    some); the message is one line meant
    for the user. Not a :class:`ConfigError`: it happens mid-crawl, and the crawl stops."""


class RedisRefused(RuntimeError):
    """Redis answers but refuses the shared frontier's writes mid-crawl: a disk it cannot
    save its snapshot to (``MISCONF``, with ``stop-writes-on-bgsave-error``), a read-only
    replica (``READONLY``), an ACL (``NOPERM``). The message is one line meant for the
    user. Nothing of the refused round trip was written (Redis refuses a script at its
    first write), so the worker keeps its staged changes and stops."""


class RedisFull(RedisRefused):
    """Redis refuses the shared frontier's writes: it reached its ``maxmemory`` (policy
    ``noeviction``, or nothing left to evict)."""
