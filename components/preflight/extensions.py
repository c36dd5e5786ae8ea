"""Pure decisions of the preflight over the cluster's AKS extensions: what they install against
what the stack installs.

Azure's shapes (Azure/azure-rest-api-specs specification/kubernetesconfiguration and containerservice):
- Extensions - List (Microsoft.KubernetesConfiguration, 2025-03-01): `{"value": [{"name",
  "properties": {"extensionType", "version", "currentVersion", "provisioningState",
  "scope": {"cluster": {"releaseNamespace"}}}}], "nextLink"}`. Extension types are compared
  without case: AKS's docs write `microsoft.kueue`, other types are written `Microsoft.…`.
- Managed Clusters - Get/List: `id`, `name`, `location`, `properties.currentKubernetesVersion`
  (else `kubernetesVersion`).

What clashes: AKS's managed Kueue extension (`microsoft.kueue`) installs Kueue as the Helm release
`kueue` in `kueue-system` (learn.microsoft.com/azure/aks/kueue-overview?pivots=extension), the stack's own
release name and namespace; the managed KubeRay extension (`microsoft.kuberay`) installs the KubeRay operator
and the Ray CRDs (learn.microsoft.com/azure/aks/kuberay-overview),
which the stack's KubeRay release installs too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.checks import Problem
from ..config.names import CONFIG_PREFIX, KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..facts.kueue_versions import (
    AKS_EXTENSION_NAME,
    AKS_EXTENSION_TYPE,
    AKS_EXTENSIONS,
    DEFAULT_AKS_EXTENSION,
    AksKueueExtension,
)
from ..facts.operators import KUBERAY
from ..kueue.values import KUEUE_RELEASE_NAME

# AKS's managed KubeRay extension (learn.microsoft.com/azure/aks/kuberay-overview).
KUBERAY_EXTENSION_TYPE = "microsoft.kuberay"

_RESOURCE_GROUP = re.compile(r"/resourceGroups/([^/]+)/", re.IGNORECASE)
_MINOR = re.compile(r"^v?(\d+)\.(\d+)")


@dataclass(frozen=True)
class ClusterExtension:
    """One extension of the cluster as Azure lists it."""

    name: str
    extension_type: str  # Azure's spelling; compare with is_type
    version: str | None  # the pinned version; None when Azure picks (auto-upgrade)
    current_version: str | None  # what runs
    provisioning_state: str | None
    release_namespace: str | None

    def is_type(self, extension_type: str) -> bool:
        return self.extension_type.lower() == extension_type.lower()

    def __str__(self) -> str:
        running = self.current_version or self.version or "version not reported"
        pinned = f", pinned to {self.version}" if self.version and self.version != running else ""
        return (
            f"{self.name!r} ({self.extension_type} {running}{pinned}, provisioning state "
            f"{self.provisioning_state or 'not reported'}, release namespace "
            f"{self.release_namespace or 'not reported'})"
        )


@dataclass(frozen=True)
class ClusterFacts:
    """What the preflight needs of the AKS cluster the stack runs on."""

    resource_group: str
    name: str
    location: str  # Azure's spelling, e.g. eastus2
    kubernetes_version: str | None  # what runs, e.g. 1.33.2

    def delete_command(self, extension: ClusterExtension) -> str:
        return (
            f"az k8s-extension delete --resource-group {self.resource_group} --cluster-name {self.name} "
            f"--cluster-type managedClusters --name {extension.name} --yes"
        )


def parse_extensions(items: Iterable[Mapping[str, Any]]) -> tuple[ClusterExtension, ...]:
    out = []
    for item in items:
        props = item.get("properties") or {}
        out.append(
            ClusterExtension(
                name=str(item.get("name", "")),
                extension_type=str(props.get("extensionType", "")),
                version=props.get("version"),
                current_version=props.get("currentVersion"),
                provisioning_state=props.get("provisioningState"),
                release_namespace=((props.get("scope") or {}).get("cluster") or {}).get("releaseNamespace"),
            )
        )
    return tuple(out)


def cluster_facts(cluster: Mapping[str, Any]) -> ClusterFacts:
    """The cluster's facts; its resource group from its ARM id (a listed cluster has no other)."""
    found = _RESOURCE_GROUP.search(str(cluster.get("id", "")))
    props = cluster.get("properties") or {}
    return ClusterFacts(
        resource_group=found.group(1) if found else "",
        name=str(cluster.get("name", "")),
        location=str(cluster.get("location", "")),
        kubernetes_version=props.get("currentKubernetesVersion") or props.get("kubernetesVersion"),
    )


def _region(name: str) -> str:
    """Azure's region names as `location` holds them: `East US` and `eastus` are one region."""
    return name.lower().replace(" ", "")


