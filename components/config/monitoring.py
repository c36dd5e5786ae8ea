"""`kueue-aks:monitoring`: Kueue's metrics in Azure Monitor and Grafana, or a ServiceMonitor in
kubeconfig mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .checks import Checks, Problems, Reader, group_ids
from .cluster import ClusterSettings
from .kueue import KueueSettings
from .names import NAMESPACE

# Azure resource IDs (learn.microsoft.com/azure/azure-resource-manager/templates/
# template-functions-resource#resourceid); resource provider and type names compare without case.
_RESOURCE_ID = (
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w._()]{1,90}/providers/%s/[A-Za-z0-9][A-Za-z0-9-]{0,62}$"
)


_WORKSPACE_ID = re.compile(_RESOURCE_ID % r"Microsoft\.Monitor/accounts", re.IGNORECASE)


_GRAFANA_ID = re.compile(_RESOURCE_ID % r"Microsoft\.Dashboard/grafana", re.IGNORECASE)


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
    c = Checks(problems)
    r = Reader(
        problems,
        f"{NAMESPACE}:monitoring",
        raw,
        ["enabled", "azureMonitorWorkspaceId", "grafanaId", "grafanaAdminGroupObjectIds", "serviceMonitor"],
    )
    example = "/subscriptions/<id>/resourceGroups/<group>/providers/"
    monitoring = MonitoringSettings(
        enabled=r.get("enabled", False, c.boolean),
        workspace_id=r.get(
            "azureMonitorWorkspaceId",
            None,
            lambda p, v: c.string(
                p,
                v,
                pattern=_WORKSPACE_ID,
                hint=f" (an Azure Monitor workspace's resource ID, {example}Microsoft.Monitor/accounts/<name>)",
            ),
        ),
        grafana_id=r.get(
            "grafanaId",
            None,
            lambda p, v: c.string(
                p,
                v,
                pattern=_GRAFANA_ID,
                hint=f" (an Azure Managed Grafana's resource ID, {example}Microsoft.Dashboard/grafana/<name>)",
            ),
        ),
        service_monitor=r.get("serviceMonitor", False, c.boolean),
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
