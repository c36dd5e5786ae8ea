"""The cluster the program deploys into, in one of three modes (kueue-aks:cluster):

- AksCluster (create): resource group, AKS with only the system pool inline, one AgentPool per
  user pool, a secret kubeconfig and the Kubernetes provider the later components use;
- ExistingAksCluster (existing): an AKS cluster made elsewhere, read with azure-native's invokes;
  each configured pool is checked against Azure at preview, since the quotas assume it;
- KubeconfigCluster (kubeconfig): any cluster, from a secret kubeconfig; no Azure at all.

Each has `provider`, `node_pool_names` and `node_pools` (the AgentPools it created, by pool name);
attributes that exist only in some modes (the cluster's name, ID and resource group...) are None in
the others, and __main__.py exports only what is set.
"""

from __future__ import annotations

import asyncio
import base64
import functools
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import authorization, containerservice, managedidentity, resources

from ..config.cluster import ClusterSettings, ExistingCluster
from ..config.names import QUEUED_TAINT, SYSTEM_POOL_NAME
from ..config.pools import NodePool
from ..config.stack import StackConfig
from ..facts.azure_names import dns_prefix
from ..facts.built_in_roles import STACK_ROLES
from ..facts.capacity import MAX_PODS
from .deployer import ACCESS_DEADLINE, CLUSTER_ADMIN_ROLE, DeployerError, principal_type, wait_for_access
from .tags import STACK_TAG, stack_tag

# What AKS's cluster identity needs on a subnet it does not own (learn.microsoft.com/azure/aks/
# configure-advanced-networking: "at least Network Contributor permissions on the subnet").
NETWORK_CONTRIBUTOR_ROLE = STACK_ROLES["Network Contributor"]

# The Entra ID server application every AKS-managed AAD cluster uses for tokens
# (github.com/Azure/kubelogin issue 104; `kubelogin convert-kubeconfig` writes the same).
AKS_AAD_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"


def system_pool_profile(settings: ClusterSettings) -> containerservice.ManagedClusterAgentPoolProfileArgsDict:
    """The one pool AKS needs inline. User pools are separate AgentPools: editing an inline
    profile puts every pool into Scaling (pulumi-azure-native issue 4264)."""
    return {
        "vnet_subnet_id": settings.network.subnet_id,
        "name": SYSTEM_POOL_NAME,
        "mode": "System",
        "vm_size": settings.system_pool.vm_size,
        "count": settings.system_pool.count,
        "os_type": "Linux",
        "type": "VirtualMachineScaleSets",
        "max_pods": MAX_PODS,
        "availability_zones": list(settings.zones) or None,
    }


def agent_pool_args(pool: NodePool, settings: ClusterSettings) -> dict[str, Any]:
    """AgentPool inputs for one user pool (autoscaled, or fixed-size when topology-aware without
    ProvisioningRequest; spot and GPU specifics included)."""
    args: dict[str, Any] = {
        "agent_pool_name": pool.name,
        "mode": "User",
        "vm_size": pool.vm_size,
        "os_type": "Linux",
        "type": "VirtualMachineScaleSets",
        # Allocatable memory depends on maxPods (kube-reserved = 20 MiB per pod + 50 MiB), so
        # the pool gets exactly the number the capacity model assumed.
        "max_pods": MAX_PODS,
        "node_labels": dict(pool.labels),
        "node_taints": [str(t) for t in pool.node_taints],
        "availability_zones": list(settings.zones) or None,
        "orchestrator_version": settings.kubernetes_version,
        # Its own subnet, else the cluster's; None: the VNet AKS makes.
        "vnet_subnet_id": pool.subnet_id or settings.network.subnet_id,
    }
    if pool.topology and not pool.autoscaled:
        # Fixed size: a topology-aware pool without ProvisioningRequest (TAS places pods only on
        # nodes that exist; config enforces min == max). Other pools keep the autoscaler on, even
        # with min == max, as they always had.
        args.update(enable_auto_scaling=False, count=pool.max_count)
    else:
        # AKS still requires a count for autoscaled pools (azure-native issue 2943); the live
        # value drifts with the autoscaler, so the resource ignores changes to it.
        args.update(enable_auto_scaling=True, min_count=pool.min_count, max_count=pool.max_count, count=pool.min_count)
    if pool.is_gpu:
        # AKS installs the NVIDIA driver; the device plugin comes from components/gpu/component.py.
        args["gpu_profile"] = {"driver": "Install"}
    if pool.spot:
        # Spot priority and eviction policy are fixed at creation (learn.microsoft.com/azure/aks/spot-node-pool);
        # -1 pays at most the on-demand price and is never evicted for price.
        args.update(scale_set_priority="Spot", scale_set_eviction_policy="Delete", spot_max_price=-1)
    return args


