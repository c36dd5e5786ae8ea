"""Scenario 1: what the program builds is accepted by the real CRDs and webhooks and is Active."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.device_plugin_values import DEVICE_PLUGIN_NAMESPACE
from components.quantity import QuantityError, parse_quantity

from .cluster import is_true
from .conftest import CLUSTER_UP_BUDGET_SECONDS, on_stacks
from .destroy import object_ref
from .stack_cluster import StackCluster
from .stacks import STACKS


def _missing(built: Any, stored: Any, path: str = "") -> list[str]:
    """Paths where `stored` (as the API server keeps it, defaults added) lacks what was built."""
    if isinstance(built, Mapping):
        if not isinstance(stored, Mapping):
            return [f"{path}: stored {stored!r}"]
        return [m for k, v in built.items() for m in _missing(v, stored.get(k), f"{path}.{k}")]
    if isinstance(built, list):
        if not isinstance(stored, list) or len(stored) != len(built):
            return [f"{path}: built {built!r}, stored {stored!r}"]
        return [m for i, (b, s) in enumerate(zip(built, stored)) for m in _missing(b, s, f"{path}[{i}]")]
    return [] if _same(built, stored) else [f"{path}: built {built!r}, stored {stored!r}"]


def _same(built: Any, stored: Any) -> bool:
    """Equal as written, or as Kubernetes quantities (the API server writes 0.6 as 600m)."""
    if str(built) == str(stored):
        return True
    try:
        return parse_quantity(built) == parse_quantity(stored)
    except QuantityError:
        return False


@on_stacks(*STACKS)
def test_every_object_is_stored_as_built(cluster: StackCluster) -> None:
    problems: list[str] = []
    for obj in cluster.objects:
        stored = cluster.kubectl.get(*object_ref(obj))
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        problems += [f"{obj['kind']}/{obj['metadata']['name']}{m}" for m in _missing(body, stored)]
    assert not problems, "objects differ from what the builders made:\n" + "\n".join(problems)


@on_stacks(*STACKS)
def test_every_queue_is_active(cluster: StackCluster) -> None:
    queues = (cluster.kubectl.items("clusterqueues.kueue.x-k8s.io")
              + cluster.kubectl.items("localqueues.kueue.x-k8s.io", "-A"))
    expected = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in cluster.objects
                if o["kind"] in ("ClusterQueue", "LocalQueue")}
    seen = {(q["kind"], q["metadata"]["name"], q["metadata"].get("namespace")) for q in queues}
    assert seen == expected
    inactive = {q["metadata"]["name"]: q["status"].get("conditions") for q in queues if not is_true(q, "Active")}
    assert not inactive, inactive


@on_stacks(*STACKS)
def test_device_plugin_runs_on_exactly_the_gpu_nodes(cluster: StackCluster) -> None:
    gpu_nodes = {n["metadata"]["name"] for n in cluster.nodes
                 if "nvidia.com/gpu" in n["status"]["allocatable"]}
    if not cluster.config.has_gpu:
        assert not gpu_nodes
        return
    pods = cluster.kubectl.items("pods", "-n", DEVICE_PLUGIN_NAMESPACE)
    placed = {p["spec"].get("nodeName") for p in pods}
    assert placed == gpu_nodes, {"device plugin pods on": sorted(map(str, placed)), "GPU nodes": sorted(gpu_nodes)}
    assert all(p["status"].get("phase") == "Running" for p in pods)


@on_stacks(*STACKS)
def test_cluster_comes_up_within_budget(cluster: StackCluster) -> None:
    assert cluster.up_seconds <= CLUSTER_UP_BUDGET_SECONDS, (
        f"cluster up to all queues Active took {cluster.up_seconds:.1f} s (budget {CLUSTER_UP_BUDGET_SECONDS:g} s): "
        f"{cluster.timings}")
