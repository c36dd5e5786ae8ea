"""The stack's guards on Kueue's objects, ValidatingAdmissionPolicies as plain dicts (pure; no
Pulumi import).

The aggregated-role guard makes `helm uninstall --wait` of Kueue finish. Kueue's chart has two
ClusterRoles with an `aggregationRule` (`<release>-batch-admin-role`, `<release>-batch-user-role`).
While Helm deletes them together with the roles they aggregate, kube-controller-manager's
clusterrole-aggregation-controller still has them in its cache and server-side-applies their
rules, which creates them anew without Helm's labels; Helm's wait for their deletion then never
ends and the two roles stay behind (seen on Kubernetes 1.36 with Helm 3.22: docs/day-2.md#tear-down).
The guard refuses to create a ClusterRole of those names that Helm does not label as its own, so the
controller's re-creation fails and the roles stay deleted. Helm's own installs and upgrades carry the
label and pass; updates are not affected.

The priority-class guard refuses, in team namespaces, an object whose
`kueue.x-k8s.io/priority-class` label names no WorkloadPriorityClass of the stack. Kueue itself
accepts such a job and then never makes its Workload: the job stays suspended with no word to its
owner (the error is only in Kueue's log; tests/e2e/queues/test_waiting.py). Creates only, so that a class
removed later never blocks the controllers' updates of jobs that already run.
"""

from __future__ import annotations

from typing import Any

from ..config.names import MANAGED_LABEL
from ..config.stack import StackConfig
from ..config.teams import DEFAULT_PRIORITY
from ..facts.kueue_versions import AKS_PRIORITY_CLASSES
from ..k8s.admission import cel_list, guard
from ..k8s.meta import COMMON_LABELS
from .values import KUEUE_RELEASE_NAME

# Kueue's role for batch users (the stack binds it in team namespaces: components/access).
BATCH_USER_ROLE = f"{KUEUE_RELEASE_NAME}-batch-user-role"
AGGREGATED_ROLES = (f"{KUEUE_RELEASE_NAME}-batch-admin-role", BATCH_USER_ROLE)
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")  # Helm's own label on everything it installs
AGGREGATED_ROLE_GUARD = "kueue-aks-aggregated-role-guard"
PRIORITY_CLASS_GUARD = "kueue-aks-priority-class-guard"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


def aggregated_role_guard() -> list[dict[str, Any]]:
    """The policy and its binding; both must exist while the Kueue release is uninstalled."""
    key, value = HELM_MANAGED_BY
    return guard(
        AGGREGATED_ROLE_GUARD,
        COMMON_LABELS,
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["rbac.authorization.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["clusterroles"],
                    }
                ],
            },
            "matchConditions": [
                {
                    "name": "kueue-aggregated-role",
                    "expression": f"object.metadata.name in {cel_list(list(AGGREGATED_ROLES))}",
                }
            ],
            "validations": [
                {
                    "expression": (
                        f"has(object.metadata.labels) && '{key}' in object.metadata.labels && "
                        f"object.metadata.labels['{key}'] == '{value}'"
                    ),
                    "messageExpression": (
                        "'ClusterRole ' + object.metadata.name + ' belongs to the Kueue Helm release; only Helm "
                        "creates it "
                        f"(policy {AGGREGATED_ROLE_GUARD}: it keeps the aggregation controller from re-creating it "
                        "while the release is uninstalled)'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def priority_class_guard(config: StackConfig) -> list[dict[str, Any]]:
    """The policy and its binding: in team namespaces, a priority-class label names one of the
    stack's WorkloadPriorityClasses (or, on AKS's managed extension, one of the extension's), or the
    object is refused with the classes there are."""
    names = [pc.name for pc in config.priority_classes] + (list(AKS_PRIORITY_CLASSES) if config.kueue.extension else [])
    label = f"object.metadata.labels['{PRIORITY_CLASS_LABEL}']"
    return guard(
        PRIORITY_CLASS_GUARD,
        COMMON_LABELS,
        {
            "matchConstraints": {
                # Every kind: Kueue reads the label on each job kind it integrates, and on bare pods.
                "resourceRules": [
                    {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["*"]}
                ],
                "namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}},
            },
            "matchConditions": [
                {
                    "name": "has-priority-class-label",
                    "expression": (
                        f"has(object.metadata) && has(object.metadata.labels) && '{PRIORITY_CLASS_LABEL}' in "
                        "object.metadata.labels"
                    ),
                }
            ],
            "validations": [
                {
                    "expression": f"{label} in {cel_list(names)}",
                    "messageExpression": (
                        f"'{PRIORITY_CLASS_LABEL}: ' + {label} + ' is not a WorkloadPriorityClass of this cluster; "
                        "use one of: "
                        f"{', '.join(names)} (kubectl get workloadpriorityclasses), or leave the label out to run as "
                        f"{config.unlabelled_class or f'priority {DEFAULT_PRIORITY}'} (policy {PRIORITY_CLASS_GUARD})'"
                    ),
                    "reason": "Invalid",
                }
            ],
        },
    )
