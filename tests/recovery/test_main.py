"""`python -m components.recovery` (components/recovery/__main__.py): the state read and written back
through Pulumi's Automation API, against a `pulumi` stand-in (testbed/pulumi_fake.py) and a cluster
stand-in (testbed/kube_fake.py). The whole recovery on the real engine: tests/e2e/engine/test_engine_interrupted.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.recovery.__main__ import main
from components.recovery.pending import adopted
from testbed import pulumi_fake
from testbed.kube_fake import FakeCluster
from testbed.pulumi_fake import FakePulumi
from testbed.pulumi_state import NAMESPACE, NAMESPACE_URN, state

# Discovery of the core group, and the namespace a killed `up` had made.
CLUSTER = {
    "/api/v1": {"resources": [{"name": "namespaces", "kind": "Namespace", "namespaced": False}]},
    "/api/v1/namespaces/research": {"metadata": {"name": "research"}},
}


@pytest.fixture
def pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePulumi:
    (tmp_path / "kubeconfig").write_text("the cluster stand-in answers instead\n")
    return pulumi_fake.install(tmp_path, monkeypatch)


def recover(pulumi: FakePulumi, *extra: str) -> int:
    argv = ["--stack", "dev", "--cwd", str(pulumi.folder), "--kubeconfig", str(pulumi.folder / "kubeconfig")]
    with FakeCluster(CLUSTER).serving():
        return main([*argv, *extra])


def test_the_state_is_exported_encrypted_from_the_project(
    pulumi: FakePulumi, capsys: pytest.CaptureFixture[str]
) -> None:
    pulumi.serve(state(NAMESPACE))
    assert recover(pulumi) == 0
    out = capsys.readouterr().out
    assert f"{NAMESPACE_URN}: it exists in the cluster (research)" in out
    assert "pulumi refresh --stack dev --yes --clear-pending-creates" in out
    # The Automation API's version check, then the export alone: in --cwd, without a prompt, and without
    # --show-secrets (the fake refuses it), so the secrets provider is not needed and nothing is decrypted.
    calls = pulumi.calls()
    assert [c.command for c in calls] == [["version"], ["stack", "export", "--stack", "dev"]]
    assert calls[1].cwd == pulumi.folder and "--non-interactive" in calls[1].args
    assert pulumi.imported() is None


def test_with_run_the_adopted_state_is_imported_before_the_refresh(pulumi: FakePulumi) -> None:
    exported = state(NAMESPACE)
    pulumi.serve(exported)
    assert recover(pulumi, "--run") == 0
    assert pulumi.imported() == adopted(exported, [(NAMESPACE_URN, "research")])
    commands = [c.command[:2] for c in pulumi.calls()]
    assert commands == [["version"], ["stack", "export"], ["stack", "import"], ["refresh", "--stack"]]
    _, export, import_call, refresh = pulumi.calls()
    assert (
        export.cwd == import_call.cwd == pulumi.folder and str(pulumi.folder) in refresh.args
    )  # --cwd for the refresh
    assert not list(pulumi.folder.glob(".recovery-*")), "no state file is left in the project"


def test_a_failed_export_says_what_the_cli_said(pulumi: FakePulumi, capsys: pytest.CaptureFixture[str]) -> None:
    pulumi.fail("stack export", "error: no stack named 'dev' found\n")
    assert recover(pulumi) == 2
    assert capsys.readouterr().err == "pulumi stack export failed:\nerror: no stack named 'dev' found\n"


def test_a_failed_import_stops_before_the_refresh(pulumi: FakePulumi, capsys: pytest.CaptureFixture[str]) -> None:
    pulumi.serve(state(NAMESPACE))
    pulumi.fail("stack import", "error: the stack is currently locked by 1 lock(s)\n")
    assert recover(pulumi, "--run") == 1
    err = capsys.readouterr().err
    assert err.startswith("failed: pulumi stack import --stack dev\n") and "currently locked" in err
    assert [c.command[:1] for c in pulumi.calls()][-1] == ["stack"], "no refresh after a failed import"


def test_without_the_cli_it_says_so(
    pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(pulumi.folder / "nowhere"))
    assert recover(pulumi) == 2
    assert capsys.readouterr().err.startswith("pulumi stack export failed:\n")
