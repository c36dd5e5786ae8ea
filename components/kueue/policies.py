"""The aggregated-role guard, a ValidatingAdmissionPolicy as plain dicts (pure; no Pulumi import).

The guard makes `helm uninstall --wait` of Kueue finish. Kueue's chart has two
ClusterRoles with an `aggregationRule` (`<release>-batch-admin-role`, `<release>-batch-user-role`).
While Helm deletes them together with the roles they aggregate, kube-controller-manager's
clusterrole-aggregation-controller still has them in its cache and server-side-applies their
rules, which creates them anew without Helm's labels; Helm's wait for their deletion then never
ends and the two roles stay behind (seen on Kubernetes 1.36 with Helm 3.22: ../shared/reference/
kueue.md §15). The guard refuses to create a ClusterRole of those names that Helm does not label
as its own, so the controller's re-creation fails and the roles stay deleted. Helm's own installs
and upgrades carry the label and pass; updates are not affected.
"""

from __future__ import annotations

from typing import Any

from ..k8s.admission import cel_list, guard
from .objects import COMMON_LABELS
from .values import KUEUE_RELEASE_NAME

# Kueue's role for batch users (the stack binds it in team namespaces: components/access).
BATCH_USER_ROLE = f"{KUEUE_RELEASE_NAME}-batch-user-role"
AGGREGATED_ROLES = (f"{KUEUE_RELEASE_NAME}-batch-admin-role", BATCH_USER_ROLE)
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")  # Helm's own label on everything it installs
AGGREGATED_ROLE_GUARD = "kueue-aks-aggregated-role-guard"


def aggregated_role_guard() -> list[dict[str, Any]]:
    """The policy and its binding; both must exist while the Kueue release is uninstalled."""
    key, value = HELM_MANAGED_BY
    return guard(AGGREGATED_ROLE_GUARD, COMMON_LABELS, {
        "matchConstraints": {
            "resourceRules": [{
                "apiGroups": ["rbac.authorization.k8s.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["clusterroles"],
            }],
        },
        "matchConditions": [{"name": "kueue-aggregated-role", "expression": f"object.metadata.name in {cel_list(list(AGGREGATED_ROLES))}"}],
        "validations": [{
            "expression": (f"has(object.metadata.labels) && '{key}' in object.metadata.labels && "
                           f"object.metadata.labels['{key}'] == '{value}'"),
            "messageExpression": (
                "'ClusterRole ' + object.metadata.name + ' belongs to the Kueue Helm release; only Helm creates it "
                f"(policy {AGGREGATED_ROLE_GUARD}: it keeps the aggregation controller from re-creating it "
                "while the release is uninstalled)'"
            ),
            "reason": "Forbidden",
        }],
    })
