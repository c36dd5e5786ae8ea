"""The stack's in-cluster setup as files a reviewer can read and an admin can apply by hand: the
parts of components/assembly.py, which the program builds, in the program's order (pure apart from
writing files; no Pulumi import).

`pulumi up` registers every object after what it needs; `kubectl apply -f DIR` has no such graph,
and it reads the API server's kinds once, when it starts, so a custom resource cannot be applied in
the same pass as its CRD. The objects therefore go to two folders, with the Helm releases between:

1. `1-before-releases/`: every namespace (teams', the releases' and the operators'), the admission
   policies (the role guard must exist before Kueue's chart is installed), the operators' CRDs (Kueue
   sets up a job kind's controller at start-up only if the kind is served) and the manifest-installed
   operators' objects. Only built-in kinds and CRDs.
2. the Helm releases (`helm/`), in the program's order, each awaited (an operator's CRDs, which
   the program installs as a chart of their own, are in 1-before-releases/ as plain objects);
3. `2-after-releases/`: every object of a kind a CRD serves (Kueue's objects, Trainer's runtime,
   the ServiceMonitor), once the releases (or, for the ServiceMonitor, Prometheus) serve them.

A MultiKueue manager's kubeconfig Secrets are left out: they hold its workers' credentials.

Within a folder, files are numbered in apply order: a namespace before the objects in it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config.stack import StackConfig
from ..k8s import documents
from ..k8s.part import HelmRelease, Part
from ..kueue.values import extension_args

BEFORE_RELEASES = "1-before-releases"
AFTER_RELEASES = "2-after-releases"
HELM_FOLDER = "helm"

# API groups every Kubernetes API server serves without a CRD (kubernetes.io/docs/reference/
# generated/kubernetes-api): objects of other groups wait until a release has installed their CRD.
BUILT_IN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "certificates.k8s.io",
    }
)


def api_group(obj: dict[str, Any]) -> str:
    version = obj["apiVersion"]
    return version.split("/")[0] if "/" in version else ""


def needs_a_release(obj: dict[str, Any]) -> bool:
    """Whether the object's kind is served only once a CRD is installed."""
    return api_group(obj) not in BUILT_IN_GROUPS


EXTENSION_FILE = "kueue-aks-extension.yaml"  # in helm/: AKS's extension's arguments instead of Kueue's values


def values_file(release: HelmRelease) -> str:  # in helm/
    return f"{release.release}-values.yaml"


def helm_command(release: HelmRelease, folder: Path) -> str:
    """The release as the program installs it (components/k8s/helm.py: atomic, awaited)."""
    chart = release.chart
    words = ["helm", "upgrade", "--install", release.release, chart.chart, "--version", chart.version]
    if chart.repository:
        words += ["--repo", chart.repository]
    words += [
        "--namespace",
        release.namespace,
        "--values",
        str(folder / HELM_FOLDER / values_file(release)),
        "--atomic",
        "--wait",
    ]
    if release.skip_crds:
        words.append("--skip-crds")
    if chart.login:
        # The password stays out of the folder: the shell reads it from a variable the reader sets.
        words += ["--username", chart.login.username]
        return shlex.join(words) + ' --password "$HELM_REGISTRY_PASSWORD"'
    return shlex.join(words)


def helm_files(config: StackConfig, steps: Sequence[HelmRelease]) -> dict[str, dict[str, Any]]:
    """helm/'s files: each release's values; with AKS's managed extension, its Azure resource's
    arguments too."""
    files = {values_file(s): s.values for s in steps}
    if config.kueue.extension is not None:
        files[EXTENSION_FILE] = extension_args(config)
    return files


def stages(objects: Sequence[dict[str, Any]], steps: Sequence[HelmRelease]) -> dict[str, list[dict[str, Any]]]:
    """`objects` (in the program's order) and the releases' namespaces split into the two
    folders; every namespace first."""
    releases = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.namespace}} for s in steps]
    everything = [*releases, *objects]
    namespaces = {o["metadata"]["name"]: o for o in everything if o["kind"] == "Namespace"}
    rest = [o for o in everything if o["kind"] != "Namespace"]
    return {
        BEFORE_RELEASES: [*namespaces.values(), *(o for o in rest if not needs_a_release(o))],
        AFTER_RELEASES: [o for o in rest if needs_a_release(o)],
    }


def file_name(index: int, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    name = f"{meta['namespace']}-{meta['name']}" if "namespace" in meta else meta["name"]
    return f"{index:03d}-{obj['kind'].lower()}-{name}.yaml"


def apply_steps(config: StackConfig, steps: Sequence[HelmRelease], folder: Path) -> list[str]:
    """What to run, in order, to apply the folder as `pulumi up` would."""
    commands = [f"kubectl apply --server-side -f {shlex.quote(str(folder / BEFORE_RELEASES))}"]
    if config.kueue.extension is not None:
        commands.append(
            f"create AKS's managed Kueue extension with the arguments in "
            f"{folder / HELM_FOLDER / EXTENSION_FILE}, and wait for its controller"
        )
    commands += [helm_command(s, folder) for s in steps]
    commands.append(f"kubectl apply --server-side -f {shlex.quote(str(folder / AFTER_RELEASES))}")
    return commands


def served_elsewhere(staged: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The kinds in 2-after-releases/ whose CRD neither the folder nor a release brings (e.g. a
    ServiceMonitor, whose CRD comes with Azure's managed Prometheus or the Prometheus Operator)."""
    served = {"kueue.x-k8s.io"} | {
        o["spec"]["group"] for o in staged[BEFORE_RELEASES] if o["kind"] == "CustomResourceDefinition"
    }
    return sorted({f"{o['kind']} ({o['apiVersion']})" for o in staged[AFTER_RELEASES] if api_group(o) not in served})


def write_manifests(config: StackConfig, parts: Sequence[Part], out: Path) -> list[Path]:
    """The stack's parts (components/assembly.py) as the two folders (one file per object), helm/
    and ORDER.md, which lists apply_steps."""
    objects = [o for part in parts for o in part.objects]
    steps = [r for part in parts for r in part.releases]
    staged = stages(objects, steps)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for folder, folder_objects in staged.items():
        (out / folder).mkdir(exist_ok=True)
        for i, obj in enumerate(folder_objects, start=1):
            path = out / folder / file_name(i, obj)
            path.write_text(documents.dump(obj))
            written.append(path)
    (out / HELM_FOLDER).mkdir(exist_ok=True)
    for filename, doc in helm_files(config, steps).items():
        path = out / HELM_FOLDER / filename
        path.write_text(documents.dump(doc))
        written.append(path)
    order = out / "ORDER.md"
    order.write_text(order_markdown(apply_steps(config, steps, out), served_elsewhere(staged)))
    written.append(order)
    return written


def order_markdown(commands: Sequence[str], external: Sequence[str]) -> str:
    listed = "".join(f"{n}. `{command}`\n" for n, command in enumerate(commands, start=1))
    note = (
        f"\nThe last step also needs the CRDs of {', '.join(external)}, which this stack does not "
        f"install: they come with the cluster's add-ons.\n"
        if external
        else ""
    )
    return f"Apply in this order, each step once the one before has finished:\n\n{listed}{note}"
