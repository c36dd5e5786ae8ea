"""Monitoring in the stack config (components/config/monitoring.py): off by default, existing Azure
resources by ID, a ServiceMonitor in kubeconfig mode, the gate it needs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.config.monitoring import MonitoringSettings
from components.config.refusals import MINIMAL
from testbed.config_errors import refused
from testbed.stacks import parse_raw, with_changes


WORKSPACE_ID = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Monitor/accounts/amw-1"
)


GRAFANA_ID = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Dashboard/grafana/g-1"
)


KUBECONFIG = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://k"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
)


def test_monitoring_is_off_by_default_and_the_dev_stack_turns_it_on(dev_config: Any) -> None:
    assert parse_raw(MINIMAL).monitoring == MonitoringSettings()
    assert not MonitoringSettings().enabled
    assert dev_config.monitoring == MonitoringSettings(enabled=True)


def test_monitoring_takes_existing_azure_resources_by_id() -> None:
    cfg = parse_raw(
        with_changes(monitoring={"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID, "grafanaId": GRAFANA_ID})
    )
    assert cfg.monitoring == MonitoringSettings(enabled=True, workspace_id=WORKSPACE_ID, grafana_id=GRAFANA_ID)


def test_kubeconfig_mode_monitors_with_a_service_monitor() -> None:
    cfg = parse_raw(
        with_changes(cluster={"kubeconfig": KUBECONFIG}, monitoring={"enabled": True, "serviceMonitor": True}),
        location=None,
    )
    assert cfg.monitoring == MonitoringSettings(enabled=True, service_monitor=True)


@pytest.mark.parametrize(
    ("monitoring", "cluster", "expected"),
    [
        ({"enabled": "yes"}, {}, "kueue-aks:monitoring.enabled: must be true or false"),
        ({"enable": True}, {}, "kueue-aks:monitoring.enable: unknown key (did you mean 'enabled'?)"),
        (
            {"enabled": True, "azureMonitorWorkspaceId": GRAFANA_ID},
            {},
            "kueue-aks:monitoring.azureMonitorWorkspaceId: '/subscriptions/",
        ),
        (
            {"enabled": True, "grafanaId": "g-1"},
            {},
            "kueue-aks:monitoring.grafanaId: 'g-1' is not allowed (an Azure Managed Grafana's resource ID",
        ),
        (
            {"grafanaId": GRAFANA_ID},
            {},
            "kueue-aks:monitoring.grafanaId: has no effect while monitoring.enabled is false",
        ),
        (
            {"enabled": True, "serviceMonitor": True},
            {},
            "kueue-aks:monitoring.serviceMonitor: is for cluster.kubeconfig stacks",
        ),
        (
            {"enabled": True, "grafanaId": GRAFANA_ID},
            {"kubeconfig": KUBECONFIG},
            "kueue-aks:monitoring.grafanaId: is Azure monitoring; a cluster.kubeconfig stack creates nothing in Azure",
        ),
        (
            {"enabled": True, "grafanaId": GRAFANA_ID, "grafanaAdminGroupObjectIds": []},
            {},
            "kueue-aks:monitoring.grafanaAdminGroupObjectIds: is for a Grafana the stack creates",
        ),
        (
            {"enabled": True, "grafanaAdminGroupObjectIds": ["admins"]},
            {},
            "kueue-aks:monitoring.grafanaAdminGroupObjectIds[0]: 'admins' is not allowed (an Entra ID group's object ID",
        ),
        (
            {"enabled": True},
            {"existing": {"resourceGroup": "rg", "name": "aks"}},
            "kueue-aks:monitoring.azureMonitorWorkspaceId: is required with cluster.existing",
        ),
    ],
)
def test_bad_monitoring_names_the_key_and_what_is_allowed(monitoring: Any, cluster: Any, expected: str) -> None:
    problems = refused(
        parse_raw, with_changes(cluster=cluster, monitoring=monitoring), None if cluster else "eastus2"
    ).lines
    assert any(p.startswith(expected) for p in problems), problems


def test_grafana_admins_default_to_the_cluster_admins() -> None:
    group, other = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
    cluster = {"adminGroupObjectIds": [group]}
    assert parse_raw(
        with_changes(cluster=cluster, monitoring={"enabled": True})
    ).monitoring.grafana_admin_group_ids == (group,)
    own = parse_raw(with_changes(cluster=cluster, monitoring={"enabled": True, "grafanaAdminGroupObjectIds": [other]}))
    assert own.monitoring.grafana_admin_group_ids == (other,)
    assert parse_raw(with_changes(cluster=cluster)).monitoring == MonitoringSettings()  # off: nothing carried over


def test_monitoring_needs_the_local_queue_metrics_gate() -> None:
    problems = refused(
        parse_raw, with_changes(kueue={"featureGates": {"LocalQueueMetrics": False}}, monitoring={"enabled": True})
    ).lines
    assert problems == [
        "kueue-aks:monitoring.enabled: needs Kueue's LocalQueueMetrics feature gate: the dashboard's team "
        "variable and LocalQueue panels read its series; enable the gate in kueue.featureGates"
    ]
    assert (
        parse_raw(with_changes(kueue={"featureGates": {"LocalQueueMetrics": False}})).monitoring == MonitoringSettings()
    )