def network_profile(settings: ClusterSettings) -> containerservice.ContainerServiceNetworkProfileArgsDict:
    """Azure CNI overlay with Cilium, fixed; egress and ranges as configured, AKS's defaults where
    not (unsent, so a stack that sets none sends what it always did). Changing the plugin replaces
    the cluster (azure-native PR 4771); AKS fixes the ranges at creation (docs/network.md)."""
    network = settings.network
    profile: containerservice.ContainerServiceNetworkProfileArgsDict = {
        "network_plugin": "azure",
        "network_plugin_mode": "overlay",
        "network_dataplane": "cilium",
        "network_policy": "cilium",
        "load_balancer_sku": "standard",
    }
    if network.outbound_type:
        profile["outbound_type"] = network.outbound_type
    if network.pod_cidr:
        profile["pod_cidr"] = network.pod_cidr
    if network.service_cidr:
        profile["service_cidr"] = network.service_cidr
    if network.dns_service_ip:
        profile["dns_service_ip"] = network.dns_service_ip
    return profile


def api_server_access_profile(
    settings: ClusterSettings,
) -> containerservice.ManagedClusterAPIServerAccessProfileArgsDict | None:
    """A private cluster or authorized ranges; None leaves the API server public, as before."""
    api = settings.api_server
    if api.private:
        return {"enable_private_cluster": True}
    if api.authorized_ip_ranges:
        return {"authorized_ip_ranges": list(api.authorized_ip_ranges)}
    return None


def role_definition(subscription_id: pulumi.Input[str], role: str) -> pulumi.Output[str]:
    """A built-in Azure role's definition ID in the deploying subscription."""
    return pulumi.Output.concat(
        "/subscriptions/", subscription_id, "/providers/Microsoft.Authorization/roleDefinitions/", role
    )


def deployer_principal_type(token: str) -> str:
    try:
        return principal_type(token)
    except DeployerError as err:
        raise pulumi.RunError(str(err)) from None


class DeployingIdentity:
    """Whoever runs `pulumi up`: its object ID and its type for Azure RBAC (User or ServicePrincipal)."""

    def __init__(self) -> None:
        client = authorization.get_client_config_output()
        self.subscription_id = client.subscription_id
        self.object_id = client.object_id
        # The type is no secret; the token it is read from is.
        self.principal_type = pulumi.Output.unsecret(
            authorization.get_client_token_output().token.apply(deployer_principal_type)
        )

    def assign(
        self, name: str, parent: pulumi.Resource, scope: pulumi.Input[str], role: str, description: str
    ) -> authorization.RoleAssignment:
        return authorization.RoleAssignment(
            name,
            scope=scope,
            principal_id=self.object_id,
            principal_type=self.principal_type,
            role_definition_id=role_definition(self.subscription_id, role),
            description=description,
            opts=pulumi.ResourceOptions(parent=parent),
        )


def access_checked(kubeconfig: str, settings: ClusterSettings) -> str | Awaitable[str]:
    """The kubeconfig, once the API server lets its user in (an awaitable for Output.apply); at
    preview nothing is waited for: nothing Kubernetes is created then."""
    if pulumi.runtime.is_dry_run():
        return kubeconfig
    if settings.deployer_admin:
        what_to_check = (
            "Check the stack's role assignment for the deploying identity: az role assignment list --scope "
            "<the cluster's resource ID> --role 'Azure Kubernetes Service RBAC Cluster Admin'; that kubelogin is on "
            "PATH; and that `az account show` is the identity that ran pulumi up"
        )
    else:
        what_to_check = (
            "cluster.deployerAdmin is false, so the deploying identity comes in only through a group in "
            "cluster.adminGroupObjectIds: add it to one (az ad group member add), or set cluster.deployerAdmin: true"
        )
    pulumi.log.info(
        f"kueue-aks: waiting up to {ACCESS_DEADLINE / 60:g} minutes for the API server to let the deploying "
        "identity in (Azure role assignments take up to five minutes to reach it)"
    )

    async def wait() -> str:
        try:
            # A thread: the poll sleeps, and the program's other registrations go on meanwhile.
            return await asyncio.to_thread(wait_for_access, kubeconfig, what_to_check=what_to_check)
        except DeployerError as err:
            raise pulumi.RunError(f"kueue-aks:cluster.disableLocalAccounts: {err}") from None

    return wait()


