"""Monitoring: Kueue's metrics into Azure Managed Prometheus, shown in Azure Managed Grafana
(kueue-aks:monitoring; docs/monitoring.md). Created only when monitoring.enabled is true.

On AKS it follows the managed Prometheus add-on's own onboarding templates (Azure/prometheus-
collector AddonArmTemplate/FullAzureMonitorMetricsProfile.json, AddonBicepTemplate and
AddonTerraformTemplate/main.tf):
- an Azure Monitor workspace (or monitoring.azureMonitorWorkspaceId);
- in create mode the cluster's azureMonitorProfile.metrics (components/cluster/component.py) and the data
  collection endpoint and rule `MSProm-<workspace location>-<cluster>` (44 and 64 characters at
  most) sending the stream Microsoft-PrometheusMetrics to the workspace, with the rule associated
  to the cluster as `MSProm-<cluster location>-<cluster>`. With cluster.existing the add-on and
  its data collection belong to whoever owns the cluster: the program checks the add-on is on and
  takes the workspace it writes to from the config;
- an Azure Managed Grafana linked to the workspace, its identity given Monitoring Data Reader on
  the workspace (the templates' one role assignment), and Grafana Admin for
  monitoring.grafanaAdminGroupObjectIds (default cluster.adminGroupObjectIds), since an
  ARM-created Grafana has no admin otherwise. A Grafana named by monitoring.grafanaId is only
  looked up: linking a workspace to it grants that same role (the portal's integration page, `az
  aks update --grafana-resource-id`), and Azure refuses a second assignment of one role to one
  principal at one scope (RoleAssignmentExists), so the stack leaves both to the Grafana's owner.
In every mode, the scrape objects of components/monitoring/scrape.py. The dashboard (components/monitoring/dashboard.py)
cannot be uploaded through Azure Resource Manager: Managed Grafana's dashboards live behind
Grafana's own HTTP API, which azure-native does not cover (terraform-provider-azurerm #22206);
docs/monitoring.md gives the one `az grafana dashboard import` command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, dashboard, monitor
from pulumi_kubernetes.apiextensions import CustomResource

from ..cluster.component import role_definition
from ..config.monitoring import MonitoringSettings
from ..config.names import KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..facts.azure_names import association_name, endpoint_name, grafana_name, rule_name
from ..facts.built_in_roles import STACK_ROLES
from ..k8s.part import Part
from .scrape import SERVICE_ACCOUNT_ANNOTATION

MONITORING_DATA_READER_ROLE = STACK_ROLES["Monitoring Data Reader"]
GRAFANA_ADMIN_ROLE = STACK_ROLES["Grafana Admin"]
# From the add-on's onboarding templates (module docstring).
PROMETHEUS_STREAM = "Microsoft-PrometheusMetrics"
WORKSPACE_DESTINATION = "MonitoringAccount1"
GRAFANA_SKU = "Standard"


def data_collection_rule(workspace_id: pulumi.Input[str]) -> dict[str, Any]:
    """The data collection rule's inputs that send the add-on's Prometheus stream to the workspace."""
    return {
        "kind": "Linux",
        "description": "Managed Prometheus metrics of the kueue-aks cluster",
        "data_sources": {
            "prometheus_forwarder": [
                {"name": "PrometheusDataSource", "streams": [PROMETHEUS_STREAM], "label_include_filter": {}}
            ]
        },
        "destinations": {"monitoring_accounts": [{"account_resource_id": workspace_id, "name": WORKSPACE_DESTINATION}]},
        "data_flows": [{"streams": [PROMETHEUS_STREAM], "destinations": [WORKSPACE_DESTINATION]}],
    }


def resource_id_parts(resource_id: str) -> tuple[str, str, str]:
    """(subscription, resource group, name) of an Azure resource ID."""
    parts = resource_id.strip("/").split("/")
    return parts[1], parts[3], parts[-1]


def kubernetes_object(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One scrape object as its typed resource (a Secret's data is then a Pulumi secret)."""
    kind, meta = obj["kind"], obj["metadata"]
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(name, metadata=meta, opts=opts)
    if kind == "Secret":
        return k8s.core.v1.Secret(name, metadata=meta, type=obj["type"], opts=opts)
    if kind == "ClusterRoleBinding":
        return k8s.rbac.v1.ClusterRoleBinding(
            name, metadata=meta, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
        )
    return CustomResource(name, api_version=obj["apiVersion"], kind=kind, metadata=meta, spec=obj["spec"], opts=opts)


def check_subscription(settings: MonitoringSettings, subscription: str) -> bool:
    """Raise when a configured workspace or Grafana is in another subscription than the deployment's:
    the provider looks resources up and assigns roles in its own subscription only."""
    for key, resource_id in (("azureMonitorWorkspaceId", settings.workspace_id), ("grafanaId", settings.grafana_id)):
        theirs = resource_id_parts(resource_id)[0] if resource_id else subscription
        if theirs.lower() != subscription.lower():
            raise pulumi.RunError(
                f"kueue-aks:monitoring.{key} is in subscription {theirs}, but the stack deploys to "
                f"{subscription} (azure-native's subscription); name a resource in that one"
            )
    return True


class Monitoring(pulumi.ComponentResource):
    """Kueue's metrics collected (managed Prometheus on AKS, or a Prometheus Operator) and shown.

    `cluster` is the program's cluster component (its `cluster_id`, `resource_group_name` and
    `verified`, None with cluster.kubeconfig); `kueue_namespace` is what makes Kueue's namespace
    (KueueInstallation.namespace_ready), which scrape objects placed there wait for. The Kubernetes
    provider comes from `opts.providers`.
    """

    TYPE = "kueue-aks:monitoring:Monitoring"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives: the Azure ones (None in kubeconfig mode)

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        config: StackConfig,
        cluster: Any,
        kueue_namespace: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.workspace_id: pulumi.Output[str] | None = None
        self.prometheus_query_endpoint: pulumi.Output[Any] | None = None
        self.grafana_name: pulumi.Output[str] | None = None
        self.grafana_url: pulumi.Output[Any] | None = None
        if config.cluster.mode != "kubeconfig":
            self._azure(name, config, cluster)

        # Each waits only for what it names: its namespace when that is Kueue's, a token Secret
        # for its ServiceAccount. A binding may name the chart's ClusterRole before it exists. On
        # AKS the ServiceMonitor kind comes with the cluster's add-on; pulumi-kubernetes retries a
        # create whose kind is not registered yet (pulumi/pulumi-kubernetes provider/pkg/await/await.go@v4.34.2)
        # while the add-on installs.
        self.scrape_objects: dict[tuple[str, str], pulumi.Resource] = {}
        for obj in part.objects:  # the scrape objects (components/monitoring/scrape.py)
            kind, meta = obj["kind"], obj["metadata"]
            needs = [*kueue_namespace] if meta.get("namespace") == KUEUE_NAMESPACE else []
            account = (meta.get("annotations") or {}).get(SERVICE_ACCOUNT_ANNOTATION)
            if account:
                needs.append(self.scrape_objects[("ServiceAccount", account)])
            self.scrape_objects[(kind, meta["name"])] = kubernetes_object(
                f"{name}-{kind.lower()}", obj, pulumi.ResourceOptions(parent=self, depends_on=needs)
            )
        self.exports = {
            "azureMonitorWorkspaceId": self.workspace_id,
            "grafanaName": self.grafana_name,
            "grafanaUrl": self.grafana_url,
            "prometheusQueryEndpoint": self.prometheus_query_endpoint,
        }
        self.register_outputs(self.exports)

    def _azure(self, name: str, config: StackConfig, cluster: Any) -> None:
        settings, child = config.monitoring, pulumi.ResourceOptions(parent=self)
        client = authorization.get_client_config_output()
        # Nothing is looked up or created before the checks pass: IDs in the deployment's
        # subscription and, with cluster.existing, the cluster's add-on and pools.
        checks = [client.subscription_id.apply(lambda subscription: check_subscription(settings, subscription))]
        if cluster.verified is not None:
            checks.append(cluster.verified)
        gate = pulumi.Output.all(*checks)

        def checked(value: pulumi.Input[str]) -> pulumi.Output[str]:
            return pulumi.Output.all(gate, value).apply(lambda parts: parts[1])

        # New resources go to the stack's resource group; with cluster.existing (whose group is not
        # the stack's) to the workspace's, which the config then names.
        resource_group_name = checked(cluster.resource_group_name)
        if settings.workspace_id:
            _, group, workspace_name = resource_id_parts(settings.workspace_id)
            if config.cluster.mode == "existing":
                resource_group_name = checked(group)
            existing = monitor.get_azure_monitor_workspace_output(
                azure_monitor_workspace_name=workspace_name, resource_group_name=checked(group)
            )
            workspace_id: pulumi.Output[str] = checked(settings.workspace_id)
            workspace_location: pulumi.Input[str] = existing.location
            self.prometheus_query_endpoint = existing.metrics.apply(
                lambda m: m.prometheus_query_endpoint if m else None
            )
        else:
            workspace = monitor.AzureMonitorWorkspace(
                f"{name}-workspace", resource_group_name=resource_group_name, location=config.location, opts=child
            )
            workspace_id, workspace_location = workspace.id, config.location
            self.prometheus_query_endpoint = workspace.metrics.apply(
                lambda m: m.prometheus_query_endpoint if m else None
            )
        self.workspace_id = workspace_id

        if config.cluster.mode == "create":
            cluster_name = config.cluster.name
            endpoint = monitor.DataCollectionEndpoint(
                f"{name}-dce",
                resource_group_name=resource_group_name,
                location=workspace_location,
                kind="Linux",
                data_collection_endpoint_name=pulumi.Output.from_input(workspace_location).apply(
                    lambda loc: endpoint_name(loc, cluster_name)
                ),
                opts=child,
            )
            rule = monitor.DataCollectionRule(
                f"{name}-dcr",
                resource_group_name=resource_group_name,
                location=workspace_location,
                data_collection_rule_name=pulumi.Output.from_input(workspace_location).apply(
                    lambda loc: rule_name(loc, cluster_name)
                ),
                data_collection_endpoint_id=endpoint.id,
                **data_collection_rule(workspace_id),
                opts=child,
            )
            monitor.DataCollectionRuleAssociation(
                f"{name}-dcra",
                resource_uri=cluster.cluster_id,
                data_collection_rule_id=rule.id,
                association_name=association_name(config.location, cluster_name),
                description="Association of the data collection rule with the cluster's managed Prometheus add-on",
                opts=child,
            )

        if settings.grafana_id:
            _, group, existing_name = resource_id_parts(settings.grafana_id)
            grafana = dashboard.get_grafana_output(resource_group_name=checked(group), workspace_name=existing_name)
            self.grafana_name = pulumi.Output.from_input(existing_name)
            self.grafana_url = grafana.properties.apply(lambda p: p.endpoint)
            return  # its owners link it and manage who administers it (module docstring)

        created = dashboard.Grafana(
            f"{name}-grafana",
            workspace_name=grafana_name(config.cluster.name),
            resource_group_name=resource_group_name,
            location=config.location,
            sku={"name": GRAFANA_SKU},
            identity={"type": "SystemAssigned"},
            properties={
                "grafana_integrations": {
                    "azure_monitor_workspace_integrations": [{"azure_monitor_workspace_resource_id": workspace_id}]
                }
            },
            opts=child,
        )
        self.grafana_name = created.name
        self.grafana_url = created.properties.apply(lambda p: p.endpoint)
        admins = list(settings.grafana_admin_group_ids)
        deployer = cluster.deployer
        if not admins and deployer is None:
            pulumi.log.warn(
                "kueue-aks:monitoring: the new Grafana has no admin group (monitoring.grafanaAdminGroupObjectIds, "
                "default cluster.adminGroupObjectIds); grant Grafana Admin yourself: az role assignment create "
                "--role 'Grafana Admin' --assignee <you> --scope <the Grafana's ID>",
                resource=self,
            )

        authorization.RoleAssignment(
            f"{name}-grafana-reads-workspace",
            scope=workspace_id,
            principal_id=created.identity.apply(lambda i: i.principal_id if i else None),
            principal_type="ServicePrincipal",
            role_definition_id=role_definition(client.subscription_id, MONITORING_DATA_READER_ROLE),
            opts=child,
        )
        for i, group_id in enumerate(admins):
            authorization.RoleAssignment(
                f"{name}-grafana-admin-group-{i}",
                scope=created.id,
                principal_id=group_id,
                principal_type="Group",
                role_definition_id=role_definition(client.subscription_id, GRAFANA_ADMIN_ROLE),
                opts=child,
            )
        if not admins and deployer is not None:
            # No admin group: whoever deployed opens the dashboard, as it administers the cluster
            # (cluster.deployerAdmin; its principal type is read from its token, never assumed).
            deployer.assign(
                f"{name}-grafana-admin-deployer",
                self,
                created.id,
                GRAFANA_ADMIN_ROLE,
                "kueue-aks: the identity that ran pulumi up administers the Grafana it made",
            )
