"""The stack-config contract: defaults, every rule, all problems at once, key paths named."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.checks import ConfigError
from components.config.governance import Governance
from components.config.kueue import DEFAULT_FRAMEWORKS
from components.config.monitoring import MonitoringSettings
from components.config.names import QUEUED_TAINT
from components.config.parse import KEYS, parse_config
from components.config.teams import DEFAULT_PRIORITY_CLASSES
from testbed.config_errors import refused
from testbed.harness import ROOT
from testbed.stacks import design_example, design_md_example, load_stack

MINIMAL: dict[str, Any] = {
    "nodePools": [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2}],
    "teams": [{"name": "research", "share": 100}],
}


# Written out, not imported, so a change to the governance taint is a test failure to look at.
QUEUED = "kueue-aks.io/queued=true:NoSchedule"

# A topology-aware pool as the config requires it: fixed-size (minCount == maxCount).
TAS_POOL: dict[str, Any] = {"name": "tas", "vmSize": "Standard_D8s_v5", "minCount": 2, "maxCount": 2, "topology": True}


def parse(raw: dict[str, Any], location: str | None = "eastus2") -> Any:
    return parse_config(raw, stack="test", location=location)


def with_changes(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(MINIMAL)
    raw.update(changes)
    return raw


def test_dev_stack_parses(dev_config: Any) -> None:
    assert [p.name for p in dev_config.node_pools] == ["cpu", "gpu", "tas"]
    gpu = dev_config.pool("gpu")
    assert gpu.is_gpu and gpu.node.gpus == 1
    assert [str(t) for t in gpu.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    assert dev_config.pool("cpu").taints == ()
    # All three scale from zero; only tas is topology-aware (autoscaled with ProvisioningRequest).
    assert [(p.name, p.min_count, p.max_count, p.topology) for p in dev_config.node_pools] == [
        ("cpu", 0, 4, False), ("gpu", 0, 3, False), ("tas", 0, 1, True)]
    assert dev_config.uses_topology
    assert [(t.name, t.share, t.pools) for t in dev_config.teams] == [
        ("research", Decimal(60), ("cpu", "gpu", "tas")),
        ("platform", Decimal(40), ("cpu", "gpu", "tas")),
    ]
    assert dev_config.cluster.name == "kueue-dev"


def test_design_contract_example_parses() -> None:
    cfg = load_stack(design_example())
    assert cfg.cluster.name == "kueue-dev"
    assert cfg.cluster.kubernetes_version == "1.33"
    assert cfg.kueue.version == "0.19.2"
    assert cfg.kueue.frameworks[-1] == "trainer.kubeflow.org/trainjob"
    assert [p.name for p in cfg.priority_classes] == ["high"]
    assert cfg.topology_levels == ("topology.kubernetes.io/zone", "kubernetes.io/hostname")


def test_design_example_fixture_matches_the_contract() -> None:
    contract = design_md_example()
    if contract is None:  # only outside this workplace (e.g. on GitHub), where DESIGN.md is not shipped
        pytest.skip("../shared/DESIGN.md is not present")
    assert design_example() == contract


def test_defaults() -> None:
    cfg = parse(MINIMAL)
    assert cfg.cluster.tier == "Free" and cfg.cluster.auto_upgrade_channel == "patch"
    assert cfg.cluster.system_pool.vm_size == "Standard_D4s_v5" and cfg.cluster.system_pool.count == 2
    assert cfg.cluster.kubernetes_version is None and not cfg.cluster.disable_local_accounts
    assert cfg.kueue.version == "0.19.2" and cfg.kueue.replicas == 2
    assert dict(cfg.kueue.feature_gates) == {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}
    assert cfg.kueue.frameworks == DEFAULT_FRAMEWORKS
    assert cfg.priority_classes == DEFAULT_PRIORITY_CLASSES
    assert cfg.pool("cpu").min_count == 0 and not cfg.pool("cpu").spot
    assert all(t.borrowing is None for t in cfg.teams)  # no borrowing limit


def test_borrowing_is_a_multiple_of_the_quota_or_unlimited() -> None:
    teams = [{"name": "a", "share": 30, "borrowing": 0}, {"name": "b", "share": 30, "borrowing": 0.5},
             {"name": "c", "share": 20, "borrowing": "unlimited"}, {"name": "d", "share": 20, "borrowing": 2}]
    assert [t.borrowing for t in parse(with_changes(teams=teams)).teams] == [0, Decimal("0.5"), None, 2]


def test_pulumi_yaml_declares_every_key_with_the_same_defaults() -> None:
    """Pulumi.yaml's declared defaults, injected as the CLI would, change nothing."""
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert set(declared) == {"cluster", "nodePools", "kueue", "teams", "priorityClasses", "topology", "governance",
                             "devicePlugin", "monitoring", "operators", "preflight", "multiKueue", "registryCredentials"}
    assert set(declared) == set(KEYS)  # every key the parser accepts is declared, and no other
    for key, decl in declared.items():
        assert {"type", "default", "description"} <= set(decl), key
    with_declared_defaults = {k: d["default"] for k, d in declared.items() if k not in MINIMAL} | MINIMAL
    assert parse(with_declared_defaults) == parse(MINIMAL)


