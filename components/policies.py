"""ValidatingAdmissionPolicies the program installs, as plain dicts (pure; no Pulumi import).

The pool guard (`pool_guard`) makes Kueue the only way onto user pools when
`kueue-aks:governance.enforce` is on; see its docstring and README "Governance".

The aggregated-role guard makes `helm uninstall --wait` of Kueue finish. Kueue's chart has two
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

from .config import MANAGED_LABEL, POOL_LABEL, QUEUED_TAINT, StackConfig
from .kueue_objects import COMMON_LABELS
from .kueue_values import KUEUE_RELEASE_NAME, kueue_frameworks

ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"  # GA since Kubernetes 1.30
AGGREGATED_ROLES = (f"{KUEUE_RELEASE_NAME}-batch-admin-role", f"{KUEUE_RELEASE_NAME}-batch-user-role")
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")  # Helm's own label on everything it installs
AGGREGATED_ROLE_GUARD = "kueue-aks-aggregated-role-guard"


def _guard(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy that fails closed, and the binding that makes it deny cluster-wide."""
    meta = {"name": name, "labels": dict(COMMON_LABELS)}
    return [
        {"apiVersion": ADMISSION_API_VERSION, "kind": "ValidatingAdmissionPolicy", "metadata": meta,
         "spec": {"failurePolicy": "Fail", **spec}},
        {"apiVersion": ADMISSION_API_VERSION, "kind": "ValidatingAdmissionPolicyBinding", "metadata": dict(meta),
         "spec": {"policyName": name, "validationActions": ["Deny"]}},
    ]


