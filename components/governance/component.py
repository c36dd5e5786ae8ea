"""PoolGuard: the ValidatingAdmissionPolicy that keeps pods Kueue did not admit off the user pools.

The policy is built by the pure components/governance/policies.py into the stack's part
(components/assembly.py); this component only registers it.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..config.stack import StackConfig
from ..k8s.manifest import admission_policy
from ..k8s.part import Part


class PoolGuard(pulumi.ComponentResource):
    """Only what Kueue admitted runs on user pools (kueue-aks:governance; docs/governance.md).

    The stack has its part only when config.governance.enforce is on; the pools' queued taint
    comes with the pool model (NodePool.node_taints), the `pod` integration with kueue_values.
    """

    TYPE = "kueue-aks:governance:PoolGuard"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives: none

    def __init__(
        self, name: str, part: Part, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        policy, binding = part.objects
        self.resources = admission_policy(self, f"{name}-policy", policy, binding)
        self.policy_name = policy["metadata"]["name"]
        self.exports = {}
        self.register_outputs({"policy": self.policy_name, "exemptNamespaces": list(config.governance.exempt)})
