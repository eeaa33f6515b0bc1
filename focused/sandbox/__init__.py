"""The offline sandbox web: a generated, labelled, bilingual site and its HTTP server."""

from focused.sandbox.generator import Site, generate_site
from focused.sandbox.server import SandboxServer

__all__ = ["SandboxServer", "Site", "generate_site"]
