"""NvidiaDevicePlugin: NVIDIA's k8s-device-plugin on the GPU pools, so nvidia.com/gpu is schedulable.

AKS installs the NVIDIA driver on GPU nodes but not the device plugin; without it the nodes
advertise no nvidia.com/gpu and no GPU quota is ever usable (learn.microsoft.com/azure/aks/use-nvidia-gpu;
pulumi-aks.md §9.4).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .config import POOL_LABEL, NodePool, StackConfig
from .helm import namespaced_release

DEVICE_PLUGIN_REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"
DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
# Chart version (= appVersion, so image nvcr.io/nvidia/k8s-device-plugin of that version);
# tests check it against ../shared/nvidia-device-plugin/v0.20.0/Chart.yaml.
DEVICE_PLUGIN_VERSION = "0.20.0"
DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
DEVICE_PLUGIN_RELEASE_NAME = "nvidia-device-plugin"


def gpu_pools(config: StackConfig) -> list[NodePool]:
    return [p for p in config.node_pools if p.is_gpu]


def device_plugin_values(config: StackConfig) -> dict[str, Any]:
    """Values for the device plugin chart: only on the GPU pools, tolerating all their taints.

    The chart's default affinity needs Node Feature Discovery labels that AKS nodes do not have,
    so with it the DaemonSet would run nowhere (pulumi-aks.md §9.4); Helm replaces lists, so our
    nodeSelectorTerms replace the chart's. Our tolerations likewise replace the chart's list and
    cover every taint of every GPU pool, including AKS's spot taint.
    """
    pools = gpu_pools(config)
    if not pools:
        raise ValueError("the device plugin needs at least one GPU pool")
    tolerations: list[dict[str, str]] = []
    for pool in pools:
        for taint in pool.node_taints:
            if taint.toleration() not in tolerations:
                tolerations.append(taint.toleration())
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": [p.name for p in pools]}]}
                    ]
                }
            }
        },
        "tolerations": tolerations,
    }


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The device plugin DaemonSet, pinned, in its own namespace. Create it only when config.has_gpu."""

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:gpu:NvidiaDevicePlugin", name, None, opts)
        # Not tied to the AgentPools: a DaemonSet waits for no node, and its pods start on GPU
        # nodes whenever the autoscaler adds them.
        self.namespace, self.release = namespaced_release(
            self,
            name,
            namespace=DEVICE_PLUGIN_NAMESPACE,
            release_name=DEVICE_PLUGIN_RELEASE_NAME,
            chart=DEVICE_PLUGIN_CHART,
            repository=DEVICE_PLUGIN_REPOSITORY,
            version=DEVICE_PLUGIN_VERSION,
            values=device_plugin_values(config),
        )
        self.register_outputs({"namespace": self.namespace.metadata.name, "releaseStatus": self.release.status})
