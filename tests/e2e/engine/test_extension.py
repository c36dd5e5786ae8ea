"""AKS's managed Kueue extension, on the real control plane with the real Pulumi engine.

After test_engine.py has destroyed its stack, Kueue is installed on the same control plane the way
the extension installs it (learn.microsoft.com/azure/aks/kueue-overview?pivots=extension and
.../configure-queues-with-automatic-resource-flavors): the Helm release
`kueue` in `kueue-system` with the chart's own settings, not the stack's, and the objects the
extension's controller generates (the `aks-cpu` flavor, labelled as its controller labels them, the
`aks-*-priority` classes and the `aks-default` topology). The extension's own chart and Kueue 0.19.6
cannot be had here, so the chart is Kueue's published one at the tier's version. Then:
- a stack with `kueue.install: helm` stops at preview, naming what it found, and an `up` creates
  nothing;
- a stack with `kueue.install: aksExtension` builds its queues on that Kueue, a job in a team's
  LocalQueue is admitted at an extension's priority class, and its destroy leaves the extension's
  Kueue as it found it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from components.config.kueue import DEFAULT_KUEUE_CHART
from components.config.names import KUEUE_NAMESPACE
from components.kueue.crds import cache_entry
from components.kueue.objects import build_objects
from components.kueue.values import KUEUE_RELEASE_NAME, kueue_chart
from components.facts.kueue_versions import AKS_EXTENSIONS, AKS_PRIORITY_CLASSES, DEFAULT_AKS_EXTENSION
from components.preflight.incluster import EXTENSION_MANAGED_BY

from testbed.cluster import wait_for
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject, release_states
from testbed.jobs import job, wait_admitted
from testbed.measurements import report
from testbed.mirror import ChartMirror
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, engine_jobs_config

HELM_WAIT_SECONDS = 180
TEAM = "research"


def extension_objects() -> list[dict[str, Any]]:
    """What the extension's controller generates, as its docs name them."""
    key, value = EXTENSION_MANAGED_BY
    labels = {key: value}
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "aks-default", "labels": labels},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "aks-cpu", "labels": labels},
            "spec": {"nodeLabels": {"kubernetes.azure.com/mode": "user"}, "topologyName": "aks-default"},
        },
        *(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name, "labels": labels},
                "value": value,
            }
            for name, value in AKS_PRIORITY_CLASSES.items()
        ),
    ]


@pytest.fixture
def extension(cluster: StackCluster, project: PulumiProject) -> Iterator[StackCluster]:
    """The control plane with Kueue as the extension leaves it (installed once, kept)."""
    if not getattr(cluster, "extension_installed", False):
        if project.created():  # test_engine.py did not run to its destroy (a selection of tests)
            project.destroy()
        kubectl = cluster.kubectl
        kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}])
        cluster.helm.install(
            KUEUE_RELEASE_NAME,
            kueue_chart(cluster.config),
            namespace=KUEUE_NAMESPACE,
            values={},
            workdir=cluster.workdir,
            wait_seconds=HELM_WAIT_SECONDS,
        )
        # The engine fixture's follower starts the real controller once the Deployment exists.
        follower = cluster.kueue_follower  # type: ignore[attr-defined]
        wait_for("the Kueue follower to start the controller", lambda: (follower.running, follower.describe()), 60)
        cluster.kueue.wait_ready()
        kubectl.apply(extension_objects())
        cluster.extension_installed = True  # type: ignore[attr-defined]
    yield cluster


def extension_config(install: str) -> dict[str, Any]:
    """The engine stack's config (no MultiKueue role), with Kueue installed by `install`."""
    config = {k: v for k, v in engine_jobs_config().items() if k != "kueue-aks:multiKueue"}
    if install == "aksExtension":
        config["kueue-aks:kueue"] = {"install": "aksExtension", "frameworks": ["batch/job"]}
    return config


def stack_beside(cluster: StackCluster, project: PulumiProject, stack: str, install: str) -> PulumiProject:
    """Another stack of the engine's project on this control plane, with Kueue installed by `install`."""
    return project.another_stack(stack, extension_config(install), cluster.cluster.kubeconfig.read_text())


