"""The offline sandbox web: a generated, labelled, bilingual site and its HTTP server."""

from focused.web.sandbox.generator import Site, generate_site
from focused.web.sandbox.server import SandboxServer

__all__ = ["SandboxServer", "Site", "generate_site"]