def kubelogin_kubeconfig(kubeconfig: str) -> str:
    """Make an Entra ID exec kubeconfig non-interactive, as `kubelogin convert-kubeconfig -l azurecli` does.

    The deploying identity (a developer's `az login`, or CI's OIDC login) then gets tokens without
    a device-code prompt; kubelogin's AAD_LOGIN_METHOD environment variable can pick another mode.
    """
    doc = yaml.safe_load(kubeconfig)
    for user in doc.get("users") or []:
        exec_cfg = (user.get("user") or {}).get("exec")
        if exec_cfg and exec_cfg.get("command", "").endswith("kubelogin"):
            exec_cfg["args"] = ["get-token", "--login", "azurecli", "--server-id", AKS_AAD_SERVER_ID]
    return yaml.safe_dump(doc, sort_keys=False)


def _decode_kubeconfig(result: Any, *, exec_login: bool) -> str:
    text = base64.b64decode(result.kubeconfigs[0].value).decode()
    return kubelogin_kubeconfig(text) if exec_login else text


def aks_kubeconfig(
    resource_group: pulumi.Input[str], cluster: pulumi.Input[str], *, exec_login: bool
) -> pulumi.Output[str]:
    """The cluster's kubeconfig as a secret: admin credentials, or with local accounts off the
    user credentials made non-interactive for kubelogin."""
    credentials = (
        containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=resource_group, resource_name=cluster, format="exec"
        )
        if exec_login
        # Admin credentials work without kubelogin; AKS refuses them once local accounts are off.
        else containerservice.list_managed_cluster_admin_credentials_output(
            resource_group_name=resource_group, resource_name=cluster
        )
    )
    return pulumi.Output.secret(credentials.apply(lambda r: _decode_kubeconfig(r, exec_login=exec_login)))


def kubernetes_provider(
    name: str, parent: pulumi.Resource, kubeconfig: pulumi.Input[str], cluster_identifier: pulumi.Input[str] | None
) -> k8s.Provider:
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig,
        # Without it, a changed kubeconfig (rotated credentials, unknown during preview)
        # replaces the provider and with it every Kubernetes object (pulumi-kubernetes issue 2745).
        cluster_identifier=cluster_identifier,
        # `pulumi destroy` of a stack whose cluster is already gone still completes.
        delete_unreachable=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def kubeconfig_server(kubeconfig: str) -> str:
    """The API server URL of the kubeconfig's current context (its first cluster without one)."""
    doc = yaml.safe_load(kubeconfig) or {}
    context: dict[str, Any] = next(
        (c.get("context", {}) for c in doc.get("contexts", []) if c.get("name") == doc.get("current-context")), {}
    )
    clusters = doc.get("clusters") or [{}]
    cluster = next((c for c in clusters if c.get("name") == context.get("cluster")), clusters[0])
    return str((cluster.get("cluster") or {}).get("server", ""))


