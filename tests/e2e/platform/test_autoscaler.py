"""Pools that scale as AKS's do, shown on the real cluster autoscaler (kwok provider) and the real
Kueue: scale from zero and back, GPU gangs that start whole through ProvisioningRequest, gangs too
big to start that hold nothing, and topology-aware jobs on an autoscaled topology pool.

Every scenario starts from the pool as the stack left it: minCount nodes, or what the previous
scenario left, which scales down after autoscaler.SCALE_DOWN_UNNEEDED except in pools with
ProvisioningRequest, whose nodes the tier keeps (autoscaler.HostnameLabeler says why).
"""

from __future__ import annotations

from typing import Any

import yaml

from components.config.names import POOL_LABEL
from components.kueue.objects import ATOMIC_SCALE_UP, ATOMIC_SCALE_UP_GPU, provisioning_check
from testbed.autoscaler import SCALE_DOWN_SECONDS, SCALE_UP_SECONDS, wait_pool_size
from testbed.cluster import conditions, is_true, status, wait_for
from testbed.control_planes import on_stacks
from testbed.harness import ROOT
from testbed.jobs import delete_jobs, job, pools_of, wait_admitted, wait_pods_placed, workload_of
from testbed.nodes import HOSTNAME_LABEL
from testbed.stack_cluster import StackCluster


PROVISIONING_REQUESTS = "provisioningrequests.autoscaling.x-k8s.io"


def _pool_nodes(cluster: StackCluster, pool: str) -> list[dict[str, Any]]:
    return cluster.kubectl.items("nodes", "-l", f"{POOL_LABEL}={pool}")


def _check_state(wl: dict[str, Any] | None, check: str) -> dict[str, Any]:
    for state in status(wl or {}).get("admissionChecks") or []:
        if state.get("name") == check:
            return dict(state)
    return {}


