"""``python -m focused.distributed {status,clear} --key KEY [--url REDIS_URL] [--partitions N]
[--cluster host:port,...]``.

``status`` prints the shared queues and counters as one JSON object; ``clear`` deletes
every key of the frontier (no worker ever does). Exit status 2, with one line, when Redis
cannot be reached, refuses the client (a password, a database out of range), or ``--url``
is no Redis URL (a database that is no number, ``/abc``, was database 0: ``clear``
deleted the keys there).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import redis

from focused.distributed.connection import (
    REDIS_DOWN,
    REFUSED,
    check_url,
    refused_message,
    safe_url,
    unreachable_message,
)
from focused.distributed.frontier import RedisFrontier
from focused.errors import ConfigError

PROG = "python -m focused.distributed"


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv``; the exit status."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Inspect or delete a shared focused-crawl frontier in Redis."
    )
    parser.add_argument("action", choices=("status", "clear"))
    parser.add_argument("--key", required=True, help="key prefix, e.g. focused:chemistry")
    parser.add_argument(
        "--url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), help="Redis URL"
    )
    parser.add_argument(
        "--partitions", type=int, default=1, help="FOCUSED_REDIS_PARTITIONS of the crawl"
    )
    parser.add_argument(
        "--cluster",
        default=os.environ.get("FOCUSED_REDIS_CLUSTER_NODES", ""),
        help="startup nodes of a Redis Cluster, host:port,... (FOCUSED_REDIS_CLUSTER_NODES)",
    )
    args = parser.parse_args(argv)
    try:
        check_url(args.url)  # another scheme, a port or a database that is no number
        server = _client(args)
    except ConfigError as exc:
        print(f"focused: error: {str(exc).replace('REDIS_URL', '--url', 1)}", file=sys.stderr)
        return 2
    frontier = RedisFrontier(server, args.key, partitions=max(1, args.partitions))
    try:
        if args.action == "status":
            print(json.dumps(frontier.status()))
        else:
            print(f"deleted {frontier.clear()} keys of {args.key} at {safe_url(args.url)}")
    except REFUSED as exc:  # a password, a database out of range (before REDIS_DOWN)
        print(f"focused: error: {refused_message(server, exc)}", file=sys.stderr)
        return 2
    except REDIS_DOWN as exc:
        print(f"focused: error: {unreachable_message(server, exc)}", file=sys.stderr)
        return 2
    finally:
        server.close()
    return 0


def _client(args: argparse.Namespace) -> Any:
    if args.cluster:
        from scrapy.settings import Settings

        from focused.distributed.connection import connect

        return connect(
            Settings({"FOCUSED_REDIS_CLUSTER_NODES": args.cluster, "REDIS_URL": args.url})
        )
    return redis.Redis.from_url(args.url, socket_connect_timeout=3, socket_timeout=10)


if __name__ == "__main__":
    sys.exit(main())
