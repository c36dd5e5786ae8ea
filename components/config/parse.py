"""The entry points: `parse_config` turns the raw `kueue-aks:*` values into a StackConfig or one
ConfigError listing every problem with its key path and what is allowed (pure); `load_stack_config`
reads the running stack's config through Pulumi.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..facts import operators as operator_catalog
from ..facts.regions import region_problem
from .checks import ConfigError, Problem, Problems, shown, suggest, type_name
from .cluster import parse_cluster
from .credentials import was_secret
from .device_plugin import parse_device_plugin
from .governance import parse_governance
from .keys import BY_NAME, CLUSTER, REGISTRY_CREDENTIALS, describe
from .kueue import parse_kueue
from .monitoring import parse_monitoring
from .multikueue import parse_multikueue
from .names import CONFIG_PREFIX
from .operators import parse_operators
from .pools import NodePool, parse_pools
from .preflight import parse_preflight
from .registries import parse_registry_credentials
from .rules import (
    check_aks_rules,
    check_extension,
    check_provisioning,
    system_pool_problems,
)
from .stack import StackConfig
from .teams import parse_priority_classes, parse_teams
from .topology import parse_topology

KEYS = tuple(BY_NAME)


# Namespaces the stack's job operators run in: no team may take one (its Namespace, labels and
# RoleBindings would land on the operator's, and removing the team would delete it).
OPERATOR_NAMESPACES = frozenset(o.namespace for o in operator_catalog.OPERATORS.values() if o.namespace)


def namespace_problems(keys: Iterable[str]) -> list[Problem]:
    """The stack file's keys whose namespace is a near miss of ours (`kueue-ask:cluster`,
    `Kueue-aks:teams`, `kueue:teams`): their settings would be ignored without a word."""
    out = []
    for full in keys:
        space, colon, rest = str(full).partition(":")
        if not colon or space == CONFIG_PREFIX:
            continue
        folded = space.lower().replace("_", "-")
        near = folded.startswith("kueue") or difflib.SequenceMatcher(None, folded, CONFIG_PREFIX).ratio() >= 0.75
        if near:
            nearest = f"{CONFIG_PREFIX}:{rest}"
            out.append(
                Problem(
                    str(full)[:80],
                    f"is in the namespace {shown(space, 40)}, which this program does not read: its value would be "
                    f"ignored; did you mean {shown(nearest, 80)}?",
                )
            )
    return out


def parse_config(
    raw: Mapping[str, Any],
    *,
    stack: str,
    location: str | None,
    other_keys: Iterable[str] = (),
    secret_keys: Iterable[str] | None = None,
) -> StackConfig:
    """Parse the `kueue-aks:` keys (given without the namespace) into a StackConfig; `other_keys`
    are the stack's keys in other namespaces, for near misses of ours. `secret_keys` are the full
    keys the program was handed as Pulumi secrets (the stack file's reader passes none: a secret
    there is still `{secure: ...}`); a credential in plain text outside them is refused. None: the
    caller does not know, and plain-text credentials are not looked for.

    Raises ConfigError listing every problem; returns only a fully valid config.
    """
    problems = Problems()
    problems.items.extend(namespace_problems(other_keys))
    for key in raw:
        if key not in KEYS:
            problems.add(
                f"{CONFIG_PREFIX}:{str(key)[:80]}",
                f"unknown key{suggest(str(key)[:100], KEYS)}; allowed keys: {', '.join(KEYS)}",
            )
    # `kueue-aks:teams:` with nothing after it reaches the program as "" (the Pulumi CLI's text of
    # an empty value) and the plan as None: either way a section given empty, never a default.
    empty = [k for k in KEYS if k in raw and raw[k] in (None, "")]
    for key in empty:
        problems.add(f"{CONFIG_PREFIX}:{key}", f"is empty; allowed: {describe(BY_NAME[key])}")
    raw = {k: v for k, v in raw.items() if k not in empty}
    secrets = None if secret_keys is None else frozenset(secret_keys)
    cluster = parse_cluster(problems, raw.get("cluster"), stack, secret=was_secret(CLUSTER.name, secrets))
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
    if location is not None and not isinstance(location, str):
        problems.items.insert(
            0, Problem("azure-native:location", f"must be a region name such as eastus2; got {type_name(location)}")
        )
        location = None
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
                f"{CONFIG_PREFIX}:nodePools",
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
        azure=cluster.mode != "kubeconfig" and not asked_for_kubeconfig,
        reserved=OPERATOR_NAMESPACES,
    )
    priority_classes = parse_priority_classes(problems, raw.get("priorityClasses"))
    levels = parse_topology(problems, raw.get("topology"))
    governance = parse_governance(problems, raw.get("governance"), teams)
    device_plugin = parse_device_plugin(problems, raw.get("devicePlugin"))
    monitoring = parse_monitoring(problems, raw.get("monitoring"), cluster, kueue)
    operators = parse_operators(problems, raw.get("operators"), kueue)
    preflight = parse_preflight(problems, raw.get("preflight"))
    multi_kueue = parse_multikueue(problems, raw.get("multiKueue"), stack, kueue)
    registry_logins = parse_registry_credentials(
        problems,
        raw.get("registryCredentials"),
        # The sources the releases pull from (components/operators/installs.py: a mirror, else the catalog's).
        [kueue.chart, device_plugin.chart, *(o.chart or operator_catalog.OPERATORS[o.key].chart for o in operators)],
        secret=was_secret(REGISTRY_CREDENTIALS.name, secrets),
    )
    if governance.enforce:
        pools = tuple(replace(p, governed=True) for p in pools)
    if any(p.topology for p in pools) and kueue.feature_gates.get("TopologyAwareScheduling") is False:
        problems.add(
            f"{CONFIG_PREFIX}:kueue.featureGates.TopologyAwareScheduling",
            "is false, but a node pool has topology: true; enable the gate or set topology: false",
        )
    if pools_ok:
        check_provisioning(problems, cluster, pools)
    check_extension(problems, kueue, cluster, location, manager)
    if cluster.mode == "create":  # a MultiKueue manager's cluster too: it has no user pools, the rest holds
        check_aks_rules(problems, cluster, location, pools)
    else:
        for i, pool in enumerate(pools):
            if pool.subnet_id:
                problems.add(
                    f"{CONFIG_PREFIX}:nodePools[{i}].subnetId",
                    f"places a pool the program creates; with cluster.{cluster.mode} its pools exist: remove it",
                )
    if any(t.members for t in teams) and kueue.feature_gates.get("VisibilityOnDemand") is False:
        problems.add(
            f"{CONFIG_PREFIX}:kueue.featureGates.VisibilityOnDemand",
            "is false, but teams have members: they see their place in the queue through Kueue's "
            "visibility API, which this gate serves; enable it or remove the members",
        )
    # A section given empty is named once, not again as missing.
    problems.items = [
        p
        for p in problems.items
        if not (p.message.startswith("is required") and p.path in {f"{CONFIG_PREFIX}:{k}" for k in empty})
    ]
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
        registry_logins=registry_logins,
    )
    sizing = system_pool_problems(config)
    if sizing:
        raise ConfigError(sizing)
    return config


def raw_from_stack_file(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Split a parsed `Pulumi.<stack>.yaml` into our keys (namespace stripped) and the location."""
    config = doc.get("config")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ConfigError([Problem("config", f"must be a map of key: value; got {type_name(config)}")])
    ours = {str(k).split(":", 1)[1]: v for k, v in config.items() if str(k).startswith(f"{CONFIG_PREFIX}:")}
    return ours, config.get("azure-native:location")


def load_stack_config() -> StackConfig:
    """Read and validate the running stack's config; a mistake becomes one pulumi.RunError.

    RunError is printed without a Python traceback, so the user sees only the problem list.
    """
    import pulumi  # imported here so the pure functions above work without a Pulumi runtime
    from pulumi.runtime.config import CONFIG, get_config, get_config_env, is_config_secret

    raw: dict[str, Any] = {}
    keys = {*CONFIG.get(), *get_config_env()}
    secrets = [k for k in keys if is_config_secret(k)]
    for full_key in keys:
        if full_key.startswith(f"{CONFIG_PREFIX}:"):
            raw[full_key.split(":", 1)[1]] = decode_config_value(get_config(full_key))
    try:
        return parse_config(
            raw,
            stack=pulumi.get_stack(),
            location=pulumi.Config("azure-native").get("location"),
            other_keys=sorted(k for k in keys if not k.startswith(f"{CONFIG_PREFIX}:")),
            secret_keys=secrets,
        )
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None


def decode_config_value(value: Any) -> Any:
    """Structured values reach the program as JSON text; anything else stays as given."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):  # json.loads recurses per `[`: a deep nest stays text, refused as such
        return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: `{"share": 50, "share": 100}` as text would
    otherwise keep the last without a word; raising leaves the value text, refused at its key."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)
