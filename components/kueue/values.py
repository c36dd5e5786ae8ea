"""Helm values and manager configuration for Kueue's chart, built from the stack config, and the
arguments of AKS's managed Kueue extension when that installs Kueue instead (`extension_args`).

Pure (no Pulumi import): the same dicts are deployed by components/kueue/install.py, checked by
tests/kueue/test_values.py against the pinned chart's values.yaml, feature-gate lists and
manager-config field tree in ../shared, and can be rendered with yaml.safe_dump for review.
Upstream files are cited as `path@v0.19.2` in kubernetes-sigs/kueue.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from ..config.multikueue import DISPATCHERS
from ..config.names import KUEUE_NAMESPACE, MANAGED_LABEL
from ..config.stack import StackConfig
from ..facts.kueue_resources import manager_memory_mib
from ..facts.kueue_versions import AKS_EXTENSION_NAME, AKS_EXTENSION_TYPE
from ..k8s.charts import ChartRef, chart_ref

KUEUE_CHART_NAME = "kueue"  # the chart's name in an https chart repository
# Set explicitly: Pulumi would otherwise add a random suffix, and the chart's fullname (every
# object and webhook name) follows the release name (charts/kueue/templates/_helpers.tpl@v0.19.2;
# kubernetes-sigs/kueue#6797).
KUEUE_RELEASE_NAME = "kueue"
# The chart's fullname is the release name when that contains "kueue" (chart
# templates/_helpers.tpl "kueue.fullname"); the webhook Service is "<fullname>-webhook-service".
KUEUE_WEBHOOK_SERVICE = f"{KUEUE_RELEASE_NAME}-webhook-service"
MANAGER_CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"

# AKS labels every system-pool node with it (learn.microsoft.com/azure/aks/use-node-labels; the system
# pool is not tainted).
SYSTEM_POOL_SELECTOR = {"kubernetes.azure.com/mode": "system"}
# The system pool has no taint; this only keeps a controller schedulable if AKS's
# CriticalAddonsOnly taint is ever put on it (only_critical_addons_enabled).
SYSTEM_POOL_TOLERATIONS = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
# The controller pods' labels (chart templates/_helpers.tpl "kueue.selectorLabels").
CONTROLLER_POD_LABELS = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": KUEUE_RELEASE_NAME,
    "control-plane": "controller-manager",
}


def gate_enabled(config: StackConfig, gate: str) -> bool:
    """The gate's effective value: as configured, else the pinned release's default."""
    return config.kueue.feature_gates.get(gate, config.kueue.release.gates[gate].default)


def manager_config(config: StackConfig) -> dict[str, Any]:
    """The complete config.kueue.x-k8s.io/v1beta2 Configuration for controllerManagerConfigYaml.

    The chart replaces its whole default with this string (charts/kueue/values.yaml@v0.19.2), so every entry of the
    chart's default is restated here; tests check that none is lost. Feature gates are not set
    here: they go on the command line, and Kueue exits when both are used (pkg/config/validation.go@v0.19.2).
    `internalCertManagement` is left for the chart to inject with the right names
    (charts/kueue/templates/manager/manager-config.yaml@v0.19.2; kubernetes-sigs/kueue#6866).
    """
    return {
        "apiVersion": MANAGER_CONFIG_API_VERSION,
        "kind": "Configuration",
        # Chart defaults, unchanged (chart 0.19.2 values.yaml).
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {
            "bindAddress": ":8443",
            # Written with `enable`: a localQueueMetrics block without it turns the metrics off
            # (pkg/metrics/localqueue.go@v0.19.2). Follows the gate so the two switches never disagree.
            "localQueueMetrics": {"enable": gate_enabled(config, "LocalQueueMetrics")},
            # Quota and usage per ClusterQueue, flavor and resource (kueue_cluster_queue_nominal_quota,
            # _resource_usage...; pkg/metrics/metrics.go@v0.19.2), which the dashboard's quota panels read. Written
            # only then, so a stack without monitoring keeps the manager config it had.
            **({"enableClusterQueueResources": True} if config.monitoring.enabled else {}),
        },
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        # Opt-in namespaces: Kueue manages jobs only in namespaces labelled MANAGED_LABEL=true (the
        # team namespaces), and the chart copies this selector into every job and pod webhook
        # (charts/kueue/templates/webhook/manifests.yaml@v0.19.2). ManagedJobsNamespaceSelectorAlwaysRespected
        # is GA and locked on in 0.19 (on by default in 0.18, where the config refuses turning it off),
        # so it limits every integration, not only the pod-based ones; and since the webhooks fail
        # closed, a Kueue outage then cannot block pods in kube-system, kueue-system or any other
        # namespace (kubernetes-sigs/kueue#5244). Kueue also refuses a pod integration whose selector matches
        # kube-system or its own namespace (pkg/config/validation.go@v0.19.2); neither carries the label.
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}},
        "integrations": {"frameworks": kueue_frameworks(config)},
        # Fair sharing on (in v1beta2 the block's presence enables it): idle quota borrowed within
        # the cohort is divided by the ClusterQueues' fairSharing weights, which kueue_objects sets
        # from the teams' shares. Only LessThanOrEqualToFinalShare: a queue preempts a borrower only
        # if, after both moves, it holds no larger a share than the victim, so two borrowers do not
        # take GPUs back and forth, each time losing the victim's work. A queue under its quota still
        # reclaims it (its share is 0). Kueue's default pair is worse on bench/outcomes' sweep at the
        # highest load (docs/outcomes.md, "Measured here"), and kueue#14543 reproduces an infinite
        # preemption loop only with both strategies.
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]},
        **({"multiKueue": multikueue_settings(config)} if config.multi_kueue.is_manager else {}),
    }


def multikueue_settings(config: StackConfig) -> dict[str, Any]:
    """A manager's MultiKueue settings (apis/config/v1beta2/configuration_types.go@v0.19.2). The origin labels its
    objects in the workers; Kueue's garbage collector deletes those of that origin whose workload
    is gone, so two managers sharing workers must have distinct origins (the default is per stack)."""
    mk = config.multi_kueue
    return {
        "origin": mk.origin,
        "workerLostTimeout": mk.worker_lost_timeout,
        "gcInterval": mk.gc_interval,
        "dispatcherName": DISPATCHERS[mk.dispatcher],
    }


def kueue_chart(config: StackConfig) -> ChartRef:
    return chart_ref(config.kueue.chart, KUEUE_CHART_NAME, config.kueue.version, config.registry_logins)


def kueue_frameworks(config: StackConfig) -> list[str]:
    """The configured frameworks, plus Kueue's `pod` integration when governance is on: then a bare
    pod in a team namespace is queued and admitted like a Job instead of bypassing the quota (the
    integration acts only in the team namespaces, by managedJobsNamespaceSelector)."""
    frameworks = list(config.kueue.frameworks)
    if config.kueue.extension:  # the extension's own list, which has no pod integration (docs/kueue-install.md)
        return frameworks
    if config.governance.enforce and "pod" not in frameworks:
        frameworks.append("pod")
    return frameworks


def kueue_helm_values(config: StackConfig) -> dict[str, Any]:
    """Values for the Kueue chart. Every key path exists in the pinned chart's values.yaml.

    The image is not overridden: the published chart already points at
    registry.k8s.io/kueue/kueue:v<version> with IfNotPresent (only the chart in git uses a staging
    image; hack/helm-chart-package.sh@v0.19.2 rewrites it), so the image always matches the pinned chart version.
    """
    replicas = config.kueue.replicas
    manager: dict[str, Any] = {
        # Kueue's webhooks fail closed: an evicted controller blocks job submission in the team
        # namespaces, so it gets the critical-add-on priority (kubernetes.io docs
        # "Guaranteed Scheduling For Critical Add-On Pods"; NVIDIA's chart does the same).
        "priorityClassName": "system-cluster-critical",
    }
    if config.kueue.image_repository:
        # Only the repository: the published chart's tag is v<version>, so the image stays pinned.
        manager["image"] = {"repository": config.kueue.image_repository}
    if config.uses_topology:
        memory = f"{tas_memory_mib(config)}Mi"
        # Requests equal limits, as in the chart default; cpu keeps the chart's values (Helm merges maps).
        manager["resources"] = {"requests": {"memory": memory}, "limits": {"memory": memory}}

    controller: dict[str, Any] = {
        # The chart's list form; it renders one --feature-gates argument (charts/kueue/templates/_helpers.tpl
        # @v0.19.2). Sorted so
        # reordering the config map is not a diff that restarts Kueue.
        "featureGates": [{"name": name, "enabled": on} for name, on in sorted(config.kueue.feature_gates.items())],
        "replicas": replicas,
        # A PDB with minAvailable 1 on a single replica would block every node drain (AKS
        # upgrades), so it is enabled only when another replica can keep serving.
        "podDisruptionBudget": {"enabled": replicas > 1, "minAvailable": 1},
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "tolerations": copy.deepcopy(SYSTEM_POOL_TOLERATIONS),
        "manager": manager,
    }
    if replicas > 1:
        controller["topologySpreadConstraints"] = spread_constraints(config)

    return {
        "controllerManager": controller,
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(config), sort_keys=False)},
    }


def spread_constraints(config: StackConfig) -> list[dict[str, Any]]:
    """Spread the controller replicas over nodes (and zones when the cluster is zonal).

    ScheduleAnyway: a one-node system pool (the dev stack) must still run both replicas, because
    Helm's wait needs every replica Ready.
    """
    keys = ["kubernetes.io/hostname"] + (["topology.kubernetes.io/zone"] if config.cluster.zones else [])
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": dict(CONTROLLER_POD_LABELS)},
        }
        for key in keys
    ]


def tas_memory_mib(config: StackConfig) -> int:
    """Manager memory when TAS is used: chart default plus 32 MiB per node the cluster can reach."""
    return manager_memory_mib(config.reachable_nodes, topology=True)


def extension_args(config: StackConfig) -> dict[str, Any]:
    """The Extension resource's arguments besides the cluster: pinned, never upgraded by Azure.

    API 2023-05-01 (azure-native's default) pins a version only with autoUpgradeMinorVersion false,
    and then applies no release train (Azure/azure-rest-api-specs specification/kubernetesconfiguration/
    resource-manager/Microsoft.KubernetesConfiguration/extensions/stable/2025-03-01/extensions.json; the SDK
    still sends its default, Stable); autoUpgradeMode, the docs' `--auto-upgrade-mode none`, exists only
    from 2025-03-01 (pulumi-azure-native 3.29.0 kubernetesconfiguration/extension.py). The keys are the
    azure-native Extension's arguments.
    """
    extension = config.kueue.extension
    assert extension is not None
    # Cluster scope in kueue-system, as the docs install it: the extension's ServiceAccount identity
    # is bound to that namespace (Azure/taugrid charts/taugrid/README.md, which installs the same chart).
    return {
        "cluster_rp": "Microsoft.ContainerService",
        "cluster_resource_name": "managedClusters",
        "extension_name": AKS_EXTENSION_NAME,
        "extension_type": AKS_EXTENSION_TYPE,
        "version": extension.version,
        "auto_upgrade_minor_version": False,
        "scope": {"cluster": {"release_namespace": KUEUE_NAMESPACE}},
    }
