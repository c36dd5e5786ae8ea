"""Sample workloads in examples/: valid Kubernetes, and admissible by the dev stack's queues.

Validity: built-in kinds (batch/v1 Job) are validated against the Kubernetes JSON schemas that
kubernetes-validate ships, in strict mode. The operators' kinds (RayJob, JobSet, TrainJob, MPIJob,
PyTorchJob...) are validated against the CRDs the stack installs for them, read from the
operators' pinned modules (components/operators), and each embedded pod template strictly as a
core/v1 PodTemplate; the queue label is set and every container states resource requests. A few Kueue rules for RayJobs and the training operator's container name are
checked too.

Admissibility uses the project's own builders, not names typed here: the dev stack is parsed
with components.config and its objects come from components.kueue.objects.build_objects. Each
sample must name a LocalQueue that exists in its namespace, whose ClusterQueue selects that
namespace and covers every resource the sample requests; a priority-class label must name a
WorkloadPriorityClass the stack creates; its framework must be enabled. Flavors are then
assigned the way Kueue does (in the ClusterQueue's order, the first flavor that fits each pod
set): the whole workload must fit the team's own nominal quota, every pod must fit one node of
the flavor's pool, and a pod set with a topology request needs a topology-aware flavor.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.cluster.capacity import RESOURCE_CPU, RESOURCE_MEMORY
from components.config import StackConfig, parse_config, raw_from_stack_file
from components.operators.installs import installs, trainer_runtimes
from components.k8s.names import is_dns1123_label
from components.kueue.objects import build_objects
from components.k8s.quantity import cpu_millicores, memory_mib, parse_quantity
from tests.harness import ROOT

EXAMPLES = ROOT / "examples"
SAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))
# Samples that need more than their team's own quota and say so: they borrow what others leave idle.
BORROWING_SAMPLES = {"pytorchjob-gpu.yaml"}
K8S_VERSION = "1.33"  # a Kubernetes minor AKS supports; the schemas differ little between minors

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology")

BUILTIN = {("batch/v1", "Job"): "batch/job"}
CRDS = {
    ("ray.io/v1", "RayJob"): "ray.io/rayjob",
    ("ray.io/v1", "RayCluster"): "ray.io/raycluster",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io/jobset",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org/trainjob",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijob",
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("kubeflow.org/v1", "TFJob"): "kubeflow.org/tfjob",
    ("kubeflow.org/v1", "XGBoostJob"): "kubeflow.org/xgboostjob",
    ("kubeflow.org/v1", "PaddleJob"): "kubeflow.org/paddlejob",
    ("kubeflow.org/v1", "JAXJob"): "kubeflow.org/jaxjob",
}
# The Training Operator's replica-spec key and the container name it runs, per v1 kind.
TRAINING_V1 = {"PyTorchJob": ("pytorchReplicaSpecs", "pytorch"), "TFJob": ("tfReplicaSpecs", "tensorflow"),
               "XGBoostJob": ("xgbReplicaSpecs", "xgboost"), "PaddleJob": ("paddleReplicaSpecs", "paddle"),
               "JAXJob": ("jaxReplicaSpecs", "jax")}


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
            return [PodSet(rj["name"], rj.get("replicas", 1) * job_count(rj["template"]["spec"]),
                           rj["template"]["spec"]["template"]) for rj in spec["replicatedJobs"]]
        case kind if kind in TRAINING_V1:
            return [PodSet(role.lower(), rs.get("replicas", 1), rs["template"])
                    for role, rs in spec[TRAINING_V1[kind][0]].items()]
        case "MPIJob":
            return [PodSet(role.lower(), rs.get("replicas", 1), rs["template"])
                    for role, rs in spec["mpiReplicaSpecs"].items()]
        case "TrainJob":
            # The runtime's one replicated job, numNodes pods asking resourcesPerNode each.
            trainer = spec["trainer"]
            container = {"name": "node", "image": "runtime", "resources": trainer["resourcesPerNode"]}
            return [PodSet("node", trainer.get("numNodes", 1), {"spec": {"containers": [container]}})]
        case "RayCluster":
            return [PodSet("head", 1, spec["headGroupSpec"]["template"])] + [
                PodSet(g["groupName"], g.get("replicas", 1), g["template"]) for g in spec.get("workerGroupSpecs", [])]
        case "RayJob":
            cluster = spec["rayClusterSpec"]
            sets = [PodSet("head", 1, cluster["headGroupSpec"]["template"])]
            sets += [PodSet(g["groupName"], g.get("replicas", 1), g["template"])
                     for g in cluster.get("workerGroupSpecs", [])]
            if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
                # Kueue counts the submitter pod too; without a template KubeRay's default requests apply.
                assert "submitterPodTemplate" in spec, "K8sJobMode: state the submitter's requests in submitterPodTemplate"
                sets.append(PodSet("submitter", 1, spec["submitterPodTemplate"]))
            return sets
    raise AssertionError(f"no pod-set rule for kind {doc['kind']}")


def k8s_schema_errors(doc: dict[str, Any]) -> list[str]:
    """Strict schema errors, short: kubernetes-validate's own message embeds the whole schema."""
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"{'/'.join(map(str, err.absolute_path))}: {err.message}"]
    return []


