"""The node pools of a stack config (components/config/pools.py): taints, capacity overrides, topology-aware
pools and ProvisioningRequest, and no GPU lost without a word."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.checks import ConfigError
from testbed.config_errors import refused
from testbed.stacks import QUEUED, TAS_POOL, parse_raw, with_changes


def test_spot_pool_carries_the_aks_spot_taint() -> None:
    raw = with_changes(
        nodePools=[{"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True}]
    )
    pool = parse_raw(raw).pool("gpuspot")
    # Configured (GPU default) taints first, then AKS's spot taint, then the governance taint.
    assert [str(t) for t in pool.node_taints] == [
        "nvidia.com/gpu=present:NoSchedule",
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
        QUEUED,
    ]
    assert [str(t) for t in pool.taints] == ["nvidia.com/gpu=present:NoSchedule"]  # the configured ones only
    ungoverned = parse_raw({**raw, "governance": {"enforce": False}}).pool("gpuspot")
    assert [str(t) for t in ungoverned.node_taints] == [
        "nvidia.com/gpu=present:NoSchedule",
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
    ]


def test_explicit_empty_taints_replace_the_gpu_default() -> None:
    raw = with_changes(nodePools=[{"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 1, "taints": []}])
    assert parse_raw(raw).pool("gpu").taints == ()


def test_capacity_override_for_a_size_outside_the_catalog() -> None:
    raw = with_changes(
        nodePools=[
            {
                "name": "big",
                "vmSize": "Standard_X99",
                "maxCount": 2,
                "capacity": {"cpu": "24", "memory": "220Gi", "nvidia.com/gpu": 1},
            }
        ]
    )
    pool = parse_raw(raw).pool("big")
    assert (pool.node.vcpus, pool.node.memory_gib, pool.node.gpus) == (24, 220, 1)
    assert pool.is_gpu and str(pool.taints[0]) == "nvidia.com/gpu=present:NoSchedule"


@pytest.mark.parametrize(("min_count", "max_count"), [(0, 2), (1, 3), (4, 5)])
def test_autoscaled_topology_pool_needs_provisioning_request(min_count: int, max_count: int) -> None:
    raw = with_changes(nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count}])
    with pytest.raises(ConfigError) as err:
        parse_raw(raw)
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[0].minCount"
    assert problem.message.startswith(
        f"{min_count} is below maxCount ({max_count}) on a topology-aware pool without provisioningRequest: "
        "topology-aware scheduling places pods only on nodes that exist, "
    )
    # It says what to add, and the other way out.
    assert "needs provisioningRequest: true" in problem.message
    assert "minCount == maxCount" in problem.message
    # Saying it explicitly false is the same mistake.
    with pytest.raises(ConfigError) as err:
        parse_raw(
            with_changes(
                nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count, "provisioningRequest": False}]
            )
        )
    assert [p.path for p in err.value.problems] == ["kueue-aks:nodePools[0].minCount"]


@pytest.mark.parametrize(("min_count", "max_count"), [(0, 2), (1, 3)])
def test_autoscaled_topology_pool_with_provisioning_request_is_accepted(min_count: int, max_count: int) -> None:
    pool = parse_raw(
        with_changes(
            nodePools=[{**TAS_POOL, "minCount": min_count, "maxCount": max_count, "provisioningRequest": True}]
        )
    ).pool("tas")
    assert (pool.min_count, pool.max_count, pool.topology, pool.provisioning_request) == (
        min_count,
        max_count,
        True,
        True,
    )


def test_provisioning_request_default_is_autoscaled_gpu_pools_only() -> None:
    pools = [
        {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 4},
        {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 3},
        {"name": "gpufixed", "vmSize": "Standard_NC4as_T4_v3", "minCount": 2, "maxCount": 2},
        {"name": "gputas", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 2, "topology": True},
        {
            "name": "gpuoff",
            "vmSize": "Standard_NC4as_T4_v3",
            "minCount": 0,
            "maxCount": 2,
            "provisioningRequest": False,
        },
        {"name": "cpuon", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 2, "provisioningRequest": True},
    ]
    config = parse_raw(with_changes(nodePools=pools))
    assert {p.name: p.provisioning_request for p in config.node_pools} == {
        "cpu": False,
        "gpu": True,
        "gpufixed": False,
        "gputas": True,
        "gpuoff": False,
        "cpuon": True,
    }


def test_provisioning_request_on_a_fixed_size_pool_is_an_error() -> None:
    with pytest.raises(ConfigError) as err:
        parse_raw(
            with_changes(
                nodePools=[
                    {
                        "name": "gpu",
                        "vmSize": "Standard_NC4as_T4_v3",
                        "minCount": 2,
                        "maxCount": 2,
                        "provisioningRequest": True,
                    }
                ]
            )
        )
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[0].provisioningRequest"
    assert "fixed-size" in problem.message and "minCount < maxCount" in problem.message


@pytest.mark.parametrize(("version", "ok"), [("1.32", False), ("1.30.4", False), ("1.33", True), ("1.34.1", True)])
def test_provisioning_request_needs_kubernetes_1_33(version: str, ok: bool) -> None:
    # A patch pin needs a channel that keeps it (tests/cluster/test_azure_rules.py).
    raw = with_changes(
        cluster={"kubernetesVersion": version, "autoUpgradeChannel": "none"},
        nodePools=[
            {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
            {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 3},
        ],
    )
    if ok:
        assert parse_raw(raw).pool("gpu").provisioning_request
        return
    with pytest.raises(ConfigError) as err:
        parse_raw(raw)
    (problem,) = err.value.problems
    assert problem.path == "kueue-aks:nodePools[1].provisioningRequest"
    assert "Kubernetes 1.33" in problem.message and "kueue-aks:cluster.kubernetesVersion" in problem.message
    assert "provisioningRequest: false" in problem.message
    # With it off, the same version is fine.
    raw["nodePools"][1]["provisioningRequest"] = False
    assert not parse_raw(raw).pool("gpu").provisioning_request


@pytest.mark.parametrize("count", [1, 2, 40])
def test_fixed_size_topology_aware_pool_is_accepted(count: int) -> None:
    pool = parse_raw(with_changes(nodePools=[{**TAS_POOL, "minCount": count, "maxCount": count}])).pool("tas")
    assert (pool.min_count, pool.max_count, pool.topology) == (count, count, True)


def test_only_topology_aware_pools_must_be_fixed_size() -> None:
    raw = with_changes(nodePools=[{**TAS_POOL, "minCount": 0, "maxCount": 5, "topology": False}])
    assert parse_raw(raw).pool("tas").min_count == 0


def _pool(vm_size: str, capacity: dict[str, Any] | None = None, max_count: int = 4) -> dict[str, Any]:
    return with_changes(
        nodePools=[
            {
                "name": "gpu",
                "vmSize": vm_size,
                "maxCount": max_count,
                **({"capacity": capacity} if capacity is not None else {}),
            }
        ]
    )


@pytest.mark.parametrize(
    ("raw", "path", "words"),
    [
        # Four A100 nodes become expensive CPUs.
        (
            _pool("Standard_NC24ads_A100_v4", {"nvidia.com/gpu": 0}),
            "kueue-aks:nodePools[0].capacity.nvidia.com/gpu",
            [
                "is 0, but Standard_NC24ads_A100_v4 has 1 × NVIDIA A100 80GB PCIe per node (catalog), 4 GPUs at maxCount 4",
                "no team would get GPU quota",
                "write nvidia.com/gpu: 1, or choose a CPU size",
            ],
        ),
        (
            _pool("Standard_ND96isr_H100_v5", {"cpu": "96", "memory": "1900Gi", "nvidia.com/gpu": 0}, 2),
            "kueue-aks:nodePools[0].capacity.nvidia.com/gpu",
            ["16 GPUs at maxCount 2", "write nvidia.com/gpu: 8"],
        ),
        # An override of a catalog GPU size states the GPUs.
        (
            _pool("Standard_NC24ads_A100_v4", {"memory": "200Gi"}),
            "kueue-aks:nodePools[0].capacity",
            ["overrides a GPU size without nvidia.com/gpu", "add nvidia.com/gpu: 1"],
        ),
        # A GPU-family size the catalog does not know, with cpu and memory but no GPU count.
        (
            _pool("Standard_NC24s_v3", {"cpu": "24", "memory": "448Gi"}),
            "kueue-aks:nodePools[0].capacity",
            [
                "Standard_NC24s_v3 is an N-family (GPU) size the catalog does not know",
                "add nvidia.com/gpu: <GPUs per node>",
                "nvidia.com/gpu: 0 only for a size with no whole NVIDIA GPU",
            ],
        ),
        (
            _pool("Standard_ND96isr_MI300X_v5", {"cpu": "96", "memory": "1850Gi"}),
            "kueue-aks:nodePools[0].capacity",
            ["is an N-family (GPU) size"],
        ),
        # A size the catalog lacks: the nearest catalog names and the override to write.
        (
            _pool("Standard_NC24s_v3"),
            "kueue-aks:nodePools[0].vmSize",
            [
                "'Standard_NC24s_v3' is not in the capacity catalog; nearest catalog sizes: Standard_NC4as_T4_v3, ",
                'capacity: {cpu: "<vCPUs>", memory: "<GiB>Gi", nvidia.com/gpu: <GPUs per node>}',
            ],
        ),
        (
            _pool("Standard_D16s_v7"),
            "kueue-aks:nodePools[0].vmSize",
            [
                "nearest catalog sizes: Standard_D16s_v6, Standard_D16s_v5, Standard_D16ds_v6",
                'capacity: {cpu: "<vCPUs>", memory: "<GiB>Gi"}',
            ],
        ),
        # The 40 GB A100 series' label is not suggested as the 80 GB size it reads like.
        (
            _pool("Standard_ND96asr_A100_v4"),
            "kueue-aks:nodePools[0].vmSize",
            ["8 × A100 40 GB is Standard_ND96asr_v4; 8 × A100 80 GB is Standard_ND96amsr_A100_v4"],
        ),
    ],
)
def test_a_gpu_pool_never_loses_its_gpus_silently(raw: dict[str, Any], path: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse_raw(raw)
    (problem,) = err.value.problems
    assert problem.path == path, problem
    for w in words:
        assert w in problem.message, problem.message


def test_gpu_counts_stated_in_the_override_are_taken() -> None:
    # A GPU-family size outside the catalog with its GPU count: a GPU pool, with the GPU taint.
    pool = parse_raw(_pool("Standard_NC24s_v3", {"cpu": "24", "memory": "448Gi", "nvidia.com/gpu": 4})).pool("gpu")
    assert (pool.node.vcpus, pool.node.gpus, pool.capacity.gpus) == (24, 4, 16)
    assert pool.is_gpu and [str(t) for t in pool.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    # An explicit 0 is the config saying the size has no whole NVIDIA GPU (an AMD GPU, a slice): a CPU pool.
    amd = parse_raw(_pool("Standard_NG32ads_V620_v1", {"cpu": "32", "memory": "176Gi", "nvidia.com/gpu": 0})).pool(
        "gpu"
    )
    assert not amd.is_gpu and amd.taints == ()
    # A catalog GPU size's own count, restated, is fine; so is an override of a CPU size without GPUs.
    assert (
        parse_raw(_pool("Standard_NC24ads_A100_v4", {"memory": "200Gi", "nvidia.com/gpu": 1})).pool("gpu").capacity.gpus
        == 4
    )
    assert not parse_raw(_pool("Standard_D16s_v6", {"memory": "60Gi"})).pool("gpu").is_gpu
    # The catalog's GPU slices stay CPU sizes, with or without an override.
    assert not parse_raw(_pool("Standard_NV6ads_A10_v5", {"memory": "50Gi"})).pool("gpu").is_gpu


def test_the_system_pool_is_not_offered_an_override() -> None:
    problems = refused(parse_raw, with_changes(cluster={"systemPool": {"vmSize": "Standard_D4s_v7"}})).lines
    (problem,) = [p for p in problems if p.startswith("kueue-aks:cluster.systemPool.vmSize")]
    assert "nearest catalog sizes: Standard_D4s_v6" in problem and "capacity:" not in problem
