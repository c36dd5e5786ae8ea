"""The end-of-run line per tier (testbed/tier_times.py)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from testbed.measurements import ARTIFACTS_ENV, WORKER_OUTPUT_KEY, Lane, Measurements
from testbed.tier_times import BUDGETS, TierTimes


def test_one_line_per_tier_with_its_time_budget_and_slowest_modules() -> None:
    clock = iter([0.0, 1.0, 10.0, 12.0, 100.0, 2100.0])
    times = TierTimes(clock=lambda: next(clock))
    # As an xdist controller sees them: no items collected, node IDs with the worker's group added.
    nodeids = ["tests/a.py::t@tests/a.py", "tests/b.py::t@tests/b.py", "tests/e2e/c.py::t[dev]@e2e-1"]
    for nodeid, duration in zip(nodeids, (1.0, 9.0, 1990.0)):
        times.pytest_runtest_logstart(nodeid, None)
        times.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))  # type: ignore[arg-type]
    unit, e2e = times.lines()
    assert unit == (
        f"tier unit: 12 s, within its {BUDGETS['unit']:.0f} s budget; slowest modules: tests/b.py 9 s, tests/a.py 1 s"
    )
    assert e2e.startswith(
        f"tier e2e: 2000 s, OVER its {BUDGETS['e2e']:.0f} s budget; slowest modules: tests/e2e/c.py 1990 s"
    )
    assert times.table()["e2e"] == {"seconds": 2000.0, "budget": BUDGETS["e2e"], "modules": {"tests/e2e/c.py": 1990.0}}
    assert list(times.table()["unit"]["modules"]) == ["tests/b.py", "tests/a.py"]  # slowest first


def test_the_e2e_lanes_of_both_workers_are_reported_once_by_the_controller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ARTIFACTS_ENV, str(tmp_path))
    plugin = Measurements(budget=1000.0)
    for lane in (
        Lane("gw1", ["engine up in 9 s"], seconds=1200.0, build_wait=30.0),
        Lane("gw0", ["dev up in 21 s"], seconds=800.0),
    ):
        plugin.pytest_testnodedown(SimpleNamespace(workeroutput={WORKER_OUTPUT_KEY: json.dumps(asdict(lane))}), None)
    plugin.pytest_testnodedown(SimpleNamespace(workeroutput={}), None)  # a worker that ran no e2e test
    lines: list[str] = []
    reporter = SimpleNamespace(section=lambda title: lines.append(f"== {title}"), write_line=lines.append)
    plugin.pytest_terminal_summary(reporter)
    assert lines == [
        "== e2e measurements",
        "[gw0] dev up in 21 s",
        "[gw1] engine up in 9 s",
        "e2e lane gw0: 800 s, within the tier's 1000 s budget",
        "e2e lane gw1: 1200 s (and 30 s waiting for builds), OVER the tier's 1000 s budget",
    ]
    assert json.loads((tmp_path / "measurements.json").read_text())["lanes"] == {"gw0": 800.0, "gw1": 1200.0}


def test_a_worker_whose_tests_lost_their_group_stops_the_run() -> None:
    """pytest-xdist#1386: with pytest 9.2 the groups vanish from the node IDs and the scheduler
    spreads a stack's tests over both workers; the check says so instead."""
    from testbed.lanes import check_groups_applied

    def session(nodeids: list[str], worker: bool = True) -> Any:
        config = SimpleNamespace(getvalue=lambda name: name == "loadgroup", **({"workerinput": {}} if worker else {}))
        return SimpleNamespace(config=config, items=[SimpleNamespace(nodeid=n) for n in nodeids])

    check_groups_applied(session(["tests/a.py::t@tests/a.py", "tests/e2e/b.py::t[x@y]@e2e-stacks"]))
    check_groups_applied(session(["tests/a.py::t"], worker=False))  # the controller, or -n 0
    with pytest.raises(
        pytest.UsageError, match=r"did not apply the test groups .* to 1 tests, e\.g\. tests/e2e/b\.py::t\[x@y\]"
    ):
        check_groups_applied(session(["tests/a.py::t@tests/a.py", "tests/e2e/b.py::t[x@y]"]))
