"""Scenario 1: what the program builds is accepted by the real CRDs and webhooks and is Active."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.config.names import KUEUE_NAMESPACE
from components.config.parse import parse_config, raw_from_stack_file
from components.facts.device_plugin import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_VERSION
from components.kueue.objects import build_objects
from components.kueue.values import kueue_helm_values
from components.k8s.quantity import QuantityError, parse_quantity

from testbed.cluster import is_true
from testbed.control_planes import on_stacks, up_budget
from testbed.destroy import object_ref
from testbed.kueue_controller import DEPLOYMENT
from testbed.stack_cluster import StackCluster
from testbed.stacks import STACKS
from testbed import stacks

# The images the published charts name (../shared/*/chart/*.tgz, SOURCE.md).
UPSTREAM_KUEUE_IMAGE = "registry.k8s.io/kueue/kueue"
UPSTREAM_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"


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
    queues = cluster.kubectl.items("clusterqueues.kueue.x-k8s.io") + cluster.kubectl.items(
        "localqueues.kueue.x-k8s.io", "-A"
    )
    expected = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in cluster.objects
        if o["kind"] in ("ClusterQueue", "LocalQueue")
    }
    seen = {(q["kind"], q["metadata"]["name"], q["metadata"].get("namespace")) for q in queues}
    assert seen == expected
    inactive = {q["metadata"]["name"]: q["status"].get("conditions") for q in queues if not is_true(q, "Active")}
    assert not inactive, inactive


@on_stacks(*STACKS)
def test_device_plugin_runs_on_exactly_the_gpu_nodes(cluster: StackCluster) -> None:
    gpu_nodes = {n["metadata"]["name"] for n in cluster.nodes if "nvidia.com/gpu" in n["status"]["allocatable"]}
    if not cluster.config.has_gpu:
        assert not gpu_nodes
        return
    pods = cluster.kubectl.items("pods", "-n", DEVICE_PLUGIN_NAMESPACE)
    placed = {p["spec"].get("nodeName") for p in pods}
    assert placed == gpu_nodes, {"device plugin pods on": sorted(map(str, placed)), "GPU nodes": sorted(gpu_nodes)}
    assert all(p["status"].get("phase") == "Running" for p in pods)


@on_stacks(*STACKS)
def test_cluster_comes_up_within_budget(cluster: StackCluster) -> None:
    assert cluster.up_seconds <= up_budget(cluster.stack), (
        f"cluster up to all queues Active took {cluster.up_seconds:.1f} s (budget {up_budget(cluster.stack):g} s): "
        f"{cluster.timings}"
    )


@on_stacks(*STACKS)
def test_images_are_pinned_and_come_from_the_configured_repository(cluster: StackCluster) -> None:
    """The chart came from a local .tgz through the program's chart-source code path; the images
    keep the pinned tags, from a mirror where the stack names one."""
    kueue = cluster.config.kueue
    deployment = cluster.kubectl.get("deployment", DEPLOYMENT, "-n", KUEUE_NAMESPACE)
    [manager] = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    assert manager["image"] == f"{kueue.image_repository or UPSTREAM_KUEUE_IMAGE}:v{kueue.version}"
    if cluster.config.has_gpu:
        # The plugin's DaemonSet and the chart's MPS control daemon run the same image.
        images = {
            c["image"]
            for ds in cluster.kubectl.items("daemonsets", "-n", DEVICE_PLUGIN_NAMESPACE)
            for c in ds["spec"]["template"]["spec"]["containers"]
        }
        repository = cluster.config.device_plugin.image_repository or UPSTREAM_DEVICE_PLUGIN_IMAGE
        assert images == {f"{repository}:v{DEVICE_PLUGIN_VERSION}"}, images


@on_stacks("dev")
def test_kubeconfig_mode_builds_exactly_the_objects_of_create_mode(cluster: StackCluster) -> None:
    """The same pools in kubeconfig mode (no Azure, no location), pointed at this very cluster."""
    config_map = stacks.config_map("dev")
    config_map.pop("azure-native:location")
    config_map["kueue-aks:cluster"] = {"kubeconfig": cluster.cluster.kubeconfig.read_text()}
    raw, location = raw_from_stack_file({"config": config_map})
    kubeconfig_mode = parse_config(raw, stack="dev", location=location)
    assert kubeconfig_mode.cluster.mode == "kubeconfig"
    assert build_objects(kubeconfig_mode) == cluster.objects
    assert kueue_helm_values(kubeconfig_mode) == kueue_helm_values(cluster.config)
