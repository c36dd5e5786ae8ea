"""The job operators: which Kueue frameworks each one runs, and the exact version of each that goes
with each supported Kueue release (pure; no Pulumi import).

Kueue only queues a kind; its operator runs it. The stack installs the operator of every enabled
framework (`kueue-aks:operators`). Pins follow what Kueue's own go.mod and e2e use at each release
(kubernetes-sigs/kueue go.mod and hack/make/deps.mk@v0.19.2),
so an upgrade of Kueue and its operators is one reviewed change to OPERATOR_PINS. Each pin names the
operator's Go module with its go.sum checksum: its CRDs (and the manifests of the operators without
a chart) are read from that module (components/operators/sources.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    """A Go module at a pinned version, with its go.sum checksum (read by operators/sources.py)."""

    path: str  # e.g. github.com/kubeflow/mpi-operator
    version: str  # e.g. v0.8.2
    sum: str  # its go.sum line's h1: checksum

    def __str__(self) -> str:
        return f"{self.path}@{self.version}"


@dataclass(frozen=True)
class Resources:
    """One controller replica's requests (requests = what the scheduler reserves on the system pool)."""

    cpu_millicores: int
    memory_mib: int

    def as_requests(self) -> dict[str, str]:
        return {"cpu": f"{self.cpu_millicores}m", "memory": f"{self.memory_mib}Mi"}


@dataclass(frozen=True)
class Operator:
    key: str  # its key under kueue-aks:operators
    title: str
    frameworks: tuple[str, ...]  # the Kueue frameworks whose kinds it runs
    managed: bool = True  # False: the stack cannot install it; it must be declared `install: external`
    namespace: str = ""
    release_name: str = ""
    chart: str | None = None  # default chart source; None: installed from its module's manifests
    chart_name: str = ""  # the chart's name in an https chart repository
    image: str = ""  # the controller image's upstream repository
    crds: tuple[str, ...] = ()  # paths of its CRDs in its Go module
    resources: Resources = Resources(100, 256)
    needs: tuple[str, ...] = ()  # operators it cannot run without


@dataclass(frozen=True)
class Pin:
    version: str  # the chart (or manifest) version, no "v"
    module: Module  # its Go module at the same tag
    image_tag: str  # the controller image's tag at that version


