"""A failure whose traceback pytest cannot format (testbed/plain_reports.py) is still reported,
and the session goes on to the end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from testbed.harness import ROOT

# The inner run's conftest makes every source lookup of a traceback fail as CPython 3.11.7 does.
BROKEN_FORMATTING = """
import _pytest._code.code as code

def mismatch(*args, **kwargs):
    raise SystemError("AST constructor recursion depth mismatch (before=78, after=133)")

code.getstatementrange_ast = mismatch
"""

TESTS = """
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("the chart could not be read")

def test_fails():
    assert 1 + 1 == 3, "arithmetic is off"

def test_setup_errors(broken_setup):
    pass

def test_after():
    pass
"""


def inner_run(tmp_path: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(BROKEN_FORMATTING)
    (tmp_path / "test_inner.py").write_text(TESTS)
    options = [arg for plugin in plugins for arg in ("-p", plugin)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_hook_the_session_dies(tmp_path: Path) -> None:
    done = inner_run(tmp_path)
    assert "INTERNALERROR" in done.stdout + done.stderr, done.stdout[-2000:]


def test_failures_and_errors_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    done = inner_run(tmp_path, "testbed.plain_reports")
    out = done.stdout
    assert "INTERNALERROR" not in out + done.stderr, out[-3000:]
    assert re.search(r"^1 failed, 1 passed, .*1 error in ", out, re.M), out[-3000:]
    assert "AssertionError: arithmetic is off" in out
    assert "RuntimeError: the chart could not be read" in out
    assert 'test_inner.py", line 9, in test_fails' in out
    assert "shown plain: pytest could not format this traceback" in out
    assert "FAILED test_inner.py::test_fails - AssertionError: arithmetic is off" in out
    assert "pluggy/_execution.py" not in out  # the frames are the test's, not the runner's