def test_spot_pool_carries_the_aks_spot_taint() -> None:
    raw = with_changes(nodePools=[{"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True}])
    pool = parse(raw).pool("gpuspot")
    # Configured (GPU default) taints first, then AKS's spot taint, then the governance taint.
    assert [str(t) for t in pool.node_taints] == [
        "nvidia.com/gpu=present:NoSchedule",
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
        QUEUED,
    ]
    assert [str(t) for t in pool.taints] == ["nvidia.com/gpu=present:NoSchedule"]  # the configured ones only
    ungoverned = parse({**raw, "governance": {"enforce": False}}).pool("gpuspot")
    assert [str(t) for t in ungoverned.node_taints] == [
        "nvidia.com/gpu=present:NoSchedule",
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
    ]


def test_explicit_empty_taints_replace_the_gpu_default() -> None:
    raw = with_changes(nodePools=[{"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 1, "taints": []}])
    assert parse(raw).pool("gpu").taints == ()


def test_capacity_override_for_a_size_outside_the_catalog() -> None:
    raw = with_changes(nodePools=[{"name": "big", "vmSize": "Standard_X99", "maxCount": 2,
                                   "capacity": {"cpu": "24", "memory": "220Gi", "nvidia.com/gpu": 1}}])
    pool = parse(raw).pool("big")
    assert (pool.node.vcpus, pool.node.memory_gib, pool.node.gpus) == (24, 220, 1)
    assert pool.is_gpu and str(pool.taints[0]) == "nvidia.com/gpu=present:NoSchedule"


@pytest.mark.parametrize(
    ("raw", "location", "expected"),
    [
        (with_changes(), None, "azure-native:location: is required"),
        (with_changes(nodepools=[]), "x", "kueue-aks:nodepools: unknown key (did you mean 'nodePools'?)"),
        ({"teams": MINIMAL["teams"]}, "x", "kueue-aks:nodePools: is required"),
        (with_changes(nodePools=[]), "x", "kueue-aks:nodePools: is an empty list; allowed: 1 or more node pools"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxcount": 3}]), "x",
         "kueue-aks:nodePools[0].maxcount: unknown key (did you mean 'maxCount'?)"),
        (with_changes(nodePools=[{"name": "Cpu-1", "vmSize": "Standard_D16s_v5", "maxCount": 3}]), "x",
         "kueue-aks:nodePools[0].name: 'Cpu-1' is not allowed"),
        (with_changes(nodePools=[{"name": "system", "vmSize": "Standard_D16s_v5", "maxCount": 3}]), "x",
         "kueue-aks:nodePools[0].name: 'system' is the system pool's name"),
        (with_changes(nodePools=[MINIMAL["nodePools"][0], MINIMAL["nodePools"][0]]), "x",
         "kueue-aks:nodePools[1].name: 'cpu' is used by another pool"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v9", "maxCount": 3}]), "x",
         "kueue-aks:nodePools[0].vmSize: 'Standard_D16s_v9' is not in the capacity catalog"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": 3, "maxCount": 2}]), "x",
         "kueue-aks:nodePools[0].maxCount: 2 is below minCount 3"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 0}]), "x",
         "kueue-aks:nodePools[0].maxCount: 0 is out of range; allowed: 1 to 1000"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": -1, "maxCount": 2}]), "x",
         "kueue-aks:nodePools[0].minCount: -1 is out of range"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": "3"}]), "x",
         "kueue-aks:nodePools[0].maxCount: must be an integer"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "spot": "yes"}]), "x",
         "kueue-aks:nodePools[0].spot: must be true or false"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "taints": ["gpu=true:NoScheduled"]}]), "x",
         "kueue-aks:nodePools[0].taints[0]: 'gpu=true:NoScheduled' has effect 'NoScheduled'"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "labels": {"kubernetes.azure.com/x": "1"}}]), "x",
         "kueue-aks:nodePools[0].labels.kubernetes.azure.com/x: AKS reserves"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "labels": {"tier": True}}]), "x",
         "kueue-aks:nodePools[0].labels.tier: must be a string (quote numbers and booleans); got a boolean True"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "topology": True}]), "x",
         "kueue-aks:nodePools[0].minCount: 0 is below maxCount (2) on a topology-aware pool without provisioningRequest"),
        (with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": 1, "maxCount": 3, "topology": True}]), "x",
         "kueue-aks:nodePools[0].minCount: 1 is below maxCount (3) on a topology-aware pool without provisioningRequest"),
        (with_changes(nodePools=[{"name": "x", "vmSize": "Standard_X9", "maxCount": 2, "capacity": {"cpu": "8"}}]), "x",
         "kueue-aks:nodePools[0].capacity: Standard_X9 is not in the catalog, so capacity needs both cpu and memory"),
        (with_changes(nodePools=[{"name": "x", "vmSize": "Standard_D16s_v5", "maxCount": 2, "capacity": {"gpus": 1}}]), "x",
         "kueue-aks:nodePools[0].capacity.gpus: unknown key"),
        (with_changes(cluster={"tier": "free"}), "x", "kueue-aks:cluster.tier: 'free' is not allowed (did you mean 'Free'?)"),
        (with_changes(cluster={"kubernetesVersion": 1.33}), "x", "kueue-aks:cluster.kubernetesVersion: must be a quoted string"),
        (with_changes(cluster={"kubernetesVersion": "1.29"}), "x",
         "kueue-aks:cluster.kubernetesVersion: '1.29' is below 1.30: the program installs a ValidatingAdmissionPolicy"),
        (with_changes(cluster={"zones": ["1", "4"]}), "x", "kueue-aks:cluster.zones[1]: '4' is not allowed"),
        (with_changes(cluster={"systemPool": {"vmSize": "Standard_NC4as_T4_v3"}}), "x",
         "kueue-aks:cluster.systemPool.vmSize: Standard_NC4as_T4_v3 is a GPU size"),
        (with_changes(cluster={"adminGroupObjectIds": ["not-a-guid"]}), "x", "kueue-aks:cluster.adminGroupObjectIds[0]: 'not-a-guid' is not allowed"),
        (with_changes(cluster={"autoUpgradeChannel": "weekly"}), "x", "kueue-aks:cluster.autoUpgradeChannel: 'weekly' is not allowed"),
        (with_changes(cluster={"name": "-bad"}), "x", "kueue-aks:cluster.name: '-bad' is not allowed"),
        (with_changes(kueue={"version": "latest"}), "x", "kueue-aks:kueue.version: 'latest' is not allowed"),
        (with_changes(kueue={"version": "v0.19.2"}), "x", "kueue-aks:kueue.version: 'v0.19.2': write the chart version without 'v'"),
        (with_changes(kueue={"version": "0.18.0"}), "x", "kueue-aks:kueue.version: '0.18.0' has no gate and framework tables"),
        (with_changes(kueue={"featureGates": {"TopologyAwareSchedulng": True}}), "x",
         "kueue-aks:kueue.featureGates.TopologyAwareSchedulng: is not a Kueue 0.19.2 feature gate (did you mean 'TopologyAwareScheduling'?)"),
        (with_changes(kueue={"featureGates": {"LendingLimit": True}}), "x", "kueue-aks:kueue.featureGates.LendingLimit: was removed"),
        (with_changes(kueue={"featureGates": {"HierarchicalCohorts": False}}), "x",
         "kueue-aks:kueue.featureGates.HierarchicalCohorts: is locked to true"),
        (with_changes(kueue={"featureGates": {"TopologyAwareScheduling": False}}), "x",
         "kueue-aks:kueue.featureGates.TopologyAwareScheduling: false needs these TAS gates set to false too"),
        (with_changes(kueue={"frameworks": ["batch/job", "ray.io/rayjobs"]}), "x",
         "kueue-aks:kueue.frameworks[1]: 'ray.io/rayjobs' is not a Kueue 0.19.2 framework (did you mean 'ray.io/rayjob'?)"),
        (with_changes(kueue={"frameworks": ["batch/job", "batch/job"]}), "x", "kueue-aks:kueue.frameworks[1]: 'batch/job' is listed twice"),
        (with_changes(kueue={"frameworks": ["sparkoperator.k8s.io/sparkapplication"]}), "x",
         "kueue-aks:kueue.featureGates.SparkApplicationIntegration: must be true"),
        (with_changes(kueue={"replicas": 0}), "x", "kueue-aks:kueue.replicas: 0 is out of range"),
        (with_changes(teams=[]), "x", "kueue-aks:teams: is an empty list; allowed: 1 or more teams"),
        (with_changes(teams=[{"name": "Research", "share": 50}]), "x", "kueue-aks:teams[0].name: 'Research' must be a DNS-1123 label"),
        (with_changes(teams=[{"name": "kube-system", "share": 50}]), "x", "kueue-aks:teams[0].name: 'kube-system' is a reserved namespace"),
        (with_changes(teams=[{"name": "a", "share": 0}]), "x", "kueue-aks:teams[0].share: 0 is out of range"),
        (with_changes(teams=[{"name": "a", "share": "50%"}]), "x", "kueue-aks:teams[0].share: must be a number"),
        (with_changes(teams=[{"name": "a", "share": 60}, {"name": "b", "share": 50}]), "x",
         "kueue-aks:teams: shares add up to 110%; the total must be at most 100%"),
        (with_changes(teams=[{"name": "a", "share": 50}, {"name": "a", "share": 10}]), "x", "kueue-aks:teams[1].name: 'a' is used by another team"),
        (with_changes(teams=[{"name": "a", "share": 50, "pools": ["gpu"]}]), "x", "kueue-aks:teams[0].pools[0]: 'gpu' is not a user pool"),
        (with_changes(nodePools=[TAS_POOL], teams=[{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}]), "x",
         "kueue-aks:teams[1].name: 'a-topology' is the name of team 'a''s ClusterQueue for its topology-aware pools"),
        (with_changes(teams=[{"name": "a"}]), "x", "kueue-aks:teams[0].share: is required"),
        (with_changes(teams=[{"name": "a", "share": 50, "borrowing": -1}]), "x",
         "kueue-aks:teams[0].borrowing: -1 is out of range; allowed: 0 to 100 (a multiple of the team's quota) "
         "or 'unlimited'"),
        (with_changes(teams=[{"name": "a", "share": 50, "borrowing": "none"}]), "x",
         "kueue-aks:teams[0].borrowing: must be a number from 0 to 100 (a multiple of the team's quota) or 'unlimited'"),
        (with_changes(teams=[{"name": "a", "share": 50, "borrowing": None}]), "x",
         "kueue-aks:teams[0].borrowing: is empty; allowed: a number from 0 to 100 (a multiple of the team's quota) "
         "or 'unlimited'"),
        (with_changes(priorityClasses=[{"name": "high", "value": 2**31}]), "x", "kueue-aks:priorityClasses[0].value: 2147483648 is out of range"),
        (with_changes(priorityClasses=[{"name": "high", "value": 1}, {"name": "high", "value": 2}]), "x",
         "kueue-aks:priorityClasses[1].name: 'high' is used twice"),
        (with_changes(priorityClasses=[{"name": "High", "value": 1}]), "x", "kueue-aks:priorityClasses[0].name: 'High' must be a DNS-1123 name"),
        (with_changes(topology={"levels": ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]}), "x",
         "kueue-aks:topology.levels[0]: kubernetes.io/hostname may only be the last"),
        (with_changes(topology={"levels": []}), "x", "kueue-aks:topology.levels: is an empty list; allowed: 1 or more node label keys"),
        (with_changes(topology={"level": ["a"]}), "x", "kueue-aks:topology.level: unknown key (did you mean 'levels'?)"),
    ],
)
def test_bad_config_names_the_key_and_what_is_allowed(raw: dict[str, Any], location: str | None, expected: str) -> None:
    problems = refused(parse_config, raw, stack="test", location=location).lines
    assert any(p.startswith(expected) for p in problems), problems


