"""AksCluster: resource group, AKS with only the system pool inline, one AgentPool per user pool,
a secret kubeconfig and the Kubernetes provider the later components use."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import containerservice, resources

from .capacity import MAX_PODS
from .config import SYSTEM_POOL_NAME, ClusterSettings, NodePool, StackConfig

# The Entra ID server application every AKS-managed AAD cluster uses for tokens
# (github.com/Azure/kubelogin issue 104; `kubelogin convert-kubeconfig` writes the same).
AKS_AAD_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"


def system_pool_profile(settings: ClusterSettings) -> containerservice.ManagedClusterAgentPoolProfileArgsDict:
    """The one pool AKS needs inline. User pools are separate AgentPools: editing an inline
    profile puts every pool into Scaling (pulumi-azure-native issue 4264)."""
    return {
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
    """AgentPool inputs for one user pool (autoscaled, or fixed-size when topology-aware; spot and
    GPU specifics included)."""
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
    }
    if pool.topology:
        # Fixed size: topology-aware scheduling places jobs only on nodes that exist, and the
        # autoscaler never adds nodes for jobs Kueue has not admitted (config enforces min == max).
        args.update(enable_auto_scaling=False, count=pool.max_count)
    else:
        # AKS still requires a count for autoscaled pools (azure-native issue 2943); the live
        # value drifts with the autoscaler, so the resource ignores changes to it.
        args.update(enable_auto_scaling=True, min_count=pool.min_count, max_count=pool.max_count, count=pool.min_count)
    if pool.is_gpu:
        # AKS installs the NVIDIA driver; the device plugin comes from components/gpu.py.
        args["gpu_profile"] = {"driver": "Install"}
    if pool.spot:
        # Spot priority and eviction policy are fixed at creation (learn.microsoft.com/azure/aks/spot-node-pool);
        # -1 pays at most the on-demand price and is never evicted for price.
        args.update(scale_set_priority="Spot", scale_set_eviction_policy="Delete", spot_max_price=-1)
    return args


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


class AksCluster(pulumi.ComponentResource):
    """The AKS cluster with its user pools, and a Kubernetes provider for it."""

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:cluster:AksCluster", name, None, opts)
        settings = config.cluster
        child = pulumi.ResourceOptions(parent=self)

        self.resource_group = resources.ResourceGroup(f"{name}-rg", location=config.location, opts=child)
        self.cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=settings.name,
            resource_group_name=self.resource_group.name,
            location=config.location,
            dns_prefix=settings.name,
            kubernetes_version=settings.kubernetes_version,
            sku=containerservice.ManagedClusterSKUArgsDict(name="Base", tier=settings.tier),
            identity=containerservice.ManagedClusterIdentityArgsDict(type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED),
            agent_pool_profiles=[system_pool_profile(settings)],
            enable_rbac=True,
            aad_profile=containerservice.ManagedClusterAADProfileArgsDict(
                managed=True,
                enable_azure_rbac=True,
                admin_group_object_ids=list(settings.admin_group_object_ids),
            ),
            disable_local_accounts=settings.disable_local_accounts,
            # Changing any of these replaces the cluster (azure-native PR 4771), so they are fixed.
            network_profile=containerservice.ContainerServiceNetworkProfileArgsDict(
                network_plugin="azure",
                network_plugin_mode="overlay",
                network_dataplane="cilium",
                network_policy="cilium",
                load_balancer_sku="standard",
            ),
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgsDict(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgsDict(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgsDict(enabled=True)
            ),
            auto_upgrade_profile=containerservice.ManagedClusterAutoUpgradeProfileArgsDict(
                upgrade_channel=settings.auto_upgrade_channel, node_os_upgrade_channel="NodeImage"
            ),
            opts=child,
        )

        # Pools depend on the cluster only, never on each other, so Azure creates them in parallel.
        self.node_pools: dict[str, containerservice.AgentPool] = {
            pool.name: containerservice.AgentPool(
                f"{name}-{pool.name}",
                resource_name_=self.cluster.name,
                resource_group_name=self.resource_group.name,
                **agent_pool_args(pool, settings),
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=[] if pool.topology else ["count"]),
            )
            for pool in config.node_pools
        }

        exec_login = settings.disable_local_accounts
        credentials = (
            containerservice.list_managed_cluster_user_credentials_output(
                resource_group_name=self.resource_group.name, resource_name=self.cluster.name, format="exec"
            )
            if exec_login
            # Admin credentials work without kubelogin; AKS refuses them once local accounts are off.
            else containerservice.list_managed_cluster_admin_credentials_output(
                resource_group_name=self.resource_group.name, resource_name=self.cluster.name
            )
        )
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            credentials.apply(lambda r: _decode_kubeconfig(r, exec_login=exec_login))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # Without it, a changed kubeconfig (rotated credentials, unknown during preview)
            # replaces the provider and with it every Kubernetes object (pulumi-kubernetes issue 2745).
            cluster_identifier=self.cluster.id,
            # `pulumi destroy` of a stack whose cluster is already gone still completes.
            delete_unreachable=True,
            opts=child,
        )

        self.cluster_name = self.cluster.name
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
