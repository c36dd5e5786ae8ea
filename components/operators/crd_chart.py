"""Each operator's CRDs as a Helm chart of their own, written by the program (pure apart from
writing its files; no Pulumi import).

Why a chart: the CRDs are 4.2 MB of schema for the dev stack's operators. As Pulumi resources
every byte travels through the SDK and the engine as properties, property by property, on every
preview (docs/performance.md). As the templates of a chart that a Helm release installs, the
engine sees only the chart's path and version, and the provider reads the files itself. Helm
upgrades and deletes what a chart's templates hold (not what its `crds/` folder holds, which
Helm installs once and never touches again), so the stack still owns its CRDs; this is how
Kueue's own chart ships its CRDs.

The chart's version carries a digest of the CRDs, so a change of any byte is a change of the
release's `version` input, seen in a preview and applied by `up`. The files live in
`.kueue-aks/charts/` under the project directory, where Pulumi runs both the program and the
kubernetes provider, so the release's `chart` input is the same relative path on every machine
(`KUEUE_AKS_CHARTS_DIR` puts them elsewhere, as the unit tests do).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHARTS_ENV = "KUEUE_AKS_CHARTS_DIR"
RELEASE_SUFFIX = "-crds"
DEFAULT_CHARTS_DIR = ".kueue-aks/charts"
# Helm's files under files/ are not templates, so `{{` in a CRD's descriptions stays text; the one
# template prints each as it is, in file-name order.
TEMPLATE = """{{- range $path, $_ := .Files.Glob "files/*.json" }}
---
{{ $.Files.Get $path }}
{{- end }}
"""
# Helm's marks of a resource a release owns; Helm adopts an existing object that carries them
# (helm.sh docs, "Helm 3.2: adopt existing resources"), which `components.operators.migrate` relies on.
MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
RELEASE_NAME_ANNOTATION = "meta.helm.sh/release-name"
RELEASE_NAMESPACE_ANNOTATION = "meta.helm.sh/release-namespace"


@dataclass(frozen=True)
class CrdChart:
    name: str  # the chart's and the release's name, e.g. "kuberay-crds"
    version: str  # the operator's version and the digest of its CRDs, e.g. "1.6.2+crds.3f2a…"
    files: Mapping[str, str]  # path in the chart -> text

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


def release_name(operator_key: str) -> str:
    """`mpiOperator` -> `mpi-operator-crds`."""
    return re.sub(r"(?<!^)([A-Z])", r"-\1", operator_key).lower() + RELEASE_SUFFIX


def crd_chart(operator_key: str, version: str, crds: list[dict[str, Any]]) -> CrdChart:
    """The chart of one operator's CRDs, each file the CRD exactly as its module ships it."""
    files = {
        f"files/{crd['metadata']['name']}.json": json.dumps(crd, sort_keys=True, separators=(",", ":")) + "\n"
        for crd in crds
    }
    digest = hashlib.sha256("".join(f"{p}\n{files[p]}" for p in sorted(files)).encode()).hexdigest()[:16]
    name = release_name(operator_key)
    chart_version = f"{version}+crds.{digest}"
    meta = {
        "apiVersion": "v2",
        "name": name,
        "version": chart_version,
        "appVersion": version,
        "type": "application",
        "description": f"The CustomResourceDefinitions of {operator_key} {version}, written by kueue-aks.",
    }
    return CrdChart(
        name, chart_version, {"Chart.yaml": json.dumps(meta, indent=2) + "\n", "templates/crds.yaml": TEMPLATE, **files}
    )


def charts_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(CHARTS_ENV) or DEFAULT_CHARTS_DIR)


def write_chart(chart: CrdChart, root: Path) -> Path:
    """The chart's folder under `root`, written once: its name holds the digest, so a folder that
    exists holds these files. Written beside it and renamed, so a reader never sees half a chart."""
    target = root / chart.dirname
    if (target / "Chart.yaml").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{chart.name}-", dir=root))
    for path, text in chart.files.items():
        (staging / path).parent.mkdir(parents=True, exist_ok=True)
        (staging / path).write_text(text)
    try:
        staging.rename(target)
    except OSError:  # another run wrote it first
        if not (target / "Chart.yaml").is_file():
            raise
        shutil.rmtree(staging)
    return target
