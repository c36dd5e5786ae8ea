"""The operators' kinds as batch users submit them (the samples in examples/), and what Kueue, the
operators and the scheduler did with them: one Workload per job, its pods wherever they are.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from components.config.names import POOL_LABEL, SYSTEM_POOL_NAME
from testbed.harness import ROOT
from testbed.pod_sets import pod_sets

from .autoscaler import SCALE_UP_SECONDS
from .cluster import wait_for
from .jobs import RUN_FOR_ANNOTATION, flavors, pools_of, wait_admitted, workload_of
from .stack_cluster import StackCluster

JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
TRAINING_LABEL = "training.kubeflow.org/job-name"  # the Training Operator's and the MPI Operator's
RAY_CLUSTER_LABEL = "ray.io/cluster"
TRAINER_STEP = "node"  # the replicated job of the stack's torch-distributed runtime
PATCH_MANAGER = "e2e.kueue-aks.io/tests"  # owner of the tests' TrainJob runtime patches


@dataclass(frozen=True)
class Kind:
    sample: str  # its file in examples/
    resource: str  # kubectl's name for the kind
    pods_label: str  # the label its pods carry, with the value below

    def load(self) -> dict[str, Any]:
        return yaml.safe_load((ROOT / "examples" / self.sample).read_text())


KINDS = {
    "RayJob": Kind("rayjob.yaml", "rayjobs.ray.io", RAY_CLUSTER_LABEL),
    "RayCluster": Kind("raycluster.yaml", "rayclusters.ray.io", RAY_CLUSTER_LABEL),
    "JobSet": Kind("jobset.yaml", "jobsets.jobset.x-k8s.io", JOBSET_LABEL),
    "TrainJob": Kind("trainjob.yaml", "trainjobs.trainer.kubeflow.org", JOBSET_LABEL),
    "MPIJob": Kind("mpijob.yaml", "mpijobs.kubeflow.org", TRAINING_LABEL),
    "PyTorchJob": Kind("pytorchjob.yaml", "pytorchjobs.kubeflow.org", TRAINING_LABEL),
    "TFJob": Kind("tfjob.yaml", "tfjobs.kubeflow.org", TRAINING_LABEL),
    "XGBoostJob": Kind("xgboostjob.yaml", "xgboostjobs.kubeflow.org", TRAINING_LABEL),
    "PaddleJob": Kind("paddlejob.yaml", "paddlejobs.kubeflow.org", TRAINING_LABEL),
    "JAXJob": Kind("jaxjob.yaml", "jaxjobs.kubeflow.org", TRAINING_LABEL),
}


def pod_templates(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pod template of a job (dicts whose `spec` has `containers`), submitter included."""
    if isinstance(doc, dict):
        if isinstance(doc.get("spec"), dict) and "containers" in doc["spec"]:
            yield doc
        for value in doc.values():
            yield from pod_templates(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from pod_templates(item)


def each_pod(doc: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A copy of the job with `change` applied to every pod template (a TrainJob's come from its runtime)."""
    out = copy.deepcopy(doc)
    for template in pod_templates(out):
        change(template)
    return out


def keep_running(template: dict[str, Any]) -> None:
    """kwok keeps a Job's pods running this long (stages.yaml); others run until deleted anyway."""
    template.setdefault("metadata", {}).setdefault("annotations", {})[RUN_FOR_ANNOTATION] = "1h"


def requests(cpu: str | None = None, gpu: int | None = None) -> Callable[[dict[str, Any]], None]:
    def change(template: dict[str, Any]) -> None:
        for container in template["spec"]["containers"]:
            r = container.setdefault("resources", {}).setdefault("requests", {})
            limits = container["resources"].setdefault("limits", {})
            if cpu is not None:
                r["cpu"] = cpu
            if gpu is not None:
                r["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = gpu

    return change


def pinned(pool: str) -> Callable[[dict[str, Any]], None]:
    """Select one pool, so Kueue considers only its flavor for every pod set."""

    def change(template: dict[str, Any]) -> None:
        template["spec"]["nodeSelector"] = {POOL_LABEL: pool}

    return change


def renamed(doc: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"]["name"] = name
    return out


def prepared(
    cluster: StackCluster,
    kind: str,
    doc: dict[str, Any],
    *changes: Callable[[dict[str, Any]], None],
    cpu: str | None = None,
    gpu: int | None = None,
) -> dict[str, Any]:
    """The sample with `changes` on every pod, its requests set to `cpu`/`gpu` per pod."""
    teams = [t.name for t in cluster.config.teams]
    if doc["metadata"].get("namespace") not in teams:  # the samples name none: a member gives theirs
        doc = renamed(doc, doc["metadata"]["name"])
        doc["metadata"]["namespace"] = teams[0]
    if kind == "TrainJob":
        return _trainjob(doc, changes, cpu, gpu)
    if cpu is not None or gpu is not None:
        changes = (*changes, requests(cpu, gpu))
    for change in changes:
        doc = each_pod(doc, change)
    return doc


def _trainjob(
    doc: dict[str, Any], changes: tuple[Callable[[dict[str, Any]], None], ...], cpu: str | None, gpu: int | None
) -> dict[str, Any]:
    """A TrainJob's pods are its runtime's (the stack's torch-distributed): the changes go into a
    runtime patch of the runtime's `node` step, as a user would write one; requests per node are its own."""
    doc = copy.deepcopy(doc)
    template: dict[str, Any] = {"metadata": {}, "spec": {}}
    for change in changes:
        change(template)
    template = {k: v for k, v in template.items() if v}
    if template:
        step = {"name": TRAINER_STEP, "template": {"spec": {"template": template}}}
        doc["spec"]["runtimePatches"] = [
            {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [step]}}}}
        ]
    # resourcesPerNode is the `node` container's resources: set them as on any other pod's container.
    node = {"resources": doc["spec"]["trainer"].setdefault("resourcesPerNode", {})}
    requests(cpu, gpu)({"spec": {"containers": [node]}})
    return doc


def pods_of(cluster: StackCluster, kind: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    meta = doc["metadata"]
    value = meta["name"]
    if kind == "RayJob":  # its pods carry the name of the RayCluster it made
        job = cluster.kubectl.get(KINDS[kind].resource, value, "-n", meta["namespace"])
        value = (job.get("status") or {}).get("rayClusterName") or "none-yet"
    return cluster.kubectl.items("pods", "-n", meta["namespace"], "-l", f"{KINDS[kind].pods_label}={value}")


def wait_pods(
    cluster: StackCluster, kind: str, doc: dict[str, Any], count: int, timeout: float = SCALE_UP_SECONDS
) -> list[dict[str, Any]]:
    """At least `count` of the job's pods bound to nodes."""

    def probe() -> tuple[bool, Any]:
        pods = pods_of(cluster, kind, doc)
        placed = [p for p in pods if p["spec"].get("nodeName")]
        seen = [
            {
                "name": p["metadata"]["name"],
                "node": p["spec"].get("nodeName"),
                "phase": (p.get("status") or {}).get("phase"),
            }
            for p in pods
        ]
        return len(placed) >= count, placed if len(placed) >= count else seen

    return wait_for(f"{count} pod(s) of {kind} {doc['metadata']['name']} on nodes", probe, timeout)  # type: ignore[no-any-return]


def wait_no_pods(cluster: StackCluster, kind: str, doc: dict[str, Any], timeout: float = 60) -> None:
    def probe() -> tuple[bool, Any]:
        alive = [
            p["metadata"]["name"] for p in pods_of(cluster, kind, doc) if not p["metadata"].get("deletionTimestamp")
        ]
        return not alive, alive

    wait_for(f"every pod of {kind} {doc['metadata']['name']} to be gone", probe, timeout)


def workload(cluster: StackCluster, kind: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    return workload_of(cluster, doc["metadata"]["namespace"], doc["metadata"]["name"], kind)


def delete(cluster: StackCluster, kind: str, *docs: dict[str, Any]) -> None:
    for doc in docs:
        cluster.kubectl.run(
            "delete",
            KINDS[kind].resource,
            doc["metadata"]["name"],
            "-n",
            doc["metadata"]["namespace"],
            "--ignore-not-found",
            "--wait=true",
            "--timeout=60s",
            timeout=90,
        )


def pod_count(kind: str, doc: dict[str, Any]) -> int:
    """The pods the operator makes: Kueue's pod sets; a RayJob's submitter pod is its own Job's."""
    return sum(ps.count for ps in pod_sets(doc) if not (kind == "RayJob" and ps.name == "submitter"))


def assert_admitted_whole_on_its_pool(cluster: StackCluster, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc["metadata"]
    wl = wait_admitted(cluster, meta["namespace"], meta["name"], kind=kind)
    chosen = flavors(wl)
    assert chosen and chosen <= {p.name for p in cluster.config.node_pools}, wl["status"]["admission"]
    placed = wait_pods(cluster, kind, doc, pod_count(kind, doc))
    pools = pools_of(cluster, placed)
    assert pools <= chosen and SYSTEM_POOL_NAME not in pools, {
        p["metadata"]["name"]: p["spec"]["nodeName"] for p in placed
    }
    return wl


def sample_lands_on_its_pool(cluster: StackCluster, kind: str) -> None:
    doc = prepared(cluster, kind, KINDS[kind].load())
    cluster.kubectl.apply([doc])
    try:
        assert_admitted_whole_on_its_pool(cluster, kind, doc)
    finally:
        delete(cluster, kind, doc)
