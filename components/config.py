"""The stack-config contract: parse `kueue-aks:*` keys into frozen dataclasses.

`parse_config` is pure: it takes the raw values (as `pulumi.Config.get_object` or a
`Pulumi.<stack>.yaml` file gives them), checks every rule of the contract, and either returns a
`StackConfig` or raises one `ConfigError` that lists every problem with its key path and what is
allowed. Nothing else in the project reads config.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from .facts import capacity
from .facts import kueue_versions
from .facts import operators as operator_catalog
from .k8s.charts import chart_source_problem, image_repository_problem
from .facts.azure_names import NODE_RESOURCE_GROUP_LIMIT, node_resource_group_length
from .facts.capacity import NodeResources, VmSize
from .facts.regions import region_problem
from .k8s.names import TAINT_EFFECTS, is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name
from .k8s.quantity import QuantityError, cpu_millicores, memory_mib
from .facts.device_plugin import DEVICE_PLUGIN_VERSION
from .facts.kueue_resources import manager_memory_mib
from .facts.operator_sizing import system_pool_demand, system_pool_shortfall

NAMESPACE = "kueue-aks"
SYSTEM_POOL_NAME = "system"
KUEUE_NAMESPACE = "kueue-system"
GPU_RESOURCE = "nvidia.com/gpu"
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

TIERS = ("Free", "Standard", "Premium")
DEFAULT_KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
DEFAULT_DEVICE_PLUGIN_CHART = "https://nvidia.github.io/k8s-device-plugin"
# Relative chart paths start at the project directory (where Pulumi runs the program).
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# Stands for a secret that is still encrypted in the stack file (the offline plan cannot decrypt).
ENCRYPTED = "<encrypted>"
# Keys that shape a cluster the program creates; meaningless for a cluster it only uses.
CREATION_KEYS = ("name", "kubernetesVersion", "tier", "zones", "systemPool", "adminGroupObjectIds",
                 "disableLocalAccounts", "autoUpgradeChannel", "deployerAdmin")
UPGRADE_CHANNELS = ("none", "patch", "stable", "rapid", "node-image")
DEFAULT_FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
)
DEFAULT_FEATURE_GATES = {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}
NAMESPACE_SELECTOR_GATE = "ManagedJobsNamespaceSelectorAlwaysRespected"
DEFAULT_TOPOLOGY_LEVELS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname")
HOSTNAME_LABEL = "kubernetes.io/hostname"
# A team's topology-aware pools get their own ClusterQueue, "<team>-topology" (kueue_objects).
TOPOLOGY_QUEUE_SUFFIX = "-topology"
# Namespaces a team may not take: Kubernetes' own, Kueue's, and the device plugin's.
RESERVED_NAMESPACES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", KUEUE_NAMESPACE, "nvidia-device-plugin"}
)
# AKS refuses custom node labels under its own prefix (learn.microsoft.com/azure/aks/use-node-labels).
RESERVED_LABEL_PREFIXES = ("kubernetes.azure.com/",)

_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")  # AKS's; no "-", so no pool name is in the aks- prefix
# AKS's managed Kueue extension owns every object named aks-… (aks-cpu, aks-*-priority, aks-default:
# learn.microsoft.com/azure/aks/configure-queues-with-automatic-resource-flavors; ../shared/reference/
# managed-kueue.md §1.7), so no name the stack turns into an object may start so.
RESERVED_PREFIX = "aks-"
# AKS cluster names: 1-63 letters, digits, '-' and '_', starting and ending with a letter or digit.
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")
_RESOURCE_GROUP = re.compile(r"^[-\w._()]{1,90}$")
_K8S_VERSION = re.compile(r"^[1-9][0-9]*\.[0-9]+(\.[0-9]+)?$")
_SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
# Azure resource IDs (learn.microsoft.com/azure/azure-resource-manager/templates/template-functions-resource#resourceid);
# resource provider and type names compare without case.
_RESOURCE_ID = r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w._()]{1,90}/providers/%s/[A-Za-z0-9][A-Za-z0-9-]{0,62}$"
_WORKSPACE_ID = re.compile(_RESOURCE_ID % r"Microsoft\.Monitor/accounts", re.IGNORECASE)
_GRAFANA_ID = re.compile(_RESOURCE_ID % r"Microsoft\.Dashboard/grafana", re.IGNORECASE)
_GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_GROUP_NAME = re.compile(r"^(?!system:)\S(.*\S)?$")
INT32_MAX = 2**31 - 1
# ValidatingAdmissionPolicy, which the stack's guards use (components/k8s/admission.py), is GA from 1.30.
MIN_KUBERNETES_VERSION = (1, 30)
# AKS's managed cluster autoscaler handles ProvisioningRequests from Kubernetes 1.33 (MicrosoftDocs
# azure-aks-docs articles/aks/cluster-autoscaler.md, "Use ProvisioningRequest with the cluster
# autoscaler"; ../shared/reference/autoscaling.md §5).
MIN_PROVISIONING_REQUEST_VERSION = (1, 33)


def _kubernetes_minor(version: str) -> tuple[int, int]:
    """(major, minor) of a Kubernetes version the config accepted, e.g. "1.33" or "1.33.2"."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# --- the model -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def toleration(self) -> dict[str, str]:
        """The toleration that matches exactly this taint."""
        if self.value:
            return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


@dataclass(frozen=True)
class SystemPool:
    vm_size: str = "Standard_D4s_v5"
    count: int = 2


@dataclass(frozen=True)
class ExistingCluster:
    resource_group: str
    name: str


@dataclass(frozen=True)
class ClusterSettings:
    name: str
    kubernetes_version: str | None = None
    tier: str = "Free"
    zones: tuple[str, ...] = ()
    system_pool: SystemPool = SystemPool()
    admin_group_object_ids: tuple[str, ...] = ()
    disable_local_accounts: bool = False
    auto_upgrade_channel: str = "patch"
    # The identity that runs `pulumi up` gets AKS RBAC Cluster Admin on the cluster it creates
    # (components/cluster/deployer.py); false: access comes through adminGroupObjectIds only.
    deployer_admin: bool = True
    existing: ExistingCluster | None = None  # an AKS cluster made elsewhere: nothing Azure is created
    kubeconfig: str | None = field(default=None, repr=False)  # any cluster: no Azure at all; a secret

    @property
    def mode(self) -> str:
        """create | existing | kubeconfig"""
        return "existing" if self.existing else "kubeconfig" if self.kubeconfig else "create"


@dataclass(frozen=True)
class NodePool:
    name: str
    vm_size: str
    node: VmSize  # the node's hardware: the catalog entry with any `capacity` override applied
    min_count: int
    max_count: int
    spot: bool = False
    taints: tuple[Taint, ...] = ()  # as configured, or the GPU default
    labels: Mapping[str, str] = field(default_factory=dict)
    topology: bool = False
    governed: bool = False  # carries QUEUED_TAINT (kueue-aks:governance.enforce)
    # Kueue admits a workload on this pool's flavor only after the autoscaler provisioned nodes
    # for all of its pods (ProvisioningRequest, best-effort-atomic-scale-up: all or nothing).
    provisioning_request: bool = False
    # Set by the preflight's `clamp` policy: the nodes the subscription's vCPU quota lets Azure
    # create. Kueue's quotas count min(maxCount, this); the pool itself keeps maxCount.
    quota_nodes: int | None = None

    @property
    def capacity_nodes(self) -> int:
        """The nodes Kueue's quotas count: maxCount, or fewer when Azure's quota allows fewer."""
        return self.max_count if self.quota_nodes is None else min(self.max_count, self.quota_nodes)

    @property
    def autoscaled(self) -> bool:
        return self.min_count < self.max_count

    @property
    def is_gpu(self) -> bool:
        return self.node.is_gpu

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        """Every taint the pool's nodes carry: the configured ones, AKS's spot taint, and the
        governance taint that keeps pods Kueue did not admit off the pool."""
        extra = [_parse_taint(SPOT_TAINT)] if self.spot else []
        extra += [_parse_taint(QUEUED_TAINT)] if self.governed else []
        return self.taints + tuple(t for t in extra if t not in self.taints)

    @property
    def allocatable(self) -> NodeResources:
        return capacity.node_allocatable(self.node)

    @property
    def capacity(self) -> NodeResources:
        return capacity.pool_capacity(self.node, self.capacity_nodes)


# How Kueue gets onto the cluster: the stack's pinned Helm release, or AKS's managed Kueue extension
# (docs/kueue-install.md): on create and existing clusters the stack creates the extension, in
# kubeconfig mode it uses the one the cluster has.
KUEUE_INSTALLS = ("helm", "aksExtension")
# What only the Helm release lets the stack set; the extension runs Kueue with its own settings
# ("the Kueue version and configuration supported by the extension": learn.microsoft.com/azure/aks/
# kueue-overview, ../shared/reference/managed-kueue.md §1.6).
HELM_ONLY_KUEUE_KEYS = ("version", "featureGates", "replicas", "chart", "imageRepository")


@dataclass(frozen=True)
class KueueSettings:
    version: str = kueue_versions.DEFAULT_VERSION
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_FEATURE_GATES))
    frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS
    replicas: int = 2
    chart: str = DEFAULT_KUEUE_CHART  # oci:// or https:// repository, or a local .tgz
    image_repository: str | None = None  # a mirror of registry.k8s.io/kueue/kueue; tag = version
    install: str = "helm"  # helm | aksExtension
    # With aksExtension: the pinned extension; `version` is then its schema release (the tables
    # and CRDs the objects are validated with) and feature_gates is empty (the extension's own).
    extension: kueue_versions.AksKueueExtension | None = None

    @property
    def release(self) -> kueue_versions.KueueRelease:
        return kueue_versions.RELEASES[self.version]

    @property
    def described(self) -> str:
        """How the plan names the Kueue a stack runs."""
        if self.extension:
            return f"Kueue {self.extension.kueue} from AKS's managed extension {self.extension.version}"
        return f"Kueue {self.version}"

    @property
    def running_version(self) -> str:
        """The Kueue version the cluster runs."""
        return self.extension.kueue if self.extension else self.version