def pool_mismatches(pool: NodePool, actual: Mapping[str, Any]) -> list[str]:
    """How an existing AKS pool differs from the config's, field by field (empty: it matches).

    `actual` has the agent pool's vm_size, enable_auto_scaling, count, min_count, max_count,
    scale_set_priority, node_taints and node_labels, as azure-native's get_agent_pool gives them.
    """
    # Azure compares VM size names without case, so a different case is not a mismatch.
    vm_size = str(actual.get("vm_size") or "")
    expected: dict[str, Any] = {
        "vmSize": vm_size if vm_size.lower() == pool.vm_size.lower() else pool.vm_size,
        "spot": pool.spot,
        "taints": sorted(str(t) for t in pool.node_taints),
    }
    got: dict[str, Any] = {
        "vmSize": vm_size,
        "spot": actual.get("scale_set_priority") == "Spot",
        "taints": sorted(actual.get("node_taints") or []),
    }
    if pool.topology and not pool.autoscaled:
        expected |= {"autoscaling": False, "count": pool.max_count}
        got |= {"autoscaling": bool(actual.get("enable_auto_scaling")), "count": actual.get("count")}
    else:
        expected |= {"autoscaling": True, "minCount": pool.min_count, "maxCount": pool.max_count}
        got |= {
            "autoscaling": bool(actual.get("enable_auto_scaling")),
            "minCount": actual.get("min_count"),
            "maxCount": actual.get("max_count"),
        }
    labels = actual.get("node_labels") or {}
    expected["labels"] = dict(pool.labels)
    got["labels"] = {k: labels.get(k) for k in pool.labels}
    return [
        f"{key} is {got[key]!r} in Azure but {expected[key]!r} in the config"
        for key in expected
        if got[key] != expected[key]
    ]


def azure_monitor_profile(config: StackConfig) -> containerservice.ManagedClusterAzureMonitorProfileArgsDict | None:
    """The cluster's managed Prometheus add-on (ManagedCluster azure_monitor_profile), or None.
    The allow lists are empty, the templates' default: kube-state-metrics keeps its own labels."""
    if not config.monitoring.enabled:
        return None
    return {
        "metrics": {
            "enabled": True,
            "kube_state_metrics": {"metric_labels_allowlist": "", "metric_annotations_allow_list": ""},
        }
    }


class ExistingClusterMismatch(pulumi.RunError):
    """The existing cluster is not what the config describes (a pool: the quotas would be wrong)."""


def check_prometheus_addon(existing: ExistingCluster, profile: Any) -> bool:
    """Raise unless the existing cluster runs the managed Prometheus add-on monitoring relies on."""
    metrics = getattr(profile, "metrics", None)
    if not getattr(metrics, "enabled", False):
        raise ExistingClusterMismatch(
            f"kueue-aks:monitoring.enabled needs the managed Prometheus add-on on the existing AKS cluster "
            f"{existing.name}, and it is off. Its owner turns it on with: az aks update --resource-group "
            f"{existing.resource_group} --name {existing.name} --enable-azure-monitor-metrics "
            "--azure-monitor-workspace-resource-id <kueue-aks:monitoring.azureMonitorWorkspaceId>"
        )
    return True


def workload_identity_issuer(existing: ExistingCluster, cluster: Any) -> str:
    """The existing cluster's OIDC issuer URL; raise unless it has the issuer and workload identity on,
    which a team identity's federated credential and its pods' tokens need."""
    issuer = getattr(cluster.oidc_issuer_profile, "issuer_url", None) if cluster.oidc_issuer_profile else None
    workload = getattr(cluster.security_profile, "workload_identity", None) if cluster.security_profile else None
    off = [
        what
        for what, on in (("the OIDC issuer", issuer), ("workload identity", getattr(workload, "enabled", False)))
        if not on
    ]
    if off:
        raise ExistingClusterMismatch(
            f"kueue-aks:teams[].identity needs the OIDC issuer and workload identity on the existing AKS cluster "
            f"{existing.name}, and {' and '.join(off)} {'is' if len(off) == 1 else 'are'} off. Its owner turns "
            f"them on with: az aks update --resource-group {existing.resource_group} --name {existing.name} "
            "--enable-oidc-issuer --enable-workload-identity; or remove the identities"
        )
    return str(issuer)


def check_entra_integration(existing: ExistingCluster, aad_profile: Any) -> bool:
    """Raise unless the existing cluster signs users in with Entra ID (AKS-managed integration), which
    team members need: without it, the credentials the AKS Cluster User role hands out are a
    certificate with the cluster admin's rights, and Kubernetes never sees the members' groups."""
    if not getattr(aad_profile, "managed", False):
        raise ExistingClusterMismatch(
            f"kueue-aks:teams[].members needs the AKS-managed Entra ID integration on the existing AKS cluster "
            f"{existing.name}, and it is off: without it the cluster user credentials carry the admin's rights. "
            f"Its owner turns it on with: az aks update --resource-group {existing.resource_group} --name "
            f"{existing.name} --enable-aad --aad-admin-group-object-ids <admin group>; or remove the members"
        )
    return True


