"""Issue 14: no way around the queues. On a governed stack a pod that Kueue did not admit never
runs on a pool node, and a bare pod in a team namespace is queued within the team's quota; on the
same stack with governance off the same pods get through (so these tests can fail)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from components.config.names import POOL_LABEL, SYSTEM_POOL_NAME
from components.kueue.objects import LOCAL_QUEUE_NAME
from components.governance.policies import POOL_GUARD

from testbed.autoscaler import SCALE_UP_SECONDS
from testbed.cluster import api_create, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, job, wait_admitted, workload_of
from testbed.nodes import node_name
from testbed.stack_cluster import StackCluster
from testbed.stacks import UNGOVERNED, load

GOVERNED = ("dev", "team-subsets")
OUTSIDER = "e2e-outsider"  # a namespace anyone might create, without Kueue's label


def _pod(
    name: str, *, tolerate: list[dict[str, str]] | None = None, pool: str | None = None, node: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "main", "image": "busybox:1.37", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        ]
    }
    if tolerate:
        spec["tolerations"] = tolerate
    if pool:
        spec["nodeSelector"] = {POOL_LABEL: pool}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _ways_onto(stack: str) -> list[Any]:
    """(stack, pool, how) for every user pool: with its tolerations and selector, with the
    selector only, and straight onto one of its nodes by nodeName."""
    return [
        pytest.param(stack, pool.name, how, id=f"{stack}-{pool.name}-{how}")
        for pool in load(stack).node_pools
        for how in ("tolerate-and-select", "select", "node-name")
    ]


def _spec_for(cluster: StackCluster, pool_name: str, how: str) -> dict[str, Any]:
    pool = cluster.config.pool(pool_name)
    tolerations = [t.toleration() for t in pool.node_taints] or None
    if how == "tolerate-and-select":
        return _pod(f"sneak-{pool_name}", tolerate=tolerations, pool=pool_name)
    if how == "select":
        return _pod(f"sneak-{pool_name}", pool=pool_name)
    return _pod(f"sneak-{pool_name}", node=node_name(pool_name, 0))


@pytest.fixture
def outsider(cluster: StackCluster) -> Iterator[str]:
    cluster.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OUTSIDER}}])
    yield OUTSIDER
    for namespace in (OUTSIDER, "default"):
        cluster.kubectl.run("delete", "pods", "--all", "-n", namespace, "--wait=true", "--timeout=60s", check=False)


@pytest.mark.parametrize(("stack", "pool", "how"), [c for s in GOVERNED for c in _ways_onto(s)])
@pytest.mark.parametrize("namespace", ["default", OUTSIDER])
def test_pod_outside_kueue_is_refused_from_every_pool(
    cluster: StackCluster, outsider: str, pool: str, how: str, namespace: str
) -> None:
    pod = _spec_for(cluster, pool, how)
    status, message = api_create(cluster.kubectl.kubeconfig, f"/api/v1/namespaces/{namespace}/pods", pod, dry_run=False)
    assert status == 403, (status, message)
    # What was refused, why, what to do instead, and by which policy.
    assert POOL_GUARD in message and f"{namespace}/{pod['metadata']['name']}" in message, message
    assert "reserved for work Kueue admits" in message and "LocalQueue" in message, message
    reason = {"tolerate-and-select": "selects a pool", "select": "selects a pool", "node-name": "names a pool node"}[
        how
    ]
    assert reason in message, message


@on_stacks(*GOVERNED)
def test_gated_pod_cannot_gain_the_way_onto_a_pool_later(cluster: StackCluster, outsider: str) -> None:
    """A pod held by a scheduling gate may still gain tolerations and a selector; not onto a pool."""
    pool = cluster.config.node_pools[0]
    gated = {**_pod("gated"), "metadata": {"name": "gated", "namespace": outsider}}
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    cluster.kubectl.apply([gated])
    patch = {
        "spec": {"tolerations": [t.toleration() for t in pool.node_taints], "nodeSelector": {POOL_LABEL: pool.name}}
    }
    done = cluster.kubectl.run(
        "patch", "pod", "gated", "-n", outsider, "--type=merge", "-p", json.dumps(patch), check=False
    )
    assert done.returncode != 0 and POOL_GUARD in done.stderr, done.stderr


@on_stacks(*GOVERNED)
def test_plain_pod_outside_team_namespaces_runs_only_on_the_system_pool(cluster: StackCluster, outsider: str) -> None:
    cluster.kubectl.apply([{**_pod("plain"), "metadata": {"name": "plain", "namespace": outsider}}])
    assert _wait_bound(cluster, outsider, "plain") == SYSTEM_POOL_NAME


def _wait_bound(cluster: StackCluster, namespace: str, name: str) -> str:
    """The pool of the node the pod is bound to; a user pool may first have to scale up."""

    def probe() -> tuple[bool, Any]:
        pod = cluster.kubectl.get("pod", name, "-n", namespace)
        node = pod["spec"].get("nodeName")
        return bool(node), node or pod.get("status")

    node = wait_for(f"pod {namespace}/{name} to be bound to a node", probe, SCALE_UP_SECONDS)
    return str(cluster.kubectl.get("node", node)["metadata"]["labels"][POOL_LABEL])


@on_stacks(*GOVERNED)
def test_bare_pod_in_a_team_namespace_is_queued_within_the_team_quota(cluster: StackCluster) -> None:
    team = cluster.config.teams[0]
    cluster.kubectl.apply([{**_pod("bare"), "metadata": {"name": "bare", "namespace": team.name}}])
    try:
        wait_admitted(cluster, team.name, "bare", kind="Pod")
        pool = _wait_bound(cluster, team.name, "bare")
        assert pool in team.pools, f"bare pod ran on pool {pool}, outside {team.name}'s pools {team.pools}"
    finally:
        cluster.kubectl.run("delete", "pod", "bare", "-n", team.name, "--wait=true", "--timeout=60s", check=False)


@on_stacks(*GOVERNED)
def test_job_without_queue_label_in_a_team_namespace_still_goes_through_kueue(cluster: StackCluster) -> None:
    """The guard lets a team's Job pods onto the pools; that is safe only if Kueue queues every Job
    there, even one that names no queue and carries the pool's tolerations itself."""
    team = cluster.config.teams[0]
    pool = cluster.config.pool(team.pools[0])
    sneaky = job(
        team.name,
        "no-label",
        queue=None,
        node_selector={POOL_LABEL: pool.name},
        requests={"cpu": "100m", "memory": "64Mi"} | ({"nvidia.com/gpu": "1"} if pool.is_gpu else {}),
    )
    sneaky["spec"]["template"]["spec"]["tolerations"] = [t.toleration() for t in pool.node_taints]
    cluster.kubectl.apply([sneaky])
    try:
        workload = wait_admitted(cluster, team.name, "no-label")
        assert workload["spec"]["queueName"] == LOCAL_QUEUE_NAME
    finally:
        delete_jobs(cluster, team.name, "no-label")


