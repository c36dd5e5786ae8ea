"""kueue-aks: validate the config and every Kueue object, build the components, export outputs."""

import pulumi

from components.access.component import TeamAccess, TeamIdentities
from components.assembly import (
    ACCESS,
    DEVICE_PLUGIN,
    IDENTITIES,
    KUEUE,
    MONITORING,
    MULTIKUEUE_WORKER,
    OPERATORS,
    POOL_GUARD,
    QUEUES,
    stack_parts,
)
from components.autoscaling.component import ProvisioningRequestApi, uses_provisioning
from components.cluster.component import AksCluster, ExistingAksCluster, KubeconfigCluster
from components.config.parse import load_stack_config
from components.governance.component import PoolGuard
from components.gpu.component import NvidiaDevicePlugin
from components.kueue.install import KueueInstallation
from components.kueue.objects import queue_set, zero_gpu_quotas
from components.kueue.queues import KueueQueues, validated_objects
from components.monitoring.component import Monitoring
from components.multikueue.component import MultiKueueManager, MultiKueueWorker, api_server, read_workers
from components.multikueue.manager import manager_queue_set
from components.multikueue.worker import FACTS_OUTPUT, KUBECONFIG_OUTPUT
from components.operators.component import JobOperators
from components.preflight.program import preflight

# Each step raises one pulumi.RunError listing every problem, before any resource is registered.
# The preflight reads Azure's vCPU quota and VM sizes; under quotaPolicy clamp it shrinks Kueue's quotas.
config = preflight(load_stack_config())
# A MultiKueue manager reads its workers' stack outputs and checks them, also before any resource.
workers, worker_kubeconfigs = read_workers(config)
stack_queues = manager_queue_set(config, workers) if config.multi_kueue.is_manager else queue_set(config)
validated_objects(config, stack_queues)
# A team whose share rounds down to 0 GPUs of a flavor only ever borrows GPUs there (the plan says so too).
for warning in zero_gpu_quotas(config, stack_queues.rows):
    pulumi.log.warn(str(warning))
# What the stack creates in the cluster, a part per component, in this order (components/assembly.py,
# which the plan's --manifests writes out too): a component is built when its part is there.
parts = {part.name: part for part in stack_parts(config, stack_queues)}

cluster: AksCluster | ExistingAksCluster | KubeconfigCluster
if config.cluster.mode == "create":
    cluster = AksCluster("kueue", config)
elif config.cluster.mode == "existing":
    cluster = ExistingAksCluster("kueue", config)
else:
    cluster = KubeconfigCluster("kueue", config)
k8s_opts = pulumi.ResourceOptions(providers={"kubernetes": cluster.provider})
provisioning = (
    ProvisioningRequestApi("autoscaling", config, pools=cluster.node_pools, opts=k8s_opts)
    if uses_provisioning(config)
    else None
)
operators = JobOperators(OPERATORS, config, opts=k8s_opts)
# Kueue looks for the ProvisioningRequest API and the job kinds' APIs when it starts.
kueue = KueueInstallation(
    KUEUE,
    config,
    parts.get(KUEUE),  # none with AKS's managed extension
    cluster=cluster,
    after=[*(provisioning.ready if provisioning else ()), *operators.apis],
    opts=k8s_opts,
)
device_plugin = (
    NvidiaDevicePlugin(DEVICE_PLUGIN, parts[DEVICE_PLUGIN], opts=k8s_opts) if DEVICE_PLUGIN in parts else None
)
pool_guard = PoolGuard(POOL_GUARD, config, parts[POOL_GUARD], opts=k8s_opts) if POOL_GUARD in parts else None
monitoring = (
    Monitoring(
        MONITORING, config, parts[MONITORING], cluster=cluster, kueue_namespace=kueue.namespace_ready, opts=k8s_opts
    )
    if MONITORING in parts
    else None
)
manager = (
    MultiKueueManager("multikueue", workers, worker_kubeconfigs, namespace=kueue.namespace_ready, opts=k8s_opts)
    if config.multi_kueue.is_manager
    else None
)
queues = KueueQueues(
    QUEUES,
    config,
    stack_queues,
    ready=[*kueue.ready, *(manager.secrets if manager else ())],
    hooks=kueue.webhook_retry,
    namespaces_after=operators.ready,
    opts=k8s_opts,
)
access = TeamAccess(
    ACCESS, config, stack_queues, parts[ACCESS], cluster_id=cluster.cluster_id, after=[queues], opts=k8s_opts
)
# Only on AKS: the config refuses team identities with a cluster by kubeconfig.
identities = (
    TeamIdentities(IDENTITIES, config, parts[IDENTITIES], cluster=cluster, after=[queues], opts=k8s_opts)
    if IDENTITIES in parts
    else None
)
worker = (
    MultiKueueWorker(
        MULTIKUEUE_WORKER,
        config,
        parts[MULTIKUEUE_WORKER],
        server=api_server(config, cluster.kubeconfig),
        namespace=kueue.namespace_ready,
        opts=k8s_opts,
    )
    if MULTIKUEUE_WORKER in parts
    else None
)

# Outputs that exist only in some cluster modes, or with monitoring, are left out otherwise, not exported empty.
optional = {
    "clusterName": cluster.cluster_name,
    "resourceGroupName": cluster.resource_group_name,
    "oidcIssuerUrl": cluster.oidc_issuer_url,
    "kubeconfig": cluster.kubeconfig,
}
if monitoring:
    optional |= {
        "azureMonitorWorkspaceId": monitoring.workspace_id,
        "prometheusQueryEndpoint": monitoring.prometheus_query_endpoint,
        "grafanaName": monitoring.grafana_name,
        "grafanaUrl": monitoring.grafana_url,
    }
for key, value in optional.items():
    if value is not None:
        pulumi.export(key, value)
pulumi.export("nodePools", cluster.node_pool_names)
pulumi.export("kueueNamespace", kueue.namespace_name)
pulumi.export("kueueVersion", config.kueue.running_version)
pulumi.export("operatorVersions", operators.versions)
pulumi.export("localQueues", queues.local_queues)
pulumi.export("quotaTable", queues.quota_table)
pulumi.export("teams", access.teams)  # who can submit where: namespace, LocalQueues, quota, member groups
if identities:  # what a team's jobs run as in Azure: client ID (no secret), principal, ServiceAccount
    pulumi.export("teamIdentities", identities.identities)
if worker:  # what a manager reads through its StackReference (components/multikueue)
    pulumi.export(FACTS_OUTPUT, worker.facts)
    pulumi.export(KUBECONFIG_OUTPUT, worker.kubeconfig)
if manager:
    pulumi.export("multiKueueWorkers", manager.workers)
