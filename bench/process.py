"""Child processes of the benchmarks and tests: a local web server or a ``redis-server``.

:class:`ChildProcess` starts a command, and :meth:`ChildProcess.stop` terminates it
(``SIGTERM``, then ``SIGKILL`` after 10 s); :meth:`ChildProcess.kill` is a ``kill -9``.
:class:`URLServer` is a server that prints its base URL on its first line of standard
output (``python -m focused.web.sandbox --port 0``, ``python -m bench.server``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Self

PROJECT = Path(__file__).resolve().parents[1]


def terminate(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """``SIGTERM`` and wait; ``SIGKILL`` if it is still there after ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class ChildProcess:
    """One child process; a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def start(self) -> str:
        raise NotImplementedError

    def kill(self) -> None:
        """``kill -9`` the process; what :meth:`start` needs again is kept."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def stop(self) -> None:
        """Terminate the process (killed if it is still there after 10 s)."""
        if self.process is not None:
            terminate(self.process)
            self.process = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class URLServer(ChildProcess):
    """A server run as ``cmd`` that prints its base URL first; ``base`` is that URL."""

    def __init__(self, cmd: list[str], name: str = "server") -> None:
        super().__init__()
        self.cmd = cmd
        self.name = name
        self.base = ""

    def start(self, timeout: float = 120.0) -> str:
        self.process = subprocess.Popen(
            self.cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        line = self.process.stdout.readline().strip()
        if not line.startswith("http") or time.monotonic() > deadline:
            self.stop()
            raise RuntimeError(f"the {self.name} did not start (printed {line!r})")
        self.base = line.rstrip("/")
        return self.base
