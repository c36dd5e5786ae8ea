"""Scenarios 2 and 3: every job is admitted on the flavor the README promises, and its pods land
on that pool's nodes with the tolerations Kueue adds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.config import POOL_LABEL, NodePool, StackConfig, Team
from components.kueue_objects import flavor_order
from tests.harness import ROOT

from .conftest import on_stacks
from .jobs import delete_jobs, flavors, job, pools_of, wait_admitted, wait_pods_placed
from .stack_cluster import StackCluster
from .stacks import STACKS, load

# The issue that owns the defect these tests show (xfail strict until it is fixed).
MIXED_TAS_QUEUE = ("issue 10: in a ClusterQueue that mixes topology-aware and ordinary pools, Kueue places a "
                   "job without a topology request only on flavors without topologyName")


def _team_pools(config: StackConfig, team: Team) -> list[NodePool]:
    return [p for p in flavor_order(config.node_pools) if p.name in team.pools]


def _cases() -> list[Any]:
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            for pool in _team_pools(config, team):
                marks = [pytest.mark.xfail(reason=MIXED_TAS_QUEUE, strict=True)] if pool.topology else []
                cases.append(pytest.param(stack, team.name, pool.name, marks=marks, id=f"{stack}-{team.name}-{pool.name}"))
    return cases


def _first_cpu_cases() -> list[Any]:
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            cpu = [p for p in _team_pools(config, team) if not p.is_gpu]
            if cpu:
                marks = [pytest.mark.xfail(reason=MIXED_TAS_QUEUE, strict=True)] if cpu[0].topology else []
                cases.append(pytest.param(stack, team.name, cpu[0].name, marks=marks, id=f"{stack}-{team.name}"))
    return cases


def _first_gpu_cases() -> list[Any]:
    cases = []
    for stack in STACKS:
        config = load(stack)
        for team in config.teams:
            gpu = [p for p in _team_pools(config, team) if p.is_gpu]
            if gpu:
                cases.append(pytest.param(stack, team.name, gpu[0].name, id=f"{stack}-{team.name}"))
    return cases


def assert_on_pool(cluster: StackCluster, namespace: str, name: str, pool_name: str, pods: int = 1,
                   timeout: float = 30) -> None:
    """The Job's Workload is admitted on `pool_name`'s flavor and its pods run on that pool's nodes,
    tolerating every taint those nodes carry."""
    workload = wait_admitted(cluster, namespace, name, timeout)
    assert flavors(workload) == {pool_name}, workload["status"]["admission"]
    placed = wait_pods_placed(cluster, namespace, name, pods)
    assert pools_of(cluster, placed) == {pool_name}
    pool = cluster.config.pool(pool_name)
    for pod in placed:
        assert pod["spec"]["nodeSelector"].get(POOL_LABEL) == pool_name
        missing = [t.toleration() for t in pool.node_taints if t.toleration() not in pod["spec"].get("tolerations", [])]
        assert not missing, f"pod {pod['metadata']['name']} lacks tolerations {missing}"


@pytest.mark.parametrize(("stack", "team", "pool"), _cases())
def test_job_pinned_to_a_pool_is_admitted_on_its_flavor(cluster: StackCluster, team: str, pool: str) -> None:
    """For every team and every pool it may use: a job that selects the pool by its agentpool label."""
    requests = {"cpu": "100m", "memory": "64Mi"} | ({"nvidia.com/gpu": "1"} if cluster.config.pool(pool).is_gpu else {})
    name = f"pinned-{pool}"
    cluster.kubectl.apply([job(team, name, node_selector={POOL_LABEL: pool}, requests=requests)])
    try:
        assert_on_pool(cluster, team, name, pool, timeout=20)
    finally:
        delete_jobs(cluster, team, name)


@pytest.mark.parametrize(("stack", "team", "pool"), _first_cpu_cases())
def test_cpu_job_lands_on_a_cpu_pool(cluster: StackCluster, team: str, pool: str) -> None:
    cluster.kubectl.apply([job(team, "cpu-only")])
    try:
        assert_on_pool(cluster, team, "cpu-only", pool, timeout=20)
    finally:
        delete_jobs(cluster, team, "cpu-only")


@pytest.mark.parametrize(("stack", "team", "pool"), _first_gpu_cases())
def test_gpu_job_lands_on_a_gpu_pool(cluster: StackCluster, team: str, pool: str) -> None:
    """The first on-demand GPU pool in flavor order (spot only when the team has no other)."""
    cluster.kubectl.apply([job(team, "one-gpu", requests={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"})])
    try:
        assert_on_pool(cluster, team, "one-gpu", pool)
    finally:
        delete_jobs(cluster, team, "one-gpu")


# The batch/v1 samples in examples/ and the pool the README's "For batch users" promises each.
SAMPLES = [
    pytest.param("cpu-job.yaml", "cpu", marks=pytest.mark.xfail(reason=MIXED_TAS_QUEUE, strict=True)),
    pytest.param("gpu-job.yaml", "gpu"),
    pytest.param("tas-job.yaml", "cpu"),
]


@on_stacks("dev")
@pytest.mark.parametrize(("sample", "pool"), SAMPLES)
def test_sample_lands_where_the_readme_says(cluster: StackCluster, sample: str, pool: str) -> None:
    obj = yaml.safe_load((ROOT / "examples" / sample).read_text())
    meta = obj["metadata"]
    cluster.kubectl.apply([obj])
    try:
        assert_on_pool(cluster, meta["namespace"], meta["name"], pool, pods=obj["spec"].get("parallelism", 1), timeout=20)
    finally:
        delete_jobs(cluster, meta["namespace"], meta["name"])
