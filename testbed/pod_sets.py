"""The pod sets Kueue makes of a workload, for the samples' checks (tests/test_samples.py) and the
e2e tier's (testbed/kinds.py, test_access.py): Kueue's per-framework PodSets() as plain data."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from components.k8s.resources import RESOURCE_CPU, RESOURCE_MEMORY
from components.k8s.quantity import cpu_millicores, memory_mib, parse_quantity

TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology")
# The Training Operator's replica-spec key and the container name it runs, per v1 kind.
TRAINING_V1 = {
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost"),
    "PaddleJob": ("paddleReplicaSpecs", "paddle"),
    "JAXJob": ("jaxReplicaSpecs", "jax"),
}


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    template: dict[str, Any]

    @property
    def pod_requests(self) -> dict[str, int]:
        """One pod's requests in Kueue's display units (millicores, MiB, whole devices).

        A container's limit is its request when no request is given, as Kubernetes defaults it.
        """
        total: dict[str, int] = defaultdict(int)
        for container in self.template["spec"]["containers"]:
            resources = container.get("resources", {})
            for name, value in {**resources.get("limits", {}), **resources.get("requests", {})}.items():
                total[name] += display_units(name, value)
        return dict(total)

    @property
    def topology_level(self) -> str | None:
        annotations = self.template.get("metadata", {}).get("annotations", {})
        return next((annotations[a] for a in TOPOLOGY_ANNOTATIONS if a in annotations), None)


def display_units(resource: str, value: Any) -> int:
    if resource == RESOURCE_CPU:
        return cpu_millicores(value)
    if resource == RESOURCE_MEMORY:
        return memory_mib(value)
    return int(parse_quantity(value))


def job_count(job_spec: dict[str, Any]) -> int:
    parallelism = job_spec.get("parallelism", 1)
    return min(parallelism, job_spec.get("completions", parallelism))


def pod_sets(doc: dict[str, Any]) -> list[PodSet]:
    """The pod sets Kueue makes of a workload (kueue's per-framework PodSets())."""
    spec = doc["spec"]
    match doc["kind"]:
        case "Job":
            return [PodSet("main", job_count(spec), spec["template"])]
        case "JobSet":
            return [
                PodSet(
                    rj["name"],
                    rj.get("replicas", 1) * job_count(rj["template"]["spec"]),
                    rj["template"]["spec"]["template"],
                )
                for rj in spec["replicatedJobs"]
            ]
        case kind if kind in TRAINING_V1:
            return [
                PodSet(role.lower(), rs.get("replicas", 1), rs["template"])
                for role, rs in spec[TRAINING_V1[kind][0]].items()
            ]
        case "MPIJob":
            return [
                PodSet(role.lower(), rs.get("replicas", 1), rs["template"])
                for role, rs in spec["mpiReplicaSpecs"].items()
            ]
        case "TrainJob":
            # The runtime's one replicated job, numNodes pods asking resourcesPerNode each.
            trainer = spec["trainer"]
            container = {"name": "node", "image": "runtime", "resources": trainer["resourcesPerNode"]}
            return [PodSet("node", trainer.get("numNodes", 1), {"spec": {"containers": [container]}})]
        case "RayCluster":
            return [PodSet("head", 1, spec["headGroupSpec"]["template"])] + [
                PodSet(g["groupName"], g.get("replicas", 1), g["template"]) for g in spec.get("workerGroupSpecs", [])
            ]
        case "RayJob":
            cluster = spec["rayClusterSpec"]
            sets = [PodSet("head", 1, cluster["headGroupSpec"]["template"])]
            sets += [
                PodSet(g["groupName"], g.get("replicas", 1), g["template"]) for g in cluster.get("workerGroupSpecs", [])
            ]
            if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
                # Kueue counts the submitter pod too; without a template KubeRay's default requests apply.
                assert "submitterPodTemplate" in spec, (
                    "K8sJobMode: state the submitter's requests in submitterPodTemplate"
                )
                sets.append(PodSet("submitter", 1, spec["submitterPodTemplate"]))
            return sets
    raise AssertionError(f"no pod-set rule for kind {doc['kind']}")
