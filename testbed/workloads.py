"""Kueue Workloads as `kubectl get workloads.kueue.x-k8s.io -A -o json` shows them, and the
teams' namespaces, for the forecast's trace reader."""

from __future__ import annotations

from typing import Any

NAMESPACES = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {"metadata": {"name": "research", "labels": {"kueue-aks.io/team": "research", "kueue-aks.io/managed": "true"}}},
        {"metadata": {"name": "platform", "labels": {"kueue-aks.io/team": "platform"}}},
        {"metadata": {"name": "kube-system", "labels": {}}},
    ],
}


def condition(kind: str, at: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": at, "reason": "x", "message": ""}


def workload(name: str, namespace: str, created: str, conditions: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}}
            ]
        }
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": {"queueName": "default", "podSets": [{"name": "main", "count": 2, "template": template}], **spec},
        "status": {"conditions": conditions},
    }


FINISHED = [
    condition("QuotaReserved", "2025-03-01T10:00:30Z"),
    condition("Admitted", "2025-03-01T10:00:30Z"),
    condition("Finished", "2025-03-01T11:00:30Z"),
]
