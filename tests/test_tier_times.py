"""The end-of-run line per tier (tests/tier_times.py)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.tier_times import BUDGETS, TierTimes


def test_one_line_per_tier_with_its_time_budget_and_slowest_modules() -> None:
    clock = iter([0.0, 1.0, 10.0, 12.0, 100.0, 2100.0])
    times = TierTimes(clock=lambda: next(clock))
    items = [SimpleNamespace(nodeid=f"tests/{m}.py::t", get_closest_marker=lambda name, e2e=e2e: e2e or None)
             for m, e2e in (("a", False), ("b", False), ("e2e/c", True))]
    times.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    for item, duration in zip(items, (1.0, 9.0, 1990.0)):
        times.pytest_runtest_logstart(item.nodeid, None)
        times.pytest_runtest_logreport(SimpleNamespace(nodeid=item.nodeid, duration=duration))  # type: ignore[arg-type]
    unit, e2e = times.lines()
    assert unit == (f"tier unit: 12 s, within its {BUDGETS['unit']:.0f} s budget; slowest modules: "
                    "tests/b.py 9 s, tests/a.py 1 s")
    assert e2e.startswith(f"tier e2e: 2000 s, OVER its {BUDGETS['e2e']:.0f} s budget; slowest modules: tests/e2e/c.py 1990 s")
    assert times.table()["e2e"] == {"seconds": 2000.0, "budget": BUDGETS["e2e"], "modules": {"tests/e2e/c.py": 1990.0}}
    assert list(times.table()["unit"]["modules"]) == ["tests/b.py", "tests/a.py"]  # slowest first
