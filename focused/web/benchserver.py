"""Scrapy's bench site (``scrapy.utils.benchserver``) served on 127.0.0.1 only, on a free
port: ``python -m focused.web.benchserver`` prints ``Bench server at http://HOST:PORT``
once it listens. Scrapy's own server listens on port 8998 of every interface, which
opens the benchmark to the network, and crawls whatever else holds that port."""

from __future__ import annotations

from scrapy.utils.benchserver import Root
from twisted.web.server import Site

#: the only interface the bench site listens on
HOST = "127.0.0.1"


def main() -> None:
    from twisted.internet import reactor

    port = reactor.listenTCP(0, Site(Root()), interface=HOST)  # type: ignore[attr-defined]

    def say_where() -> None:
        print(f"Bench server at http://{HOST}:{port.getHost().port}", flush=True)

    reactor.callWhenRunning(say_where)  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
