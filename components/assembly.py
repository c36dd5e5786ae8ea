"""What a stack creates in its cluster, component by component, in the order the program builds
them (pure: plain data in and out; no Pulumi import).

One description, read by three readers:
- the program (`__main__.py`) builds a component for each part and only for those, in this order;
- the plan's `--manifests` (components/manifests/folders.py) writes every part's objects and Helm
  releases, in this order;
- tests/test_assembly.py runs every stack the tests know under mocks and checks that each
  component registers exactly its part's objects and releases, no more and no fewer.

Every component takes its part in one shape, `Component(name, part, *, <what it waits for and
what it reads beyond the cluster's objects>, opts)`, registers the part's objects and releases and
none of its own making, and gives the stack outputs it has as `exports`. A new object kind is added
to its builder and to its part here; should one of the two be missed, the assembly test names the
component and the object.

What the program creates that no part lists, on purpose: the Azure resources (not in the cluster),
the ProvisioningRequest CRD (read, never created: components/autoscaling), and a MultiKueue
manager's kubeconfig Secrets (made of its workers' stack outputs, credentials that exist only
while the program runs: the manager's part is empty).
"""

from __future__ import annotations

from .access.identity import identity_objects
from .access.members import access_objects
from .config.names import KUEUE_NAMESPACE
from .config.stack import StackConfig
from .facts.device_plugin import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_RELEASE_NAME
from .governance.policies import pool_guard
from .gpu.values import device_plugin_chart, device_plugin_values
from .k8s.part import HelmRelease, Part
from .kueue.objects import QueueSet
from .kueue.policies import aggregated_role_guard, priority_class_guard
from .kueue.values import KUEUE_RELEASE_NAME, kueue_chart, kueue_helm_values
from .monitoring.scrape import scrape_objects
from .multikueue.worker import manager_access_objects
from .operators.installs import OperatorsPart, installs, operator_objects
from .operators.policies import rayservice_guard

OPERATORS = "operators"
KUEUE = "kueue"
DEVICE_PLUGIN = "gpu"
GOVERNANCE = "governance"
MONITORING = "monitoring"
QUEUES = "queues"
ACCESS = "access"
IDENTITIES = "identities"
MULTIKUEUE_WORKER = "multikueue"
MULTIKUEUE_MANAGER = "multikueue"  # a stack is a worker, a manager or neither


def stack_parts(config: StackConfig, queues: QueueSet) -> tuple[Part, ...]:
    """The parts of the stack `config` describes, with `queues` its QueueSet (a MultiKueue
    manager's, for a manager), in the program's order."""
    operators = installs(config)
    parts: list[Part] = [
        OperatorsPart(
            OPERATORS,
            "kueue-aks:operators:JobOperators",
            (*operator_objects(config), *rayservice_guard(config)),
            tuple(
                HelmRelease(i.operator.release_name, i.namespace, i.chart, i.values, True) for i in operators if i.chart
            ),
            installs=tuple(operators),
        )
    ]
    if config.kueue.extension is None:
        # The role guard before the release, and kept until after its uninstall.
        release = HelmRelease(
            KUEUE_RELEASE_NAME, KUEUE_NAMESPACE, kueue_chart(config), kueue_helm_values(config), False
        )
        parts.append(Part(KUEUE, "kueue-aks:kueue:KueueInstallation", tuple(aggregated_role_guard()), (release,)))
    else:  # AKS's managed extension: Kueue is Azure's to install, nothing of it is in the part
        parts.append(Part(KUEUE, "kueue-aks:kueue:KueueInstallation", ()))
    if config.has_gpu:
        plugin = HelmRelease(
            DEVICE_PLUGIN_RELEASE_NAME,
            DEVICE_PLUGIN_NAMESPACE,
            device_plugin_chart(config),
            device_plugin_values(config),
            False,
        )
        parts.append(Part(DEVICE_PLUGIN, "kueue-aks:gpu:NvidiaDevicePlugin", (), (plugin,)))
    if config.governance.enforce:
        parts.append(Part(GOVERNANCE, "kueue-aks:governance:PoolGuard", tuple(pool_guard(config))))
    if config.monitoring.enabled:
        parts.append(Part(MONITORING, "kueue-aks:monitoring:Monitoring", tuple(scrape_objects(config))))
    if config.multi_kueue.is_manager:  # before the queues: its MultiKueueClusters name its Secrets
        parts.append(Part(MULTIKUEUE_MANAGER, "kueue-aks:multikueue:MultiKueueManager", ()))
    parts.append(
        Part(QUEUES, "kueue-aks:queues:KueueQueues", (*priority_class_guard(config), *queues.objects)),
    )
    parts.append(Part(ACCESS, "kueue-aks:access:TeamAccess", tuple(access_objects(config, queues.local_queues))))
    identities = identity_objects(config)
    if identities:
        parts.append(Part(IDENTITIES, "kueue-aks:access:TeamIdentities", tuple(identities)))
    if config.multi_kueue.is_worker:
        parts.append(
            Part(MULTIKUEUE_WORKER, "kueue-aks:multikueue:MultiKueueWorker", tuple(manager_access_objects(config)))
        )
    return tuple(parts)
