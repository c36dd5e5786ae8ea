"""The preflight's clamp on the real Kueue controller and the real cluster autoscaler.

Stack `quota-clamp` has a T4 pool of maxCount 3 in a subscription whose recorded T4 family quota
holds 2 of its nodes; the tier built it through the program's preflight (stacks.load), so the
queues count 2 GPUs while the pool (and its autoscaler node group) keeps maxCount 3, as on AKS.
"""

from __future__ import annotations

from typing import Any


from components.k8s.resources import RESOURCE_GPU
from components.config.names import POOL_LABEL

from testbed.autoscaler import SCALE_UP_SECONDS
from testbed.cluster import condition, is_true, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import job, pools_of, wait_admitted, wait_pods_placed, workload_of
from testbed.stack_cluster import StackCluster
from testbed.stacks import PREFLIGHT_CLAMPED

GPU_POD = {"cpu": "1", "memory": "1Gi", RESOURCE_GPU: "1"}


def _gpu_quota(cluster: StackCluster) -> int:
    """The GPUs the live ClusterQueues hold for the pool's flavor, all teams together."""
    total = 0
    for cq in cluster.kubectl.items("clusterqueues.kueue.x-k8s.io"):
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                if flavor["name"] == "gpu":
                    total += sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] == RESOURCE_GPU)
    return total


@on_stacks(PREFLIGHT_CLAMPED)
def test_preflight_clamped_queues_hold_what_azure_gives_not_max_count(
    cluster: StackCluster, cleanup: list[tuple[str, str]]
) -> None:
    pool = cluster.config.pool("gpu")
    assert (pool.max_count, pool.capacity_nodes) == (3, 2)
    assert _gpu_quota(cluster) == 2 * pool.node.gpus

    # A gang of maxCount GPU pods: the AKS pool could grow to it, the subscription could not.
    # Kueue gives it no quota, so it holds nothing and asks the autoscaler for nothing.
    cluster.kubectl.apply([job("ml", "three", pods=3, run_for="1h", requests=GPU_POD)])
    cleanup.append(("ml", "three"))

    def refused() -> tuple[bool, Any]:
        wl = workload_of(cluster, "ml", "three")
        quota = condition(wl or {}, "QuotaReserved") or {}
        message = str(quota.get("message", "")).lower()
        return quota.get("status") == "False" and ("insufficient" in message or "couldn't assign" in message), wl

    wait_for("Kueue to refuse the 3-GPU gang quota", refused, 60)

    # Two GPU pods fit the clamped quota: provisioned all at once and admitted, on the pool.
    cluster.kubectl.apply([job("ops", "two", pods=2, run_for="1h", requests=GPU_POD)])
    cleanup.append(("ops", "two"))
    wait_admitted(cluster, "ops", "two", timeout=SCALE_UP_SECONDS)
    pods = wait_pods_placed(cluster, "ops", "two", 2, timeout=60)
    assert pools_of(cluster, pods) == {"gpu"}
    still = workload_of(cluster, "ml", "three")
    assert still is not None and not is_true(still, "QuotaReserved"), still
    nodes = cluster.kubectl.items("nodes", "-l", f"{POOL_LABEL}=gpu")
    assert len(nodes) <= 2, [n["metadata"]["name"] for n in nodes]