def cache_schema_chart(mirror: ChartMirror, stack: PulumiProject) -> None:
    """An aksExtension stack takes no chart key, so its validator reads the Kueue CRDs of the
    schema release from the default source, which this machine cannot reach. The test does what
    the program tells an offline user to do: `helm pull` the chart into the stack's cache entry,
    here from the mirror (whose chart has the pinned CRD templates, checked again on read)."""
    version = AKS_EXTENSIONS[DEFAULT_AKS_EXTENSION].schema
    entry = cache_entry(DEFAULT_KUEUE_CHART, version, stack.env)
    entry.mkdir(parents=True, exist_ok=True)
    mirror.helm("pull", mirror.oci("kueue"), "--version", version, "-d", str(entry))


@on_stacks(ENGINE)
def test_extension_a_helm_stack_stops_at_preview_naming_the_extension(
    extension: StackCluster, project: PulumiProject
) -> None:
    helm_stack = stack_beside(extension, project, "extension-helm", "helm")
    before = release_states(extension)

    preview = helm_stack.run("preview", check=False)
    said = preview.stdout + preview.stderr
    print(said[-3000:])
    assert preview.returncode != 0
    for part in (
        "kueue-aks:kueue.install",
        "AKS's managed Kueue extension",
        "ResourceFlavor aks-cpu",
        "Topology aks-default",
        "WorkloadPriorityClass aks-high-priority",
        "aksExtension",
        "az k8s-extension delete",
    ):
        assert part in said, part

    up = helm_stack.run("up", "--yes", "--skip-preview", check=False)
    assert up.returncode != 0, up.stdout[-2000:]
    left = helm_stack.created()
    assert not left, f"the refused stack registered resources: {left}"
    teams = {o["metadata"]["name"] for o in build_objects(extension.config) if o["kind"] == "Namespace"}
    namespaces = {n["metadata"]["name"] for n in extension.kubectl.items("namespaces")}
    assert not teams & namespaces, f"team namespaces were created: {teams & namespaces}"
    assert release_states(extension) == before, "the extension's release was touched"


@on_stacks(ENGINE)
def test_extension_an_extension_stack_brings_its_queues_up_and_admits_a_job(
    extension: StackCluster, project: PulumiProject, mirror: ChartMirror
) -> None:
    managed = stack_beside(extension, project, "extension-managed", "aksExtension")
    cache_schema_chart(mirror, managed)
    before = release_states(extension)
    started = time.monotonic()
    managed.up()
    report(
        f"e2e[{ENGINE}]: `pulumi up` of an aksExtension stack on the extension's Kueue took "
        f"{time.monotonic() - started:.0f} s"
    )

    kubectl = extension.kubectl
    wait_for("the stack's queues to be active on the extension's Kueue", extension.queues_active, 60)
    outputs = managed.outputs()
    assert outputs["kueueVersion"] == "0.19.6" and outputs["kueueNamespace"] == KUEUE_NAMESPACE, outputs
    assert release_states(extension) == before, "the stack changed the extension's release"
    flavors = {f["metadata"]["name"] for f in kubectl.items("resourceflavors.kueue.x-k8s.io")}
    assert "aks-cpu" in flavors and {p.name for p in extension.config.node_pools} <= flavors, flavors

    kubectl.apply([job(TEAM, "on-the-extension", priority="aks-high-priority")])
    workload = wait_admitted(extension, TEAM, "on-the-extension")
    print(workload["status"].get("admission"))
    assert workload["spec"].get("priority") == AKS_PRIORITY_CLASSES["aks-high-priority"], workload["spec"]
    assert workload["status"]["admission"]["clusterQueue"] == TEAM

    managed.destroy()
    assert not managed.created(), managed.created()
    assert release_states(extension) == before
    kept = {o["metadata"]["name"] for o in kubectl.items("resourceflavors.kueue.x-k8s.io")}
    assert "aks-cpu" in kept, f"the stack's destroy removed the extension's objects: {kept}"
