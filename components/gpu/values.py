"""Values for NVIDIA's k8s-device-plugin chart (pure; components/gpu/component.py installs it).

AKS installs the NVIDIA driver on GPU nodes but not the device plugin; without it the nodes
advertise no nvidia.com/gpu and no GPU quota is ever usable (learn.microsoft.com/azure/aks/use-nvidia-gpu).
"""

from __future__ import annotations

from typing import Any

from ..config.names import POOL_LABEL
from ..config.pools import NodePool
from ..config.stack import StackConfig
from ..facts.device_plugin import (
    DEVICE_PLUGIN_CHART,
    DEVICE_PLUGIN_VERSION,
)
from ..k8s.charts import ChartRef, chart_ref


def device_plugin_chart(config: StackConfig) -> ChartRef:
    return chart_ref(config.device_plugin.chart, DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION, config.registry_logins)


def gpu_pools(config: StackConfig) -> list[NodePool]:
    return [p for p in config.node_pools if p.is_gpu]


def device_plugin_values(config: StackConfig) -> dict[str, Any]:
    """Values for the device plugin chart: only on the GPU pools, tolerating all their taints.

    The chart's default affinity needs Node Feature Discovery labels that AKS nodes do not have,
    so with it the DaemonSet would run nowhere (NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin/
    values.yaml@v0.20.0); Helm replaces lists, so our
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
    values: dict[str, Any] = {
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
    if config.device_plugin.image_repository:
        # Only the repository: the tag stays the chart's appVersion, the pinned version.
        values["image"] = {"repository": config.device_plugin.image_repository}
    return values
