"""Every kind the stack enables runs, on the real operators and the real Kueue (issue 21).

For each kind, its sample from examples/ (as a batch user submits it): Kueue admits it as one
Workload on a flavor, and every pod its operator creates is scheduled on that flavor's pool, never
on the system pool. Two copies that do not both fit the pool: the second stays suspended, not
admitted, until the first is deleted. A RayJob and a JobSet borrow the GPU pool's idle quota
and are preempted when the lending team reclaims it, and their pods are gone afterwards.
Runs on the dev stack and on multi-gpu (several GPU pools), whose operators the tier installs
(stacks.OPERATOR_STACKS).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from components.config.names import POOL_LABEL

from testbed.cluster import is_true, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, job, wait_admitted
from testbed.kinds import (
    KINDS,
    assert_admitted_whole_on_its_pool,
    delete,
    keep_running,
    pinned,
    pod_count,
    pods_of,
    prepared,
    renamed,
    requests,
    sample_lands_on_its_pool,
    wait_no_pods,
    workload,
)
from testbed.stack_cluster import StackCluster
from testbed.stacks import OPERATOR_STACKS


def _on_operator_stacks(*kinds: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize(("stack", "kind"), [(s, k) for s in OPERATOR_STACKS for k in kinds])


def _second_copy_waits(cluster: StackCluster, kind: str) -> None:
    """Each copy asks for a little more than half the first CPU pool, so only one fits at a time."""
    pool = next(p for p in cluster.config.node_pools if not p.is_gpu and not p.topology)
    base = KINDS[kind].load()
    if kind in ("PaddleJob", "JAXJob"):
        (specs,) = [v for k, v in base["spec"].items() if k.endswith("ReplicaSpecs")]
        specs["Worker"]["replicas"] = 3
    elif kind == "TrainJob":
        base["spec"]["trainer"]["numNodes"] = 3
    elif kind == "RayCluster":
        base["spec"]["workerGroupSpecs"][0].update(replicas=2, minReplicas=2, maxReplicas=2)
    pods = pod_count(kind, base)
    cpu = math.ceil(0.55 * pool.capacity.cpu_millicores / pods)
    assert cpu <= pool.allocatable.cpu_millicores, f"{kind}: {pods} pods cannot hold half the pool"
    first = prepared(cluster, kind, renamed(base, "first"), keep_running, pinned(pool.name), cpu=f"{cpu}m")
    second = renamed(first, "second")
    cluster.kubectl.apply([first])
    try:
        assert_admitted_whole_on_its_pool(cluster, kind, first)
        cluster.kubectl.apply([second])
        wl = wait_for(
            f"{kind} second to be queued",
            lambda: ((w := workload(cluster, kind, second)) is not None and is_true(w, "QuotaReserved") is False, w),
            30,
        )
        assert not is_true(wl, "Admitted"), wl["status"]
        assert [p for p in pods_of(cluster, kind, second) if p["spec"].get("nodeName")] == []
        delete(cluster, kind, first)
        assert_admitted_whole_on_its_pool(cluster, kind, second)
    finally:
        delete(cluster, kind, first, second)


def _borrows_then_is_preempted(cluster: StackCluster, kind: str) -> None:
    """The whole first GPU pool for the team with the smaller share, then the other team reclaims one GPU."""
    gpu = next(p for p in cluster.config.node_pools if p.is_gpu and not p.topology and not p.spot)
    borrower_team, lender_team = (
        sorted(cluster.config.teams, key=lambda t: t.share)[0],
        max(cluster.config.teams, key=lambda t: t.share),
    )
    doc = KINDS[kind].load()
    doc["metadata"]["namespace"] = borrower_team.name
    pods = pod_count(kind, doc)
    per_pod = max(1, gpu.capacity.gpus // pods)
    assert per_pod * pods > gpu.capacity.gpus * float(borrower_team.share) / 100, "the scenario needs borrowing"

    def gpus_for_cluster_pods(template: dict[str, Any]) -> None:
        if template["spec"]["containers"][0]["name"] != "ray-job-submitter":
            requests(gpu=per_pod)(template)

    doc = prepared(cluster, kind, doc, keep_running, gpus_for_cluster_pods, requests(cpu="500m"))
    cluster.kubectl.apply([doc])
    lender = job(
        lender_team.name,
        "lender",
        pods=1,
        node_selector={POOL_LABEL: gpu.name},
        run_for="1h",
        requests={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
    )
    try:
        wl = assert_admitted_whole_on_its_pool(cluster, kind, doc)
        # Every pod set that asks for GPUs is on the GPU pool (a RayJob's submitter asks for none).
        gpu_sets = [a for a in wl["status"]["admission"]["podSetAssignments"] if "nvidia.com/gpu" in a["flavors"]]
        assert len(gpu_sets) >= 2 and {a["flavors"]["nvidia.com/gpu"] for a in gpu_sets} == {gpu.name}, gpu_sets
        cluster.kubectl.apply([lender])
        wait_for(
            f"{kind} to be evicted by the lender's reclaim",
            lambda: ((w := workload(cluster, kind, doc)) is not None and is_true(w, "Evicted"), w),
            60,
        )
        evicted = workload(cluster, kind, doc)
        assert evicted is not None
        reasons = {c["type"]: c.get("reason") for c in evicted["status"]["conditions"]}
        assert reasons.get("Preempted") in ("InCohortReclamation", "InCohortFairSharing"), evicted["status"][
            "conditions"
        ]
        wait_admitted(cluster, lender_team.name, "lender")
        wait_no_pods(cluster, kind, doc)
    finally:
        delete(cluster, kind, doc)
        delete_jobs(cluster, lender_team.name, "lender")


# One test per kind, each named after it.


@_on_operator_stacks("RayJob")
def test_rayjob_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    sample_lands_on_its_pool(cluster, kind)


@_on_operator_stacks("RayCluster")
def test_raycluster_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    sample_lands_on_its_pool(cluster, kind)


@_on_operator_stacks("JobSet")
def test_jobset_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    sample_lands_on_its_pool(cluster, kind)


@_on_operator_stacks("TrainJob")
def test_trainjob_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    sample_lands_on_its_pool(cluster, kind)


@_on_operator_stacks("MPIJob")
def test_mpijob_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    sample_lands_on_its_pool(cluster, kind)


@_on_operator_stacks("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
def test_kubeflow_v1_job_sample_is_admitted_whole_on_its_pool(cluster: StackCluster, kind: str) -> None:
    """PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob: the Training Operator's kinds."""
    sample_lands_on_its_pool(cluster, kind)


