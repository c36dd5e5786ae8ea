"""The names the stack gives and reads on the cluster: its namespaces, labels and taints, the GPU
resource, and the names a team or pool may not take. Kueue's values, the cluster and the checks
below read them from here.
"""

from __future__ import annotations

CONFIG_PREFIX = "kueue-aks"  # the project's: every key of the stack's config is `kueue-aks:<key>`


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
# learn.microsoft.com/azure/aks/configure-queues-with-automatic-resource-flavors), so no name the stack
# turns into an object may start so.
RESERVED_PREFIX = "aks-"


# Label keys kubelet sets itself or accepts from --node-labels in the kubernetes.io and k8s.io
# namespaces; every other key there is refused, so the node would not join (k8s.io/kubernetes
# pkg/kubelet/apis/well_known_labels.go KubeletLabels and IsKubeletLabel).
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "kubernetes.io/os",
        "kubernetes.io/arch",
    }
)


KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def reserved_node_label(key: str) -> str | None:
    """Why a node label key in Kubernetes' own namespaces cannot be set on a pool, or None."""
    prefix = key.rpartition("/")[0].lower()
    if not prefix:
        return None
    kubernetes = any(prefix == d or prefix.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))
    if (
        not kubernetes
        or prefix in KUBELET_LABEL_NAMESPACES
        or any(prefix.endswith("." + d) for d in KUBELET_LABEL_NAMESPACES)
    ):
        return None
    if key in KUBELET_LABELS:
        return "is set by kubelet and AKS themselves; remove it"
    return (
        f"is in Kubernetes' {prefix} namespace, where kubelet refuses labels other than its own (the nodes "
        "would not join); use your own prefix, or node.kubernetes.io/ or kubelet.kubernetes.io/"
    )
