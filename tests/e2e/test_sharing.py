"""Scenario 4: borrowing idle quota in the cohort, reclaim by the lender, priority within a queue.

Shown on the GPU pool of the dev stack: 3 nodes × 1 T4. research (60 %) and platform (40 %)
each hold 1 GPU of nominal quota, the cohort the third. Pods keep running (kwok's pod-complete
Stage waits for the RUN_FOR annotation) until the test deletes their Job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.config import POOL_LABEL

from .cluster import status, wait_for
from .conftest import on_stacks
from .jobs import delete_jobs, flavors, job, wait_admitted, wait_condition, workload_of
from .stack_cluster import StackCluster

GPU = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
RUN_FOR = "10m"


def gpu_quota(cluster: StackCluster, team: str) -> int:
    cq = cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", team)
    return sum(int(r["nominalQuota"]) for g in cq["spec"]["resourceGroups"] for f in g["flavors"]
               for r in f["resources"] if r["name"] == "nvidia.com/gpu" and f["name"] == "gpu")


@pytest.fixture
def gpu_pool_size(cluster: StackCluster) -> Iterator[int]:
    pool = cluster.config.pool("gpu")
    yield pool.max_count * pool.node.gpus
    for team in ("research", "platform"):
        names = [j["metadata"]["name"] for j in cluster.kubectl.items("jobs", "-n", team)]
        delete_jobs(cluster, team, *names)


def _borrowed_gpus(cluster: StackCluster, team: str, expected: int) -> tuple[bool, Any]:
    reservations = status(cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", team)).get("flavorsReservation") or []
    borrowed = [int(r["borrowed"]) for f in reservations if f["name"] == "gpu"
                for r in f["resources"] if r["name"] == "nvidia.com/gpu"]
    return borrowed == [expected], reservations


def _gpu_job(team: str, name: str, gpus: int, priority: str = "normal") -> dict[str, Any]:
    return job(team, name, pods=gpus, requests=GPU, node_selector={POOL_LABEL: "gpu"}, priority=priority, run_for=RUN_FOR)


@on_stacks("dev")
def test_borrow_idle_quota_then_lender_reclaims_it(cluster: StackCluster, gpu_pool_size: int) -> None:
    own = gpu_quota(cluster, "platform")
    assert own < gpu_pool_size, "the scenario needs a team whose quota is below the pool"
    cluster.kubectl.apply([_gpu_job("platform", "borrower", gpu_pool_size)])
    borrower = wait_admitted(cluster, "platform", "borrower")
    assert flavors(borrower) == {"gpu"}
    wait_for(f"platform's ClusterQueue to report {gpu_pool_size - own} GPU(s) borrowed",
             lambda: _borrowed_gpus(cluster, "platform", gpu_pool_size - own), 20)

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
