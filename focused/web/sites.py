"""Which web a crawl runs on: the real web or the embedded sandbox, its seeds and targets.

``FOCUSED_WEB = "auto"`` crawls the real web when the host of the topic's first seed
answers on its port within a few seconds, and the sandbox otherwise, so that the same
command works on a machine with internet and on one without. The probe keeps to the
crawl's scope (:mod:`focused.web.probe`): a seed host the crawl may not reach is not
looked up or connected to, and counts as unreachable. So does the fetch of the labels
(``FOCUSED_LABELS`` as an http(s) URL, :mod:`focused.web.fetch`): out of scope, it is
refused (:class:`LabelsError`) before any lookup or connection.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from w3lib.url import canonicalize_url

from focused.output.metrics import read_labels, targets_from_labels
from focused.web.fetch import FetchError, scoped_get
from focused.web.probe import PROBE_TIMEOUT, Probe, ProbeScope, probe
from focused.web.sandbox import SandboxServer, generate_site
from focused.web.topics import Topic

logger = logging.getLogger(__name__)


#: seconds the fetch of the labels (``FOCUSED_LABELS`` as a URL) may take, DNS included
LABELS_TIMEOUT = 10.0
#: bytes of labels fetched at most (a local file has no limit)
LABELS_MAX_BYTES = 32 * 1024 * 1024


class WebError(RuntimeError):
    """The web to crawl cannot be opened: the crawl stops with one line."""


class SandboxError(WebError):
    """The sandbox cannot be served (e.g. its port is taken)."""


def _kept_port(port_file: Path) -> int:
    """The port recorded in ``port_file`` (empty: 0, a free one). A file that holds
    something else (it was written over: a ``LOG_FILE`` pointed at it) is a
    :class:`WebError` naming it, not a ``ValueError`` traceback at every resume."""
    text = port_file.read_text(errors="replace").strip()
    if not text:
        return 0
    if text.isascii() and text.isdigit() and 0 < int(text) < 65536:
        return int(text)
    shown = text if len(text) <= 40 else f"{text[:40]}..."
    raise WebError(
        f"{port_file} should hold the port the crawl served its sandbox on, but holds"
        f" {shown!r}; write that port in it (its pages' URLs show it), or remove the file"
        " to serve the sandbox on a new port (pages already stored are then fetched again)"
    )


class LabelsError(WebError):
    """The labels (``FOCUSED_LABELS`` as a URL) are out of the crawl's scope or cannot
    be fetched."""


@dataclass
class Web:
    """Seeds and known targets of one crawl; ``server`` is the sandbox when it runs one."""

    kind: str  # "real" or "sandbox"
    seeds: list[str]
    targets: frozenset[str] = frozenset()
    server: SandboxServer | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def unreachable_reason(
    url: str, timeout: float = PROBE_TIMEOUT, scope: ProbeScope | None = None
) -> str | None:
    """Why the host of ``url`` does not accept a TCP connection within ``timeout``, in a
    few words ("DNS lookup failed for example.org", "example.org does not answer"), or
    None when it does; looked up and connected to only within ``scope``
    (:func:`focused.web.probe.probe`)."""
    return probe(url, scope, timeout=timeout).reason


def reachable(url: str, timeout: float = PROBE_TIMEOUT, scope: ProbeScope | None = None) -> bool:
    """True when the host of ``url`` accepts a TCP connection within ``timeout``."""
    return unreachable_reason(url, timeout, scope) is None


def load_labels(
    source: str,
    scope: ProbeScope | None = None,
    *,
    seeds: Sequence[str] = (),
    timeout: float = LABELS_TIMEOUT,
    max_bytes: int = LABELS_MAX_BYTES,
) -> dict[str, list[str]]:
    """Labels from a ``labels.tsv`` path or http(s) URL. A URL is fetched only within
    the crawl's ``scope`` (``FOCUSED_ALLOWED_DOMAINS``, ``FOCUSED_HOSTS``, the address
    policy of a crawl of ``seeds``), within ``timeout`` seconds and ``max_bytes``
    (:func:`focused.web.fetch.scoped_get`); else :class:`LabelsError`, whose message is
    the user's one line."""
    if urlsplit(source).scheme.lower() not in ("http", "https"):
        # utf-8-sig: a byte-order mark (Windows Notepad) made the first row's path
        # "\ufeff/wiki/..." and its page no target
        return read_labels(Path(source).read_text(encoding="utf-8-sig").splitlines())
    try:
        body = scoped_get(source, scope, seeds=seeds, timeout=timeout, max_bytes=max_bytes)
    except FetchError as exc:
        if exc.refused:
            raise LabelsError(
                f"FOCUSED_LABELS: {source!r} is out of the crawl's scope ({exc.reason});"
                " nothing was fetched"
            ) from None
        raise LabelsError(f"FOCUSED_LABELS: {source!r} cannot be fetched ({exc.reason})") from None
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LabelsError(f"FOCUSED_LABELS: {source!r} is not UTF-8 text (a labels TSV)") from None
    return read_labels(text.splitlines())


