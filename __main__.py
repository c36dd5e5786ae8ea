"""kueue-aks: validate the config and every Kueue object, build the components, export outputs."""

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import pulumi

from components.access.component import TeamAccess, TeamIdentities
from components.assembly import stack_parts
from components.autoscaling.component import provisioning_ready
from components.cluster.component import AksCluster, ExistingAksCluster, KubeconfigCluster
from components.config.parse import load_stack_config
from components.governance.component import PoolGuard
from components.gpu.component import NvidiaDevicePlugin
from components.k8s.part import Part
from components.kueue.install import KueueInstallation
from components.kueue.objects import queue_set, zero_gpu_quotas
from components.kueue.queues import KueueQueues, validated_objects
from components.monitoring.component import Monitoring
from components.multikueue.component import MultiKueueManager, MultiKueueWorker, api_server, read_workers
from components.multikueue.manager import manager_queue_set
from components.operators.component import JobOperators
from components.operators.installs import OperatorsPart
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

cluster: AksCluster | ExistingAksCluster | KubeconfigCluster
if config.cluster.mode == "create":
    cluster = AksCluster("kueue", config)
elif config.cluster.mode == "existing":
    cluster = ExistingAksCluster("kueue", config)
else:
    cluster = KubeconfigCluster("kueue", config)
k8s_opts = pulumi.ResourceOptions(providers={"kubernetes": cluster.provider})
# Reads the cluster's ProvisioningRequest CRD when a pool needs it, creates nothing (no part:
# components/assembly.py).
provisioning = provisioning_ready(config, pools=cluster.node_pools, opts=k8s_opts)


class Component(Protocol):
    """What every in-cluster component is: built from its part, it gives its stack outputs."""

    TYPE: str  # its part's type
    exports: dict[str, Any]


C = TypeVar("C", bound=Component)
# What the stack creates in the cluster, a part per component (components/assembly.py, which the plan's
# --manifests writes out too), each built in the parts' order by its type's builder below; a builder finds
# the components it waits for, built before it, with `built`.
made: dict[str, Component] = {}


def built(component: type[C]) -> C:
    return cast(C, made[component.TYPE])


def built_if_any(component: type[C]) -> list[C]:
    """The component, or none when the stack has no part of its type (assembly decides)."""
    return [built(component)] if component.TYPE in made else []


def operators(part: Part) -> JobOperators:
    assert isinstance(part, OperatorsPart)
    return JobOperators(part.name, part, opts=k8s_opts)


def kueue(part: Part) -> KueueInstallation:
    # Kueue looks for the ProvisioningRequest API and the job kinds' APIs when it starts.
    after = [*provisioning, *built(JobOperators).apis]
    return KueueInstallation(part.name, part, config=config, cluster=cluster, after=after, opts=k8s_opts)


def device_plugin(part: Part) -> NvidiaDevicePlugin:
    return NvidiaDevicePlugin(part.name, part, opts=k8s_opts)


def pool_guard(part: Part) -> PoolGuard:
    return PoolGuard(part.name, part, config=config, opts=k8s_opts)


def monitoring(part: Part) -> Monitoring:
    namespace = built(KueueInstallation).namespace_ready
    return Monitoring(part.name, part, config=config, cluster=cluster, kueue_namespace=namespace, opts=k8s_opts)


def manager(part: Part) -> MultiKueueManager:
    after = built(KueueInstallation).namespace_ready
    return MultiKueueManager(
        part.name, part, workers=workers, kubeconfigs=worker_kubeconfigs, after=after, opts=k8s_opts
    )


def queues(part: Part) -> KueueQueues:
    kueue = built(KueueInstallation)
    secrets = [secret for manager in built_if_any(MultiKueueManager) for secret in manager.secrets]
    return KueueQueues(
        part.name,
        part,
        queues=stack_queues,
        after=[*kueue.ready, *secrets],
        hooks=kueue.webhook_retry,
        namespaces_after=built(JobOperators).ready,
        opts=k8s_opts,
    )


def access(part: Part) -> TeamAccess:
    after = [built(KueueQueues)]
    return TeamAccess(
        part.name, part, config=config, queues=stack_queues, cluster_id=cluster.cluster_id, after=after, opts=k8s_opts
    )


def identities(part: Part) -> TeamIdentities:
    # Only on AKS: the config refuses team identities with a cluster by kubeconfig.
    return TeamIdentities(part.name, part, config=config, cluster=cluster, after=[built(KueueQueues)], opts=k8s_opts)


def worker(part: Part) -> MultiKueueWorker:
    server = api_server(config, cluster.kubeconfig)
    after = built(KueueInstallation).namespace_ready
    return MultiKueueWorker(part.name, part, config=config, server=server, after=after, opts=k8s_opts)


builders: dict[str, Callable[[Part], Component]] = {
    JobOperators.TYPE: operators,
    KueueInstallation.TYPE: kueue,
    NvidiaDevicePlugin.TYPE: device_plugin,
    PoolGuard.TYPE: pool_guard,
    Monitoring.TYPE: monitoring,
    MultiKueueManager.TYPE: manager,
    KueueQueues.TYPE: queues,
    TeamAccess.TYPE: access,
    TeamIdentities.TYPE: identities,
    MultiKueueWorker.TYPE: worker,
}
for part in stack_parts(config, stack_queues):
    made[part.type] = builders[part.type](part)

# Outputs that exist only in some cluster modes, or with monitoring, are left out otherwise, not exported
# empty; each component gives its own (`exports`).
exports: dict[str, Any] = {
    "clusterName": cluster.cluster_name,
    "resourceGroupName": cluster.resource_group_name,
    "oidcIssuerUrl": cluster.oidc_issuer_url,
    "kubeconfig": cluster.kubeconfig,
    "nodePools": cluster.node_pool_names,
}
for component in made.values():
    exports |= component.exports
for key, value in exports.items():
    if value is not None:
        pulumi.export(key, value)
