"""The pure Kueue-object builders: flavors, cohort, team queues, quotas against capacity."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from components.facts.capacity import lookup_vm_size, pool_capacity
from components.config.parse import parse_config
from components.config.stack import StackConfig
from components.k8s.resources import format_quantity
from components.kueue.objects import (
    API_VERSION,
    COHORT_NAME,
    build_objects,
    flavor_capacity,
    local_queue_targets,
    most_held,
    quota_table,
    team_queues,
    team_quota,
)
from components.k8s.quantity import parse_quantity
from components.kueue.validate import validate_objects
from testbed.stacks import design_example, load_stack

POOLS = [
    {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 10},
    {"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4, "spot": True},
    {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 3},
    {
        "name": "tainted",
        "vmSize": "Standard_E8s_v5",
        "maxCount": 2,
        "taints": ["dedicated=batch:NoSchedule", "slow:PreferNoSchedule"],
    },
]
# Topology-aware pools, fixed-size as the config requires (minCount == maxCount).
TAS_CPU = {"name": "tascpu", "vmSize": "Standard_D8s_v5", "minCount": 2, "maxCount": 2, "topology": True}
TAS_GPU = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "minCount": 2, "maxCount": 2, "topology": True}
MIXED_POOLS = [*POOLS, TAS_CPU, TAS_GPU]


def config_with(teams: list[dict[str, Any]], pools: list[dict[str, Any]] = POOLS, **extra: Any) -> StackConfig:
    return parse_config({"nodePools": pools, "teams": teams, **extra}, stack="t", location="eastus2")


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def even_teams(n: int) -> list[dict[str, Any]]:
    share = Decimal(100) / n
    return [
        {"name": f"team{i}", "share": float(share.quantize(Decimal("0.01"), rounding="ROUND_DOWN"))} for i in range(n)
    ]


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


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
SPOT_TOLERATION = {
    "key": "kubernetes.azure.com/scalesetpriority",
    "operator": "Equal",
    "value": "spot",
    "effect": "NoSchedule",
}
# Governance (on by default) taints every user pool; Kueue gives admitted pods the flavor's tolerations.
QUEUED_TOLERATION = {"key": "kueue-aks.io/queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def test_tolerations_cover_every_taint_of_the_pool() -> None:
    flavors = by_kind(build_objects(config_with([{"name": "a", "share": 50}], MIXED_POOLS)), "ResourceFlavor")
    assert flavors["cpu"]["spec"]["tolerations"] == [QUEUED_TOLERATION]
    assert flavors["gpu"]["spec"]["tolerations"] == [GPU_TOLERATION, QUEUED_TOLERATION]
    assert flavors["gpuspot"]["spec"]["tolerations"] == [GPU_TOLERATION, SPOT_TOLERATION, QUEUED_TOLERATION]
    assert flavors["tainted"]["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
        {"key": "slow", "operator": "Exists", "effect": "PreferNoSchedule"},
        QUEUED_TOLERATION,
    ]
    # Topology-aware pools' flavors too: their pods reach the nodes only through Kueue as well.
    assert flavors["tascpu"]["spec"]["tolerations"] == [QUEUED_TOLERATION]
    assert flavors["h100"]["spec"]["tolerations"] == [GPU_TOLERATION, QUEUED_TOLERATION]


def test_without_governance_flavors_tolerate_only_the_pools_own_taints() -> None:
    cfg = config_with([{"name": "a", "share": 50}], MIXED_POOLS, governance={"enforce": False})
    flavors = by_kind(build_objects(cfg), "ResourceFlavor")
    assert "tolerations" not in flavors["cpu"]["spec"] and "tolerations" not in flavors["tascpu"]["spec"]
    assert flavors["gpu"]["spec"]["tolerations"] == [GPU_TOLERATION]
    assert flavors["gpuspot"]["spec"]["tolerations"] == [GPU_TOLERATION, SPOT_TOLERATION]
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
    assert cpu["nvidia.com/gpu"] == "0"  # a string, as the API server returns it


def test_cpu_only_cluster_covers_no_gpu() -> None:
    cfg = config_with([{"name": "a", "share": 100}], pools=[POOLS[0]])
    cq = by_kind(build_objects(cfg), "ClusterQueue")["a"]
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu", "memory"]


def test_team_quota_is_its_share_of_pool_capacity_rounded_down() -> None:
    cfg = config_with([{"name": "a", "share": 60}, {"name": "b", "share": 40}])
    cq = by_kind(build_objects(cfg), "ClusterQueue")
    # Standard_NC4as_T4_v3 × 3: 3 GPUs; 60 % of 3 = 1.8 -> 1, 40 % = 1.2 -> 1, cohort keeps 1.
    gpu_quota = {
        name: {
            r["name"]: r["nominalQuota"]
            for f in q["spec"]["resourceGroups"][0]["flavors"]
            if f["name"] == "gpu"
            for r in f["resources"]
        }
        for name, q in cq.items()
    }
    assert gpu_quota["a"]["nvidia.com/gpu"] == "1" and gpu_quota["b"]["nvidia.com/gpu"] == "1"
    # D16s_v5 × 10: (16000 - 260) m per node = 157400 m; 60 % = 94440 m.
    cpu_flavor = cq["a"]["spec"]["resourceGroups"][0]["flavors"][0]
    assert cpu_flavor["resources"][0] == {"name": "cpu", "nominalQuota": "94440m"}
    cohort = by_kind(build_objects(cfg), "Cohort")[COHORT_NAME]
    gpu_cohort = next(f for f in cohort["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    assert {r["name"]: r["nominalQuota"] for r in gpu_cohort["resources"]}["nvidia.com/gpu"] == "1"


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


FINE_SPLITS = {
    "three ways to 10 decimals": ["33.3333333333"] * 3,
    "the smallest share beside the rest": ["0.01", "99.99"],
    "ten decimals that do not add up": ["12.3456789012", "45.6789012345", "41.9754198643"],
}


@pytest.mark.parametrize("shares", FINE_SPLITS.values(), ids=FINE_SPLITS.keys())
def test_fine_shares_give_quantities_kubernetes_holds_and_never_more_than_the_pool(
    shares: list[str], crds: Any
) -> None:
    """A share may have 10 decimals; a quantity holds 9 (1n). Quotas round down, the weight to the
    nearest nano, and the result passes the pinned CRDs' schema and the capacity check."""
    cfg = config_with([{"name": f"t{i}", "share": float(s)} for i, s in enumerate(shares)])  # as JSON gives it
    objects = build_objects(cfg)
    weights = {
        name: parse_quantity(q["spec"]["fairSharing"]["weight"]) for name, q in by_kind(objects, "ClusterQueue").items()
    }
    for i, share in enumerate(shares):
        assert abs(weights[f"t{i}"] - Decimal(share) / 100) <= Decimal("0.5e-9"), weights
    for row in quota_table(cfg):
        assert sum(row.teams.values()) <= row.capacity and row.cohort >= 0, row
    assert validate_objects(objects, crds=crds, capacity=flavor_capacity(cfg)) == []


