"""Team members: the config key, the pure RBAC builders and what the program registers under mocks.

What the bindings allow and refuse is shown on a real API server in tests/e2e/access/test_access.py; these
tests pin the wiring: which objects, in which namespaces, for which groups, and the Azure role.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from components.access.component import CLUSTER_USER_ROLE
from components.access.members import (
    BATCH_USER_BINDING,
    CAPACITY_VIEWER_BINDING,
    CAPACITY_VIEWER_ROLE,
    MEMBER_BINDING,
    MEMBER_ROLE,
    PENDING_WORKLOADS_PREFIX,
    access_objects,
    member_groups,
    team_access,
)
from components.cluster.component import ExistingClusterMismatch, check_entra_integration
from components.config.cluster import ExistingCluster
from components.kueue.objects import queue_set
from components.kueue.policies import BATCH_USER_ROLE
from testbed.config_errors import refused
from testbed.harness import ProgramMocks, ProgramRun, run_program
from testbed.stacks import load_stack, stack_file_config

RESEARCH = "0d3c9a51-7a6e-4c43-9bd4-3a0f1c0e5a11"
SHARED_GROUP = "5b1e2f70-1111-4a2b-8c3d-000000000002"
PLATFORM = "9f8e7d6c-5b4a-4392-8170-abcdefabcdef"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://example.invalid:6443'}}]\n"
    "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n"
)


def with_members(config: dict[str, Any], members: dict[str, list[str]]) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed.pop("kueue-aks:monitoring", None)  # differs per mode; not what these tests are about
    for team in changed["kueue-aks:teams"]:
        if team["name"] in members:
            team["members"] = members[team["name"]]
    return changed


@pytest.fixture(scope="module")
def dev_map() -> dict[str, Any]:
    return stack_file_config("dev")


@pytest.fixture(scope="module")
def members_map(dev_map: dict[str, Any]) -> dict[str, Any]:
    return with_members(dev_map, {"research": [RESEARCH, SHARED_GROUP], "platform": [SHARED_GROUP, PLATFORM]})


@pytest.fixture(scope="module")
def create_run(members_map: dict[str, Any]) -> ProgramRun:
    return run_program(members_map)


# --- config ----------------------------------------------------------------------------------------


def test_members_are_parsed_per_team(members_map: dict[str, Any]) -> None:
    teams = {t.name: t.members for t in load_stack(members_map).teams}
    assert teams == {"research": (RESEARCH, SHARED_GROUP), "platform": (SHARED_GROUP, PLATFORM)}


@pytest.mark.parametrize("bad", ["research-team", "0d3c9a51-7a6e-4c43-9bd4", 42, ""])
def test_a_member_that_is_not_a_group_object_id_names_the_key(dev_map: dict[str, Any], bad: Any) -> None:
    found = refused(load_stack, with_members(dev_map, {"platform": [PLATFORM, bad]})).pairs
    assert [path for path, _ in found] == ["kueue-aks:teams[1].members[1]"], found
    # What the ID is and how to look one up, for an admin who wrote a group's name.
    assert "an Entra ID group's object ID" in found[0][1]
    assert "az ad group show --group <group name> --query id -o tsv" in found[0][1]


def test_a_group_listed_twice_in_a_team_is_an_error(dev_map: dict[str, Any]) -> None:
    found = refused(load_stack, with_members(dev_map, {"research": [RESEARCH, RESEARCH]})).pairs
    assert found == [("kueue-aks:teams[0].members[1]", f"{RESEARCH!r} is listed twice; list each group once")]


def test_kubeconfig_mode_takes_the_clusters_own_group_names(dev_map: dict[str, Any]) -> None:
    config = with_members(dev_map, {"research": ["oidc:research", "ml team"]})
    config["kueue-aks:cluster"] = {"kubeconfig": KUBECONFIG}
    assert load_stack(config).teams[0].members == ("oidc:research", "ml team")


@pytest.mark.parametrize("bad", ["system:authenticated", "system:masters", " padded", ""])
def test_kubeconfig_mode_refuses_system_groups_and_blank_names(dev_map: dict[str, Any], bad: str) -> None:
    config = with_members(dev_map, {"research": [bad]})
    config["kueue-aks:cluster"] = {"kubeconfig": KUBECONFIG}
    found = refused(load_stack, config).pairs
    assert [path for path, _ in found] == ["kueue-aks:teams[0].members[0]"], found
    assert "not a system: group" in found[0][1]


def test_members_need_kueues_visibility_api(dev_map: dict[str, Any]) -> None:
    config = with_members(dev_map, {"research": [RESEARCH]})
    config["kueue-aks:kueue"] = {**config.get("kueue-aks:kueue", {}), "featureGates": {"VisibilityOnDemand": False}}
    assert [path for path, _ in refused(load_stack, config).pairs] == [
        "kueue-aks:kueue.featureGates.VisibilityOnDemand"
    ]


def test_a_bad_member_stops_the_program_before_any_resource(dev_map: dict[str, Any]) -> None:
    from pulumi.runtime.settings import SETTINGS

    with pytest.raises(pulumi.RunError) as err:
        run_program(with_members(dev_map, {"research": ["not-a-guid"]}))
    assert "kueue-aks:teams[0].members[0]" in str(err.value)
    assert not SETTINGS.monitor.registrations


# --- the pure builders -----------------------------------------------------------------------------


def test_no_members_no_objects(dev_map: dict[str, Any]) -> None:
    assert access_objects(load_stack(dev_map), {}) == []


def test_bindings_name_exactly_each_teams_groups_in_its_own_namespace(members_map: dict[str, Any]) -> None:
    config = load_stack(members_map)
    objects = access_objects(config, queue_set(config).local_queues)
    bindings = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "RoleBinding"}
    assert set(bindings) == {(ns, b) for ns in ("research", "platform") for b in (BATCH_USER_BINDING, MEMBER_BINDING)}
    for (namespace, name), binding in bindings.items():
        team = next(t for t in config.teams if t.name == namespace)
        assert [s["name"] for s in binding["subjects"]] == list(team.members)
        assert {s["kind"] for s in binding["subjects"]} == {"Group"}
        assert binding["roleRef"]["name"] == (BATCH_USER_ROLE if name == BATCH_USER_BINDING else MEMBER_ROLE)
    cluster_bindings = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRoleBinding"}
    assert set(cluster_bindings) == {
        CAPACITY_VIEWER_BINDING,
        *(PENDING_WORKLOADS_PREFIX + t.name for t in config.teams),
    }
    viewers = cluster_bindings[CAPACITY_VIEWER_BINDING]
    assert viewers["roleRef"]["name"] == CAPACITY_VIEWER_ROLE
    assert [s["name"] for s in viewers["subjects"]] == sorted({RESEARCH, SHARED_GROUP, PLATFORM})


def test_a_member_reads_the_pending_workloads_of_its_own_cluster_queues_only(members_map: dict[str, Any]) -> None:
    config = load_stack(members_map)
    objects = {(o["kind"], o["metadata"]["name"]): o for o in access_objects(config, queue_set(config).local_queues)}
    role = objects[("ClusterRole", PENDING_WORKLOADS_PREFIX + "research")]
    assert role["rules"] == [
        {
            "apiGroups": ["visibility.kueue.x-k8s.io"],
            "resources": ["clusterqueues/pendingworkloads"],
            "resourceNames": ["research", "research-topology"],
            "verbs": ["get"],
        }
    ]
    binding = objects[("ClusterRoleBinding", PENDING_WORKLOADS_PREFIX + "research")]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert [s["name"] for s in binding["subjects"]] == [RESEARCH, SHARED_GROUP]


def test_a_team_without_members_gets_no_binding(dev_map: dict[str, Any]) -> None:
    config = load_stack(with_members(dev_map, {"platform": [PLATFORM]}))
    objects = access_objects(config, queue_set(config).local_queues)
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] == "RoleBinding"} == {"platform"}


def test_the_stacks_own_roles_only_read_and_never_aggregate(members_map: dict[str, Any]) -> None:
    config = load_stack(members_map)
    roles = [o for o in access_objects(config, queue_set(config).local_queues) if o["kind"] == "ClusterRole"]
    assert {r["metadata"]["name"] for r in roles} == {
        MEMBER_ROLE,
        CAPACITY_VIEWER_ROLE,
        *(PENDING_WORKLOADS_PREFIX + t for t in ("research", "platform")),
    }
    for role in roles:
        assert not any(k.startswith("rbac.") for k in role["metadata"]["labels"]), role["metadata"]["labels"]
        assert "aggregationRule" not in role
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
            assert "secrets" not in rule["resources"] and "*" not in rule["resources"]


def test_member_groups_lists_a_shared_group_once(members_map: dict[str, Any]) -> None:
    assert member_groups(load_stack(members_map)) == sorted({RESEARCH, SHARED_GROUP, PLATFORM})


def test_team_access_reports_queues_quota_and_members(members_map: dict[str, Any]) -> None:
    config = load_stack(members_map)
    report = {t.team: t for t in team_access(config, queue_set(config))}
    assert report["research"].local_queues == ("default", "topology")
    assert report["research"].members == (RESEARCH, SHARED_GROUP)
    # The dev stack's 3 T4 GPUs: one each by share, the third in the cohort; CPU pools report no GPUs.
    assert report["research"].quota["gpu"]["nvidia.com/gpu"] == "1 GPU"
    assert "nvidia.com/gpu" not in report["research"].quota["cpu"]


# --- the program under mocks -----------------------------------------------------------------------


def member_assignments(run: ProgramRun) -> list[Any]:
    """The role assignments TeamAccess made (the cluster and monitoring make their own)."""
    access = run.one("kueue-aks:access:TeamAccess")
    return [a for a in run.of_type(ROLE_ASSIGNMENT) if a.parent == access.urn]


def test_create_mode_assigns_the_cluster_user_role_once_per_group(create_run: ProgramRun) -> None:
    assignments = member_assignments(create_run)
    assert sorted(a.inputs["principalId"] for a in assignments) == sorted({RESEARCH, SHARED_GROUP, PLATFORM})
    cluster = create_run.one("azure-native:containerservice:ManagedCluster")
    for a in assignments:
        assert a.inputs["principalType"] == "Group"
        assert a.inputs["roleDefinitionId"].endswith(
            f"/providers/Microsoft.Authorization/roleDefinitions/{CLUSTER_USER_ROLE}"
        )
        assert a.inputs["scope"] == f"{cluster.name}_id"  # the mock's ID of the AKS cluster


def test_create_mode_registers_the_bindings_in_exactly_the_team_namespaces(create_run: ProgramRun) -> None:
    bindings = create_run.of_type(ROLE_BINDING)
    seen = {
        (b.inputs["metadata"]["namespace"], b.inputs["metadata"]["name"]): [s["name"] for s in b.inputs["subjects"]]
        for b in bindings
    }
    assert seen == {
        ("research", BATCH_USER_BINDING): [RESEARCH, SHARED_GROUP],
        ("research", MEMBER_BINDING): [RESEARCH, SHARED_GROUP],
        ("platform", BATCH_USER_BINDING): [SHARED_GROUP, PLATFORM],
        ("platform", MEMBER_BINDING): [SHARED_GROUP, PLATFORM],
    }
    assert len(create_run.of_type(CLUSTER_ROLE_BINDING)) >= 1
    access = create_run.one("kueue-aks:access:TeamAccess")
    namespaces = {r.inputs["metadata"]["name"]: r.urn for r in create_run.of_type("kubernetes:core/v1:Namespace")}
    for b in bindings:
        assert b.parent == access.urn
        assert namespaces[b.inputs["metadata"]["namespace"]] in b.dependencies  # created after its namespace


def test_the_teams_output_says_who_can_submit_where(create_run: ProgramRun) -> None:
    teams = create_run.exports["teams"]
    assert teams["platform"]["namespace"] == "platform"
    assert teams["platform"]["localQueues"] == ["default", "topology"]
    assert teams["platform"]["members"] == [SHARED_GROUP, PLATFORM]
    assert set(teams["platform"]["quota"]) == {"cpu", "tas", "gpu"}


def test_existing_mode_assigns_the_role_on_the_existing_cluster(members_map: dict[str, Any]) -> None:
    config = {**members_map, "kueue-aks:cluster": {"existing": {"resourceGroup": "rg", "name": "aks1"}}}
    run = run_program(config, mocks=ProgramMocks(managed_cluster={"aadProfile": {"managed": True}}))
    scopes = {a.inputs["scope"] for a in run.of_type(ROLE_ASSIGNMENT)}
    assert scopes == {"/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"}
    assert len(run.of_type(ROLE_ASSIGNMENT)) == 3 and len(run.of_type(ROLE_BINDING)) == 4


def test_kubeconfig_mode_makes_only_the_bindings(dev_map: dict[str, Any]) -> None:
    config = with_members(dev_map, {"research": ["oidc:research"]})
    config["kueue-aks:cluster"] = {"kubeconfig": KUBECONFIG}
    config.pop("azure-native:location", None)
    run = run_program(config)
    assert not run.of_type(ROLE_ASSIGNMENT)
    assert {
        (b.inputs["metadata"]["namespace"], b.inputs["subjects"][0]["name"]) for b in run.of_type(ROLE_BINDING)
    } == {("research", "oidc:research")}


def test_without_members_nothing_is_granted(dev_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_map)
    config.pop("kueue-aks:monitoring", None)
    run = run_program(config)
    assert not member_assignments(run) and not run.of_type(ROLE_BINDING)
    assert [a.name for a in run.of_type(ROLE_ASSIGNMENT)] == ["kueue-deployer-admin"]  # the deployer's, not a member's
    assert not [
        r for r in run.of_type(CLUSTER_ROLE) if r.inputs["metadata"]["name"] in (MEMBER_ROLE, CAPACITY_VIEWER_ROLE)
    ]
    assert run.exports["teams"]["research"]["members"] == []


def test_an_existing_cluster_without_entra_id_is_refused_for_members() -> None:
    with pytest.raises(ExistingClusterMismatch) as err:
        check_entra_integration(ExistingCluster("grp", "clu"), None)
    assert str(err.value).startswith("kueue-aks:teams[].members needs the AKS-managed Entra ID integration")
    assert "az aks update --resource-group grp --name clu --enable-aad" in str(err.value)
    assert check_entra_integration(ExistingCluster("grp", "clu"), SimpleNamespace(managed=True)) is True


def test_the_plan_says_who_can_submit_where(members_map: dict[str, Any]) -> None:
    from components.plan import access_markdown

    config = load_stack(members_map)
    text = access_markdown(config, queue_set(config))
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in text.splitlines()
        if line.startswith("| research") or line.startswith("| platform")
    }
    assert f"`{RESEARCH}`, `{SHARED_GROUP}`" in rows["research"] and "`default`, `topology`" in rows["research"]
    assert (
        f"`{SHARED_GROUP}`, `{PLATFORM}`" in rows["platform"] and "gpu: 4.63 vCPU, 30.85 GiB, 1 GPU" in rows["platform"]
    )
    assert "A job without the `kueue.x-k8s.io/priority-class` label runs at 0, as `normal`." in text
    lonely = load_stack(with_members(stack_file_config("dev"), {}))
    assert "none: only the cluster's admins can submit here" in access_markdown(lonely, queue_set(lonely))
