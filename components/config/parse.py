"""The entry points: `parse_config` turns the raw `kueue-aks:*` values into a StackConfig or one
ConfigError listing every problem with its key path and what is allowed (pure); `load_stack_config`
reads the running stack's config through Pulumi.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..facts.regions import region_problem
from .checks import ConfigError, Problem, Problems, suggest
from .cluster import parse_cluster
from .device_plugin import parse_device_plugin
from .governance import parse_governance
from .kueue import parse_kueue
from .monitoring import parse_monitoring
from .multikueue import parse_multikueue
from .names import NAMESPACE
from .operators import parse_operators
from .pools import NodePool, parse_pools
from .preflight import parse_preflight
from .rules import (
    check_aks_rules,
    check_extension,
    check_provisioning,
    system_pool_problems,
)
from .stack import StackConfig
from .teams import parse_priority_classes, parse_teams
from .topology import parse_topology

KEYS = (
    "cluster",
    "nodePools",
    "kueue",
    "teams",
    "priorityClasses",
    "topology",
    "governance",
    "devicePlugin",
    "monitoring",
    "operators",
    "preflight",
    "multiKueue",
)


def parse_config(raw: Mapping[str, Any], *, stack: str, location: str | None) -> StackConfig:
    """Parse the `kueue-aks:` keys (given without the namespace) into a StackConfig.

    Raises ConfigError listing every problem; returns only a fully valid config.
    """
    problems = Problems()
    for key in raw:
        if key not in KEYS:
            problems.add(f"{NAMESPACE}:{key}", f"unknown key{suggest(str(key), KEYS)}; allowed keys: {', '.join(KEYS)}")
    cluster = parse_cluster(problems, raw.get("cluster"), stack)
    asked_for_kubeconfig = isinstance(raw.get("cluster"), Mapping) and "kubeconfig" in raw["cluster"]
    if not location and cluster.mode != "kubeconfig" and not asked_for_kubeconfig:
        # Listed first, where a reader of the stack file finds the key.
        problems.items.insert(
            0,
            Problem(
                "azure-native:location",
                "is required: the Azure region, e.g. eastus2 (only a cluster.kubeconfig stack needs none)",
            ),
        )
    region = region_problem(location) if location else None
    if region:
        problems.items.insert(0, Problem("azure-native:location", region))
    # A manager's pools and teams follow other rules; the role's own problems come after the rest.
    manager = isinstance(raw.get("multiKueue"), Mapping) and raw["multiKueue"].get("role") == "manager"
    before = len(problems.items)
    if manager:
        # Its ClusterQueues only account and dispatch: every team job runs on a worker.
        if raw.get("nodePools"):
            problems.add(
                f"{NAMESPACE}:nodePools",
                "is for the workers: a MultiKueue manager runs no team jobs (its "
                "queues dispatch them to multiKueue.workers, and Kueue runs on the system pool); remove it",
            )
        pools: tuple[NodePool, ...] = ()
    else:
        pools = parse_pools(problems, raw.get("nodePools"))
    pools_ok = len(problems.items) == before
    kueue = parse_kueue(problems, raw.get("kueue"))
    teams = parse_teams(
        problems,
        raw.get("teams"),
        pools,
        pools_ok,
        manager=manager,
        azure_groups=cluster.mode != "kubeconfig" and not asked_for_kubeconfig,
    )
    priority_classes = parse_priority_classes(problems, raw.get("priorityClasses"))
    levels = parse_topology(problems, raw.get("topology"))
    governance = parse_governance(problems, raw.get("governance"), teams)
    device_plugin = parse_device_plugin(problems, raw.get("devicePlugin"))
    monitoring = parse_monitoring(problems, raw.get("monitoring"), cluster, kueue)
    operators = parse_operators(problems, raw.get("operators"), kueue)
    preflight = parse_preflight(problems, raw.get("preflight"))
    multi_kueue = parse_multikueue(problems, raw.get("multiKueue"), stack, kueue)
    if governance.enforce:
        pools = tuple(replace(p, governed=True) for p in pools)
    if any(p.topology for p in pools) and kueue.feature_gates.get("TopologyAwareScheduling") is False:
        problems.add(
            f"{NAMESPACE}:kueue.featureGates.TopologyAwareScheduling",
            "is false, but a node pool has topology: true; enable the gate or set topology: false",
        )
    if pools_ok:
        check_provisioning(problems, cluster, pools)
    check_extension(problems, kueue, cluster, location, manager)
    if cluster.mode == "create":  # a MultiKueue manager's cluster too: it has no user pools, the rest holds
        check_aks_rules(problems, cluster, location, pools)
    if any(t.members for t in teams) and kueue.feature_gates.get("VisibilityOnDemand") is False:
        problems.add(
            f"{NAMESPACE}:kueue.featureGates.VisibilityOnDemand",
            "is false, but teams have members: they see their place in the queue through Kueue's "
            "visibility API, which this gate serves; enable it or remove the members",
        )
    if problems.items:
        raise ConfigError(problems.items)
    config = StackConfig(
        stack=stack,
        location=location or "",
        cluster=cluster,
        node_pools=pools,
        kueue=kueue,
        teams=teams,
        priority_classes=priority_classes,
        topology_levels=levels,
        governance=governance,
        device_plugin=device_plugin,
        monitoring=monitoring,
        operators=operators,
        preflight=preflight,
        multi_kueue=multi_kueue,
    )
    sizing = system_pool_problems(config)
    if sizing:
        raise ConfigError(sizing)
    return config


def raw_from_stack_file(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Split a parsed `Pulumi.<stack>.yaml` into our keys (namespace stripped) and the location."""
    config = doc.get("config") or {}
    ours = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{NAMESPACE}:")}
    return ours, config.get("azure-native:location")


def load_stack_config() -> StackConfig:
    """Read and validate the running stack's config; a mistake becomes one pulumi.RunError.

    RunError is printed without a Python traceback, so the user sees only the problem list.
    """
    import pulumi  # imported here so the pure functions above work without a Pulumi runtime
    from pulumi.runtime.config import CONFIG, get_config, get_config_env

    raw: dict[str, Any] = {}
    for full_key in {*CONFIG.get(), *get_config_env()}:
        if full_key.startswith(f"{NAMESPACE}:"):
            raw[full_key.split(":", 1)[1]] = decode_config_value(get_config(full_key))
    try:
        return parse_config(raw, stack=pulumi.get_stack(), location=pulumi.Config("azure-native").get("location"))
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None


def decode_config_value(value: Any) -> Any:
    """Structured values reach the program as JSON text; anything else stays as given."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
