"""`kueue-aks:monitoring`: Kueue's metrics in Azure Monitor and Grafana, or a ServiceMonitor in
kubeconfig mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checks import Problems, Reader, group_ids
from .cluster import ClusterSettings
from .keys import MONITORING
from .kueue import KueueSettings


@dataclass(frozen=True)
class MonitoringSettings:
    """Kueue's metrics collected and shown (docs/monitoring.md); nothing is created while off."""

    enabled: bool = False
    workspace_id: str | None = None  # an existing Azure Monitor workspace; default: the stack creates one
    grafana_id: str | None = None  # an existing Azure Managed Grafana; default: the stack creates one
    service_monitor: bool = False  # kubeconfig mode: a Prometheus Operator ServiceMonitor
    grafana_admin_group_ids: tuple[str, ...] = ()  # Grafana Admin on a new Grafana; default the cluster admins


def parse_monitoring(
    problems: Problems, raw: Any, cluster: ClusterSettings, kueue: KueueSettings
) -> MonitoringSettings:
    r = Reader(problems, MONITORING.name, raw, MONITORING)
    monitoring = MonitoringSettings(
        enabled=r.get("enabled", False),
        workspace_id=r.get("azureMonitorWorkspaceId", None),
        grafana_id=r.get("grafanaId", None),
        service_monitor=r.get("serviceMonitor", False),
        grafana_admin_group_ids=r.get(
            "grafanaAdminGroupObjectIds", cluster.admin_group_object_ids, group_ids(problems)
        ),
    )
    if not monitoring.enabled:
        for key in r.value:
            if key != "enabled":
                problems.add(
                    r.at(key), "has no effect while monitoring.enabled is false; set enabled: true or remove it"
                )
        return MonitoringSettings()
    if "grafanaId" in r.value and "grafanaAdminGroupObjectIds" in r.value:
        problems.add(
            r.at("grafanaAdminGroupObjectIds"),
            "is for a Grafana the stack creates; the owners of the existing one (grafanaId) manage who administers it",
        )
    if cluster.mode == "kubeconfig":
        for key in ("azureMonitorWorkspaceId", "grafanaId", "grafanaAdminGroupObjectIds"):
            if key in r.value:
                problems.add(
                    r.at(key),
                    "is Azure monitoring; a cluster.kubeconfig stack creates nothing in Azure. "
                    "Use serviceMonitor: true with a Prometheus Operator in the cluster",
                )
    elif cluster.mode == "existing" and not monitoring.workspace_id and "azureMonitorWorkspaceId" not in r.value:
        # The add-on and its data collection rule belong to the cluster's owner; the program
        # cannot turn them on for a cluster it does not manage (docs/monitoring.md).
        problems.add(
            r.at("azureMonitorWorkspaceId"),
            "is required with cluster.existing: the Azure Monitor workspace "
            "the cluster's managed Prometheus add-on sends to (az aks update --enable-azure-monitor-metrics "
            "--azure-monitor-workspace-resource-id <id>)",
        )
    if cluster.mode != "kubeconfig" and "serviceMonitor" in r.value:
        problems.add(
            r.at("serviceMonitor"),
            "is for cluster.kubeconfig stacks; on AKS the program creates the "
            "managed Prometheus add-on's own scrape object",
        )
    if not kueue.feature_gates.get("LocalQueueMetrics", kueue.release.gates["LocalQueueMetrics"].default):
        problems.add(
            r.at("enabled"),
            "needs Kueue's LocalQueueMetrics feature gate: the dashboard's team variable and "
            "LocalQueue panels read its series; enable the gate in kueue.featureGates",
        )
    return monitoring
