"""NvidiaDevicePlugin: NVIDIA's k8s-device-plugin on the GPU pools, so nvidia.com/gpu is schedulable.

Its release (chart and values, from the pure components/gpu/values.py) is the stack's part in
components/assembly.py, which the offline plan renders too.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..k8s.helm import namespaced_release
from ..k8s.part import Part


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The device plugin DaemonSet, pinned, in its own namespace: the release of `part` (a stack
    with GPU pools has one)."""

    TYPE = "kueue-aks:gpu:NvidiaDevicePlugin"  # its part's type (components/assembly.py)

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    exports: dict[str, Any]  # the stack outputs it gives: none

    def __init__(self, name: str, part: Part, *, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        (plugin,) = part.releases
        # Not tied to the AgentPools: a DaemonSet waits for no node, and its pods start on GPU
        # nodes whenever the autoscaler adds them.
        self.namespace, self.release = namespaced_release(self, name, plugin)
        self.exports = {}
        self.register_outputs({"namespace": self.namespace.metadata.name, "releaseStatus": self.release.status})
