"""Edits to a created cluster that AKS cannot apply in place, and what `pulumi up` does with them.

Read from the inputs the cluster component sends (its own builders, for both versions of a stack),
so every field the program sends is judged, by where the edit lands:

- a field azure-native marks force-new: the engine replaces the resource. Its name is fixed (the
  pool's, the cluster's), so it deletes first (azure-native provider/pkg/provider/provider.go
  `Diff`: deleteBeforeReplace unless randomly auto-named), and deleting a pool deletes its nodes
  "along with any pods running on those nodes" (learn.microsoft.com/azure/aks/delete-node-pool),
  so every job on it stops, before the new pool has a node. Force-new on AgentPool: `vmSize`
  (and `gpuInstanceProfile`, unsent); on ManagedCluster: its name, location, DNS prefix and the
  network ranges, plugin and egress (azure-native provider/pkg/gen/replacement.go `forceNewMap`; PR 4771);
- a field AKS fixes at creation that azure-native updates in place: the PUT fails with
  PropertyChangeNotAllowed (Azure/AKS issue 695, pulumi-azure-native issue 959), and `up` stops
  there with the resources before it already changed. Spot priority and its eviction policy and
  price (learn.microsoft.com/azure/aks/spot-node-pool), zones, the subnet (Azure/AKS issue 695),
  the GPU driver profile, and the inline system pool's VM size (agent profiles are no longer
  force-new, azure-native PR 2774; learn.microsoft.com/azure/aks/manage-node-pools: "You can't
  change the VM size of a node pool after you create it").

The safe way for a pool is Microsoft's resize procedure (learn.microsoft.com/azure/aks/resize-node-pool):
a new pool beside the old one, the old one's jobs drained, then the old one removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.pools import NodePool
from ..config.stack import StackConfig
from .component import agent_pool_args, network_profile, system_pool_profile

REPLACED = "replaced"  # the engine deletes the resource and creates it anew
REFUSED = "refused"  # AKS refuses the PUT: `up` fails there
IN_PLACE = "in place"

# Every input agent_pool_args sends, and what an edit of it does (test_edits holds the table to
# the builder, so a new input must be judged here first).
AGENT_POOL_FIELDS: Mapping[str, str] = {
    "vm_size": REPLACED,
    "scale_set_priority": REFUSED,
    "scale_set_eviction_policy": REFUSED,
    "spot_max_price": REFUSED,
    "availability_zones": REFUSED,
    "vnet_subnet_id": REFUSED,
    "gpu_profile": REFUSED,
    "agent_pool_name": IN_PLACE,  # never differs: pools are matched by name
    "mode": IN_PLACE,
    "os_type": IN_PLACE,
    "type": IN_PLACE,
    "max_pods": IN_PLACE,
    "node_labels": IN_PLACE,
    "node_taints": IN_PLACE,
    "orchestrator_version": IN_PLACE,
    "enable_auto_scaling": IN_PLACE,
    "min_count": IN_PLACE,
    "max_count": IN_PLACE,
    "count": IN_PLACE,
}
# The inline system pool: part of the ManagedCluster, whose agent profiles update in place.
SYSTEM_POOL_FIELDS: Mapping[str, str] = {
    "vm_size": REFUSED,
    "availability_zones": REFUSED,
    "vnet_subnet_id": REFUSED,
    "name": IN_PLACE,
    "mode": IN_PLACE,
    "count": IN_PLACE,
    "os_type": IN_PLACE,
    "type": IN_PLACE,
    "max_pods": IN_PLACE,
}
# networkProfile's leaves the program sends; the rest of the ManagedCluster is judged below.
NETWORK_FIELDS: Mapping[str, str] = {
    "network_plugin": REPLACED,
    "network_plugin_mode": REPLACED,
    "network_dataplane": REPLACED,
    "network_policy": REPLACED,
    "outbound_type": REPLACED,
    "pod_cidr": REPLACED,
    "service_cidr": REPLACED,
    "dns_service_ip": REPLACED,
    "load_balancer_sku": IN_PLACE,
}

# What each input is called in the stack file, for the message (`{i}`: the pool's index).
_POOL_KEYS = {
    "vm_size": "nodePools[{i}].vmSize",
    "gpu_profile": "nodePools[{i}].vmSize",
    "scale_set_priority": "nodePools[{i}].spot",
    "scale_set_eviction_policy": "nodePools[{i}].spot",
    "spot_max_price": "nodePools[{i}].spot",
    "availability_zones": "cluster.zones",
}
_SYSTEM_KEYS = {
    "vm_size": "cluster.systemPool.vmSize",
    "availability_zones": "cluster.zones",
    "vnet_subnet_id": "cluster.network.subnetId",
}
_NETWORK_KEYS = {
    "outbound_type": "cluster.network.outboundType",
    "pod_cidr": "cluster.network.podCidr",
    "service_cidr": "cluster.network.serviceCidr",
    "dns_service_ip": "cluster.network.dnsServiceIp",
}
_WHAT = {
    "vm_size": "VM size",
    "gpu_profile": "GPU driver profile",
    "scale_set_priority": "spot setting",
    "scale_set_eviction_policy": "spot setting",
    "spot_max_price": "spot setting",
    "availability_zones": "zones",
    "vnet_subnet_id": "subnet",
    "outbound_type": "egress (outbound type)",
    "pod_cidr": "pod range",
    "service_cidr": "service range",
    "dns_service_ip": "DNS service address",
}


@dataclass(frozen=True)
class Edit:
    """One field changed where AKS cannot change it in place."""

    target: str  # "pool `gpu`", "the system pool", "the cluster"
    what: str  # "VM size"
    key: str  # the stack key, kueue-aks: prefix included
    before: Any
    after: Any
    outcome: str  # REPLACED | REFUSED


def _shown(value: Any) -> str:
    if value in (None, [], {}):
        return "unset"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def _spot(pool: NodePool) -> str:
    return "spot" if pool.spot else "on-demand"


def _changed(fields: Mapping[str, str], was: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """The judged inputs that differ, in the table's order; an input the table lacks raises, so
    nothing the builder sends goes unjudged."""
    unjudged = (set(was) | set(now)) - set(fields)
    if unjudged:
        raise KeyError(f"inputs without a judgement in components/cluster/edits.py: {sorted(unjudged)}")
    return [f for f, outcome in fields.items() if outcome != IN_PLACE and was.get(f) != now.get(f)]


def _pool_edits(before: StackConfig, after: StackConfig) -> list[Edit]:
    edits = []
    old = {p.name: p for p in before.node_pools}
    for i, pool in enumerate(after.node_pools):
        if pool.name not in old:
            continue
        was, now = agent_pool_args(old[pool.name], before.cluster), agent_pool_args(pool, after.cluster)
        fields = _changed(AGENT_POOL_FIELDS, was, now)
        if "vm_size" in fields:  # a new pool: nothing else of the old one matters
            fields = ["vm_size"]
        seen: set[str] = set()
        for f in fields:
            key = _POOL_KEYS.get(f, "")
            if f == "vnet_subnet_id":
                key = (
                    f"nodePools[{i}].subnetId"
                    if pool.subnet_id or old[pool.name].subnet_id
                    else "cluster.network.subnetId"
                )
            what = _WHAT[f]
            if what in seen:
                continue
            seen.add(what)
            shown = (
                (_spot(old[pool.name]), _spot(pool))
                if what == "spot setting"
                else (_shown(was.get(f)), _shown(now.get(f)))
            )
            edits.append(
                Edit(f"pool `{pool.name}`", what, "kueue-aks:" + key.format(i=i), *shown, AGENT_POOL_FIELDS[f])
            )
    return edits


def _cluster_edits(before: StackConfig, after: StackConfig) -> list[Edit]:
    edits = []
    if before.cluster.name != after.cluster.name:
        edits.append(
            Edit("the cluster", "name", "kueue-aks:cluster.name", before.cluster.name, after.cluster.name, REPLACED)
        )
    if before.location != after.location:
        edits.append(Edit("the cluster", "region", "azure-native:location", before.location, after.location, REPLACED))
    was, now = network_profile(before.cluster), network_profile(after.cluster)
    for f in _changed(NETWORK_FIELDS, was, now):
        key = _NETWORK_KEYS.get(f, "cluster.network")
        edits.append(
            Edit("the cluster", _WHAT.get(f, f), f"kueue-aks:{key}", _shown(was.get(f)), _shown(now.get(f)), REPLACED)
        )
    was_pool, now_pool = system_pool_profile(before.cluster), system_pool_profile(after.cluster)
    for f in _changed(SYSTEM_POOL_FIELDS, was_pool, now_pool):
        edits.append(
            Edit(
                "the system pool",
                _WHAT[f],
                f"kueue-aks:{_SYSTEM_KEYS[f]}",
                _shown(was_pool.get(f)),
                _shown(now_pool.get(f)),
                REFUSED,
            )
        )
    return edits


def fixed_edits(before: StackConfig, after: StackConfig) -> list[Edit]:
    """The edits AKS cannot apply in place, for a stack that creates its cluster on both sides
    (an existing or kubeconfig cluster's pools are not the stack's to change). A replaced
    cluster makes every other edit moot: then it alone is listed."""
    if before.cluster.mode != "create" or after.cluster.mode != "create":
        return []
    cluster = _cluster_edits(before, after)
    replaced = [e for e in cluster if e.outcome == REPLACED]
    return replaced or cluster + _pool_edits(before, after)


def _pool_name(target: str) -> str:
    return target.split("`")[1]


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def edit_line(edits: list[Edit]) -> str:
    """One edit in words for the PR comment, on every target it reaches (a cluster-wide key such
    as the zones reaches every pool): what AKS cannot do, what `up` does, and the safe way."""
    edit = edits[0]
    targets = [e.target for e in edits]
    pools = [_pool_name(t) for t in targets if t.startswith("pool ")]
    named = [t for t in targets if not t.startswith("pool ")]
    named += [f"pool{'s' if len(pools) > 1 else ''} {', '.join(f'`{p}`' for p in pools)}"] if pools else []
    change = f"({edit.before} → {edit.after}, `{edit.key}`)"
    head = f"**AKS cannot change the {edit.what} of {_joined(named)} in place** {change}"
    if edit.target == "the cluster":
        return (
            f"{head}: `up` deletes the cluster and creates a new one (azure-native replaces a ManagedCluster "
            "whose name, region or network ranges change, deleting first as its name is fixed): every node, job, "
            "queue and Kueue itself go with it, and the new cluster has a new API server and credentials. If it "
            "must change, build a second stack beside this one and move the teams to it."
        )
    fails = (
        "`up` fails at the first of them, AKS refusing the update (PropertyChangeNotAllowed), with the resources "
        "before it already changed."
    )
    if "the system pool" in targets:
        return f"{head}: {fails} The system pool is part of the cluster: keep it, or build a second stack with it."
    listed = ", ".join(f"`{p}`" for p in pools)
    safe = (
        f"The safe way: add a pool with the new {edit.what} beside {'it' if len(pools) == 1 else 'each'} "
        f"(e.g. `{pools[0]}2`), let the jobs on {listed} finish or move (`kubectl cordon` the old nodes), then "
        "remove the old pool in a later change (docs/day-2.md)."
    )
    if edit.outcome == REPLACED:
        return (
            f"{head}: `up` deletes {listed} and creates it anew (azure-native replaces an AgentPool whose vmSize "
            "changes, deleting first as its name is fixed); AKS deletes the nodes with every pod on them, so every "
            f"job running there stops before the new pool has a node. {safe}"
        )
    return f"{head}: {fails} {safe}"


def edit_lines(before: StackConfig | None, after: StackConfig) -> list[str]:
    """The PR comment's leading lines: one per edit AKS cannot apply in place (a key that reaches
    several pools, one line)."""
    groups: dict[tuple[Any, ...], list[Edit]] = {}
    for e in fixed_edits(before, after) if before else []:
        groups.setdefault((e.what, e.key, e.before, e.after, e.outcome), []).append(e)
    return [edit_line(g) for g in groups.values()]