@on_stacks("dev")
@pytest.mark.parametrize("kind", list(KINDS))
def test_second_copy_of_each_kind_waits_for_the_first(cluster: StackCluster, kind: str) -> None:
    _second_copy_waits(cluster, kind)


@on_stacks("dev")
@pytest.mark.parametrize("kind", ["RayJob", "JobSet"])
def test_rayjob_and_jobset_borrow_idle_gpus_and_are_preempted_on_reclaim(cluster: StackCluster, kind: str) -> None:
    _borrows_then_is_preempted(cluster, kind)


@on_stacks("dev")
def test_rayservice_in_a_team_namespace_is_refused_with_the_reason(cluster: StackCluster) -> None:
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve", "namespace": "research"},
        "spec": {"rayClusterConfig": KINDS["RayCluster"].load()["spec"]},
    }
    done = cluster.kubectl.apply([service], check=False)
    assert done.returncode != 0 and "kueue-aks-rayservice-guard" in done.stderr and "outside the teams" in done.stderr
    cluster.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}}])
    allowed = {**service, "metadata": {"name": "serve", "namespace": "serving"}}
    assert cluster.kubectl.apply([allowed], dry_run=True, check=False).returncode == 0


@on_stacks("dev")
def test_mpijob_launcher_is_charged_once(cluster: StackCluster) -> None:
    """The MPI Operator copies the MPIJob's queue-name label onto its launcher Job. Kueue skips a Job
    whose owner is a kind it manages, but only once that kind's integration is set up: had Kueue
    started before the MPIJob CRD, the launcher would be admitted as a Workload of its own and
    charged twice (components/operators/component.py `apis`)."""
    doc = prepared(cluster, "MPIJob", KINDS["MPIJob"].load(), keep_running)
    cluster.kubectl.apply([doc])
    try:
        assert_admitted_whole_on_its_pool(cluster, "MPIJob", doc)
        namespace = doc["metadata"]["namespace"]
        owners = [
            o["kind"]
            for w in cluster.kubectl.items("workloads.kueue.x-k8s.io", "-n", namespace)
            for o in w["metadata"].get("ownerReferences", [])
        ]
        assert owners == ["MPIJob"], owners
    finally:
        delete(cluster, "MPIJob", doc)
