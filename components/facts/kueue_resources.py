"""What Kueue's controller requests, as plain facts: read by the Helm values (values.py) and by the
system-pool check in the config (facts/operator_sizing.py), so neither imports the other."""

from __future__ import annotations

CPU_REQUEST_MILLICORES = 500  # the chart's default request (values.yaml controllerManager.manager)
# Chart default memory request and limit of the manager container (chart values.yaml).
DEFAULT_MANAGER_MEMORY_MIB = 512
# TAS makes Kueue cache every pod and node (kubernetes-sigs/kueue keps/2724-topology-aware-scheduling/README.md,
# "Non-exclusive use of nodes"). Sized as XPK sizes Kueue's controller (32 MiB per node: AI-Hypercomputer/xpk
# src/xpk/core/kueue_manager.py@367c838) on top of the chart default, at least 1 GiB.
TAS_MEMORY_PER_NODE_MIB = 32
TAS_MIN_MEMORY_MIB = 1024


def manager_memory_mib(reachable_nodes: int, topology: bool) -> int:
    """The manager's memory: the chart default, or with TAS 32 MiB per node it can reach on top."""
    if not topology:
        return DEFAULT_MANAGER_MEMORY_MIB
    return max(TAS_MIN_MEMORY_MIB, DEFAULT_MANAGER_MEMORY_MIB + TAS_MEMORY_PER_NODE_MIB * reachable_nodes)
