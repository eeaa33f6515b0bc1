"""Which web a crawl runs on: the real web or the embedded sandbox, its seeds and targets.

``FOCUSED_WEB = "auto"`` crawls the real web when the host of the topic's first seed
answers on its port within a few seconds, and the sandbox otherwise, so that the same
command works on a machine with internet and on one without.
"""

from __future__ import annotations

import socket
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from w3lib.url import canonicalize_url

from focused.output.metrics import read_labels, targets_from_labels
from focused.web.sandbox import SandboxServer, generate_site
from focused.web.topics import Topic


class SandboxError(RuntimeError):
    """The sandbox cannot be served (e.g. its port is taken)."""


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


def reachable(url: str, timeout: float = 3.0) -> bool:
    """True when the host of ``url`` accepts a TCP connection within ``timeout``."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def load_labels(source: str) -> dict[str, list[str]]:
    """Labels from a ``labels.tsv`` path or http(s) URL."""
    if urlsplit(source).scheme in ("http", "https"):
        with urllib.request.urlopen(source, timeout=10) as response:  # noqa: S310
            text = response.read().decode("utf-8")
    else:
        text = Path(source).read_text(encoding="utf-8")
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
) -> Web:
    """Decide the web, start the sandbox if it is the one, and gather seeds and targets.

    ``seeds`` (``FOCUSED_SEEDS``) replace the topic's; ``labels`` (``FOCUSED_LABELS``) and
    ``category`` (``FOCUSED_TARGET_CATEGORY`` or the topic's) define the targets on a
    labelled web; the topic's own ``targets`` count on the real web. The sandbox listens
    on ``sandbox_port`` (0: a free one); with ``port_file`` (``JOBDIR/sandbox.port``) a
    resumed crawl serves the sandbox on the port of the first run, so its URLs match.
    """
    category = category or topic.category
    if mode == "auto":
        first = (seeds or topic.seeds)[0]
        mode = "real" if seeds or reachable(first) else "sandbox"
    if mode == "sandbox":
        site = generate_site(seed=sandbox_seed, pages=sandbox_pages, mode=sandbox_mode)
        if not sandbox_port and port_file is not None and port_file.is_file():
            sandbox_port = int(port_file.read_text().strip() or 0)
        try:
            server = SandboxServer(site, port=sandbox_port)
        except OSError as exc:
            raise SandboxError(f"cannot serve the sandbox on port {sandbox_port}: {exc}") from None
        base = server.start()
        if port_file is not None:
            port_file.parent.mkdir(parents=True, exist_ok=True)
            port_file.write_text(str(urlsplit(base).port))
        prefix = category or "subject.Science.Chemistry"
        targets = frozenset(canonicalize_url(base + p) for p in site.targets(prefix))
        start = seeds or [base + p for p in site.seeds(prefix)]
        return Web("sandbox", start, targets, server)
    start = seeds or list(topic.seeds)
    if labels and category:  # a labelled web: its labels define the targets
        base = labels if urlsplit(labels).scheme in ("http", "https") else start[0]
        targets = targets_from_labels(load_labels(labels), category, urljoin(base, "/"))
    else:
        targets = frozenset(canonicalize_url(u) for u in topic.targets)
    return Web("real", start, targets)
