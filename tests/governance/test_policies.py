"""The admission policies' CEL, evaluated offline with cel-python as the API server would.

The e2e tier shows the guards on a real API server (tests/e2e/engine/test_teardown.py,
tests/e2e/access/test_governance.py); these tests pin what each expression decides, so a change to a
policy is caught without a control plane.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import celpy
import pytest

from components.config.stack import StackConfig
from components.governance.policies import POOL_GUARD, pool_guard
from components.kueue.policies import (
    AGGREGATED_ROLES,
    PRIORITY_CLASS_LABEL,
    aggregated_role_guard,
    priority_class_guard,
)
from testbed.stacks import load_stack, stack_file_config


def _evaluate(expression: str, obj: dict[str, Any], **bindings: Any) -> Any:
    """Evaluate `expression` with `object` bound to `obj` and any other top-level names (JSON
    values, or CEL values such as the `variables` map). cel-python raises on an evaluation error."""
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(obj)}
    activation |= {
        name: value if isinstance(value, celpy.celtypes.MapType) else celpy.json_to_cel(value)
        for name, value in bindings.items()
    }
    return env.program(env.compile(expression)).evaluate(activation)


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
    assert rules == [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["clusterroles"],
        }
    ]
    assert BINDING["spec"] == {"policyName": POLICY["metadata"]["name"], "validationActions": ["Deny"]}
    message = _evaluate(POLICY["spec"]["validations"][0]["messageExpression"], _role(AGGREGATED_ROLES[0]))
    assert AGGREGATED_ROLES[0] in str(message) and POLICY["metadata"]["name"] in str(message)


# --- the pool guard (kueue-aks:governance) ---------------------------------------------------

DEV = load_stack(stack_file_config("dev"))  # pools cpu, gpu, tas; teams research, platform
TEAM_NAMESPACE_LABELS = {"kueue-aks.io/team": "research", "kueue-aks.io/managed": "true"}
QUEUED_TOLERATION = {"key": "kueue-aks.io/queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _pod(name: str = "trainer", **spec: Any) -> dict[str, Any]:
    """A pod as a CREATE request carries it: no namespace in metadata (it comes from the request)."""
    metadata: dict[str, Any] = {"name": name}
    for key in ("labels", "ownerReferences", "generateName"):
        if key in spec:
            metadata[key] = spec.pop(key)
    if metadata.get("generateName"):
        del metadata["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def _namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    # The API server always sets kubernetes.io/metadata.name (NamespaceDefaultLabelName).
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}},
    }


def _owner(kind: str, api_version: str = "batch/v1") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": "owner",
            "uid": "00000000-0000-0000-0000-000000000001",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _admit(
    config: StackConfig, pod: dict[str, Any], namespace: dict[str, Any], old: dict[str, Any] | None = None
) -> tuple[bool, str | None]:
    """The pool guard's verdict on creating `pod` in `namespace` (updating `old` to `pod` when
    given), as the API server reaches it: each variable in order (a later one may use the earlier
    ones), then the validation; for a denial also the messageExpression."""
    policy, _ = pool_guard(config)
    request = {"namespace": namespace["metadata"]["name"], "operation": "UPDATE" if old else "CREATE"}
    bindings: dict[str, Any] = {"namespaceObject": namespace, "request": request, "oldObject": old}
    variables = celpy.celtypes.MapType()
    for variable in policy["spec"]["variables"]:
        value = _evaluate(variable["expression"], pod, **bindings, variables=variables)
        assert isinstance(value, celpy.celtypes.BoolType), (variable["name"], value)
        variables[celpy.celtypes.StringType(variable["name"])] = value
    (validation,) = policy["spec"]["validations"]
    allowed = _evaluate(validation["expression"], pod, **bindings, variables=variables)
    assert isinstance(allowed, celpy.celtypes.BoolType), allowed
    if allowed:
        return True, None
    message = _evaluate(validation["messageExpression"], pod, **bindings, variables=variables)
    assert isinstance(message, str), message
    return False, str(message)


def _required_affinity(operator: str, values: list[str]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.azure.com/agentpool", "operator": operator, "values": values}
                        ]
                    },
                ]
            }
        }
    }


DEFAULT_NS = _namespace("default")
TEAM_NS = _namespace("research", TEAM_NAMESPACE_LABELS)


@pytest.mark.parametrize(
    ("pod", "namespace", "reason"),
    [
        (_pod(tolerations=[QUEUED_TOLERATION]), DEFAULT_NS, "it tolerates the kueue-aks.io/queued taint"),
        # Any toleration of the key counts, whatever its operator or value.
        (_pod(tolerations=[{"key": "kueue-aks.io/queued", "operator": "Exists"}]), DEFAULT_NS, "it tolerates"),
        # An empty key with Exists tolerates every taint, the queued one included.
        (_pod(tolerations=[{"operator": "Exists"}]), DEFAULT_NS, "it tolerates"),
        (_pod(tolerations=[{"key": "", "operator": "Exists", "effect": "NoSchedule"}]), DEFAULT_NS, "it tolerates"),
        (_pod(nodeSelector={"kubernetes.azure.com/agentpool": "gpu"}), DEFAULT_NS, "it selects a pool"),
        (_pod(affinity=_required_affinity("In", ["gpu"])), DEFAULT_NS, "it selects a pool"),
        (_pod(affinity=_required_affinity("In", ["system", "tas"])), DEFAULT_NS, "it selects a pool"),
        (_pod(nodeName="aks-gpu-12345678-vmss000000"), DEFAULT_NS, "it names a pool node"),
        (
            _pod(nodeName="aks-cpu-12345678-vmss00000a", tolerations=[QUEUED_TOLERATION]),
            DEFAULT_NS,
            "it names a pool node",
        ),
        # In a team namespace: a pod no Kueue-managed job owns and Kueue did not admit itself.
        (
            _pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("ReplicaSet", "apps/v1")),
            TEAM_NS,
            "it tolerates",
        ),
        (_pod(tolerations=[QUEUED_TOLERATION]), TEAM_NS, "it tolerates"),
        (_pod(nodeSelector={"kubernetes.azure.com/agentpool": "cpu"}), TEAM_NS, "it selects a pool"),
        (_pod(tolerations=[QUEUED_TOLERATION], labels={"kueue.x-k8s.io/managed": "false"}), TEAM_NS, "it tolerates"),
        # A namespace that only looks like a team's: the managed label must say "true".
        (
            _pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("Job")),
            _namespace("research", {"kueue-aks.io/team": "research", "kueue-aks.io/managed": "false"}),
            "it tolerates",
        ),
    ],
)
def test_pool_guard_denies_pods_that_would_reach_a_pool_without_kueue(
    pod: dict[str, Any], namespace: dict[str, Any], reason: str
) -> None:
    allowed, message = _admit(DEV, pod, namespace)
    assert not allowed
    assert message is not None
    ns = namespace["metadata"]["name"]
    # It names the policy, what was refused and why, and what to do instead.
    assert message.startswith(f"{POOL_GUARD}: pod {ns}/trainer was refused: ")
    assert f"({reason}" in message
    assert "team LocalQueue" in message and "kueue.x-k8s.io/queue-name" in message
    assert "kueue-aks:governance.exemptNamespaces" in message


@pytest.mark.parametrize(
    ("pod", "namespace"),
    [
        (_pod(), DEFAULT_NS),
        (_pod(), TEAM_NS),
        (_pod(nodeName="aks-system-12345678-vmss000000"), DEFAULT_NS),
        (_pod(nodeSelector={"kubernetes.azure.com/agentpool": "system"}), DEFAULT_NS),
        (_pod(nodeSelector={"kubernetes.azure.com/mode": "system"}), DEFAULT_NS),
        (_pod(affinity=_required_affinity("NotIn", ["gpu"])), DEFAULT_NS),  # keeps off a pool, does not select one
        # A pool's name inside another name is not that pool: "aks-cpu-" is the prefix, not "aks-cpu".
        (_pod(nodeName="aks-cpux-12345678-vmss000000"), DEFAULT_NS),
        # Tolerating other taints (the GPU one, added for any nvidia.com/gpu request) is not enough
        # to reach a pool, whose queued taint still holds.
        (
            _pod(
                tolerations=[
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "CriticalAddonsOnly", "operator": "Exists"},
                ]
            ),
            DEFAULT_NS,
        ),
        # In a team namespace, what Kueue admitted: a Job's pod (tolerations from the flavor)...
        (_pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("Job")), TEAM_NS),
        (
            _pod(
                nodeSelector={"kubernetes.azure.com/agentpool": "gpu"},
                tolerations=[QUEUED_TOLERATION],
                ownerReferences=_owner("Job"),
            ),
            TEAM_NS,
        ),
        # ...a pod of another framework Kueue queues there...
        (_pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("RayCluster", "ray.io/v1")), TEAM_NS),
        (_pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("PyTorchJob", "kubeflow.org/v1")), TEAM_NS),
        # ...or a pod Kueue's pod integration manages.
        (_pod(tolerations=[QUEUED_TOLERATION], labels={"kueue.x-k8s.io/managed": "true"}), TEAM_NS),
    ],
)
def test_pool_guard_allows_everything_else(pod: dict[str, Any], namespace: dict[str, Any]) -> None:
    assert _admit(DEV, pod, namespace) == (True, None)


def test_pool_guard_judges_an_update_by_the_pod_it_makes() -> None:
    gated = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    # A user un-gating a pod outside a team namespace cannot add the toleration on the way.
    old = _pod(**copy.deepcopy(gated))
    allowed, message = _admit(DEV, _pod(tolerations=[QUEUED_TOLERATION]), DEFAULT_NS, old=old)
    assert not allowed and message is not None and "it tolerates" in message
    # Kueue admitting a pod of its pod integration: it drops the gate and adds the flavor's tolerations.
    managed = {"labels": {"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "default"}}
    old = _pod(**copy.deepcopy(gated), **copy.deepcopy(managed))
    new = _pod(
        tolerations=[QUEUED_TOLERATION],
        nodeSelector={"kubernetes.azure.com/agentpool": "cpu"},
        **copy.deepcopy(managed),
    )
    assert _admit(DEV, new, TEAM_NS, old=old) == (True, None)


def test_pool_guard_message_names_a_generated_pod_by_its_prefix() -> None:
    allowed, message = _admit(DEV, _pod(generateName="trainer-", tolerations=[{"operator": "Exists"}]), DEFAULT_NS)
    assert not allowed and message is not None
    assert message.startswith(f"{POOL_GUARD}: pod default/trainer-* was refused: ")


def test_pool_guard_follows_the_pools_and_the_frameworks(dev_config_map: dict[str, Any]) -> None:
    config_map = copy.deepcopy(dev_config_map)
    config_map["kueue-aks:nodePools"].append({"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2})
    config_map["kueue-aks:kueue"] = {"frameworks": ["batch/job"]}
    config = load_stack(config_map)
    assert not _admit(config, _pod(nodeSelector={"kubernetes.azure.com/agentpool": "a100"}), DEFAULT_NS)[0]
    assert not _admit(config, _pod(nodeName="aks-a100-12345678-vmss000001"), DEFAULT_NS)[0]
    assert _admit(DEV, _pod(nodeSelector={"kubernetes.azure.com/agentpool": "a100"}), DEFAULT_NS)[0]  # not a dev pool
    # Only the kinds of the configured frameworks own admitted pods: Kueue does not queue RayClusters here.
    ray = _pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("RayCluster", "ray.io/v1"))
    assert not _admit(config, ray, TEAM_NS)[0]
    assert _admit(config, _pod(tolerations=[QUEUED_TOLERATION], ownerReferences=_owner("Job")), TEAM_NS)[0]


def test_pool_guard_sees_pod_creates_outside_the_exempt_namespaces(dev_config_map: dict[str, Any]) -> None:
    policy, binding = pool_guard(DEV)
    assert policy["metadata"]["name"] == POOL_GUARD == "kueue-aks-pool-guard"
    assert policy["spec"]["failurePolicy"] == "Fail"
    constraints = policy["spec"]["matchConstraints"]
    # Updates too: a gated pod can still gain tolerations or a pool selector before it is scheduled.
    assert constraints["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
    ]
    assert constraints["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(DEV.governance.exempt)}
        ]
    }
    assert list(DEV.governance.exempt) == ["kube-system", "nvidia-device-plugin"]
    assert binding["spec"] == {"policyName": POOL_GUARD, "validationActions": ["Deny"]}
    config_map = copy.deepcopy(dev_config_map)
    config_map["kueue-aks:governance"] = {"exemptNamespaces": ["monitoring"]}
    exempt = pool_guard(load_stack(config_map))[0]["spec"]["matchConstraints"]["namespaceSelector"]
    assert exempt["matchExpressions"][0]["values"] == ["kube-system", "nvidia-device-plugin", "monitoring"]


def test_no_pool_guard_without_governance(dev_config_map: dict[str, Any]) -> None:
    config_map = copy.deepcopy(dev_config_map)
    config_map["kueue-aks:governance"] = {"enforce": False}
    assert pool_guard(load_stack(config_map)) == []
    assert len(pool_guard(DEV)) == 2


def _expressions(policy: dict[str, Any]) -> list[str]:
    spec = policy["spec"]
    return (
        [c["expression"] for c in spec.get("matchConditions", [])]
        + [v["expression"] for v in spec.get("variables", [])]
        + [e for v in spec["validations"] for e in (v["expression"], v.get("messageExpression")) if e]
    )


@pytest.mark.parametrize(
    "policy", [aggregated_role_guard()[0], pool_guard(DEV)[0]], ids=["aggregated-role-guard", "pool-guard"]
)
def test_every_cel_expression_compiles(policy: dict[str, Any]) -> None:
    expressions = _expressions(policy)
    assert len(expressions) >= 3
    env = celpy.Environment()
    for expression in expressions:
        env.compile(expression)  # raises CELParseError on a syntax error


@pytest.mark.parametrize(
    ("operation", "old_node", "checked"),
    [
        ("CREATE", None, True),
        ("UPDATE", None, True),  # still unbound, e.g. held by a scheduling gate: may gain a way onto a pool
        ("UPDATE", "", True),
        ("UPDATE", "aks-gpu-12345678-vmss000000", False),  # bound: placement is fixed, its owner may update it
    ],
)
def test_updates_are_checked_only_until_the_pod_is_bound(operation: str, old_node: str | None, checked: bool) -> None:
    [condition] = pool_guard(DEV)[0]["spec"]["matchConditions"]
    old = {"spec": {"nodeName": old_node}} if old_node is not None else {"spec": {}}
    pod = {"metadata": {"name": "p"}, "spec": {}}
    assert bool(_evaluate(condition["expression"], pod, request={"operation": operation}, oldObject=old)) is checked


# --- the priority-class guard ----------------------------------------------------------------------


def _labelled(value: str | None, kind: str = "Job") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "default"} | ({PRIORITY_CLASS_LABEL: value} if value is not None else {})
    return {
        "apiVersion": "batch/v1",
        "kind": kind,
        "metadata": {"name": "j", "namespace": "research", "labels": labels},
    }


def test_priority_guard_passes_the_stacks_classes_and_refuses_others_with_the_list() -> None:
    config = load_stack(stack_file_config("dev"))
    policy, binding = priority_class_guard(config)
    spec = policy["spec"]
    match, [rule] = spec["matchConditions"][0]["expression"], spec["validations"]
    for name in ("high", "normal", "low"):
        assert _evaluate(match, _labelled(name)) and _evaluate(rule["expression"], _labelled(name))
    assert _evaluate(match, _labelled("urgent")) and not _evaluate(rule["expression"], _labelled("urgent"))
    assert _evaluate(rule["messageExpression"], _labelled("urgent")) == (
        "kueue.x-k8s.io/priority-class: urgent is not a WorkloadPriorityClass of this cluster; use one of: high, "
        "normal, low (kubectl get workloadpriorityclasses), or leave the label out to run as normal "
        "(policy kueue-aks-priority-class-guard)"
    )
    # Without the label, or without labels at all, the policy does not apply: such a job runs as normal.
    assert not _evaluate(match, _labelled(None))
    assert not _evaluate(match, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    # Creates in team namespaces only, so a class removed later never blocks updates of running jobs.
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE"]
    assert spec["matchConstraints"]["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/managed": "true"}}
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_priority_guard_follows_the_configured_classes() -> None:
    config = load_stack(
        {
            **stack_file_config("dev"),
            "kueue-aks:priorityClasses": [{"name": "batch", "value": 0}, {"name": "urgent", "value": 500}],
        }
    )
    policy, _ = priority_class_guard(config)
    rule = policy["spec"]["validations"][0]
    assert _evaluate(rule["expression"], _labelled("urgent"))
    assert not _evaluate(rule["expression"], _labelled("high"))
    assert "use one of: batch, urgent" in str(_evaluate(rule["messageExpression"], _labelled("high")))
    assert "leave the label out to run as batch" in str(_evaluate(rule["messageExpression"], _labelled("high")))
