"""Monitoring (kueue-aks:monitoring): Kueue's metrics in managed Prometheus, shown in Managed Grafana.

- The whole program under mocks in each mode: feature off (nothing added), create (add-on, Azure
  Monitor workspace, data collection endpoint/rule/association, Grafana, role assignments, scrape
  objects), create with an existing workspace and Grafana, an existing cluster (the add-on check)
  and a kubeconfig cluster (Prometheus Operator ServiceMonitor, no Azure at all).
- The pure builders: components.monitoring.scrape and the helpers of components.monitoring.component, plus
  check_prometheus_addon of components.cluster.component; the scrape objects are checked against the pinned
  Kueue chart's own names.
"""

from __future__ import annotations

import re

import copy
import tarfile
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
import yaml

from components.cluster.component import ExistingClusterMismatch, azure_monitor_profile, check_prometheus_addon
from components.config.cluster import ExistingCluster
from components.config.monitoring import MonitoringSettings
from components.config.stack import StackConfig
from components.monitoring.component import (
    GRAFANA_ADMIN_ROLE,
    MONITORING_DATA_READER_ROLE,
    check_subscription,
    data_collection_rule,
    resource_id_parts,
)
from components.monitoring.scrape import (
    AZURE_MONITOR_API_VERSION,
    METRICS_PORT_NAME,
    METRICS_READER_ROLE,
    METRICS_SERVICE,
    METRICS_SERVICE_LABELS,
    PROMETHEUS_OPERATOR_API_VERSION,
    scrape_objects,
    service_monitor,
)
from testbed.harness import (
    DEPLOYER_OBJECT_ID,
    GRAFANA_PRINCIPAL,
    K8S_PROVIDER,
    RELEASE,
    SUBSCRIPTION,
    ProgramMocks,
    ProgramRun,
    Registration,
    azure_registrations,
    kubernetes_objects,
    provider_urn,
    run_program,
)
from testbed.paths import CHART_TGZ
from testbed.stacks import (
    EXISTING,
    GRAFANA_ID,
    WORKSPACE_ID,
    kubeconfig_stack,
    load_stack,
    stack_file_config,
    with_cluster,
)

MONITORING = "kueue-aks:monitoring:Monitoring"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
DCE = "azure-native:monitor:DataCollectionEndpoint"
DCR = "azure-native:monitor:DataCollectionRule"
DCRA = "azure-native:monitor:DataCollectionRuleAssociation"
GRAFANA = "azure-native:dashboard:Grafana"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
SECRET = "kubernetes:core/v1:Secret"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
AZ_SERVICE_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:ServiceMonitor"
OPERATOR_SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
NAMESPACE = "kubernetes:core/v1:Namespace"
GET_WORKSPACE = "azure-native:monitor:getAzureMonitorWorkspace"
GET_GRAFANA = "azure-native:dashboard:getGrafana"
GET_CLUSTER = "azure-native:containerservice:getManagedCluster"
# Resource types only monitoring creates (the cluster modes create none of them).
MONITORING_AZURE_TYPES = ("azure-native:monitor:", "azure-native:dashboard:", ROLE_ASSIGNMENT)
MONITORING_EXPORTS = ("azureMonitorWorkspaceId", "prometheusQueryEndpoint", "grafanaName", "grafanaUrl")

ADMIN_GROUPS = ["11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"]
SCRAPER = "kueue-aks-metrics-scraper"
SCRAPER_TOKEN = f"{SCRAPER}-token"
# What ProgramMocks returns for the existing workspace and Grafana (testbed/harness.py).
EXISTING_LOCATION = "westeurope"
EXISTING_QUERY_ENDPOINT = "https://existing.westeurope.prometheus.monitor.azure.com"
EXISTING_GRAFANA_URL = "https://existing-grafana.example.invalid"


# --- helpers --------------------------------------------------------------------------------------


def mock_id(reg: Registration) -> str:
    """The ID ProgramMocks.new_resource gives a resource: '<name>_id'."""
    return f"{reg.name}_id"


