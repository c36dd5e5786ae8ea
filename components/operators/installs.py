"""What the stack installs for each operator, as plain data (pure apart from reading the pinned
modules; no Pulumi import): its namespace, its CRDs, and either a pinned chart with values or the
objects of its upstream manifests.

The same `Install` is registered by components/operators/component.py, listed by the offline plan
and applied by the e2e tier, so all three install an operator the same way.

Placement, as for Kueue (components/kueue/values.py): every controller runs on the system pool
(AKS's `kubernetes.azure.com/mode: system` label), tolerates CriticalAddonsOnly, and requests what
components/facts/operators.py says, which the system-pool check (facts/operator_sizing.py) adds up.
The CRDs are read from each operator's module and installed by a release of their own
(crd_chart.py), not from the charts' `crds/` folders: Helm neither upgrades nor deletes those
(helm.sh docs, "Custom Resource Definitions"), so `pulumi destroy` would leave them, and an operator
upgrade would keep the old schema.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..config.operators import OperatorSettings
from ..config.stack import StackConfig
from ..facts.operators import JOBSET, KUBERAY, MPI_OPERATOR, OPERATOR_PINS, TRAINER, TRAINING_OPERATOR, Operator, Pin
from ..k8s.charts import ChartRef, chart_ref
from ..k8s.part import Part
from ..kueue.values import SYSTEM_POOL_SELECTOR, SYSTEM_POOL_TOLERATIONS
from .sources import module_documents

# Kueue's pytorchjob…jaxjob frameworks → the Training Operator's --enable-scheme names.
TRAINING_SCHEMES = {f: f.split("/")[1] for f in TRAINING_OPERATOR.frameworks}
MPIJOB_CRD = "mpijobs.kubeflow.org"
TRAINING_WEBHOOK_CERT = "training-operator-webhook-cert"  # the overlay's secretGenerator name


@dataclass(frozen=True)
class Install:
    operator: Operator
    pin: Pin
    crds: list[dict[str, Any]]
    chart: ChartRef | None = None  # a Helm release, or
    values: dict[str, Any] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)  # the upstream manifests' objects

    @property
    def namespace(self) -> str:
        return self.operator.namespace

    def controller_needs(self) -> list[dict[str, Any]]:
        """The manifest objects its Deployment cannot start without: its namespace's account,
        Secret and Service, the bindings for that account and the roles they grant, the webhook
        configuration whose caBundle its cert rotator fills. Not the aggregated user roles
        (admin/edit/view) a manifest also ships."""
        ns = self.namespace
        bindings = [
            o
            for o in self.objects
            if o["kind"] == "ClusterRoleBinding" and any(s.get("namespace") == ns for s in o.get("subjects") or [])
        ]
        roles = {b["roleRef"]["name"] for b in bindings}
        return [
            o
            for o in self.objects
            if o in bindings
            or (o["kind"] in ("ServiceAccount", "Secret", "Service") and o["metadata"].get("namespace") == ns)
            or (o["kind"] == "ClusterRole" and o["metadata"]["name"] in roles)
            or o["kind"] == "ValidatingWebhookConfiguration"
        ]


@dataclass(frozen=True)
class OperatorsPart(Part):
    """The operators' part (components/assembly.py): its objects and releases, and the installs they
    are made of, which JobOperators registers operator by operator, each in its own order."""

    installs: tuple[Install, ...] = ()


def pin_of(config: StackConfig, key: str) -> Pin:
    return OPERATOR_PINS[config.kueue.version][key]


def managed(config: StackConfig) -> list[OperatorSettings]:
    return [o for o in config.operators if o.install == "managed"]


def installs(config: StackConfig) -> list[Install]:
    """One Install per operator the stack manages, in catalog order."""
    builders = {
        "kuberay": _kuberay,
        "jobset": _jobset,
        "trainer": _trainer,
        "mpiOperator": _mpi_operator,
        "trainingOperator": _training_operator,
    }
    return [builders[o.key](config, o) for o in managed(config)]


def operator_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Every object of the managed operators but their Helm releases, in apply order: their
    namespaces (the program makes each one itself, components/operators/component.py), CRDs, the
    manifest installs' objects, then the runtimes once Trainer serves."""
    done = installs(config)
    runtimes = trainer_runtimes() if any(i.operator.key == TRAINER.key for i in done) else []
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in dict.fromkeys(i.namespace for i in done)
    ]
    return namespaces + [o for i in done for o in i.crds] + [o for i in done for o in i.objects] + runtimes