def _requests(cluster: StackCluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.kubectl.items(PROVISIONING_REQUESTS, "-n", namespace)


@on_stacks("dev")
def test_autoscaler_scales_an_empty_cpu_pool_for_an_admitted_job_and_back(
    cluster: StackCluster, cleanup: list[tuple[str, str]]
) -> None:
    pool = cluster.config.pool("cpu")
    assert not pool.provisioning_request  # Kueue admits at once; the autoscaler follows the pods
    wait_pool_size(
        cluster.kubectl, "cpu", lambda n: n == pool.min_count, f"its minCount {pool.min_count}", SCALE_DOWN_SECONDS
    )
    # Two pods of 5 CPUs cannot share a D8s_v5 node (7.8 CPUs allocatable): two nodes are needed.
    team = cluster.config.teams[0].name
    cluster.kubectl.apply([job(team, "scale-cpu", pods=2, requests={"cpu": "5", "memory": "1Gi"}, run_for="1h")])
    cleanup.append((team, "scale-cpu"))
    wl = wait_admitted(cluster, team, "scale-cpu")
    assert {f for ps in wl["status"]["admission"]["podSetAssignments"] for f in ps["flavors"].values()} == {"cpu"}
    pods = wait_pods_placed(cluster, team, "scale-cpu", 2, timeout=SCALE_UP_SECONDS)
    assert pools_of(cluster, pods) == {"cpu"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 2
    assert len(_pool_nodes(cluster, "cpu")) == 2
    delete_jobs(cluster, team, "scale-cpu")
    cleanup.clear()
    wait_pool_size(
        cluster.kubectl,
        "cpu",
        lambda n: n == pool.min_count,
        f"scaled back to minCount {pool.min_count} after the job",
        SCALE_DOWN_SECONDS,
    )


@on_stacks("dev", "spot-gpu")
def test_provisioning_gpu_gang_starts_whole(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    # The stack's last GPU pool in flavor order: dev's gpu, spot-gpu's a100spot (spot, tainted by AKS).
    pool = [p for p in cluster.config.node_pools if p.is_gpu and not p.topology][-1]
    assert provisioning_check(pool) == ATOMIC_SCALE_UP_GPU
    team = cluster.config.teams[0].name
    size = 2
    # Every GPU of the pool's nodes: a gang of `size` pods needs `size` new nodes.
    gpus = str(pool.node.gpus)
    selector = {POOL_LABEL: pool.name}
    cluster.kubectl.apply(
        [
            job(
                team,
                "gang",
                pods=size,
                node_selector=selector,
                run_for="1h",
                requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus},
            )
        ]
    )
    cleanup.append((team, "gang"))

    # Kueue reserves quota, asks the autoscaler for all the nodes, and admits only once they are there.
    def provisioning() -> tuple[bool, Any]:
        # Pods first: a Workload read after them is at least as new, so placed pods with a
        # Workload not admitted would be a real partial start.
        pods_on_nodes = [
            p
            for p in cluster.kubectl.items("pods", "-n", team, "-l", "batch.kubernetes.io/job-name=gang")
            if p["spec"].get("nodeName")
        ]
        wl = workload_of(cluster, team, "gang")
        requests = _requests(cluster, team)
        nodes = len(_pool_nodes(cluster, pool.name))
        seen = {
            "check": _check_state(wl, ATOMIC_SCALE_UP_GPU),
            "requests": [r["metadata"]["name"] for r in requests],
            "nodes": nodes,
            "admitted": bool(wl and is_true(wl, "Admitted")),
        }
        # No pod may start before the whole gang is provisioned.
        assert not (pods_on_nodes and not seen["admitted"]), f"pods placed before admission: {seen}"
        return seen["admitted"], seen

    seen = wait_for(f"the gang on {pool.name} to be provisioned and admitted", provisioning, SCALE_UP_SECONDS)
    wl = workload_of(cluster, team, "gang")
    assert _check_state(wl, ATOMIC_SCALE_UP_GPU).get("state") == "Ready", seen
    assert seen["nodes"] >= size, seen
    pods = wait_pods_placed(cluster, team, "gang", size, timeout=30)
    assert pools_of(cluster, pods) == {pool.name}
    assert len({p["spec"]["nodeName"] for p in pods}) == size
    # Kueue told the pods which request they consume, so the autoscaler does not add nodes again.
    annotations = pods[0]["metadata"].get("annotations") or {}
    assert "autoscaling.x-k8s.io/consume-provisioning-request" in annotations, annotations


@on_stacks("dev")
def test_provisioning_gang_larger_than_the_pool_holds_no_quota_and_adds_no_node(
    cluster: StackCluster, cleanup: list[tuple[str, str]]
) -> None:
    pool = cluster.config.pool("gpu")
    team = cluster.config.teams[0].name
    before = len(_pool_nodes(cluster, "gpu"))
    too_big = pool.max_count + 1  # one GPU per node: more than the pool can ever grow to
    cluster.kubectl.apply(
        [
            job(
                team,
                "too-big",
                pods=too_big,
                run_for="1h",
                requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
            )
        ]
    )
    cleanup.append((team, "too-big"))

    def waiting() -> tuple[bool, Any]:
        wl = workload_of(cluster, team, "too-big")
        pending = [c for c in conditions(wl or {}) if c.get("type") == "QuotaReserved" and c.get("status") == "False"]
        return bool(pending and pending[0].get("message")), {"conditions": conditions(wl or {})}

    seen = wait_for("the oversized gang to wait with a reason", waiting, 30)
    message = next(c["message"] for c in seen["conditions"] if c["type"] == "QuotaReserved")
    assert "insufficient" in message.lower() or "couldn't assign" in message.lower(), message
    # Watch a dozen seconds (four autoscaler loops): no node, no request, no pod, no quota held.
    deadline_seen: list[dict[str, Any]] = []

    def still_nothing() -> tuple[bool, Any]:
        wl = workload_of(cluster, team, "too-big")
        state = {
            "nodes": len(_pool_nodes(cluster, "gpu")),
            "requests": len(_requests(cluster, team)),
            "pods": len(cluster.kubectl.items("pods", "-n", team, "-l", "batch.kubernetes.io/job-name=too-big")),
            "reserved": bool(wl and is_true(wl, "QuotaReserved")),
        }
        deadline_seen.append(state)
        return len(deadline_seen) >= 12, state

    wait_for("a quiet period", still_nothing, 60, interval=1.0)
    assert all(
        s["nodes"] <= before and s["requests"] == 0 and s["pods"] == 0 and not s["reserved"] for s in deadline_seen
    ), deadline_seen


@on_stacks("dev", "spot-gpu")
def test_provisioning_tas_job_on_an_autoscaled_topology_pool(
    cluster: StackCluster, cleanup: list[tuple[str, str]]
) -> None:
    pool = next(p for p in cluster.config.node_pools if p.topology and p.autoscaled)
    assert provisioning_check(pool) == ATOMIC_SCALE_UP
    sample = yaml.safe_load((ROOT / "examples" / "tas-job.yaml").read_text())
    team = next(t.name for t in cluster.config.teams if pool.name in t.pools)
    sample["metadata"]["namespace"] = team
    sample["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[
        "pod-complete.stage.kwok.x-k8s.io/delay"
    ] = "1h"
    cluster.kubectl.apply([sample])
    name = sample["metadata"]["name"]
    cleanup.append((team, name))
    wl = wait_admitted(cluster, team, name, timeout=SCALE_UP_SECONDS)
    assert _check_state(wl, ATOMIC_SCALE_UP).get("state") == "Ready"
    assignment = wl["status"]["admission"]["podSetAssignments"][0]
    assert set(assignment["flavors"].values()) == {pool.name}
    domains = assignment["topologyAssignment"]
    pods = wait_pods_placed(cluster, team, name, sample["spec"]["parallelism"], timeout=30)
    assert pools_of(cluster, pods) == {pool.name}
    # Packed as asked (preferred: one hostname) on the nodes the autoscaler added.
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(nodes) == 1, (nodes, domains)
    node = cluster.kubectl.get("node", nodes.pop())
    assert node["metadata"]["labels"][HOSTNAME_LABEL] == node["metadata"]["name"]