def role_definition_id(role: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def children(run: ProgramRun, parent: Registration) -> dict[tuple[str, str], Registration]:
    return {(r.type, r.name): r for r in run.registrations if r.parent == parent.urn}


def monitoring_registrations(run: ProgramRun) -> list[Registration]:
    """Everything that only monitoring would register: its component, Azure monitoring types, and
    Kubernetes objects named after the component or the scraper."""
    return [
        r
        for r in run.registrations
        if (r.type == MONITORING or r.type.startswith(MONITORING_AZURE_TYPES) or r.type.endswith(":ServiceMonitor"))
        and r.name != "kueue-deployer-admin"  # the cluster's role assignment, not monitoring's
        or r.name.startswith("monitoring")
        or (
            r.type.startswith("kubernetes:")
            and str((r.inputs.get("metadata") or {}).get("name", "")).startswith(SCRAPER)
        )
    ]


def kueue_manager_config(run: ProgramRun) -> dict[str, Any]:
    """The Kueue release's manager Configuration, as the chart receives it."""
    values = run.one(RELEASE, "kueue-release").inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def roles(run: ProgramRun) -> dict[str, dict[str, Any]]:
    """Monitoring's role assignments by name (the cluster and team access make their own)."""
    mine = {r.urn for r in run.of_type(MONITORING)}
    return {r.name: r.inputs for r in run.of_type(ROLE_ASSIGNMENT) if r.parent in mine}


def kueue_namespace(run: ProgramRun) -> Registration:
    (ns,) = [r for r in run.of_type(NAMESPACE) if r.inputs["metadata"]["name"] == "kueue-system"]
    return ns


# --- program runs (module-scoped: each takes a second or more) -------------------------------------


@pytest.fixture(scope="module")
def dev_stack() -> dict[str, Any]:
    """Pulumi.dev.yaml's config map as it is: monitoring enabled."""
    config = stack_file_config("dev")
    assert config["kueue-aks:monitoring"] == {"enabled": True}, "these tests assume the dev stack turns monitoring on"
    return config


def create_map(dev_stack: dict[str, Any], **monitoring: Any) -> dict[str, Any]:
    """The dev stack with two admin groups (to see one Grafana Admin per group) and monitoring."""
    cluster = {**dev_stack["kueue-aks:cluster"], "adminGroupObjectIds": ADMIN_GROUPS}
    return with_cluster(dev_stack, cluster, monitoring={"enabled": True, **monitoring})


@pytest.fixture(scope="module")
def create_run(dev_stack: dict[str, Any]) -> ProgramRun:
    return run_program(create_map(dev_stack))


@pytest.fixture(scope="module")
def dev_run(dev_stack: dict[str, Any]) -> ProgramRun:
    """The dev stack exactly as committed."""
    return run_program(dev_stack)


@pytest.fixture(scope="module", params=["absent", "disabled"])
def off_run(request: pytest.FixtureRequest, dev_stack: dict[str, Any]) -> ProgramRun:
    config = copy.deepcopy(dev_stack)
    config["kueue-aks:preflight"] = {"enabled": False}  # its Azure reads are not monitoring's
    if request.param == "absent":
        del config["kueue-aks:monitoring"]
    else:
        config["kueue-aks:monitoring"] = {"enabled": False}
    return run_program(config)


@pytest.fixture(scope="module")
def ids_run(dev_stack: dict[str, Any]) -> ProgramRun:
    """Create mode with an existing workspace and an existing Grafana."""
    return run_program(create_map(dev_stack, azureMonitorWorkspaceId=WORKSPACE_ID, grafanaId=GRAFANA_ID))


def existing_map(dev_stack: dict[str, Any], **monitoring: Any) -> dict[str, Any]:
    return with_cluster(
        dev_stack,
        {"existing": EXISTING},
        monitoring={"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID, **monitoring},
    )


@pytest.fixture(scope="module")
def existing_run(dev_stack: dict[str, Any]) -> ProgramRun:
    return run_program(existing_map(dev_stack))


@pytest.fixture(scope="module")
def kubeconfig_monitor_run(dev_stack: dict[str, Any]) -> ProgramRun:
    return run_program(kubeconfig_stack(dev_stack, monitoring={"enabled": True, "serviceMonitor": True}))


@pytest.fixture(scope="module")
def kubeconfig_plain_run(dev_stack: dict[str, Any]) -> ProgramRun:
    return run_program(kubeconfig_stack(dev_stack, monitoring={"enabled": True}))


# --- feature off: nothing of monitoring anywhere ---------------------------------------------------


def test_off_registers_nothing_of_monitoring(off_run: ProgramRun) -> None:
    assert [(r.type, r.name) for r in monitoring_registrations(off_run)] == []
    assert [r.name for r in off_run.of_type(ROLE_ASSIGNMENT)] == ["kueue-deployer-admin"]  # the cluster's own
    # Not even a lookup: monitoring's invokes are all that would ask Azure about monitoring. The one
    # client lookup left is the cluster's, for its deploying identity (with monitoring on there are two).
    assert not [t for t in off_run.invokes if t.startswith(("azure-native:monitor:", "azure-native:dashboard:"))]
    assert off_run.invokes.count("azure-native:authorization:getClientConfig") == 1
    # The rest of the program is there, so the absence above means something.
    assert off_run.one(MANAGED_CLUSTER) and off_run.one(RELEASE, "kueue-release")


def test_off_cluster_has_no_prometheus_addon(off_run: ProgramRun) -> None:
    cluster = off_run.one(MANAGED_CLUSTER)
    assert "azureMonitorProfile" not in cluster.inputs
    assert "azureMonitorProfile" not in cluster.property_dependencies


def test_off_kueue_keeps_its_manager_config(off_run: ProgramRun) -> None:
    metrics = kueue_manager_config(off_run)["metrics"]
    assert "enableClusterQueueResources" not in metrics
    assert metrics["bindAddress"] == ":8443"  # the block is there, only the key is not


def test_off_exports_nothing_of_monitoring(off_run: ProgramRun) -> None:
    for key in MONITORING_EXPORTS:
        assert key not in off_run.exports, key
    assert {"clusterName", "kubeconfig", "nodePools"} <= set(off_run.exports)
    assert off_run.secret_exports == {"kubeconfig"}


def test_monitoring_changes_nothing_else(off_run: ProgramRun, dev_run: ProgramRun) -> None:
    # Turning monitoring on adds its own objects and two settings, and leaves every other input as it was.
    ours = {(r.type, r.name) for r in monitoring_registrations(dev_run)}
    off_k8s, on_k8s = kubernetes_objects(off_run), kubernetes_objects(dev_run)
    assert set(on_k8s) - ours == set(off_k8s)
    for key, inputs in off_k8s.items():
        if key != (RELEASE, "kueue-release"):
            assert on_k8s[key] == inputs, key
    off_manager, on_manager = kueue_manager_config(off_run), kueue_manager_config(dev_run)
    assert on_manager["metrics"].pop("enableClusterQueueResources") is True
    assert on_manager == off_manager
    off_cluster, on_cluster = off_run.one(MANAGED_CLUSTER).inputs, dict(dev_run.one(MANAGED_CLUSTER).inputs)
    assert on_cluster.pop("azureMonitorProfile")["metrics"]["enabled"] is True
    assert on_cluster == off_cluster


# --- create mode ----------------------------------------------------------------------------------


def test_create_turns_on_the_clusters_prometheus_addon(dev_run: ProgramRun) -> None:
    # Inputs reach the mock monitor with wire (camelCase) names.
    assert dev_run.one(MANAGED_CLUSTER).inputs["azureMonitorProfile"] == {
        "metrics": {
            "enabled": True,
            "kubeStateMetrics": {"metricLabelsAllowlist": "", "metricAnnotationsAllowList": ""},
        }
    }


def test_create_makes_one_of_each_azure_resource(create_run: ProgramRun) -> None:
    for type_ in (WORKSPACE, DCE, DCR, DCRA, GRAFANA):
        create_run.one(type_)
    assert sorted(roles(create_run)) == [
        "monitoring-grafana-admin-group-0",
        "monitoring-grafana-admin-group-1",
        "monitoring-grafana-reads-workspace",
    ]
    assert create_run.one(WORKSPACE).inputs == {"resourceGroupName": "kueue-rg-rg123", "location": "eastus2"}
    assert GET_WORKSPACE not in create_run.invokes and GET_GRAFANA not in create_run.invokes


def test_create_data_collection_endpoint(create_run: ProgramRun) -> None:
    endpoint = create_run.one(DCE)
    assert endpoint.inputs == {
        "dataCollectionEndpointName": "MSProm-eastus2-kueue-dev",
        "kind": "Linux",
        "location": "eastus2",
        "resourceGroupName": "kueue-rg-rg123",
    }


def test_create_data_collection_rule_sends_prometheus_to_the_workspace(create_run: ProgramRun) -> None:
    rule, workspace, endpoint = create_run.one(DCR), create_run.one(WORKSPACE), create_run.one(DCE)
    inputs = rule.inputs
    assert (inputs["kind"], inputs["dataCollectionRuleName"], inputs["location"]) == (
        "Linux",
        "MSProm-eastus2-kueue-dev",
        "eastus2",
    )
    (source,) = inputs["dataSources"]["prometheusForwarder"]
    assert source["streams"] == ["Microsoft-PrometheusMetrics"]
    (account,) = inputs["destinations"]["monitoringAccounts"]
    assert account["accountResourceId"] == mock_id(workspace)
    assert inputs["dataFlows"] == [{"streams": ["Microsoft-PrometheusMetrics"], "destinations": [account["name"]]}]
    assert inputs["dataCollectionEndpointId"] == mock_id(endpoint)
    # Created after what it names.
    assert rule.property_dependencies["dataCollectionEndpointId"] == [endpoint.urn]
    assert rule.property_dependencies["destinations"] == [workspace.urn]
    assert {endpoint.urn, workspace.urn} <= set(rule.dependencies)


def test_create_rule_is_associated_with_the_cluster(create_run: ProgramRun) -> None:
    association, rule, cluster = create_run.one(DCRA), create_run.one(DCR), create_run.one(MANAGED_CLUSTER)
    assert association.inputs["associationName"] == "MSProm-eastus2-kueue-dev"
    assert association.inputs["resourceUri"] == mock_id(cluster)
    assert association.inputs["dataCollectionRuleId"] == mock_id(rule)
    assert association.property_dependencies["resourceUri"] == [cluster.urn]
    assert association.property_dependencies["dataCollectionRuleId"] == [rule.urn]
    assert {cluster.urn, rule.urn} <= set(association.dependencies)


def test_a_region_by_display_name_is_refused_with_its_short_form(dev_stack: dict[str, Any]) -> None:
    # The names hold the region's short form, so the config asks for it (tests/facts/test_regions.py).
    with pytest.raises(
        Exception, match="'East US 2' is a display name; write the region's programmatic name, 'eastus2'"
    ):
        run_program({**create_map(dev_stack), "azure-native:location": "East US 2"})


def test_create_grafana_is_linked_to_the_workspace(create_run: ProgramRun) -> None:
    grafana, workspace = create_run.one(GRAFANA), create_run.one(WORKSPACE)
    inputs = grafana.inputs
    assert (inputs["workspaceName"], inputs["sku"], inputs["identity"]) == (
        "kueue-dev",
        {"name": "Standard"},
        {"type": "SystemAssigned"},
    )
    assert (inputs["resourceGroupName"], inputs["location"]) == ("kueue-rg-rg123", "eastus2")
    assert inputs["properties"]["grafanaIntegrations"]["azureMonitorWorkspaceIntegrations"] == [
        {"azureMonitorWorkspaceResourceId": mock_id(workspace)}
    ]
    assert grafana.property_dependencies["properties"] == [workspace.urn]


def test_create_grafana_reads_the_workspace(create_run: ProgramRun) -> None:
    reader = create_run.one(ROLE_ASSIGNMENT, "monitoring-grafana-reads-workspace")
    workspace, grafana = create_run.one(WORKSPACE), create_run.one(GRAFANA)
    assert reader.inputs == {
        "principalId": GRAFANA_PRINCIPAL,
        "principalType": "ServicePrincipal",
        "scope": mock_id(workspace),
        "roleDefinitionId": role_definition_id(MONITORING_DATA_READER_ROLE),
    }
    assert MONITORING_DATA_READER_ROLE == "b0d8363b-8ddd-447d-831f-62ca05bff136"
    assert reader.property_dependencies["scope"] == [workspace.urn]
    assert reader.property_dependencies["principalId"] == [grafana.urn]


def test_create_grafana_admins_are_the_admin_groups(create_run: ProgramRun) -> None:
    grafana = create_run.one(GRAFANA)
    admin_role = role_definition_id(GRAFANA_ADMIN_ROLE)
    assert GRAFANA_ADMIN_ROLE == "22926164-76b3-42b3-bc55-97df8dab3e41"
    found = roles(create_run)
    # With admin groups, the groups only: the deploying identity gets Grafana Admin only when there is none.
    assert not any(r["principalId"] == DEPLOYER_OBJECT_ID for r in found.values())
    for i, group in enumerate(ADMIN_GROUPS):
        assert found[f"monitoring-grafana-admin-group-{i}"] == {
            "principalId": group,
            "principalType": "Group",
            "scope": mock_id(grafana),
            "roleDefinitionId": admin_role,
        }
    for name in found:
        if name.startswith("monitoring-grafana-admin-"):
            assert create_run.one(ROLE_ASSIGNMENT, name).property_dependencies["scope"] == [grafana.urn]


def test_grafana_admin_groups_of_their_own_replace_the_cluster_admins(dev_stack: dict[str, Any]) -> None:
    own = ["aaaaaaaa-0000-0000-0000-000000000001"]
    run = run_program(create_map(dev_stack, grafanaAdminGroupObjectIds=own))
    assert [r["principalId"] for n, r in sorted(roles(run).items()) if n.startswith("monitoring-grafana-admin-")] == own


def test_create_everything_belongs_to_the_monitoring_component(create_run: ProgramRun) -> None:
    component = create_run.one(MONITORING, "monitoring")
    # A child of the stack (whose name the mocks keep from the first program run of the session).
    assert "::pulumi:pulumi:Stack::kueue-aks-" in component.parent
    assert set(children(create_run, component)) == {
        (WORKSPACE, "monitoring-workspace"),
        (DCE, "monitoring-dce"),
        (DCR, "monitoring-dcr"),
        (DCRA, "monitoring-dcra"),
        (GRAFANA, "monitoring-grafana"),
        (ROLE_ASSIGNMENT, "monitoring-grafana-reads-workspace"),
        (ROLE_ASSIGNMENT, "monitoring-grafana-admin-group-0"),
        (ROLE_ASSIGNMENT, "monitoring-grafana-admin-group-1"),
        (SERVICE_ACCOUNT, "monitoring-serviceaccount"),
        (SECRET, "monitoring-secret"),
        (BINDING, "monitoring-clusterrolebinding"),
        (AZ_SERVICE_MONITOR, "monitoring-servicemonitor"),
    }
    # Nothing of monitoring's lives outside it.
    for reg in monitoring_registrations(create_run):
        assert reg is component or reg.parent == component.urn, reg.name


def test_create_scrape_objects(create_run: ProgramRun) -> None:
    component = create_run.one(MONITORING)
    provider = create_run.one(K8S_PROVIDER)
    mine = children(create_run, component)
    account = mine[(SERVICE_ACCOUNT, "monitoring-serviceaccount")]
    secret = mine[(SECRET, "monitoring-secret")]
    binding = mine[(BINDING, "monitoring-clusterrolebinding")]
    monitor = mine[(AZ_SERVICE_MONITOR, "monitoring-servicemonitor")]
    for reg in (account, secret, binding, monitor):
        assert provider_urn(reg.provider) == provider.urn, reg.name
    assert account.inputs["metadata"]["name"] == SCRAPER and account.inputs["metadata"]["namespace"] == "kube-system"
    assert secret.inputs["type"] == "kubernetes.io/service-account-token"
    assert secret.inputs["metadata"]["annotations"] == {"kubernetes.io/service-account.name": SCRAPER}
    assert (secret.inputs["metadata"]["name"], secret.inputs["metadata"]["namespace"]) == (SCRAPER_TOKEN, "kube-system")
    # The token controller fills the Secret only once its ServiceAccount exists.
    assert secret.dependencies == [account.urn]
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "kueue-metrics-reader",
    }
    assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": "kube-system"}]
    assert monitor.inputs["apiVersion"] == "azmonitoring.coreos.com/v1"
    assert monitor.inputs["kind"] == "ServiceMonitor"
    assert monitor.inputs["metadata"]["namespace"] == "kube-system"
    # kube-system is not Kueue's namespace: nothing waits for the Kueue Namespace on AKS.
    assert kueue_namespace(create_run).urn not in account.dependencies + monitor.dependencies


def test_create_exports(create_run: ProgramRun) -> None:
    exports = create_run.exports
    assert exports["azureMonitorWorkspaceId"] == mock_id(create_run.one(WORKSPACE))
    assert exports["prometheusQueryEndpoint"] == "https://amw.eastus2.prometheus.monitor.azure.com"
    # The Grafana's name output (the mock makes it differ from the workspaceName input).
    assert exports["grafanaName"] == "monitoring-grafana0a1b2c3d"
    assert exports["grafanaUrl"] == "https://grafana.example.invalid"
    # None of them is secret; the kubeconfig is still the only secret output.
    assert create_run.secret_exports == {"kubeconfig"}


def test_create_kueue_reports_cluster_queue_resources(dev_run: ProgramRun) -> None:
    assert kueue_manager_config(dev_run)["metrics"]["enableClusterQueueResources"] is True


def test_dev_stack_as_committed_has_no_grafana_admin_group(dev_run: ProgramRun) -> None:
    # The dev stack names no Entra ID group: whoever deploys it administers the new Grafana, typed as
    # its token says (tests/cluster/test_deployer.py covers a service principal).
    found = roles(dev_run)
    assert sorted(found) == ["monitoring-grafana-admin-deployer", "monitoring-grafana-reads-workspace"]
    grafana = dev_run.one(GRAFANA)
    assert found["monitoring-grafana-admin-deployer"] == {
        "principalId": DEPLOYER_OBJECT_ID,
        "principalType": "User",
        "scope": mock_id(grafana),
        "roleDefinitionId": role_definition_id(GRAFANA_ADMIN_ROLE),
        "description": "kueue-aks: the identity that ran pulumi up administers the Grafana it made",
    }
    assert dev_run.secret_exports == {"kubeconfig"}
    assert set(MONITORING_EXPORTS) <= set(dev_run.exports)


# --- create mode with an existing workspace and Grafana ---------------------------------------------


def test_ids_create_neither_workspace_nor_grafana(ids_run: ProgramRun) -> None:
    assert not ids_run.of_type(WORKSPACE) and not ids_run.of_type(GRAFANA)
    # The add-on and its data collection are still the stack's: it owns the cluster.
    for type_ in (DCE, DCR, DCRA):
        ids_run.one(type_)
    assert ids_run.one(MANAGED_CLUSTER).inputs["azureMonitorProfile"]["metrics"]["enabled"] is True


def test_ids_are_looked_up_by_their_parsed_names(ids_run: ProgramRun) -> None:
    (workspace_args,) = [a for t, a in ids_run.invoke_args if t == GET_WORKSPACE]
    assert workspace_args == {"resourceGroupName": "obs-rg", "azureMonitorWorkspaceName": "amw1"}
    (grafana_args,) = [a for t, a in ids_run.invoke_args if t == GET_GRAFANA]
    assert grafana_args == {"resourceGroupName": "graf-rg", "workspaceName": "graf1"}


def test_ids_data_collection_follows_the_workspaces_location(ids_run: ProgramRun) -> None:
    endpoint, rule, association = ids_run.one(DCE), ids_run.one(DCR), ids_run.one(DCRA)
    assert (endpoint.inputs["location"], endpoint.inputs["dataCollectionEndpointName"]) == (
        EXISTING_LOCATION,
        "MSProm-westeurope-kueue-dev",
    )
    assert (rule.inputs["location"], rule.inputs["dataCollectionRuleName"]) == (
        EXISTING_LOCATION,
        "MSProm-westeurope-kueue-dev",
    )
    # Both in the stack's resource group; the rule sends to the configured workspace.
    assert endpoint.inputs["resourceGroupName"] == rule.inputs["resourceGroupName"] == "kueue-rg-rg123"
    assert rule.inputs["destinations"]["monitoringAccounts"][0]["accountResourceId"] == WORKSPACE_ID
    # The association is named after the cluster's location, as the add-on's templates do.
    assert association.inputs["associationName"] == "MSProm-eastus2-kueue-dev"


def test_ids_assign_no_role(ids_run: ProgramRun) -> None:
    # Linking the workspace to an existing Grafana grants its reader role; a second identical
    # assignment by the stack would be refused (RoleAssignmentExists), so its owners do both.
    assert roles(ids_run) == {}


def test_ids_exports(ids_run: ProgramRun) -> None:
    assert {k: ids_run.exports[k] for k in MONITORING_EXPORTS} == {
        "azureMonitorWorkspaceId": WORKSPACE_ID,
        "prometheusQueryEndpoint": EXISTING_QUERY_ENDPOINT,
        "grafanaName": "graf1",
        "grafanaUrl": EXISTING_GRAFANA_URL,
    }
    assert ids_run.secret_exports == {"kubeconfig"}


# --- an existing cluster ----------------------------------------------------------------------------


def test_existing_leaves_the_addons_data_collection_alone(existing_run: ProgramRun) -> None:
    for type_ in (MANAGED_CLUSTER, WORKSPACE, DCE, DCR, DCRA):
        assert not existing_run.of_type(type_), type_
    assert existing_run.invokes.count(GET_CLUSTER) == 1
    (workspace_args,) = [a for t, a in existing_run.invoke_args if t == GET_WORKSPACE]
    assert workspace_args == {"resourceGroupName": "obs-rg", "azureMonitorWorkspaceName": "amw1"}


def test_existing_grafana_goes_to_the_workspaces_resource_group(existing_run: ProgramRun) -> None:
    grafana = existing_run.one(GRAFANA)
    assert grafana.inputs["resourceGroupName"] == "obs-rg"  # not the cluster's "rg": that is not the stack's
    assert grafana.inputs["workspaceName"] == "kueue-dev"
    assert grafana.inputs["properties"]["grafanaIntegrations"]["azureMonitorWorkspaceIntegrations"] == [
        {"azureMonitorWorkspaceResourceId": WORKSPACE_ID}
    ]
    found = roles(existing_run)
    assert sorted(found) == ["monitoring-grafana-reads-workspace"]
    assert found["monitoring-grafana-reads-workspace"] == {
        "principalId": GRAFANA_PRINCIPAL,
        "principalType": "ServicePrincipal",
        "scope": WORKSPACE_ID,
        "roleDefinitionId": role_definition_id(MONITORING_DATA_READER_ROLE),
    }
    component = existing_run.one(MONITORING)
    assert all(
        r.parent == component.urn for r in existing_run.registrations if r.type.startswith(MONITORING_AZURE_TYPES)
    )


def test_existing_scrape_objects_are_azure_monitors(existing_run: ProgramRun) -> None:
    component = existing_run.one(MONITORING)
    assert {k[0] for k in children(existing_run, component) if k[0].startswith("kubernetes:")} == {
        SERVICE_ACCOUNT,
        SECRET,
        BINDING,
        AZ_SERVICE_MONITOR,
    }
    provider = existing_run.one(K8S_PROVIDER)
    for reg in children(existing_run, component).values():
        if reg.type.startswith("kubernetes:"):
            assert provider_urn(reg.provider) == provider.urn, reg.name
    assert existing_run.exports["azureMonitorWorkspaceId"] == WORKSPACE_ID
    assert existing_run.exports["prometheusQueryEndpoint"] == EXISTING_QUERY_ENDPOINT
    assert existing_run.secret_exports == {"kubeconfig"}


def test_existing_with_an_existing_grafana_creates_nothing_in_azure(dev_stack: dict[str, Any]) -> None:
    run = run_program(existing_map(dev_stack, grafanaId=GRAFANA_ID))
    assert azure_registrations(run) == []
    assert run.exports["grafanaName"] == "graf1" and run.exports["grafanaUrl"] == EXISTING_GRAFANA_URL


@pytest.mark.parametrize("profile", [{"metrics": {"enabled": False}}, None], ids=["metrics-off", "no-profile"])
@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_existing_without_the_addon_stops_the_run(dev_stack: dict[str, Any], profile: Any, preview: bool) -> None:
    mocks = ProgramMocks(managed_cluster={"azureMonitorProfile": profile})
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing_map(dev_stack), preview=preview, mocks=mocks)
    text = str(err.value)
    assert "kueue-aks:monitoring.enabled" in text and "az aks update" in text
    assert "--resource-group rg --name aks1 --enable-azure-monitor-metrics" in text
    # The check gates the provider: no Kubernetes object was sent to the cluster.
    from pulumi.runtime.settings import SETTINGS

    assert not [r.name for r in SETTINGS.monitor.registrations if r.type.startswith("kubernetes:")]


