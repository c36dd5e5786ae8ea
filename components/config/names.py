"""The names the stack gives and reads on the cluster: its namespaces, labels and taints, the GPU
resource, and the names a team or pool may not take. Kueue's values, the cluster and the checks
below read them from here.
"""

from __future__ import annotations

NAMESPACE = "kueue-aks"


SYSTEM_POOL_NAME = "system"


KUEUE_NAMESPACE = "kueue-system"


# Team namespaces carry both labels: the team's ClusterQueue selects its namespace by TEAM_LABEL,
# and Kueue's managedJobsNamespaceSelector manages jobs only where MANAGED_LABEL is "true".
TEAM_LABEL = "kueue-aks.io/team"


MANAGED_LABEL = "kueue-aks.io/managed"


POOL_LABEL = "kubernetes.azure.com/agentpool"  # set by AKS on every node of a pool


# AKS adds this taint to every Spot node (learn.microsoft.com/azure/aks/spot-node-pool); it is
# declared on the pool too, so Pulumi sees no drift and the flavor can tolerate it.
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"


# With governance on, every user pool carries this taint and every flavor tolerates it, so only
# pods that Kueue admitted (it adds the flavor's tolerations) are scheduled onto pool nodes.
QUEUED_TAINT = "kueue-aks.io/queued=true:NoSchedule"


# Our default taint for GPU pools: the key equals the resource name, so pods that request
# nvidia.com/gpu get the toleration automatically (ExtendedResourceToleration admission plugin).
DEFAULT_GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"


HOSTNAME_LABEL = "kubernetes.io/hostname"


# A team's topology-aware pools get their own ClusterQueue, "<team>-topology" (kueue_objects).
TOPOLOGY_QUEUE_SUFFIX = "-topology"


# Namespaces a team may not take: Kubernetes' own, Kueue's, and the device plugin's.
RESERVED_NAMESPACES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", KUEUE_NAMESPACE, "nvidia-device-plugin"}
)


# AKS refuses custom node labels under its own prefix (learn.microsoft.com/azure/aks/use-node-labels).
RESERVED_LABEL_PREFIXES = ("kubernetes.azure.com/",)


# AKS's managed Kueue extension owns every object named aks-… (aks-cpu, aks-*-priority, aks-default:
# learn.microsoft.com/azure/aks/configure-queues-with-automatic-resource-flavors; ../shared/reference/
# managed-kueue.md §1.7), so no name the stack turns into an object may start so.
RESERVED_PREFIX = "aks-"
