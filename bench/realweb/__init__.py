"""The realistic web of the quality benchmark: the labelled wikispeedia pages dressed as
real sites (chrome, meta pages, near-duplicates, many hosts with latency, dead and hanging
hosts, robots.txt), served on loopback addresses.

- :mod:`bench.realweb.web`: the pure, seeded generator (hosts, URLs, pages, the class of
  every URL).
- :mod:`bench.realweb.serve`: one server process (a thread per address) answering every
  host, with each host's latency, and a log of every request.
- :mod:`bench.realweb.measure`: a crawl's shares of the budget by URL class and its host
  utilisation, from its pages and the server's log.
"""
