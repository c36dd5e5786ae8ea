"""The stack's in-cluster setup as files a reviewer can read and an admin can apply by hand, in the
program's order (pure apart from writing files; no Pulumi import).

`pulumi up` registers every object after what it needs; `kubectl apply -f DIR` has no such graph,
and it reads the API server's kinds once, when it starts, so a custom resource cannot be applied in
the same pass as its CRD. The objects therefore go to two folders, with the Helm releases between:

1. `1-before-releases/`: every namespace (teams', the releases' and the operators'), the admission
   policies (the role guard must exist before Kueue's chart is installed), the operators' CRDs (Kueue
   sets up a job kind's controller at start-up only if the kind is served) and the manifest-installed
   operators' objects. Only built-in kinds and CRDs.
2. the Helm releases (`helm/`), in the program's order, each awaited;
3. `2-after-releases/`: every object of a kind a CRD serves (Kueue's objects, Trainer's runtime,
   the ServiceMonitor), once the releases (or, for the ServiceMonitor, Prometheus) serve them.

Within a folder, files are numbered in apply order: a namespace before the objects in it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config import KUEUE_NAMESPACE, StackConfig
from ..gpu.chart import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_RELEASE_NAME
from ..gpu.values import device_plugin_chart, device_plugin_values
from ..k8s.charts import ChartRef
from ..kueue.values import KUEUE_RELEASE_NAME, extension_args, kueue_chart, kueue_helm_values
from ..operators.installs import installs

BEFORE_RELEASES = "1-before-releases"
AFTER_RELEASES = "2-after-releases"
HELM_FOLDER = "helm"

# API groups every Kubernetes API server serves without a CRD (kubernetes.io/docs/reference/
# generated/kubernetes-api): objects of other groups wait until a release has installed their CRD.
BUILT_IN_GROUPS = frozenset({
    "", "apps", "batch", "policy", "autoscaling", "rbac.authorization.k8s.io", "scheduling.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "networking.k8s.io", "storage.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "certificates.k8s.io",
})


def api_group(obj: dict[str, Any]) -> str:
    version = obj["apiVersion"]
    return version.split("/")[0] if "/" in version else ""


def needs_a_release(obj: dict[str, Any]) -> bool:
    """Whether the object's kind is served only once a CRD is installed."""
    return api_group(obj) not in BUILT_IN_GROUPS


@dataclass(frozen=True)
class HelmStep:
    """One Helm release as the program installs it (components/k8s/helm.py: atomic, awaited)."""

    release: str
    namespace: str
    chart: ChartRef
    values_file: str  # in helm/
    skip_crds: bool  # the stack owns the chart's CRDs (they are in 1-before-releases/)

    def command(self, folder: Path) -> str:
        words = ["helm", "upgrade", "--install", self.release, self.chart.chart, "--version", self.chart.version]
        if self.chart.repository:
            words += ["--repo", self.chart.repository]
        words += ["--namespace", self.namespace, "--values", str(folder / HELM_FOLDER / self.values_file),
                  "--atomic", "--wait"]
        if self.skip_crds:
            words.append("--skip-crds")
        return shlex.join(words)


def helm_steps(config: StackConfig) -> list[HelmStep]:
    """The releases in the program's order: the operators' (after their CRDs), Kueue's (after every
    operator's CRDs), the device plugin's."""
    steps = [HelmStep(i.operator.release_name, i.namespace, i.chart, f"{i.operator.release_name}-values.yaml", True)
             for i in installs(config) if i.chart]
    if config.kueue.extension is None:
        steps.append(HelmStep(KUEUE_RELEASE_NAME, KUEUE_NAMESPACE, kueue_chart(config), "kueue-values.yaml", False))
    if config.has_gpu:
        steps.append(HelmStep(DEVICE_PLUGIN_RELEASE_NAME, DEVICE_PLUGIN_NAMESPACE, device_plugin_chart(config),
                              "nvidia-device-plugin-values.yaml", False))
    return steps


