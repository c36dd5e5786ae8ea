"""A stack's Pulumi state as `pulumi stack export` writes it, with the operations an interrupted
`up` leaves pending."""

from __future__ import annotations

from typing import Any

NAMESPACE_URN = "urn:pulumi:dev::kueue-aks::kueue-aks:kueue:KueueQueues$kubernetes:core/v1:Namespace::queues-research"


def state(*operations: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": 3,
        "deployment": {
            "resources": [],
            "pending_operations": [
                {"resource": {"urn": urn, "type": urn.split("$")[-1].split("::")[0], "inputs": inputs}, "type": op}
                for urn, op, inputs in operations
            ],
        },
    }


NAMESPACE = (NAMESPACE_URN, "creating", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}})
