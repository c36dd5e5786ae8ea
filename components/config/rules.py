"""Rules across sections, checked after each section parsed: Azure's rules for a cluster the
program creates, ProvisioningRequest's Kubernetes version, what AKS's Kueue extension needs of
the cluster, and whether the system pool holds Kueue and the operators' controllers.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..facts.azure_names import NODE_RESOURCE_GROUP_LIMIT, node_resource_group_length
from ..facts.kueue_resources import manager_memory_mib
from ..facts.operator_sizing import system_pool_demand, system_pool_shortfall
from .checks import Problem, Problems
from .cluster import ClusterSettings, kubernetes_minor
from .kueue import KueueSettings
from .names import CONFIG_PREFIX
from .network import vnet_of
from .pools import NodePool
from .stack import StackConfig

# AKS's managed cluster autoscaler handles ProvisioningRequests from Kubernetes 1.33 (MicrosoftDocs
# azure-aks-docs articles/aks/cluster-autoscaler.md, "Use ProvisioningRequest with the cluster
# autoscaler"; Azure/AKS#5867).
MIN_PROVISIONING_REQUEST_VERSION = (1, 33)


def check_extension(
    problems: Problems, kueue: KueueSettings, cluster: ClusterSettings, location: str | None, manager: bool
) -> None:
    """What AKS's managed Kueue extension needs of the cluster (Kubernetes 1.34 and a region that offers
    it: learn.microsoft.com/azure/aks/kueue-overview?pivots=extension) that the config can tell; an existing
    cluster's region and version are read from Azure by the preflight (components/preflight/extensions.py)."""
    extension = kueue.extension
    if extension is None:
        return
    if manager:
        problems.add(
            f"{CONFIG_PREFIX}:kueue.install",
            "aksExtension cannot run a MultiKueue manager: the stack sets the "
            "manager's MultiKueue settings (origin, dispatcher) through the Helm release, and the extension "
            "takes none; set install: helm on the manager (workers may use the extension)",
        )
    if cluster.mode != "create":
        return  # the preflight reads the cluster's region and version (Azure) or its extension (kubeconfig)
    if location and location.lower() not in extension.regions:
        problems.add(
            "azure-native:location",
            f"{location!r} does not offer AKS's managed Kueue extension "
            f"{extension.version} (offered in {', '.join(sorted(extension.regions))}); pick one of those "
            f"regions, or set {CONFIG_PREFIX}:kueue.install: helm",
        )
    need = ".".join(map(str, extension.min_kubernetes))
    version = cluster.kubernetes_version
    if version is None:
        problems.add(
            f"{CONFIG_PREFIX}:cluster.kubernetesVersion",
            f"is required with kueue.install: aksExtension: "
            f"the extension needs Kubernetes {need} or newer, and AKS's default version may be older; "
            f'set "{need}" or newer',
        )
    elif kubernetes_minor(version) < extension.min_kubernetes:
        problems.add(
            f"{CONFIG_PREFIX}:cluster.kubernetesVersion",
            f"{version!r} is older than {need}, the oldest "
            f"Kubernetes AKS's managed Kueue extension runs on; raise it, or set kueue.install: helm",
        )


def system_pool_problems(config: StackConfig) -> list[Problem]:
    """A problem naming what to change when the system pool cannot hold Kueue and the managed
    operators' controllers (facts/operator_sizing.py has the rule); create mode only, where the
    program knows the system pool."""
    if config.cluster.mode != "create":
        return []
    pool = config.cluster.system_pool
    demand = system_pool_demand(
        config.kueue.replicas,
        manager_memory_mib(config.reachable_nodes, config.uses_topology),
        [o.key for o in config.operators if o.install == "managed"],
    )
    shortfall = system_pool_shortfall(pool.vm_size, pool.count, demand)
    return [Problem(f"{CONFIG_PREFIX}:cluster.systemPool", shortfall)] if shortfall else []


# AKS's limits per cluster (learn.microsoft.com/azure/aks/quotas-skus-regions; the pricing tiers page).
MAX_NODE_POOLS = 100


MAX_FREE_TIER_NODES = 1000