# --- topology-aware pools ------------------------------------------------------------------


@pytest.mark.parametrize(("min_count", "max_count"), [(0, 2), (1, 3), (4, 5)])
def test_autoscaled_topology_pool_needs_provisioning_request(min_count: int, max_count: int) -> None:
    raw = with_changes(nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count}])
    with pytest.raises(ConfigError) as err:
        parse(raw)
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[0].minCount"
    assert problem.message.startswith(
        f"{min_count} is below maxCount ({max_count}) on a topology-aware pool without provisioningRequest: "
        "topology-aware scheduling places pods only on nodes that exist, ")
    # It says what to add, and the other way out.
    assert "needs provisioningRequest: true" in problem.message
    assert "minCount == maxCount" in problem.message
    # Saying it explicitly false is the same mistake.
    with pytest.raises(ConfigError) as err:
        parse(with_changes(nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count,
                                       "provisioningRequest": False}]))
    assert [p.path for p in err.value.problems] == ["kueue-aks:nodePools[0].minCount"]


@pytest.mark.parametrize(("min_count", "max_count"), [(0, 2), (1, 3)])
def test_autoscaled_topology_pool_with_provisioning_request_is_accepted(min_count: int, max_count: int) -> None:
    pool = parse(with_changes(nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count,
                                          "provisioningRequest": True}])).pool("tas")
    assert (pool.min_count, pool.max_count, pool.topology, pool.provisioning_request) == (min_count, max_count, True, True)