@dataclass(frozen=True)
class DevicePluginSettings:
    chart: str = DEFAULT_DEVICE_PLUGIN_CHART
    image_repository: str | None = None  # a mirror of nvcr.io/nvidia/k8s-device-plugin


# How much a team may borrow of each flavor's resources, as a multiple of its own quota there
# (Kueue's borrowingLimit). No limit by default: on the outcome benchmark (docs/outcomes.md) a
# limit of 2 never shortened the makespan, and its fairness gain did not repeat.
UNLIMITED = "unlimited"


@dataclass(frozen=True)
class Team:
    name: str
    share: Decimal  # percent of every flavor's capacity, (0, 100]
    pools: tuple[str, ...]
    # The groups whose users may submit to the team's queues: Entra ID group object IDs on AKS, the
    # cluster's own group names in kubeconfig mode (components/access grants them).
    members: tuple[str, ...] = ()
    # A multiple of the team's quota it may borrow from what the others leave idle; None: no limit.
    borrowing: Decimal | None = None


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    description: str = ""


# A job without the kueue.x-k8s.io/priority-class label gets its pods' priority, 0 when they name no
# PriorityClass (Kueue's pkg/util/priority), so the everyday class is 0 and such a job runs as
# `normal`, not below `low`.
DEFAULT_PRIORITY = 0
DEFAULT_PRIORITY_CLASSES = (
    PriorityClass("high", 1000, "Urgent work; preempts lower priorities in its team's queue."),
    PriorityClass("normal", DEFAULT_PRIORITY, "Everyday batch jobs; a job without a priority label runs at this priority."),
    PriorityClass("low", -1000, "Opportunistic work; first to be preempted."),
)


# Namespaces whose pods may always reach pool nodes: Kubernetes' and AKS's own DaemonSets and
# the device plugin's. Kueue's own pods run on the system pool and need no exemption.
SYSTEM_EXEMPT_NAMESPACES = ("kube-system", "nvidia-device-plugin")


@dataclass(frozen=True)
class Governance:
    enforce: bool = True
    exempt_namespaces: tuple[str, ...] = ()  # in addition to SYSTEM_EXEMPT_NAMESPACES

    @property
    def exempt(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(SYSTEM_EXEMPT_NAMESPACES + self.exempt_namespaces))


@dataclass(frozen=True)
class Monitoring:
    """Kueue's metrics collected and shown (docs/monitoring.md); nothing is created while off."""

    enabled: bool = False
    workspace_id: str | None = None  # an existing Azure Monitor workspace; default: the stack creates one
    grafana_id: str | None = None  # an existing Azure Managed Grafana; default: the stack creates one
    service_monitor: bool = False  # kubeconfig mode: a Prometheus Operator ServiceMonitor
    grafana_admin_group_ids: tuple[str, ...] = ()  # Grafana Admin on a new Grafana; default the cluster admins


@dataclass(frozen=True)
class OperatorSettings:
    """An operator the enabled frameworks need (components/facts/operators.py)."""

    key: str  # kuberay | jobset | trainer | mpiOperator | trainingOperator | leaderWorkerSet | ...
    install: str = "managed"  # managed: the stack installs it | external: the cluster already has it
    chart: str | None = None  # a mirror of the operator's chart (Helm operators only)
    image_repository: str | None = None  # a mirror of the controller image; tag = the pinned version


QUOTA_POLICIES = ("error", "warn", "clamp")


@dataclass(frozen=True)
class Preflight:
    """What to do before any resource: read the subscription's vCPU quota and the region's VM
    sizes from Azure and compare them with the pools at maxCount (components/preflight)."""

    enabled: bool = True
    quota_policy: str = "error"  # error | warn | clamp (Kueue quotas from what the quota allows)


MULTIKUEUE_ROLES = ("none", "worker", "manager")
# MultiKueueConfig.spec.clusters holds 1 to 20 names (kueue v0.19.2 apis/kueue/v1beta2/multikueue_types.go).
MAX_WORKERS = 20
# The dispatchers Kueue builds in (../shared/reference/multikueue.md §8); any other name would
# wait for an external controller this program does not install.
DISPATCHERS = {"AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
               "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental"}
# A stack reference: <organization>/<project>/<stack> (Pulumi Cloud) or <project>/<stack>
# (self-managed backends, where the organization is "organization").
_STACK_REF = re.compile(r"^([A-Za-z0-9_.-]+/){1,2}[A-Za-z0-9_.-]+$")
# Go's time.ParseDuration, which Kueue's config decoding uses, without signs or fractions.
_DURATION = re.compile(r"^([0-9]+(ns|us|µs|ms|s|m|h))+$")


@dataclass(frozen=True)
class WorkerStack:
    """A MultiKueue worker as the manager names it: the MultiKueueCluster's name and the kueue-aks
    worker stack whose outputs give its credentials, queues and quotas."""

    name: str
    stack: str


@dataclass(frozen=True)
class MultiKueue:
    """kueue-aks:multiKueue. A worker is the ordinary single cluster plus a ServiceAccount whose
    kubeconfig it exports; a manager keeps the teams' queues and dispatches to its workers."""

    role: str = "none"  # none | worker | manager
    server: str | None = None  # worker: the API server URL its managers dial; default the cluster's own
    workers: tuple[WorkerStack, ...] = ()  # manager: in dispatch preference order
    origin: str = ""  # manager: the label value on its objects in the workers; default kueue-aks-<stack>
    worker_lost_timeout: str = "15m"
    gc_interval: str = "1m"
    dispatcher: str = "AllAtOnce"

    @property
    def is_manager(self) -> bool:
        return self.role == "manager"

    @property
    def is_worker(self) -> bool:
        return self.role == "worker"


@dataclass(frozen=True)
class StackConfig:
    stack: str
    location: str
    cluster: ClusterSettings
    node_pools: tuple[NodePool, ...]
    kueue: KueueSettings
    teams: tuple[Team, ...]
    priority_classes: tuple[PriorityClass, ...] = DEFAULT_PRIORITY_CLASSES
    topology_levels: tuple[str, ...] = DEFAULT_TOPOLOGY_LEVELS
    governance: Governance = Governance()
    device_plugin: DevicePluginSettings = DevicePluginSettings()
    monitoring: Monitoring = Monitoring()
    operators: tuple[OperatorSettings, ...] = ()  # every operator the frameworks need, in catalog order
    preflight: Preflight = Preflight()
    multi_kueue: MultiKueue = MultiKueue()

    def pool(self, name: str) -> NodePool:
        return next(p for p in self.node_pools if p.name == name)

    @property
    def has_gpu(self) -> bool:
        return any(p.is_gpu for p in self.node_pools)

    @property
    def unlabelled_class(self) -> str | None:
        """The priority class a job without the priority-class label runs as: the first whose value
        is DEFAULT_PRIORITY, or None when no class has it."""
        return next((pc.name for pc in self.priority_classes if pc.value == DEFAULT_PRIORITY), None)

    @property
    def uses_topology(self) -> bool:
        return any(p.topology for p in self.node_pools)

    @property
    def reachable_nodes(self) -> int:
        """Every node the cluster can have: the system pool's and each user pool's maxCount."""
        return self.cluster.system_pool.count + sum(p.max_count for p in self.node_pools)


