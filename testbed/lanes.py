"""The e2e tier's two lanes: which xdist worker runs which stacks.

The suite runs in two workers (pyproject.toml). A lane is run whole by one worker, in the order
tests/conftest.py sorts the tier (stack by stack), so each of its stacks' control planes is built
once, in that process, while the other lane's stacks run beside it. The tier's processes wait on
controllers and timers far more than they compute, so two lanes take little more than the longer
one.

The split balances the seconds measured in a serial run (docs/e2e-tier.md#where-the-time-goes):
the engine's scenarios, about half of it, are split between the lanes by module, each lane
with a control plane of its own for them; every module keeps its scenarios in file order, on one
control plane, as before. Every stack that runs the MPI Operator (dev, multi-gpu, and the engine's
test_engine.py, which installs the dev stack whole) is in one lane: that operator hard-codes port
8080, so those stacks could not run side by side (operator_controllers.py takes turns if they
ever do). A test without a stack goes with the fixtures it shares.
"""

from __future__ import annotations

import pytest

from .stacks import ENGINE, OPERATOR_STACKS

# The stacks with the job operators, then test_engine.py and the engine modules that follow it.
OPERATORS_LANE = "e2e-operators"
# The stacks without operators, MultiKueue's three control planes, then the engine's scenarios
# about Kueue's own install (an interrupted `up`, an upgrade, the operators' CRD releases). The
# workers take the lanes when their unit modules are done, this one first (tests/conftest.py), so
# the other starts later by about the last unit module's time. The split balances the two lanes'
# measured seconds (docs/e2e-tier.md#where-the-time-goes).
STACKS_LANE = "e2e-stacks"
OPERATORS_LANE_ENGINE_MODULES = frozenset(
    {"test_engine.py", "test_engine_multikueue.py", "test_extension.py", "test_manifests.py"}
)
# Tests on no stack that go with the operators lane: the chart mirror's own (its fixture serves the
# engine's stacks there too), the operators' CRD charts, and the forecast's fidelity against Kueue
# (its own control plane, about 3 min; the operators lane was the shorter).
OPERATORS_LANE_MODULES = frozenset({"test_mirror.py", "test_crd_charts.py", "test_fidelity.py"})


# The unit modules that take longest (about 20 to 60 s each in a run), handed out first so that the
# two workers finish the unit tier close together: a worker takes its lane only once its last unit
# module is done.
UNIT_MODULES_FIRST = (
    "tests/test_plan.py",
    "tests/kueue/test_crds.py",
    "tests/preflight/test_quota.py",
    "tests/test_workflows.py",
    "tests/cluster/test_modes.py",
)


def lane(module: str, stack: str) -> str:
    """The lane of a test of e2e `module` (its file name) on `stack` ("" for none)."""
    if (
        stack in OPERATOR_STACKS
        or (stack == ENGINE and module in OPERATORS_LANE_ENGINE_MODULES)
        or (not stack and module in OPERATORS_LANE_MODULES)
    ):
        return OPERATORS_LANE
    return STACKS_LANE


def check_groups_applied(session: pytest.Session) -> None:
    """In an xdist worker with `--dist loadgroup`, every test's node ID must end in its group, the
    scheduler's only source for it: a pytest-xdist that fails to add it (#1386, with pytest 9.2)
    would spread a stack's tests over both workers, each building that stack's control plane."""
    if getattr(session.config, "workerinput", None) is None or not session.config.getvalue("loadgroup"):
        return
    ungrouped = [item.nodeid for item in session.items if "@" not in item.nodeid.rsplit("]", 1)[-1]]
    if ungrouped:
        raise pytest.UsageError(
            f"pytest-xdist did not apply the test groups (--dist loadgroup) to {len(ungrouped)} tests, e.g. "
            f"{ungrouped[0]}: pytest {pytest.__version__} with this pytest-xdist loses them "
            "(requirements-dev.txt pins a pair that works); run with -n 0 meanwhile."
        )
