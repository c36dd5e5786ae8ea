"""One line per tier at the end of a run: its wall time, its budget and its slowest modules.

So a change that would push `.ci/run` over its time is seen in that change's own output, not on a
new machine later. A budget line informs and never fails the run (times on shared 2-core machines
are noisy); `.ci/run`'s 90 minutes are the limit that holds. Registered by tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

# With this set to a file path, every module's seconds per tier are also written there (JSON), for
# the table in docs/e2e-tier.md.
TABLE_ENV = "KUEUE_AKS_TIER_TIMES"
# Seconds of wall time each tier should stay within on a warm 2-core machine, so that `.ci/run`
# (its virtualenv about 40 s, then both tiers) stays within 20 minutes: the unit tier shared by
# both workers (160 s measured), then the e2e tier's two lanes side by side (1001 and 1041 s).
BUDGETS = {"unit": 200.0, "e2e": 1000.0}
SLOWEST = 3
E2E_PREFIX = "tests/e2e/"


def tier_of(nodeid: str) -> str:
    """A test's tier by its path: the controller of an xdist run collects no items to read marks
    from, and every node ID is relative to the root (pyproject.toml)."""
    return "e2e" if nodeid.startswith(E2E_PREFIX) else "unit"


class TierTimes:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.modules: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.first.setdefault(tier_of(nodeid), self.clock())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tier = tier_of(report.nodeid)
        self.last[tier] = self.clock()
        self.modules[tier][report.nodeid.split("::", 1)[0]] += report.duration

    def lines(self) -> list[str]:
        out = []
        for tier in (t for t in BUDGETS if t in self.first):
            took, budget = self.last[tier] - self.first[tier], BUDGETS[tier]
            slowest = sorted(self.modules[tier].items(), key=lambda kv: -kv[1])[:SLOWEST]
            out.append(
                f"tier {tier}: {took:.0f} s, {'within' if took <= budget else 'OVER'} its {budget:.0f} s budget; "
                "slowest modules: " + ", ".join(f"{module} {seconds:.0f} s" for module, seconds in slowest)
            )
        return out

    def table(self) -> dict[str, Any]:
        return {
            tier: {
                "seconds": round(self.last[tier] - self.first[tier], 1),
                "budget": BUDGETS[tier],
                "modules": {m: round(t, 1) for m, t in sorted(self.modules[tier].items(), key=lambda kv: -kv[1])},
            }
            for tier in BUDGETS
            if tier in self.first
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        target = os.environ.get(TABLE_ENV)
        if target:
            with open(target, "w") as out:
                json.dump(self.table(), out, indent=1)
        lines = self.lines()
        if lines:
            terminalreporter.section("tier times")
            for line in lines:
                terminalreporter.write_line(line)
