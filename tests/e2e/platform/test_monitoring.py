"""Monitoring (issue 12) on the real Kueue controller: the program's ServiceMonitor scrapes Kueue's
metrics with the token the program binds, an unbound token is refused, and every metric the
dashboard reads is one the real scrape contains.

The dev stack turns monitoring on. Its scrape objects were applied by StackCluster.up with the
ServiceMonitor CRD in managed Prometheus's group; the metrics come from the running `kueue`
process through the metrics Service (HTTPS, authentication and authorization by the API server).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.config.names import KUEUE_NAMESPACE, POOL_LABEL
from components.config.parse import parse_config, raw_from_stack_file
from components.monitoring.dashboard import dashboard, dashboard_metric_names
from components.monitoring.scrape import (
    AZURE_MONITOR_API_VERSION,
    PROMETHEUS_OPERATOR_API_VERSION,
    scrape_objects,
    service_monitor,
)

from testbed.cluster import wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, job, wait_admitted, wait_condition
from testbed.measurements import report
from testbed.scraping import endpoint_urls, install_crd, samples, scrape, scrape_as, service_monitor_crd_for
from testbed.stack_cluster import StackCluster
from testbed.stacks import config_map

MULTIKUEUE_METRIC_PREFIX = "multikueue_"
GPU = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}


def monitor_of(cluster: StackCluster) -> dict[str, Any]:
    monitor = service_monitor(cluster.config)
    assert monitor is not None
    return monitor


def series(cluster: StackCluster) -> list[tuple[str, dict[str, str], str]]:
    status, body = scrape_as(cluster.kubectl, monitor_of(cluster))
    assert status == 200, f"scrape refused ({status}): {body[:500]}"
    return samples(body)


@pytest.fixture
def preempted(cluster: StackCluster) -> Iterator[None]:
    """A borrower admitted, then preempted by the lender reclaiming its quota, as teams do: so
    that admissions, usage, borrowing, preemptions and evictions all have series."""
    pool = cluster.config.pool("gpu")
    gpus = pool.max_count * pool.node.gpus
    cluster.kubectl.apply(
        [job("platform", "metrics-borrower", pods=gpus, requests=GPU, node_selector={POOL_LABEL: "gpu"}, run_for="10m")]
    )
    wait_admitted(cluster, "platform", "metrics-borrower")
    cluster.kubectl.apply(
        [job("research", "metrics-lender", requests=GPU, node_selector={POOL_LABEL: "gpu"}, run_for="10m")]
    )
    wait_condition(cluster, "platform", "metrics-borrower", "Evicted")
    wait_admitted(cluster, "research", "metrics-lender")
    yield
    delete_jobs(cluster, "platform", "metrics-borrower")
    delete_jobs(cluster, "research", "metrics-lender")


@on_stacks("dev")
def test_the_service_monitor_scrapes_every_queue_with_the_bound_token(cluster: StackCluster) -> None:
    monitor = monitor_of(cluster)
    assert monitor["apiVersion"] == AZURE_MONITOR_API_VERSION and monitor["metadata"]["namespace"] == "kube-system"
    # The API server accepted the program's monitor under the add-on's CRD (schema-checked).
    assert (
        cluster.kubectl.get(
            f"servicemonitors.{AZURE_MONITOR_API_VERSION.split('/')[0]}",
            monitor["metadata"]["name"],
            "-n",
            "kube-system",
        )["spec"]
        == monitor["spec"]
    )
    cluster_queues = {o["metadata"]["name"] for o in cluster.objects if o["kind"] == "ClusterQueue"}
    local_queues = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in cluster.objects if o["kind"] == "LocalQueue"
    }

    def every_queue_reported() -> tuple[bool, Any]:
        seen = series(cluster)
        cqs = {labels["cluster_queue"] for name, labels, _ in seen if name == "kueue_cluster_queue_status"}
        lqs = {(labels["namespace"], labels["name"]) for name, labels, _ in seen if name == "kueue_local_queue_status"}
        quota = {labels["cluster_queue"] for name, labels, _ in seen if name == "kueue_cluster_queue_nominal_quota"}
        missing = {
            "ClusterQueue": cluster_queues - cqs,
            "LocalQueue": local_queues - lqs,
            "nominal quota": cluster_queues - quota,
        }
        return not any(missing.values()), missing

    # LocalQueue series prove the gate and the manager config agree; quota series that the
    # manager config's enableClusterQueueResources is on.
    wait_for("a ClusterQueue, LocalQueue and quota series for every queue of the stack", every_queue_reported, 30)


@on_stacks("dev")
def test_a_token_without_the_binding_is_refused(cluster: StackCluster) -> None:
    cluster.kubectl.run("create", "serviceaccount", "unbound-reader", "-n", "default", check=False)
    token = cluster.kubectl.run("create", "token", "unbound-reader", "-n", "default").stdout.strip()
    monitor = monitor_of(cluster)
    (url,) = endpoint_urls(cluster.kubectl, monitor)
    tls = monitor["spec"]["endpoints"][0]["tlsConfig"]
    status, body = scrape(url, token, tls)
    assert status == 403, (status, body[:300])  # authenticated, not authorized
    status, body = scrape(url, None, tls)
    assert status == 401, (status, body[:300])  # no token: not even authenticated


@on_stacks("dev")
def test_every_dashboard_metric_is_in_the_real_scrape(cluster: StackCluster, preempted: None) -> None:
    # A MultiKueue manager's metrics are scraped on a manager (test_multikueue.py).
    wanted = {name for name in dashboard_metric_names(dashboard()) if not name.startswith(MULTIKUEUE_METRIC_PREFIX)}

    def all_exported() -> tuple[bool, Any]:
        exported = {name for name, _, _ in series(cluster)}
        return wanted <= exported, sorted(wanted - exported)

    wait_for("every metric the dashboard queries to be exported by Kueue", all_exported, 30)
    seen = series(cluster)
    reasons = {
        labels.get("reason")
        for name, labels, _ in seen
        if name == "kueue_preempted_workloads_total" and labels.get("preempting_cluster_queue") == "research"
    }
    assert reasons & {"InCohortReclamation", "InCohortFairSharing"}, reasons
    report(
        f"e2e[dev]: the dashboard's {len(wanted)} metrics all in Kueue's scrape "
        f"({len({n for n, _, _ in seen})} metric names, {len(seen)} samples)"
    )


@on_stacks("dev")
def test_kubeconfig_mode_service_monitor_is_valid_for_the_prometheus_operator(cluster: StackCluster) -> None:
    raw, location = raw_from_stack_file({"config": config_map("dev")})
    raw["cluster"] = {"kubeconfig": cluster.cluster.kubeconfig.read_text()}
    raw["monitoring"] = {"enabled": True, "serviceMonitor": True}
    config = parse_config(raw, stack="dev", location=location)
    objects = scrape_objects(config)
    monitor = objects[-1]
    assert (monitor["apiVersion"], monitor["metadata"]["namespace"]) == (
        PROMETHEUS_OPERATOR_API_VERSION,
        KUEUE_NAMESPACE,
    )
    install_crd(cluster.kubectl, service_monitor_crd_for(PROMETHEUS_OPERATOR_API_VERSION))
    # A server-side dry run: the API server checks every object, the monitor against the Prometheus
    # Operator's schema, and stores nothing (the stack's own objects share the binding's name).
    done = cluster.kubectl.apply(objects, check=False, dry_run=True)
    assert done.returncode == 0, done.stderr
    assert (
        f"servicemonitor.{PROMETHEUS_OPERATOR_API_VERSION.split('/')[0]}/{monitor['metadata']['name']} serverside-applied"
        in done.stdout
    ), done.stdout
    # Its endpoint settings are the AKS monitor's, which the scrape tests above show working.
    assert monitor["spec"]["endpoints"] == monitor_of(cluster)["spec"]["endpoints"]
