"""The e2e tier's own contracts, without a cluster: probes read objects the API server has only
just created, and whatever breaks while a stack comes up, what it started is stopped and the
stack's later tests fail at once with the first error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from testbed import control_planes
from testbed.cluster import E2EError, StopWaiting, condition, is_true, wait_for
from testbed.control_planes import ControlPlanes

E2E = Path(__file__).resolve().parents[1]  # tests/e2e, every suite folder under it


@pytest.mark.parametrize(
    "obj",
    [{}, {"status": None}, {"status": {}}, {"status": {"conditions": None}}],
    ids=["no status", "null status", "empty status", "null conditions"],
)
def test_a_new_object_without_conditions_is_not_true_yet(obj: dict[str, Any]) -> None:
    assert condition(obj, "Established") is None
    assert not is_true(obj, "Established")


def test_a_condition_is_found_by_type() -> None:
    obj = {
        "status": {
            "conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "False"}]
        }
    }
    assert condition(obj, "Established") == {"type": "Established", "status": "False"}
    assert is_true(obj, "NamesAccepted") and not is_true(obj, "Established")


class BrokenStack:
    """Stands in for StackCluster: up() fails with a plain bug, as a probe reading a null field did."""

    made: list["BrokenStack"] = []

    def __init__(self, stack: str, _config: Any, _binaries: Any, workdir: Path, *_: Any, **__: Any) -> None:
        # The work folder: a failed up() saves its logs from there when KUEUE_AKS_E2E_ARTIFACTS is set.
        self.stack, self.workdir, self.downs = stack, workdir, 0
        self.clusters = [self]
        BrokenStack.made.append(self)

    def up(self, *, program: bool = True) -> None:
        status: dict[str, Any] = {"conditions": None}
        next(iter(status["conditions"]))  # TypeError, not an E2EError

    def down(self) -> None:
        self.downs += 1

    def describe(self) -> dict[str, str]:
        return {"stack": self.stack}


def test_a_stack_that_breaks_coming_up_is_stopped_and_not_retried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    BrokenStack.made.clear()
    monkeypatch.setattr(control_planes, "StackCluster", BrokenStack)
    monkeypatch.setattr(control_planes, "load", lambda stack: None)
    planes = ControlPlanes(binaries=None, root=tmp_path)  # type: ignore[arg-type]
    # A stack without job operators, so that this test builds nothing on a cold machine.
    try:
        with pytest.raises(pytest.fail.Exception) as first:
            planes.get("design")
        with pytest.raises(pytest.fail.Exception) as second:
            planes.get("design")
    finally:
        planes.stop()

    assert [s.downs for s in BrokenStack.made] == [1], "the broken stack must be stopped once and not rebuilt"
    assert "TypeError" in str(first.value) and "test_tier.py" in str(first.value)
    assert str(second.value) == str(first.value)
    assert planes.current is None


def test_the_engine_wrappers_pin_what_binaries_py_names() -> None:
    """The wrapper modules build the versions the tier reports and keys its cache on."""
    from testbed.binaries import PULUMI_KUBERNETES_MODULE, PULUMI_KUBERNETES_MODULE_VERSION, PULUMI_VERSION, TOOLS_DIR

    def requires(go_mod: str, module: str, version: str) -> bool:
        return re.search(rf"^\s*{re.escape(module)} {re.escape(version)}( // indirect)?$", go_mod, re.M) is not None

    cli = (TOOLS_DIR / "pulumi" / "go.mod").read_text()
    assert requires(cli, "github.com/pulumi/pulumi/pkg/v3", PULUMI_VERSION)
    assert requires(cli, "github.com/pulumi/pulumi/sdk/v3", PULUMI_VERSION)
    provider = (TOOLS_DIR / "pulumi-kubernetes" / "go.mod").read_text()
    assert requires(provider, PULUMI_KUBERNETES_MODULE, PULUMI_KUBERNETES_MODULE_VERSION)


def test_a_probe_that_raises_waits_on_until_it_sees_its_object() -> None:
    """A probe racing a controller (NotFound, a status still null) does not fail the wait; only
    StopWaiting, a process that exited, ends it early; the deadline's message shows the last error."""
    answers = iter([KeyError("status"), E2EError("kubectl get job x failed: NotFound"), (True, "found")])

    def probe() -> tuple[bool, str]:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for("the object", probe, timeout=5, interval=0.01) == "found"

    def exited() -> tuple[bool, str]:
        raise StopWaiting("Kueue exited with 1")

    with pytest.raises(StopWaiting):
        wait_for("Kueue", exited, timeout=30, interval=0.01)

    def missing() -> tuple[bool, str]:
        raise E2EError("kubectl get job x failed: NotFound")

    with pytest.raises(
        E2EError, match=r"(?s)timed out after 0.05 s .*the probe raised E2EError: kubectl get job x failed: NotFound"
    ):
        wait_for("x", missing, timeout=0.05, interval=0.01)


def test_the_lanes_name_modules_of_the_tier_each_once() -> None:
    """The lanes (testbed/lanes.py) and the tier's order (tests/conftest.py) key on a module's file
    name, whichever suite folder holds it: each name is the tier's once, and each the lanes name
    exists."""
    from testbed import lanes

    names = [p.name for p in E2E.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    named = lanes.OPERATORS_LANE_ENGINE_MODULES | lanes.OPERATORS_LANE_MODULES | {"test_teardown.py", "test_engine.py"}
    assert named <= set(names), sorted(named - set(names))
    root = E2E.parents[1]
    assert [m for m in lanes.UNIT_MODULES_FIRST if not (root / m).is_file()] == [], (
        "a unit module handed out first is gone"
    )


def test_every_stack_that_runs_the_mpi_operator_is_in_one_lane() -> None:
    """The MPI Operator hard-codes port 8080 (operator_controllers.py): the stacks that run it are
    in one lane, so the two workers never wait on each other for that port."""
    from testbed.lanes import OPERATORS_LANE, lane
    from testbed.stacks import ENGINE, OPERATOR_STACKS, engine_jobs_config, load

    modules = {p.name: p for p in E2E.rglob("test_*.py")}
    assert {lane(module, stack) for module in modules for stack in OPERATOR_STACKS} == {OPERATORS_LANE}
    # The engine's modules in the other lane run Jobs only; test_engine.py runs the dev stack whole.
    assert "kubeflow.org/mpijob" in load(ENGINE).kueue.frameworks
    assert engine_jobs_config()["kueue-aks:kueue"]["frameworks"] == ["batch/job"]
    engine_modules = [m for m, path in sorted(modules.items()) if "on_stacks(ENGINE)" in path.read_text()]
    assert "test_engine_upgrade.py" in engine_modules
    for module in engine_modules:
        if lane(module, ENGINE) != OPERATORS_LANE:
            assert not re.search(r"\bengine_config\(", modules[module].read_text()), module
    assert lane("test_engine.py", ENGINE) == OPERATORS_LANE