def test_provisioning_request_default_is_autoscaled_gpu_pools_only() -> None:
    pools = [
        {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 4},
        {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 3},
        {"name": "gpufixed", "vmSize": "Standard_NC4as_T4_v3", "minCount": 2, "maxCount": 2},
        {"name": "gputas", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 2, "topology": True},
        {"name": "gpuoff", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 2, "provisioningRequest": False},
        {"name": "cpuon", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 2, "provisioningRequest": True},
    ]
    config = parse(with_changes(nodePools=pools))
    assert {p.name: p.provisioning_request for p in config.node_pools} == {
        "cpu": False, "gpu": True, "gpufixed": False, "gputas": True, "gpuoff": False, "cpuon": True}


def test_provisioning_request_on_a_fixed_size_pool_is_an_error() -> None:
    with pytest.raises(ConfigError) as err:
        parse(with_changes(nodePools=[{"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "minCount": 2, "maxCount": 2,
                                       "provisioningRequest": True}]))
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[0].provisioningRequest"
    assert "fixed-size" in problem.message and "minCount < maxCount" in problem.message


@pytest.mark.parametrize(("version", "ok"), [("1.32", False), ("1.30.4", False), ("1.33", True), ("1.34.1", True)])
def test_provisioning_request_needs_kubernetes_1_33(version: str, ok: bool) -> None:
    # A patch pin needs a channel that keeps it (tests/cluster/test_azure_rules.py).
    raw = with_changes(cluster={"kubernetesVersion": version, "autoUpgradeChannel": "none"},
                       nodePools=[{"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
                                  {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 3}])
    if ok:
        assert parse(raw).pool("gpu").provisioning_request
        return
    with pytest.raises(ConfigError) as err:
        parse(raw)
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[1].provisioningRequest"
    assert "Kubernetes 1.33" in problem.message and "kueue-aks:cluster.kubernetesVersion" in problem.message
    assert "provisioningRequest: false" in problem.message
    # With it off, the same version is fine.
    raw["nodePools"][1]["provisioningRequest"] = False
    assert not parse(raw).pool("gpu").provisioning_request


@pytest.mark.parametrize("count", [1, 2, 40])
def test_fixed_size_topology_aware_pool_is_accepted(count: int) -> None:
    pool = parse(with_changes(nodePools=[{**TAS_POOL, "minCount": count, "maxCount": count}])).pool("tas")
    assert (pool.min_count, pool.max_count, pool.topology) == (count, count, True)


def test_only_topology_aware_pools_must_be_fixed_size() -> None:
    raw = with_changes(nodePools=[{**TAS_POOL, "minCount": 0, "maxCount": 5, "topology": False}])
    assert parse(raw).pool("tas").min_count == 0


def test_team_may_not_take_the_name_of_another_teams_topology_queue() -> None:
    # Listed first or last: the clash is reported at the `-topology` team, whatever the order.
    for teams, index in (([{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}], 1),
                         ([{"name": "a-topology", "share": 10}, {"name": "a", "share": 50}], 0)):
        problems = refused(parse_config, with_changes(nodePools=[MINIMAL["nodePools"][0], TAS_POOL], teams=teams), stack="test", location="eastus2").lines
        assert problems == [f"kueue-aks:teams[{index}].name: 'a-topology' is the name of team 'a''s ClusterQueue "
                            "for its topology-aware pools; choose another team name"]


def test_topology_suffix_is_free_when_that_team_has_no_topology_aware_pool() -> None:
    teams = [{"name": "a", "share": 50, "pools": ["cpu"]}, {"name": "a-topology", "share": 10}]
    # Team a uses only the ordinary pool, so it has no ClusterQueue "a-topology" to clash with.
    cfg = parse(with_changes(nodePools=[MINIMAL["nodePools"][0], TAS_POOL], teams=teams))
    assert [t.name for t in cfg.teams] == ["a", "a-topology"]
    cfg = parse(with_changes(teams=[{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}]))
    assert [t.name for t in cfg.teams] == ["a", "a-topology"]


@pytest.mark.parametrize("name", [["a"], {"a": 1}])
def test_a_team_name_that_is_no_string_is_a_config_error(name: Any) -> None:
    assert refused(parse_config, with_changes(teams=[{"name": name, "share": 10}]), stack="test", location="eastus2").lines[0].startswith("kueue-aks:teams[0].name: ")


# --- governance ----------------------------------------------------------------------------

# Pools of every kind: plain CPU, GPU (default taint), spot GPU (AKS's taint), custom taints.
GOVERNANCE_POOLS: list[dict[str, Any]] = [
    MINIMAL["nodePools"][0],
    {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 1},
    {"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True},
    {"name": "tainted", "vmSize": "Standard_E8s_v5", "maxCount": 2, "taints": ["dedicated=batch:NoSchedule"]},
    TAS_POOL,
]


def test_queued_taint_constant() -> None:
    assert QUEUED_TAINT == QUEUED


def test_governance_is_on_by_default_and_exempts_only_system_namespaces() -> None:
    cfg = parse(with_changes(nodePools=GOVERNANCE_POOLS))
    assert cfg.governance == Governance(enforce=True, exempt_namespaces=())
    assert cfg.governance.exempt == ("kube-system", "nvidia-device-plugin")
    for pool in cfg.node_pools:
        assert pool.governed, pool.name
        # The queued taint comes last, after the configured and AKS's taints, exactly once.
        assert [str(t) for t in pool.node_taints][-1] == QUEUED, pool.name
        assert [str(t) for t in pool.node_taints].count(QUEUED) == 1, pool.name
        assert QUEUED not in [str(t) for t in pool.taints], pool.name  # not a configured taint
    assert [str(t) for t in cfg.pool("cpu").node_taints] == [QUEUED]
    assert [str(t) for t in cfg.pool("tainted").node_taints] == ["dedicated=batch:NoSchedule", QUEUED]
    # Written explicitly, the defaults give the same config.
    explicit = parse(with_changes(nodePools=GOVERNANCE_POOLS, governance={"enforce": True, "exemptNamespaces": []}))
    assert explicit == cfg


def test_enforce_false_removes_the_queued_taint_from_every_pool() -> None:
    governed = parse(with_changes(nodePools=GOVERNANCE_POOLS))
    cfg = parse(with_changes(nodePools=GOVERNANCE_POOLS, governance={"enforce": False}))
    assert cfg.governance.enforce is False
    for pool, before in zip(cfg.node_pools, governed.node_pools, strict=True):
        assert not pool.governed, pool.name
        assert QUEUED not in [str(t) for t in pool.node_taints], pool.name
        # Only the queued taint goes; every other taint stays, in order.
        assert pool.node_taints == before.node_taints[:-1], pool.name
    assert cfg.pool("cpu").node_taints == ()
    assert [str(t) for t in cfg.pool("gpuspot").node_taints] == [
        "nvidia.com/gpu=present:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]


def test_a_configured_queued_taint_is_not_doubled() -> None:
    pools = [{**MINIMAL["nodePools"][0], "taints": [QUEUED, "dedicated=batch:NoSchedule"]}]
    pool = parse(with_changes(nodePools=pools)).pool("cpu")
    assert [str(t) for t in pool.node_taints] == [QUEUED, "dedicated=batch:NoSchedule"]


def test_exempt_namespaces_come_after_the_system_ones() -> None:
    cfg = parse(with_changes(governance={"exemptNamespaces": ["monitoring", "ingress-nginx"]}))
    assert cfg.governance.exempt_namespaces == ("monitoring", "ingress-nginx")
    assert cfg.governance.exempt == ("kube-system", "nvidia-device-plugin", "monitoring", "ingress-nginx")
    # A system namespace listed again is not exempted twice.
    again = parse(with_changes(governance={"exemptNamespaces": ["monitoring", "kube-system"]}))
    assert again.governance.exempt == ("kube-system", "nvidia-device-plugin", "monitoring")
    # Exemption does not turn governance off: the pools keep the queued taint.
    assert [str(t) for t in cfg.pool("cpu").node_taints] == [QUEUED]


@pytest.mark.parametrize(
    ("governance", "expected"),
    [
        ({"enfore": False}, "kueue-aks:governance.enfore: unknown key (did you mean 'enforce'?); "
                            "allowed keys: enforce, exemptNamespaces"),
        ({"exemptNamespace": ["monitoring"]}, "kueue-aks:governance.exemptNamespace: unknown key "
                                              "(did you mean 'exemptNamespaces'?); allowed keys: enforce, exemptNamespaces"),
        ("off", "kueue-aks:governance: must be an object with keys enforce, exemptNamespaces; got a string"),
        ({"enforce": "false"}, "kueue-aks:governance.enforce: must be true or false; got a string 'false' (the Pulumi CLI reads yes, no, on "
         "and off as text, and quoted words are text: write true or false, unquoted)"),
        ({"enforce": 0}, "kueue-aks:governance.enforce: must be true or false; got an integer 0"),
        ({"exemptNamespaces": "monitoring"},
         "kueue-aks:governance.exemptNamespaces: must be a list of namespace names; got a string"),
        ({"exemptNamespaces": ["monitoring", "Ingress"]},
         "kueue-aks:governance.exemptNamespaces[1]: 'Ingress' is not a namespace name (a DNS-1123 label)"),
        ({"exemptNamespaces": [7]}, "kueue-aks:governance.exemptNamespaces[0]: must be a string; got an integer 7"),
        ({"exemptNamespaces": ["monitoring", "ingress", "monitoring"]},
         "kueue-aks:governance.exemptNamespaces[2]: 'monitoring' is listed twice"),
        ({"exemptNamespaces": ["monitoring", "research"]},
         "kueue-aks:governance.exemptNamespaces[1]: 'research' is a team namespace; its pods are queued by Kueue "
         "and cannot be exempt"),
    ],
)
def test_bad_governance_names_the_key_and_what_is_allowed(governance: Any, expected: str) -> None:
    # Exactly one problem, at exactly this key path, with exactly this message.
    assert refused(parse_config, with_changes(governance=governance), stack="test", location="eastus2").lines == [expected]


def test_governance_problems_are_reported_with_the_others() -> None:
    raw = with_changes(governance={"enforce": "yes", "exemptNamespaces": ["research", "A"]}, kueue={"replicas": 0})
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert [p.path for p in err.value.problems] == [
        "kueue-aks:kueue.replicas",
        "kueue-aks:governance.enforce",
        "kueue-aks:governance.exemptNamespaces[0]",
        "kueue-aks:governance.exemptNamespaces[1]",
    ]


def test_every_problem_is_reported_at_once() -> None:
    raw = {
        "nodePools": [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 0}, {"name": "g", "vmSize": "nope", "maxCount": 1}],
        "teams": [{"name": "a", "share": 70}, {"name": "b", "share": 70}],
        "kueue": {"featureGates": {"Nope": True}},
        "cluster": {"tier": "Gold"},
    }
    with pytest.raises(ConfigError) as err:
        parse(raw, location=None)
    assert [p.path for p in err.value.problems] == [
        "azure-native:location",
        "kueue-aks:cluster.tier",
        "kueue-aks:nodePools[0].maxCount",
        "kueue-aks:nodePools[1].vmSize",
        "kueue-aks:kueue.featureGates.Nope",
        "kueue-aks:teams",
    ]


def test_config_error_message_lists_every_problem() -> None:
    with pytest.raises(ConfigError) as err:
        parse(with_changes(teams=[{"name": "a", "share": 101}], kueue={"replicas": 99}))
    text = str(err.value)
    assert text.startswith("stack config has 2 problems:")
    assert "kueue-aks:teams[0].share" in text and "kueue-aks:kueue.replicas" in text


# --- properties ----------------------------------------------------------------------------

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2000) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
_pool = st.fixed_dictionaries(
    {"name": st.sampled_from(["cpu", "gpu", "Bad", "system", ""]),
     "vmSize": st.sampled_from(["Standard_D16s_v5", "Standard_NC4as_T4_v3", "Standard_Nope", 7]),
     "maxCount": st.integers(-1, 1001) | _values},
    optional={"minCount": st.integers(-1, 5) | _values, "spot": _values, "taints": _values, "labels": _values,
              "topology": st.booleans() | _values, "capacity": _values, "extra": _values},
)


# Names that are a team ("a"), fine ("mon"), or invalid ("A", ""), mixed with anything else.
_governance = st.fixed_dictionaries({}, optional={
    "enforce": st.booleans() | _values,
    "exemptNamespaces": st.lists(st.sampled_from(["a", "mon", "A", ""]) | _values, max_size=3) | _values,
})


@settings(max_examples=200, deadline=None)
@given(
    pools=st.lists(_pool, max_size=3) | _values,
    teams=st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "A"]), "share": st.integers(-5, 120) | _values},
                                         optional={"pools": _values}), max_size=3) | _values,
    cluster=_values,
    kueue=_values,
    governance=_values | _governance,
)
def test_any_input_gives_a_config_or_a_config_error(pools: Any, teams: Any, cluster: Any, kueue: Any, governance: Any) -> None:
    """Whatever the YAML holds, the user sees a StackConfig or a ConfigError, never a traceback."""
    raw = {"nodePools": pools, "teams": teams, "cluster": cluster, "kueue": kueue, "governance": governance}
    try:
        cfg = parse(raw)
    except ConfigError as err:
        assert err.problems and all(p.path.startswith("kueue-aks:") for p in err.problems)
    else:
        assert sum(t.share for t in cfg.teams) <= 100
        assert all(p.max_count >= max(1, p.min_count) for p in cfg.node_pools)
        assert all(p.min_count == p.max_count for p in cfg.node_pools if p.topology)
        assert all(p.governed == cfg.governance.enforce for p in cfg.node_pools)
        assert not {t.name for t in cfg.teams} & set(cfg.governance.exempt)  # a team is never exempt


