"""The pure Kueue-object builders: flavors, cohort, team queues, quotas against capacity."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from components.capacity import lookup_vm_size, pool_capacity
from components.config import StackConfig, parse_config
from components.kueue_objects import (
    API_VERSION,
    COHORT_NAME,
    build_objects,
    flavor_capacity,
    quota_table,
    team_quota,
)
from components.quantity import parse_quantity
from components.validate import validate_objects
from tests.conftest import design_example, load_stack

POOLS = [
    {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 10},
    {"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4, "spot": True},
    {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 3},
    {"name": "tainted", "vmSize": "Standard_E8s_v5", "maxCount": 2, "taints": ["dedicated=batch:NoSchedule", "slow:PreferNoSchedule"]},
]


def config_with(teams: list[dict[str, Any]], pools: list[dict[str, Any]] = POOLS, **extra: Any) -> StackConfig:
    return parse_config({"nodePools": pools, "teams": teams, **extra}, stack="t", location="eastus2")


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def even_teams(n: int) -> list[dict[str, Any]]:
    share = Decimal(100) / n
    return [{"name": f"team{i}", "share": float(share.quantize(Decimal("0.01"), rounding="ROUND_DOWN"))} for i in range(n)]


def test_every_kueue_object_is_v1beta2_with_an_explicit_name() -> None:
    objects = build_objects(config_with([{"name": "a", "share": 50}]))
    kueue = [o for o in objects if o["kind"] != "Namespace"]
    assert {o["apiVersion"] for o in kueue} == {API_VERSION}
    assert all(o["metadata"]["name"] for o in objects)


def test_one_flavor_per_pool_selecting_exactly_that_pool() -> None:
    flavors = by_kind(build_objects(config_with([{"name": "a", "share": 50}])), "ResourceFlavor")
    assert set(flavors) == {"cpu", "gpu", "gpuspot", "tainted"}
    for name, flavor in flavors.items():
        assert flavor["spec"]["nodeLabels"] == {"kubernetes.azure.com/agentpool": name}


def test_tolerations_cover_every_taint_of_the_pool() -> None:
    flavors = by_kind(build_objects(config_with([{"name": "a", "share": 50}])), "ResourceFlavor")
    assert "tolerations" not in flavors["cpu"]["spec"]
    assert flavors["gpu"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    assert flavors["gpuspot"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
    ]
    assert flavors["tainted"]["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
        {"key": "slow", "operator": "Exists", "effect": "PreferNoSchedule"},
    ]


def test_flavor_order_cpu_then_on_demand_gpu_then_spot() -> None:
    cq = by_kind(build_objects(config_with([{"name": "a", "share": 50}])), "ClusterQueue")["a"]
    (group,) = cq["spec"]["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == ["cpu", "tainted", "gpu", "gpuspot"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    for flavor in group["flavors"]:
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    cpu = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert cpu["nvidia.com/gpu"] == 0


def test_cpu_only_cluster_covers_no_gpu() -> None:
    cfg = config_with([{"name": "a", "share": 100}], pools=[POOLS[0]])
    cq = by_kind(build_objects(cfg), "ClusterQueue")["a"]
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu", "memory"]


def test_team_quota_is_its_share_of_pool_capacity_rounded_down() -> None:
    cfg = config_with([{"name": "a", "share": 60}, {"name": "b", "share": 40}])
    cq = by_kind(build_objects(cfg), "ClusterQueue")
    # Standard_NC4as_T4_v3 × 3: 3 GPUs; 60 % of 3 = 1.8 -> 1, 40 % = 1.2 -> 1, cohort keeps 1.
    gpu_quota = {name: {r["name"]: r["nominalQuota"] for f in q["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu"
                        for r in f["resources"]} for name, q in cq.items()}
    assert gpu_quota["a"]["nvidia.com/gpu"] == 1 and gpu_quota["b"]["nvidia.com/gpu"] == 1
    # D16s_v5 × 10: (16000 - 260) m per node = 157400 m; 60 % = 94440 m.
    cpu_flavor = cq["a"]["spec"]["resourceGroups"][0]["flavors"][0]
    assert cpu_flavor["resources"][0] == {"name": "cpu", "nominalQuota": "94440m"}
    cohort = by_kind(build_objects(cfg), "Cohort")[COHORT_NAME]
    gpu_cohort = next(f for f in cohort["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    assert {r["name"]: r["nominalQuota"] for r in gpu_cohort["resources"]}["nvidia.com/gpu"] == 1


@pytest.mark.parametrize("teams", [1, 2, 3, 7, 20])
def test_quotas_add_up_to_no_more_than_capacity(teams: int) -> None:
    cfg = config_with(even_teams(teams))
    objects = build_objects(cfg)
    totals: dict[tuple[str, str], Decimal] = {}
    for holder in [*by_kind(objects, "ClusterQueue").values(), *by_kind(objects, "Cohort").values()]:
        for flavor in holder["spec"]["resourceGroups"][0]["flavors"]:
            for r in flavor["resources"]:
                key = (flavor["name"], r["name"])
                totals[key] = totals.get(key, Decimal(0)) + parse_quantity(r["nominalQuota"])
    for pool in cfg.node_pools:
        cap = pool_capacity(lookup_vm_size(pool.vm_size), pool.max_count)  # type: ignore[arg-type]
        # Teams plus the cohort's remainder hold exactly the pool's allocatable capacity.
        assert totals[(pool.name, "cpu")] == Decimal(cap.cpu_millicores) / 1000
        assert totals[(pool.name, "memory")] == cap.memory_mib * 2**20
        assert totals[(pool.name, "nvidia.com/gpu")] == cap.gpus
        team_cpu = sum(team_quota(cap.cpu_millicores, t.share) for t in cfg.teams)
        assert team_cpu <= cap.cpu_millicores


def test_teams_only_get_flavors_of_their_pools() -> None:
    cfg = config_with([{"name": "a", "share": 50, "pools": ["cpu"]}, {"name": "b", "share": 50}])
    cq = by_kind(build_objects(cfg), "ClusterQueue")
    assert [f["name"] for f in cq["a"]["spec"]["resourceGroups"][0]["flavors"]] == ["cpu"]
    rows = {(r.flavor, r.resource): r for r in quota_table(cfg)}
    # Team a does not use the GPU pool: its half stays with the cohort for b to borrow.
    gpu = rows[("gpu", "nvidia.com/gpu")]
    assert gpu.teams == {"b": 1} and gpu.cohort == 2 and gpu.borrowable("b") == 2


def test_cluster_queue_policy() -> None:
    cfg = config_with([{"name": "research", "share": 60}, {"name": "platform", "share": 40}])
    spec = by_kind(build_objects(cfg), "ClusterQueue")["research"]["spec"]
    assert spec["cohortName"] == COHORT_NAME
    assert spec["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/team": "research"}}
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert spec["fairSharing"] == {"weight": "0.6"}
    assert not any("borrowingLimit" in r or "lendingLimit" in r
                   for f in spec["resourceGroups"][0]["flavors"] for r in f["resources"])


def test_namespaces_local_queues_and_priority_classes() -> None:
    cfg = config_with([{"name": "research", "share": 60}], priorityClasses=[{"name": "urgent", "value": 5000, "description": "now"}])
    objects = build_objects(cfg)
    ns = by_kind(objects, "Namespace")["research"]
    assert ns["apiVersion"] == "v1"
    assert ns["metadata"]["labels"]["kueue-aks.io/team"] == "research"
    assert ns["metadata"]["labels"]["kueue-aks.io/managed"] == "true"
    lq = [o for o in objects if o["kind"] == "LocalQueue"]
    assert [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"]) for o in lq] == [
        ("research", "default", "research")]
    (wpc,) = by_kind(objects, "WorkloadPriorityClass").values()
    assert (wpc["metadata"]["name"], wpc["value"], wpc["description"]) == ("urgent", 5000, "now")
    assert "spec" not in wpc


def test_topology_only_when_a_pool_asks_for_it() -> None:
    assert not by_kind(build_objects(config_with([{"name": "a", "share": 1}])), "Topology")
    pools = [POOLS[0], {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "minCount": 1, "maxCount": 2, "topology": True}]
    objects = build_objects(config_with([{"name": "a", "share": 1}], pools=pools, topology={"levels": ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]}))
    topo = by_kind(objects, "Topology")["default"]
    assert topo["spec"]["levels"] == [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kubernetes.io/hostname"}]
    flavors = by_kind(objects, "ResourceFlavor")
    assert flavors["h100"]["spec"]["topologyName"] == "default"
    assert "topologyName" not in flavors["cpu"]["spec"]


def test_objects_come_in_dependency_order() -> None:
    pools = [POOLS[0], {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "minCount": 1, "maxCount": 2, "topology": True}]
    kinds = [o["kind"] for o in build_objects(config_with([{"name": "a", "share": 1}], pools=pools))]
    first = {k: kinds.index(k) for k in kinds}
    assert first["Namespace"] < first["LocalQueue"]
    assert first["Topology"] < first["ResourceFlavor"] < first["Cohort"] < first["ClusterQueue"] < first["LocalQueue"]


VALIDATED_CONFIGS = {
    "one team": [{"name": "a", "share": 100}],
    "two teams, one on CPU only": [{"name": "a", "share": 50, "pools": ["cpu"]}, {"name": "b", "share": 50}],
    "three teams": even_teams(3),
    "twenty teams": even_teams(20),
}


@pytest.mark.parametrize("teams", VALIDATED_CONFIGS.values(), ids=VALIDATED_CONFIGS.keys())
def test_generated_objects_pass_the_validator_with_crds(teams: list[dict[str, Any]], crds: Any) -> None:
    cfg = config_with(teams)
    assert validate_objects(build_objects(cfg), crds=crds, capacity=flavor_capacity(cfg)) == []


def test_dev_and_contract_example_objects_pass_the_validator(dev_config: StackConfig, crds: Any) -> None:
    for cfg in (dev_config, load_stack(design_example())):
        assert validate_objects(build_objects(cfg), crds=crds, capacity=flavor_capacity(cfg)) == []


def test_the_validator_sees_quota_over_capacity(dev_config: StackConfig, crds: Any) -> None:
    """The capacity check is live on builder output: one more GPU than exists is caught."""
    objects = build_objects(dev_config)
    cohort = next(o for o in objects if o["kind"] == "Cohort")
    gpu = next(f for f in cohort["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    gpu["resources"][2]["nominalQuota"] += 1
    rules = {v.rule for v in validate_objects(objects, crds=crds, capacity=flavor_capacity(dev_config))}
    assert rules == {"CAPACITY"}