def helm_values(config: StackConfig) -> dict[str, dict[str, Any]]:
    """helm/'s files: each release's values; with AKS's managed extension, no Kueue release but
    its Azure resource's arguments."""
    values = ({"kueue-values.yaml": kueue_helm_values(config)} if config.kueue.extension is None
              else {"kueue-aks-extension.yaml": extension_args(config)})
    if config.has_gpu:
        values["nvidia-device-plugin-values.yaml"] = device_plugin_values(config)
    values |= {f"{i.operator.release_name}-values.yaml": i.values for i in installs(config) if i.chart}
    return values


def release_namespaces(config: StackConfig) -> list[dict[str, Any]]:
    """The namespaces the program makes for its releases (an explicit Namespace each, so Helm's
    --create-namespace is not needed). AKS's extension makes Kueue's itself."""
    names = [i.namespace for i in installs(config) if i.chart]
    if config.kueue.extension is None:
        names.append(KUEUE_NAMESPACE)
    if config.has_gpu:
        names.append(DEVICE_PLUGIN_NAMESPACE)
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in dict.fromkeys(names)]


def stages(config: StackConfig, objects: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """`objects` (in the program's order) split into the two folders; every namespace first."""
    everything = [*release_namespaces(config), *objects]
    namespaces = {o["metadata"]["name"]: o for o in everything if o["kind"] == "Namespace"}
    rest = [o for o in everything if o["kind"] != "Namespace"]
    return {BEFORE_RELEASES: [*namespaces.values(), *(o for o in rest if not needs_a_release(o))],
            AFTER_RELEASES: [o for o in rest if needs_a_release(o)]}


def file_name(index: int, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    name = f"{meta['namespace']}-{meta['name']}" if "namespace" in meta else meta["name"]
    return f"{index:03d}-{obj['kind'].lower()}-{name}.yaml"


def apply_steps(config: StackConfig, folder: Path) -> list[str]:
    """What to run, in order, to apply the folder as `pulumi up` would."""
    steps = [f"kubectl apply --server-side -f {shlex.quote(str(folder / BEFORE_RELEASES))}"]
    if config.kueue.extension is not None:
        steps.append(f"create AKS's managed Kueue extension with the arguments in "
                     f"{folder / HELM_FOLDER / 'kueue-aks-extension.yaml'}, and wait for its controller")
    steps += [s.command(folder) for s in helm_steps(config)]
    steps.append(f"kubectl apply --server-side -f {shlex.quote(str(folder / AFTER_RELEASES))}")
    return steps


def served_elsewhere(config: StackConfig, objects: Sequence[dict[str, Any]]) -> list[str]:
    """The kinds in 2-after-releases/ whose CRD neither the folder nor a release brings (e.g. a
    ServiceMonitor, whose CRD comes with Azure's managed Prometheus or the Prometheus Operator)."""
    staged = stages(config, objects)
    served = {"kueue.x-k8s.io"} | {o["spec"]["group"] for o in staged[BEFORE_RELEASES]
                                   if o["kind"] == "CustomResourceDefinition"}
    return sorted({f"{o['kind']} ({o['apiVersion']})" for o in staged[AFTER_RELEASES] if api_group(o) not in served})


def write_manifests(config: StackConfig, objects: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """The two folders (one file per object), helm/ and ORDER.md, which lists apply_steps."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for folder, staged in stages(config, objects).items():
        (out / folder).mkdir(exist_ok=True)
        for i, obj in enumerate(staged, start=1):
            path = out / folder / file_name(i, obj)
            path.write_text(yaml.safe_dump(obj, sort_keys=False))
            written.append(path)
    (out / HELM_FOLDER).mkdir(exist_ok=True)
    for filename, doc in helm_values(config).items():
        path = out / HELM_FOLDER / filename
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        written.append(path)
    order = out / "ORDER.md"
    order.write_text(order_markdown(config, objects, out))
    written.append(order)
    return written


def order_markdown(config: StackConfig, objects: Sequence[dict[str, Any]], out: Path) -> str:
    steps = "".join(f"{n}. `{step}`\n" for n, step in enumerate(apply_steps(config, out), start=1))
    external = served_elsewhere(config, objects)
    note = (f"\nThe last step also needs the CRDs of {', '.join(external)}, which this stack does not "
            f"install: they come with the cluster's add-ons.\n" if external else "")
    return f"Apply in this order, each step once the one before has finished:\n\n{steps}{note}"