def _crds(operator: Operator, pin: Pin) -> list[dict[str, Any]]:
    return [doc for path in operator.crds for doc in module_documents(pin.module, path, mutable=False)]


def _requests(operator: Operator) -> dict[str, Any]:
    r = operator.resources
    # Memory limit = request: a controller that outgrows it is restarted rather than starving the
    # system pool's other pods; cpu is not limited (throttling slows reconciles, it saves nothing).
    return {"requests": r.as_requests(), "limits": {"memory": f"{r.memory_mib}Mi"}}


def _chart(config: StackConfig, settings: OperatorSettings, operator: Operator, pin: Pin) -> ChartRef:
    return chart_ref(settings.chart or operator.chart or "", operator.chart_name, pin.version, config.registry_logins)


def _kuberay(config: StackConfig, settings: OperatorSettings) -> Install:
    pin = pin_of(config, KUBERAY.key)
    values = {
        # The tag is always the pin: the chart in git says "nightly" and only the release sets it.
        "image": {"repository": settings.image_repository or KUBERAY.image, "tag": pin.image_tag},
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "tolerations": copy.deepcopy(SYSTEM_POOL_TOLERATIONS),
        "resources": _requests(KUBERAY),
    }
    return Install(KUBERAY, pin, _crds(KUBERAY, pin), _chart(config, settings, KUBERAY, pin), values)


def _jobset(config: StackConfig, settings: OperatorSettings) -> Install:
    pin = pin_of(config, JOBSET.key)
    values: dict[str, Any] = {
        "controller": {
            "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
            "tolerations": copy.deepcopy(SYSTEM_POOL_TOLERATIONS),
            "resources": {"requests": JOBSET.resources.as_requests()},  # the chart's limits stay
        },
    }
    if settings.image_repository:
        # The published chart names registry.k8s.io/jobset/jobset:v<version> (kubernetes-sigs/jobset
        # hack/helm-chart-package.sh@v0.12.0).
        values["image"] = {"repository": settings.image_repository, "tag": pin.image_tag}
    return Install(JOBSET, pin, _crds(JOBSET, pin), _chart(config, settings, JOBSET, pin), values)


def _trainer(config: StackConfig, settings: OperatorSettings) -> Install:
    pin = pin_of(config, TRAINER.key)
    values: dict[str, Any] = {
        # JobSet is its own release: Trainer's bundled copy would be a second JobSet controller
        # fighting over the same fixed webhook names (kubeflow/trainer charts/kubeflow-trainer/values.yaml@v2.2.1,
        # `jobset.install`).
        "jobset": {"install": False},
        "manager": {
            "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
            "tolerations": copy.deepcopy(SYSTEM_POOL_TOLERATIONS),
            "resources": _requests(TRAINER),
        },
    }
    if settings.image_repository:
        registry, _, repository = settings.image_repository.partition("/")
        values["image"] = {"registry": registry, "repository": repository, "tag": pin.image_tag}
    return Install(TRAINER, pin, _crds(TRAINER, pin), _chart(config, settings, TRAINER, pin), values)


def _place(deployment: dict[str, Any], operator: Operator, image: str, args: list[str] | None = None) -> None:
    """System-pool placement, requests and the pinned image for a manifest's one-container Deployment."""
    pod = deployment["spec"]["template"]["spec"]
    pod["nodeSelector"] = dict(SYSTEM_POOL_SELECTOR)
    pod["tolerations"] = copy.deepcopy(SYSTEM_POOL_TOLERATIONS)
    (container,) = pod["containers"]
    container["image"] = image
    container["resources"] = _requests(operator)
    if args is not None:
        container["args"] = args


def _image(settings: OperatorSettings, operator: Operator, pin: Pin) -> str:
    return f"{settings.image_repository or operator.image}:{pin.image_tag}"


def _mpi_operator(config: StackConfig, settings: OperatorSettings) -> Install:
    """kubeflow/mpi-operator's one install manifest (deploy/v2beta1/mpi-operator.yaml): its
    Namespace, CRD, RBAC and Deployment; the program creates the namespace itself."""
    pin = pin_of(config, MPI_OPERATOR.key)
    docs = module_documents(pin.module, "deploy/v2beta1/mpi-operator.yaml", mutable=False)
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    objects = copy.deepcopy([d for d in docs if d["kind"] not in ("Namespace", "CustomResourceDefinition")])
    for obj in objects:
        if obj["kind"] == "Deployment":
            _place(obj, MPI_OPERATOR, _image(settings, MPI_OPERATOR, pin))
    return Install(MPI_OPERATOR, pin, crds, objects=objects)


