"""What one component of the program creates in a cluster, as plain data: its objects and its Helm
releases. components/assembly.py lists a stack's parts; each component registers its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .charts import ChartRef


@dataclass(frozen=True)
class HelmRelease:
    """One Helm release as the program installs it (components/k8s/helm.py: atomic, awaited)."""

    release: str
    namespace: str  # the program makes it (an explicit Namespace), so Helm need not
    chart: ChartRef
    values: dict[str, Any]
    skip_crds: bool  # the stack owns the chart's CRDs (an operator's: a chart of their own)


@dataclass(frozen=True)
class Part:
    """What one of the program's components creates in the cluster."""

    name: str  # the component's resource name in the program
    type: str  # its Pulumi type token
    objects: tuple[dict[str, Any], ...]  # in apply order; an operator's CRDs among them
    releases: tuple[HelmRelease, ...] = ()
