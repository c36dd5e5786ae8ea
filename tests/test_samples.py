"""Sample workloads in examples/: valid Kubernetes, admissible by every team's queues of the dev
stack, cleaned up the way docs/batch-users.md says.

Validity: built-in kinds (batch/v1 Job) are validated against the Kubernetes JSON schemas that
kubernetes-validate ships, in strict mode. The operators' kinds (RayJob, JobSet, TrainJob, MPIJob,
PyTorchJob...) are validated against the CRDs the stack installs for them, read from the
operators' pinned modules (components/operators), and each embedded pod template strictly as a
core/v1 PodTemplate; the queue label is set and every container states resource requests. A few Kueue rules for RayJobs and the training operator's container name are
checked too.

Admissibility uses the project's own builders, not names typed here: the dev stack is parsed
with components.config and its objects come from components.kueue.objects.build_objects. No
sample names a namespace (a member gives their team's: `kubectl apply -n <team> -f`), so each is
checked in every team's namespace: it must name a LocalQueue that exists there, whose
ClusterQueue selects that namespace and covers every resource the sample requests; a
priority-class label must name a WorkloadPriorityClass the stack creates; its framework must be
enabled. Flavors are then assigned the way Kueue does (in the ClusterQueue's order, the first
flavor that fits each pod set): the whole workload must fit the team's own nominal quota, every
pod must fit one node of the flavor's pool, and a pod set with a topology request needs a
topology-aware flavor.

Clean-up: every kind whose TTL deletes the job itself sets it to 10 minutes; what the other kinds'
TTLs delete (or that they have none) is read from the CRDs and from their controllers' source, and
docs/batch-users.md's table of the kinds that stay is derived from the same facts. So is its
table of each kind's pod label, against the labels the e2e tier finds pods by (testbed/kinds.py).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import re

import jsonschema
import kubernetes_validate
import pytest
import yaml

from components.access.identity import SERVICE_ACCOUNT, USE_LABEL
from components.k8s.resources import RESOURCE_CPU, RESOURCE_MEMORY
from components.config.parse import parse_config, raw_from_stack_file
from components.config.stack import StackConfig
from components.operators.installs import installs, trainer_runtimes
from components.k8s.names import is_dns1123_label
from components.kueue.objects import build_objects
from components.facts.kueue_versions import DEFAULT_VERSION
from testbed.harness import ROOT
from testbed.pod_sets import TOPOLOGY_ANNOTATIONS, TRAINING_V1, PodSet, display_units, pod_sets
from testbed.samples import BATCH_USERS, EXAMPLES, IDENTITY_SAMPLES, doc_kinds, doc_pod_selectors, doc_table

SAMPLE_FILES = sorted([*EXAMPLES.glob("*.yaml"), *IDENTITY_SAMPLES])
# Samples that need more than their team's own quota and say so: they borrow what others leave idle.
BORROWING_SAMPLES = {"pytorchjob-gpu.yaml"}
K8S_VERSION = "1.33"  # a Kubernetes minor AKS supports; the schemas differ little between minors

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

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


# Each kind's TTL field and what it deletes, read in its controller at the pinned version (components/facts/operators.py):
# - Job: Kubernetes' TTL-after-finished controller deletes the Job;
# - JobSet (jobset v0.12.0 pkg/controllers/ttl_after_finished.go) deletes the JobSet;
# - the Training Operator's v1 kinds (v1.9.3 pkg/controller.v1/common/job.go CleanupJob) call DeleteJob;
# - MPIJob (mpi-operator v0.8.2 pkg/controller/mpi_job_controller.go newLauncherJob) copies it to its
#   launcher Job's own ttlSecondsAfterFinished: the launcher goes, the MPIJob stays;
# - RayJob (kuberay v1.6.2 controllers/ray/rayjob_controller.go handleShutdownAfterJobFinishes)
#   deletes the RayCluster only (the RayJob too only if the operator runs with
#   DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, which the stack does not set). Its deletionStrategy rules,
#   which could delete the RayJob, exclude shutdownAfterJobFinishes, which Kueue requires.
# A kind missing here has no such field in its CRD (TrainJob v1alpha1 of Trainer 2.2.1, RayCluster):
# test_ttl_fields_are_the_crds keeps this table and the CRDs in step.
THE_JOB = "the job"
TTL_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "Job": (("spec", "ttlSecondsAfterFinished"), THE_JOB),
    "JobSet": (("spec", "ttlSecondsAfterFinished"), THE_JOB),
    **{kind: (("spec", "runPolicy", "ttlSecondsAfterFinished"), THE_JOB) for kind in TRAINING_V1},
    "MPIJob": (("spec", "runPolicy", "ttlSecondsAfterFinished"), "its launcher Job"),
    "RayJob": (("spec", "ttlSecondsAfterFinished"), "its RayCluster"),
}
TTL_SECONDS = 600  # docs/batch-users.md: "deleted 10 minutes after it finishes"
# A RayJob's TTL deletes its Ray cluster, whose pods would hold nodes after Kueue freed the quota.
RAY_CLUSTER_TTL_SECONDS = 60


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
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(doc)
    ]
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


def assign_flavors(
    workload: list[PodSet],
    cq: dict[str, Any],
    objects: list[dict[str, Any]],
    config: StackConfig,
    *,
    borrow: bool = False,
) -> dict[str, str]:
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
                quota = {
                    r["name"]: min(
                        capacity[r["name"]], quota[r["name"]] + display_units(r["name"], r["borrowingLimit"])
                    )
                    if "borrowingLimit" in r
                    else capacity[r["name"]]
                    for r in flavor["resources"]
                }
            node = config.pool(flavor["name"]).allocatable.as_dict()
            rf_spec = flavors[(None, flavor["name"])]["spec"]
            if ps.topology_level is not None:
                topology = topologies.get((None, rf_spec.get("topologyName", "")))
                if topology is None:
                    reasons.append(
                        f"{flavor['name']}: no topologyName (Kueue: 'does not support TopologyAwareScheduling')"
                    )
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
            raise AssertionError(
                f"pod set {ps.name} ({ps.count} x {requested}) fits no flavor of "
                f"ClusterQueue {cq['metadata']['name']}: {reasons}"
            )
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
            wrapper = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": ps.name},
                "template": ps.template,
            }
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
def test_sample_names_no_namespace(path: Path) -> None:
    """A member submits it in their own team's namespace, `kubectl apply -n <team> -f` (kubectl
    refuses a -n that differs from a namespace in the file)."""
    assert "namespace" not in load_sample(path)["metadata"], f"{path.name}: only one team could apply it"


@pytest.mark.parametrize("path", IDENTITY_SAMPLES, ids=lambda p: p.name)
def test_an_identity_sample_runs_as_the_teams_service_account_with_the_webhooks_label(path: Path) -> None:
    """The ServiceAccount the stack makes for a team identity, and the pod label AKS's workload
    identity webhook acts on (its value the string "true"), on every pod template."""
    template = load_sample(path)["spec"]["template"]
    assert template["spec"]["serviceAccountName"] == SERVICE_ACCOUNT
    assert template["metadata"]["labels"][USE_LABEL] == "true"
    assert f"examples/identity/{path.name}" in BATCH_USERS.read_text()


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_names_a_local_queue_of_every_dev_team(
    path: Path, dev_config: StackConfig, dev_objects: list[dict[str, Any]]
) -> None:
    doc = load_sample(path)
    labels = doc["metadata"].get("labels", {})
    assert QUEUE_LABEL in labels, f"{path.name}: without {QUEUE_LABEL} Kueue ignores the job"
    for namespace in (team.name for team in dev_config.teams):
        local_queue = by_kind(dev_objects, "LocalQueue").get((namespace, labels[QUEUE_LABEL]))
        assert local_queue, f"{path.name}: no LocalQueue {namespace}/{labels[QUEUE_LABEL]} in the dev stack"
        cq = by_kind(dev_objects, "ClusterQueue")[(None, local_queue["spec"]["clusterQueue"])]
        ns = by_kind(dev_objects, "Namespace")[(None, namespace)]
        assert selects(cq["spec"]["namespaceSelector"], ns["metadata"]["labels"]), (
            f"ClusterQueue {cq['metadata']['name']} does not select namespace {namespace}"
        )
    # Every sample states its priority (docs/batch-users.md lists it), and names a class that exists.
    assert PRIORITY_LABEL in labels, f"{path.name}: state the priority ({PRIORITY_LABEL})"
    assert (None, labels[PRIORITY_LABEL]) in by_kind(dev_objects, "WorkloadPriorityClass")
    framework = {**BUILTIN, **CRDS}[(doc["apiVersion"], doc["kind"])]
    assert framework in dev_config.kueue.frameworks, f"{framework} is not enabled: the job would run unqueued"


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_asks_only_for_what_its_queue_covers_and_fits(
    path: Path, dev_config: StackConfig, dev_objects: list[dict[str, Any]]
) -> None:
    """In every team's namespace of the dev stack."""
    doc = load_sample(path)
    meta = doc["metadata"]
    for team in dev_config.teams:
        local_queue = by_kind(dev_objects, "LocalQueue")[(team.name, meta["labels"][QUEUE_LABEL])]
        cq = by_kind(dev_objects, "ClusterQueue")[(None, local_queue["spec"]["clusterQueue"])]
        covered = {r for g in cq["spec"]["resourceGroups"] for r in g["coveredResources"]}
        workload = pod_sets(doc)
        for ps in workload:
            assert set(ps.pod_requests) <= covered, f"{ps.name}: {sorted(set(ps.pod_requests) - covered)} not covered"
        assign_flavors(workload, cq, dev_objects, dev_config, borrow=path.name in BORROWING_SAMPLES)