def test_teams_only_get_flavors_of_their_pools() -> None:
    cfg = config_with([{"name": "a", "share": 50, "pools": ["cpu"]}, {"name": "b", "share": 50}])
    cq = by_kind(build_objects(cfg), "ClusterQueue")
    assert [f["name"] for f in cq["a"]["spec"]["resourceGroups"][0]["flavors"]] == ["cpu"]
    rows = {(r.flavor, r.resource): r for r in quota_table(cfg)}
    # Team a does not use the GPU pool: its half stays with the cohort for b to borrow.
    gpu = rows[("gpu", "nvidia.com/gpu")]
    assert gpu.teams == {"b": 1} and gpu.cohort == 2 and most_held(gpu, cfg.teams[1]) == 3


def test_cluster_queue_policy() -> None:
    cfg = config_with([{"name": "research", "share": 60}, {"name": "platform", "share": 40}])
    spec = by_kind(build_objects(cfg), "ClusterQueue")["research"]["spec"]
    assert spec["cohortName"] == COHORT_NAME
    assert spec["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/team": "research"}}
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert spec["fairSharing"] == {"weight": "600m"}  # 0.6 in canonical form
    # No limits unless a team sets `borrowing`: it may borrow all its cohort leaves idle.
    assert not any(
        "borrowingLimit" in r or "lendingLimit" in r
        for f in spec["resourceGroups"][0]["flavors"]
        for r in f["resources"]
    )
    limited = config_with([{"name": "research", "share": 60, "borrowing": 2}, {"name": "platform", "share": 40}])
    spec = by_kind(build_objects(limited), "ClusterQueue")["research"]["spec"]
    # Every resource with a quota may borrow twice it, one without (the CPU pools' GPUs) has no
    # limit; nothing limits lending.
    resources = [r for f in spec["resourceGroups"][0]["flavors"] for r in f["resources"]]
    held = [r for r in resources if parse_quantity(r["nominalQuota"]) > 0]
    assert held and all(parse_quantity(r["borrowingLimit"]) == 2 * parse_quantity(r["nominalQuota"]) for r in held)
    assert len(held) < len(resources) and not any("borrowingLimit" in r for r in resources if r not in held)
    assert not any("lendingLimit" in r for r in resources)


