"""Fake nodes shaped like the nodes AKS makes for a stack's pools, from the program's own model.

The nodes a pool has when the stack comes up, plus the system pool: a fixed-size pool's count, an
autoscaled pool's minCount (the cluster autoscaler, autoscaler.py, adds the rest from a template
of the same shape, as AKS does), with the labels and taints AKS puts on them and allocatable from components.facts.capacity: the same NodePool objects the
flavors' nodeLabels and tolerations come from, so a mismatch between the two shows up as a job
that lands nowhere.

AKS node labels: learn.microsoft.com/azure/aks/use-node-labels.
"""

from __future__ import annotations

from typing import Any

from components.facts import capacity
from components.k8s.resources import RESOURCE_GPU
from components.facts.capacity import NodeResources
from components.config.names import POOL_LABEL, SYSTEM_POOL_NAME
from components.config.pools import NodePool
from components.config.stack import StackConfig

MODE_LABEL = "kubernetes.azure.com/mode"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
SPOT_LABEL = "kubernetes.azure.com/scalesetpriority"
ACCELERATOR_LABEL = "kubernetes.azure.com/accelerator"
# kwok manages only nodes with this annotation (kwokctl's default selector).
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}


def node_name(pool: str, index: int) -> str:
    """AKS's VMSS naming: aks-<pool>-<8 digits>-vmss<6 digits>."""
    return f"aks-{pool}-12345678-vmss{index:06d}"


def _zone(config: StackConfig, index: int) -> str:
    # Zonal pools spread nodes over the zones as <region>-<zone>; others get a fault domain "0".
    zones = config.cluster.zones
    return f"{config.location}-{zones[index % len(zones)]}" if zones else "0"


def _node(
    config: StackConfig, name: str, labels: dict[str, str], taints: list[dict[str, str]], allocatable: NodeResources
) -> dict[str, Any]:
    resources = {
        "cpu": f"{allocatable.cpu_millicores}m",
        "memory": f"{allocatable.memory_mib}Mi",
        "pods": str(capacity.MAX_PODS),
    }
    if allocatable.gpus:
        resources[RESOURCE_GPU] = str(allocatable.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": dict(KWOK_ANNOTATION),
            "labels": {**labels, HOSTNAME_LABEL: name, "kubernetes.io/os": "linux"},
        },
        "spec": {"taints": taints} if taints else {},
        "status": {"allocatable": resources, "capacity": resources},
    }


# The kwok provider's marks on the nodes it created (cloudprovider/kwok, prepareNode): the harness
# makes an autoscaled pool's first minCount nodes with them, so the autoscaler counts them in its
# node group and may remove them down to minCount, as AKS would.
KWOK_PROVIDER_ID = "kwok:"
NODE_GROUP_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/name"


def pool_node(config: StackConfig, pool: NodePool, name: str, index: int = 0) -> dict[str, Any]:
    """One node of `pool`, as AKS labels and taints it."""
    labels = {
        **pool.labels,
        POOL_LABEL: pool.name,
        MODE_LABEL: "user",
        ZONE_LABEL: _zone(config, index),
        INSTANCE_TYPE_LABEL: pool.vm_size,
    }
    if pool.spot:
        labels[SPOT_LABEL] = "spot"
    if pool.is_gpu:
        labels[ACCELERATOR_LABEL] = "nvidia"
    taints = [
        {"key": t.key, "value": t.value, "effect": t.effect} if t.value else {"key": t.key, "effect": t.effect}
        for t in pool.node_taints
    ]
    return _node(config, name, labels, taints, pool.allocatable)


def pool_nodes(config: StackConfig, pool: NodePool) -> list[dict[str, Any]]:
    """The pool's nodes at start: minCount for an autoscaled pool, marked as the autoscaler's."""
    nodes = []
    for i in range(pool.min_count):
        node = pool_node(config, pool, node_name(pool.name, i), i)
        if pool.autoscaled:
            node["metadata"]["annotations"][NODE_GROUP_ANNOTATION] = pool.name
            node["spec"]["providerID"] = KWOK_PROVIDER_ID + node["metadata"]["name"]
        nodes.append(node)
    return nodes


def system_nodes(config: StackConfig) -> list[dict[str, Any]]:
    vm = capacity.lookup_vm_size(config.cluster.system_pool.vm_size)
    assert vm is not None, "the config model accepts only catalog sizes for the system pool"
    labels = {POOL_LABEL: SYSTEM_POOL_NAME, MODE_LABEL: "system", INSTANCE_TYPE_LABEL: vm.name}
    return [
        _node(
            config,
            node_name(SYSTEM_POOL_NAME, i),
            {**labels, ZONE_LABEL: _zone(config, i)},
            [],
            capacity.node_allocatable(vm),
        )
        for i in range(config.cluster.system_pool.count)
    ]


def fake_nodes(config: StackConfig) -> list[dict[str, Any]]:
    """Every node the stack's cluster has before anything scales, system pool first."""
    return system_nodes(config) + [n for pool in config.node_pools for n in pool_nodes(config, pool)]