def taint_advice(pool: NodePool, actual_taints: Sequence[str] | None, existing: ExistingCluster) -> str | None:
    """What to do when an existing pool lacks taints the config gives it, or None when they match.

    The governance taint is one the user never wrote, so the message says where it comes from.
    AKS updates a pool's taints in place with `az aks nodepool update --node-taints`, which sets
    the whole list (https://learn.microsoft.com/azure/aks/use-node-taints).
    """
    expected = [str(t) for t in pool.node_taints]
    if sorted(expected) == sorted(actual_taints or []):
        return None
    lines = []
    if QUEUED_TAINT in expected and QUEUED_TAINT not in (actual_taints or []):
        lines.append(
            f"{QUEUED_TAINT} is the taint kueue-aks:governance.enforce puts on every user pool, so that only "
            "pods Kueue admitted run there; the stack file does not list it because governance adds it."
        )
    lines.append(
        "Give the pool its taints (the pool's owner runs it; NoSchedule leaves running pods where they are):\n"
        f"    az aks nodepool update --resource-group {existing.resource_group} --cluster-name {existing.name} "
        f"--name {pool.name} --node-taints {','.join(expected)}"
    )
    if pool.governed:
        lines.append("or, to keep the pool as it is, set kueue-aks:governance.enforce to false.")
    return "\n".join(lines)


def check_pool(index: int, pool: NodePool, result: Any, existing: ExistingCluster) -> str:
    """Raise when the existing pool differs; its name otherwise (an input for the provider)."""
    actual = {
        key: getattr(result, key, None)
        for key in (
            "vm_size",
            "enable_auto_scaling",
            "count",
            "min_count",
            "max_count",
            "scale_set_priority",
            "node_taints",
            "node_labels",
        )
    }
    problems = pool_mismatches(pool, actual)
    if problems:
        advice = taint_advice(pool, actual["node_taints"], existing)
        others = [p for p in problems if not p.startswith("taints ")]
        what_to_do = [advice] if advice else []
        if others:
            what_to_do.append("Change the stack file or the pool" + (" for the other differences." if advice else "."))
        raise ExistingClusterMismatch(
            f"kueue-aks:nodePools[{index}] ({pool.name}) does not match the existing AKS pool; the quotas would be "
            "wrong:\n" + "\n".join([*(f"  - {p}" for p in problems), *what_to_do])
        )
    return pool.name