@cache
def _installed_crds() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of every CRD the dev stack's operators install."""
    raw, location = raw_from_stack_file(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text()))
    schemas = {}
    for install in installs(parse_config(raw, stack="dev", location=location)):
        for crd in install.crds:
            for version in crd["spec"]["versions"]:
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def crd_schema_errors(doc: dict[str, Any]) -> list[str]:
    """The doc against its CRD's structural schema (jsonschema ignores the x-kubernetes-* keys)."""
    schema = _installed_crds().get((doc["apiVersion"], doc["kind"]))
    assert schema is not None, f"no CRD installed for {doc['apiVersion']} {doc['kind']}"
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    return errors + [f"{path}: unknown field (the API server would drop it)" for path in unknown_fields(doc, schema)]


def unknown_fields(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields the structural schema does not declare, as `kubectl apply --validate=strict` reports them."""
    if isinstance(value, dict) and not schema.get("x-kubernetes-preserve-unknown-fields"):
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        found = []
        for key, item in value.items():
            if props is not None and key in props:
                found += unknown_fields(item, props[key], f"{path}/{key}")
            elif isinstance(extra, dict):
                found += unknown_fields(item, extra, f"{path}/{key}")
            elif props is not None and key not in ("apiVersion", "kind", "metadata"):
                found.append(f"{path}/{key}")
        return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [p for i, item in enumerate(value) for p in unknown_fields(item, schema["items"], f"{path}[{i}]")]
    return []


def load_sample(path: Path) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert len(docs) == 1, f"{path.name}: one workload per file, so `kubectl apply -f` submits one"
    return docs[0]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[tuple[str | None, str], dict[str, Any]]:
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects if o["kind"] == kind}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, f"extend selects() for {sorted(selector)}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def assign_flavors(workload: list[PodSet], cq: dict[str, Any], objects: list[dict[str, Any]],
                   config: StackConfig, *, borrow: bool = False) -> dict[str, str]:
    """Pod set -> flavor, as Kueue picks it: the first flavor in order that fits, else AssertionError.
    Within the team's nominal quota; with `borrow`, up to its quota and borrowing limit, never more
    than the pool's capacity: what the team may hold while the other teams leave theirs idle."""
    flavors = by_kind(objects, "ResourceFlavor")
    topologies = by_kind(objects, "Topology")
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    assignment: dict[str, str] = {}
    for ps in workload:
        requested = ps.pod_requests
        [group] = [g for g in cq["spec"]["resourceGroups"] if set(requested) & set(g["coveredResources"])]
        reasons = []
        for flavor in group["flavors"]:
            quota = {r["name"]: display_units(r["name"], r["nominalQuota"]) for r in flavor["resources"]}
            if borrow:
                capacity = config.pool(flavor["name"]).capacity.as_dict()
                quota = {r["name"]: min(capacity[r["name"]], quota[r["name"]] + display_units(r["name"], r["borrowingLimit"]))
                         if "borrowingLimit" in r else capacity[r["name"]] for r in flavor["resources"]}
            node = config.pool(flavor["name"]).allocatable.as_dict()
            rf_spec = flavors[(None, flavor["name"])]["spec"]
            if ps.topology_level is not None:
                topology = topologies.get((None, rf_spec.get("topologyName", "")))
                if topology is None:
                    reasons.append(f"{flavor['name']}: no topologyName (Kueue: 'does not support TopologyAwareScheduling')")
                    continue
                if ps.topology_level not in [level["nodeLabel"] for level in topology["spec"]["levels"]]:
                    reasons.append(f"{flavor['name']}: topology has no level {ps.topology_level}")
                    continue
            too_big = [r for r, v in requested.items() if v > node.get(r, 0)]
            over = [r for r, v in requested.items() if used[flavor["name"]][r] + v * ps.count > quota.get(r, 0)]
            if too_big or over:
                reasons.append(f"{flavor['name']}: pod larger than a node in {too_big}, over quota in {over}")
                continue
            for r, v in requested.items():
                used[flavor["name"]][r] += v * ps.count
            assignment[ps.name] = flavor["name"]
            break
        else:
            raise AssertionError(f"pod set {ps.name} ({ps.count} x {requested}) fits no flavor of "
                                 f"ClusterQueue {cq['metadata']['name']}: {reasons}")
    return assignment


@pytest.fixture
def dev_objects(dev_config: StackConfig) -> list[dict[str, Any]]:
    return build_objects(dev_config)


# --- the set of samples -------------------------------------------------------------------


def test_there_is_a_sample_for_every_framework_the_dev_stack_enables(dev_config: StackConfig) -> None:
    docs = [load_sample(p) for p in SAMPLE_FILES]
    covered = {{**BUILTIN, **CRDS}[(d["apiVersion"], d["kind"])] for d in docs}
    assert set(dev_config.kueue.frameworks) - covered == set()
    jobs = [ps for d in docs if d["kind"] == "Job" for ps in pod_sets(d)]
    assert any(ps.pod_requests.get("nvidia.com/gpu") == 1 for ps in jobs), "no Job asks for one GPU"
    assert any(ps.topology_level for ps in jobs), "no topology-aware Job"
    assert any("nvidia.com/gpu" not in ps.pod_requests and not ps.topology_level for ps in jobs), "no plain CPU Job"


# --- each sample --------------------------------------------------------------------------


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_is_valid_kubernetes(path: Path) -> None:
    doc = load_sample(path)
    key = (doc["apiVersion"], doc["kind"])
    assert key in BUILTIN or key in CRDS, f"{path.name}: {key} is not a kind the samples use"
    assert is_dns1123_label(doc["metadata"]["name"]), doc["metadata"]["name"]
    if key in BUILTIN:
        assert k8s_schema_errors(doc) == []
    else:
        # Against the CRD the stack installs for the kind (from the operator's pinned module)...
        assert crd_schema_errors(doc) == []
        # ...whose pod templates are only `type: object` there: check each as a core/v1 PodTemplate.
        for ps in pod_sets(doc):
            wrapper = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": ps.name},
                       "template": ps.template}
            assert k8s_schema_errors(wrapper) == [], ps.name


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_every_container_states_its_requests(path: Path) -> None:
    for ps in pod_sets(load_sample(path)):
        spec = ps.template["spec"]
        for container in spec["containers"] + spec.get("initContainers", []):
            requests = container.get("resources", {}).get("requests", {})
            assert {RESOURCE_CPU, RESOURCE_MEMORY} <= set(requests), f"{ps.name}/{container['name']}: {requests}"
        # The flavor adds the pool's nodeSelector and tolerations; a sample's own would fight them.
        assert not {"nodeSelector", "tolerations", "affinity"} & set(spec), ps.name


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_follows_its_frameworks_kueue_rules(path: Path) -> None:
    doc = load_sample(path)
    spec = doc["spec"]
    if doc["kind"] == "RayJob":
        # Kueue's RayJob webhook rejects these.
        assert spec.get("shutdownAfterJobFinishes") is True
        assert "clusterSelector" not in spec
        assert not spec["rayClusterSpec"].get("enableInTreeAutoscaling", False)
    if doc["kind"] in TRAINING_V1:
        for ps in pod_sets(doc):
            assert TRAINING_V1[doc["kind"]][1] in [c["name"] for c in ps.template["spec"]["containers"]], ps.name
    if doc["kind"] == "TrainJob":
        # The runtime the stack creates (components/operators/installs.py).
        assert spec["runtimeRef"]["name"] in [r["metadata"]["name"] for r in trainer_runtimes()]
    if doc["kind"] == "Job":
        assert spec["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_names_a_local_queue_of_the_dev_stack(path: Path, dev_config: StackConfig,
                                                     dev_objects: list[dict[str, Any]]) -> None:
    doc = load_sample(path)
    meta = doc["metadata"]
    namespace, labels = meta.get("namespace"), meta.get("labels", {})
    assert QUEUE_LABEL in labels, f"{path.name}: without {QUEUE_LABEL} Kueue ignores the job"
    local_queue = by_kind(dev_objects, "LocalQueue").get((namespace, labels[QUEUE_LABEL]))
    assert local_queue, f"{path.name}: no LocalQueue {namespace}/{labels[QUEUE_LABEL]} in the dev stack"
    cq = by_kind(dev_objects, "ClusterQueue")[(None, local_queue["spec"]["clusterQueue"])]
    ns = by_kind(dev_objects, "Namespace")[(None, namespace)]
    assert selects(cq["spec"]["namespaceSelector"], ns["metadata"]["labels"]), \
        f"ClusterQueue {cq['metadata']['name']} does not select namespace {namespace}"
    # Every sample states its priority (docs/batch-users.md lists it), and names a class that exists.
    assert PRIORITY_LABEL in labels, f"{path.name}: state the priority ({PRIORITY_LABEL})"
    assert (None, labels[PRIORITY_LABEL]) in by_kind(dev_objects, "WorkloadPriorityClass")
    framework = {**BUILTIN, **CRDS}[(doc["apiVersion"], doc["kind"])]
    assert framework in dev_config.kueue.frameworks, f"{framework} is not enabled: the job would run unqueued"


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_asks_only_for_what_its_queue_covers_and_fits(path: Path, dev_config: StackConfig,
                                                             dev_objects: list[dict[str, Any]]) -> None:
    doc = load_sample(path)
    meta = doc["metadata"]
    local_queue = by_kind(dev_objects, "LocalQueue")[(meta["namespace"], meta["labels"][QUEUE_LABEL])]
    cq = by_kind(dev_objects, "ClusterQueue")[(None, local_queue["spec"]["clusterQueue"])]
    covered = {r for g in cq["spec"]["resourceGroups"] for r in g["coveredResources"]}
    workload = pod_sets(doc)
    for ps in workload:
        assert set(ps.pod_requests) <= covered, f"{ps.name}: {sorted(set(ps.pod_requests) - covered)} not covered"
    assign_flavors(workload, cq, dev_objects, dev_config, borrow=path.name in BORROWING_SAMPLES)