@settings(max_examples=100, deadline=None)
@given(shares=st.lists(st.decimals(min_value=Decimal("0.1"), max_value=100, places=1), min_size=1, max_size=6))
def test_shares_are_accepted_exactly_when_they_fit(shares: list[Decimal]) -> None:
    raw = with_changes(teams=[{"name": f"t{i}", "share": float(s)} for i, s in enumerate(shares)])
    if sum(shares) <= 100:
        assert len(parse(raw).teams) == len(shares)
    else:
        assert any(p.startswith("kueue-aks:teams: shares add up to") for p in refused(parse_config, raw, stack="test", location="eastus2").lines)


# --- monitoring ----------------------------------------------------------------------------

WORKSPACE_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Monitor/accounts/amw-1"
GRAFANA_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Dashboard/grafana/g-1"
KUBECONFIG = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "https://k"}}],
                             "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "current-context": "c",
                             "users": [{"name": "u", "user": {"token": "t"}}]})


def test_monitoring_is_off_by_default_and_the_dev_stack_turns_it_on(dev_config: Any) -> None:
    assert parse(MINIMAL).monitoring == MonitoringSettings()
    assert not MonitoringSettings().enabled
    assert dev_config.monitoring == MonitoringSettings(enabled=True)


def test_monitoring_takes_existing_azure_resources_by_id() -> None:
    cfg = parse(with_changes(monitoring={"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID, "grafanaId": GRAFANA_ID}))
    assert cfg.monitoring == MonitoringSettings(enabled=True, workspace_id=WORKSPACE_ID, grafana_id=GRAFANA_ID)


def test_kubeconfig_mode_monitors_with_a_service_monitor() -> None:
    cfg = parse(with_changes(cluster={"kubeconfig": KUBECONFIG}, monitoring={"enabled": True, "serviceMonitor": True}),
                location=None)
    assert cfg.monitoring == MonitoringSettings(enabled=True, service_monitor=True)


@pytest.mark.parametrize(("monitoring", "cluster", "expected"), [
    ({"enabled": "yes"}, {}, "kueue-aks:monitoring.enabled: must be true or false"),
    ({"enable": True}, {}, "kueue-aks:monitoring.enable: unknown key (did you mean 'enabled'?)"),
    ({"enabled": True, "azureMonitorWorkspaceId": GRAFANA_ID}, {},
     "kueue-aks:monitoring.azureMonitorWorkspaceId: '/subscriptions/"),
    ({"enabled": True, "grafanaId": "g-1"}, {},
     "kueue-aks:monitoring.grafanaId: 'g-1' is not allowed (an Azure Managed Grafana's resource ID"),
    ({"grafanaId": GRAFANA_ID}, {}, "kueue-aks:monitoring.grafanaId: has no effect while monitoring.enabled is false"),
    ({"enabled": True, "serviceMonitor": True}, {}, "kueue-aks:monitoring.serviceMonitor: is for cluster.kubeconfig stacks"),
    ({"enabled": True, "grafanaId": GRAFANA_ID}, {"kubeconfig": KUBECONFIG},
     "kueue-aks:monitoring.grafanaId: is Azure monitoring; a cluster.kubeconfig stack creates nothing in Azure"),
    ({"enabled": True, "grafanaId": GRAFANA_ID, "grafanaAdminGroupObjectIds": []}, {},
     "kueue-aks:monitoring.grafanaAdminGroupObjectIds: is for a Grafana the stack creates"),
    ({"enabled": True, "grafanaAdminGroupObjectIds": ["admins"]}, {},
     "kueue-aks:monitoring.grafanaAdminGroupObjectIds[0]: 'admins' is not allowed (an Entra ID group's object ID"),
    ({"enabled": True}, {"existing": {"resourceGroup": "rg", "name": "aks"}},
     "kueue-aks:monitoring.azureMonitorWorkspaceId: is required with cluster.existing"),
])
def test_bad_monitoring_names_the_key_and_what_is_allowed(monitoring: Any, cluster: Any, expected: str) -> None:
    problems = refused(parse_config, with_changes(cluster=cluster, monitoring=monitoring), stack="test", location=None if cluster else "eastus2").lines
    assert any(p.startswith(expected) for p in problems), problems


def test_grafana_admins_default_to_the_cluster_admins() -> None:
    group, other = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
    cluster = {"adminGroupObjectIds": [group]}
    assert parse(with_changes(cluster=cluster, monitoring={"enabled": True})).monitoring.grafana_admin_group_ids == (group,)
    own = parse(with_changes(cluster=cluster, monitoring={"enabled": True, "grafanaAdminGroupObjectIds": [other]}))
    assert own.monitoring.grafana_admin_group_ids == (other,)
    assert parse(with_changes(cluster=cluster)).monitoring == MonitoringSettings()  # off: nothing carried over


def test_monitoring_needs_the_local_queue_metrics_gate() -> None:
    problems = refused(parse_config, with_changes(kueue={"featureGates": {"LocalQueueMetrics": False}}, monitoring={"enabled": True}), stack="test", location="eastus2").lines
    assert problems == ["kueue-aks:monitoring.enabled: needs Kueue's LocalQueueMetrics feature gate: the dashboard's team "
                        "variable and LocalQueue panels read its series; enable the gate in kueue.featureGates"]
    assert parse(with_changes(kueue={"featureGates": {"LocalQueueMetrics": False}})).monitoring == MonitoringSettings()


def test_team_members_parse_and_kueue_install_names_a_mistake() -> None:
    """The contract's keys for team access and AKS's managed Kueue: members are group object IDs
    (tests/access has the rest); install: helm and aksExtension parse (tests/kueue/test_extension.py
    has the rest); a malformed group ID and an unknown install are errors that name the key."""
    group = "11111111-2222-3333-4444-555555555555"
    teams = [{"name": "research", "share": 50, "members": [group]}, {"name": "platform", "share": 50, "members": []}]
    assert [t.members for t in parse(with_changes(teams=teams, kueue={"install": "helm"})).teams] == [(group,), ()]
    problems = refused(parse_config, with_changes(
        teams=[{"name": "research", "share": 50, "members": [group]},
               {"name": "platform", "share": 50, "members": ["not-a-guid"]}],
        kueue={"install": "extension"}), stack="test", location="eastus2").lines
    assert not any(p.startswith("kueue-aks:teams[0]") for p in problems), problems
    assert any(p.startswith("kueue-aks:teams[1].members[0]: ") and "object ID" in p for p in problems), problems
    assert any(p.startswith("kueue-aks:kueue.install: 'extension' is not allowed") and "one of: helm | aksExtension" in p
               for p in problems), problems


# --- no silent GPU loss (issue 37) ----------------------------------------------------------


def _pool(vm_size: str, capacity: dict[str, Any] | None = None, max_count: int = 4) -> dict[str, Any]:
    return with_changes(nodePools=[{"name": "gpu", "vmSize": vm_size, "maxCount": max_count,
                                    **({"capacity": capacity} if capacity is not None else {})}])


@pytest.mark.parametrize(("raw", "path", "words"), [
    # Four A100 nodes become expensive CPUs.
    (_pool("Standard_NC24ads_A100_v4", {"nvidia.com/gpu": 0}), "kueue-aks:nodePools[0].capacity.nvidia.com/gpu",
     ["is 0, but Standard_NC24ads_A100_v4 has 1 × NVIDIA A100 80GB PCIe per node (catalog), 4 GPUs at maxCount 4",
      "no team would get GPU quota", "write nvidia.com/gpu: 1, or choose a CPU size"]),
    (_pool("Standard_ND96isr_H100_v5", {"cpu": "96", "memory": "1900Gi", "nvidia.com/gpu": 0}, 2),
     "kueue-aks:nodePools[0].capacity.nvidia.com/gpu", ["16 GPUs at maxCount 2", "write nvidia.com/gpu: 8"]),
    # An override of a catalog GPU size states the GPUs.
    (_pool("Standard_NC24ads_A100_v4", {"memory": "200Gi"}), "kueue-aks:nodePools[0].capacity",
     ["overrides a GPU size without nvidia.com/gpu", "add nvidia.com/gpu: 1"]),
    # A GPU-family size the catalog does not know, with cpu and memory but no GPU count.
    (_pool("Standard_NC24s_v3", {"cpu": "24", "memory": "448Gi"}), "kueue-aks:nodePools[0].capacity",
     ["Standard_NC24s_v3 is an N-family (GPU) size the catalog does not know", "add nvidia.com/gpu: <GPUs per node>",
      "nvidia.com/gpu: 0 only for a size with no whole NVIDIA GPU"]),
    (_pool("Standard_ND96isr_MI300X_v5", {"cpu": "96", "memory": "1850Gi"}), "kueue-aks:nodePools[0].capacity",
     ["is an N-family (GPU) size"]),
    # A size the catalog lacks: the nearest catalog names and the override to write.
    (_pool("Standard_NC24s_v3"), "kueue-aks:nodePools[0].vmSize",
     ["'Standard_NC24s_v3' is not in the capacity catalog; nearest catalog sizes: Standard_NC4as_T4_v3, ",
      'capacity: {cpu: "<vCPUs>", memory: "<GiB>Gi", nvidia.com/gpu: <GPUs per node>}']),
    (_pool("Standard_D16s_v7"), "kueue-aks:nodePools[0].vmSize",
     ["nearest catalog sizes: Standard_D16s_v6, Standard_D16s_v5, Standard_D16ds_v6",
      'capacity: {cpu: "<vCPUs>", memory: "<GiB>Gi"}']),
    # The 40 GB A100 series' label is not suggested as the 80 GB size it reads like.
    (_pool("Standard_ND96asr_A100_v4"), "kueue-aks:nodePools[0].vmSize",
     ["8 × A100 40 GB is Standard_ND96asr_v4; 8 × A100 80 GB is Standard_ND96amsr_A100_v4"]),
])
def test_a_gpu_pool_never_loses_its_gpus_silently(raw: dict[str, Any], path: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse(raw)
    (problem,) = err.value.problems
    assert problem.path == path, problem
    for w in words:
        assert w in problem.message, problem.message


def test_gpu_counts_stated_in_the_override_are_taken() -> None:
    # A GPU-family size outside the catalog with its GPU count: a GPU pool, with the GPU taint.
    pool = parse(_pool("Standard_NC24s_v3", {"cpu": "24", "memory": "448Gi", "nvidia.com/gpu": 4})).pool("gpu")
    assert (pool.node.vcpus, pool.node.gpus, pool.capacity.gpus) == (24, 4, 16)
    assert pool.is_gpu and [str(t) for t in pool.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    # An explicit 0 is the config saying the size has no whole NVIDIA GPU (an AMD GPU, a slice): a CPU pool.
    amd = parse(_pool("Standard_NG32ads_V620_v1", {"cpu": "32", "memory": "176Gi", "nvidia.com/gpu": 0})).pool("gpu")
    assert not amd.is_gpu and amd.taints == ()
    # A catalog GPU size's own count, restated, is fine; so is an override of a CPU size without GPUs.
    assert parse(_pool("Standard_NC24ads_A100_v4", {"memory": "200Gi", "nvidia.com/gpu": 1})).pool("gpu").capacity.gpus == 4
    assert not parse(_pool("Standard_D16s_v6", {"memory": "60Gi"})).pool("gpu").is_gpu
    # The catalog's GPU slices stay CPU sizes, with or without an override.
    assert not parse(_pool("Standard_NV6ads_A10_v5", {"memory": "50Gi"})).pool("gpu").is_gpu


def test_the_system_pool_is_not_offered_an_override() -> None:
    problems = refused(parse_config, with_changes(cluster={"systemPool": {"vmSize": "Standard_D4s_v7"}}), stack="test", location="eastus2").lines
    (problem,) = [p for p in problems if p.startswith("kueue-aks:cluster.systemPool.vmSize")]
    assert "nearest catalog sizes: Standard_D4s_v6" in problem and "capacity:" not in problem


@pytest.mark.parametrize(("changes", "key"), [
    ({"teams": [{"name": "aks-ml", "share": 50}]}, "kueue-aks:teams[0].name"),
    ({"priorityClasses": [{"name": "normal", "value": 0}, {"name": "aks-high-priority", "value": 1000}]},
     "kueue-aks:priorityClasses[1].name"),
])
def test_names_in_the_aks_prefix_are_refused(changes: dict[str, Any], key: str) -> None:
    """AKS's managed Kueue extension owns every aks-… object (learn.microsoft.com/azure/aks/
    configure-queues-with-automatic-resource-flavors)."""
    problems = refused(parse_config, with_changes(**changes), stack="test", location="eastus2").lines
    assert [p for p in problems if p.startswith(key)] and all("'aks-' prefix" in p for p in problems if p.startswith(key)), problems
    assert parse(with_changes(teams=[{"name": "masks", "share": 50}])).teams[0].name == "masks"  # only the prefix


def test_no_object_of_the_dev_stack_is_in_the_aks_prefix() -> None:
    from components.kueue.objects import build_objects

    names = [o["metadata"]["name"] for o in build_objects(parse(with_changes()))]
    assert names and not [n for n in names if n.startswith("aks-")], names


def test_the_namespace_selector_gate_stays_on_where_it_is_not_locked() -> None:
    """Kueue 0.18.4 lets ManagedJobsNamespaceSelectorAlwaysRespected be turned off; the stack's
    opt-in team namespaces depend on it, so the config refuses it naming the key."""
    problems = refused(parse_config, with_changes(kueue={"version": "0.18.4",
                                               "featureGates": {"ManagedJobsNamespaceSelectorAlwaysRespected": False}}), stack="test", location="eastus2").lines
    assert any(p.startswith("kueue-aks:kueue.featureGates.ManagedJobsNamespaceSelectorAlwaysRespected: must stay true")
               for p in problems), problems
    assert parse(with_changes(kueue={"version": "0.18.4",
                                     "featureGates": {"ManagedJobsNamespaceSelectorAlwaysRespected": True}}))
