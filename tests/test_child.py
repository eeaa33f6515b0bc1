"""The child process that draws the curve and the report: output, arguments, failures."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from focused.output import child
from focused.output.child import ChildInterrupted, run_python


def test_child_output_and_arguments() -> None:
    assert run_python("import sys; print('-'.join(sys.argv[1:]))", "a", "b c") == "a-b c\n"


def test_child_imports_the_project() -> None:
    code = "import focused.output.child as c, sys; print(c.__file__)"
    import focused.output.child as here

    assert run_python(code).strip() == here.__file__


def test_child_failure_is_an_error_with_its_last_line() -> None:
    with pytest.raises(RuntimeError, match="ValueError: boom"):
        run_python("raise ValueError('boom')")


def test_child_timeout_kills_it() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time; time.sleep(30)", timeout=0.5)


# --- interrupt(): a second Ctrl-C stops the children --------------------------------------
@pytest.fixture
def stopping(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`interrupt` is for a process that stops; undone after the test."""
    monkeypatch.setattr(child, "_interrupted_at", None)


def run_in_thread(code: str, *args: str) -> tuple[threading.Thread, list[BaseException]]:
    raised: list[BaseException] = []

    def target() -> None:
        try:
            run_python(code, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, raised


def wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.01)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


SLOW_WRITE = """
import os, sys, time
from focused.output.atomic import write_with

def slow(tmp):
    with open(tmp, 'w') as fh:
        fh.write('half a file')
    with open(sys.argv[2] + '.part', 'w') as fh:
        fh.write(str(os.getpid()))
    os.replace(sys.argv[2] + '.part', sys.argv[2])
    time.sleep(60)

write_with(sys.argv[1], slow)
"""


def test_interrupt_stops_a_running_child_and_its_write(tmp_path: Path, stopping: None) -> None:
    """The child is in the middle of an atomic write: interrupted, it leaves neither its
    file nor the temporary one, and :func:`run_python` raises at once."""
    target, pidfile = tmp_path / "out" / "curve.png", tmp_path / "child.pid"
    target.parent.mkdir()
    thread, raised = run_in_thread(SLOW_WRITE, str(target), str(pidfile))
    wait_for_file(pidfile)
    began = time.monotonic()
    child.interrupt()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert time.monotonic() - began < child.INTERRUPT_GRACE + 1  # not the child's 60 s
    assert len(raised) == 1 and isinstance(raised[0], ChildInterrupted), raised
    assert gone(int(pidfile.read_text()))
    assert sorted(p.name for p in target.parent.iterdir()) == []  # no file, no .tmp


def test_interrupt_unwinds_a_child_started_with_sigint_ignored(
    tmp_path: Path, stopping: None
) -> None:
    """A crawler started with SIGINT ignored (a background job of a script, or after an
    in-process crawl) passes that on to its children: they unwind all the same."""
    target, pidfile = tmp_path / "out" / "curve.png", tmp_path / "child.pid"
    target.parent.mkdir()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        thread, raised = run_in_thread(SLOW_WRITE, str(target), str(pidfile))
        wait_for_file(pidfile)
    finally:
        signal.signal(signal.SIGINT, before)
    child.interrupt()
    thread.join(timeout=30)
    assert len(raised) == 1 and isinstance(raised[0], ChildInterrupted), raised
    assert sorted(p.name for p in target.parent.iterdir()) == []  # unwound, not killed


def test_interrupt_kills_a_child_that_ignores_it(
    tmp_path: Path, stopping: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child, "INTERRUPT_GRACE", 0.5)
    pidfile = tmp_path / "child.pid"
    code = (
        "import os, signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    )
    thread, raised = run_in_thread(code, str(pidfile))
    wait_for_file(pidfile)
    while not pidfile.read_text():
        time.sleep(0.01)
    child.interrupt()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], ChildInterrupted), raised
    assert gone(int(pidfile.read_text()))


def test_after_interrupt_no_child_starts(tmp_path: Path, stopping: None) -> None:
    child.interrupt()
    marker = tmp_path / "ran"
    with pytest.raises(ChildInterrupted, match="not started"):
        run_python("import sys; open(sys.argv[1], 'w')", str(marker))
    assert not marker.exists()


def test_interrupt_without_children_does_nothing_else(stopping: None) -> None:
    child.interrupt()
    child.interrupt()  # a third Ctrl-C: the same


def test_child_has_a_process_group_of_its_own() -> None:
    """A Ctrl-C typed in the terminal goes to the terminal's foreground process group:
    the crawler's, not the child's (a first Ctrl-C lets the child finish drawing)."""
    assert int(run_python("import os; print(os.getpgid(0))")) != os.getpgrp()
