"""What the e2e tier measures, and the one place it is printed and written.

The suite runs in two xdist workers (pyproject.toml; tests/conftest.py gives each test its lane),
so the tier's stacks come up in two processes at once. Each keeps its own lines here while it
runs; at its end a worker hands them to the controller (`workeroutput`), which prints every
lane's lines and writes the artifacts once. Without workers (`-n 0`) the one process does both.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

# With this set (CI sets it), the tier also writes what it measured to measurements.json and
# measurements.md there, and each stack's process logs (its control plane's components, Kueue,
# the operators, the autoscaler) to logs/<stack>/ before that stack is stopped. Unset: nothing.
ARTIFACTS_ENV = "KUEUE_AKS_E2E_ARTIFACTS"
WORKER_OUTPUT_KEY = "kueue_aks_e2e_lane"


@dataclass
class Lane:
    """One process's share of the tier: its report lines, its stacks' bring-up times, when its
    first e2e test started, and the seconds it waited for the binaries' build (cold machines)."""

    name: str = "main"
    report: list[str] = field(default_factory=list)
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: float | None = None
    seconds: float = 0.0
    build_wait: float = 0.0


LANE = Lane()


def report(line: str) -> None:
    """A line for the run's end (pytest captures prints in tests)."""
    LANE.report.append(line)


def start_clock() -> None:
    if LANE.started is None:
        LANE.started = time.monotonic()


def lane_seconds() -> float:
    """This process's e2e time so far, less its waits for a build: not the tier's own time."""
    return 0.0 if LANE.started is None else time.monotonic() - LANE.started - LANE.build_wait


@contextmanager
def build_wait() -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        LANE.build_wait += time.monotonic() - started


def artifacts_dir() -> Path | None:
    value = os.environ.get(ARTIFACTS_ENV)
    return Path(value) if value else None


def write_measurements(folder: Path, lanes: list[Lane], budget: float) -> None:
    """measurements.json and measurements.md: every lane's time and lines, every stack's bring-up."""
    folder.mkdir(parents=True, exist_ok=True)
    stacks = {name: times for lane in lanes for name, times in lane.stacks.items()}
    slowest = max((lane.seconds for lane in lanes), default=0.0)
    measured = {
        "tier_seconds": round(slowest, 1),
        "tier_budget_seconds": budget,
        "lanes": {lane.name: round(lane.seconds, 1) for lane in lanes},
        "stacks": stacks,
        "report": [line for lane in lanes for line in lane.report],
    }
    (folder / "measurements.json").write_text(json.dumps(measured, indent=1) + "\n")
    verdict = "within" if slowest <= budget else "OVER"
    rows = "".join(
        f"| {stack} | {t['queues_active_seconds']} | {t['everything_up_seconds']} |\n" for stack, t in stacks.items()
    )
    (folder / "measurements.md").write_text(
        f"### e2e tier: {slowest:.0f} s in its slowest lane, {verdict} the {budget:.0f} s budget\n\n"
        "| stack | up to all queues Active (s) | everything up (s) |\n|---|---|---|\n" + rows
    )


class Measurements:
    """The plugin (registered by tests/conftest.py) that gathers the lanes and reports them."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.lanes: list[Lane] = []

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if LANE.started is None:
            return
        LANE.seconds = lane_seconds()
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:  # an xdist worker: the controller reports
            LANE.name = str(session.config.workerinput["workerid"])  # type: ignore[attr-defined]
            worker_output[WORKER_OUTPUT_KEY] = json.dumps(asdict(LANE))
        else:
            self.lanes.append(LANE)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        sent = (getattr(node, "workeroutput", None) or {}).get(WORKER_OUTPUT_KEY)
        if sent:
            self.lanes.append(Lane(**json.loads(sent)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lanes:
            return
        lanes = sorted(self.lanes, key=lambda lane: lane.name)
        folder = artifacts_dir()
        if folder is not None:
            write_measurements(folder, lanes, self.budget)
        terminalreporter.section("e2e measurements")
        for lane in lanes:
            for line in lane.report:
                terminalreporter.write_line(f"[{lane.name}] {line}" if len(lanes) > 1 else line)
        for lane in lanes:
            waited = f" (and {lane.build_wait:.0f} s waiting for builds)" if lane.build_wait >= 1 else ""
            verdict = "within" if lane.seconds <= self.budget else "OVER"
            terminalreporter.write_line(
                f"e2e lane {lane.name}: {lane.seconds:.0f} s{waited}, {verdict} the tier's {self.budget:.0f} s budget"
            )
