"""How Prometheus reads Kueue's metrics, as plain Kubernetes objects (kueue-aks:monitoring).

Kueue serves /metrics on :8443 over HTTPS and lets only subjects allowed `get` on that URL read
it (controller-runtime's WithAuthenticationAndAuthorization; kubernetes-sigs/kueue
charts/kueue/templates/rbac/metrics_reader_role.yaml@v0.19.2). The chart creates the
ClusterRole `kueue-metrics-reader` but binds it to nobody. So the scrape gets its own identity:
- a ServiceAccount `kueue-aks-metrics-scraper` and a long-lived token Secret for it, and a
  ClusterRoleBinding of the metrics-reader role to it: only this token reads the metrics;
- a ServiceMonitor that selects Kueue's metrics Service and sends that token as a bearer token.

On AKS the ServiceMonitor is managed Prometheus's own kind (group azmonitoring.coreos.com, the
Prometheus Operator CRD with another group), and it lives in kube-system with its Secret: the
add-on reads a monitor's credentials from the monitor's namespace and may read Secrets only in
kube-system (learn.microsoft.com/azure/azure-monitor/containers/prometheus-metrics-scrape-crd;
Azure/prometheus-collector otelcollector/deploy/addon-chart, role ama-metrics-secrets-reader).
With `cluster.kubeconfig` and `serviceMonitor: true` it is the Prometheus Operator's
monitoring.coreos.com ServiceMonitor, next to Kueue in kueue-system.

TLS: with Kueue's internal certificate management (the program's default) the metrics server
signs its own certificate at every start (kueue v0.19.2 cmd/kueue/main.go: no certificate is
given to the metrics server unless internal certs are off), so there is no CA to verify it
against; the scrape encrypts but skips verification, as Kueue's own chart ServiceMonitor does.
Authentication and authorization stay on: a token without the binding is refused (tests/e2e).
"""

from __future__ import annotations

from typing import Any

from ..config.names import KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..kueue.values import CONTROLLER_POD_LABELS, KUEUE_RELEASE_NAME

SCRAPER = "kueue-aks-metrics-scraper"
SCRAPER_TOKEN_SECRET = f"{SCRAPER}-token"
SERVICE_ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"
SCRAPER_TOKEN_KEY = "token"  # the key the token controller fills in a service-account-token Secret
SERVICE_MONITOR = "kueue-aks-kueue-metrics"
# The chart's names (templates/manager/auth_proxy_service.yaml, rbac/metrics_reader_role.yaml,
# _helpers.tpl "kueue.metricsService.labels"; values.yaml metricsService.ports).
METRICS_SERVICE = f"{KUEUE_RELEASE_NAME}-controller-manager-metrics-service"
METRICS_SERVICE_LABELS = {**CONTROLLER_POD_LABELS, "app.kubernetes.io/component": "metrics-service"}
METRICS_PORT_NAME = "https"
METRICS_READER_ROLE = f"{KUEUE_RELEASE_NAME}-metrics-reader"
AZURE_MONITOR_API_VERSION = "azmonitoring.coreos.com/v1"
PROMETHEUS_OPERATOR_API_VERSION = "monitoring.coreos.com/v1"
# Managed Prometheus's limits for label names and values (prometheus-metrics-scrape-crd, above).
AZURE_LABEL_LIMITS = {"labelLimit": 63, "labelNameLengthLimit": 511, "labelValueLengthLimit": 1023}
SCRAPE_INTERVAL = "30s"
LABELS = {"app.kubernetes.io/managed-by": "kueue-aks", "app.kubernetes.io/part-of": "kueue-aks-monitoring"}


def scrape_namespace(config: StackConfig) -> str:
    """Where the ServiceMonitor, the scraper and its token live."""
    return KUEUE_NAMESPACE if config.cluster.mode == "kubeconfig" else "kube-system"


def service_monitor_api_version(config: StackConfig) -> str | None:
    """The ServiceMonitor's group: managed Prometheus's on AKS, the Prometheus Operator's when
    asked for with a kubeconfig cluster, else none (only the scraper identity is created)."""
    if config.cluster.mode != "kubeconfig":
        return AZURE_MONITOR_API_VERSION
    return PROMETHEUS_OPERATOR_API_VERSION if config.monitoring.service_monitor else None


def scraper_identity(config: StackConfig) -> list[dict[str, Any]]:
    """The scraper's ServiceAccount, its token Secret and the binding that lets it read /metrics."""
    namespace = scrape_namespace(config)
    meta = {"namespace": namespace, "labels": dict(LABELS)}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SCRAPER, **meta}},
        {
            # A Secret of this type gets a non-expiring token from the token controller
            # (kubernetes.io/docs/concepts/configuration/secret#serviceaccount-token-secrets): the
            # monitor needs a Secret to name, and a TokenRequest token would expire.
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {"name": SCRAPER_TOKEN_SECRET, **meta, "annotations": {SERVICE_ACCOUNT_ANNOTATION: SCRAPER}},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SCRAPER, "labels": dict(LABELS)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": namespace}],
        },
    ]


def service_monitor(config: StackConfig) -> dict[str, Any] | None:
    api_version = service_monitor_api_version(config)
    if api_version is None:
        return None
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchNames": [KUEUE_NAMESPACE]},
        "selector": {"matchLabels": dict(METRICS_SERVICE_LABELS)},
        "endpoints": [
            {
                "port": METRICS_PORT_NAME,
                "scheme": "https",
                "path": "/metrics",
                "interval": SCRAPE_INTERVAL,
                "authorization": {
                    "type": "Bearer",
                    "credentials": {"name": SCRAPER_TOKEN_SECRET, "key": SCRAPER_TOKEN_KEY},
                },
                "tlsConfig": {"insecureSkipVerify": True},
            }
        ],
    }
    if api_version == AZURE_MONITOR_API_VERSION:
        spec |= AZURE_LABEL_LIMITS
    return {
        "apiVersion": api_version,
        "kind": "ServiceMonitor",
        "metadata": {"name": SERVICE_MONITOR, "namespace": scrape_namespace(config), "labels": dict(LABELS)},
        "spec": spec,
    }


def scrape_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Everything in the cluster that monitoring adds, in apply order; empty while it is off."""
    if not config.monitoring.enabled:
        return []
    monitor = service_monitor(config)
    return scraper_identity(config) + ([monitor] if monitor else [])