class AksCluster(pulumi.ComponentResource):
    """The AKS cluster with its user pools, and a Kubernetes provider for it."""

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:cluster:AksCluster", name, None, opts)
        settings = config.cluster
        child = pulumi.ResourceOptions(parent=self)

        # Its autoname (this name plus 8 random characters) counts in the node resource group's length check.
        self.resource_group = resources.ResourceGroup(f"{name}-rg", location=config.location, opts=child)
        # In a subnet AKS does not own, the control plane needs Network Contributor on its VNet before
        # the cluster exists; ARM grants it only to an identity that exists first, a user-assigned one
        # (AKS grants it to a system-assigned identity only when the Azure CLI creates the cluster).
        self.control_plane_identity: managedidentity.UserAssignedIdentity | None = None
        self.network_role: authorization.RoleAssignment | None = None
        identity: containerservice.ManagedClusterIdentityArgsDict = {
            "type": containerservice.ResourceIdentityType.SYSTEM_ASSIGNED
        }
        cluster_after: list[pulumi.Resource] = []
        vnet = settings.network.vnet_id
        if vnet:
            self.control_plane_identity = managedidentity.UserAssignedIdentity(
                f"{name}-control-plane",
                resource_group_name=self.resource_group.name,
                location=config.location,
                opts=child,
            )
            self.network_role = authorization.RoleAssignment(
                f"{name}-control-plane-network",
                scope=vnet,
                principal_id=self.control_plane_identity.principal_id,
                # An identity just made may not have reached Entra ID's replicas: the type says what it is.
                principal_type="ServicePrincipal",
                # In the VNet's subscription, where the assignment lives.
                role_definition_id=role_definition(vnet.split("/")[2], NETWORK_CONTRIBUTOR_ROLE),
                description="kueue-aks: the AKS control plane joins nodes to the stack's subnets (cluster.network)",
                opts=child,
            )
            identity = {
                "type": containerservice.ResourceIdentityType.USER_ASSIGNED,
                "user_assigned_identities": [self.control_plane_identity.id],
            }
            cluster_after.append(self.network_role)
        self.cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=settings.name,
            resource_group_name=self.resource_group.name,
            location=config.location,
            dns_prefix=dns_prefix(settings.name),
            # How the next preview's preflight finds this stack's nodes, to count them only once.
            tags={STACK_TAG: stack_tag()},
            kubernetes_version=settings.kubernetes_version,
            sku=containerservice.ManagedClusterSKUArgsDict(name="Base", tier=settings.tier),
            # Premium and long-term support go together, both on or both off (learn.microsoft.com/azure/aks/
            # long-term-support); sent for every tier, so a move off Premium turns the plan off too.
            support_plan="AKSLongTermSupport" if settings.tier == "Premium" else "KubernetesOfficial",
            identity=identity,
            agent_pool_profiles=[system_pool_profile(settings)],
            enable_rbac=True,
            aad_profile=containerservice.ManagedClusterAADProfileArgsDict(
                managed=True,
                enable_azure_rbac=True,
                admin_group_object_ids=list(settings.admin_group_object_ids),
            ),
            disable_local_accounts=settings.disable_local_accounts,
            network_profile=network_profile(settings),
            api_server_access_profile=api_server_access_profile(settings),
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgsDict(enabled=True),
            # Managed Prometheus (kueue-aks:monitoring); its data collection is components/monitoring/component.py.
            azure_monitor_profile=azure_monitor_profile(config),
            security_profile=containerservice.ManagedClusterSecurityProfileArgsDict(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgsDict(enabled=True)
            ),
            auto_upgrade_profile=containerservice.ManagedClusterAutoUpgradeProfileArgsDict(
                upgrade_channel=settings.auto_upgrade_channel, node_os_upgrade_channel="NodeImage"
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=cluster_after),
        )

        # Pools depend on the cluster only, never on each other, so Azure creates them in parallel.
        self.node_pools: dict[str, containerservice.AgentPool] = {
            pool.name: containerservice.AgentPool(
                f"{name}-{pool.name}",
                resource_name_=self.cluster.name,
                resource_group_name=self.resource_group.name,
                **agent_pool_args(pool, settings),
                opts=pulumi.ResourceOptions(
                    parent=self, ignore_changes=[] if pool.topology and not pool.autoscaled else ["count"]
                ),
            )
            for pool in config.node_pools
        }

        # The principal follows the deploying identity: an `up` by another identity moves the role to it.
        self.deployer: DeployingIdentity | None = DeployingIdentity() if settings.deployer_admin else None
        self.deployer_admin = (
            self.deployer.assign(
                f"{name}-deployer-admin",
                self,
                self.cluster.id,
                CLUSTER_ADMIN_ROLE,
                "kueue-aks: the identity that ran pulumi up administers the cluster it made (cluster.deployerAdmin)",
            )
            if self.deployer
            else None
        )
        self.kubeconfig: pulumi.Output[str] = aks_kubeconfig(
            self.resource_group.name, self.cluster.name, exec_login=settings.disable_local_accounts
        )
        provider_kubeconfig = self.kubeconfig
        if settings.disable_local_accounts:
            # The program comes in as the deploying identity: no Kubernetes object before its role holds.
            after = [self.deployer_admin.id] if self.deployer_admin else []
            provider_kubeconfig = pulumi.Output.all(self.kubeconfig, *after).apply(
                lambda parts: access_checked(parts[0], settings)
            )
        self.provider = kubernetes_provider(f"{name}-k8s", self, provider_kubeconfig, self.cluster.id)

        self.cluster_name = self.cluster.name
        self.cluster_id: pulumi.Output[str] | None = self.cluster.id
        self.verified: pulumi.Output[bool] | None = None  # nothing to check: the stack made it
        self.resource_group_name = self.resource_group.name
        self.oidc_issuer_url = self.cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
        self.node_pool_names = [p.name for p in config.node_pools]
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "resourceGroupName": self.resource_group_name,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "nodePoolNames": self.node_pool_names,
                "kubeconfig": self.kubeconfig,
            }
        )


