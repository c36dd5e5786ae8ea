"""Scenario 4: borrowing idle quota in the cohort, reclaim by the lender, priority within a queue,
and the borrowing limit.

Shown on the GPU pool of the dev stack: 3 nodes × 1 T4. research (60 %) and platform (40 %)
each hold 1 GPU of nominal quota, the cohort the third. The limit is shown on the team-subsets
stack, where team web (25 %, `borrowing: 2`) may hold at most 75 % of an idle pool. Pods keep running (kwok's
pod-complete Stage waits for the RUN_FOR annotation) until the test deletes their Job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.config.names import POOL_LABEL
from components.k8s.quantity import cpu_millicores

from testbed.cluster import condition, status, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, flavors, job, wait_admitted, wait_condition, workload_of
from testbed.stack_cluster import StackCluster

GPU = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
RUN_FOR = "10m"


def gpu_quota(cluster: StackCluster, team: str) -> int:
    cq = cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", team)
    return sum(
        int(r["nominalQuota"])
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu" and f["name"] == "gpu"
    )


@pytest.fixture
def gpu_pool_size(cluster: StackCluster) -> Iterator[int]:
    pool = cluster.config.pool("gpu")
    yield pool.max_count * pool.node.gpus
    for team in ("research", "platform"):
        names = [j["metadata"]["name"] for j in cluster.kubectl.items("jobs", "-n", team)]
        delete_jobs(cluster, team, *names)


def _borrowed_gpus(cluster: StackCluster, team: str, expected: int) -> tuple[bool, Any]:
    reservations = status(cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", team)).get("flavorsReservation") or []
    borrowed = [
        int(r["borrowed"])
        for f in reservations
        if f["name"] == "gpu"
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    ]
    return borrowed == [expected], reservations


def _gpu_job(team: str, name: str, gpus: int, priority: str = "normal") -> dict[str, Any]:
    return job(
        team, name, pods=gpus, requests=GPU, node_selector={POOL_LABEL: "gpu"}, priority=priority, run_for=RUN_FOR
    )


@on_stacks("dev")
def test_borrow_idle_quota_then_lender_reclaims_it(cluster: StackCluster, gpu_pool_size: int) -> None:
    own = gpu_quota(cluster, "platform")
    assert own < gpu_pool_size, "the scenario needs a team whose quota is below the pool"
    cluster.kubectl.apply([_gpu_job("platform", "borrower", gpu_pool_size)])
    borrower = wait_admitted(cluster, "platform", "borrower")
    assert flavors(borrower) == {"gpu"}
    wait_for(
        f"platform's ClusterQueue to report {gpu_pool_size - own} GPU(s) borrowed",
        lambda: _borrowed_gpus(cluster, "platform", gpu_pool_size - own),
        20,
    )

    cluster.kubectl.apply([_gpu_job("research", "lender", 1)])
    wait_condition(cluster, "platform", "borrower", "Evicted")
    evicted = workload_of(cluster, "platform", "borrower")
    assert evicted is not None
    reasons = {c["type"]: c.get("reason") for c in evicted["status"]["conditions"]}
    assert reasons.get("Preempted") in ("InCohortReclamation", "InCohortFairSharing"), evicted["status"]["conditions"]
    assert flavors(wait_admitted(cluster, "research", "lender")) == {"gpu"}


@on_stacks("dev")
def test_high_priority_preempts_low_within_a_queue(cluster: StackCluster, gpu_pool_size: int) -> None:
    cluster.kubectl.apply([_gpu_job("research", "low", gpu_pool_size, priority="low")])
    wait_admitted(cluster, "research", "low")
    cluster.kubectl.apply([_gpu_job("research", "high", 1, priority="high")])
    wait_condition(cluster, "research", "low", "Evicted")
    low = workload_of(cluster, "research", "low")
    assert low is not None
    reasons = {c["type"]: c.get("reason") for c in low["status"]["conditions"]}
    assert reasons.get("Preempted") == "InClusterQueue", low["status"]["conditions"]
    assert flavors(wait_admitted(cluster, "research", "high")) == {"gpu"}


def _cpu_quota(cluster: StackCluster, team: str, flavor: str) -> tuple[int, int]:
    """The team's nominal quota and borrowing limit of CPU on a flavor, in millicores."""
    cq = cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", team)
    (cpu,) = [
        r
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        if f["name"] == flavor
        for r in f["resources"]
        if r["name"] == "cpu"
    ]
    return cpu_millicores(cpu["nominalQuota"]), cpu_millicores(cpu["borrowingLimit"])


def _pending_message(cluster: StackCluster, team: str, name: str) -> tuple[bool, Any]:
    wl = workload_of(cluster, team, name)
    reserved = condition(wl, "QuotaReserved") if wl else None
    message = (reserved or {}).get("message", "")
    return reserved is not None and reserved["status"] == "False" and "insufficient unused quota" in message, reserved


@on_stacks("team-subsets")
def test_a_team_borrows_up_to_its_borrowing_limit_while_the_pool_is_idle(cluster: StackCluster) -> None:
    """web (25 %, `borrowing: 2`) may borrow twice its quota of the general pool: Kueue admits a job
    up to three times its quota, and holds the next pod back although the pool still has room and
    no other team uses it; once the first job ends the pod is admitted."""
    team, pool, pod = "web", "general", 500
    nominal, limit = _cpu_quota(cluster, team, pool)
    capacity = cluster.config.pool(pool).capacity.cpu_millicores
    most = (nominal + limit) // pod
    assert limit == 2 * nominal, (nominal, limit)
    assert (most + 1) * pod <= capacity, "the scenario needs a pool with room for one pod more than the team may hold"
    requests = {"cpu": f"{pod}m", "memory": "64Mi"}
    try:
        cluster.kubectl.apply(
            [job(team, "most", pods=most, requests=requests, node_selector={POOL_LABEL: pool}, run_for=RUN_FOR)]
        )
        assert flavors(wait_admitted(cluster, team, "most")) == {pool}
        cluster.kubectl.apply([job(team, "over", requests=requests, node_selector={POOL_LABEL: pool}, run_for=RUN_FOR)])
        seen = wait_for(
            f"{team}/over to wait for quota beyond the borrowing limit",
            lambda: _pending_message(cluster, team, "over"),
            30,
        )
        print(f"nominal {nominal}m, limit {limit}m, pool {capacity}m, admitted {most} x {pod}m; over: {seen}")
        # data, the pool's only other team, has no job: only the limit keeps the pod out.
        assert cluster.kubectl.items("workloads.kueue.x-k8s.io", "-n", "data") == []
        delete_jobs(cluster, team, "most")
        assert flavors(wait_admitted(cluster, team, "over", timeout=30)) == {pool}
    finally:
        delete_jobs(cluster, team, "most", "over")
