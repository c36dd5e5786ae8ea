"""A failing test is reported, whatever Python does while pytest formats its traceback.

pytest parses each traceback entry's file with `ast.parse` to show its statement. On CPython 3.11
(3.11.7 here), the AST constructor's recursion-depth bookkeeping can come out unbalanced
(python/cpython#106905), and `ast.parse` then raises `SystemError: AST constructor recursion depth
mismatch`; pytest stops the whole session with INTERNALERROR (pytest-dev/pytest#10763, #11724).
Seen here while formatting the errors of program runs under mocks. This hook wraps report-making:
on that error it formats once more, and if that fails too it reports the failure with a traceback
made without parsing any source, so the failure is shown and the run goes on.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from _pytest.reports import TestReport

MISMATCH = "AST constructor recursion depth mismatch"


def plain_report(item: pytest.Item, call: pytest.CallInfo[None], why: BaseException) -> TestReport:
    """The failure of `call` as pytest would report it, with a traceback of file, line and
    function only, and the exception's own message."""
    excinfo = call.excinfo
    assert excinfo is not None  # only a failure is formatted
    frames = "".join(
        f'  File "{e.path}", line {e.lineno + 1}, in {e.name}\n'
        for e in excinfo.traceback.filter(excinfo)
        if not any(part in ("_pytest", "pluggy") for part in Path(e.path).parts)
    )
    longrepr = (
        f"{excinfo.exconly()}\nTraceback (most recent call last):\n{frames}"
        f"(shown plain: pytest could not format this traceback: {why})"
    )
    sections = [
        (f"Captured {key} {call.when}", content) for (when, key, content) in item._report_sections if when == call.when
    ]
    return TestReport(
        item.nodeid,
        item.location,
        dict.fromkeys(item.keywords, 1),
        "failed",
        longrepr,
        call.when,
        sections,
        call.duration,
        call.start,
        call.stop,
        item.user_properties,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, TestReport]:
    try:
        return (yield)
    except SystemError as err:
        if MISMATCH not in str(err):
            raise
        try:
            return TestReport.from_item_and_call(item, call)
        except SystemError as again:
            if MISMATCH not in str(again):
                raise
            return plain_report(item, call, again)
