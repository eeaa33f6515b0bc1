"""A frontier shared by many crawler processes in Redis (``FOCUSED_FRONTIER = "redis"``).

Several ``scrapy crawl focused`` processes, on one machine or many, crawl one topic
together: the waiting queue, the seen-URL set and the in-flight / done / error
bookkeeping of the four queues of Liu, Xia & Xu (2010) live in Redis under one key
prefix (``FOCUSED_REDIS_KEY``). Split as scrapy-redis splits connection, queue and
scheduler:

- :mod:`~focused.distributed.connection`: the client from Scrapy settings (scrapy-redis's
  ``get_redis_from_settings``, shorter time-outs) and the "unreachable" check;
- :mod:`~focused.distributed.frontier`: :class:`~focused.distributed.frontier.RedisFrontier`,
  the pure client (no Scrapy, no Twisted) and its Lua script ``pick.lua``;
- :mod:`~focused.distributed.partition`: the key layout, split by host into
  ``FOCUSED_REDIS_PARTITIONS`` partitions under hash tags, so that a Redis Cluster
  (``FOCUSED_REDIS_CLUSTER_NODES``) spreads one crawl over its masters;
- :mod:`~focused.distributed.scheduler`: :class:`~focused.distributed.scheduler.RedisScheduler`,
  the Scrapy scheduler on it;
- :mod:`~focused.distributed.addon`: the switch from ``FOCUSED_FRONTIER = "redis"`` to
  that ``SCHEDULER``;
- ``python -m focused.distributed {status,clear} --key KEY [--url REDIS_URL]``
  (:mod:`~focused.distributed.__main__`): look at or delete a shared frontier.

A picked URL is leased for ``FOCUSED_REDIS_LEASE`` seconds; a live worker renews the
leases of its in-flight URLs every third of that, so only the URLs of a dead worker
(``kill -9``) expire and are handed out again. No worker deletes any key when it closes
(``python -m focused.distributed clear`` does, on purpose).

Nothing is imported here, so that naming a module of the package does not load redis-py.
"""
