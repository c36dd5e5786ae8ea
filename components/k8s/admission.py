"""ValidatingAdmissionPolicies as plain dicts: the shape every guard of the stack shares (pure;
no Pulumi import). The guards themselves belong to their concerns: Kueue's aggregated-role guard
(kueue/policies.py), the pool guard (governance/policies.py), the RayService guard
(operators/policies.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"  # GA since Kubernetes 1.30
GUARD_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def guard(name: str, labels: Mapping[str, str], spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy that fails closed, and the binding that makes it deny cluster-wide."""
    meta = {"name": name, "labels": dict(labels)}
    return [
        {
            "apiVersion": ADMISSION_API_VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta,
            "spec": {"failurePolicy": "Fail", **spec},
        },
        {
            "apiVersion": ADMISSION_API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": dict(meta),
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]


def split_guard(objects: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A part's guard (its policy and binding, or nothing) and its other objects, each in order."""
    guard_objects = [o for o in objects if o["kind"] in GUARD_KINDS]
    return guard_objects, [o for o in objects if o["kind"] not in GUARD_KINDS]


def cel_list(values: list[str]) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"
