"""Run a short piece of Python in a child process of this interpreter.

The crawler draws its harvest curve and its HTML report with matplotlib at close; loaded
into the crawler, matplotlib adds ~30 MB to the process's peak memory, which is what a
large crawl pays for on every machine. Drawn in a child, the crawler never holds it.
The child runs this interpreter with the project's folder first on its import path.

The child runs in a process group of its own, so a Ctrl-C in the terminal reaches the
crawler alone: a first Ctrl-C lets the crawl close and draw as usual. :func:`interrupt`
(the crawl command calls it on a second Ctrl-C) stops the children running now and any
later :func:`run_python` of this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CHILD_TIMEOUT", "ChildInterrupted", "interrupt", "run_python"]

#: seconds a child may take
CHILD_TIMEOUT = 300.0
#: seconds an interrupted child has to finish (its KeyboardInterrupt removes the temporary
#: file of an atomic write) before it is killed
INTERRUPT_GRACE = 2.0
#: how often a waiting :func:`run_python` looks whether it was interrupted (a signal
#: handler cannot end the wait itself)
_POLL = 0.1
_ROOT = str(Path(__file__).resolve().parents[2])

_running: set[subprocess.Popen[bytes]] = set()
_interrupted_at: float | None = None


class ChildInterrupted(RuntimeError):
    """:func:`interrupt` stopped the child (or it was not started: the process stops)."""


def interrupt() -> None:
    """Stop the children running now (SIGINT: Python unwinds, an atomic write leaves no
    temporary file; killed after :data:`INTERRUPT_GRACE` s) and refuse later ones: their
    :func:`run_python` raises :class:`ChildInterrupted`. For a process that is stopping;
    safe in a signal handler (it only sends signals)."""
    global _interrupted_at
    if _interrupted_at is None:
        _interrupted_at = time.monotonic()
    for proc in list(_running):
        _signal(proc, signal.SIGINT)


def _signal(proc: subprocess.Popen[bytes], signum: int) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signum)


#: first line of every child: SIGINT raises KeyboardInterrupt, so :func:`interrupt`
#: unwinds it (an atomic write removes its temporary file) even when the crawler was
#: started with SIGINT ignored (a background job of a shell script, or a process that
#: ran a crawl before and ignores it since), which the child would inherit
_SIGINT_RAISES = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def run_python(code: str, *args: str, timeout: float = CHILD_TIMEOUT) -> str:
    """Run ``code`` (``sys.argv[1:]`` = ``args``) in a child process; its standard
    output. Raises ``RuntimeError`` (with the child's last error line) when it fails,
    ``subprocess.TimeoutExpired`` when it takes longer than ``timeout`` (it is killed),
    :class:`ChildInterrupted` when :func:`interrupt` stopped it."""
    if _interrupted_at is not None:
        raise ChildInterrupted("the child process was not started: interrupted")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SIGINT_RAISES + code, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,  # the terminal's Ctrl-C is the crawler's to handle
    )
    _running.add(proc)
    try:
        if _interrupted_at is not None:  # interrupted before it was in _running
            _signal(proc, signal.SIGINT)
        stdout, stderr = _wait(proc, timeout)
    finally:
        _running.discard(proc)
        if proc.returncode is None:  # an exception (a KeyboardInterrupt) while waiting
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        if _interrupted_at is not None:
            raise ChildInterrupted(f"the child process was interrupted (exit {proc.returncode})")
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else ""
        raise RuntimeError(f"the child process failed (exit {proc.returncode}): {last}")
    return stdout.decode("utf-8", "replace")


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """``proc``'s output once it ends; killed past ``timeout`` (``TimeoutExpired``) or
    :data:`INTERRUPT_GRACE` s after :func:`interrupt`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return proc.communicate(timeout=max(0.0, min(_POLL, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            late = _interrupted_at is not None and now >= _interrupted_at + INTERRUPT_GRACE
            if now >= deadline or late:
                proc.kill()
                stdout, stderr = proc.communicate()
                if late:
                    return stdout, stderr
                raise subprocess.TimeoutExpired(proc.args, timeout, stdout, stderr) from None
