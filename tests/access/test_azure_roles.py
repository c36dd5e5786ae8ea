"""The plan's list of Azure role assignments (components/access/azure_roles.py) is what the program
registers, in every mode the tests know; and the plan says what roles `pulumi up` then needs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.access.azure_roles import ASSIGNING_ROLES, assigned_roles, role_grants, roles_needed
from components.access.component import CLUSTER_USER_ROLE
from components.cluster.component import NETWORK_CONTRIBUTOR_ROLE
from components.cluster.deployer import CLUSTER_ADMIN_ROLE
from components.facts.built_in_roles import BUILT_IN_ROLES
from components.monitoring.component import GRAFANA_ADMIN_ROLE, MONITORING_DATA_READER_ROLE
from components.plan import main as plan_main
from testbed.harness import (
    DEPLOYER_OBJECT_ID,
    GRAFANA_PRINCIPAL,
    ROOT,
    SUBSCRIPTION,
    ProgramMocks,
    identity_ids,
    matching_agent_pools,
    run_program,
)
from testbed.stacks import BYO, EXISTING, KUBECONFIG, load_stack, with_identities

ROLE_IDS = {
    "Azure Kubernetes Service RBAC Cluster Admin": CLUSTER_ADMIN_ROLE,
    "Network Contributor": NETWORK_CONTRIBUTOR_ROLE,
    "Azure Kubernetes Service Cluster User Role": CLUSTER_USER_ROLE,
    "Grafana Admin": GRAFANA_ADMIN_ROLE,
    "Monitoring Data Reader": MONITORING_DATA_READER_ROLE,
    **BUILT_IN_ROLES,
}
PRINCIPALS = {
    "the deploying identity": DEPLOYER_OBJECT_ID,
    "the new Grafana's managed identity": GRAFANA_PRINCIPAL,
    "the cluster's control-plane identity": identity_ids("kueue-control-plane")[0],
    "team research's identity": identity_ids("identities-research")[0],
}
GROUP_A, GROUP_B = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
WORKSPACE_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/obs/providers/Microsoft.Monitor/accounts/amw"


def variant(config: dict[str, Any], name: str) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    cluster = changed.setdefault("kueue-aks:cluster", {})
    teams = changed["kueue-aks:teams"]
    if name == "members and admins":
        teams[0]["members"], teams[1]["members"] = [GROUP_A], [GROUP_A, GROUP_B]
        cluster["adminGroupObjectIds"] = [GROUP_B]
    elif name == "no deployer admin":
        cluster["deployerAdmin"] = False
    elif name == "monitoring off":
        changed.pop("kueue-aks:monitoring", None)
    elif name == "existing":
        changed["kueue-aks:cluster"] = {"existing": EXISTING}
        changed["kueue-aks:monitoring"] = {
            **changed.get("kueue-aks:monitoring", {}),
            "azureMonitorWorkspaceId": WORKSPACE_ID,
        }
        teams[0]["members"] = [GROUP_A]
    elif name == "byo network":
        cluster.update(BYO)
    elif name == "team identities":
        return with_identities(changed)
    elif name == "kubeconfig":
        changed["kueue-aks:cluster"] = {"kubeconfig": KUBECONFIG}
        changed.pop("azure-native:location", None)
        changed.pop("kueue-aks:monitoring", None)
    return changed


@pytest.mark.parametrize(
    "name",
    [
        "dev",
        "members and admins",
        "no deployer admin",
        "monitoring off",
        "existing",
        "byo network",
        "team identities",
        "kubeconfig",
    ],
)
def test_the_listed_grants_are_the_registered_role_assignments(dev_config_map: dict[str, Any], name: str) -> None:
    config = variant(dev_config_map, name)
    mocks = (
        ProgramMocks(agent_pools=matching_agent_pools(config), managed_cluster={"aadProfile": {"managed": True}})
        if name == "existing"
        else None
    )
    run = run_program(config, mocks=mocks)
    registered = sorted(
        (a.inputs["roleDefinitionId"].rsplit("/", 1)[1], a.inputs["principalId"])
        for a in run.of_type("azure-native:authorization:RoleAssignment")
    )
    listed = sorted(
        (ROLE_IDS[g.role], PRINCIPALS.get(g.principal) or g.principal.removeprefix("group "))
        for g in role_grants(load_stack(config))
    )
    assert listed == registered
    assert bool(roles_needed(load_stack(config))) == bool(registered)
    # What CI's identity is allowed to assign (docs/ci-cd.md): exactly the role definitions registered.
    definitions = sorted({r for r, _ in registered})
    assert assigned_roles(load_stack(config)) == "{" + ", ".join(definitions) + "}"


def test_the_plan_says_which_roles_up_needs(
    dev_config_map: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"] = variant(doc["config"], "members and admins")
    (tmp_path / "Pulumi.roles.yaml").write_text(yaml.safe_dump(doc))
    assert plan_main(["--stack", "roles", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("**Azure roles:**"))
    assert "creates 5 Azure role assignments" in line and "Contributor alone cannot" in line
    assert all(role in line for role in ASSIGNING_ROLES) and "on the subscription" in line
    assert f"group {GROUP_B}" in line and "the deploying identity on the cluster" in line
    doc["config"] = variant(doc["config"], "kubeconfig")
    # In the stack file as `pulumi config set --secret` leaves it: a kubeconfig with a token in plain text is refused.
    doc["config"]["kueue-aks:cluster"] = {"kubeconfig": {"secure": "v1:ZW5jcnlwdGVk"}}
    (tmp_path / "Pulumi.roles.yaml").write_text(yaml.safe_dump(doc))
    assert plan_main(["--stack", "roles", "--root", str(tmp_path)]) == 0
    assert "**Azure roles:**" not in capsys.readouterr().out
