"""Run a short piece of Python in a child process of this interpreter.

The crawler draws its harvest curve and its HTML report with matplotlib at close; loaded
into the crawler, matplotlib adds ~30 MB to the process's peak memory, which is what a
large crawl pays for on every machine. Drawn in a child, the crawler never holds it.
The child runs this interpreter with the project's folder first on its import path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["CHILD_TIMEOUT", "run_python"]

#: seconds a child may take
CHILD_TIMEOUT = 300.0
_ROOT = str(Path(__file__).resolve().parents[2])


def run_python(code: str, *args: str, timeout: float = CHILD_TIMEOUT) -> str:
    """Run ``code`` (``sys.argv[1:]`` = ``args``) in a child process; its standard
    output. Raises ``RuntimeError`` (with the child's last error line) when it fails,
    ``subprocess.TimeoutExpired`` when it takes longer than ``timeout`` (it is killed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else ""
        raise RuntimeError(f"the child process failed (exit {done.returncode}): {last}")
    return done.stdout.decode("utf-8", "replace")