def _minor(version: str | None) -> tuple[int, int] | None:
    found = _MINOR.match(version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def extension_problems(
    config: StackConfig, extensions: Sequence[ClusterExtension], cluster: ClusterFacts
) -> list[Problem]:
    """Where the cluster's extensions, or the cluster itself, leave no room for what the stack installs."""
    where = f"cluster {cluster.resource_group}/{cluster.name}"
    pinned = (config.kueue.extension or AKS_EXTENSIONS[DEFAULT_AKS_EXTENSION]).version
    problems: list[Problem] = []
    for ext in (e for e in extensions if e.is_type(AKS_EXTENSION_TYPE)):
        delete = cluster.delete_command(ext)
        ours = ext.name.lower() == AKS_EXTENSION_NAME
        if config.kueue.install == "helm":
            # The stack names its own extension kueue: one named otherwise must go under either install.
            ways = (
                f"set {CONFIG_PREFIX}:kueue.install: aksExtension (the stack then uses this extension, pinned to "
                f"{pinned}), or remove the extension: {delete}"
                if ours
                else f"remove the extension: {delete} (install: aksExtension would not take it over: the stack names "
                f"its own extension {AKS_EXTENSION_NAME})"
            )
            problems.append(
                Problem(
                    f"{CONFIG_PREFIX}:kueue.install",
                    (
                        f"is helm, but {where} has AKS's managed Kueue extension {ext}; the stack's Helm release is "
                        "also "
                        f"{KUEUE_RELEASE_NAME} in {KUEUE_NAMESPACE}, and two Kueues would serve the same CRDs and "
                        "webhooks. "
                        f"To go on, {ways}"
                    ),
                )
            )
        elif not ours:
            problems.append(
                Problem(
                    f"{CONFIG_PREFIX}:kueue.install",
                    (
                        f"is aksExtension, but {where} already has AKS's managed Kueue extension {ext}; the stack "
                        "creates its "
                        f"own, named {AKS_EXTENSION_NAME}, and two extensions of type {AKS_EXTENSION_TYPE} would "
                        "install "
                        f"two Kueues over the same CRDs and webhooks. To go on, remove this one: {delete} (the stack "
                        "then "
                        f"creates {AKS_EXTENSION_NAME}, pinned to {pinned})"
                    ),
                )
            )
    kuberay = next((o for o in config.operators if o.key == KUBERAY.key), None)
    if kuberay is not None and kuberay.install == "managed":
        for ext in (e for e in extensions if e.is_type(KUBERAY_EXTENSION_TYPE)):
            problems.append(
                Problem(
                    f"{CONFIG_PREFIX}:operators.{KUBERAY.key}.install",
                    (
                        f"is managed, but {where} has AKS's managed KubeRay extension {ext}, which installs the "
                        "KubeRay "
                        f"operator and the Ray CRDs; the stack's own ({KUBERAY.release_name} in {KUBERAY.namespace}) "
                        "would "
                        "be a second operator over the same CRDs. To go on, set "
                        f"{CONFIG_PREFIX}:operators.{KUBERAY.key}.install: "
                        f"external (the extension's KubeRay then serves RayJobs), or remove the extension: "
                        f"{cluster.delete_command(ext)}"
                    ),
                )
            )
    if config.cluster.mode == "existing" and config.kueue.extension is not None:
        problems += _extension_fit(config.kueue.extension, cluster, where)
    return problems


def _extension_fit(extension: AksKueueExtension, cluster: ClusterFacts, where: str) -> list[Problem]:
    """What AKS's managed Kueue extension needs of a cluster made elsewhere: a recent enough
    Kubernetes and a region that offers it (learn.microsoft.com/azure/aks/kueue-overview?pivots=extension).
    A cluster the stack
    creates is held to both by the config check already."""
    key, need = f"{CONFIG_PREFIX}:cluster.existing", ".".join(map(str, extension.min_kubernetes))
    problems: list[Problem] = []
    running = _minor(cluster.kubernetes_version)
    if running is not None and running < extension.min_kubernetes:
        problems.append(
            Problem(
                key,
                (
                    f"{where} runs Kubernetes {cluster.kubernetes_version}, older than {need}, the oldest AKS's "
                    "managed Kueue "
                    f"extension {extension.version} runs on; upgrade the cluster (az aks upgrade --resource-group "
                    f"{cluster.resource_group} --name {cluster.name} --kubernetes-version <{need} or newer>), or set "
                    f"{CONFIG_PREFIX}:kueue.install: helm"
                ),
            )
        )
    if _region(cluster.location) not in {_region(r) for r in extension.regions}:
        problems.append(
            Problem(
                key,
                (
                    f"{where} is in {cluster.location}, where AKS's managed Kueue extension {extension.version} is "
                    "not offered "
                    f"(offered in {', '.join(sorted(extension.regions))}); use a cluster in one of those regions, or "
                    "set "
                    f"{CONFIG_PREFIX}:kueue.install: helm"
                ),
            )
        )
    return problems
