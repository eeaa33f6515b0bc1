"""The sandbox web: generator determinism, graph shape, tunnels, the HTTP server, commands."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from parsel import Selector
from protego import Protego

from focused.web.sandbox import SandboxServer, Site, generate_site
from focused.web.sandbox.vocab import CHEMISTRY, SUBJECTS, UNINFORMATIVE

ROOT = Path(__file__).resolve().parents[1]
CHEM = "subject.Science.Chemistry"


@pytest.fixture(scope="module")
def site() -> Site:
    return generate_site(seed=7, pages=600)


@pytest.fixture(scope="module")
def server(site: Site):
    with SandboxServer(site) as srv:
        yield srv


def fetch(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def html_paths(site: Site) -> set[str]:
    return {p for p, t in site.content_types.items() if t.startswith("text/html")}


def categories(site: Site, path: str) -> list[str]:
    return site.labels[path]


def has_chemistry_word(text: str) -> bool:
    """A chemistry title word in ``text`` (English as whole words, Chinese as substrings)."""
    padded = f" {text.lower()} "
    return any(f" {w} " in padded for w in CHEMISTRY.title_en) or any(
        w in text for w in CHEMISTRY.title_zh
    )


# --- generator ---------------------------------------------------------------------------


def test_same_seed_gives_a_byte_identical_site(site: Site) -> None:
    again = generate_site(seed=7, pages=600)
    assert again.pages == site.pages
    assert again.labels_tsv() == site.labels_tsv()


def test_another_seed_gives_another_site(site: Site) -> None:
    other = generate_site(seed=8, pages=600)
    assert other.pages != site.pages
    shared = set(other.pages) & set(site.pages)
    assert sum(other.pages[p] != site.pages[p] for p in shared) > len(shared) // 2


def test_site_does_not_depend_on_hash_randomisation() -> None:
    code = (
        "import hashlib; from focused.web.sandbox import generate_site; s = generate_site(3, 300); "
        "print(hashlib.sha256(b''.join(k.encode() + v for k, v in sorted(s.pages.items())))"
        ".hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
        ).stdout
        for h in (1, 2)
    }
    assert len(digests) == 1


@pytest.mark.parametrize("kwargs", [{"mode": "nonsense"}, {"pages": 10}])
def test_bad_arguments_raise_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        generate_site(**kwargs)


@pytest.mark.parametrize("pages", [60, 600, 3000])
def test_page_count_is_close_to_the_request(pages: int) -> None:
    built = generate_site(seed=1, pages=pages)
    assert abs(len(html_paths(built)) - pages) <= max(3, pages // 50)


def test_every_page_is_labelled_and_reachable_and_links_resolve(site: Site) -> None:
    pages = html_paths(site)
    assert set(site.labels) == pages
    assert set(site.links) == pages
    for path, targets in site.links.items():
        assert set(targets) <= pages, path
    # independent BFS over the link graph
    seen, queue = {"/"}, deque(["/"])
    while queue:
        for nxt in site.links[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    assert seen == pages


def test_categories_are_wikispeedia_style(site: Site) -> None:
    found = {c for cats in site.labels.values() for c in cats}
    assert {s.category for s in SUBJECTS} <= found
    assert "sandbox.hub" in found
    assert len(site.targets(CHEM)) > 100
    assert site.targets("subject.Science") == site.targets(CHEM) | site.targets(
        "subject.Science.Physics"
    )
    assert site.labels["/"] == ["sandbox.hub"]


def test_titles_are_topical(site: Site) -> None:
    chemistry_words = set(" ".join(CHEMISTRY.title_en + CHEMISTRY.title_zh).split())
    for path, title in site.titles.items():
        cat = categories(site, path)[0]
        if cat == CHEM:
            assert set(title.split()) <= chemistry_words, title
            assert len(title.split()) >= 3, title
        elif cat.startswith("subject."):
            assert not has_chemistry_word(title), (path, title)


def test_anchors_mix_titles_and_uninformative_text(site: Site) -> None:
    anchors = []
    for body in (site.pages[p] for p in html_paths(site)):
        anchors += Selector(text=body.decode()).css("a::text").getall()
    uninformative = sum(a in UNINFORMATIVE for a in anchors)
    assert len(anchors) > 3000
    assert 0.04 < uninformative / len(anchors) < 0.3


def test_seeds_exist_and_name_the_topic_hub(site: Site) -> None:
    assert site.seeds(CHEM) == ["/", "/hub/chemistry.html"]
    assert site.seeds("subject.Sports") == ["/", "/hub/sports.html"]
    assert site.seeds("no.such.category") == ["/"]
    for prefix in (CHEM, "subject.Science"):
        assert set(site.seeds(prefix)) <= html_paths(site)


# --- tunnels (figure 2 of Liu, Xia & Xu 2010) --------------------------------------------


def min_irrelevant_pages(site: Site, prefix: str) -> dict[str, int]:
    """Fewest pages that are neither targets of ``prefix`` nor hubs on a path from a seed
    to each page (0-1 BFS)."""
    free = site.targets(prefix) | site.targets("sandbox.hub")
    cost = {s: 0 for s in site.seeds(prefix)}
    queue = deque(cost)
    while queue:
        path = queue.popleft()
        for nxt in site.links[path]:
            c = cost[path] + (nxt not in free)
            if c < cost.get(nxt, 1 << 30):
                cost[nxt] = c
                (queue.appendleft if nxt in free else queue.append)(nxt)
    return cost


@pytest.mark.parametrize("prefix", [CHEM, "subject.Sports", "subject.Science.Physics"])
def test_tunnel_targets_are_reached_only_through_irrelevant_pages(site: Site, prefix: str) -> None:
    tunnel = site.tunnel_targets(prefix)
    targets = site.targets(prefix)
    assert tunnel < targets
    assert len(tunnel) >= 0.15 * len(targets)
    cost = min_irrelevant_pages(site, prefix)
    for path in targets:
        assert path in cost, path  # reachable from the topic's seeds
        if path in tunnel:
            assert 1 <= cost[path] <= 3, (path, cost[path])  # one to three irrelevant pages
        else:
            assert cost[path] == 0, path


def test_a_tunnel_chain_enters_through_an_off_topic_anchor(site: Site) -> None:
    tunnel = site.tunnel_targets(CHEM)
    chemistry = site.targets(CHEM)
    entries = 0
    for path in chemistry - tunnel:
        body = Selector(text=site.pages[path].decode())
        for href, text in zip(
            body.css("a::attr(href)").getall(), body.css("a::text").getall(), strict=True
        ):
            target = urljoin(path, href)
            if target not in chemistry and any(
                t in tunnel for t in site.links[target]
            ):  # chemistry page -> off-topic page -> cluster
                assert not has_chemistry_word(text), text
                entries += text == site.titles[target]
    assert entries >= 1


# --- robots ------------------------------------------------------------------------------


def test_robots_disallows_only_the_linked_private_page(site: Site) -> None:
    robots = Protego.parse(site.pages["/robots.txt"].decode())
    private = [p for p in html_paths(site) if p.startswith("/private/")]
    assert private and any(private[0] in links for links in site.links.values())
    for path in html_paths(site):
        assert robots.can_fetch("http://x" + path, "focused") == (path not in private)


def test_labels_tsv_round_trips(site: Site) -> None:
    rows: dict[str, list[str]] = {}
    for line in site.pages["/labels.tsv"].decode().splitlines():
        if line.startswith("#"):
            continue
        path, category = line.split("\t")
        rows.setdefault(path, []).append(category)
    assert rows == site.labels


# --- server ------------------------------------------------------------------------------


def test_server_status_and_content_types(site: Site, server: SandboxServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    status, ctype, body = fetch(server.url("/"))
    assert (status, ctype) == (200, "text/html; charset=utf-8")
    assert body == site.pages["/"]
    assert b'<meta charset="utf-8">' in body
    assert fetch(server.url("/robots.txt"))[:2] == (200, "text/plain; charset=utf-8")
    status, ctype, body = fetch(server.url("/labels.tsv"))
    assert status == 200 and ctype.startswith("text/tab-separated-values")
    assert body == site.labels_tsv()
    assert fetch(server.url("/no/such/page.html"))[0] == 404
    assert fetch(server.url("/chemistry/"))[0] == 404
    status, _, body = fetch(server.url("/hub/chemistry.html"), method="HEAD")
    assert status == 200 and body == b""
    # a query string does not change the page
    assert fetch(server.url("/?a=1"))[2] == site.pages["/"]


def test_crawling_the_served_site_finds_every_page(site: Site, server: SandboxServer) -> None:
    """BFS over real HTTP, links extracted with parsel: same pages, same graph."""
    # sequential: client threads would fight the in-process server threads for the GIL
    seen, queue = {server.url("/")}, deque([server.url("/")])
    graph: dict[str, list[str]] = {}
    while queue:
        url = queue.popleft()
        status, ctype, body = fetch(url)
        assert status == 200 and ctype.startswith("text/html"), url
        sel = Selector(text=body.decode("utf-8"))
        assert sel.css("title::text").get()
        links = [urljoin(url, h) for h in sel.css("a::attr(href)").getall()]
        graph[urlsplit(url).path] = [urlsplit(u).path for u in links]
        for link in links:
            if link not in seen:
                seen.add(link)
                queue.append(link)
    assert graph == site.links


def test_server_stops_and_frees_its_port(site: Site) -> None:
    srv = SandboxServer(site)
    base = srv.start()
    assert fetch(base + "/")[0] == 200
    srv.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(base + "/", timeout=2)


def test_a_burst_of_connections_is_queued_not_dropped(site: Site) -> None:
    """A crawl opens ``CONCURRENT_REQUESTS`` connections at once; the server listened
    with the stdlib's queue of 5, so the kernel dropped the SYNs of the others and each
    of those downloads waited a second for the client's retry (a 5-page crawl often
    took a second longer). 64 connections made before the server thread even runs are
    all completed by the kernel at once, and then all answered."""
    srv = SandboxServer(site)  # listening, not serving yet
    socks: list[socket.socket] = []
    try:
        for _ in range(64):
            socks.append(socket.create_connection(srv.httpd.server_address[:2], timeout=0.5))
        srv.start()
        for sock in socks:
            sock.settimeout(10)
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
        for sock in socks:
            assert sock.recv(12) == b"HTTP/1.1 200"
    finally:
        for sock in socks:
            sock.close()
        srv.stop()


# --- large site --------------------------------------------------------------------------


def test_a_20000_page_site_generates_in_seconds() -> None:
    start = time.perf_counter()
    big = generate_site(seed=3, pages=20_000)
    elapsed = time.perf_counter() - start
    assert len(html_paths(big)) >= 19_500
    assert elapsed < 15, elapsed
    assert big.reachable(["/"]) == html_paths(big)
    assert len(big.tunnel_targets(CHEM)) > 500


# --- the page relevance A = 4B + C separates the subjects --------------------------------


def test_chemistry_pages_outscore_every_off_topic_page(site: Site) -> None:
    relevance = pytest.importorskip("focused.ranking.relevance")
    topics = pytest.importorskip("focused.web.topics")
    vector = relevance.TopicVector(topics.load_topic("chemistry").keywords)
    scores: dict[bool, list[float]] = {True: [], False: []}
    for path in html_paths(site):
        cat = categories(site, path)[0]
        if not cat.startswith("subject."):
            continue
        sel = Selector(text=site.pages[path].decode())
        title = sel.css("title::text").get("")
        body = " ".join(sel.css("p::text").getall())
        a = relevance.page_relevance(vector.cosine(title), vector.cosine(body))
        scores[cat == CHEM].append(a)
    assert min(scores[True]) > 2 * max(scores[False])


# --- entry points ------------------------------------------------------------------------


def serve_process(cmd: list[str]) -> None:
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        base = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert base.startswith("http://127.0.0.1:"), (base, proc.stderr)
        status, _, body = fetch(base + "/labels.tsv")
        assert status == 200
        assert body == generate_site(seed=5, pages=100).labels_tsv()
        assert fetch(base + "/missing")[0] == 404
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "GET" not in err  # quiet: no request log lines


def test_python_m_focused_sandbox_serves() -> None:
    serve_process([sys.executable, "-m", "focused.web.sandbox", "--seed", "5", "--pages", "100"])


def test_scrapy_sandbox_command_serves() -> None:
    serve_process(
        [
            sys.executable,
            "-m",
            "scrapy",
            "sandbox",
            "-s",
            "COMMANDS_MODULE=focused.commands",
            "--seed",
            "5",
            "--pages",
            "100",
        ]
    )


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another socket listens on."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


@pytest.mark.parametrize("port", ["taken", "99999", "-1"])
def test_scrapy_sandbox_refuses_a_port_in_one_line(port: str, taken_port: int) -> None:
    """A port in use or out of range gave an OSError/OverflowError traceback."""
    if port == "taken":
        port = str(taken_port)
    cmd = [sys.executable, "-m", "scrapy", "sandbox", "--pages", "60", "--port", port]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stdout == ""  # no base URL: nothing is served
    says = (
        f"cannot listen on 127.0.0.1:{taken_port}: Address already in use"
        if port == str(taken_port)
        else f"port must be 0-65535 (0: a free one), got {port}"
    )
    assert proc.stderr == f"focused: error: {says}\n"


def test_python_m_focused_sandbox_refuses_a_port_in_use(taken_port: int) -> None:
    cmd = [sys.executable, "-m", "focused.web.sandbox", "--pages", "60"]
    proc = subprocess.run(
        [*cmd, "--port", str(taken_port)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert (
        proc.stderr == f"error: cannot listen on 127.0.0.1:{taken_port}: Address already in use\n"
    )


def test_a_sandbox_port_is_chosen_below_the_ephemeral_range_and_a_taken_one_skipped(
    tmp_path: Path,
) -> None:
    """A JOBDIR crawl serves its sandbox on the same port when it resumes; a port of the
    kernel's ephemeral range may by then be a client's (the resume had to stop, "Address
    already in use"), so the port is chosen below that range, and a taken one skipped."""
    import random

    from focused.web.sandbox import server as sandbox_server

    low = sandbox_server.ephemeral_low()
    assert sandbox_server.ephemeral_low(str(tmp_path / "absent")) == 32768
    (tmp_path / "range").write_text("40000\t60999\n")
    assert sandbox_server.ephemeral_low(str(tmp_path / "range")) == 40000
    first = random.Random(5).sample(range(20000, min(32768, low)), 64)[0]
    taken = socket.socket()
    taken.bind(("127.0.0.1", first))
    taken.listen()
    try:
        httpd = sandbox_server.free_low_port_server(
            "127.0.0.1", sandbox_server._Handler, random.Random(5)
        )
        try:
            port = httpd.server_address[1]
            assert port != first and 20000 <= port < min(32768, low)
        finally:
            httpd.server_close()
    finally:
        taken.close()
    site = generate_site(seed=7, pages=60)
    with SandboxServer(site) as srv:
        port = int(srv.base_url.rsplit(":", 1)[1])
        assert 20000 <= port < min(32768, low)
