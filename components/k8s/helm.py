"""One way to install a chart: its own Namespace and a pinned, awaited, atomic Helm release."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .charts import ChartRef
from .part import HelmRelease

# Pulumi's default of 300 s is tight for a first install on a fresh cluster (pulumi/pulumi-kubernetes#3526).
RELEASE_TIMEOUT_SECONDS = 600
# Revisions Helm keeps, as the helm CLI's default --history-max; each holds the whole chart.
RELEASE_MAX_HISTORY = 10


def namespaced_release(
    parent: pulumi.Resource,
    name: str,
    spec: HelmRelease,
    depends_on: list[pulumi.Resource] | None = None,
) -> tuple[k8s.core.v1.Namespace, k8s.helm.v3.Release]:
    """The release `spec` describes and its Namespace (`chart_namespace`, `release`), both children
    of `parent`."""
    ns = chart_namespace(parent, name, spec.namespace)
    return ns, release(
        parent,
        name,
        namespace=ns,
        release_name=spec.release,
        chart=spec.chart,
        values=spec.values,
        depends_on=depends_on,
        skip_crds=spec.skip_crds,
    )


def chart_namespace(parent: pulumi.Resource, name: str, namespace: str) -> k8s.core.v1.Namespace:
    """`<name>-ns`, a child of `parent`. An explicit Namespace rather than create_namespace: Helm
    never deletes the namespaces it creates, and metadata.name gives a release in it a dependency
    edge (pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go@v4.34.2)."""
    return k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": namespace}, opts=pulumi.ResourceOptions(parent=parent))


def repository_opts(chart: ChartRef) -> dict[str, Any] | None:
    """The release's repositoryOpts: the https repository, and the registry's sign-in when one is
    configured, its password a secret (encrypted in the state, masked in every diff). Helm signs in
    with it for an https repository and, since pulumi-kubernetes 4.27 (#3661), for an OCI registry."""
    opts: dict[str, Any] = {}
    if chart.repository:
        opts["repo"] = chart.repository
    if chart.login:
        opts["username"] = chart.login.username
        opts["password"] = pulumi.Output.secret(chart.login.password)
    return opts or None


def release(
    parent: pulumi.Resource,
    name: str,
    *,
    namespace: k8s.core.v1.Namespace,
    release_name: str,
    chart: ChartRef,
    values: dict[str, Any],
    depends_on: list[pulumi.Resource] | None = None,
    skip_crds: bool = False,
) -> k8s.helm.v3.Release:
    """`<name>-release` in `namespace`, a child of `parent`, pinned, awaited and atomic. The release
    name is explicit, since Pulumi would otherwise add a random suffix that every object of the
    chart inherits."""
    return k8s.helm.v3.Release(
        f"{name}-release",
        name=release_name,
        # The same code path for an OCI chart, a chart in an https repository, a local .tgz
        # (components/k8s/charts.py) and a chart folder the program wrote (components/operators/
        # crd_chart.py); the version is always exact (a local file is checked to hold it).
        chart=chart.chart,
        repository_opts=repository_opts(chart),
        version=chart.version,
        namespace=namespace.metadata.name,
        values=values,
        # Awaited: whatever depends on the release starts once its workloads are Ready (and its
        # CRDs Established: Helm's readiness check covers them).
        skip_await=False,
        timeout=RELEASE_TIMEOUT_SECONDS,
        # A failed upgrade rolls back to the last good revision instead of leaving a broken
        # controller behind; a failed first install is purged, so the next `up` installs cleanly;
        # cleanup_on_fail deletes what the failed upgrade created. (An interrupted `up` can still
        # leave the release pending: pulumi-kubernetes#2054 and the README.)
        atomic=True,
        cleanup_on_fail=True,
        max_history=RELEASE_MAX_HISTORY,
        # True where the program installs the chart's CRDs as a release of their own (components/operators).
        skip_crds=skip_crds,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
    )