def _training_operator(config: StackConfig, settings: OperatorSettings) -> Install:
    """The Training Operator's `manifests/overlays/standalone` as kustomize renders it (namespace
    `kubeflow`, the base's webhook patch, the overlay's image tag and empty webhook-cert Secret),
    with two changes Kueue's own e2e makes (kubernetes-sigs/kueue
    test/e2e/config/multikueue/kubeflow-manifest-patch@v0.19.2): only the enabled kinds (never
    MPIJob v1, whose CRD name the MPI Operator's v2beta1 CRD takes) by `--enable-scheme`, and no
    MPIJob v1 CRD. The e2e tier compares this with `kubectl kustomize` of the same overlay."""
    pin = pin_of(config, TRAINING_OPERATOR.key)
    base = "manifests/base"
    schemes = [TRAINING_SCHEMES[f] for f in config.kueue.frameworks if f in TRAINING_SCHEMES]
    crds = [
        d for s in schemes for d in module_documents(pin.module, f"{base}/crds/kubeflow.org_{s}s.yaml", mutable=False)
    ]
    ns = TRAINING_OPERATOR.namespace
    objects: list[dict[str, Any]] = []
    for path in (
        "rbac/cluster-role-binding.yaml",
        "rbac/role.yaml",
        "rbac/service-account.yaml",
        "webhook/manifests.yaml",
        "service.yaml",
        "deployment.yaml",
    ):
        objects += module_documents(pin.module, f"{base}/{path}")
    service = next(o for o in objects if o["kind"] == "Service")["metadata"]["name"]
    for obj in objects:
        kind = obj["kind"]
        if kind in ("ServiceAccount", "Service", "Deployment"):
            obj["metadata"]["namespace"] = ns
        if kind == "ClusterRoleBinding":
            for subject in obj["subjects"]:
                subject["namespace"] = ns
        elif kind == "ValidatingWebhookConfiguration":
            # base/webhook: the patch names the Service and the configuration; kustomizeconfig
            # sets the namespace; the labels transformer adds control-plane.
            obj["metadata"]["name"] = "validator.training-operator.kubeflow.org"
            obj["metadata"].setdefault("labels", {})["control-plane"] = "kubeflow-training-operator"
            obj["webhooks"] = [
                w for w in obj["webhooks"] if any(r["resources"] == [f"{s}s"] for r in w["rules"] for s in schemes)
            ]
            for webhook in obj["webhooks"]:
                webhook["clientConfig"]["service"].update(name=service, namespace=ns)
        elif kind == "Deployment":
            _place(
                obj,
                TRAINING_OPERATOR,
                _image(settings, TRAINING_OPERATOR, pin),
                args=[f"--enable-scheme={s}" for s in schemes],
            )
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": TRAINING_WEBHOOK_CERT, "namespace": ns},
        }
    )
    return Install(TRAINING_OPERATOR, pin, crds, objects=objects)


# The Service the chart puts in front of Trainer's webhooks (kubeflow/trainer charts/kubeflow-trainer@v2.2.1).
TRAINER_WEBHOOK_HOST = f"{TRAINER.release_name}-controller-manager.{TRAINER.namespace}.svc"
TORCH_RUNTIME = "torch-distributed"
TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"
TORCH_IMAGE = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"  # the image examples/pytorchjob.yaml uses


def trainer_runtimes() -> list[dict[str, Any]]:
    """The ClusterTrainingRuntime a TrainJob names (`runtimeRef`): PyTorch over a JobSet, one
    replicated job `node`. The program creates it after Trainer's webhook serves, rather than the
    chart's `runtimes.*` templates, which race that webhook on the first install (kueue#11985)."""
    return [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": TRAINING_RUNTIME_KIND,
            "metadata": {"name": TORCH_RUNTIME, "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {
                "mlPolicy": {"numNodes": 1, "torch": {}},
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                # Trainer finds the step that runs the trainer by this label.
                                "template": {
                                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                    "spec": {
                                        "template": {"spec": {"containers": [{"name": "node", "image": TORCH_IMAGE}]}}
                                    },
                                },
                            }
                        ]
                    }
                },
            },
        }
    ]
