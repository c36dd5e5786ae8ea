"""The e2e tier's two lanes: which xdist worker runs which stacks.

The suite runs in two workers (pyproject.toml). A lane is run whole by one worker, in the order
tests/conftest.py sorts the tier (stack by stack), so each of its stacks' control planes is built
once, in that process, while the other lane's stacks run beside it. The tier's processes wait on
controllers and timers far more than they compute (about half the machine idle in a serial run),
so two lanes take little more than the longer one.

The split balances the seconds measured in a serial run (docs/e2e-tier.md, "Where the time goes"):
the engine's scenarios (about 900 s of 1970) are split between the lanes by module, each lane
with a control plane of its own for them; every module keeps its scenarios in file order, on one
control plane, as before. Every stack that runs the MPI Operator (dev, multi-gpu, and the engine's
test_engine.py, which installs the dev stack whole) is in one lane: that operator hard-codes port
8080, so those stacks could not run side by side (operator_controllers.py takes turns if they
ever do). A test without a stack goes with the fixtures it shares.
"""

from __future__ import annotations

from .stacks import ENGINE, OPERATOR_STACKS

# The stacks with the job operators, then test_engine.py and the engine modules that follow it.
OPERATORS_LANE = "e2e-operators"
# The stacks without operators, MultiKueue's three control planes, then the engine's scenarios
# about Kueue's own install (an interrupted `up`, an upgrade, the operators' CRD releases).
STACKS_LANE = "e2e-stacks"
_OPERATORS_LANE_ENGINE_MODULES = frozenset({"test_engine.py", "test_engine_multikueue.py", "test_extension.py",
                                            "test_manifests.py"})
# Tests on no stack that go with the operators lane: the chart mirror's own (its fixture serves the
# engine's stacks there too) and the operators' CRD charts.
_OPERATORS_LANE_MODULES = frozenset({"test_mirror.py", "test_crd_charts.py"})


def lane(module: str, stack: str) -> str:
    """The lane of a test of e2e `module` (its file name) on `stack` ("" for none)."""
    if stack in OPERATOR_STACKS or (stack == ENGINE and module in _OPERATORS_LANE_ENGINE_MODULES) or (
            not stack and module in _OPERATORS_LANE_MODULES):
        return OPERATORS_LANE
    return STACKS_LANE
