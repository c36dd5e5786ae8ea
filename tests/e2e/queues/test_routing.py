"""Scenarios 2 and 3: every job is admitted on the flavor docs/batch-users.md promises, and its pods land
on that pool's nodes with the tolerations Kueue adds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.config.names import POOL_LABEL
from components.config.pools import NodePool
from components.config.stack import StackConfig
from components.config.teams import Team
from components.kueue.objects import LOCAL_QUEUE_NAME, TOPOLOGY_LOCAL_QUEUE_NAME, local_queue_targets, team_queues
from testbed.control_planes import on_stacks
from testbed.harness import ROOT
from testbed.jobs import delete_jobs, flavors, job, pools_of, wait_admitted, wait_pods_placed
from testbed.stack_cluster import StackCluster
from testbed.stacks import STACKS, load


def _queue_for(config: StackConfig, team: Team, pool: NodePool) -> str:
    """The LocalQueue whose ClusterQueue holds the pool: `topology` for topology-aware pools."""
    return next(name for name, q in local_queue_targets(config, team).items() if pool.name in q.pools)


def _cases() -> list[Any]:
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            for pool in (config.pool(name) for q in team_queues(config, team) for name in q.pools):
                cases.append(
                    pytest.param(
                        stack,
                        team.name,
                        pool.name,
                        _queue_for(config, team, pool),
                        id=f"{stack}-{team.name}-{pool.name}",
                    )
                )
    return cases


def _first_in_default_queue(gpu: bool) -> list[Any]:
    """Per team: the first CPU (or GPU) pool of the ClusterQueue behind LocalQueue `default`,
    which is where a job that names no special queue must land."""
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            queue = local_queue_targets(config, team)[LOCAL_QUEUE_NAME]
            kind = [name for name in queue.pools if config.pool(name).is_gpu == gpu]
            if kind:
                cases.append(pytest.param(stack, team.name, kind[0], id=f"{stack}-{team.name}"))
    return cases


def _topology_cases() -> list[Any]:
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            queue = local_queue_targets(config, team).get(TOPOLOGY_LOCAL_QUEUE_NAME)
            if queue is not None:
                cases.append(pytest.param(stack, team.name, queue.pools[0], id=f"{stack}-{team.name}"))
    return cases


def assert_on_pool(cluster: StackCluster, namespace: str, name: str, pool_name: str, pods: int = 1) -> dict[str, Any]:
    """The Job's Workload is admitted on `pool_name`'s flavor and its pods run on that pool's nodes,
    tolerating every taint those nodes carry; a topology-aware pool's admission carries Kueue's
    topology assignment. Pools start at minCount, so admission (ProvisioningRequest) or the pods
    (pod by pod) may wait for the autoscaler. Returns the Workload."""
    workload = wait_admitted(cluster, namespace, name)
    assert flavors(workload) == {pool_name}, workload["status"]["admission"]
    placed = wait_pods_placed(cluster, namespace, name, pods)
    assert pools_of(cluster, placed) == {pool_name}
    pool = cluster.config.pool(pool_name)
    for pod in placed:
        assert pod["spec"]["nodeSelector"].get(POOL_LABEL) == pool_name
        missing = [t.toleration() for t in pool.node_taints if t.toleration() not in pod["spec"].get("tolerations", [])]
        assert not missing, f"pod {pod['metadata']['name']} lacks tolerations {missing}"
    assignments = workload["status"]["admission"]["podSetAssignments"]
    assert all(("topologyAssignment" in a) == pool.topology for a in assignments), assignments
    return workload


@pytest.mark.parametrize(("stack", "team", "pool", "queue"), _cases())
def test_job_pinned_to_a_pool_is_admitted_on_its_flavor(
    cluster: StackCluster, team: str, pool: str, queue: str
) -> None:
    """For every team and every pool it may use: a job that selects the pool by its agentpool label,
    submitted to the LocalQueue that covers the pool."""
    requests = {"cpu": "100m", "memory": "64Mi"} | ({"nvidia.com/gpu": "1"} if cluster.config.pool(pool).is_gpu else {})
    name = f"pinned-{pool}"
    cluster.kubectl.apply([job(team, name, queue=queue, node_selector={POOL_LABEL: pool}, requests=requests)])
    try:
        assert_on_pool(cluster, team, name, pool)
    finally:
        delete_jobs(cluster, team, name)


@pytest.mark.parametrize(("stack", "team", "pool"), _first_in_default_queue(gpu=False))
def test_cpu_job_lands_on_a_cpu_pool(cluster: StackCluster, team: str, pool: str) -> None:
    cluster.kubectl.apply([job(team, "cpu-only")])
    try:
        assert_on_pool(cluster, team, "cpu-only", pool)
    finally:
        delete_jobs(cluster, team, "cpu-only")


@pytest.mark.parametrize(("stack", "team", "pool"), _first_in_default_queue(gpu=True))
def test_gpu_job_lands_on_a_gpu_pool(cluster: StackCluster, team: str, pool: str) -> None:
    """The first on-demand GPU pool in flavor order (spot only when the queue has no other)."""
    cluster.kubectl.apply([job(team, "one-gpu", requests={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"})])
    try:
        assert_on_pool(cluster, team, "one-gpu", pool)
    finally:
        delete_jobs(cluster, team, "one-gpu")


@pytest.mark.parametrize(("stack", "team", "pool"), _topology_cases())
def test_job_without_topology_request_in_topology_queue_gets_implicit_tas(
    cluster: StackCluster, team: str, pool: str
) -> None:
    """Every flavor of `<team>-topology` is topology-aware, so Kueue places even a job with no
    topology annotation by topology there (implicit TAS)."""
    cluster.kubectl.apply([job(team, "plain-packed", queue=TOPOLOGY_LOCAL_QUEUE_NAME)])
    try:
        assert_on_pool(cluster, team, "plain-packed", pool)
    finally:
        delete_jobs(cluster, team, "plain-packed")


# The batch/v1 samples in examples/ and the pool docs/batch-users.md promises each.
SAMPLES = [("cpu-job.yaml", "cpu"), ("gpu-job.yaml", "gpu"), ("tas-job.yaml", "tas")]


@on_stacks("dev")
@pytest.mark.parametrize(("sample", "pool"), SAMPLES)
def test_sample_lands_where_the_readme_says(cluster: StackCluster, sample: str, pool: str) -> None:
    obj = yaml.safe_load((ROOT / "examples" / sample).read_text())
    meta = obj["metadata"]
    meta["namespace"] = cluster.config.teams[0].name  # the samples name none: a member gives theirs
    cluster.kubectl.apply([obj])
    try:
        assert_on_pool(cluster, meta["namespace"], meta["name"], pool, pods=obj["spec"].get("parallelism", 1))
    finally:
        delete_jobs(cluster, meta["namespace"], meta["name"])
