"""The deploying identity can use the cluster it made (kueue-aks:cluster.deployerAdmin).

Pure: the principal type read from the provider's token, and the wait for the API server to let
the identity in (a scripted reader and clock). Under mocks: the role assignment on the cluster,
its principal and type, and with local accounts off the Kubernetes provider waiting for it.
The propagation itself is Azure's and cannot be shown here; the wait's probe against a real API
server whose RBAC lets a user in late is tests/e2e/access/test_access.py's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.cluster.deployer import ACCESS_PROBE, CLUSTER_ADMIN_ROLE, DeployerError, principal_type, wait_for_access
from components.k8s.reader import ReadError
from testbed.harness import DEPLOYER_OBJECT_ID, USER_CLAIMS, ProgramMocks, ProgramRun, run_program, unsigned_token
from testbed.kube_fake import FakeCluster

ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
K8S_PROVIDER = "pulumi:providers:kubernetes"
# A service principal's or a managed identity's token from a client-credentials or OIDC login: app-only, no scp.
APP_CLAIMS = {"oid": DEPLOYER_OBJECT_ID, "idtyp": "app", "roles": []}


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        (USER_CLAIMS, "User"),
        (APP_CLAIMS, "ServicePrincipal"),
        ({"oid": DEPLOYER_OBJECT_ID, "scp": "user_impersonation"}, "User"),  # no idtyp: scp says delegated
        (
            {"oid": DEPLOYER_OBJECT_ID, "xms_mirid": "/subscriptions/x/.../userAssignedIdentities/ci"},
            "ServicePrincipal",
        ),
    ],
)
def test_principal_type_follows_the_tokens_claims(claims: dict[str, Any], expected: str) -> None:
    assert principal_type(unsigned_token(claims)) == expected


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.bm90IGpzb24.c", "a.WzFd.c"])
def test_a_token_that_is_not_a_jwt_names_the_key_and_what_to_do(token: str) -> None:
    with pytest.raises(DeployerError) as err:
        principal_type(token)
    message = str(err.value)
    assert "kueue-aks:cluster.deployerAdmin" in message and "adminGroupObjectIds" in message
    assert token == "" or token not in message


class ScriptedReader:
    """Answers the probe from a script: None (allowed) or a ReadError, the last answer repeated."""

    def __init__(self, answers: list[ReadError | None]) -> None:
        self.answers, self.reads, self.closed = answers, [], False

    def get(self, path: str) -> dict[str, Any] | None:
        self.reads.append(path)
        answer = self.answers[min(len(self.reads), len(self.answers)) - 1]
        if answer is not None:
            raise answer
        return {"kind": "Namespace"}

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


FORBIDDEN = ReadError("the kubeconfig's user 'u' cannot read /api/v1/namespaces/kube-system (HTTP 403: forbidden)", 403)
NO_KUBELOGIN = ReadError(
    "cannot read https://aks: user 'u' gets its credentials from kubelogin, which could not be started"
)


def wait(reader: ScriptedReader, clock: Clock, **kw: Any) -> str:
    return wait_for_access(
        "kubeconfig-text",
        what_to_check="CHECK THIS",
        clock=clock,
        sleep=clock.sleep,
        connect=lambda _: reader,
        poll=10.0,
        deadline=600.0,
        **kw,
    )


def test_the_wait_ends_when_the_role_reaches_the_api_server() -> None:
    reader, clock = ScriptedReader([FORBIDDEN, FORBIDDEN, FORBIDDEN, None]), Clock()
    assert wait(reader, clock) == "kubeconfig-text"
    assert reader.reads == [ACCESS_PROBE] * 4 and clock.slept == [10.0] * 3 and reader.closed


def test_the_wait_has_a_deadline_and_says_what_to_check() -> None:
    reader, clock = ScriptedReader([FORBIDDEN]), Clock()
    with pytest.raises(DeployerError) as err:
        wait(reader, clock)
    message = str(err.value)
    print(message)
    assert "after 10 minutes" in message and "HTTP 403" in message and "CHECK THIS" in message
    assert clock.now == 600.0 and reader.closed


def test_a_failure_other_than_forbidden_does_not_wait_for_the_deadline() -> None:
    reader, clock = ScriptedReader([FORBIDDEN, NO_KUBELOGIN]), Clock()
    with pytest.raises(DeployerError) as err:
        wait(reader, clock)
    assert "kubelogin" in str(err.value) and "CHECK THIS" in str(err.value)
    assert len(reader.reads) == 4 and clock.now == 30.0  # one 403, then three failures in a row


# --- the program under mocks ---------------------------------------------------------------------


def cluster_keys(config: dict[str, Any], **keys: Any) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed["kueue-aks:cluster"] = {**changed.get("kueue-aks:cluster", {}), **keys}
    return changed


def deployer_assignments(run: ProgramRun) -> list[Any]:
    return [r for r in run.of_type(ROLE_ASSIGNMENT) if r.name.endswith("-deployer-admin")]


@pytest.mark.parametrize(("claims", "kind"), [(USER_CLAIMS, "User"), (APP_CLAIMS, "ServicePrincipal")])
def test_the_deploying_identity_administers_the_cluster(
    dev_config_map: dict[str, Any], claims: dict[str, Any], kind: str
) -> None:
    run = run_program(dev_config_map, mocks=ProgramMocks(token=unsigned_token(claims)))
    [assignment] = deployer_assignments(run)
    cluster = run.one(MANAGED_CLUSTER)
    assert assignment.inputs["scope"] == f"{cluster.name}_id"  # the mocks' ID of the cluster
    assert assignment.inputs["principalId"] == DEPLOYER_OBJECT_ID
    assert assignment.inputs["principalType"] == kind
    assert assignment.inputs["roleDefinitionId"].endswith(
        f"/providers/Microsoft.Authorization/roleDefinitions/{CLUSTER_ADMIN_ROLE}"
    )
    assert cluster.urn in assignment.property_dependencies["scope"]


def test_deployer_admin_false_assigns_nothing(dev_config_map: dict[str, Any]) -> None:
    run = run_program(cluster_keys(dev_config_map, deployerAdmin=False))
    assert not deployer_assignments(run)


def test_with_local_accounts_on_the_provider_does_not_wait(dev_config_map: dict[str, Any]) -> None:
    cluster = FakeCluster()
    run = run_program(dev_config_map, cluster=cluster)
    assert deployer_assignments(run)
    assert ACCESS_PROBE not in cluster.reads
    assert not [u for u in run.one(K8S_PROVIDER).property_dependencies["kubeconfig"] if u.endswith("-deployer-admin")]


@pytest.mark.parametrize("admin", [True, False])
def test_with_local_accounts_off_every_kubernetes_object_waits_for_access(
    dev_config_map: dict[str, Any], admin: bool
) -> None:
    cluster = FakeCluster()
    config = cluster_keys(
        dev_config_map,
        disableLocalAccounts=True,
        deployerAdmin=admin,
        adminGroupObjectIds=["11111111-2222-3333-4444-555555555555"],
    )
    run = run_program(config, cluster=cluster)
    provider = run.one(K8S_PROVIDER)
    # The provider's kubeconfig comes from the access check, which ran against the API server ...
    assert cluster.reads.count(ACCESS_PROBE) == 1
    # ... after the role assignment exists: every Kubernetes object uses this provider.
    assignments = deployer_assignments(run)
    assert [a.urn for a in assignments] == [
        u for u in provider.property_dependencies["kubeconfig"] if u.endswith("-deployer-admin")
    ]
    assert len(assignments) == (1 if admin else 0)
    k8s_objects = [r for r in run.registrations if r.custom and r.type.startswith("kubernetes:")]
    assert k8s_objects and all(r.provider.startswith(provider.urn) for r in k8s_objects)


def test_a_preview_does_not_wait(dev_config_map: dict[str, Any]) -> None:
    cluster = FakeCluster()
    run_program(cluster_keys(dev_config_map, disableLocalAccounts=True), cluster=cluster, preview=True)
    assert ACCESS_PROBE not in cluster.reads