def _cel_list(values: list[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def aggregated_role_guard() -> list[dict[str, Any]]:
    """The policy and its binding; both must exist while the Kueue release is uninstalled."""
    key, value = HELM_MANAGED_BY
    return _guard(AGGREGATED_ROLE_GUARD, {
        "matchConstraints": {
            "resourceRules": [{
                "apiGroups": ["rbac.authorization.k8s.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["clusterroles"],
            }],
        },
        "matchConditions": [{"name": "kueue-aggregated-role", "expression": f"object.metadata.name in {_cel_list(list(AGGREGATED_ROLES))}"}],
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


POOL_GUARD = "kueue-aks-pool-guard"
# The label Kueue's pod integration puts on every pod it manages (queued and admitted by Kueue).
KUEUE_MANAGED_POD_LABEL = ("kueue.x-k8s.io/managed", "true")
# The kinds that own the pods of each job framework Kueue manages: such a pod in a team
# namespace exists only after Kueue admitted its job, with the flavor's tolerations.
FRAMEWORK_POD_OWNERS: dict[str, tuple[str, ...]] = {
    "batch/job": ("Job",),
    "jobset.x-k8s.io/jobset": ("Job",),  # a JobSet runs its pods through child Jobs
    "trainer.kubeflow.org/trainjob": ("Job",),  # through a JobSet
    "kubeflow.org/mpijob": ("MPIJob", "Job"),  # workers, and the launcher Job
    "kubeflow.org/pytorchjob": ("PyTorchJob",),
    "kubeflow.org/tfjob": ("TFJob",),
    "kubeflow.org/paddlejob": ("PaddleJob",),
    "kubeflow.org/xgboostjob": ("XGBoostJob",),
    "kubeflow.org/jaxjob": ("JAXJob",),
    "ray.io/rayjob": ("RayCluster", "Job"),  # the cluster's pods, and the submitter Job
    "ray.io/raycluster": ("RayCluster",),
}
# AKS names a pool's nodes aks-<pool>-<8 digits>-vmss<index> (learn.microsoft.com/azure/aks/use-multiple-node-pools).
NODE_NAME_PREFIX = "aks-{pool}-"


def pool_guard(config: StackConfig) -> list[dict[str, Any]]:
    """The pool guard and its binding; empty when governance is off.

    Refuses, at create or update, a pod outside the exempt namespaces that would reach a user pool without
    Kueue: it tolerates the pools' queued taint (or every taint), selects a pool by its agentpool
    label in nodeSelector or required node affinity, or names a pool node in nodeName (which skips
    the scheduler and so the taint). Allowed to: pods in a team namespace that Kueue manages,
    i.e. pods of a job kind Kueue queues there or pods Kueue's pod integration admitted.
    """
    if not config.governance.enforce:
        return []
    taint_key = QUEUED_TAINT.split("=", 1)[0]
    pools = [p.name for p in config.node_pools]
    prefixes = [NODE_NAME_PREFIX.format(pool=p) for p in pools]
    owners = sorted({kind for f in kueue_frameworks(config) for kind in FRAMEWORK_POD_OWNERS.get(f, ())})
    label_key, label_value = KUEUE_MANAGED_POD_LABEL
    variables = [
        {"name": "tolerates", "expression": (
            "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
            f"(has(t.key) && t.key == '{taint_key}') || ((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'))")},
        {"name": "selects", "expression": (
            f"(has(object.spec.nodeSelector) && '{POOL_LABEL}' in object.spec.nodeSelector && "
            f"object.spec.nodeSelector['{POOL_LABEL}'] in {_cel_list(pools)}) || "
            "(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
            "has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
            "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(term, "
            f"has(term.matchExpressions) && term.matchExpressions.exists(e, e.key == '{POOL_LABEL}' && e.operator == 'In' && "
            f"has(e.values) && e.values.exists(v, v in {_cel_list(pools)}))))")},
        {"name": "pinned", "expression": (
            f"has(object.spec.nodeName) && {_cel_list(prefixes)}.exists(p, object.spec.nodeName.startsWith(p))")},
        {"name": "teamNamespace", "expression": (
            f"has(namespaceObject.metadata.labels) && '{MANAGED_LABEL}' in namespaceObject.metadata.labels && "
            f"namespaceObject.metadata.labels['{MANAGED_LABEL}'] == 'true'")},
        {"name": "queued", "expression": (
            f"(has(object.metadata.labels) && '{label_key}' in object.metadata.labels && "
            f"object.metadata.labels['{label_key}'] == '{label_value}') || "
            f"(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, o.kind in {_cel_list(owners)}))")},
    ]
    return _guard(POOL_GUARD, {
        "matchConstraints": {
            # UPDATE too: a pod held by a scheduling gate may still gain tolerations, a
            # nodeSelector and affinity before it is scheduled.
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                               "resources": ["pods"]}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                        "values": list(config.governance.exempt)}]},
        },
        # An update matters only before the pod is bound: afterwards its placement is fixed,
        # and its owner must stay free to update it (finalizers, labels).
        "matchConditions": [{"name": "unbound", "expression": (
            "request.operation == 'CREATE' || !has(oldObject.spec.nodeName) || oldObject.spec.nodeName == ''")}],
        "variables": variables,
        "validations": [{
            "expression": ("!(variables.tolerates || variables.selects || variables.pinned) || "
                           "(variables.teamNamespace && variables.queued)"),
            "messageExpression": (
                f"'{POOL_GUARD}: pod ' + request.namespace + '/' + "
                "(has(object.metadata.name) ? object.metadata.name : object.metadata.generateName + '*') + "
                "' was refused: it would run on a node pool that is reserved for work Kueue admits (' + "
                "(variables.pinned ? 'it names a pool node' : variables.selects ? 'it selects a pool' : "
                f"'it tolerates the {taint_key} taint') + '), outside any team quota. Submit it as a Job to your "
                "team LocalQueue instead (label kueue.x-k8s.io/queue-name: default, in your team namespace); "
                "platform admins can exempt a namespace in kueue-aks:governance.exemptNamespaces.'"),
            "reason": "Forbidden",
        }],
    })


RAYSERVICE_GUARD = "kueue-aks-rayservice-guard"


def rayservice_guard(config: StackConfig) -> list[dict[str, Any]]:
    """Refuses RayServices in team namespaces while `ray.io/raycluster` is on and `ray.io/rayservice`
    is not; empty otherwise.

    KubeRay copies a RayService's labels onto the RayCluster it creates, and in a team namespace
    Kueue's default LocalQueue takes any RayCluster there as its own, so both controllers would
    keep rewriting the same RayCluster and its pods would never start (Azure/AKS
    examples/kueue-and-ray-on-aks; ../shared/reference/operators.md §5.1). A serving RayService is
    not batch work: it belongs in a namespace outside the teams, where Kueue manages nothing.
    """
    frameworks = set(config.kueue.frameworks)
    if "ray.io/raycluster" not in frameworks or "ray.io/rayservice" in frameworks:
        return []
    return _guard(RAYSERVICE_GUARD, {
        "matchConstraints": {
            "resourceRules": [{"apiGroups": ["ray.io"], "apiVersions": ["*"], "operations": ["CREATE"],
                               "resources": ["rayservices"]}],
            "namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}},
        },
        "validations": [{
            "expression": "false",
            "messageExpression": (
                f"'{RAYSERVICE_GUARD}: RayService ' + request.namespace + '/' + object.metadata.name + ' was refused: in a "
                "team namespace Kueue queues the RayClusters a RayService creates (ray.io/raycluster is enabled), and "
                "KubeRay and Kueue would fight over them. Run RayServices in a namespace outside the teams.'"),
            "reason": "Forbidden",
        }],
    })