def test_flavor_assignment_rejects_what_kueue_would_not_admit(
    dev_config: StackConfig, dev_objects: list[dict[str, Any]]
) -> None:
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


def test_topology_request_fits_only_the_topology_queue(
    dev_config: StackConfig, dev_objects: list[dict[str, Any]]
) -> None:
    """LocalQueue `default` feeds the ordinary pools, so a pod set that asks for a topology fits
    none of them; LocalQueue `topology` feeds the topology-aware tas pool."""
    local_queues = by_kind(dev_objects, "LocalQueue")
    cqs = by_kind(dev_objects, "ClusterQueue")
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    packed = {
        "metadata": {"annotations": {TOPOLOGY_ANNOTATIONS[1]: "kubernetes.io/hostname"}},
        "spec": {"containers": [container]},
    }
    default = cqs[(None, local_queues[("research", "default")]["spec"]["clusterQueue"])]
    with pytest.raises(AssertionError, match="no topologyName"):
        assign_flavors([PodSet("main", 2, packed)], default, dev_objects, dev_config)
    topology = cqs[(None, local_queues[("research", "topology")]["spec"]["clusterQueue"])]
    assert topology["metadata"]["name"] == "research-topology"
    assert assign_flavors([PodSet("main", 2, packed)], topology, dev_objects, dev_config) == {"main": "tas"}


