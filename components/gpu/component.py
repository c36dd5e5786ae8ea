"""NvidiaDevicePlugin: NVIDIA's k8s-device-plugin on the GPU pools, so nvidia.com/gpu is schedulable.

The values come from the pure components/gpu/values.py, so the offline plan renders them
without importing Pulumi.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..config.stack import StackConfig
from ..facts.device_plugin import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_RELEASE_NAME
from ..k8s.helm import namespaced_release
from .values import device_plugin_chart, device_plugin_values


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
            chart=device_plugin_chart(config),
            values=device_plugin_values(config),
        )
        self.register_outputs({"namespace": self.namespace.metadata.name, "releaseStatus": self.release.status})