# --- a kubeconfig cluster ---------------------------------------------------------------------------


@pytest.mark.parametrize("run_name", ["kubeconfig_monitor_run", "kubeconfig_plain_run"])
def test_kubeconfig_touches_no_azure(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    assert azure_registrations(run) == []
    assert not [t for t in run.invokes if t.startswith("azure-native:")]
    for key in MONITORING_EXPORTS:
        assert key not in run.exports, key
    run.one(MONITORING)


def test_kubeconfig_service_monitor_is_the_prometheus_operators(kubeconfig_monitor_run: ProgramRun) -> None:
    run = kubeconfig_monitor_run
    assert not run.of_type(AZ_SERVICE_MONITOR)
    monitor = run.one(OPERATOR_SERVICE_MONITOR)
    assert monitor.inputs["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor.inputs["metadata"]["namespace"] == "kueue-system"
    assert "labelLimit" not in monitor.inputs["spec"]  # managed Prometheus's limits only on AKS
    namespace = kueue_namespace(run)
    assert namespace.urn in monitor.dependencies
    assert monitor.parent == run.one(MONITORING).urn
    assert provider_urn(monitor.provider) == run.one(K8S_PROVIDER).urn


def test_kubeconfig_scraper_lives_next_to_kueue(kubeconfig_monitor_run: ProgramRun) -> None:
    run = kubeconfig_monitor_run
    namespace = kueue_namespace(run)
    account, secret, binding = (
        run.one(SERVICE_ACCOUNT, "monitoring-serviceaccount"),
        run.one(SECRET, "monitoring-secret"),
        run.one(BINDING, "monitoring-clusterrolebinding"),
    )
    assert account.inputs["metadata"]["namespace"] == secret.inputs["metadata"]["namespace"] == "kueue-system"
    assert account.dependencies == [namespace.urn]
    assert set(secret.dependencies) == {namespace.urn, account.urn}
    assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": "kueue-system"}]
    assert namespace.urn not in binding.dependencies  # cluster-scoped: waits for nothing


def test_kubeconfig_without_service_monitor_creates_only_the_scraper(kubeconfig_plain_run: ProgramRun) -> None:
    component = kubeconfig_plain_run.one(MONITORING)
    assert {k[0] for k in children(kubeconfig_plain_run, component)} == {SERVICE_ACCOUNT, SECRET, BINDING}
    assert not [r for r in kubeconfig_plain_run.registrations if r.type.endswith(":ServiceMonitor")]


# --- components.monitoring.scrape ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def aks_config(dev_stack: dict[str, Any]) -> StackConfig:
    return load_stack(dev_stack)


@pytest.fixture(scope="module")
def kubeconfig_config(dev_stack: dict[str, Any]) -> StackConfig:
    return load_stack(kubeconfig_stack(dev_stack, monitoring={"enabled": True, "serviceMonitor": True}))


def test_scrape_objects_in_apply_order(
    aks_config: StackConfig, kubeconfig_config: StackConfig, dev_stack: dict[str, Any]
) -> None:
    # The ServiceAccount comes before its token Secret: Monitoring looks it up while creating the Secret.
    assert [o["kind"] for o in scrape_objects(aks_config)] == [
        "ServiceAccount",
        "Secret",
        "ClusterRoleBinding",
        "ServiceMonitor",
    ]
    assert [o["kind"] for o in scrape_objects(kubeconfig_config)][-1] == "ServiceMonitor"
    plain = load_stack(kubeconfig_stack(dev_stack, monitoring={"enabled": True}))
    assert [o["kind"] for o in scrape_objects(plain)] == ["ServiceAccount", "Secret", "ClusterRoleBinding"]
    assert service_monitor(plain) is None
    off = load_stack(with_cluster(dev_stack, dev_stack["kueue-aks:cluster"]))
    assert scrape_objects(off) == []


@pytest.mark.parametrize(
    ("config_name", "api_version", "namespace"),
    [
        ("aks_config", AZURE_MONITOR_API_VERSION, "kube-system"),
        ("kubeconfig_config", PROMETHEUS_OPERATOR_API_VERSION, "kueue-system"),
    ],
)
def test_service_monitor_scrapes_kueues_metrics_service_with_the_token(
    config_name: str, api_version: str, namespace: str, request: pytest.FixtureRequest
) -> None:
    config: StackConfig = request.getfixturevalue(config_name)
    monitor = service_monitor(config)
    assert monitor is not None
    assert (monitor["apiVersion"], monitor["kind"], monitor["metadata"]["namespace"]) == (
        api_version,
        "ServiceMonitor",
        namespace,
    )
    spec = monitor["spec"]
    (endpoint,) = spec["endpoints"]
    assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == ("https", "https", "/metrics")
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": {"name": SCRAPER_TOKEN, "key": "token"}}
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert spec["selector"]["matchLabels"]["app.kubernetes.io/component"] == "metrics-service"
    assert spec["namespaceSelector"] == {"matchNames": ["kueue-system"]}
    # The token it names is the scraper's, in the monitor's own namespace (where Prometheus reads it).
    (secret,) = [o for o in scrape_objects(config) if o["kind"] == "Secret"]
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (SCRAPER_TOKEN, namespace)


def test_azure_label_limits_only_on_the_managed_prometheus_monitor(
    aks_config: StackConfig, kubeconfig_config: StackConfig
) -> None:
    limits = {"labelLimit": 63, "labelNameLengthLimit": 511, "labelValueLengthLimit": 1023}
    aks_spec, operator_spec = service_monitor(aks_config)["spec"], service_monitor(kubeconfig_config)["spec"]  # type: ignore[index]
    assert {k: aks_spec[k] for k in limits} == limits
    assert not set(limits) & set(operator_spec)


def test_scraper_binding_names_the_scrapers_account(aks_config: StackConfig) -> None:
    account, secret, binding = scrape_objects(aks_config)[:3]
    assert binding["roleRef"]["name"] == "kueue-metrics-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == account["metadata"]["name"]


def test_scrape_names_match_the_pinned_kueue_chart() -> None:
    # The selector, port and role only work if the chart (release "kueue") names them so.
    with tarfile.open(CHART_TGZ) as tar:

        def text(path: str) -> str:
            member = tar.extractfile(f"kueue/{path}")
            assert member is not None, path
            return member.read().decode()

        values = yaml.safe_load(text("values.yaml"))
        helpers = text("templates/_helpers.tpl")
        service = text("templates/manager/auth_proxy_service.yaml")
        reader = text("templates/rbac/metrics_reader_role.yaml")
    assert METRICS_PORT_NAME in [p["name"] for p in values["metricsService"]["ports"]]
    labels = re.search(r'define "kueue.metricsService.labels".*?\{\{- end \}\}', helpers, re.S)
    assert labels and "app.kubernetes.io/component: metrics-service" in labels.group(0)
    assert METRICS_SERVICE_LABELS["app.kubernetes.io/component"] == "metrics-service"
    assert 'include "kueue.metricsService.labels"' in service
    assert (
        "-controller-manager-metrics-service" in service
        and METRICS_SERVICE == "kueue-controller-manager-metrics-service"
    )
    assert "-metrics-reader'" in reader and METRICS_READER_ROLE == "kueue-metrics-reader"


# --- components.monitoring.component: pure helpers ------------------------------------------------------------


def test_resource_id_parts() -> None:
    assert resource_id_parts(WORKSPACE_ID) == (SUBSCRIPTION, "obs-rg", "amw1")
    assert resource_id_parts(GRAFANA_ID) == (SUBSCRIPTION, "graf-rg", "graf1")
    assert resource_id_parts(WORKSPACE_ID + "/") == (SUBSCRIPTION, "obs-rg", "amw1")


OTHER_SUBSCRIPTION = "22222222-2222-2222-2222-222222222222"


@pytest.mark.parametrize("key", ["azureMonitorWorkspaceId", "grafanaId"])
def test_a_resource_in_another_subscription_stops_the_run_before_anything_is_created(
    dev_stack: dict[str, Any], key: str
) -> None:
    foreign = (WORKSPACE_ID if key == "azureMonitorWorkspaceId" else GRAFANA_ID).replace(
        SUBSCRIPTION, OTHER_SUBSCRIPTION
    )
    mocks = ProgramMocks()
    with pytest.raises(Exception) as err:
        run_program(create_map(dev_stack, **{key: foreign}), mocks=mocks)
    assert (
        f"kueue-aks:monitoring.{key} is in subscription {OTHER_SUBSCRIPTION}, but the stack deploys to {SUBSCRIPTION}"
        in str(err.value)
    )
    # The lookup of the named resource never ran: it waits for the check.
    assert not [
        t
        for t in mocks.invokes
        if t in ("azure-native:monitor:getAzureMonitorWorkspace", "azure-native:dashboard:getGrafana")
    ]


def test_check_subscription_compares_without_case() -> None:
    settings = MonitoringSettings(
        enabled=True, workspace_id=WORKSPACE_ID.upper().replace("/SUBSCRIPTIONS/", "/subscriptions/")
    )
    assert check_subscription(settings, SUBSCRIPTION) is True
    assert (
        check_subscription(MonitoringSettings(enabled=True), OTHER_SUBSCRIPTION) is True
    )  # nothing named: nothing to compare


def test_data_collection_rule() -> None:
    rule = data_collection_rule("ws-id")
    assert rule["kind"] == "Linux"
    (source,) = rule["data_sources"]["prometheus_forwarder"]
    assert source["streams"] == ["Microsoft-PrometheusMetrics"]
    (account,) = rule["destinations"]["monitoring_accounts"]
    assert account["account_resource_id"] == "ws-id"
    # The flow names the destination it sends to.
    assert rule["data_flows"] == [{"streams": ["Microsoft-PrometheusMetrics"], "destinations": [account["name"]]}]
    assert set(rule) == {"kind", "description", "data_sources", "destinations", "data_flows"}


def test_azure_monitor_profile_follows_enabled(aks_config: StackConfig, dev_stack: dict[str, Any]) -> None:
    assert azure_monitor_profile(aks_config) == {
        "metrics": {
            "enabled": True,
            "kube_state_metrics": {"metric_labels_allowlist": "", "metric_annotations_allow_list": ""},
        }
    }
    assert azure_monitor_profile(load_stack(with_cluster(dev_stack, dev_stack["kueue-aks:cluster"]))) is None


# --- components.cluster.component.check_prometheus_addon -------------------------------------------------------


def test_check_prometheus_addon_passes_when_metrics_are_on() -> None:
    profile = SimpleNamespace(metrics=SimpleNamespace(enabled=True))
    assert check_prometheus_addon(ExistingCluster("rg", "aks1"), profile) is True


@pytest.mark.parametrize(
    "profile",
    [
        None,
        SimpleNamespace(metrics=None),
        SimpleNamespace(metrics=SimpleNamespace(enabled=False)),
        SimpleNamespace(metrics=SimpleNamespace(enabled=None)),
    ],
    ids=["no-profile", "no-metrics", "disabled", "unset"],
)
def test_check_prometheus_addon_raises_with_the_fix(profile: Any) -> None:
    with pytest.raises(ExistingClusterMismatch) as err:
        check_prometheus_addon(ExistingCluster("grp", "clu"), profile)
    text = str(err.value)
    assert text.startswith("kueue-aks:monitoring.enabled")
    assert "az aks update --resource-group grp --name clu --enable-azure-monitor-metrics" in text
    assert "--azure-monitor-workspace-resource-id" in text
    assert isinstance(err.value, pulumi.RunError)  # printed without a traceback