KUBERAY = Operator(
    key="kuberay",
    title="KubeRay",
    frameworks=("ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"),
    namespace="kuberay-system",
    release_name="kuberay-operator",
    chart="https://ray-project.github.io/kuberay-helm",
    chart_name="kuberay-operator",
    image="quay.io/kuberay/operator",
    crds=tuple(f"config/crd/bases/ray.io_{k}.yaml" for k in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")),
    # The chart's default limits (100m, 512Mi; KubeRay's values.yaml: "managing 500 Ray pods
    # requires roughly 500MB"), made requests so the system pool holds them.
    resources=Resources(100, 512),
)
JOBSET = Operator(
    key="jobset",
    title="JobSet",
    frameworks=("jobset.x-k8s.io/jobset",),
    namespace="jobset-system",
    release_name="jobset",
    chart="oci://registry.k8s.io/jobset/charts/jobset",
    chart_name="jobset",
    image="registry.k8s.io/jobset/jobset",
    crds=("config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",),
    resources=Resources(500, 128),  # the chart's default requests
)
TRAINER = Operator(
    key="trainer",
    title="Kubeflow Trainer",
    frameworks=("trainer.kubeflow.org/trainjob",),
    namespace="kubeflow-system",
    release_name="kubeflow-trainer",
    chart="oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
    chart_name="kubeflow-trainer",
    image="ghcr.io/kubeflow/trainer/trainer-controller-manager",
    crds=tuple(
        f"charts/kubeflow-trainer/crds/trainer.kubeflow.org_{k}.yaml"
        for k in ("clustertrainingruntimes", "trainingruntimes", "trainjobs")
    ),
    needs=("jobset",),  # a TrainJob runs as a JobSet
)
MPI_OPERATOR = Operator(
    key="mpiOperator",
    title="MPI Operator",
    frameworks=("kubeflow.org/mpijob",),
    namespace="mpi-operator",
    release_name="mpi-operator",
    image="mpioperator/mpi-operator",
    resources=Resources(100, 128),
)
# Kueue 0.19 deprecates these integrations, removal planned for 0.20 (kubernetes-sigs/kueue#12620).
TRAINING_OPERATOR = Operator(
    key="trainingOperator",
    title="Kubeflow Training Operator (v1)",
    frameworks=(
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/jaxjob",
    ),
    namespace="kubeflow",
    release_name="training-operator",
    image="ghcr.io/kubeflow/training-v1/training-operator",
)
# Frameworks Kueue supports whose operators the stack does not ship: the cluster's owner installs
# them and says so, or Kueue would queue kinds that nothing runs.
EXTERNAL_ONLY = (
    Operator(
        key="leaderWorkerSet",
        title="LeaderWorkerSet",
        frameworks=("leaderworkerset.x-k8s.io/leaderworkerset",),
        managed=False,
    ),
    Operator(key="appWrapper", title="AppWrapper", frameworks=("workload.codeflare.dev/appwrapper",), managed=False),
    Operator(
        key="sparkOperator",
        title="Spark Operator",
        frameworks=("sparkoperator.k8s.io/sparkapplication",),
        managed=False,
    ),
)
OPERATORS: Mapping[str, Operator] = {
    o.key: o for o in (KUBERAY, JOBSET, TRAINER, MPI_OPERATOR, TRAINING_OPERATOR, *EXTERNAL_ONLY)
}

# kubernetes-sigs/kueue@v0.19.2 go.mod: jobset v0.12.0, ray-operator v1.6.2, trainer/v2 v2.2.1
# (Kueue >= 0.17 needs Trainer >= 2.2; 2.3 goes with Kueue 0.20), training-operator v1.9.3,
# mpi-operator v0.8.2. Checksums: the modules' go.sum lines (sum.golang.org). Image tags:
# the published charts' appVersion, and for the two manifest installs the tag their manifests
# name (training-operator's standalone overlay: v1-d6eb98e; mpi-operator's: 0.8.2).
_PINS_0_19_2: Mapping[str, Pin] = {
    "kuberay": Pin(
        "1.6.2",
        Module(
            "github.com/ray-project/kuberay/ray-operator", "v1.6.2", "h1:XUckRswLMyk71D00L62d2Vanh0fVkNqu56+IF/rr+O0="
        ),
        "v1.6.2",
    ),
    "jobset": Pin(
        "0.12.0", Module("sigs.k8s.io/jobset", "v0.12.0", "h1:YYPuV0px8Ongq/RXmJg6V0w2UC67aiR+rCMD06vhQQQ="), "v0.12.0"
    ),
    "trainer": Pin(
        "2.2.1",
        Module("github.com/kubeflow/trainer/v2", "v2.2.1", "h1:GsM80cgxnLnd8j8+lrX/Dpcvw7DYqpxkL0ni4XA/U7Y="),
        "v2.2.1",
    ),
    "mpiOperator": Pin(
        "0.8.2",
        Module("github.com/kubeflow/mpi-operator", "v0.8.2", "h1:7PVtV31iX3LSVW0BqRQ64w/NYNfAgP86Bmua2OEi5lg="),
        "0.8.2",
    ),
    "trainingOperator": Pin(
        "1.9.3",
        Module("github.com/kubeflow/training-operator", "v1.9.3", "h1:aaSHqskOtCY8Dn8sVd+l9p5XAczW6O0nYMPjVLAw/lc="),
        "v1-d6eb98e",
    ),
}

OPERATOR_PINS: Mapping[str, Mapping[str, Pin]] = {
    # sigs.k8s.io/kueue@v0.18.4 go.mod (from proxy.golang.org): the same jobset, ray-operator,
    # trainer/v2 and training-operator versions as 0.19.2, so the same charts and manifests; but
    # mpi-operator v0.8.0, pinned as Kueue 0.18.4 was built and e2e-tested with it: its manifest
    # comes from its module zip just as 0.8.2's does, and names image mpioperator/mpi-operator:0.8.0
    # (also the tag Kueue's hack/testing/e2e-common.sh uses). Checksum: Kueue v0.18.4's go.sum line.
    "0.18.4": {
        **_PINS_0_19_2,
        "mpiOperator": Pin(
            "0.8.0",
            Module("github.com/kubeflow/mpi-operator", "v0.8.0", "h1:22EccUiO4VDooG4TooesdE8o8euGVj89PIRhiP24SRE="),
            "0.8.0",
        ),
    },
    "0.19.2": _PINS_0_19_2,
}


def operator_of(framework: str) -> Operator | None:
    """The operator that runs a framework's kind; None for Kubernetes' own kinds."""
    return next((o for o in OPERATORS.values() if framework in o.frameworks), None)


def needed_operators(frameworks: tuple[str, ...] | list[str]) -> list[Operator]:
    """Every operator the frameworks need, with the operators those need, in catalog order."""
    keys = {o.key for f in frameworks if (o := operator_of(f)) is not None}
    for key in list(keys):
        keys.update(OPERATORS[key].needs)
    return [o for o in OPERATORS.values() if o.key in keys]
