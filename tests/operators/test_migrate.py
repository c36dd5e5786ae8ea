"""Handing the operators' CRDs from resources of their own to their releases
(components/operators/migrate.py): the state edit on a state shaped as the earlier layout left it,
and the command against stand-ins for `pulumi` (answering what the Automation API runs) and
`kubectl` that record what they were asked.
tests/e2e/engine/test_engine_crds.py runs it with the real engine and cluster."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from components.operators import migrate
from components.operators.migrate import COMPONENT_TYPE, CRD_TYPE, MigrationError, old_crds, ownership_commands, without
from testbed import pulumi_fake
from testbed.pulumi_fake import FakePulumi

STACK = "urn:pulumi:dev::kueue-aks::"
COMPONENT = f"{STACK}{COMPONENT_TYPE}::operators"
KUEUE = f"{STACK}kueue-aks:kueue:KueueInstallation$kubernetes:helm.sh/v3:Release::kueue-release"


def crd_urn(key: str, name: str) -> str:
    return f"{STACK}{COMPONENT_TYPE}${CRD_TYPE}::operators-{key}-customresourcedefinition-{name}"


def old_state() -> dict[str, Any]:
    """What the earlier layout left: each CRD a child of JobOperators, the releases depending on them."""
    jobset, trainjob = (
        crd_urn("jobset", "jobsets.jobset.x-k8s.io"),
        crd_urn("trainer", "trainjobs.trainer.kubeflow.org"),
    )
    trainer = f"{STACK}{COMPONENT_TYPE}$kubernetes:helm.sh/v3:Release::operators-trainer-release"
    return {
        "resources": [
            {"urn": f"{STACK}pulumi:pulumi:Stack::kueue-aks-dev", "type": "pulumi:pulumi:Stack"},
            {"urn": COMPONENT, "type": COMPONENT_TYPE},
            {
                "urn": jobset,
                "type": CRD_TYPE,
                "custom": True,
                "parent": COMPONENT,
                "inputs": {"metadata": {"name": "jobsets.jobset.x-k8s.io"}},
            },
            {
                "urn": trainjob,
                "type": CRD_TYPE,
                "custom": True,
                "parent": COMPONENT,
                "inputs": {"metadata": {"name": "trainjobs.trainer.kubeflow.org"}},
            },
            {
                "urn": trainer,
                "type": "kubernetes:helm.sh/v3:Release",
                "parent": COMPONENT,
                "dependencies": [trainjob, jobset],
                "propertyDependencies": {"namespace": [], "chart": [jobset]},
            },
            {
                "urn": KUEUE,
                "type": "kubernetes:helm.sh/v3:Release",
                "dependencies": [jobset, trainjob, trainer],
                "deletedWith": jobset,
            },
            # A read of the ProvisioningRequest API is no operator's CRD.
            {"urn": f"{STACK}{CRD_TYPE}::provisioning-api", "type": CRD_TYPE, "external": True},
        ]
    }


def test_the_old_crds_are_found_with_their_operators_and_releases() -> None:
    found = old_crds(old_state())
    assert [(c.name, c.operator, c.release, c.namespace) for c in found] == [
        ("jobsets.jobset.x-k8s.io", "jobset", "jobset-crds", "jobset-system"),
        ("trainjobs.trainer.kubeflow.org", "trainer", "trainer-crds", "kubeflow-system"),
    ]
    assert old_crds({"resources": [r for r in old_state()["resources"] if r["type"] != CRD_TYPE]}) == []


def test_the_state_loses_them_and_every_reference_to_them() -> None:
    state = old_state()
    urns = {c.urn for c in old_crds(state)}
    edited = without(state, urns)
    assert not urns & {r["urn"] for r in edited["resources"]}
    text = json.dumps(edited)
    assert not any(u in text for u in urns), "a reference is left"
    kueue = next(r for r in edited["resources"] if r["urn"] == KUEUE)
    assert kueue["dependencies"] == [
        r["urn"] for r in state["resources"] if r["urn"].endswith("operators-trainer-release")
    ]
    assert len(edited["resources"]) == len(state["resources"]) - 2
    assert old_state() == state, "the input is not changed"


def test_a_pending_operation_on_one_of_them_stops_it() -> None:
    state = {
        **old_state(),
        "pending_operations": [{"resource": {"urn": crd_urn("jobset", "jobsets.jobset.x-k8s.io")}, "type": "updating"}],
    }
    with pytest.raises(MigrationError, match="pulumi refresh"):
        without(state, {c.urn for c in old_crds(state)})


def test_a_crd_not_named_as_kueue_aks_names_them_is_not_guessed() -> None:
    state = old_state()
    state["resources"][2]["urn"] = f"{STACK}{COMPONENT_TYPE}${CRD_TYPE}::something-else"
    with pytest.raises(MigrationError, match="something-else"):
        old_crds(state)


def test_the_ownership_marks_are_helms() -> None:
    (crd, _) = old_crds(old_state())
    label, annotate = ownership_commands([crd], ["kubectl", "--kubeconfig", "k"])
    assert label == [
        "kubectl",
        "--kubeconfig",
        "k",
        "label",
        "--overwrite",
        "crd",
        crd.name,
        "app.kubernetes.io/managed-by=Helm",
    ]
    assert annotate[-2:] == ["meta.helm.sh/release-name=jobset-crds", "meta.helm.sh/release-namespace=jobset-system"]


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePulumi:
    """`pulumi` (testbed/pulumi_fake.py, answering what the Automation API runs) and `kubectl`
    stand-ins: each call is a line of calls.log; `pulumi stack export` prints the old state,
    `pulumi stack import --file F` keeps F as imported.json."""
    pulumi = pulumi_fake.install(tmp_path, monkeypatch)
    pulumi.serve({"version": 3, "deployment": old_state()})
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.write_text(f'#!/bin/sh\necho "kubectl $*" >> {tmp_path}/calls.log\n')
    kubectl.chmod(stat.S_IRWXU)
    return pulumi


def test_without_run_it_prints_and_changes_nothing(tools: FakePulumi, capsys: pytest.CaptureFixture[str]) -> None:
    assert migrate.main(["--stack", "dev", "--cwd", str(tools.folder)]) == 0
    out = capsys.readouterr().out
    assert "kubectl label --overwrite crd jobsets.jobset.x-k8s.io app.kubernetes.io/managed-by=Helm" in out
    # The Automation API's version check, then the export alone: in the project, encrypted, without a prompt.
    calls = tools.calls()
    assert [c.command for c in calls] == [["version"], ["stack", "export", "--stack", "dev"]]
    assert calls[1].cwd == tools.folder and "--non-interactive" in calls[1].args
    assert "kubectl" not in (tools.folder / "calls.log").read_text()


def test_with_run_it_marks_the_crds_then_imports_the_state_without_them(tools: FakePulumi) -> None:
    assert migrate.main(["--stack", "dev", "--cwd", str(tools.folder), "--kubeconfig", "kc", "--run"]) == 0
    calls = [c for c in (tools.folder / "calls.log").read_text().splitlines() if c != "pulumi version"]
    words = [[w for w in c.split() if w != "--non-interactive"] for c in calls]
    assert [w[0] + " " + w[3 if w[0] == "kubectl" else 2] for w in words] == [
        "pulumi export",
        "kubectl label",
        "kubectl annotate",
        "kubectl label",
        "kubectl annotate",
        "pulumi import",
    ]
    assert all("--kubeconfig kc" in c for c in calls if c.startswith("kubectl"))
    assert not any("--show-secrets" in c for c in calls), "the state is exported with its secrets encrypted"
    [imported_call] = [c for c in tools.calls() if c.command[:2] == ["stack", "import"]]
    assert imported_call.cwd == tools.folder and "--stack" in imported_call.args and "dev" in imported_call.args
    imported = tools.imported()
    assert imported is not None and imported["version"] == 3
    assert imported["deployment"] == without(old_state(), {c.urn for c in old_crds(old_state())})


def test_a_failed_mark_leaves_the_state_as_it_was(tools: FakePulumi) -> None:
    kubectl = tools.folder / "bin" / "kubectl"
    kubectl.write_text("#!/bin/sh\necho 'forbidden' >&2\nexit 1\n")
    assert migrate.main(["--stack", "dev", "--cwd", str(tools.folder), "--run"]) == 1
    assert tools.imported() is None


def test_a_failed_export_says_what_the_cli_said(tools: FakePulumi, capsys: pytest.CaptureFixture[str]) -> None:
    tools.fail("stack export", "error: no stack named 'dev' found\n")
    assert migrate.main(["--stack", "dev", "--cwd", str(tools.folder), "--run"]) == 2
    assert capsys.readouterr().err == "pulumi stack export failed:\nerror: no stack named 'dev' found\n"
    assert "kubectl" not in (tools.folder / "calls.log").read_text()


def test_a_failed_import_says_what_the_cli_said(tools: FakePulumi, capsys: pytest.CaptureFixture[str]) -> None:
    tools.fail("stack import", "error: the stack is currently locked by 1 lock(s)\n")
    assert migrate.main(["--stack", "dev", "--cwd", str(tools.folder), "--run"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: `pulumi stack import --stack dev` failed:")
    assert "the stack is currently locked" in err and tools.imported() is None
