"""The aggregated-role guard's CEL, evaluated offline with cel-python as the API server would.

The e2e tier shows the guard on a real API server (tests/e2e/test_teardown.py); these tests pin
what each expression decides, so a change to the policy is caught without a control plane.
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from components.policies import AGGREGATED_ROLES, aggregated_role_guard


def _evaluate(expression: str, obj: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate({"object": celpy.json_to_cel(obj)})


def _role(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta}


POLICY, BINDING = aggregated_role_guard()
MATCH = POLICY["spec"]["matchConditions"][0]["expression"]
ALLOW = POLICY["spec"]["validations"][0]["expression"]


@pytest.mark.parametrize("name", AGGREGATED_ROLES)
def test_helm_may_create_the_aggregated_roles_and_nothing_else_may(name: str) -> None:
    assert _evaluate(MATCH, _role(name))
    assert _evaluate(ALLOW, _role(name, {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "kueue-0.19.2"}))
    # What the aggregation controller's server-side apply creates: a name and rules, no labels.
    assert not _evaluate(ALLOW, _role(name))
    assert not _evaluate(ALLOW, _role(name, {"app.kubernetes.io/managed-by": "someone-else"}))


@pytest.mark.parametrize("name", ["kueue-clusterqueue-editor-role", "admin", "kueue-batch-admin-role-2"])
def test_other_cluster_roles_are_not_matched(name: str) -> None:
    assert not _evaluate(MATCH, _role(name))


def test_policy_only_sees_creates_of_cluster_roles_and_denies() -> None:
    rules = POLICY["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": ["rbac.authorization.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE"],
                      "resources": ["clusterroles"]}]
    assert BINDING["spec"] == {"policyName": POLICY["metadata"]["name"], "validationActions": ["Deny"]}
    message = _evaluate(POLICY["spec"]["validations"][0]["messageExpression"], _role(AGGREGATED_ROLES[0]))
    assert AGGREGATED_ROLES[0] in str(message) and POLICY["metadata"]["name"] in str(message)
