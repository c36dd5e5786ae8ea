"""One set-up on its own local control plane: bring it up, replay the trace, watch what happens.

The control plane is the e2e tier's (testbed/stack_cluster.py): kwok nodes shaped by the
program's capacity model, the real kube-scheduler and the real Kueue controller. Pods run for the
time their job's annotation says (the tier's pod-complete Stage). Jobs are posted at their arrival
times by one thread; the main thread reads every trace pod, Job and Workload once a second and keeps, per
sample, what each team holds, what is waiting, and which pods found no node.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.names import POOL_LABEL
from components.k8s.resources import RESOURCE_GPU as GPU_RESOURCE
from components.config.stack import StackConfig
from components.k8s.quantity import parse_quantity
from testbed.binaries import Binaries
from testbed.cluster import Api, E2EError, is_true, wait_for
from testbed.forward import Forwarder
from testbed.stack_cluster import StackCluster

from .metrics import CPU, GPU, JobRecord, Sample, dominant_size
from .setups import TRACE_LABEL, Setup, job_object
from .trace import TraceJob

SAMPLE_SECONDS = 1.0


@dataclass
class Run:
    setup: str
    records: list[JobRecord]
    samples: list[Sample]
    preemptions: dict[str, int]  # reason of the Preempted condition (or "unseen") -> count
    up_seconds: float
    replay_seconds: float


# Kinds in the order they may be created; within a stage nothing names anything else.
STAGES = (
    ("Namespace",),
    ("Topology", "ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ProvisioningRequestConfig", "AdmissionCheck"),
    ("ClusterQueue",),
    ("LocalQueue",),
)
APPLIERS = 4  # parallel applies per stage: each object goes through Kueue's webhook


def apply_in_stages(sc: StackCluster, objects: Sequence[Mapping[str, Any]]) -> None:
    """Objects by stage, a stage's objects in APPLIERS parallel server-side applies; an implicit
    cohort (no Cohort object, as the Azure example has) needs nothing."""
    staged = {kind: i for i, kinds in enumerate(STAGES) for kind in kinds}
    unknown = sorted({o["kind"] for o in objects} - set(staged))
    if unknown:
        raise E2EError(f"no creation stage for {unknown}")
    for i in range(len(STAGES)):
        stage = [o for o in objects if staged[o["kind"]] == i]
        chunks = [stage[k::APPLIERS] for k in range(APPLIERS) if stage[k::APPLIERS]]
        with ThreadPoolExecutor(APPLIERS) as pool:
            list(pool.map(lambda chunk: sc.kubectl.apply(chunk, timeout=300), chunks))


def with_kueue(
    sc: StackCluster,
    name: str,
    values: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    started: float,
    timeout_s: float = 120,
) -> None:
    """On a control plane already up: Kueue with `values`, then `objects`, until every queue is Active."""
    sc.install_kueue(values, started)
    sc.objects = [dict(o) for o in objects]
    apply_in_stages(sc, sc.objects)
    wait_for(f"{name}: every ClusterQueue and LocalQueue to be Active", sc.queues_active, timeout_s)


def bring_up(
    setup: Setup, config: StackConfig, hand_config: StackConfig, binaries: Binaries, workdir: Path, forwarder: Forwarder
) -> StackCluster:
    """The set-up's control plane with its nodes, Kueue and objects, every queue Active;
    `up_seconds` is how long that took."""
    started = time.monotonic()
    sc = StackCluster(
        f"outcomes-{setup.name}", config if setup.program else hand_config, binaries, workdir / setup.name, forwarder
    )
    try:
        if setup.program:
            sc.up()
        else:
            sc.up(program=False)
            if setup.helm_values is None:
                sc.kubectl.apply(setup.objects)
            else:
                with_kueue(sc, setup.name, setup.helm_values, setup.objects, started, timeout_s=60)
    except BaseException:
        sc.down()
        raise
    sc.up_seconds = round(time.monotonic() - started, 1)
    return sc


def _user_nodes(sc: StackCluster) -> set[str]:
    """The user pools' nodes (the system pool's are left out of every figure)."""
    pools = {p.name for p in sc.config.node_pools}
    return {n["metadata"]["name"] for n in sc.nodes if n["metadata"]["labels"].get(POOL_LABEL) in pools}


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    if pod["status"].get("phase") != "Pending" or pod["spec"].get("nodeName"):
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in pod["status"].get("conditions") or []
    )


def _holds(pod: Mapping[str, Any]) -> dict[str, float]:
    requests = pod["spec"]["containers"][0]["resources"].get("requests", {})
    return {
        GPU: float(parse_quantity(requests.get(GPU_RESOURCE, 0))),
        CPU: float(parse_quantity(requests.get("cpu", 0)) * 1000),
    }


class _Submitter(threading.Thread):
    def __init__(self, api: Api, setup: Setup, jobs: Sequence[TraceJob], t0: float) -> None:
        super().__init__(name="outcomes-submitter", daemon=True)
        self.api, self.setup, self.jobs, self.t0 = api, setup, jobs, t0
        self.submitted: dict[str, float] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        for job in self.jobs:
            if self.stop.wait(max(0.0, self.t0 + job.arrival_s - time.monotonic())):
                return
            obj = job_object(job, self.setup)
            status, body = self.api.request("POST", f"/apis/batch/v1/namespaces/{job.team}/jobs", obj)
            if status >= 300:
                self.errors.append(f"{job.name}: {status} {body.get('message', body)}")
            else:
                self.submitted[job.name] = time.monotonic() - self.t0


def replay(
    sc: StackCluster, setup: Setup, jobs: Sequence[TraceJob], capacity: Mapping[str, float], deadline_s: float
) -> Run:
    """Post the trace, sample until every job finished or `deadline_s` passed; the jobs stay."""
    by_name = {j.name: j for j in jobs}
    user_nodes = _user_nodes(sc)
    api = Api(sc.kubectl.kubeconfig)
    t0 = time.monotonic()
    submitter = _Submitter(Api(sc.kubectl.kubeconfig), setup, jobs, t0)
    submitter.start()
    admitted: dict[str, float] = {}
    released: dict[str, float] = {}
    preempted: dict[tuple[str, str], str] = {}
    started: dict[str, float] = {}
    finished: dict[str, float] = {}
    waiting_since: dict[str, float] = {}
    samples: list[Sample] = []
    try:
        while True:
            t = time.monotonic() - t0
            pods = api.items(f"/api/v1/pods?labelSelector={TRACE_LABEL}")
            job_objects = {
                j["metadata"]["name"]: j for j in api.items(f"/apis/batch/v1/jobs?labelSelector={TRACE_LABEL}")
            }
            if setup.helm_values is not None:
                workloads = api.items("/apis/kueue.x-k8s.io/v1beta2/workloads")
                _note_admissions(t, workloads, by_name, admitted, released)
                _note_preemptions(workloads, preempted)
            samples.append(
                _sample(
                    t,
                    pods,
                    job_objects,
                    by_name,
                    submitter.submitted,
                    started,
                    finished,
                    waiting_since,
                    user_nodes,
                    capacity,
                )
            )
            if submitter.errors:
                raise E2EError(f"{setup.name}: the API server refused trace jobs: {submitter.errors[:5]}")
            if len(finished) == len(jobs) or t > deadline_s:
                break
            time.sleep(max(0.0, SAMPLE_SECONDS - (time.monotonic() - t0 - t)))
    finally:
        submitter.stop.set()
        submitter.join(timeout=10)
    replay_seconds = time.monotonic() - t0
    records = [
        JobRecord(
            j.name,
            j.team,
            submitter.submitted.get(j.name, j.arrival_s),
            started.get(j.name),
            finished.get(j.name),
            admitted.get(j.name),
            released.get(j.name),
        )
        for j in jobs
    ]
    preemptions = _preemptions(api, preempted) if setup.helm_values is not None else {}
    api.close()
    submitter.api.close()
    return Run(setup.name, records, samples, preemptions, sc.up_seconds, replay_seconds)


def _sample(
    t: float,
    pods: Sequence[Mapping[str, Any]],
    job_objects: Mapping[str, Mapping[str, Any]],
    by_name: Mapping[str, TraceJob],
    submitted: Mapping[str, float],
    started: dict[str, float],
    finished: dict[str, float],
    waiting_since: dict[str, float],
    user_nodes: set[str],
    capacity: Mapping[str, float],
) -> Sample:
    running: dict[str, list[Mapping[str, Any]]] = {}
    unschedulable: dict[str, int] = {}
    for pod in pods:
        name = pod["metadata"]["labels"][TRACE_LABEL]
        if (
            pod["status"].get("phase") == "Running"
            and pod["spec"].get("nodeName")
            and "deletionTimestamp" not in pod["metadata"]
        ):
            running.setdefault(name, []).append(pod)
        elif _unschedulable(pod):
            unschedulable[name] = unschedulable.get(name, 0) + 1
    used: dict[str, dict[str, float]] = {}
    idle: dict[str, float] = {}
    waiting: dict[str, list[tuple[float, float]]] = {}
    partial: set[str] = set()
    for name, job in by_name.items():
        if name not in submitted or name in finished:
            continue
        obj = job_objects.get(name)
        if obj is not None and (is_true(obj, "Complete") or (obj.get("status") or {}).get("succeeded", 0) >= job.pods):
            finished[name] = t
            continue
        mine = running.get(name, [])
        whole = len(mine) >= job.pods
        if whole:
            started.setdefault(name, t)
            waiting_since.pop(name, None)
        else:
            since = waiting_since.setdefault(name, min(t, submitted[name]) if name not in started else t)
            waiting.setdefault(job.team, []).append((dominant_size(job, capacity), round(t - since, 2)))
            if mine and unschedulable.get(name):
                partial.add(name)
        held = used.setdefault(job.team, {})
        for pod in mine:
            if pod["spec"]["nodeName"] not in user_nodes:
                continue
            for dimension, amount in _holds(pod).items():
                held[dimension] = held.get(dimension, 0.0) + amount
                if not whole:  # a gang's pods do no work until all of them run
                    idle[dimension] = idle.get(dimension, 0.0) + amount
    admitted_unplaced = sum(
        n for name, n in unschedulable.items() if not ((job_objects.get(name) or {}).get("spec") or {}).get("suspend")
    )
    return Sample(t, used, {k: tuple(v) for k, v in waiting.items()}, admitted_unplaced, frozenset(partial), idle)


def _note_admissions(
    t: float,
    workloads: Sequence[Mapping[str, Any]],
    by_name: Mapping[str, TraceJob],
    admitted: dict[str, float],
    released: dict[str, float],
) -> None:
    """The first time each trace job's Workload (owned by the Job) was seen admitted, and finished
    (when Kueue gives its quota back)."""
    for wl in workloads:
        owner = next((o["name"] for o in wl["metadata"].get("ownerReferences", []) if o.get("kind") == "Job"), None)
        if owner not in by_name:
            continue
        if owner not in admitted and is_true(wl, "Admitted"):
            admitted[owner] = t
        if owner not in released and is_true(wl, "Finished"):
            released[owner] = t


def _note_preemptions(workloads: Sequence[Mapping[str, Any]], preempted: dict[tuple[str, str], str]) -> None:
    """Each preemption seen, once: (Workload uid, when) -> Kueue's reason (InClusterQueue,
    InCohortReclamation, InCohortFairSharing, ...) from the Workload's Preempted condition."""
    for wl in workloads:
        for c in (wl.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Preempted" and c.get("status") == "True":
                preempted.setdefault((wl["metadata"]["uid"], c.get("lastTransitionTime", "")), c.get("reason", ""))


def _preemptions(api: Api, preempted: Mapping[tuple[str, str], str]) -> dict[str, int]:
    """Preemptions by reason. The total is Kueue's own count (schedulingStats); those the samples
    did not catch with a reason (two within one sample) count as `unseen`."""
    total = 0
    for wl in api.items("/apis/kueue.x-k8s.io/v1beta2/workloads"):
        for eviction in ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []:
            if eviction.get("reason") == "Preempted":
                total += int(eviction.get("count", 0))
    causes: dict[str, int] = {}
    for reason in preempted.values():
        causes[reason] = causes.get(reason, 0) + 1
    if total > len(preempted):
        causes["unseen"] = total - len(preempted)
    return causes