# --- the same, governance off: the bypass is real ----------------------------------------------


@on_stacks(UNGOVERNED)
@pytest.mark.parametrize("pool", [p.name for p in load(UNGOVERNED).node_pools if p.is_gpu])
def test_without_governance_a_pod_outside_kueue_takes_a_gpu_node(
    cluster: StackCluster, outsider: str, pool: str
) -> None:
    pod = _spec_for(cluster, pool, "tolerate-and-select")
    status, message = api_create(cluster.kubectl.kubeconfig, "/api/v1/namespaces/default/pods", pod, dry_run=False)
    assert status == 201, message
    assert _wait_bound(cluster, "default", pod["metadata"]["name"]) == pool


@on_stacks(UNGOVERNED)
def test_without_governance_a_bare_pod_in_a_team_namespace_bypasses_the_queue(cluster: StackCluster) -> None:
    team = cluster.config.teams[0]
    cluster.kubectl.apply([{**_pod("bare"), "metadata": {"name": "bare", "namespace": team.name}}])
    try:
        _wait_bound(cluster, team.name, "bare")  # scheduled at once, wherever it fits: not queued
        assert workload_of(cluster, team.name, "bare", kind="Pod") is None
    finally:
        cluster.kubectl.run("delete", "pod", "bare", "-n", team.name, "--wait=true", "--timeout=60s", check=False)
