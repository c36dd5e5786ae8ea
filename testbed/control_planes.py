"""The e2e tier's control planes: one stack's (or a MultiKueue group's) at a time in a process,
each built once and stopped before the next; the budgets a stack comes up in, and where its logs go.
The session fixtures of tests/e2e/conftest.py hand them out."""

from __future__ import annotations

import shutil
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from .binaries import Binaries, BuildError, Engine, ensure_engine, ensure_operator_binaries
from .cluster import E2EError, worker_service_cidr
from .forward import Forwarder
from .measurements import LANE, artifacts_dir, build_wait, report
from .multikueue import MULTIKUEUE, MultiKueueClusters
from .stack_cluster import StackCluster
from .stacks import ENGINE, OPERATOR_STACKS, load

# Budgets from the issue that set up this tier, measured here on 2 cores with a warm cache.
CLUSTER_UP_BUDGET_SECONDS = 60.0
# The stacks with job operators apply the operators' CRDs (about fifteen, several MB) before Kueue
# may start, as `pulumi up` does on AKS; issue 21 added that step after the budget above was set.
# It takes 25 to 35 s here, and those stacks came up in 50 to 67 s on a loaded 2-core machine.
OPERATOR_STACK_UP_BUDGET_SECONDS = 90.0
# The MultiKueue example (issue 26): two workers, each an operator stack, then their manager.
MULTIKUEUE_UP_BUDGET_SECONDS = 3 * OPERATOR_STACK_UP_BUDGET_SECONDS


def up_budget(stack: str) -> float:
    return OPERATOR_STACK_UP_BUDGET_SECONDS if stack in OPERATOR_STACKS else CLUSTER_UP_BUDGET_SECONDS


def save_logs(sc: StackCluster) -> None:
    """Copy a stack's process logs to the artifacts folder, before down() deletes the cluster's."""
    folder = artifacts_dir()
    if folder is None or not sc.workdir.is_dir():
        return
    target = folder / "logs" / sc.stack
    logs = set(sc.workdir.rglob("*.log"))
    if sc.cluster.logs_dir().is_dir():
        logs |= {p for p in sc.cluster.logs_dir().rglob("*") if p.is_file()}
    for log in sorted(logs):
        dest = target / log.relative_to(sc.workdir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(log, dest)
        except OSError as err:  # a log is never worth failing the run for
            dest.with_name(dest.name + ".not-copied").write_text(f"{err}\n")


def on_stacks(*stacks: str) -> pytest.MarkDecorator:
    """Run a test once per stack, each on that stack's control plane (the `cluster` fixture)."""
    return pytest.mark.parametrize("stack", stacks)


class ControlPlanes:
    """At most one stack's control plane at a time in this process (this worker's lane), or one
    MultiKueue group of them (a manager and its workers, up together): asking for another stops
    the current one.

    The e2e tests are sorted by stack (tests/conftest.py), so each is built once. A stack that
    failed to come up fails its remaining tests at once with the same message.
    """

    def __init__(self, binaries: Binaries, root: Path) -> None:
        self.binaries, self.root = binaries, root
        self.forwarder = Forwarder()
        self.current: StackCluster | MultiKueueClusters | None = None
        self.failed: dict[str, str] = {}

    def get(self, stack: str) -> StackCluster:
        if stack in self.failed:
            pytest.fail(self.failed[stack], pytrace=False)
        if isinstance(self.current, StackCluster) and self.current.stack == stack:
            return self.current
        self.stop_current()
        config = load(stack)  # a ConfigError here names a missing chart file in ../shared
        operators = self.operator_binaries() if stack in OPERATOR_STACKS else {}
        sc = StackCluster(
            stack,
            config,
            self.binaries,
            self.root / stack,
            self.forwarder,
            operators,
            service_cidr=worker_service_cidr(),
        )
        started = time.monotonic()
        self._up_or_fail(stack, lambda: sc.up(program=stack != ENGINE), sc)
        self.current = sc
        if stack == ENGINE:  # the engine's `pulumi up` is timed by its test
            report(f"e2e[{stack}]: platform up in {time.monotonic() - started:.1f} s: {sc.timings}")
            return sc
        # The budget is for the queues; the operators come after them (stack_cluster.py) and are reported.
        sc.up_seconds = sc.timings["queues active"]
        LANE.stacks[stack] = {
            "queues_active_seconds": sc.up_seconds,
            "everything_up_seconds": round(time.monotonic() - started, 1),
            "timings_seconds_since_start": dict(sc.timings),
        }
        report(
            f"e2e[{stack}]: cluster up to all queues Active in {sc.up_seconds:.1f} s "
            f"(budget {up_budget(stack):.0f} s), everything up in {time.monotonic() - started:.1f} s; "
            f"seconds since start: {sc.timings}"
        )
        return sc

    def multikueue(self) -> MultiKueueClusters:
        """The MultiKueue example's three control planes (testbed/multikueue.py), up together."""
        if MULTIKUEUE in self.failed:
            pytest.fail(self.failed[MULTIKUEUE], pytrace=False)
        if isinstance(self.current, MultiKueueClusters):
            return self.current
        self.stop_current()
        group = MultiKueueClusters(self.binaries, self.root / MULTIKUEUE, self.forwarder, self.operator_binaries())
        started = time.monotonic()
        self._up_or_fail(MULTIKUEUE, group.up, group)
        self.current = group
        took = group.up_seconds = round(time.monotonic() - started, 1)
        LANE.stacks[MULTIKUEUE] = {
            "queues_active_seconds": took,
            "everything_up_seconds": took,
            "timings_seconds_since_start": dict(group.timings),
        }
        report(
            f"e2e[{MULTIKUEUE}]: two workers and their manager up, all connected, in {took:.1f} s "
            f"(budget {MULTIKUEUE_UP_BUDGET_SECONDS:.0f} s); seconds since start: {group.timings}"
        )
        return group

    def _up_or_fail(self, name: str, up: Callable[[], None], planes: StackCluster | MultiKueueClusters) -> None:
        """Run `up`. On any failure, a bug in a probe too: keep the logs, stop what came up before
        the next test, and fail this test and every later one of `name` with that first error."""
        try:
            up()
        except Exception as err:
            for sc in planes.clusters:
                save_logs(sc)
            planes.down()
            detail = (
                str(err)
                if isinstance(err, (E2EError, OSError, subprocess.TimeoutExpired))
                else "".join(traceback.format_exception(err))
            )
            self.failed[name] = f"{name}: the control plane did not come up: {detail}\n{planes.describe()}"
            pytest.fail(self.failed[name], pytrace=False)

    def operator_binaries(self) -> dict[str, Path]:
        try:
            with build_wait():
                return ensure_operator_binaries()
        except BuildError as err:
            pytest.fail(str(err), pytrace=False)

    def engine(self) -> Engine:
        """The Pulumi engine, built or waited for with no other stack's control plane running: on a
        cold machine the build takes minutes, and idle control planes would take its CPU."""
        if not (isinstance(self.current, StackCluster) and self.current.stack == ENGINE):
            self.stop_current()
        try:
            with build_wait():
                return ensure_engine()
        except BuildError as err:
            pytest.fail(str(err), pytrace=False)

    def stop_current(self) -> None:
        if self.current is not None:
            for sc in self.current.clusters:
                save_logs(sc)
            self.current.down()
            self.current = None

    def stop(self) -> None:
        self.stop_current()
        self.forwarder.stop()
