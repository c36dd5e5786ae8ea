"""The RayService guard, a ValidatingAdmissionPolicy as plain dicts (pure; no Pulumi import)."""

from __future__ import annotations

from typing import Any

from ..config.names import MANAGED_LABEL
from ..config.stack import StackConfig
from ..k8s.admission import guard
from ..k8s.meta import COMMON_LABELS

RAYSERVICE_GUARD = "kueue-aks-rayservice-guard"


def rayservice_guard(config: StackConfig) -> list[dict[str, Any]]:
    """Refuses RayServices in team namespaces while `ray.io/raycluster` is on and `ray.io/rayservice`
    is not; empty otherwise.

    KubeRay copies a RayService's labels onto the RayCluster it creates, and in a team namespace
    Kueue's default LocalQueue takes any RayCluster there as its own, so both controllers would
    keep rewriting the same RayCluster and its pods would never start (Azure/AKS
    examples/kueue-and-ray-on-aks/1-infrastructure/terraform/kueue-values.yaml). A serving RayService is
    not batch work: it belongs in a namespace outside the teams, where Kueue manages nothing.
    """
    frameworks = set(config.kueue.frameworks)
    if "ray.io/raycluster" not in frameworks or "ray.io/rayservice" in frameworks:
        return []
    return guard(
        RAYSERVICE_GUARD,
        COMMON_LABELS,
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["ray.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE"],
                        "resources": ["rayservices"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}},
            },
            "validations": [
                {
                    "expression": "false",
                    "messageExpression": (
                        f"'{RAYSERVICE_GUARD}: RayService ' + request.namespace + '/' + object.metadata.name + ' was "
                        "refused: in a "
                        "team namespace Kueue queues the RayClusters a RayService creates (ray.io/raycluster is "
                        "enabled), and "
                        "KubeRay and Kueue would fight over them. Run RayServices in a namespace outside the teams.'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )
