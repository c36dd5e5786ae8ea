"""Jobs as batch users submit them, and what Kueue and the scheduler did with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.config.names import POOL_LABEL

from .autoscaler import SCALE_UP_SECONDS
from .cluster import conditions, is_true, status, wait_for
from .stack_cluster import StackCluster

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Read by the e2e pod-complete Stage (stages.yaml): how long a Job's pods keep running.
RUN_FOR_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"


def job(
    namespace: str,
    name: str,
    *,
    queue: str | None = "default",
    pods: int = 1,
    requests: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority: str | None = None,
    run_for: str | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job whose pods ask for `requests` each (default 100m CPU, 64Mi)."""
    labels: dict[str, str] = {}
    if queue:
        labels[QUEUE_LABEL] = queue
    if priority:
        labels[PRIORITY_LABEL] = priority
    resources = dict(requests or {"cpu": "100m", "memory": "64Mi"})
    container = {
        "name": "main",
        "image": "busybox:1.37",
        "command": ["true"],
        "resources": {"requests": resources, "limits": {k: v for k, v in resources.items() if k != "cpu"}},
    }
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    template: dict[str, Any] = {"spec": pod_spec}
    if run_for:
        template["metadata"] = {"annotations": {RUN_FOR_ANNOTATION: run_for}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": template},
    }


def workload_of(cluster: StackCluster, namespace: str, name: str, kind: str = "Job") -> dict[str, Any] | None:
    """The Workload Kueue made for the Job (or bare Pod, kind="Pod") of that name."""
    for wl in cluster.kubectl.items("workloads.kueue.x-k8s.io", "-n", namespace):
        if any(o.get("kind") == kind and o.get("name") == name for o in wl["metadata"].get("ownerReferences", [])):
            return wl
    return None


def _summary(wl: Mapping[str, Any] | None) -> Any:
    if wl is None:
        return "no Workload yet"
    return {
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")} for c in conditions(wl)],
        "admission": status(wl).get("admission"),
        "admissionChecks": status(wl).get("admissionChecks"),
    }


def wait_admitted(
    cluster: StackCluster, namespace: str, name: str, timeout: float = SCALE_UP_SECONDS, kind: str = "Job"
) -> dict[str, Any]:
    def probe() -> tuple[bool, Any]:
        wl = workload_of(cluster, namespace, name, kind)
        return wl is not None and is_true(wl, "Admitted"), wl if wl is not None and is_true(
            wl, "Admitted"
        ) else _summary(wl)

    return wait_for(f"{kind} {namespace}/{name} to be admitted", probe, timeout)  # type: ignore[no-any-return]


def wait_condition(
    cluster: StackCluster, namespace: str, job_name: str, kind: str, timeout: float = 30
) -> dict[str, Any]:
    def probe() -> tuple[bool, Any]:
        wl = workload_of(cluster, namespace, job_name)
        ok = wl is not None and is_true(wl, kind)
        return ok, wl if ok else _summary(wl)

    return wait_for(f"Workload of {namespace}/{job_name} to have {kind}=True", probe, timeout)  # type: ignore[no-any-return]


def flavors(workload: Mapping[str, Any]) -> set[str]:
    """Every flavor the workload's admission assigned, over all pod sets and resources."""
    return {f for ps in workload["status"]["admission"]["podSetAssignments"] for f in ps.get("flavors", {}).values()}


def wait_pods_placed(
    cluster: StackCluster, namespace: str, job_name: str, count: int, timeout: float = SCALE_UP_SECONDS
) -> list[dict[str, Any]]:
    def probe() -> tuple[bool, Any]:
        pods = cluster.kubectl.items("pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={job_name}")
        placed = [p for p in pods if p["spec"].get("nodeName")]
        seen = [
            {
                "name": p["metadata"]["name"],
                "node": p["spec"].get("nodeName"),
                "phase": p["status"].get("phase"),
                "conditions": p["status"].get("conditions"),
            }
            for p in pods
        ]
        return len(placed) >= count, placed if len(placed) >= count else seen

    return wait_for(f"{count} pod(s) of Job {namespace}/{job_name} on nodes", probe, timeout)  # type: ignore[no-any-return]


def pools_of(cluster: StackCluster, pods: list[dict[str, Any]]) -> set[str]:
    by_node = {n["metadata"]["name"]: n["metadata"]["labels"][POOL_LABEL] for n in cluster.nodes}
    return {by_node[p["spec"]["nodeName"]] for p in pods}


def delete_jobs(cluster: StackCluster, namespace: str, *names: str) -> None:
    """Delete Jobs with their pods and Workloads, and wait until they are gone."""
    if names:
        cluster.kubectl.run(
            "delete",
            "job",
            "-n",
            namespace,
            *names,
            "--cascade=foreground",
            "--ignore-not-found",
            "--wait=true",
            "--timeout=60s",
            timeout=90,
        )


def events_of(cluster: StackCluster, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    """The events about one object (what `kubectl describe` lists), oldest first: type, reason,
    message and who reported it."""
    found = cluster.kubectl.items(
        "events", "-n", namespace, "--field-selector", f"involvedObject.kind={kind},involvedObject.name={name}"
    )
    found.sort(key=lambda e: e.get("eventTime") or e.get("lastTimestamp") or e["metadata"]["creationTimestamp"])
    return [
        {
            "type": e.get("type"),
            "reason": e.get("reason"),
            "message": e.get("message") or e.get("note", ""),
            "from": e.get("reportingController") or (e.get("source") or {}).get("component"),
        }
        for e in found
    ]
