"""The recovery plan after an interrupted `up` (components/recovery/pending.py), from states shaped
as `pulumi stack export` writes them. The whole recovery on the real engine:
tests/e2e/engine/test_engine_interrupted.py."""

from __future__ import annotations

from typing import Any

from components.k8s.helm_records import ReleaseState, release_state
from components.recovery.pending import adopted, pending_operations, recorded_releases, recovery_plan
from testbed.pulumi_state import NAMESPACE, NAMESPACE_URN, state

RELEASE_URN = (
    "urn:pulumi:dev::kueue-aks::kueue-aks:kueue:KueueInstallation$kubernetes:helm.sh/v3:Release::kueue-release"
)
CRD_URN = "urn:pulumi:dev::kueue-aks::kueue-aks:operators:JobOperators$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::x"
POOL_URN = "urn:pulumi:dev::kueue-aks::kueue-aks:cluster:AksCluster$azure-native:containerservice:AgentPool::gpu"


RELEASE = (RELEASE_URN, "creating", {"name": "kueue", "namespace": "kueue-system", "chart": "kueue"})
CRD = (
    CRD_URN,
    "creating",
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobsets.jobset.x-k8s.io"},
    },
)


def test_import_ids_are_the_kubernetes_providers() -> None:
    ops = pending_operations(state(RELEASE, NAMESPACE, (POOL_URN, "creating", {"vmSize": "x"})))
    assert [op.import_id for op in ops] == ["kueue-system/kueue", "research", None]
    assert [op.is_release for op in ops] == [True, False, False]


def test_what_exists_is_imported_and_what_does_not_is_cleared() -> None:
    ops = pending_operations(state(RELEASE, NAMESPACE, CRD))
    plan = recovery_plan(
        "dev", ops, {NAMESPACE_URN: True, CRD_URN: False}, {RELEASE_URN: ReleaseState("deployed", 1, 1)}
    )
    assert plan.helm == ()
    assert plan.adopt == ((RELEASE_URN, "kueue-system/kueue"), (NAMESPACE_URN, "research"))
    assert plan.refresh == ("pulumi refresh --stack dev --yes --clear-pending-creates",)
    # The state the recovery writes back: the two that exist are resources with their IDs, after
    # what the state held, and no pending operation is left (the CRD's create is cleared).
    before = state(RELEASE, NAMESPACE, CRD)
    after = adopted(before, plan.adopt)
    made = after["deployment"]["resources"][-2:]
    assert [(r["urn"], r["id"]) for r in made] == list(plan.adopt)
    assert made[1]["outputs"] == made[1]["inputs"] == NAMESPACE[2]
    assert after["deployment"]["pending_operations"] == []
    assert before["deployment"]["pending_operations"], "adopted() changed its input"
    assert any("does not exist" in r and CRD_URN in r for r in plan.reasons)


def test_a_release_helm_never_finished_installing_is_uninstalled_then_cleared() -> None:
    plan = recovery_plan(
        "dev", pending_operations(state(RELEASE)), {}, {RELEASE_URN: ReleaseState("pending-install", 1, None)}
    )
    assert plan.helm == ("helm uninstall kueue --namespace kueue-system --wait",)
    assert plan.refresh == ("pulumi refresh --stack dev --yes --clear-pending-creates",)


def test_a_release_left_mid_upgrade_is_rolled_back_to_the_last_deployed_revision() -> None:
    updating = (RELEASE_URN, "updating", RELEASE[2])
    plan = recovery_plan(
        "dev", pending_operations(state(updating)), {}, {RELEASE_URN: ReleaseState("pending-upgrade", 3, 2)}
    )
    assert plan.helm == ("helm rollback kueue 2 --namespace kueue-system --wait",)
    assert plan.refresh == ("pulumi refresh --stack dev --yes --clear-pending-creates",)
    assert any("rolled back to revision 2" in r for r in plan.reasons)


def test_an_azure_resource_is_left_to_the_user_named() -> None:
    plan = recovery_plan("dev", pending_operations(state((POOL_URN, "creating", {}))), {}, {})
    assert [op.urn for op in plan.unknown] == [POOL_URN] and plan.refresh == ()


def test_the_release_state_comes_from_helms_storage_labels() -> None:
    def secret(version: int, status: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"owner": "helm", "name": "kueue", "version": str(version), "status": status}}}

    assert release_state(
        [secret(1, "superseded"), secret(3, "pending-upgrade"), secret(2, "deployed")]
    ) == ReleaseState("pending-upgrade", 3, 2)
    assert release_state([secret(1, "pending-install")]) == ReleaseState("pending-install", 1, None)
    assert release_state([]) is None


def test_a_release_an_up_left_mid_upgrade_is_found_without_a_pending_operation() -> None:
    """A later `up` drops the pending update from the state; Helm's record still blocks it."""
    exported = {
        "deployment": {
            "resources": [{"urn": RELEASE_URN, "type": "kubernetes:helm.sh/v3:Release", "inputs": RELEASE[2]}],
            "pending_operations": [],
        }
    }
    recorded = recorded_releases(exported)
    stuck = recovery_plan("dev", [], {}, {RELEASE_URN: ReleaseState("pending-upgrade", 2, 1)}, recorded)
    assert stuck.helm == ("helm rollback kueue 1 --namespace kueue-system --wait",)
    assert stuck.refresh == ("pulumi refresh --stack dev --yes --clear-pending-creates",)
    fine = recovery_plan("dev", [], {}, {RELEASE_URN: ReleaseState("deployed", 2, 2)}, recorded)
    assert (fine.helm, fine.refresh, fine.reasons) == ((), (), ())