def test_flavor_assignment_rejects_what_kueue_would_not_admit(dev_config: StackConfig,
                                                              dev_objects: list[dict[str, Any]]) -> None:
    cq = by_kind(dev_objects, "ClusterQueue")[(None, "platform")]
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    small = {"spec": {"containers": [container]}}
    assert assign_flavors([PodSet("main", 1, small)], cq, dev_objects, dev_config) == {"main": "cpu"}
    gpu = {"spec": {"containers": [{**container, "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": 1}}}]}}
    assert assign_flavors([PodSet("main", 1, gpu)], cq, dev_objects, dev_config) == {"main": "gpu"}
    with pytest.raises(AssertionError, match="fits no flavor"):  # more GPUs than the team's quota
        assign_flavors([PodSet("main", 3, gpu)], cq, dev_objects, dev_config)
    # Borrowing, all three of the pool's GPUs; never a fourth.
    assert assign_flavors([PodSet("main", 3, gpu)], cq, dev_objects, dev_config, borrow=True) == {"main": "gpu"}
    with pytest.raises(AssertionError, match="fits no flavor"):
        assign_flavors([PodSet("main", 4, gpu)], cq, dev_objects, dev_config, borrow=True)
    huge = {"spec": {"containers": [{**container, "resources": {"requests": {"cpu": "9", "memory": "1Gi"}}}]}}
    with pytest.raises(AssertionError, match="pod larger than a node"):  # quota fits, no node does
        assign_flavors([PodSet("main", 1, huge)], cq, dev_objects, dev_config)


def test_topology_request_fits_only_the_topology_queue(dev_config: StackConfig,
                                                       dev_objects: list[dict[str, Any]]) -> None:
    """LocalQueue `default` feeds the ordinary pools, so a pod set that asks for a topology fits
    none of them; LocalQueue `topology` feeds the topology-aware tas pool."""
    local_queues = by_kind(dev_objects, "LocalQueue")
    cqs = by_kind(dev_objects, "ClusterQueue")
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    packed = {"metadata": {"annotations": {TOPOLOGY_ANNOTATIONS[1]: "kubernetes.io/hostname"}},
              "spec": {"containers": [container]}}
    default = cqs[(None, local_queues[("research", "default")]["spec"]["clusterQueue"])]
    with pytest.raises(AssertionError, match="no topologyName"):
        assign_flavors([PodSet("main", 2, packed)], default, dev_objects, dev_config)
    topology = cqs[(None, local_queues[("research", "topology")]["spec"]["clusterQueue"])]
    assert topology["metadata"]["name"] == "research-topology"
    assert assign_flavors([PodSet("main", 2, packed)], topology, dev_objects, dev_config) == {"main": "tas"}