# --- clean-up after a job finishes ------------------------------------------------------------


def ttl_paths(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where a CRD's schema has a ttlSecondsAfterFinished of the kind's own: not inside an embedded
    template (a JobSet's replicated Jobs have theirs)."""
    found = []
    for key, sub in (schema.get("properties") or {}).items():
        if key == "ttlSecondsAfterFinished":
            found.append((*path, key))
        elif key != "template":
            found += ttl_paths(sub, (*path, key))
    if isinstance(schema.get("items"), dict):
        found += ttl_paths(schema["items"], path)
    return found


def sample_kinds() -> dict[str, list[Path]]:
    kinds: dict[str, list[Path]] = defaultdict(list)
    for path in SAMPLE_FILES:
        kinds[load_sample(path)["kind"]].append(path)
    return dict(kinds)


def kinds_deleted_after_they_finish() -> set[str]:
    return {kind for kind in sample_kinds() if kind in TTL_FIELDS and TTL_FIELDS[kind][1] == THE_JOB}


def test_ttl_fields_are_the_crds() -> None:
    """TTL_FIELDS names, for each kind of the samples, the one TTL field its CRD has, and no kind
    whose CRD has none: a new operator version that adds or moves one fails here."""
    kinds = {(d["apiVersion"], d["kind"]) for d in map(load_sample, SAMPLE_FILES)}
    for api_version, kind in sorted(kinds):
        if (api_version, kind) in BUILTIN:
            continue  # batch/v1 JobSpec.ttlSecondsAfterFinished: the strict schema check knows it
        expected = [TTL_FIELDS[kind][0]] if kind in TTL_FIELDS else []
        assert ttl_paths(_installed_crds()[(api_version, kind)]) == expected, kind
    assert set(TTL_FIELDS) >= {"Job"} and {"TrainJob", "RayCluster"} & set(TTL_FIELDS) == set()


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_sets_its_kinds_ttl(path: Path) -> None:
    doc = load_sample(path)
    if doc["kind"] not in TTL_FIELDS:
        return
    field, _ = TTL_FIELDS[doc["kind"]]
    value: Any = doc
    for key in field:
        value = value.get(key, {})
    expected = RAY_CLUSTER_TTL_SECONDS if doc["kind"] == "RayJob" else TTL_SECONDS
    assert value == expected, f"{path.name}: {'.'.join(field)} is {value or 'unset'}, not {expected}"


def test_the_doc_says_which_kinds_stay_after_they_finish() -> None:
    """docs/batch-users.md "After a job finishes": "yes" for exactly the kinds whose TTL deletes the
    job itself, "no" and a delete command naming a sample of the kind for every other."""
    rows = doc_table("After a job finishes")
    said = {kind: row for row in rows for kind in doc_kinds(row[0])}
    assert set(said) == set(sample_kinds()), sorted(set(said) ^ set(sample_kinds()))
    deleted = {kind for kind, row in said.items() if row[1].startswith("yes")}
    assert deleted == kinds_deleted_after_they_finish()
    for kind in set(said) - deleted:
        assert said[kind][1].startswith("no"), said[kind]
        assert any(f"kubectl delete -n <team> -f examples/{p.name}" in said[kind][3] for p in sample_kinds()[kind]), (
            said[kind]
        )
    assert f"ttlSecondsAfterFinished: {TTL_SECONDS}" in BATCH_USERS.read_text()


def test_the_doc_finds_the_pods_of_every_kind_by_the_label_the_e2e_tier_uses() -> None:
    """Each operator's label, as the e2e tier finds the pods of each kind on the real operators
    (testbed/kinds.py, test_operators.py); a Job's pods as testbed/jobs.py finds them."""
    from testbed.kinds import KINDS

    selectors = doc_pod_selectors()
    assert set(selectors) == set(sample_kinds()), sorted(set(selectors) ^ set(sample_kinds()))
    assert selectors.pop("Job") == "batch.kubernetes.io/job-name"
    assert selectors == {kind: spec.pods_label for kind, spec in KINDS.items()}


def test_the_doc_installs_the_plugin_of_the_stacks_kueue() -> None:
    """docs/batch-users.md "What to install": krew first, the release binary next, `go install`
    last, each release named being the stack's default Kueue version."""
    section = BATCH_USERS.read_text().split("\n## What to install\n", 1)[1].split("\n## ", 1)[0]
    ways = [section.index(w) for w in ("kubectl krew install kueue", "releases/download/", "go install sigs.k8s.io")]
    assert ways == sorted(ways), ways
    assert set(re.findall(r"\bv\d+\.\d+\.\d+\b", section)) == {f"v{DEFAULT_VERSION}"}
    assert "kubectl-kueue-$OS-$ARCH" in section  # Kueue's release assets: kubectl-kueue-<os>-<arch>
