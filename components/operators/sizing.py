"""Does the system pool hold Kueue and the operators? (pure; no Pulumi import)

Every controller the stack installs runs on the system pool (installs.py, kueue_values.py), so
its nodes must hold their requests next to AKS's own system pods, or a controller stays Pending
and Helm's wait fails the `pulumi up` after the cluster exists. Checked before anything is
registered, in create mode, where the program knows the system pool's size.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import capacity
from ..config import NAMESPACE, Problem, StackConfig
from ..kueue_values import DEFAULT_MANAGER_MEMORY_MIB, tas_memory_mib
from .catalog import OPERATORS

KUEUE_CPU_REQUEST_MILLICORES = 500  # the Kueue chart's default request (values.yaml controllerManager.manager)
# What AKS's own kube-system pods request. An estimate, not a figure AKS publishes or one measured
# here: per node its DaemonSets (CNI, CSI node drivers, cloud-node-manager, kube-proxy or Cilium
# agent), per cluster its Deployments (CoreDNS ×2 and its autoscaler, metrics-server ×2,
# konnectivity). It errs high so the check never passes a pool that is really too small.
AKS_PER_NODE = (400, 600)  # millicores, MiB
AKS_PER_CLUSTER = (600, 900)


@dataclass(frozen=True)
class Demand:
    what: str
    cpu_millicores: int
    memory_mib: int
    replicas: int = 1


def system_pool_demand(config: StackConfig) -> list[Demand]:
    """Kueue's replicas and each managed operator's controller, as requested."""
    memory = tas_memory_mib(config) if config.uses_topology else DEFAULT_MANAGER_MEMORY_MIB
    demand = [Demand("Kueue", KUEUE_CPU_REQUEST_MILLICORES, memory, config.kueue.replicas)]
    for settings in config.operators:
        if settings.install == "managed":
            r = OPERATORS[settings.key].resources
            demand.append(Demand(OPERATORS[settings.key].title, r.cpu_millicores, r.memory_mib))
    return demand


def system_pool_problems(config: StackConfig) -> list[Problem]:
    """A problem naming what to change when the system pool cannot hold the controllers."""
    if config.cluster.mode != "create":
        return []  # the program does not know another cluster's system pool
    pool = config.cluster.system_pool
    vm = capacity.lookup_vm_size(pool.vm_size)
    if vm is None:
        return []  # config parsing already reported the size
    node = capacity.node_allocatable(vm)
    demand = system_pool_demand(config)
    cpu = sum(d.cpu_millicores * d.replicas for d in demand) + AKS_PER_CLUSTER[0] + AKS_PER_NODE[0] * pool.count
    memory = sum(d.memory_mib * d.replicas for d in demand) + AKS_PER_CLUSTER[1] + AKS_PER_NODE[1] * pool.count
    have_cpu, have_memory = node.cpu_millicores * pool.count, node.memory_mib * pool.count
    if cpu <= have_cpu and memory <= have_memory:
        return []
    listed = ", ".join(f"{d.what} {d.replicas} × ({d.cpu_millicores}m, {d.memory_mib}Mi)" for d in demand)
    return [Problem(
        f"{NAMESPACE}:cluster.systemPool",
        f"{pool.count} × {pool.vm_size} has {have_cpu}m CPU and {have_memory}Mi allocatable, but the controllers "
        f"that run there request {cpu}m and {memory}Mi ({listed}, and about {AKS_PER_CLUSTER[0]}m + "
        f"{AKS_PER_NODE[0]}m per node for AKS's own system pods); raise cluster.systemPool.count, choose a larger "
        "cluster.systemPool.vmSize, lower kueue-aks:kueue.replicas, or drop frameworks whose operators you do not need",
    )]