def check_aks_rules(
    problems: Problems, cluster: ClusterSettings, location: str | None, pools: Sequence[NodePool]
) -> None:
    """Azure's rules across the keys of a cluster the program creates, beyond what each key allows
    alone (docs/azure-rules.md has each rule's source)."""
    at = f"{CONFIG_PREFIX}:cluster"
    version, channel = cluster.kubernetes_version, cluster.auto_upgrade_channel
    vnet = cluster.network.vnet_id
    for i, pool in enumerate(pools):
        if not pool.subnet_id:
            continue
        if vnet is None:
            problems.add(
                f"{CONFIG_PREFIX}:nodePools[{i}].subnetId",
                "needs cluster.network.subnetId: a cluster's pools are all in a VNet AKS makes or all in yours",
            )
        elif vnet_of(pool.subnet_id).lower() != vnet.lower():
            problems.add(
                f"{CONFIG_PREFIX}:nodePools[{i}].subnetId",
                f"is in another VNet than cluster.network.subnetId ({vnet.rsplit('/', 1)[1]}): all of a cluster's "
                "subnets must be in one VNet",
            )
    if version and channel in ("stable", "rapid"):
        problems.add(
            f"{at}.kubernetesVersion",
            f"pins {version!r}, but autoUpgradeChannel {channel} moves the cluster "
            "to newer minors by itself, and the next `pulumi up` would ask AKS for the old version, a downgrade "
            "it refuses; remove kubernetesVersion (AKS picks the version and the channel keeps it current), or "
            'set autoUpgradeChannel: patch (keeps a major.minor pin such as "1.33"), node-image or none',
        )
    elif version and version.count(".") == 2 and channel == "patch":
        minor = ".".join(version.split(".")[:2])
        problems.add(
            f"{at}.kubernetesVersion",
            f"pins the patch version {version!r}, but autoUpgradeChannel patch moves "
            "the cluster to newer patches by itself, and the next `pulumi up` would ask AKS for a downgrade "
            f'it refuses; pin the minor only ("{minor}"), or set autoUpgradeChannel: none',
        )
    if cluster.tier == "Premium" and channel in ("stable", "rapid"):
        # Premium comes with the long-term support plan (components/cluster/component.py sends both).
        problems.add(
            f"{at}.autoUpgradeChannel",
            f"is {channel}, but tier Premium runs AKS's long-term support plan, "
            "which keeps a minor version past its community support and allows only the patch and "
            "node-image channels (AKS recommends patch); set autoUpgradeChannel: patch, or tier: Standard",
        )
    if cluster.disable_local_accounts and not cluster.deployer_admin and not cluster.admin_group_object_ids:
        problems.add(
            f"{at}.deployerAdmin",
            "is false and disableLocalAccounts is true with no adminGroupObjectIds: "
            "nobody, not even `pulumi up`, could then sign in to the cluster; set deployerAdmin: true, or list "
            "the admins' Entra ID groups in adminGroupObjectIds",
        )
    if location:
        length = node_resource_group_length(cluster.name, location)
        if length > NODE_RESOURCE_GROUP_LIMIT:
            keep = len(cluster.name) - (length - NODE_RESOURCE_GROUP_LIMIT)
            problems.add(
                f"{at}.name",
                f"{cluster.name!r} makes AKS's node resource group name "
                f"(MC_<the stack's resource group>_<cluster name>_<region>) {length} characters long in "
                f"{location}, and AKS refuses more than {NODE_RESOURCE_GROUP_LIMIT}; use a name of at most "
                f"{keep} characters",
            )
    if len(pools) + 1 > MAX_NODE_POOLS:
        problems.add(
            f"{CONFIG_PREFIX}:nodePools",
            f"has {len(pools)} pools; with the system pool AKS allows at most {MAX_NODE_POOLS} per cluster",
        )
    nodes = cluster.system_pool.count + sum(p.max_count for p in pools)
    if cluster.tier == "Free" and nodes > MAX_FREE_TIER_NODES:
        problems.add(
            f"{at}.tier",
            f"is Free, which supports at most {MAX_FREE_TIER_NODES} nodes, but the pools reach "
            f"{nodes} at maxCount (with the system pool); set tier: Standard, or lower maxCount",
        )


def check_provisioning(problems: Problems, cluster: ClusterSettings, pools: Sequence[NodePool]) -> None:
    version = cluster.kubernetes_version
    if not version or kubernetes_minor(version) >= MIN_PROVISIONING_REQUEST_VERSION:
        return  # AKS's default version is newer; other modes are checked when Kueue starts
    need = ".".join(map(str, MIN_PROVISIONING_REQUEST_VERSION))
    for i, pool in enumerate(pools):
        if pool.provisioning_request:
            problems.add(
                f"{CONFIG_PREFIX}:nodePools[{i}].provisioningRequest",
                f"needs Kubernetes {need} or newer (AKS's autoscaler handles ProvisioningRequests from "
                f"{need}), but {CONFIG_PREFIX}:cluster.kubernetesVersion is {version!r}; raise the version, "
                "or set provisioningRequest: false"
                + (" and make the topology pool fixed-size" if pool.topology else ""),
            )