# --- errors --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    path: str  # "kueue-aks:nodePools[1].maxCount"
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """Every problem found in the stack config, reported together."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        noun = "problem" if len(self.problems) == 1 else "problems"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"stack config has {len(self.problems)} {noun}:\n{lines}")


class _Problems:
    """Collects problems while parsing continues, so one run reports all of them."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(Problem(path, message))


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _suggest(word: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Reader:
    """Typed access to one config object that records problems instead of raising."""

    def __init__(self, problems: _Problems, path: str, value: Any, allowed: Sequence[str]):
        self.problems, self.path = problems, path
        self.value: Mapping[str, Any] = {}
        if value is None:
            return
        if not isinstance(value, Mapping):
            problems.add(path, f"must be an object with keys {', '.join(allowed)}; got {_type_name(value)}")
            return
        self.value = value
        for key in value:
            if key not in allowed:
                problems.add(
                    self.at(str(key)),
                    f"unknown key{_suggest(str(key), allowed)}; allowed keys: {', '.join(allowed)}",
                )

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def get(self, key: str, default: Any, check: Callable[[str, Any], Any]) -> Any:
        """The key's value checked by `check(path, value)`, or `default` when absent or invalid."""
        if key not in self.value or self.value[key] is None:
            return default
        result = check(self.at(key), self.value[key])
        return default if result is _INVALID else result


_INVALID = object()


# --- checkers: each returns the parsed value or _INVALID after recording a problem --------


def _checker(problems: _Problems) -> Any:
    """Bind the small typed checkers to one problem list."""

    class C:
        @staticmethod
        def string(path: str, v: Any, *, pattern: re.Pattern[str] | None = None, hint: str = "") -> Any:
            if not isinstance(v, str):
                problems.add(path, f"must be a string{hint}; got {_type_name(v)} {v!r}")
                return _INVALID
            if pattern is not None and not pattern.match(v):
                problems.add(path, f"{v!r} is not allowed{hint}")
                return _INVALID
            return v

        @staticmethod
        def enum(path: str, v: Any, allowed: Sequence[str]) -> Any:
            if v not in allowed or not isinstance(v, str):
                problems.add(path, f"{v!r} is not allowed{_suggest(str(v), allowed)}; one of: {' | '.join(allowed)}")
                return _INVALID
            return v

        @staticmethod
        def boolean(path: str, v: Any) -> Any:
            if not isinstance(v, bool):
                problems.add(path, f"must be true or false; got {_type_name(v)} {v!r}")
                return _INVALID
            return v

        @staticmethod
        def integer(path: str, v: Any, lo: int, hi: int) -> Any:
            if isinstance(v, bool) or not isinstance(v, int):
                problems.add(path, f"must be an integer from {lo} to {hi}; got {_type_name(v)} {v!r}")
                return _INVALID
            if not lo <= v <= hi:
                problems.add(path, f"{v} is out of range; allowed: {lo} to {hi}")
                return _INVALID
            return v

        @staticmethod
        def items(path: str, v: Any, what: str) -> list[Any] | None:
            if not isinstance(v, list):
                problems.add(path, f"must be a list of {what}; got {_type_name(v)}")
                return None
            return v

        @staticmethod
        def choices(path: str, v: Any, what: str, allowed: Sequence[str] | None, *, empty: str, unknown: str) -> Any:
            """A non-empty list of distinct names, each in `allowed` (None: any name, e.g. when
            the list it refers to has its own problems)."""
            items = C.items(path, v, what)
            if items is None:
                return _INVALID
            if not items:
                problems.add(path, f"must list at least one {empty}")
                return _INVALID
            for i, name in enumerate(items):
                if allowed is not None and name not in allowed:
                    problems.add(f"{path}[{i}]", f"{name!r} is not {unknown}{_suggest(str(name), allowed)}; allowed: {', '.join(allowed)}")
                elif items.index(name) != i:
                    problems.add(f"{path}[{i}]", f"{name!r} is listed twice; names must be unique")
            return tuple(items)

    return C


def _is_kubeconfig(value: Any) -> bool:
    """A kubeconfig document: YAML with a list of clusters, each with a server address."""
    if not isinstance(value, str):
        return False
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError:
        return False
    clusters = doc.get("clusters") if isinstance(doc, Mapping) else None
    return (isinstance(clusters, list) and bool(clusters)
            and all(isinstance(c, Mapping) and isinstance(c.get("cluster"), Mapping)
                    and isinstance(c["cluster"].get("server"), str) for c in clusters))


def _parse_taint(text: str) -> Taint:
    spec, _, effect = text.rpartition(":")
    key, _, value = spec.partition("=")
    return Taint(key, value, effect)


def _taint_problem(text: str) -> str | None:
    if ":" not in text:
        return f"{text!r} is not a taint; write key=value:Effect with Effect one of {', '.join(TAINT_EFFECTS)}"
    t = _parse_taint(text)
    if t.effect not in TAINT_EFFECTS:
        return f"{text!r} has effect {t.effect!r}; allowed: {', '.join(TAINT_EFFECTS)}"
    if not is_qualified_name(t.key):
        return f"{text!r} has key {t.key!r}, which is not a valid label key"
    if not is_label_value(t.value):
        return f"{text!r} has value {t.value!r}, which is not a valid label value (≤ 63 alphanumerics, '-', '_', '.')"
    return None


# --- sections ------------------------------------------------------------------------------


def _parse_cluster(problems: _Problems, raw: Any, stack: str) -> ClusterSettings:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:cluster", raw, [*CREATION_KEYS, "existing", "kubeconfig"])
    name = r.get("name", f"kueue-{stack}", lambda p, v: c.string(
        p, v, pattern=_CLUSTER_NAME, hint=" (1-63 letters, digits, '-' or '_', starting and ending with a letter or digit)"))

    def k8s_version(p: str, v: Any) -> Any:
        if isinstance(v, float):
            problems.add(p, f"must be a quoted string such as \"1.33\"; YAML read {v!r} as a number")
            return _INVALID
        if c.string(p, v, pattern=_K8S_VERSION, hint=" (major.minor such as \"1.33\", or major.minor.patch)") is _INVALID:
            return _INVALID
        if _kubernetes_minor(v) < MIN_KUBERNETES_VERSION:
            problems.add(p, f"{v!r} is below {'.'.join(map(str, MIN_KUBERNETES_VERSION))}: the program installs a "
                         "ValidatingAdmissionPolicy (GA in Kubernetes 1.30) to make Kueue's uninstall finish")
            return _INVALID
        return v

    def zones(p: str, v: Any) -> Any:
        items = c.items(p, v, 'zone strings such as "1", "2", "3"')
        if items is None:
            return _INVALID
        out = [c.enum(f"{p}[{i}]", z, ("1", "2", "3")) for i, z in enumerate(items)]
        if len(set(items)) != len(items):
            problems.add(p, "lists a zone twice")
        return tuple(out) if _INVALID not in out else _INVALID

    def system_pool(p: str, v: Any) -> Any:
        s = _Reader(problems, p, v, ["vmSize", "count"])
        return SystemPool(
            vm_size=s.get("vmSize", SystemPool.vm_size, _vm_size_checker(problems, gpu_allowed=False)),
            count=s.get("count", SystemPool.count, lambda q, n: c.integer(q, n, 1, 100)),
        )

    def existing(p: str, v: Any) -> Any:
        e = _Reader(problems, p, v, ["resourceGroup", "name"])
        if not e.value:
            if isinstance(v, Mapping):
                problems.add(p, "must name the cluster: {resourceGroup, name}")
            return _INVALID
        group = e.get("resourceGroup", None, lambda q, x: c.string(q, x, pattern=_RESOURCE_GROUP, hint=" (an Azure resource group name)"))
        cluster_name = e.get("name", None, lambda q, x: c.string(q, x, pattern=_CLUSTER_NAME, hint=" (an AKS cluster name)"))
        for key, got in (("resourceGroup", group), ("name", cluster_name)):
            if key not in e.value:
                problems.add(e.at(key), "is required")
        return ExistingCluster(group, cluster_name) if group and cluster_name else _INVALID

    def kubeconfig(p: str, v: Any) -> Any:
        if isinstance(v, Mapping) and set(v) == {"secure"}:
            # Still encrypted: read from the stack file (the offline plan); the program gets it decrypted.
            return ENCRYPTED
        # Never echo the value, not even in a YAML parse error: it holds credentials.
        if not _is_kubeconfig(v):
            problems.add(p, "must be a kubeconfig document (set it with `pulumi config set --secret --path "
                         "kueue-aks:cluster.kubeconfig < file`); the value given is not one")
            return _INVALID
        return v

    modes = [k for k in ("existing", "kubeconfig") if k in r.value]
    if len(modes) == 2:
        problems.add(r.at("kubeconfig"), "cannot be set together with cluster.existing; choose one cluster mode")
    elif modes:
        for key in CREATION_KEYS:
            if key in r.value:
                problems.add(r.at(key), f"configures a cluster the program creates; with cluster.{modes[0]} the "
                             "program creates no cluster, so remove it")
    return ClusterSettings(
        name=name,
        kubernetes_version=r.get("kubernetesVersion", None, k8s_version),
        tier=r.get("tier", "Free", lambda p, v: c.enum(p, v, TIERS)),
        zones=r.get("zones", (), zones),
        system_pool=r.get("systemPool", SystemPool(), system_pool),
        admin_group_object_ids=r.get("adminGroupObjectIds", (), _group_ids(problems)),
        disable_local_accounts=r.get("disableLocalAccounts", False, c.boolean),
        auto_upgrade_channel=r.get("autoUpgradeChannel", "patch", lambda p, v: c.enum(p, v, UPGRADE_CHANNELS)),
        deployer_admin=r.get("deployerAdmin", True, c.boolean),
        existing=r.get("existing", None, existing),
        kubeconfig=r.get("kubeconfig", None, kubeconfig),
    )


def _group_ids(problems: _Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of Entra ID group object IDs."""
    return _groups(problems, "Entra ID group object IDs", _GUID,
                   " (an Entra ID group's object ID, a GUID such as 00000000-0000-0000-0000-000000000000, not "
                   "its name; look it up with: az ad group show --group <group name> --query id -o tsv)")


def _group_names(problems: _Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of the cluster's own group names (kubeconfig mode: whatever its
    authenticator reports). Kubernetes' system: groups are refused: system:authenticated would
    let every user of the cluster in."""
    return _groups(problems, "group names", _GROUP_NAME,
                   " (a group name as the cluster's authenticator reports it; not a system: group)")


def _groups(problems: _Problems, what: str, pattern: re.Pattern[str], hint: str) -> Callable[[str, Any], Any]:
    c = _checker(problems)

    def check(p: str, v: Any) -> Any:
        items = c.items(p, v, what)
        if items is None:
            return _INVALID
        out = [c.string(f"{p}[{i}]", g, pattern=pattern, hint=hint) for i, g in enumerate(items)]
        for i, g in enumerate(items):
            if isinstance(g, str) and g in items[:i]:
                problems.add(f"{p}[{i}]", f"{g!r} is listed twice; list each group once")
                out[i] = _INVALID
        return tuple(out) if _INVALID not in out else _INVALID
    return check


def _vm_size_checker(problems: _Problems, *, gpu_allowed: bool, has_override: bool = False) -> Callable[[str, Any], Any]:
    def check(path: str, v: Any) -> Any:
        if not isinstance(v, str) or not v:
            problems.add(path, f"must be an Azure VM size such as Standard_D16s_v5; got {_type_name(v)}")
            return _INVALID
        vm = capacity.lookup_vm_size(v)
        if vm is None and not has_override:
            # Only user pools take a `capacity` override (gpu_allowed is false for the system pool).
            problems.add(path, _unknown_size(v, overridable=gpu_allowed))
            return _INVALID
        if vm is not None and vm.is_gpu and not gpu_allowed:
            problems.add(path, f"{v} is a GPU size; the system pool runs only system pods, use a CPU size")
            return _INVALID
        return v

    return check


def _unknown_size(name: str, *, overridable: bool) -> str:
    """What to write instead of a size the catalog lacks: a catalog size, or the override."""
    note = capacity.name_note(name)
    near = capacity.nearest_sizes(name)
    found = f"; {name} {note}" if note else f"; nearest catalog sizes: {', '.join(near)}" if near else ""
    message = f"{name!r} is not in the capacity catalog{found}; use a catalog size (docs/vm-sizes.md)"
    if not overridable:
        return message
    gpus = f", {GPU_RESOURCE}: <GPUs per node>" if capacity.is_gpu_family(name) else ""
    return message + f', or give the pool its per-node hardware as Azure lists it: capacity: {{cpu: "<vCPUs>", memory: "<GiB>Gi"{gpus}}}'


def _gpu_override_problem(vm_size: str, vm: VmSize | None, override: Mapping[str, Any],
                          max_count: int) -> tuple[str, str] | None:
    """(key under the pool, message) when a `capacity` override would drop the pool's GPUs without
    saying so: the pool would become a CPU flavor and no team could get GPU quota on it."""
    gpus = override["gpus"]
    if vm is not None and vm.is_gpu:
        have = (f"{vm_size} has {vm.gpus} × {vm.gpu_model} per node (catalog), {max_count * vm.gpus} GPUs "
                f"at maxCount {max_count}")
        if gpus is None:
            return "capacity", (f"overrides a GPU size without {GPU_RESOURCE}: {have}; add {GPU_RESOURCE}: {vm.gpus} "
                                "so the override states the GPUs the pool's quotas count")
        if gpus == 0:
            return f"capacity.{GPU_RESOURCE}", (
                f"is 0, but {have}: they would count as none, the nodes as expensive CPU nodes, and no team "
                f"would get GPU quota on them; write {GPU_RESOURCE}: {vm.gpus}, or choose a CPU size")
    elif vm is None and gpus is None and capacity.is_gpu_family(vm_size):
        # The catalog cannot tell; only the config can say that an N-family size has no whole GPU.
        return "capacity", (
            f"{vm_size} is an N-family (GPU) size the catalog does not know, and capacity does not say how many GPUs "
            f"a node has, so the pool would count none; add {GPU_RESOURCE}: <GPUs per node> (whole NVIDIA GPUs, "
            f"from the size's Microsoft Learn page), or {GPU_RESOURCE}: 0 only for a size with no whole NVIDIA GPU "
            "(a vGPU slice, an AMD GPU, an FPGA), whose nodes then count as CPU nodes")
    return None


def _parse_override(problems: _Problems, path: str, raw: Any) -> dict[str, Any] | None:
    """A per-node hardware override: {cpu, memory, nvidia.com/gpu}, as Azure lists the VM size."""
    c = _checker(problems)
    r = _Reader(problems, path, raw, ["cpu", "memory", GPU_RESOURCE])

    def quantity(parse: Callable[[Any], int], example: str) -> Callable[[str, Any], Any]:
        def check(p: str, v: Any) -> Any:
            try:
                amount = parse(v) if not isinstance(v, bool) else -1
            except QuantityError:
                amount = -1
            if amount <= 0:
                problems.add(p, f"{v!r} must be a positive quantity such as {example}")
                return _INVALID
            return amount

        return check

    cpu = r.get("cpu", None, quantity(cpu_millicores, '"24" (vCPUs)'))
    mem = r.get("memory", None, quantity(memory_mib, '"220Gi"'))
    gpus = r.get(GPU_RESOURCE, None, lambda p, v: c.integer(p, v, 0, 64))
    if cpu is not None and cpu % 1000:
        problems.add(r.at("cpu"), "must be a whole number of vCPUs, as Azure sizes have")
        cpu = None
    return {"cpu": cpu, "memory": mem, "gpus": gpus} if r.value else None


def _apply_override(vm: VmSize | None, vm_size: str, override: Mapping[str, Any] | None) -> VmSize | None:
    if not override:
        return vm
    base = vm or VmSize(name=vm_size, vcpus=0, memory_gib=0.0)
    changes: dict[str, Any] = {}
    if override["cpu"] is not None:
        changes["vcpus"] = override["cpu"] // 1000
    if override["memory"] is not None:
        changes["memory_gib"] = override["memory"] / 1024
    if override["gpus"] is not None:
        changes["gpus"] = override["gpus"]
        if override["gpus"] and not base.gpu_model:
            changes["gpu_model"] = "NVIDIA GPU (from capacity override)"
    node = replace(base, **changes)
    return node if node.vcpus > 0 and node.memory_gib > 0 else None


def _parse_pool(problems: _Problems, path: str, raw: Any) -> NodePool | None:
    c = _checker(problems)
    r = _Reader(problems, path, raw, ["name", "vmSize", "minCount", "maxCount", "spot", "taints",
                                      "labels", "topology", "provisioningRequest", "capacity"])
    if not r.value:
        if raw is None or isinstance(raw, Mapping):
            problems.add(path, "must be an object with at least name, vmSize and maxCount")
        return None

    def pool_name(p: str, v: Any) -> Any:
        name = c.string(p, v, pattern=_POOL_NAME, hint=" (1-12 lowercase letters and digits, starting with a letter)")
        if name == SYSTEM_POOL_NAME:
            problems.add(p, f"{SYSTEM_POOL_NAME!r} is the system pool's name; choose another")
            return _INVALID
        return name

    name = r.get("name", None, pool_name)
    if "name" not in r.value:
        problems.add(r.at("name"), "is required (1-12 lowercase letters and digits, starting with a letter)")
    override = r.get("capacity", None, lambda p, v: _parse_override(problems, p, v))
    vm_size = r.get("vmSize", None, _vm_size_checker(problems, gpu_allowed=True, has_override=bool(override)))
    if "vmSize" not in r.value:
        problems.add(r.at("vmSize"), "is required (an Azure VM size such as Standard_D16s_v5)")
    min_count = r.get("minCount", 0, lambda p, v: c.integer(p, v, 0, 1000))
    max_count = r.get("maxCount", None, lambda p, v: c.integer(p, v, 1, 1000))
    if "maxCount" not in r.value:
        problems.add(r.at("maxCount"), "is required (the autoscaler's upper bound, 1 to 1000)")
    elif max_count is not None and max_count < min_count:
        problems.add(r.at("maxCount"), f"{max_count} is below minCount {min_count}; must be >= max(1, minCount)")
        max_count = None
    spot = r.get("spot", False, c.boolean)
    topology = r.get("topology", False, c.boolean)
    provisioning = r.get("provisioningRequest", None, c.boolean)
    min_count_valid = "minCount" not in r.value or min_count == r.value["minCount"]
    fixed_size = max_count is not None and min_count_valid and min_count == max_count
    if provisioning and fixed_size:
        problems.add(r.at("provisioningRequest"), f"is true, but the pool is fixed-size (minCount == maxCount == "
                     f"{max_count}): there are no nodes to provision; remove it or let the pool autoscale "
                     "(minCount < maxCount)")

    def taints(p: str, v: Any) -> Any:
        items = c.items(p, v, 'taints "key=value:Effect"')
        if items is None:
            return _INVALID
        out: list[Taint] = []
        for i, t in enumerate(items):
            problem = f"must be a string key=value:Effect; got {_type_name(t)}" if not isinstance(t, str) else _taint_problem(t)
            if problem:
                problems.add(f"{p}[{i}]", problem)
            else:
                out.append(_parse_taint(t))
        if len({(t.key, t.effect) for t in out}) != len(out):
            problems.add(p, "lists the same key and effect twice")
        return tuple(out)

    def labels(p: str, v: Any) -> Any:
        if not isinstance(v, Mapping):
            problems.add(p, f"must be an object of label key: value; got {_type_name(v)}")
            return _INVALID
        for k, val in v.items():
            if not is_qualified_name(str(k)):
                problems.add(f"{p}.{k}", "is not a valid label key")
            elif str(k).startswith(RESERVED_LABEL_PREFIXES):
                problems.add(f"{p}.{k}", f"AKS reserves the {RESERVED_LABEL_PREFIXES[0]} prefix; use your own prefix")
            if not isinstance(val, str) or not is_label_value(val):
                problems.add(f"{p}.{k}", f"value {val!r} must be a string label value (≤ 63 alphanumerics, '-', '_', '.'); quote numbers and booleans")
        return dict(v)

    configured_taints = r.get("taints", None, taints)
    pool_labels = r.get("labels", {}, labels)
    if name is None or vm_size is None or max_count is None:
        return None
    catalog_vm = capacity.lookup_vm_size(vm_size)
    gpu_problem = _gpu_override_problem(vm_size, catalog_vm, override, max_count) if override else None
    if gpu_problem:
        problems.add(r.at(gpu_problem[0]), gpu_problem[1])
        return None
    node = _apply_override(catalog_vm, vm_size, override)
    if node is None:
        problems.add(r.at("capacity"), f"{vm_size} is not in the catalog, so capacity needs both cpu and memory")
        return None
    if configured_taints is None:
        configured_taints = (_parse_taint(DEFAULT_GPU_TAINT),) if node.is_gpu else ()
    if provisioning is None:
        # A partial start is what hurts on GPU pools (pods holding GPUs while the rest wait);
        # CPU pools start pod by pod, as jobs there usually can.
        provisioning = node.is_gpu and min_count < max_count
    if topology and max_count is not None and min_count_valid and not fixed_size and not provisioning:
        problems.add(
            r.at("minCount"),
            f"{min_count} is below maxCount ({max_count}) on a topology-aware pool without provisioningRequest: "
            "topology-aware scheduling places pods only on nodes that exist, so an autoscaled topology pool needs "
            "provisioningRequest: true (the autoscaler adds all of a job's nodes before Kueue assigns the "
            "topology); add it, or make the pool fixed-size (minCount == maxCount >= 1)",
        )
        return None
    return NodePool(name=name, vm_size=vm_size, node=node, min_count=min_count, max_count=max_count,
                    spot=spot, taints=configured_taints, labels=pool_labels, topology=topology,
                    provisioning_request=provisioning)


def _parse_pools(problems: _Problems, raw: Any) -> tuple[NodePool, ...]:
    path = f"{NAMESPACE}:nodePools"
    if raw is None:
        problems.add(path, "is required: a list of at least one user node pool")
        return ()
    if not isinstance(raw, list) or not raw:
        problems.add(path, f"must be a non-empty list of node pools; got {_type_name(raw)}")
        return ()
    pools = [_parse_pool(problems, f"{path}[{i}]", p) for i, p in enumerate(raw)]
    seen: set[str] = set()
    for i, p in enumerate(pools):
        if p is not None and p.name in seen:
            problems.add(f"{path}[{i}].name", f"{p.name!r} is used by another pool; pool names must be unique")
        if p is not None:
            seen.add(p.name)
    return tuple(p for p in pools if p is not None)


def _parse_kueue(problems: _Problems, raw: Any) -> KueueSettings:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:kueue", raw,
                ["version", "featureGates", "frameworks", "replicas", "chart", "imageRepository", "install",
                 "extensionVersion"])
    install = r.get("install", "helm", lambda p, v: c.enum(p, v, KUEUE_INSTALLS))
    if install == "aksExtension":
        return _parse_kueue_extension(problems, r)
    if "extensionVersion" in r.value:
        problems.add(r.at("extensionVersion"), "is the version of AKS's managed Kueue extension; it needs "
                     "install: aksExtension (with install: helm, kueue.version pins the chart)")
    supported = sorted(kueue_versions.RELEASES)

    def version(p: str, v: Any) -> Any:
        if isinstance(v, str) and v.startswith("v"):
            problems.add(p, f"{v!r}: write the chart version without 'v', e.g. {v[1:]!r}")
            return _INVALID
        if c.string(p, v, pattern=_SEMVER, hint=" (an exact chart version such as \"0.19.2\"; never a range or \"latest\")") is _INVALID:
            return _INVALID
        if v not in kueue_versions.RELEASES:
            problems.add(p, f"{v!r} has no gate and framework tables in components/facts/kueue_versions.py; supported: {', '.join(supported)}")
            return _INVALID
        return v

    ver = r.get("version", kueue_versions.DEFAULT_VERSION, version)
    release = kueue_versions.RELEASES[ver]

    def gates(p: str, v: Any) -> Any:
        if not isinstance(v, Mapping):
            problems.add(p, f"must be an object of GateName: true|false; got {_type_name(v)}")
            return _INVALID
        for gate, on in v.items():
            gp = f"{p}.{gate}"
            if not isinstance(on, bool):
                problems.add(gp, f"must be true or false; got {_type_name(on)} {on!r}")
            elif gate in release.removed_gates:
                problems.add(gp, f"was removed from Kueue before {ver}; Kueue refuses to start with it. Remove the key")
            elif gate not in release.gates:
                problems.add(gp, f"is not a Kueue {ver} feature gate{_suggest(str(gate), sorted(release.gates))}")
            elif release.gates[gate].locked and on != release.gates[gate].default:
                problems.add(gp, f"is locked to {str(release.gates[gate].default).lower()} in Kueue {ver}; Kueue refuses to start otherwise")
            elif gate == NAMESPACE_SELECTOR_GATE and on is False:
                # Not locked before 0.19; off, Kueue would also manage jobs outside the team namespaces.
                problems.add(gp, "must stay true: the stack's managedJobsNamespaceSelector keeps Kueue to the team "
                             "namespaces (docs/governance.md), which this gate makes Kueue respect for every job kind")
        if v.get("TopologyAwareScheduling") is False:
            still_on = sorted(g for g in release.tas_subgates if v.get(g, release.gates[g].default))
            if still_on:
                problems.add(f"{p}.TopologyAwareScheduling",
                             f"false needs these TAS gates set to false too (Kueue refuses to start otherwise): {', '.join(still_on)}")
        return dict(v)

    feature_gates = r.get("featureGates", dict(DEFAULT_FEATURE_GATES), gates)
    fw = r.get("frameworks", DEFAULT_FRAMEWORKS, lambda p, v: c.choices(
        p, v, "job framework names", sorted(release.frameworks),
        empty="framework, e.g. batch/job", unknown=f"a Kueue {ver} framework"))
    if "sparkoperator.k8s.io/sparkapplication" in fw and not feature_gates.get("SparkApplicationIntegration"):
        problems.add(f"{NAMESPACE}:kueue.featureGates.SparkApplicationIntegration",
                     "must be true when frameworks includes sparkoperator.k8s.io/sparkapplication")
    return KueueSettings(
        version=ver,
        feature_gates=feature_gates,
        frameworks=fw,
        replicas=r.get("replicas", 2, lambda p, v: c.integer(p, v, 1, 10)),
        chart=r.get("chart", DEFAULT_KUEUE_CHART, _checked(problems, lambda v: chart_source_problem(v, ver, PROJECT_ROOT))),
        image_repository=r.get("imageRepository", None, _checked(problems, image_repository_problem)),
    )


def _parse_kueue_extension(problems: _Problems, r: _Reader) -> KueueSettings:
    """kueue-aks:kueue with install: aksExtension: the extension's version and the job kinds the
    stack serves; what the extension sets itself is refused, naming the key."""
    c = _checker(problems)
    for key in HELM_ONLY_KUEUE_KEYS:
        if key in r.value:
            problems.add(r.at(key), "is set by AKS's managed Kueue extension, which takes no such setting from the "
                         "stack (docs/kueue-install.md#what-the-extension-does-not-let-you-set); remove it, or set "
                         "install: helm")
    name = r.get("extensionVersion", kueue_versions.DEFAULT_AKS_EXTENSION, lambda p, v: c.enum(
        p, v, tuple(sorted(kueue_versions.AKS_EXTENSIONS))))
    extension = kueue_versions.AKS_EXTENSIONS[name]
    frameworks = r.get("frameworks", extension.frameworks, lambda p, v: c.choices(
        p, v, "job framework names", list(extension.frameworks), empty="framework, e.g. batch/job",
        unknown=f"a job kind AKS's managed Kueue extension {name} queues (the stack cannot enable others there)"))
    return KueueSettings(version=extension.schema, feature_gates={}, frameworks=frameworks,
                         install="aksExtension", extension=extension)


def _check_extension(problems: _Problems, kueue: KueueSettings, cluster: ClusterSettings, location: str | None,
                     manager: bool) -> None:
    """What AKS's managed Kueue extension needs of the cluster (../shared/reference/managed-kueue.md
    §1.3, §1.4) that the config can tell; an existing cluster's region and version are read from Azure by
    the preflight (components/preflight/extensions.py)."""
    extension = kueue.extension
    if extension is None:
        return
    if manager:
        problems.add(f"{NAMESPACE}:kueue.install", "aksExtension cannot run a MultiKueue manager: the stack sets the "
                     "manager's MultiKueue settings (origin, dispatcher) through the Helm release, and the extension "
                     "takes none; set install: helm on the manager (workers may use the extension)")
    if cluster.mode != "create":
        return  # the preflight reads the cluster's region and version (Azure) or its extension (kubeconfig)
    if location and location.lower() not in extension.regions:
        problems.add("azure-native:location", f"{location!r} does not offer AKS's managed Kueue extension "
                     f"{extension.version} (offered in {', '.join(sorted(extension.regions))}); pick one of those "
                     f"regions, or set {NAMESPACE}:kueue.install: helm")
    need = ".".join(map(str, extension.min_kubernetes))
    version = cluster.kubernetes_version
    if version is None:
        problems.add(f"{NAMESPACE}:cluster.kubernetesVersion", f"is required with kueue.install: aksExtension: "
                     f"the extension needs Kubernetes {need} or newer, and AKS's default version may be older; "
                     f"set \"{need}\" or newer")
    elif _kubernetes_minor(version) < extension.min_kubernetes:
        problems.add(f"{NAMESPACE}:cluster.kubernetesVersion", f"{version!r} is older than {need}, the oldest "
                     f"Kubernetes AKS's managed Kueue extension runs on; raise it, or set kueue.install: helm")


def _checked(problems: _Problems, problem: Callable[[Any], str | None]) -> Callable[[str, Any], Any]:
    """A checker from a function that says what is wrong with a value, or None."""
    def check(path: str, value: Any) -> Any:
        said = problem(value)
        if said:
            problems.add(path, said)
            return _INVALID
        return value
    return check


def _parse_device_plugin(problems: _Problems, raw: Any) -> DevicePluginSettings:
    r = _Reader(problems, f"{NAMESPACE}:devicePlugin", raw, ["chart", "imageRepository"])
    return DevicePluginSettings(
        chart=r.get("chart", DEFAULT_DEVICE_PLUGIN_CHART,
                    _checked(problems, lambda v: chart_source_problem(v, DEVICE_PLUGIN_VERSION, PROJECT_ROOT))),
        image_repository=r.get("imageRepository", None, _checked(problems, image_repository_problem)),
    )


OPERATOR_INSTALLS = ("managed", "external")


def _parse_operators(problems: _Problems, raw: Any, kueue: KueueSettings) -> tuple[OperatorSettings, ...]:
    """`kueue-aks:operators`: one entry per operator, all optional. The frameworks decide which
    operators are needed; an entry may only say how (managed or external) and from where."""
    c = _checker(problems)
    path = f"{NAMESPACE}:operators"
    catalog = operator_catalog.OPERATORS
    r = _Reader(problems, path, raw, list(catalog))
    needed = {o.key: o for o in operator_catalog.needed_operators(kueue.frameworks)}
    out: list[OperatorSettings] = []
    for key, operator in catalog.items():
        op = f"{path}.{key}"
        allowed = ["install", "imageRepository"] + (["chart"] if operator.chart else [])
        entry = _Reader(problems, op, r.value.get(key), allowed if operator.managed else ["install"])
        if key not in needed:
            if key in r.value:
                problems.add(op, f"has no effect: none of its frameworks ({', '.join(operator.frameworks)}) is in "
                             "kueue-aks:kueue.frameworks; enable one there or remove this key")
            continue
        default = "managed" if operator.managed else None
        install = entry.get("install", default, lambda p, v: c.enum(p, v, OPERATOR_INSTALLS))
        if install is None:
            problems.add(entry.at("install"), f"is required: the stack does not install the {operator.title} controller "
                         f"that {', '.join(f for f in operator.frameworks if f in kueue.frameworks)} needs; install it "
                         "yourself and set install: external, or remove the framework from kueue-aks:kueue.frameworks")
            continue
        if install == "managed" and not operator.managed:
            problems.add(entry.at("install"), f"managed is not possible: the stack does not ship the {operator.title} "
                         "controller; install it yourself and set install: external")
            continue
        if install == "external":
            for extra in ("chart", "imageRepository"):
                if extra in entry.value:
                    problems.add(entry.at(extra), "has no effect with install: external (the stack installs nothing); remove it")
            out.append(OperatorSettings(key=key, install=install))
            continue
        version = operator_catalog.OPERATOR_PINS.get(kueue.version, {}).get(key)
        if install == "managed" and version is None:
            problems.add(entry.at("install"), f"the stack has no pinned {operator.title} version for Kueue {kueue.version} "
                         "(components/facts/operators.py OPERATOR_PINS); set install: external")
            continue
        chart = entry.get("chart", None, _checked(problems, lambda v: chart_source_problem(v, version.version, PROJECT_ROOT)))
        image = entry.get("imageRepository", None, _checked(problems, image_repository_problem))
        out.append(OperatorSettings(key=key, install=install, chart=chart, image_repository=image))
    return tuple(out)


def _parse_teams(problems: _Problems, raw: Any, pools: tuple[NodePool, ...], pools_ok: bool, *,
                 manager: bool = False, azure_groups: bool = True) -> tuple[Team, ...]:
    """The teams; on a MultiKueue manager only their names: its quotas are the sum of the workers'."""
    c = _checker(problems)
    path = f"{NAMESPACE}:teams"
    if raw is None:
        problems.add(path, "is required: a list of at least one team")
        return ()
    items = c.items(path, raw, "teams")
    if not items:
        if items is not None:
            problems.add(path, "must list at least one team")
        return ()
    pool_names = [p.name for p in pools]
    teams: dict[str, Team] = {}  # by name: uniqueness in constant time for hundreds of teams
    for i, t in enumerate(items):
        tp = f"{path}[{i}]"
        r = _Reader(problems, tp, t, ["name", "share", "pools", "members", "borrowing"])
        if not r.value:
            if t is None or isinstance(t, Mapping):
                problems.add(tp, "must be an object with name and share")
            continue

        def team_name(p: str, v: Any) -> Any:
            if c.string(p, v) is _INVALID:
                return _INVALID
            if not is_dns1123_label(v):
                problems.add(p, f"{v!r} must be a DNS-1123 label (≤ 63 lowercase letters, digits and '-'); it names the team's namespace and ClusterQueue")
                return _INVALID
            if v in RESERVED_NAMESPACES:
                problems.add(p, f"{v!r} is a reserved namespace; choose another team name")
                return _INVALID
            if v.startswith(RESERVED_PREFIX):
                problems.add(p, f"{v!r} would name the team's namespace and ClusterQueue with the {RESERVED_PREFIX!r} "
                             "prefix, which AKS's managed Kueue extension reserves for its own objects; choose another "
                             "team name")
                return _INVALID
            return v

        def share(p: str, v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                problems.add(p, f"must be a number of percent in (0, 100]; got {_type_name(v)} {v!r}")
                return _INVALID
            d = Decimal(str(v))
            if not 0 < d <= 100:
                problems.add(p, f"{v} is out of range; allowed: more than 0, at most 100 (percent)")
                return _INVALID
            return d

        def borrowing(p: str, v: Any) -> Any:
            if v == UNLIMITED:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
                problems.add(p, f"must be a multiple of the team's quota in [0, 100] (0: no borrowing) or "
                             f"{UNLIMITED!r} (the default); got {_type_name(v)} {v!r}")
                return _INVALID
            return Decimal(str(v))

        def team_pools(p: str, v: Any) -> Any:
            return c.choices(p, v, "user pool names", pool_names if pools_ok else None,
                             empty="pool (omit the key for all pools)", unknown="a user pool")

        name = r.get("name", None, team_name)
        if "name" not in r.value:
            problems.add(r.at("name"), "is required (a DNS-1123 label such as research)")
        if manager:
            for key in ("share", "pools"):
                if key in r.value:
                    problems.add(r.at(key), "is set on the workers: a MultiKueue manager's quota for a team is the sum "
                                 "of the team's quotas on its workers; remove it")
            s: Decimal | None = Decimal(0)
            team_pool_names: tuple[str, ...] = ()
        else:
            s = r.get("share", None, share)
            if "share" not in r.value:
                problems.add(r.at("share"), "is required (percent of every flavor's capacity, in (0, 100])")
            team_pool_names = r.get("pools", tuple(pool_names), team_pools)
        members = r.get("members", (), _group_ids(problems) if azure_groups else _group_names(problems))
        # `borrowing:` left empty is a slip, not a choice: the error asks for one.
        borrow = None if "borrowing" not in r.value else r.get("borrowing", _INVALID, borrowing)
        if "borrowing" in r.value and r.value["borrowing"] is None:
            problems.add(r.at("borrowing"), f"is empty; allowed: a multiple of the team's quota in [0, 100] or {UNLIMITED!r}")
        if name is not None and s is not None and borrow is not _INVALID:
            if name in teams:
                problems.add(r.at("name"), f"{name!r} is used by another team; team names must be unique")
            else:
                teams[name] = Team(name, s, team_pool_names, members, borrow)
    by_pool = {p.name: p for p in pools}
    for i, t in enumerate(items):
        name = t.get("name") if isinstance(t, Mapping) else None
        if not isinstance(name, str) or not name.endswith(TOPOLOGY_QUEUE_SUFFIX):
            continue
        owner = teams.get(name[: -len(TOPOLOGY_QUEUE_SUFFIX)])
        if name in teams and owner is not None and any(by_pool[p].topology for p in owner.pools if p in by_pool):
            problems.add(f"{path}[{i}].name", f"{name!r} is the name of team {owner.name!r}'s ClusterQueue for its "
                         "topology-aware pools; choose another team name")
    total = sum((t.share for t in teams.values()), Decimal(0))
    if total > 100:
        problems.add(path, f"shares add up to {total}%; the total must be at most 100% of capacity")
    return tuple(teams.values())


def _parse_priority_classes(problems: _Problems, raw: Any) -> tuple[PriorityClass, ...]:
    c = _checker(problems)
    path = f"{NAMESPACE}:priorityClasses"
    if raw is None:
        return DEFAULT_PRIORITY_CLASSES
    items = c.items(path, raw, "priority classes {name, value, description}")
    if items is None:
        return DEFAULT_PRIORITY_CLASSES
    out: dict[str, PriorityClass] = {}
    for i, pc in enumerate(items):
        r = _Reader(problems, f"{path}[{i}]", pc, ["name", "value", "description"])

        def pc_name(p: str, v: Any) -> Any:
            if c.string(p, v) is _INVALID:
                return _INVALID
            if not (is_dns1123_subdomain(v) and len(v) <= 63):
                problems.add(p, f"{v!r} must be a DNS-1123 name of at most 63 characters (it becomes a label value)")
                return _INVALID
            if v.startswith(RESERVED_PREFIX):
                problems.add(p, f"{v!r} would name a WorkloadPriorityClass with the {RESERVED_PREFIX!r} prefix, which AKS's "
                             "managed Kueue extension reserves for its own (aks-low-priority, aks-medium-priority, "
                             "aks-high-priority); choose another name")
                return _INVALID
            return v

        name = r.get("name", None, pc_name)
        value = r.get("value", None, lambda p, v: c.integer(p, v, -(2**31), INT32_MAX))
        for key in ("name", "value"):
            if key not in r.value:
                problems.add(r.at(key), "is required")

        def description(p: str, v: Any) -> Any:
            if isinstance(v, str) and len(v) > 2048:
                problems.add(p, f"has {len(v)} characters; Kueue allows at most 2048")
                return _INVALID
            return c.string(p, v)

        text = r.get("description", "", description)
        if name is not None and value is not None:
            if name in out:
                problems.add(r.at("name"), f"{name!r} is used twice; names must be unique")
            else:
                out[name] = PriorityClass(name, value, text)
    return tuple(out.values())


def _parse_governance(problems: _Problems, raw: Any, teams: tuple[Team, ...]) -> Governance:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:governance", raw, ["enforce", "exemptNamespaces"])
    team_names = {t.name for t in teams}

    def namespaces(p: str, v: Any) -> Any:
        items = c.items(p, v, "namespace names")
        if items is None:
            return _INVALID
        for i, name in enumerate(items):
            if not isinstance(name, str) or not is_dns1123_label(name):
                problems.add(f"{p}[{i}]", f"{name!r} is not a namespace name (a DNS-1123 label)")
            elif name in team_names:
                problems.add(f"{p}[{i}]", f"{name!r} is a team namespace; its pods are queued by Kueue and cannot be exempt")
            elif items.index(name) != i:
                problems.add(f"{p}[{i}]", f"{name!r} is listed twice")
        return tuple(items)

    return Governance(enforce=r.get("enforce", True, c.boolean), exempt_namespaces=r.get("exemptNamespaces", (), namespaces))


def _parse_preflight(problems: _Problems, raw: Any) -> Preflight:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:preflight", raw, ["enabled", "quotaPolicy"])
    # With cluster.kubeconfig there is no Azure to read; the keys stay valid (Pulumi.yaml's declared
    # defaults reach every stack) and the program skips the check.
    return Preflight(enabled=r.get("enabled", True, c.boolean),
                     quota_policy=r.get("quotaPolicy", "error", lambda p, v: c.enum(p, v, QUOTA_POLICIES)))


def _parse_monitoring(problems: _Problems, raw: Any, cluster: ClusterSettings, kueue: KueueSettings) -> Monitoring:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:monitoring", raw,
                ["enabled", "azureMonitorWorkspaceId", "grafanaId", "grafanaAdminGroupObjectIds", "serviceMonitor"])
    example = "/subscriptions/<id>/resourceGroups/<group>/providers/"
    monitoring = Monitoring(
        enabled=r.get("enabled", False, c.boolean),
        workspace_id=r.get("azureMonitorWorkspaceId", None, lambda p, v: c.string(
            p, v, pattern=_WORKSPACE_ID, hint=f" (an Azure Monitor workspace's resource ID, {example}Microsoft.Monitor/accounts/<name>)")),
        grafana_id=r.get("grafanaId", None, lambda p, v: c.string(
            p, v, pattern=_GRAFANA_ID, hint=f" (an Azure Managed Grafana's resource ID, {example}Microsoft.Dashboard/grafana/<name>)")),
        service_monitor=r.get("serviceMonitor", False, c.boolean),
        grafana_admin_group_ids=r.get("grafanaAdminGroupObjectIds", cluster.admin_group_object_ids, _group_ids(problems)),
    )
    if not monitoring.enabled:
        for key in r.value:
            if key != "enabled":
                problems.add(r.at(key), "has no effect while monitoring.enabled is false; set enabled: true or remove it")
        return Monitoring()
    if "grafanaId" in r.value and "grafanaAdminGroupObjectIds" in r.value:
        problems.add(r.at("grafanaAdminGroupObjectIds"), "is for a Grafana the stack creates; the owners of the "
                     "existing one (grafanaId) manage who administers it")
    if cluster.mode == "kubeconfig":
        for key in ("azureMonitorWorkspaceId", "grafanaId", "grafanaAdminGroupObjectIds"):
            if key in r.value:
                problems.add(r.at(key), "is Azure monitoring; a cluster.kubeconfig stack creates nothing in Azure. "
                             "Use serviceMonitor: true with a Prometheus Operator in the cluster")
    elif cluster.mode == "existing" and not monitoring.workspace_id and "azureMonitorWorkspaceId" not in r.value:
        # The add-on and its data collection rule belong to the cluster's owner; the program
        # cannot turn them on for a cluster it does not manage (docs/monitoring.md).
        problems.add(r.at("azureMonitorWorkspaceId"), "is required with cluster.existing: the Azure Monitor workspace "
                     "the cluster's managed Prometheus add-on sends to (az aks update --enable-azure-monitor-metrics "
                     "--azure-monitor-workspace-resource-id <id>)")
    if cluster.mode != "kubeconfig" and "serviceMonitor" in r.value:
        problems.add(r.at("serviceMonitor"), "is for cluster.kubeconfig stacks; on AKS the program creates the "
                     "managed Prometheus add-on's own scrape object")
    if not kueue.feature_gates.get("LocalQueueMetrics", kueue.release.gates["LocalQueueMetrics"].default):
        problems.add(r.at("enabled"), "needs Kueue's LocalQueueMetrics feature gate: the dashboard's team variable and "
                     "LocalQueue panels read its series; enable the gate in kueue.featureGates")
    return monitoring


def _parse_topology(problems: _Problems, raw: Any) -> tuple[str, ...]:
    c = _checker(problems)
    r = _Reader(problems, f"{NAMESPACE}:topology", raw, ["levels"])

    def levels(p: str, v: Any) -> Any:
        items = c.items(p, v, "node label keys, coarsest first")
        if items is None:
            return _INVALID
        if not 1 <= len(items) <= 16:
            problems.add(p, f"has {len(items)} levels; Kueue allows 1 to 16")
            return _INVALID
        for i, level in enumerate(items):
            if not isinstance(level, str) or not is_qualified_name(level):
                problems.add(f"{p}[{i}]", f"{level!r} is not a node label key")
            elif items.index(level) != i:
                problems.add(f"{p}[{i}]", f"{level!r} is listed twice; levels must be unique")
            elif level == HOSTNAME_LABEL and i != len(items) - 1:
                problems.add(f"{p}[{i}]", f"{HOSTNAME_LABEL} may only be the last (finest) level")
        return tuple(items)

    return r.get("levels", DEFAULT_TOPOLOGY_LEVELS, levels)


def _parse_multikueue(problems: _Problems, raw: Any, stack: str, kueue: KueueSettings) -> MultiKueue:
    c = _checker(problems)
    manager_keys = ("workers", "origin", "workerLostTimeout", "gcInterval", "dispatcher")
    r = _Reader(problems, f"{NAMESPACE}:multiKueue", raw, ["role", "server", *manager_keys])
    if not r.value:
        return MultiKueue()
    role = r.get("role", None, lambda p, v: c.enum(p, v, MULTIKUEUE_ROLES))
    if "role" not in r.value:
        problems.add(r.at("role"), f"is required: one of {' | '.join(MULTIKUEUE_ROLES)}")
    if role is None:
        return MultiKueue()

    def server(p: str, v: Any) -> Any:
        # Kueue takes only https servers with an IP or DNS host in a worker's kubeconfig
        # (kueue v0.19.2 pkg/controller/admissionchecks/multikueue/multikueuecluster.go, validateKubeconfig).
        return c.string(p, v, pattern=re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$"),
                        hint=" (the worker's API server as its managers reach it, https://<host>[:port])")

    def duration(p: str, v: Any) -> Any:
        return c.string(p, v, pattern=_DURATION, hint=" (a duration such as \"15m\", \"90s\" or \"1h30m\")")

    origin = _checked(problems, lambda v: None if isinstance(v, str) and v and is_label_value(v) else (
        f"{v!r} must be a label value (≤ 63 letters, digits, '-', '_' or '.'); Kueue labels the manager's objects "
        "in the workers with it"))

    def workers(p: str, v: Any) -> Any:
        items = c.items(p, v, "workers {name, stack}")
        if items is None:
            return _INVALID
        if not 1 <= len(items) <= MAX_WORKERS:
            problems.add(p, f"lists {len(items)} workers; a MultiKueueConfig takes 1 to {MAX_WORKERS}")
        out: list[WorkerStack] = []
        for i, item in enumerate(items):
            w = _Reader(problems, f"{p}[{i}]", item, ["name", "stack"])
            if not w.value:
                if item is None or isinstance(item, Mapping):
                    problems.add(f"{p}[{i}]", "must be an object with name and stack")
                continue

            name = w.get("name", None, _checked(problems, lambda x: None if isinstance(x, str) and is_dns1123_label(x)
                                                 else f"{x!r} must be a DNS-1123 label; it names the worker's MultiKueueCluster"))
            ref = w.get("stack", None, lambda q, x: c.string(q, x, pattern=_STACK_REF, hint=(
                " (the worker stack's name for a StackReference: <organization>/<project>/<stack>, or "
                "<project>/<stack> on a self-managed backend)")))
            for key in ("name", "stack"):
                if key not in w.value:
                    problems.add(w.at(key), "is required")
            if name is None or ref is None:
                continue
            if any(o.name == name for o in out):
                problems.add(w.at("name"), f"{name!r} names another worker too; worker names must be unique")
            elif any(o.stack == ref for o in out):
                problems.add(w.at("stack"), f"{ref!r} is listed twice; each worker stack is one cluster")
            else:
                out.append(WorkerStack(name, ref))
        return tuple(out)

    settings = MultiKueue(
        role=role,
        server=r.get("server", None, server),
        workers=r.get("workers", (), workers),
        origin=r.get("origin", f"kueue-aks-{stack}"[:63].rstrip("-_."), origin),
        worker_lost_timeout=r.get("workerLostTimeout", MultiKueue.worker_lost_timeout, duration),
        gc_interval=r.get("gcInterval", MultiKueue.gc_interval, duration),
        dispatcher=r.get("dispatcher", MultiKueue.dispatcher, lambda p, v: c.enum(p, v, tuple(DISPATCHERS))),
    )
    if role != "manager":
        for key in manager_keys:
            if key in r.value:
                problems.add(r.at(key), f"configures a MultiKueue manager; this stack's role is {role!r}")
    elif "workers" not in r.value:
        problems.add(r.at("workers"), "is required for a manager: the worker stacks it dispatches to, "
                     "[{name, stack}], in order of preference")
    if role == "manager" and "server" in r.value:
        problems.add(r.at("server"), "is a worker's key: the URL its managers dial")
    if role != "none" and kueue.feature_gates.get("MultiKueue", kueue.release.gates["MultiKueue"].default) is False:
        problems.add(f"{NAMESPACE}:kueue.featureGates.MultiKueue", f"is false, but multiKueue.role is {role!r}; "
                     "enable the gate or set role: none")
    return settings if role != "none" else MultiKueue()


# --- entry points --------------------------------------------------------------------------

KEYS = ("cluster", "nodePools", "kueue", "teams", "priorityClasses", "topology", "governance", "devicePlugin",
        "monitoring", "operators", "preflight", "multiKueue")


def parse_config(raw: Mapping[str, Any], *, stack: str, location: str | None) -> StackConfig:
    """Parse the `kueue-aks:` keys (given without the namespace) into a StackConfig.

    Raises ConfigError listing every problem; returns only a fully valid config.
    """
    problems = _Problems()
    for key in raw:
        if key not in KEYS:
            problems.add(f"{NAMESPACE}:{key}", f"unknown key{_suggest(str(key), KEYS)}; allowed keys: {', '.join(KEYS)}")
    cluster = _parse_cluster(problems, raw.get("cluster"), stack)
    asked_for_kubeconfig = isinstance(raw.get("cluster"), Mapping) and "kubeconfig" in raw["cluster"]
    if not location and cluster.mode != "kubeconfig" and not asked_for_kubeconfig:
        # Listed first, where a reader of the stack file finds the key.
        problems.items.insert(0, Problem("azure-native:location", "is required: the Azure region, e.g. eastus2 (only "
                                         "a cluster.kubeconfig stack needs none)"))
    region = region_problem(location) if location else None
    if region:
        problems.items.insert(0, Problem("azure-native:location", region))
    # A manager's pools and teams follow other rules; the role's own problems come after the rest.
    manager = isinstance(raw.get("multiKueue"), Mapping) and raw["multiKueue"].get("role") == "manager"
    before = len(problems.items)
    if manager:
        # Its ClusterQueues only account and dispatch: every team job runs on a worker.
        if raw.get("nodePools"):
            problems.add(f"{NAMESPACE}:nodePools", "is for the workers: a MultiKueue manager runs no team jobs (its "
                         "queues dispatch them to multiKueue.workers, and Kueue runs on the system pool); remove it")
        pools: tuple[NodePool, ...] = ()
    else:
        pools = _parse_pools(problems, raw.get("nodePools"))
    pools_ok = len(problems.items) == before
    kueue = _parse_kueue(problems, raw.get("kueue"))
    teams = _parse_teams(problems, raw.get("teams"), pools, pools_ok, manager=manager,
                         azure_groups=cluster.mode != "kubeconfig" and not asked_for_kubeconfig)
    priority_classes = _parse_priority_classes(problems, raw.get("priorityClasses"))
    levels = _parse_topology(problems, raw.get("topology"))
    governance = _parse_governance(problems, raw.get("governance"), teams)
    device_plugin = _parse_device_plugin(problems, raw.get("devicePlugin"))
    monitoring = _parse_monitoring(problems, raw.get("monitoring"), cluster, kueue)
    operators = _parse_operators(problems, raw.get("operators"), kueue)
    preflight = _parse_preflight(problems, raw.get("preflight"))
    multi_kueue = _parse_multikueue(problems, raw.get("multiKueue"), stack, kueue)
    if governance.enforce:
        pools = tuple(replace(p, governed=True) for p in pools)
    if any(p.topology for p in pools) and kueue.feature_gates.get("TopologyAwareScheduling") is False:
        problems.add(f"{NAMESPACE}:kueue.featureGates.TopologyAwareScheduling",
                     "is false, but a node pool has topology: true; enable the gate or set topology: false")
    if pools_ok:
        _check_provisioning(problems, cluster, pools)
    _check_extension(problems, kueue, cluster, location, manager)
    if cluster.mode == "create":  # a MultiKueue manager's cluster too: it has no user pools, the rest holds
        _check_aks_rules(problems, cluster, location, pools)
    if any(t.members for t in teams) and kueue.feature_gates.get("VisibilityOnDemand") is False:
        problems.add(f"{NAMESPACE}:kueue.featureGates.VisibilityOnDemand",
                     "is false, but teams have members: they see their place in the queue through Kueue's "
                     "visibility API, which this gate serves; enable it or remove the members")
    if problems.items:
        raise ConfigError(problems.items)
    config = StackConfig(stack=stack, location=location or "", cluster=cluster, node_pools=pools, kueue=kueue,
                         teams=teams, priority_classes=priority_classes, topology_levels=levels, governance=governance,
                         device_plugin=device_plugin, monitoring=monitoring, operators=operators, preflight=preflight,
                         multi_kueue=multi_kueue)
    sizing = system_pool_problems(config)
    if sizing:
        raise ConfigError(sizing)
    return config


def system_pool_problems(config: StackConfig) -> list[Problem]:
    """A problem naming what to change when the system pool cannot hold Kueue and the managed
    operators' controllers (facts/operator_sizing.py has the rule); create mode only, where the
    program knows the system pool."""
    if config.cluster.mode != "create":
        return []
    pool = config.cluster.system_pool
    demand = system_pool_demand(config.kueue.replicas,
                                manager_memory_mib(config.reachable_nodes, config.uses_topology),
                                [o.key for o in config.operators if o.install == "managed"])
    shortfall = system_pool_shortfall(pool.vm_size, pool.count, demand)
    return [Problem(f"{NAMESPACE}:cluster.systemPool", shortfall)] if shortfall else []


# AKS's limits per cluster (learn.microsoft.com/azure/aks/quotas-skus-regions; the pricing tiers page).
MAX_NODE_POOLS = 100
MAX_FREE_TIER_NODES = 1000


def _check_aks_rules(problems: _Problems, cluster: ClusterSettings, location: str | None,
                     pools: Sequence[NodePool]) -> None:
    """Azure's rules across the keys of a cluster the program creates, beyond what each key allows
    alone (docs/azure-rules.md has each rule's source)."""
    at = f"{NAMESPACE}:cluster"
    version, channel = cluster.kubernetes_version, cluster.auto_upgrade_channel
    if version and channel in ("stable", "rapid"):
        problems.add(f"{at}.kubernetesVersion", f"pins {version!r}, but autoUpgradeChannel {channel} moves the cluster "
                     "to newer minors by itself, and the next `pulumi up` would ask AKS for the old version, a downgrade "
                     "it refuses; remove kubernetesVersion (AKS picks the version and the channel keeps it current), or "
                     "set autoUpgradeChannel: patch (keeps a major.minor pin such as \"1.33\"), node-image or none")
    elif version and version.count(".") == 2 and channel == "patch":
        minor = ".".join(version.split(".")[:2])
        problems.add(f"{at}.kubernetesVersion", f"pins the patch version {version!r}, but autoUpgradeChannel patch moves "
                     "the cluster to newer patches by itself, and the next `pulumi up` would ask AKS for a downgrade "
                     f"it refuses; pin the minor only (\"{minor}\"), or set autoUpgradeChannel: none")
    if cluster.tier == "Premium" and channel in ("stable", "rapid"):
        # Premium comes with the long-term support plan (components/cluster/component.py sends both).
        problems.add(f"{at}.autoUpgradeChannel", f"is {channel}, but tier Premium runs AKS's long-term support plan, "
                     "which keeps a minor version past its community support and allows only the patch and "
                     "node-image channels (AKS recommends patch); set autoUpgradeChannel: patch, or tier: Standard")
    if cluster.disable_local_accounts and not cluster.deployer_admin and not cluster.admin_group_object_ids:
        problems.add(f"{at}.deployerAdmin", "is false and disableLocalAccounts is true with no adminGroupObjectIds: "
                     "nobody, not even `pulumi up`, could then sign in to the cluster; set deployerAdmin: true, or list "
                     "the admins' Entra ID groups in adminGroupObjectIds")
    if location:
        length = node_resource_group_length(cluster.name, location)
        if length > NODE_RESOURCE_GROUP_LIMIT:
            keep = len(cluster.name) - (length - NODE_RESOURCE_GROUP_LIMIT)
            problems.add(f"{at}.name", f"{cluster.name!r} makes AKS's node resource group name "
                         f"(MC_<the stack's resource group>_<cluster name>_<region>) {length} characters long in "
                         f"{location}, and AKS refuses more than {NODE_RESOURCE_GROUP_LIMIT}; use a name of at most "
                         f"{keep} characters")
    if len(pools) + 1 > MAX_NODE_POOLS:
        problems.add(f"{NAMESPACE}:nodePools", f"has {len(pools)} pools; with the system pool AKS allows at most "
                     f"{MAX_NODE_POOLS} per cluster")
    nodes = cluster.system_pool.count + sum(p.max_count for p in pools)
    if cluster.tier == "Free" and nodes > MAX_FREE_TIER_NODES:
        problems.add(f"{at}.tier", f"is Free, which supports at most {MAX_FREE_TIER_NODES} nodes, but the pools reach "
                     f"{nodes} at maxCount (with the system pool); set tier: Standard, or lower maxCount")


def _check_provisioning(problems: _Problems, cluster: ClusterSettings, pools: Sequence[NodePool]) -> None:
    version = cluster.kubernetes_version
    if not version or _kubernetes_minor(version) >= MIN_PROVISIONING_REQUEST_VERSION:
        return  # AKS's default version is newer; other modes are checked when Kueue starts
    need = ".".join(map(str, MIN_PROVISIONING_REQUEST_VERSION))
    for i, pool in enumerate(pools):
        if pool.provisioning_request:
            problems.add(f"{NAMESPACE}:nodePools[{i}].provisioningRequest",
                         f"needs Kubernetes {need} or newer (AKS's autoscaler handles ProvisioningRequests from "
                         f"{need}), but {NAMESPACE}:cluster.kubernetesVersion is {version!r}; raise the version, "
                         "or set provisioningRequest: false"
                         + (" and make the topology pool fixed-size" if pool.topology else ""))


def raw_from_stack_file(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Split a parsed `Pulumi.<stack>.yaml` into our keys (namespace stripped) and the location."""
    config = doc.get("config") or {}
    ours = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{NAMESPACE}:")}
    return ours, config.get("azure-native:location")


def load_stack_config() -> StackConfig:
    """Read and validate the running stack's config; a mistake becomes one pulumi.RunError.

    RunError is printed without a Python traceback, so the user sees only the problem list.
    """
    import pulumi  # imported here so the pure functions above work without a Pulumi runtime
    from pulumi.runtime.config import CONFIG, get_config, get_config_env

    raw: dict[str, Any] = {}
    for full_key in {*CONFIG.get(), *get_config_env()}:
        if full_key.startswith(f"{NAMESPACE}:"):
            raw[full_key.split(":", 1)[1]] = decode_config_value(get_config(full_key))
    try:
        return parse_config(raw, stack=pulumi.get_stack(), location=pulumi.Config("azure-native").get("location"))
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None


def decode_config_value(value: Any) -> Any:
    """Structured values reach the program as JSON text; anything else stays as given."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