def open_web(
    topic: Topic,
    *,
    mode: str,
    seeds: list[str],
    labels: str,
    category: str,
    sandbox_seed: int,
    sandbox_pages: int,
    sandbox_mode: str,
    sandbox_port: int = 0,
    port_file: Path | None = None,
    port_records: Sequence[Path] = (),
    scope: ProbeScope | None = None,
) -> Web:
    """Decide the web, start the sandbox if it is the one, and gather seeds and targets.

    Each decision the user did not spell out is logged in one line: ``auto`` falling back
    to the sandbox (and why the real web is unreachable), ``real`` with a first topic seed
    that does not answer, and a web with no known target for the topic (recall is then
    not measured, rather than measured against another topic's pages).

    ``seeds`` (``FOCUSED_SEEDS``) replace the topic's; ``labels`` (``FOCUSED_LABELS``) and
    ``category`` (``FOCUSED_TARGET_CATEGORY`` or the topic's) define the targets on a
    labelled web; the topic's own ``targets`` count on the real web. The sandbox listens
    on ``sandbox_port`` (0: a free one); with ``port_file`` (a ``sandbox.port`` kept by an
    earlier crawl, :func:`focused.config.sandbox_port_files`) a resumed or continued crawl
    serves the sandbox on the port of the first run, so its URLs match; the port served
    is written to each of ``port_records``. The probe of the first seed looks up and
    connects to it only within ``scope`` (the crawl's ``FOCUSED_ALLOWED_DOMAINS``,
    ``FOCUSED_HOSTS`` and address policy, :func:`focused.config.probe_scope`).
    """
    category = category or topic.category
    mode = _decide_mode(topic, mode, seeds, scope or ProbeScope())
    if mode == "sandbox":
        return _open_sandbox(
            topic,
            category=category,
            seeds=seeds,
            sandbox_seed=sandbox_seed,
            sandbox_pages=sandbox_pages,
            sandbox_mode=sandbox_mode,
            sandbox_port=sandbox_port,
            port_file=port_file,
            port_records=port_records,
        )
    return _open_real(topic, category=category, seeds=seeds, labels=labels, scope=scope)


def _decide_mode(topic: Topic, mode: str, seeds: list[str], scope: ProbeScope) -> str:
    """The web ``mode`` names, with ``auto`` decided by probing the first seed (unless the
    user gave seeds); a fallback to the sandbox, or a real web that looks unreachable, is
    logged with the reason. A first seed out of ``scope`` is not probed (one INFO line):
    ``auto`` crawls the sandbox, ``real`` the real web as asked."""
    if mode == "auto":
        first = (seeds or topic.seeds)[0]
        answer = Probe(None) if seeds else probe(first, scope, seeds=topic.seeds)
        mode = "real" if answer.answered else "sandbox"
        if answer.refused:
            logger.info(
                "focused: the real web is not probed (%s); crawling the sandbox web instead",
                answer.reason,
            )
        elif answer.reason is not None:
            logger.warning(
                "focused: the real web is unreachable (%s); crawling the sandbox web instead",
                answer.reason,
            )
    elif mode == "real" and not seeds:  # FOCUSED_SEEDS (a benchmark's server): no probe
        answer = probe(topic.seeds[0], scope, seeds=topic.seeds)
        if answer.refused:
            logger.info(
                "focused: the real web is not probed (%s); crawling it (FOCUSED_WEB=real)",
                answer.reason,
            )
        elif answer.reason is not None:
            logger.warning(
                "focused: the real web looks unreachable (%s); crawling it anyway"
                " (FOCUSED_WEB=real)",
                answer.reason,
            )
    return mode


def _open_sandbox(
    topic: Topic,
    *,
    category: str,
    seeds: list[str],
    sandbox_seed: int,
    sandbox_pages: int,
    sandbox_mode: str,
    sandbox_port: int,
    port_file: Path | None,
    port_records: Sequence[Path],
) -> Web:
    """Generate the sandbox web, serve it (on the port of the first run when ``port_file``
    names one) and take its pages labelled ``category`` as the targets."""
    logger.info("focused: generating the sandbox web (%d pages)", sandbox_pages)
    site = generate_site(seed=sandbox_seed, pages=sandbox_pages, mode=sandbox_mode)
    if not sandbox_port and port_file is not None and port_file.is_file():
        sandbox_port = _kept_port(port_file)
    try:
        server = SandboxServer(site, port=sandbox_port)
    except OSError as exc:
        raise SandboxError(f"cannot serve the sandbox on port {sandbox_port}: {exc}") from None
    base = server.start()
    for record in port_records:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(str(urlsplit(base).port))
    # Only a category labels the sandbox's pages: without one (or with one the
    # sandbox has no page for) there is no target, and recall is not measured.
    paths = site.targets(category) if category else set()
    targets = frozenset(canonicalize_url(base + p) for p in paths)
    if not targets:
        logger.warning(
            "focused: the sandbox web has no pages labelled for topic %r (%s);"
            " recall is not measured",
            topic.name,
            f"category {category}" if category else "no category",
        )
    start = seeds or [base + p for p in site.seeds(category or "-")]
    return Web("sandbox", start, targets, server)


def _open_real(
    topic: Topic, *, category: str, seeds: list[str], labels: str, scope: ProbeScope | None
) -> Web:
    """The real (or a labelled) web: the user's seeds or the topic's, and the targets its
    ``labels`` give for ``category``, else the topic's own. Labels at a URL are fetched
    within ``scope`` (:func:`load_labels`)."""
    start = seeds or list(topic.seeds)
    if labels and category:  # a labelled web: its labels define the targets
        base = labels if urlsplit(labels).scheme in ("http", "https") else start[0]
        found = load_labels(labels, scope, seeds=start)
        targets = targets_from_labels(found, category, urljoin(base, "/"))
        if not targets:
            logger.warning(
                "focused: the labels %s have no page under category %s (topic %r);"
                " recall is not measured",
                labels,
                category,
                topic.name,
            )
    else:
        targets = frozenset(canonicalize_url(u) for u in topic.targets)
        if not targets:
            logger.warning(
                "focused: no targets are known for topic %r on the real web (%s, no"
                " FOCUSED_LABELS, no targets in the topic file); recall is not measured",
                topic.name,
                f"category {category}" if category else "no category",
            )
    return Web("real", start, targets)
