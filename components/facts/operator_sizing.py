"""Does the system pool hold Kueue and the operators? (pure; no Pulumi import)

Every controller the stack installs runs on the system pool (operators/installs.py, kueue/values.py), so
its nodes must hold their requests next to AKS's own system pods, or a controller stays Pending
and Helm's wait fails the `pulumi up` after the cluster exists. Checked before anything is
registered, in create mode, where the program knows the system pool's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import capacity
from .kueue_resources import CPU_REQUEST_MILLICORES as KUEUE_CPU_REQUEST_MILLICORES
from .operators import OPERATORS

# What AKS's own kube-system pods request. An estimate, not a figure AKS publishes or one measured
# here: per node its DaemonSets (CNI, CSI node drivers, cloud-node-manager, kube-proxy or Cilium
# agent), per cluster its Deployments (CoreDNS ×2 and its autoscaler, metrics-server ×2,
# konnectivity). It errs high so the check never passes a pool that is really too small.
AKS_PER_NODE = (400, 600)  # millicores, MiB
AKS_PER_CLUSTER = (600, 900)


@dataclass(frozen=True)
class ControllerDemand:
    what: str
    cpu_millicores: int
    memory_mib: int
    replicas: int = 1


def system_pool_demand(
    kueue_replicas: int, kueue_memory_mib: int, managed_operators: Sequence[str]
) -> list[ControllerDemand]:
    """Kueue's replicas and each managed operator's controller (by catalog key), as requested."""
    demand = [ControllerDemand("Kueue", KUEUE_CPU_REQUEST_MILLICORES, kueue_memory_mib, kueue_replicas)]
    for key in managed_operators:
        r = OPERATORS[key].resources
        demand.append(ControllerDemand(OPERATORS[key].title, r.cpu_millicores, r.memory_mib))
    return demand


def system_pool_shortfall(vm_size: str, count: int, demand: Sequence[ControllerDemand]) -> str | None:
    """What to change when `count` nodes of `vm_size` cannot hold `demand` beside AKS's own pods;
    None when they can, or when the size is unknown (the config reports that itself)."""
    vm = capacity.lookup_vm_size(vm_size)
    if vm is None:
        return None
    node = capacity.node_allocatable(vm)
    cpu = sum(d.cpu_millicores * d.replicas for d in demand) + AKS_PER_CLUSTER[0] + AKS_PER_NODE[0] * count
    memory = sum(d.memory_mib * d.replicas for d in demand) + AKS_PER_CLUSTER[1] + AKS_PER_NODE[1] * count
    have_cpu, have_memory = node.cpu_millicores * count, node.memory_mib * count
    if cpu <= have_cpu and memory <= have_memory:
        return None
    listed = ", ".join(f"{d.what} {d.replicas} × ({d.cpu_millicores}m, {d.memory_mib}Mi)" for d in demand)
    return (
        f"{count} × {vm_size} has {have_cpu}m CPU and {have_memory}Mi allocatable, but the controllers "
        f"that run there request {cpu}m and {memory}Mi ({listed}, and about {AKS_PER_CLUSTER[0]}m + "
        f"{AKS_PER_NODE[0]}m per node for AKS's own system pods); raise cluster.systemPool.count, choose a larger "
        "cluster.systemPool.vmSize, lower kueue-aks:kueue.replicas, or drop frameworks whose operators you do not need"
    )
