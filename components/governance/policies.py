"""The pool guard, a ValidatingAdmissionPolicy as plain dicts (pure; no Pulumi import).

The pool guard (`pool_guard`) makes Kueue the only way onto user pools when
`kueue-aks:governance.enforce` is on; see its docstring and docs/governance.md.
"""

from __future__ import annotations

from typing import Any

from ..config.names import MANAGED_LABEL, POOL_LABEL, QUEUED_TAINT
from ..config.stack import StackConfig
from ..k8s.admission import cel_list, guard
from ..k8s.meta import COMMON_LABELS
from ..kueue.values import kueue_frameworks

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
        {
            "name": "tolerates",
            "expression": (
                "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
                f"(has(t.key) && t.key == '{taint_key}') || ((!has(t.key) || t.key == '') && has(t.operator) && "
                "t.operator == 'Exists'))"
            ),
        },
        {
            "name": "selects",
            "expression": (
                f"(has(object.spec.nodeSelector) && '{POOL_LABEL}' in object.spec.nodeSelector && "
                f"object.spec.nodeSelector['{POOL_LABEL}'] in {cel_list(pools)}) || "
                "(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
                "has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
                "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                "nodeSelectorTerms.exists(term, "
                f"has(term.matchExpressions) && term.matchExpressions.exists(e, e.key == '{POOL_LABEL}' && "
                "e.operator == 'In' && "
                f"has(e.values) && e.values.exists(v, v in {cel_list(pools)}))))"
            ),
        },
        {
            "name": "pinned",
            "expression": (
                f"has(object.spec.nodeName) && {cel_list(prefixes)}.exists(p, object.spec.nodeName.startsWith(p))"
            ),
        },
        {
            "name": "teamNamespace",
            "expression": (
                f"has(namespaceObject.metadata.labels) && '{MANAGED_LABEL}' in namespaceObject.metadata.labels && "
                f"namespaceObject.metadata.labels['{MANAGED_LABEL}'] == 'true'"
            ),
        },
        {
            "name": "queued",
            "expression": (
                f"(has(object.metadata.labels) && '{label_key}' in object.metadata.labels && "
                f"object.metadata.labels['{label_key}'] == '{label_value}') || "
                "(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, o.kind in "
                f"{cel_list(owners)}))"
            ),
        },
    ]
    return guard(
        POOL_GUARD,
        COMMON_LABELS,
        {
            "matchConstraints": {
                # UPDATE too: a pod held by a scheduling gate may still gain tolerations, a
                # nodeSelector and affinity before it is scheduled.
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ],
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": list(config.governance.exempt),
                        }
                    ]
                },
            },
            # An update matters only before the pod is bound: afterwards its placement is fixed,
            # and its owner must stay free to update it (finalizers, labels).
            "matchConditions": [
                {
                    "name": "unbound",
                    "expression": (
                        "request.operation == 'CREATE' || !has(oldObject.spec.nodeName) || oldObject.spec.nodeName == "
                        "''"
                    ),
                }
            ],
            "variables": variables,
            "validations": [
                {
                    "expression": (
                        "!(variables.tolerates || variables.selects || variables.pinned) || "
                        "(variables.teamNamespace && variables.queued)"
                    ),
                    "messageExpression": (
                        f"'{POOL_GUARD}: pod ' + request.namespace + '/' + "
                        "(has(object.metadata.name) ? object.metadata.name : object.metadata.generateName + '*') + "
                        "' was refused: it would run on a node pool that is reserved for work Kueue admits (' + "
                        "(variables.pinned ? 'it names a pool node' : variables.selects ? 'it selects a pool' : "
                        f"'it tolerates the {taint_key} taint') + '), outside any team quota. Submit it as a Job to "
                        "your "
                        "team LocalQueue instead (label kueue.x-k8s.io/queue-name: default, in your team namespace); "
                        "platform admins can exempt a namespace in kueue-aks:governance.exemptNamespaces.'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )
