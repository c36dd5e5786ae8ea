"""A MultiKueue worker: the access its managers get, and the facts they plan with. Pure.

The manager's Kueue reaches a worker with a kubeconfig held in a Secret. Kueue v0.19 accepts only
static credentials there: no exec plugin, no token or CA file (kueue v0.19.2
pkg/controller/admissionchecks/multikueue/multikueuecluster.go, validateKubeconfig), so an Entra
ID login cannot be used. The worker gives a ServiceAccount of its own exactly the rules MultiKueue
uses on a worker, for the job kinds its Kueue runs, and its long-lived token (a
`kubernetes.io/service-account-token` Secret: Kueue does not refresh a token, and a TokenRequest
token expires, kueue#9280). Replacing that Secret rotates the token.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import yaml

from ..config.names import KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..k8s.meta import object_meta
from ..kueue.objects import local_queue_targets, quota_table, team_queues
from ..kueue.values import kueue_frameworks

SERVICE_ACCOUNT = "kueue-aks-multikueue"
TOKEN_SECRET = f"{SERVICE_ACCOUNT}-token"
CLUSTER_ROLE = "kueue-aks:multikueue-worker"
# The stack outputs a manager reads (component.py): the facts in plain text, the kubeconfig a secret.
FACTS_OUTPUT = "multiKueueWorker"
KUBECONFIG_OUTPUT = "multiKueueKubeconfig"
FACTS_VERSION = 1  # bumped when the facts' shape changes, so a manager can name an old worker

# The object kind each framework's MultiKueue adapter creates in the worker, watches and deletes
# (kueue v0.19.2 pkg/controller/jobs/*/*_multikueue_adapter.go). Pod-based frameworks create pods.
FRAMEWORK_RESOURCES: Mapping[str, tuple[str, str]] = {
    "batch/job": ("batch", "jobs"),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "jobsets"),
    "kubeflow.org/mpijob": ("kubeflow.org", "mpijobs"),
    "kubeflow.org/pytorchjob": ("kubeflow.org", "pytorchjobs"),
    "kubeflow.org/tfjob": ("kubeflow.org", "tfjobs"),
    "kubeflow.org/paddlejob": ("kubeflow.org", "paddlejobs"),
    "kubeflow.org/xgboostjob": ("kubeflow.org", "xgboostjobs"),
    "kubeflow.org/jaxjob": ("kubeflow.org", "jaxjobs"),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org", "trainjobs"),
    "ray.io/rayjob": ("ray.io", "rayjobs"),
    "ray.io/raycluster": ("ray.io", "rayclusters"),
    "ray.io/rayservice": ("ray.io", "rayservices"),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("leaderworkerset.x-k8s.io", "leaderworkersets"),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev", "appwrappers"),
    "statefulset": ("apps", "statefulsets"),
    "pod": ("", "pods"),
}
# Kinds the manager's Kueue also updates in place: a RayCluster it scales, a RayService whose
# serve config it syncs (kueue docs' create-multikueue-kubeconfig.sh; MultiKueueRemoteSpecSync).
_UPDATED = {"rayclusters", "rayservices"}
_JOB_VERBS = ["create", "delete", "get", "list", "watch"]


def worker_rules(config: StackConfig) -> list[dict[str, Any]]:
    """The ClusterRole's rules: the job kinds this worker's Kueue runs, and Workloads.

    As the Kueue docs' script, without ClusterQueues and LocalQueues: only the alpha
    MultiKueueManagerQuotaAutomation gate reads them (multikueuecluster.go). A pod-based kind's
    adapter creates the pods themselves; Kueue's Deployment integration has no adapter.
    """
    rules: list[dict[str, Any]] = []
    for framework in kueue_frameworks(config):
        if framework not in FRAMEWORK_RESOURCES:
            continue
        group, resource = FRAMEWORK_RESOURCES[framework]
        verbs = _JOB_VERBS + (["update", "patch"] if resource in _UPDATED else [])
        rules.append({"apiGroups": [group], "resources": [resource], "verbs": verbs})
        rules.append({"apiGroups": [group], "resources": [f"{resource}/status"], "verbs": ["get"]})
    # The manager creates the remote Workload, updates it, and writes its status (admission, eviction).
    rules.append(
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_JOB_VERBS, "update", "patch"]}
    )
    rules.append(
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]}
    )
    return rules


def manager_access_objects(config: StackConfig) -> list[dict[str, Any]]:
    """What a manager's Kueue acts as here: the ServiceAccount, its ClusterRole and binding, and its
    token Secret, in apply order."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": object_meta(SERVICE_ACCOUNT, KUEUE_NAMESPACE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": object_meta(CLUSTER_ROLE),
            "rules": worker_rules(config),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": object_meta(CLUSTER_ROLE),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}],
        },
        # The token controller fills in `token` and `ca.crt` (the cluster's CA, base64 in `data`).
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                **object_meta(TOKEN_SECRET, KUEUE_NAMESPACE),
                "annotations": {"kubernetes.io/service-account.name": SERVICE_ACCOUNT},
            },
        },
    ]


def worker_kubeconfig(cluster: str, server: str, token_secret_data: Mapping[str, str]) -> str:
    """The kubeconfig a manager stores for this worker, from the token Secret's `data` (base64):
    the token and the CA inline, as Kueue requires."""
    user = f"{SERVICE_ACCOUNT}@{cluster}"
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {"server": server, "certificate-authority-data": token_secret_data["ca.crt"]},
                }
            ],
            "users": [{"name": user, "user": {"token": base64.b64decode(token_secret_data["token"]).decode()}}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
            "current-context": cluster,
        },
        sort_keys=False,
    )


def worker_facts(config: StackConfig) -> dict[str, Any]:
    """What a manager needs to know of this worker, as plain data (the FACTS_OUTPUT stack output).

    Quotas are in the quota table's display units (millicores, MiB, GPUs) and come from the same
    quota table the worker's own ClusterQueues are built from.
    """
    rows = quota_table(config)
    queues: dict[str, Any] = {}
    for team in config.teams:
        for queue in team_queues(config, team):
            quota: dict[str, dict[str, int]] = {}
            for row in rows:
                if row.flavor in queue.pools and team.name in row.teams:
                    quota.setdefault(row.flavor, {})[row.resource] = row.teams[team.name]
            queues[queue.name] = {"team": team.name, "topologyAware": queue.topology, "quota": quota}
    cohort: dict[str, dict[str, int]] = {}
    capacity: dict[str, dict[str, int]] = {}
    for row in rows:
        cohort.setdefault(row.flavor, {})[row.resource] = row.cohort
        capacity.setdefault(row.flavor, {})[row.resource] = row.capacity
    return {
        "factsVersion": FACTS_VERSION,
        "kueueVersion": config.kueue.running_version,
        "location": config.location,
        "frameworks": kueue_frameworks(config),
        "priorityClasses": {pc.name: pc.value for pc in config.priority_classes},
        "flavors": [
            {
                "name": name,
                "gpu": config.pool(name).is_gpu,
                "topologyAware": config.pool(name).topology,
                "capacity": capacity[name],
            }
            for name in capacity
        ],
        "teams": {
            t.name: {
                "share": f"{t.share.normalize():f}",
                "localQueues": {lq: q.name for lq, q in local_queue_targets(config, t).items()},
            }
            for t in config.teams
        },
        "clusterQueues": queues,
        "cohort": cohort,
    }
