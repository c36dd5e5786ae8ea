"""The metadata every object the stack creates carries: its name, namespace and the labels that
say who manages it."""

from __future__ import annotations

from typing import Any

COMMON_LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "kueue-aks"}


def object_meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(COMMON_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta
