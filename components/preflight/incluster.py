"""In kubeconfig mode, the Kueue a cluster already runs: read before any resource.

AKS's managed Kueue extension installs Kueue as the Helm release `kueue` in `kueue-system`, the
stack's own release name and namespace, so a stack on such a cluster would install a second Kueue
(or fail on the name mid-`up`). Its Deployment and CRDs are named as the stack's are, so they tell
nothing; these do:
- the objects its controller generates in the reserved `aks-` prefix: ResourceFlavor `aks-cpu`,
  WorkloadPriorityClasses `aks-{low,medium,high}-priority` (learn.microsoft.com/azure/aks/
  configure-queues-with-automatic-resource-flavors), Topology `aks-default`, and flavors labelled
  `app.kubernetes.io/managed-by=aks-managed-kueue-extension` (Azure/taugrid, the same chart);
- a `kueue` release in `kueue-system` that kueue-aks did not install: every release kueue-aks
  installs carries its manager config, whose managedJobsNamespaceSelector names MANAGED_LABEL.

`read` asks the cluster; `problems` decides (pure); `check` is what the program runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.checks import Problem
from ..config.names import CONFIG_PREFIX, KUEUE_NAMESPACE, MANAGED_LABEL
from ..config.stack import StackConfig
from ..facts.kueue_versions import AKS_PRIORITY_CLASSES
from ..k8s.helm_records import decode_release, newest_revision, storage_selector
from ..k8s.reader import ClusterReader
from ..kueue.values import KUEUE_RELEASE_NAME

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
# (kind, resource, name) of the objects the extension generates.
EXTENSION_OBJECTS = (
    ("ResourceFlavor", "resourceflavors", "aks-cpu"),
    *(("WorkloadPriorityClass", "workloadpriorityclasses", name) for name in AKS_PRIORITY_CLASSES),
    ("Topology", "topologies", "aks-default"),
)
EXTENSION_MANAGED_BY = ("app.kubernetes.io/managed-by", "aks-managed-kueue-extension")
CONTROLLER_DEPLOYMENT = f"{KUEUE_RELEASE_NAME}-controller-manager"


@dataclass(frozen=True)
class InstalledRelease:
    """The newest revision of a Helm release the cluster already has, from its storage Secret."""

    chart: str
    version: str
    revision: int
    status: str
    kueue_aks: bool  # installed by kueue-aks: its values carry the stack's manager config


@dataclass(frozen=True)
class ClusterKueue:
    """What the cluster shows of a Kueue it already runs."""

    signs: tuple[str, ...]  # of AKS's managed extension, e.g. "ResourceFlavor aks-cpu"
    release: InstalledRelease | None  # `kueue` in kueue-system
    available: int | None  # the controller Deployment's available replicas; None without one
    replicas: int | None = None

    @property
    def foreign_release(self) -> bool:
        return self.release is not None and not self.release.kueue_aks


def newest_release(secrets: Sequence[Mapping[str, Any]]) -> InstalledRelease | None:
    """The newest revision among a release's storage Secrets (labels owner=helm, name=<release>)."""
    secret = newest_revision(secrets)
    if secret is None:
        return None
    record = decode_release(secret)
    meta = (record.get("chart") or {}).get("metadata") or {}
    values = record.get("config") or {}
    manager = str(((values.get("managerConfig") or {}).get("controllerManagerConfigYaml")) or "")
    return InstalledRelease(
        chart=str(meta.get("name", "?")),
        version=str(meta.get("version", "?")),
        revision=int(record.get("version", 0)),
        status=str((record.get("info") or {}).get("status", "?")),
        kueue_aks=MANAGED_LABEL in manager,
    )


def read(reader: ClusterReader) -> ClusterKueue:
    signs = [
        f"{kind} {name}"
        for kind, resource, name in EXTENSION_OBJECTS
        if reader.get(f"{KUEUE_API}/{resource}/{name}") is not None
    ]
    key, value = EXTENSION_MANAGED_BY
    signs += [
        f"ResourceFlavor {f['metadata']['name']} ({key}={value})"
        for f in reader.list(f"{KUEUE_API}/resourceflavors", label_selector=f"{key}={value}")
        if f"ResourceFlavor {f['metadata']['name']}" not in signs
    ]
    release = newest_release(
        reader.list(
            f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets", label_selector=storage_selector(KUEUE_RELEASE_NAME)
        )
    )
    deployment = reader.get(f"/apis/apps/v1/namespaces/{KUEUE_NAMESPACE}/deployments/{CONTROLLER_DEPLOYMENT}")
    if deployment is None:
        return ClusterKueue(tuple(signs), release, None)
    return ClusterKueue(
        tuple(signs),
        release,
        int((deployment.get("status") or {}).get("availableReplicas") or 0),
        int((deployment.get("spec") or {}).get("replicas", 1)),
    )


def _release_text(release: InstalledRelease) -> str:
    return (
        f"Helm release {KUEUE_RELEASE_NAME} in {KUEUE_NAMESPACE}: chart {release.chart} {release.version}, "
        f"revision {release.revision}, {release.status}"
    )


def problems(config: StackConfig, found: ClusterKueue) -> list[Problem]:
    """Why the stack cannot go on with the Kueue the cluster has; empty when it can."""
    key = f"{CONFIG_PREFIX}:kueue.install"
    extension = config.kueue.extension
    seen = "; ".join([*found.signs, *([_release_text(found.release)] if found.release else [])])
    if extension is None:
        if found.signs:
            return [
                Problem(
                    key,
                    f"the cluster runs AKS's managed Kueue extension (found: {seen}); the stack would "
                    f"install a second Kueue as the same release {KUEUE_RELEASE_NAME} in {KUEUE_NAMESPACE}, and two "
                    "controllers cannot serve one set of CRDs and webhooks. Either set kueue-aks:kueue.install: "
                    "aksExtension to build on the extension's Kueue, or remove the extension first (az "
                    "k8s-extension delete --cluster-type managedClusters --name kueue --resource-group <group> "
                    "--cluster-name <cluster> --yes); docs/kueue-install.md",
                )
            ]
        if found.foreign_release:
            return [
                Problem(
                    key,
                    f"the cluster already has a Kueue that kueue-aks did not install ({seen}); the stack's "
                    "release has that name and namespace. Uninstall it (helm uninstall kueue -n kueue-system), or, "
                    "if it is AKS's managed Kueue extension, set kueue-aks:kueue.install: aksExtension; "
                    "docs/kueue-install.md",
                )
            ]
        return []
    if not found.signs:
        looked = ", ".join(f"{kind} {name}" for kind, _, name in EXTENSION_OBJECTS)
        return [
            Problem(
                key,
                f"aksExtension builds on the cluster's managed Kueue extension, but the cluster shows none "
                f"of its objects (looked for {looked}, and flavors labelled {'='.join(EXTENSION_MANAGED_BY)}). "
                "Install the extension (az k8s-extension create --extension-type microsoft.kueue --name kueue "
                f"--cluster-type managedClusters --scope cluster --release-namespace {KUEUE_NAMESPACE} "
                f"--version {extension.version} --auto-upgrade-mode none --resource-group <group> "
                "--cluster-name <cluster>), or set kueue-aks:kueue.install: helm; docs/kueue-install.md",
            )
        ]
    if not found.available:
        state = (
            "has no Deployment"
            if found.available is None
            else f"has {found.available} of {found.replicas} replicas available"
        )
        return [
            Problem(
                key,
                f"the cluster's managed Kueue extension is there ({seen}), but its controller is not running "
                f"(Deployment {KUEUE_NAMESPACE}/{CONTROLLER_DEPLOYMENT} {state}); Kueue's webhook must answer "
                "before the stack's queues can be created. Check it (az k8s-extension show --name kueue ...; "
                f"kubectl -n {KUEUE_NAMESPACE} get pods) and run again",
            )
        ]
    return []


def check(config: StackConfig) -> list[Problem]:
    """The problems with the Kueue of the cluster that `cluster.kubeconfig` names (ReadError if it
    cannot be read)."""
    assert config.cluster.kubeconfig is not None
    with ClusterReader.from_kubeconfig(config.cluster.kubeconfig) as reader:
        return problems(config, read(reader))
