"""The child process that draws the curve and the report: output, arguments, failures."""

from __future__ import annotations

import subprocess

import pytest

from focused.output.child import run_python


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
