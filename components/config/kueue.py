"""`kueue-aks:kueue`: which Kueue, how it is installed (the pinned Helm release or AKS's managed
extension), its feature gates and job frameworks; their defaults and parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..facts import kueue_versions
from ..k8s.charts import chart_source_problem, image_repository_problem
from .checks import (
    INVALID,
    PROJECT_ROOT,
    Checks,
    Problems,
    Reader,
    checked,
    shown,
    suggest,
)
from .keys import KUEUE
from .names import CONFIG_PREFIX

DEFAULT_KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"


DEFAULT_FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
)


DEFAULT_FEATURE_GATES = {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}


NAMESPACE_SELECTOR_GATE = "ManagedJobsNamespaceSelectorAlwaysRespected"


# How Kueue gets onto the cluster (keys.KUEUE_INSTALLS): the stack's pinned Helm release, or AKS's
# managed Kueue extension (docs/kueue-install.md): on create and existing clusters the stack creates
# the extension, in kubeconfig mode it uses the one the cluster has.


# What only the Helm release lets the stack set; the extension runs Kueue with its own settings
# ("the Kueue version and configuration supported by the extension": learn.microsoft.com/azure/aks/
# kueue-overview?pivots=extension).
HELM_ONLY_KUEUE_KEYS = ("version", "featureGates", "replicas", "chart", "imageRepository")


@dataclass(frozen=True)
class KueueSettings:
    version: str = kueue_versions.DEFAULT_VERSION
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_FEATURE_GATES))
    frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS
    replicas: int = 2
    chart: str = DEFAULT_KUEUE_CHART  # oci:// or https:// repository, or a local .tgz
    image_repository: str | None = None  # a mirror of registry.k8s.io/kueue/kueue; tag = version
    install: str = "helm"  # helm | aksExtension
    # With aksExtension: the pinned extension; `version` is then its schema release (the tables
    # and CRDs the objects are validated with) and feature_gates is empty (the extension's own).
    extension: kueue_versions.AksKueueExtension | None = None

    @property
    def release(self) -> kueue_versions.KueueRelease:
        return kueue_versions.RELEASES[self.version]

    @property
    def described(self) -> str:
        """How the plan names the Kueue a stack runs."""
        if self.extension:
            return f"Kueue {self.extension.kueue} from AKS's managed extension {self.extension.version}"
        return f"Kueue {self.version}"

    @property
    def running_version(self) -> str:
        """The Kueue version the cluster runs."""
        return self.extension.kueue if self.extension else self.version


def parse_kueue(problems: Problems, raw: Any) -> KueueSettings:
    c = Checks(problems)
    r = Reader(problems, KUEUE.name, raw, KUEUE)
    install = r.get("install", "helm")
    if install == "aksExtension":
        return _parse_kueue_extension(problems, r)
    if "extensionVersion" in r.value:
        problems.add(
            r.at("extensionVersion"),
            "is the version of AKS's managed Kueue extension; it needs "
            "install: aksExtension (with install: helm, kueue.version pins the chart)",
        )
    supported = sorted(kueue_versions.RELEASES)

    def version(p: str, v: str) -> Any:
        if v not in kueue_versions.RELEASES:
            problems.add(
                p,
                f"{v!r} has no gate and framework tables in components/facts/kueue_versions.py; supported: "
                f"{', '.join(supported)}",
            )
            return INVALID
        return v

    given = r.value.get("version")
    if isinstance(given, str) and given.startswith("v"):
        problems.add(r.at("version"), f"{shown(given)}: write the chart version without 'v', e.g. {shown(given[1:])}")
        ver = kueue_versions.DEFAULT_VERSION
    else:
        ver = r.get("version", kueue_versions.DEFAULT_VERSION, version)
    release = kueue_versions.RELEASES[ver]

    def gates(p: str, v: Mapping[str, bool]) -> Any:
        for gate, on in v.items():
            gp = f"{p}.{gate}"
            if gate in release.removed_gates:
                problems.add(gp, f"was removed from Kueue before {ver}; Kueue refuses to start with it. Remove the key")
            elif gate not in release.gates:
                problems.add(gp, f"is not a Kueue {ver} feature gate{suggest(str(gate), sorted(release.gates))}")
            elif release.gates[gate].locked and on != release.gates[gate].default:
                problems.add(
                    gp,
                    f"is locked to {str(release.gates[gate].default).lower()} in Kueue {ver}; Kueue refuses to start "
                    "otherwise",
                )
            elif gate == NAMESPACE_SELECTOR_GATE and on is False:
                # Not locked before 0.19; off, Kueue would also manage jobs outside the team namespaces.
                problems.add(
                    gp,
                    "must stay true: the stack's managedJobsNamespaceSelector keeps Kueue to the team "
                    "namespaces (docs/governance.md), which this gate makes Kueue respect for every job kind",
                )
        if v.get("TopologyAwareScheduling") is False:
            still_on = sorted(g for g in release.tas_subgates if v.get(g, release.gates[g].default))
            if still_on:
                problems.add(
                    f"{p}.TopologyAwareScheduling",
                    "false needs these TAS gates set to false too (Kueue refuses to start otherwise): "
                    f"{', '.join(still_on)}",
                )
        return dict(v)

    feature_gates = r.get("featureGates", dict(DEFAULT_FEATURE_GATES), gates)
    fw = r.get(
        "frameworks",
        DEFAULT_FRAMEWORKS,
        lambda p, v: c.choices(
            p,
            v,
            "job framework names",
            sorted(release.frameworks),
            empty="framework, e.g. batch/job",
            unknown=f"a Kueue {ver} framework",
        ),
    )
    if "sparkoperator.k8s.io/sparkapplication" in fw and not feature_gates.get("SparkApplicationIntegration"):
        problems.add(
            f"{CONFIG_PREFIX}:kueue.featureGates.SparkApplicationIntegration",
            "must be true when frameworks includes sparkoperator.k8s.io/sparkapplication",
        )
    return KueueSettings(
        version=ver,
        feature_gates=feature_gates,
        frameworks=fw,
        replicas=r.get("replicas", 2),
        chart=r.get(
            "chart", DEFAULT_KUEUE_CHART, checked(problems, lambda v: chart_source_problem(v, ver, PROJECT_ROOT))
        ),
        image_repository=r.get("imageRepository", None, checked(problems, image_repository_problem)),
    )


def _parse_kueue_extension(problems: Problems, r: Reader) -> KueueSettings:
    """kueue-aks:kueue with install: aksExtension: the extension's version and the job kinds the
    stack serves; what the extension sets itself is refused, naming the key."""
    c = Checks(problems)
    for key in HELM_ONLY_KUEUE_KEYS:
        if key in r.value:
            problems.add(
                r.at(key),
                "is set by AKS's managed Kueue extension, which takes no such setting from the "
                "stack (docs/kueue-install.md#what-the-extension-does-not-let-you-set); remove it, or set "
                "install: helm",
            )
    name = r.get("extensionVersion", kueue_versions.DEFAULT_AKS_EXTENSION)
    extension = kueue_versions.AKS_EXTENSIONS[name]
    frameworks = r.get(
        "frameworks",
        extension.frameworks,
        lambda p, v: c.choices(
            p,
            v,
            "job framework names",
            list(extension.frameworks),
            empty="framework, e.g. batch/job",
            unknown=f"a job kind AKS's managed Kueue extension {name} queues (the stack cannot enable others there)",
        ),
    )
    return KueueSettings(
        version=extension.schema, feature_gates={}, frameworks=frameworks, install="aksExtension", extension=extension
    )
