"""ProvisioningRequestApi: waits until the cluster serves ProvisioningRequests, before Kueue starts.

The ProvisioningRequest CRD (provisioningrequests.autoscaling.x-k8s.io) belongs to the cluster
autoscaler, and on AKS to the platform. The AKS how-to for Kueue with the cluster autoscaler
(MicrosoftDocs azure-aks-docs articles/aks/configure-kueue-with-cluster-autoscaler.md) installs
nothing but Kueue and the queue objects, so AKS brings the CRD with its managed autoscaler
(Kubernetes >= 1.33: articles/aks/cluster-autoscaler.md, Azure/AKS#5867); no page says so, and it was not
verified on a cluster.
The stack never installs a second copy; it reads the CRD, so a cluster without it fails `pulumi up`
with the CRD's name before Kueue is installed.

Kueue looks for that API once, at start-up, and without it never runs its ProvisioningRequest
controller (the AdmissionChecks stay inactive and so do the ClusterQueues that use them;
ServerSupportsProvisioningRequest in kubernetes-sigs/kueue cmd/kueue/main.go@v0.19.2). So the Kueue
release waits for this read, and the read waits for the autoscaled pools whose creation turns AKS's
autoscaler on.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..config.stack import StackConfig

PROVISIONING_REQUEST_CRD = "provisioningrequests.autoscaling.x-k8s.io"


def uses_provisioning(config: StackConfig) -> bool:
    return any(p.provisioning_request for p in config.node_pools)


def provisioning_ready(
    config: StackConfig, *, pools: Mapping[str, pulumi.Resource], opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """What Kueue's release waits for on this stack: the CRD's read when a pool provisions by
    request, else nothing (and nothing is read)."""
    if not uses_provisioning(config):
        return []
    return ProvisioningRequestApi("autoscaling", config, pools=pools, opts=opts).ready


class ProvisioningRequestApi(pulumi.ComponentResource):
    """The cluster's ProvisioningRequest CRD, read (never created) once the autoscaled pools exist."""

    crd: k8s.apiextensions.v1.CustomResourceDefinition
    ready: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        *,
        pools: Mapping[str, pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kueue-aks:autoscaling:ProvisioningRequestApi", name, None, opts)
        after = [pools[p.name] for p in config.node_pools if p.provisioning_request and p.name in pools]
        self.crd = k8s.apiextensions.v1.CustomResourceDefinition.get(
            f"{name}-provisioningrequest-crd",
            PROVISIONING_REQUEST_CRD,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        self.ready = [self.crd]
        self.register_outputs({"crd": PROVISIONING_REQUEST_CRD})