A100S = [{"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 24}]  # 24 GPUs, one a node


@pytest.mark.parametrize(
    ("borrowing", "limit", "most"),
    [
        ({}, None, 24),  # the default: no limit, the whole pool while the others are idle
        ({"borrowing": 2}, "8", 12),  # twice research's 4 GPUs (20 % of 24), so 12 at most
        ({"borrowing": 1}, "4", 8),
        ({"borrowing": 0.5}, "2", 6),
        ({"borrowing": 0}, "0", 4),  # its quota and nothing more
        ({"borrowing": "unlimited"}, None, 24),
    ],
)
def test_a_team_borrows_up_to_its_borrowing_times_its_quota(
    borrowing: dict[str, Any], limit: str | None, most: int, crds: Any
) -> None:
    cfg = config_with(
        [
            {"name": "research", "share": 20, **borrowing},
            {"name": "vision", "share": 50, "borrowing": 2},
            {"name": "tiny", "share": 2, "borrowing": 2},
        ],
        pools=A100S,
    )
    queues = by_kind(build_objects(cfg), "ClusterQueue")
    gpu = {
        q: next(
            r
            for f in queues[q]["spec"]["resourceGroups"][0]["flavors"]
            for r in f["resources"]
            if r["name"] == "nvidia.com/gpu"
        )
        for q in queues
    }
    assert gpu["research"]["nominalQuota"] == "4" and gpu["research"].get("borrowingLimit") == limit
    assert gpu["vision"] == {"name": "nvidia.com/gpu", "nominalQuota": "12", "borrowingLimit": "24"}
    # 2 % of 24 rounds down to 0 GPUs: a limit would shut it out, so it borrows without one.
    assert gpu["tiny"] == {"name": "nvidia.com/gpu", "nominalQuota": "0"}
    row = next(r for r in quota_table(cfg) if r.resource == "nvidia.com/gpu")
    research, vision, tiny = cfg.teams
    assert (most_held(row, research), most_held(row, vision), most_held(row, tiny)) == (most, 24, 24)
    assert validate_objects(build_objects(cfg), crds=crds, capacity=flavor_capacity(cfg)) == []


def test_namespaces_local_queues_and_priority_classes() -> None:
    cfg = config_with(
        [{"name": "research", "share": 60}], priorityClasses=[{"name": "urgent", "value": 5000, "description": "now"}]
    )
    objects = build_objects(cfg)
    ns = by_kind(objects, "Namespace")["research"]
    assert ns["apiVersion"] == "v1"
    assert ns["metadata"]["labels"]["kueue-aks.io/team"] == "research"
    assert ns["metadata"]["labels"]["kueue-aks.io/managed"] == "true"
    lq = [o for o in objects if o["kind"] == "LocalQueue"]
    assert [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"]) for o in lq] == [
        ("research", "default", "research")
    ]
    (wpc,) = by_kind(objects, "WorkloadPriorityClass").values()
    assert (wpc["metadata"]["name"], wpc["value"], wpc["description"]) == ("urgent", 5000, "now")
    assert "spec" not in wpc


def test_topology_only_when_a_pool_asks_for_it() -> None:
    assert not by_kind(build_objects(config_with([{"name": "a", "share": 1}])), "Topology")
    pools = [POOLS[0], TAS_GPU]
    objects = build_objects(
        config_with(
            [{"name": "a", "share": 1}],
            pools=pools,
            topology={"levels": ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]},
        )
    )
    topo = by_kind(objects, "Topology")["default"]
    assert topo["spec"]["levels"] == [
        {"nodeLabel": "topology.kubernetes.io/zone"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    flavors = by_kind(objects, "ResourceFlavor")
    assert flavors["h100"]["spec"]["topologyName"] == "default"
    assert "topologyName" not in flavors["cpu"]["spec"]


def test_objects_come_in_dependency_order() -> None:
    pools = [POOLS[0], TAS_GPU]
    kinds = [o["kind"] for o in build_objects(config_with([{"name": "a", "share": 1}], pools=pools))]
    first = {k: kinds.index(k) for k in kinds}
    assert first["Namespace"] < first["LocalQueue"]
    assert first["Topology"] < first["ResourceFlavor"] < first["Cohort"] < first["ClusterQueue"] < first["LocalQueue"]
    # Team a has two ClusterQueues here (a, a-topology): both exist before any LocalQueue names them.
    assert kinds.count("ClusterQueue") == 2
    assert max(i for i, k in enumerate(kinds) if k == "ClusterQueue") < first["LocalQueue"]


# --- one ClusterQueue per kind of pool ---------------------------------------------------------


def flavor_names(cq: dict[str, Any]) -> list[str]:
    return [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]]


def local_queues(objects: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) -> the ClusterQueue it feeds."""
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
        for o in objects
        if o["kind"] == "LocalQueue"
    }


def test_team_with_only_ordinary_pools_gets_one_queue_and_local_queue_default() -> None:
    cfg = config_with([{"name": "a", "share": 50}, {"name": "b", "share": 50}])
    objects = build_objects(cfg)
    assert set(by_kind(objects, "ClusterQueue")) == {"a", "b"}
    assert local_queues(objects) == {("a", "default"): "a", ("b", "default"): "b"}
    (queue,) = team_queues(cfg, cfg.teams[0])
    assert (queue.name, queue.topology, queue.pools) == ("a", False, ("cpu", "tainted", "gpu", "gpuspot"))
    assert list(local_queue_targets(cfg, cfg.teams[0])) == ["default"]


def test_team_without_topology_aware_pools_in_a_stack_that_has_some() -> None:
    cfg = config_with(
        [{"name": "a", "share": 50, "pools": ["cpu", "gpu"]}, {"name": "b", "share": 50}], pools=MIXED_POOLS
    )
    objects = build_objects(cfg)
    assert set(by_kind(objects, "ClusterQueue")) == {"a", "b", "b-topology"}
    assert {k: v for k, v in local_queues(objects).items() if k[0] == "a"} == {("a", "default"): "a"}
    assert flavor_names(by_kind(objects, "ClusterQueue")["a"]) == ["cpu", "gpu"]


def test_team_with_both_kinds_gets_a_queue_for_each() -> None:
    cfg = config_with([{"name": "research", "share": 60}, {"name": "platform", "share": 40}], pools=MIXED_POOLS)
    objects = build_objects(cfg)
    cqs = by_kind(objects, "ClusterQueue")
    assert set(cqs) == {"research", "research-topology", "platform", "platform-topology"}
    # Flavor order within each queue: CPU, then on-demand GPU, then spot.
    assert flavor_names(cqs["research"]) == ["cpu", "tainted", "gpu", "gpuspot"]
    assert flavor_names(cqs["research-topology"]) == ["tascpu", "h100"]
    flavors = by_kind(objects, "ResourceFlavor")
    assert not any("topologyName" in flavors[f]["spec"] for f in flavor_names(cqs["research"]))
    assert all(flavors[f]["spec"]["topologyName"] == "default" for f in flavor_names(cqs["research-topology"]))
    # Both queues belong to the team: same namespace, same cohort, same fair-sharing weight.
    for name in ("research", "research-topology"):
        spec = cqs[name]["spec"]
        assert spec["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/team": "research"}}
        assert (spec["cohortName"], spec["fairSharing"]) == (COHORT_NAME, {"weight": "600m"})
    assert local_queues(objects) == {
        ("research", "default"): "research",
        ("research", "topology"): "research-topology",
        ("platform", "default"): "platform",
        ("platform", "topology"): "platform-topology",
    }
    research = cfg.teams[0]
    assert [(q.name, q.topology, q.pools) for q in team_queues(cfg, research)] == [
        ("research", False, ("cpu", "tainted", "gpu", "gpuspot")),
        ("research-topology", True, ("tascpu", "h100")),
    ]
    assert {lq: q.name for lq, q in local_queue_targets(cfg, research).items()} == {
        "default": "research",
        "topology": "research-topology",
    }


def test_team_with_only_topology_aware_pools_gets_only_its_topology_queue() -> None:
    cfg = config_with(
        [{"name": "a", "share": 50}, {"name": "hpc", "share": 20, "pools": ["h100", "tascpu"]}], pools=MIXED_POOLS
    )
    objects = build_objects(cfg)
    cqs = by_kind(objects, "ClusterQueue")
    assert "hpc" not in cqs
    assert flavor_names(cqs["hpc-topology"]) == ["tascpu", "h100"]
    # Jobs that name no queue go to `default`: for this team that is the topology-aware queue.
    assert {k: v for k, v in local_queues(objects).items() if k[0] == "hpc"} == {
        ("hpc", "default"): "hpc-topology",
        ("hpc", "topology"): "hpc-topology",
    }
    hpc = cfg.teams[1]
    assert [q.name for q in team_queues(cfg, hpc)] == ["hpc-topology"]
    assert {lq: q.name for lq, q in local_queue_targets(cfg, hpc).items()} == {
        "default": "hpc-topology",
        "topology": "hpc-topology",
    }


def test_split_queues_keep_each_flavors_quota() -> None:
    """Splitting a team's pools over two ClusterQueues moves quotas, never changes them: each flavor
    sits in exactly one of the team's queues with its share of capacity; the cohort keeps the rest."""
    cfg = config_with(
        [
            {"name": "research", "share": 60},
            {"name": "platform", "share": 33.3},
            {"name": "hpc", "share": 5, "pools": ["tascpu"]},
        ],
        pools=MIXED_POOLS,
    )
    objects = build_objects(cfg)
    cqs = by_kind(objects, "ClusterQueue")
    cohort = by_kind(objects, "Cohort")[COHORT_NAME]["spec"]["resourceGroups"][0]["flavors"]

    def quotas(flavors: list[dict[str, Any]], flavor: str) -> dict[str, Any]:
        return {r["name"]: r["nominalQuota"] for f in flavors if f["name"] == flavor for r in f["resources"]}

    for row in quota_table(cfg):
        for team in cfg.teams:
            holders = [q.name for q in team_queues(cfg, team) if row.flavor in flavor_names(cqs[q.name])]
            if row.flavor not in team.pools:
                assert holders == [], (row.flavor, team.name)
                continue
            (holder,) = holders
            quota = quotas(cqs[holder]["spec"]["resourceGroups"][0]["flavors"], row.flavor)[row.resource]
            assert quota == format_quantity(row.resource, row.teams[team.name])
        assert quotas(cohort, row.flavor)[row.resource] == format_quantity(row.resource, row.cohort)
    # D8s_v5 x 2 = 15640 m: 60 % -> 9384 m, 33.3 % -> 5208 m, 5 % -> 782 m; the cohort keeps 266 m.
    tascpu = {r.resource: r for r in quota_table(cfg) if r.flavor == "tascpu"}["cpu"]
    assert (tascpu.capacity, dict(tascpu.teams), tascpu.cohort) == (
        15640,
        {"research": 9384, "platform": 5208, "hpc": 782},
        266,
    )
    assert quotas(cqs["research-topology"]["spec"]["resourceGroups"][0]["flavors"], "tascpu")["cpu"] == "9384m"


def _mixed_stack() -> StackConfig:
    return config_with(
        [
            {"name": "research", "share": 50},
            {"name": "platform", "share": 30, "pools": ["cpu", "gpu"]},
            {"name": "hpc", "share": 20, "pools": ["tascpu", "h100"]},
        ],
        pools=MIXED_POOLS,
    )


def test_no_cluster_queue_mixes_topology_aware_and_ordinary_flavors(dev_config: StackConfig, crds: Any) -> None:
    for cfg in (dev_config, load_stack(design_example()), _mixed_stack()):
        objects = build_objects(cfg)
        flavors = by_kind(objects, "ResourceFlavor")
        for name, cq in by_kind(objects, "ClusterQueue").items():
            kinds = {"topologyName" in flavors[f]["spec"] for f in flavor_names(cq)}
            assert len(kinds) == 1, (cfg.stack, name)
            assert name.endswith("-topology") == kinds.pop(), (cfg.stack, name)
        assert validate_objects(objects, crds=crds, capacity=flavor_capacity(cfg)) == [], cfg.stack


def test_the_validator_sees_a_cluster_queue_that_mixes_the_kinds(crds: Any) -> None:
    """Positive control for the test above: the TAS-mixed rule is live on builder output."""
    cfg = _mixed_stack()
    objects = build_objects(cfg)
    cqs = by_kind(objects, "ClusterQueue")
    cqs["research"]["spec"]["resourceGroups"][0]["flavors"] += cqs["research-topology"]["spec"]["resourceGroups"][0][
        "flavors"
    ]
    # No capacity check: research-topology still holds the copied quotas, counted twice.
    violations = validate_objects(objects, crds=crds)
    assert [(v.object, v.rule) for v in violations] == [("ClusterQueue/research", "TAS-mixed")]


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
    gpu["resources"][2]["nominalQuota"] = str(int(gpu["resources"][2]["nominalQuota"]) + 1)
    rules = {v.rule for v in validate_objects(objects, crds=crds, capacity=flavor_capacity(dev_config))}
    assert rules == {"CAPACITY"}