class ExistingAksCluster(pulumi.ComponentResource):
    """An AKS cluster made elsewhere: read, never created, changed or deleted by this stack."""

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:cluster:ExistingAksCluster", name, None, opts)
        existing = config.cluster.existing
        assert existing is not None, "ExistingAksCluster needs kueue-aks:cluster.existing"
        group, cluster_name = existing.resource_group, existing.name
        cluster = containerservice.get_managed_cluster_output(resource_group_name=group, resource_name=cluster_name)
        # Every pool is read and compared at preview; the provider waits for the checks, so a
        # mismatch stops the run before any Kubernetes object is touched.
        checked = [
            containerservice.get_agent_pool_output(
                agent_pool_name=pool.name, resource_group_name=group, resource_name=cluster_name
            ).apply(functools.partial(check_pool, i, pool, existing=existing))
            for i, pool in enumerate(config.node_pools)
        ]
        checks: list[pulumi.Output[Any]] = list(checked)
        if config.monitoring.enabled:
            checks.append(
                cluster.azure_monitor_profile.apply(lambda profile: check_prometheus_addon(existing, profile))
            )
        if any(t.members for t in config.teams):
            checks.append(cluster.aad_profile.apply(lambda profile: check_entra_integration(existing, profile)))
        if any(t.identity for t in config.teams):
            checks.append(cluster.apply(lambda found: workload_identity_issuer(existing, found)))
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            cluster.disable_local_accounts.apply(lambda off: aks_kubeconfig(group, cluster_name, exec_login=bool(off)))
        )
        # True once every check passed; monitoring's Azure resources wait for it too.
        self.verified: pulumi.Output[bool] | None = pulumi.Output.all(*checks).apply(lambda _: True)
        self.provider = kubernetes_provider(
            f"{name}-k8s", self, pulumi.Output.all(self.kubeconfig, *checks).apply(lambda parts: parts[0]), cluster.id
        )
        self.cluster_name: pulumi.Output[str] | None = cluster.name
        self.cluster_id: pulumi.Output[str] | None = cluster.id
        self.resource_group_name: pulumi.Output[str] | None = pulumi.Output.from_input(group)
        self.oidc_issuer_url: pulumi.Output[Any] | None = cluster.oidc_issuer_profile.apply(
            lambda p: p.issuer_url if p else None
        )
        self.node_pool_names = pulumi.Output.all(*checked)
        self.node_pools: dict[str, pulumi.Resource] = {}  # made elsewhere
        self.deployer = None  # its owners grant access to it
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "resourceGroupName": self.resource_group_name,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "nodePoolNames": self.node_pool_names,
                "kubeconfig": self.kubeconfig,
            }
        )


class KubeconfigCluster(pulumi.ComponentResource):
    """Any Kubernetes cluster whose nodes carry AKS's pool labels, reached with a secret kubeconfig;
    no Azure resource and no Azure credentials."""

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:cluster:KubeconfigCluster", name, None, opts)
        assert config.cluster.kubeconfig is not None, "KubeconfigCluster needs kueue-aks:cluster.kubeconfig"
        kubeconfig = pulumi.Output.secret(config.cluster.kubeconfig)
        # The API server's address identifies the cluster: rotated credentials keep every object,
        # another cluster replaces them (the address is not a credential).
        self.provider = kubernetes_provider(
            f"{name}-k8s", self, kubeconfig, kubeconfig_server(config.cluster.kubeconfig)
        )
        self.cluster_name = self.cluster_id = self.resource_group_name = self.oidc_issuer_url = None
        self.verified = None
        self.kubeconfig = None  # the stack's own secret config; not exported again
        self.node_pool_names = [p.name for p in config.node_pools]
        self.node_pools: dict[str, pulumi.Resource] = {}  # made elsewhere
        self.deployer = None
        self.register_outputs({"nodePoolNames": self.node_pool_names})
