"""The one description of the stack config: every key of every section with its type, bounds,
pattern, default, whether it may be given empty, and its one-line doc.

The section parsers read their values through it (checks.Reader checks presence, emptiness, type,
bounds and the full match of a pattern before a parser's own rules run), and from it come the key
table in docs/config-keys.md and the stack file's JSON Schema, stack.schema.json
(`python -m components.config.keys --write`; tests/config/test_keys.py holds both to it).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..facts import kueue_versions
from ..facts import operators as operator_catalog
from ..k8s.charts import REGISTRY
from .names import CONFIG_PREFIX
from .refusals import REFUSALS

# What `default` holds when a key has none to state (required keys, or a default worked out from
# other keys); the doc then says what happens.
NONE = object()


@dataclass(frozen=True)
class Key:
    """One config key. `kind` is string | integer | number | boolean | object | array | map
    (an object of free keys, e.g. labels) | quantity (a Kubernetes quantity, text or a number) |
    kubeconfig (a string or a Pulumi secret) | secret (a credential: a Pulumi secret only)."""

    name: str
    kind: str
    doc: str
    default: Any = NONE
    required: str | None = None  # what to write, shown after "is required"; None: optional
    unless: str = ""  # when a required key is not: the parser passes it as `exempt` (e.g. a manager's share)
    nullable: bool = False  # `key:` with no value means the default (only for "nothing here" keys)
    pattern: str | None = None  # matched against the whole string
    hint: str = ""  # what the pattern allows, in words, e.g. " (1-12 lowercase letters and digits...)"
    enum: tuple[str, ...] = ()
    minimum: Decimal | int | None = None
    maximum: Decimal | int | None = None
    decimals: int | None = None  # numbers: at most this many decimal places
    words: tuple[str, ...] = ()  # numbers: strings allowed in place of a number (e.g. "unlimited")
    max_length: int = 253
    multiline: bool = False  # strings: newlines and tabs allowed inside
    items: Key | None = None  # arrays: what each item is
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False
    keys: tuple[Key, ...] = ()  # objects: their keys
    values: Key | None = None  # maps: what each value is
    what: str = ""  # arrays and maps: what they hold, in words ("teams", "label key: value")

    def key(self, name: str) -> Key:
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(f"{self.name} declares no key {name!r}")  # a parser asked for an undeclared key

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    @property
    def compiled(self) -> re.Pattern[str] | None:
        return _compiled(self.pattern) if self.pattern else None


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern not in _PATTERNS:
        _PATTERNS[pattern] = re.compile(pattern)
    return _PATTERNS[pattern]


# The patterns the sections share (each matched in full: no trailing newline slips through).
GUID = r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"
GUID_HINT = (
    " (an Entra ID group's object ID, a GUID such as 00000000-0000-0000-0000-000000000000, not "
    "its name; look it up with: az ad group show --group <group name> --query id -o tsv)"
)
POOL_NAME = r"[a-z][a-z0-9]{0,11}"  # AKS's; no "-", so no pool name is in the aks- prefix
POOL_NAME_HINT = " (1-12 lowercase letters and digits, starting with a letter)"
# AKS cluster names: 1-63 letters, digits, '-' and '_', starting and ending with a letter or digit.
CLUSTER_NAME = r"[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
RESOURCE_GROUP = r"[-\w._()]{1,90}"
K8S_VERSION = r"[1-9][0-9]{0,2}\.[0-9]{1,3}(\.[0-9]{1,4})?"
SEMVER = r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}"
# Go's time.ParseDuration, which Kueue's config decoding uses, without signs or fractions.
DURATION = r"([0-9]{1,9}(ns|us|µs|ms|s|m|h)){1,6}"
# Kueue takes only https servers with an IP or DNS host in a worker's kubeconfig
# (kueue v0.19.2 pkg/controller/admissionchecks/multikueue/multikueuecluster.go, validateKubeconfig).
SERVER = r"https://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?/?"
# A stack reference: <organization>/<project>/<stack> (Pulumi Cloud) or <project>/<stack>.
STACK_REF = r"([A-Za-z0-9_.-]{1,100}/){1,2}[A-Za-z0-9_.-]{1,100}"
# Azure resource IDs; resource provider and type names compare without case (the parsers add re.I).
RESOURCE_ID = (
    r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w._()]{1,90}/providers/%s/[A-Za-z0-9][A-Za-z0-9-]{0,62}"
)
WORKSPACE_ID = "(?i:" + RESOURCE_ID % r"Microsoft\.Monitor/accounts" + ")"
# A subnet: .../providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet> (AKS's vnetSubnetID).
SUBNET_ID = (
    "(?i:/subscriptions/[0-9a-f-]{36}/resourceGroups/[-\\w._()]{1,90}/providers/Microsoft\\.Network/"
    "virtualNetworks/[A-Za-z0-9][-\\w.]{0,62}/subnets/[A-Za-z0-9][-\\w.]{0,78})"
)
SUBNET_HINT = (
    " (a subnet's resource ID: /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Network/"
    "virtualNetworks/<vnet>/subnets/<subnet>; az network vnet subnet show ... --query id -o tsv)"
)
# IPv4 in CIDR notation and a plain IPv4 address (the address's own rules are checked by ipaddress).
CIDR = r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}"
IPV4 = r"[0-9]{1,3}(\.[0-9]{1,3}){3}"
OUTBOUND_TYPES = ("loadBalancer", "managedNATGateway", "userAssignedNATGateway", "userDefinedRouting")
GRAFANA_ID = "(?i:" + RESOURCE_ID % r"Microsoft\.Dashboard/grafana" + ")"
_ID_EXAMPLE = "/subscriptions/<id>/resourceGroups/<group>/providers/"
# Where a role is held (a role assignment's scope): a subscription, a resource group, or a resource
# and any child of it (a storage account's blob container). No management group: no team's data.
ROLE_SCOPE = (
    r"(?i:/subscriptions/[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}(/resourceGroups/[-\w._()]{1,90}"
    r"(/providers/[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+(/[a-z][a-z0-9]*/[-\w.()]{1,260}){1,8})?)?)"
)
ROLE_SCOPE_HINT = (
    f" (an Azure resource ID: /subscriptions/<id>, /subscriptions/<id>/resourceGroups/<group>, or a "
    f"resource's, e.g. {_ID_EXAMPLE}Microsoft.Storage/storageAccounts/<account>; az storage account show "
    "-n <account> --query id -o tsv)"
)

TIERS = ("Free", "Standard", "Premium")
UPGRADE_CHANNELS = ("none", "patch", "stable", "rapid", "node-image")
KUEUE_INSTALLS = ("helm", "aksExtension")
OPERATOR_INSTALLS = ("managed", "external")
QUOTA_POLICIES = ("error", "warn", "clamp")
MULTIKUEUE_ROLES = ("none", "worker", "manager")
DISPATCHERS = ("AllAtOnce", "Incremental")
UNLIMITED = "unlimited"
ENTRA_GROUPS = Key("[]", "string", "an Entra ID group object ID", pattern=GUID, hint=GUID_HINT, max_length=36)


def _groups(name: str, doc: str, default: Any = ()) -> Key:
    return Key(name, "array", doc, default=list(default), items=ENTRA_GROUPS, what="Entra ID group object IDs")


def _chart(doc: str, default: Any = NONE) -> Key:
    return Key("chart", "string", doc, default=default, max_length=2048)


def _image_repository(doc: str) -> Key:
    return Key("imageRepository", "string", doc, max_length=512)


SYSTEM_POOL = Key(
    "systemPool",
    "object",
    "the system pool, which runs Kueue, the operators and AKS's add-ons",
    default={},
    keys=(
        Key("vmSize", "string", "a CPU VM size from the catalog", default="Standard_D4s_v5", max_length=64),
        Key("count", "integer", "its node count", default=2, minimum=1, maximum=100),
    ),
)

CLUSTER = Key(
    f"{CONFIG_PREFIX}:cluster",
    "object",
    "the AKS cluster the stack creates, an existing one, or any cluster by kubeconfig",
    default={},
    keys=(
        Key(
            "name",
            "string",
            "the AKS cluster's name",
            default="kueue-<stack>",
            pattern=CLUSTER_NAME,
            hint=" (1-63 letters, digits, '-' or '_', starting and ending with a letter or digit)",
            max_length=63,
        ),
        Key(
            "kubernetesVersion",
            "string",
            'major.minor ("1.33") or major.minor.patch; default: AKS\'s default version',
            pattern=K8S_VERSION,
            hint=' (major.minor such as "1.33", or major.minor.patch)',
            max_length=16,
        ),
        Key("tier", "string", "AKS's pricing tier", default="Free", enum=TIERS),
        Key(
            "zones",
            "array",
            "availability zones for every pool",
            default=[],
            items=Key("[]", "string", "a zone", enum=("1", "2", "3")),
            unique=True,
            max_items=3,
            what='zone strings such as "1", "2", "3"',
        ),
        SYSTEM_POOL,
        _groups("adminGroupObjectIds", "Entra ID groups made cluster admins (Azure RBAC)"),
        Key("disableLocalAccounts", "boolean", "true: Entra ID only (Pulumi then needs kubelogin)", default=False),
        Key("autoUpgradeChannel", "string", "how AKS upgrades the cluster", default="patch", enum=UPGRADE_CHANNELS),
        Key("deployerAdmin", "boolean", "the identity that runs pulumi up gets AKS RBAC Cluster Admin", default=True),
        Key(
            "network",
            "object",
            "the cluster in a subnet of your VNet, its egress and its address ranges (docs/network.md)",
            default={},
            keys=(
                Key(
                    "subnetId",
                    "string",
                    "every pool's subnet unless a pool names its own; default: a VNet AKS makes",
                    pattern=SUBNET_ID,
                    hint=SUBNET_HINT,
                    max_length=512,
                ),
                Key(
                    "outboundType",
                    "string",
                    "how nodes reach the internet",
                    default="loadBalancer",
                    enum=OUTBOUND_TYPES,
                ),
                Key(
                    "podCidr",
                    "string",
                    "the overlay's pod range",
                    default="10.244.0.0/16",
                    pattern=CIDR,
                    hint=" (IPv4 CIDR)",
                ),
                Key(
                    "serviceCidr",
                    "string",
                    "the Services' range",
                    default="10.0.0.0/16",
                    pattern=CIDR,
                    hint=" (IPv4 CIDR)",
                ),
                Key(
                    "dnsServiceIp",
                    "string",
                    "cluster DNS's address, inside serviceCidr",
                    default="10.0.0.10",
                    pattern=IPV4,
                    hint=" (an IPv4 address)",
                ),
            ),
        ),
        Key(
            "apiServer",
            "object",
            "who can reach the API server (docs/network.md)",
            default={},
            keys=(
                Key("private", "boolean", "true: a private cluster, reachable only from its VNet", default=False),
                Key(
                    "authorizedIpRanges",
                    "array",
                    "only these ranges reach the public API server; default: any address",
                    items=Key("[]", "string", "an IPv4 CIDR", pattern=CIDR, hint=" (IPv4 CIDR such as 203.0.113.0/24)"),
                    min_items=1,
                    max_items=200,
                    unique=True,
                    what="IPv4 CIDRs",
                ),
            ),
        ),
        Key(
            "existing",
            "object",
            "an AKS cluster made elsewhere: nothing Azure is created",
            keys=(
                Key(
                    "resourceGroup",
                    "string",
                    "its resource group",
                    required="",
                    pattern=RESOURCE_GROUP,
                    hint=" (an Azure resource group name)",
                    max_length=90,
                ),
                Key(
                    "name",
                    "string",
                    "its name",
                    required="",
                    pattern=CLUSTER_NAME,
                    hint=" (an AKS cluster name)",
                    max_length=63,
                ),
            ),
        ),
        Key(
            "kubeconfig",
            "kubeconfig",
            "any cluster with AKS's pool labels, no Azure at all: a kubeconfig document, set as a secret",
        ),
    ),
)

POOL = Key(
    "[]",
    "object",
    "a user node pool",
    keys=(
        Key(
            "name",
            "string",
            "the pool's name; also its ResourceFlavor's",
            required="(1-12 lowercase letters and digits, starting with a letter)",
            pattern=POOL_NAME,
            hint=POOL_NAME_HINT,
            max_length=12,
        ),
        Key(
            "vmSize",
            "string",
            "an Azure VM size in the catalog (docs/vm-sizes.md), or any size with capacity",
            required="(an Azure VM size such as Standard_D16s_v5)",
            max_length=64,
        ),
        Key("minCount", "integer", "the autoscaler's lower bound", default=0, minimum=0, maximum=1000),
        Key(
            "maxCount",
            "integer",
            "the autoscaler's upper bound; quotas count maxCount nodes",
            required="(the autoscaler's upper bound, 1 to 1000)",
            minimum=1,
            maximum=1000,
        ),
        Key("spot", "boolean", "Spot VMs (AKS adds its spot taint and label)", default=False),
        Key(
            "taints",
            "array",
            'taints "key=value:Effect"; default: GPU sizes get nvidia.com/gpu=present:NoSchedule, CPU sizes none',
            items=Key("[]", "string", "a taint", max_length=317),
            max_items=32,
            what='taints "key=value:Effect"',
        ),
        Key(
            "labels",
            "map",
            "extra node labels",
            default={},
            values=Key("value", "string", "a label value", hint=" (quote numbers and booleans)", max_length=63),
            what="label key: value",
        ),
        Key("topology", "boolean", "the pool's flavor is topology-aware (TAS)", default=False),
        Key(
            "provisioningRequest",
            "boolean",
            "Kueue admits a job only after the autoscaler added all its nodes; default: true for autoscaled GPU pools",
        ),
        Key(
            "capacity",
            "object",
            "per-node hardware as Azure lists the size, overriding the catalog",
            keys=(
                Key("cpu", "quantity", 'vCPUs per node, e.g. "24"', max_length=32),
                Key("memory", "quantity", 'memory per node, e.g. "220Gi"', max_length=32),
                Key("nvidia.com/gpu", "integer", "whole NVIDIA GPUs per node", minimum=0, maximum=64),
            ),
        ),
        Key(
            "subnetId",
            "string",
            "the pool's own subnet, in the VNet of cluster.network.subnetId; default: that subnet",
            pattern=SUBNET_ID,
            hint=SUBNET_HINT,
            max_length=512,
        ),
    ),
)

NODE_POOLS = Key(
    f"{CONFIG_PREFIX}:nodePools",
    "array",
    "the user node pools: one ResourceFlavor each",
    required=": a list of at least one user node pool",
    items=POOL,
    min_items=1,
    max_items=100,
    what="node pools",
)

KUEUE = Key(
    f"{CONFIG_PREFIX}:kueue",
    "object",
    "which Kueue, how it is installed, its feature gates and job frameworks",
    default={},
    keys=(
        Key(
            "version",
            "string",
            "the exact Kueue chart version",
            default=kueue_versions.DEFAULT_VERSION,
            pattern=SEMVER,
            hint=' (an exact chart version such as "0.19.2"; never a range or "latest")',
            max_length=16,
        ),
        Key(
            "featureGates",
            "map",
            "Kueue feature gates, GateName: true|false",
            default={"TopologyAwareScheduling": True, "LocalQueueMetrics": True},
            values=Key("gate", "boolean", "on or off"),
            what="GateName: true|false",
        ),
        Key(
            "frameworks",
            "array",
            "the job integrations Kueue manages",
            default=["batch/job", "…"],
            items=Key("[]", "string", "a framework", max_length=128),
            what="job framework names",
        ),
        Key("replicas", "integer", "Kueue controller replicas", default=2, minimum=1, maximum=10),
        _chart("oci:// or https:// repository, or a local .tgz", "oci://registry.k8s.io/kueue/charts/kueue"),
        _image_repository("a mirror of registry.k8s.io/kueue/kueue; the tag follows the version"),
        Key("install", "string", "helm (the stack's release) or aksExtension", default="helm", enum=KUEUE_INSTALLS),
        Key(
            "extensionVersion",
            "string",
            "with install: aksExtension, the pinned extension version",
            default=kueue_versions.DEFAULT_AKS_EXTENSION,
            enum=tuple(sorted(kueue_versions.AKS_EXTENSIONS)),
        ),
    ),
)

TEAM = Key(
    "[]",
    "object",
    "a team: its namespace, queues and quota",
    keys=(
        Key(
            "name",
            "string",
            "a DNS-1123 label; names the team's namespace and ClusterQueue",
            required="(a DNS-1123 label such as research)",
            max_length=63,
        ),
        Key(
            "share",
            "number",
            "percent of every flavor's capacity; all shares add up to at most 100",
            required="(percent of every flavor's capacity, from 0.01 to 100)",
            unless="on a MultiKueue manager",
            minimum=Decimal("0.01"),
            maximum=100,
            decimals=10,
            hint=" (percent)",
        ),
        Key(
            "pools",
            "array",
            "the user pools it gets quota on; default all",
            items=Key("[]", "string", "a pool name", max_length=12),
            what="user pool names",
        ),
        Key(
            "members",
            "array",
            "the groups that may submit in its namespace: Entra ID group object IDs (group names in kubeconfig mode)",
            default=[],
            what="Entra ID group object IDs (group names in kubeconfig mode)",
        ),
        Key(
            "borrowing",
            "number",
            "how much of what others leave idle it may borrow, as a multiple of its quota (0: none)",
            default=UNLIMITED,
            minimum=0,
            maximum=100,
            decimals=4,
            words=(UNLIMITED,),
            hint=" (a multiple of the team's quota)",
        ),
        Key(
            "identity",
            "object",
            "an Azure identity the team's jobs run as, by workload identity, with roles on their data (AKS only)",
            keys=(
                Key(
                    "roles",
                    "array",
                    "the Azure roles the identity holds, each at its scope",
                    required=": a list of at least one {role, scope}",
                    items=Key(
                        "[]",
                        "object",
                        "a role at a scope",
                        keys=(
                            Key(
                                "role",
                                "string",
                                "a built-in role's name (docs/configuration.md) or a role definition ID",
                                required="(a built-in role's name such as Storage Blob Data Reader, or a role "
                                "definition ID)",
                                max_length=256,
                            ),
                            Key(
                                "scope",
                                "string",
                                "the Azure resource ID the role is held on",
                                required="(an Azure resource ID, e.g. a storage account's)",
                                pattern=ROLE_SCOPE,
                                hint=ROLE_SCOPE_HINT,
                                max_length=1024,
                            ),
                        ),
                    ),
                    min_items=1,
                    max_items=100,
                    what="roles {role, scope}",
                ),
            ),
        ),
    ),
)

TEAMS = Key(
    f"{CONFIG_PREFIX}:teams",
    "array",
    "the teams",
    required=": a list of at least one team",
    items=TEAM,
    min_items=1,
    max_items=5000,
    what="teams",
)

PRIORITY_CLASSES = Key(
    f"{CONFIG_PREFIX}:priorityClasses",
    "array",
    "the WorkloadPriorityClasses jobs may name; default high=1000, normal=0, low=-1000",
    items=Key(
        "[]",
        "object",
        "a priority class",
        keys=(
            Key("name", "string", "a DNS-1123 name; the label value jobs carry", required="", max_length=63),
            Key("value", "integer", "its priority (int32)", required="", minimum=-(2**31), maximum=2**31 - 1),
            Key("description", "string", "what it is for", default="", max_length=2048, multiline=True),
        ),
    ),
    max_items=1000,
    what="priority classes {name, value, description}",
)

TOPOLOGY = Key(
    f"{CONFIG_PREFIX}:topology",
    "object",
    "Kueue's Topology for pools with topology: true",
    default={},
    keys=(
        Key(
            "levels",
            "array",
            "node label keys, coarsest first (kubernetes.io/hostname last)",
            default=["topology.kubernetes.io/zone", "kubernetes.io/hostname"],
            items=Key("[]", "string", "a node label key", max_length=317),
            min_items=1,
            max_items=16,
            what="node label keys",
        ),
    ),
)

GOVERNANCE = Key(
    f"{CONFIG_PREFIX}:governance",
    "object",
    "only Kueue-admitted pods reach the user pools",
    default={},
    keys=(
        Key("enforce", "boolean", "taint the user pools and guard them with an admission policy", default=True),
        Key(
            "exemptNamespaces",
            "array",
            "namespaces whose pods may reach the pools, beside kube-system and nvidia-device-plugin",
            default=[],
            items=Key("[]", "string", "a namespace", max_length=63),
            max_items=256,
            what="namespace names",
        ),
    ),
)

DEVICE_PLUGIN = Key(
    f"{CONFIG_PREFIX}:devicePlugin",
    "object",
    "where the NVIDIA device plugin's chart and image come from",
    default={},
    keys=(
        _chart("https:// or oci:// repository, or a local .tgz", "https://nvidia.github.io/k8s-device-plugin"),
        _image_repository("a mirror of nvcr.io/nvidia/k8s-device-plugin"),
    ),
)


REGISTRY_CREDENTIALS = Key(
    f"{CONFIG_PREFIX}:registryCredentials",
    "array",
    "sign-ins Helm uses to pull charts from private registries; each password a Pulumi secret (docs/registries.md)",
    default=[],
    items=Key(
        "[]",
        "object",
        "one registry's sign-in",
        keys=(
            Key(
                "registry",
                "string",
                "the host[:port] of a chart URL above, e.g. myregistry.azurecr.io",
                required="(the host[:port] of a chart URL, e.g. myregistry.azurecr.io)",
                pattern=REGISTRY,
                hint=" (a host name with an optional :port, no scheme or path)",
            ),
            Key("username", "string", "the user Helm signs in as", required="(the user Helm signs in as)"),
            Key(
                "password",
                "secret",
                "its password or token, set with pulumi config set --secret --path",
                required="(set it with pulumi config set --secret --path 'kueue-aks:registryCredentials[0].password')",
                max_length=8192,
            ),
        ),
    ),
    max_items=50,
    what="registry sign-ins {registry, username, password}",
)


def _operator(op: operator_catalog.Operator) -> Key:
    keys = [
        Key(
            "install",
            "string",
            "managed (the stack installs it) or external (the cluster has it)",
            default="managed" if op.managed else NONE,
            enum=OPERATOR_INSTALLS,
        )
    ]
    if op.managed:
        if op.chart:
            keys.append(_chart("a mirror of its chart", op.chart))
        keys.append(_image_repository("a mirror of its controller image; the tag stays pinned"))
    return Key(op.key, "object", f"{op.title} ({', '.join(op.frameworks)})", keys=tuple(keys))


OPERATORS = Key(
    f"{CONFIG_PREFIX}:operators",
    "object",
    "how each job operator the frameworks need is installed, and from where",
    default={},
    keys=tuple(_operator(op) for op in operator_catalog.OPERATORS.values()),
)

MONITORING = Key(
    f"{CONFIG_PREFIX}:monitoring",
    "object",
    "Kueue's metrics in Azure Monitor and Grafana, or a ServiceMonitor in kubeconfig mode",
    default={},
    keys=(
        Key("enabled", "boolean", "collect and show Kueue's metrics", default=False),
        Key(
            "azureMonitorWorkspaceId",
            "string",
            "an existing Azure Monitor workspace; default: the stack creates one",
            pattern=WORKSPACE_ID,
            hint=f" (an Azure Monitor workspace's resource ID, {_ID_EXAMPLE}Microsoft.Monitor/accounts/<name>)",
            max_length=512,
        ),
        Key(
            "grafanaId",
            "string",
            "an existing Azure Managed Grafana; default: the stack creates one",
            pattern=GRAFANA_ID,
            hint=f" (an Azure Managed Grafana's resource ID, {_ID_EXAMPLE}Microsoft.Dashboard/grafana/<name>)",
            max_length=512,
        ),
        _groups("grafanaAdminGroupObjectIds", "Grafana Admins of a new Grafana; default cluster.adminGroupObjectIds"),
        Key("serviceMonitor", "boolean", "kubeconfig mode: a Prometheus Operator ServiceMonitor", default=False),
    ),
)

PREFLIGHT = Key(
    f"{CONFIG_PREFIX}:preflight",
    "object",
    "the check of Azure's vCPU quota and VM sizes before any resource",
    default={},
    keys=(
        Key("enabled", "boolean", "run the check (false skips it with a warning)", default=True),
        Key("quotaPolicy", "string", "what a quota shortfall does", default="error", enum=QUOTA_POLICIES),
    ),
)

MULTIKUEUE = Key(
    f"{CONFIG_PREFIX}:multiKueue",
    "object",
    "several clusters behind one set of queues",
    default={},
    keys=(
        Key(
            "role",
            "string",
            "none, worker or manager",
            required=": one of none | worker | manager",
            enum=MULTIKUEUE_ROLES,
        ),
        Key(
            "server",
            "string",
            "worker: the API server URL its managers dial; default the cluster's own",
            pattern=SERVER,
            hint=" (the worker's API server as its managers reach it, https://<host>[:port])",
        ),
        Key(
            "workers",
            "array",
            "manager: the worker stacks, in order of preference",
            items=Key(
                "[]",
                "object",
                "a worker",
                keys=(
                    Key(
                        "name", "string", "its MultiKueueCluster's name (a DNS-1123 label)", required="", max_length=63
                    ),
                    Key(
                        "stack",
                        "string",
                        "the worker stack, for a StackReference",
                        required="",
                        pattern=STACK_REF,
                        hint=(
                            " (the worker stack's name for a StackReference: <organization>/<project>/<stack>, or "
                            "<project>/<stack> on a self-managed backend)"
                        ),
                    ),
                ),
            ),
            what="workers {name, stack}",
        ),
        Key(
            "origin",
            "string",
            "manager: the label on its objects in the workers",
            default="kueue-aks-<stack>",
            max_length=63,
        ),
        Key(
            "workerLostTimeout",
            "string",
            "manager: how long a lost worker keeps its workloads",
            default="15m",
            pattern=DURATION,
            hint=' (a duration such as "15m", "90s" or "1h30m")',
            max_length=32,
        ),
        Key(
            "gcInterval",
            "string",
            "manager: how often orphaned worker objects are collected",
            default="1m",
            pattern=DURATION,
            hint=' (a duration such as "15m", "90s" or "1h30m")',
            max_length=32,
        ),
        Key(
            "dispatcher",
            "string",
            "manager: how workloads are offered to workers",
            default="AllAtOnce",
            enum=DISPATCHERS,
        ),
    ),
)

# Every top-level key, in the order the docs list them.
SECTIONS: tuple[Key, ...] = (
    CLUSTER,
    NODE_POOLS,
    KUEUE,
    TEAMS,
    PRIORITY_CLASSES,
    TOPOLOGY,
    GOVERNANCE,
    DEVICE_PLUGIN,
    MONITORING,
    OPERATORS,
    PREFLIGHT,
    MULTIKUEUE,
    REGISTRY_CREDENTIALS,
)

BY_NAME: Mapping[str, Key] = {k.name.split(":", 1)[1]: k for k in SECTIONS}


def describe(key: Key) -> str:
    """What a key allows, in words, for "is empty" and the docs."""
    if key.kind == "string":
        if key.enum:
            return " | ".join(key.enum)
        return "a string" + key.hint
    if key.kind == "integer":
        return f"an integer from {key.minimum} to {key.maximum}"
    if key.kind == "number":
        words = "".join(f" or {w!r}" for w in key.words)
        return f"a number from {key.minimum} to {key.maximum}{key.hint}{words}"
    if key.kind == "boolean":
        return "true or false"
    if key.kind == "array":
        return f"a list of {key.what}"
    if key.kind == "map":
        return f"an object of {key.what}"
    if key.kind == "kubeconfig":
        return "a kubeconfig document, set with pulumi config set --secret"
    if key.kind == "secret":
        return "a Pulumi secret, set with pulumi config set --secret"
    if key.kind == "quantity":
        return "a Kubernetes quantity"
    return "an object with keys " + ", ".join(key.names)


# ---- what is generated from the description ------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "stack.schema.json"
KEYS_DOC = ROOT / "docs" / "config-keys.md"
REFUSALS_DOC = ROOT / "docs" / "config-refusals.md"


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def json_schema(key: Key) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one key's value."""
    out: dict[str, Any] = {"description": key.doc}
    if key.default is not NONE and "<" not in str(key.default) and "…" not in str(key.default):
        out["default"] = _plain(key.default)
    secret = {"type": "object", "properties": {"secure": {"type": "string"}}, "required": ["secure"]}
    if key.kind == "string":
        out["type"] = "string"
        if key.enum:
            out["enum"] = list(key.enum)
        if key.pattern:
            out["pattern"] = f"^(?:{key.pattern})$"
        out["maxLength"] = key.max_length
    elif key.kind == "kubeconfig":
        out["anyOf"] = [secret, {"type": "string"}]
    elif key.kind == "secret":
        out.update(secret)
    elif key.kind == "quantity":
        out["type"] = ["string", "integer"]
    elif key.kind in ("integer", "number"):
        number: dict[str, Any] = {"type": key.kind}
        if key.minimum is not None:
            number["minimum"] = _plain(key.minimum)
        if key.maximum is not None:
            number["maximum"] = _plain(key.maximum)
        if key.words:
            out["anyOf"] = [number, {"enum": list(key.words)}]
        else:
            out.update(number)
    elif key.kind == "boolean":
        out["type"] = "boolean"
    elif key.kind == "array":
        out["type"] = "array"
        if key.items is not None:
            out["items"] = json_schema(key.items)
            out["items"].pop("description", None)
        if key.min_items:
            out["minItems"] = key.min_items
        if key.max_items is not None:
            out["maxItems"] = key.max_items
        if key.unique:
            out["uniqueItems"] = True
    elif key.kind == "map":
        out["type"] = "object"
        if key.values is not None:
            values = json_schema(key.values)
            values.pop("description", None)
            out["additionalProperties"] = values
    else:
        out["type"] = "object"
        out["properties"] = {k.name: json_schema(k) for k in key.keys}
        out["additionalProperties"] = False
        required = [k.name for k in key.keys if k.required is not None and not k.unless]
        if required:
            out["required"] = required
    return out


def stack_schema() -> dict[str, Any]:
    """The JSON Schema of a whole `Pulumi.<stack>.yaml`: the `config:` map with every key of ours,
    the Azure location, and any other provider's keys left free."""
    ours = {k.name: json_schema(k) for k in SECTIONS}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/kueue-aks/kueue-aks/stack.schema.json",
        "title": "kueue-aks stack file (Pulumi.<stack>.yaml)",
        "description": "Generated by python -m components.config.keys --write; docs/config-keys.md lists its keys.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": {
                    "azure-native:location": {"type": "string", "description": "the Azure region, e.g. eastus2"},
                    **ours,
                },
                # Our namespace holds only the keys above; other namespaces (providers') are free.
                "propertyNames": {"anyOf": [{"not": {"pattern": f"^{CONFIG_PREFIX}:"}}, {"enum": list(ours)}]},
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {},
        },
    }


def _default_text(key: Key) -> str:
    if key.required is not None:
        return f"required {key.unless}".strip()
    if key.default is NONE:
        return "—"
    value = _plain(key.default)
    return f"`{json.dumps(value, ensure_ascii=False)}`" if not isinstance(value, str) else f"`{value}`"


def _allowed_text(key: Key) -> str:
    parts = [describe(key)]
    if key.kind == "string" and key.pattern and not key.hint:
        parts.append(f"matching `{key.pattern}`")
    if key.kind == "string" and not key.enum:
        parts.append(f"at most {key.max_length} characters")
    if key.kind == "number" and key.decimals is not None:
        parts.append(f"at most {key.decimals} decimal places")
    if key.kind == "array":
        bounds = f"{key.min_items} to {key.max_items}" if key.max_items is not None else f"at least {key.min_items}"
        parts.append(f"{bounds} items" + (", each once" if key.unique else ""))
        if key.items is not None and key.items.kind != "object":
            parts.append("each " + describe(key.items))
    if not key.nullable and key.kind != "object":
        parts.append("never empty")
    return "; ".join(p.replace("|", "\\|") for p in parts)


def _rows(key: Key, path: str) -> list[str]:
    rows = [f"| `{path}` | {key.kind} | {_default_text(key)} | {_allowed_text(key)} | {key.doc} |"]
    children = key.keys or (key.items.keys if key.items is not None else ())
    prefix = f"{path}[]" if key.kind == "array" else path
    for child in children:
        rows += _rows(child, f"{prefix}.{child.name}")
    return rows


def keys_markdown() -> str:
    lines = [
        "# Every config key",
        "",
        "Generated from the config's one description (`components/config/keys.py`) by",
        "`python -m components.config.keys --write`; a test fails when this page and the code differ.",
        "[Configuration reference](configuration.md) explains each section; [Refusals](config-refusals.md)",
        "lists what the config refuses and why.",
        "",
        "Every string is matched whole (a trailing newline is refused), holds no control or invisible",
        "character, and is at most the length given; an empty value (`key:` with nothing after it) is",
        "refused for every key, so nothing is left out without a word.",
        "",
    ]
    for section in SECTIONS:
        lines += [
            f"## `{section.name}`",
            "",
            "| key | type | default | allowed | what it is |",
            "|---|---|---|---|---|",
            *_rows(section, section.name),
            "",
        ]
    return "\n".join(lines)


def refusals_markdown() -> str:
    lines = [
        "# What the config refuses, and why",
        "",
        "Generated from `components/config/keys.py` and `components/config/refusals.py` by",
        "`python -m components.config.keys --write`; tests/config/test_refusals.py parses each example below",
        "and checks that it is refused at the key named.",
        "",
        "Every stack file is refused whole or accepted whole, before any resource is registered: each problem",
        "names its key and what is allowed, and all of them are listed at once.",
        "",
        "## By key",
        "",
        "Each key's type, bounds, pattern and length ([Every config key](config-keys.md)). Beyond them:",
        "",
        "- a key with no value (`key:`) is refused, never read as absent;",
        "- a string is matched whole, so a trailing line break is refused, and no string may hold a control,",
        "  zero-width or bidirectional character;",
        "- a number must be finite; a message quotes at most 80 characters of a value.",
        "",
        "## The stack file",
        "",
        "The plan reads `Pulumi.<stack>.yaml` as the Pulumi CLI hands it to the program (YAML 1.2: `yes` is",
        "text, `1e3` is 1000) and refuses what the CLI refuses (duplicate keys, NaN), plus anchors and",
        "aliases, merge keys and tags, which it does not read",
        "([How the stack file is read](configuration.md#how-the-stack-file-is-read)).",
        "",
        "## Rules across keys",
        "",
        "| key | refused | why |",
        "|---|---|---|",
    ]
    for r in REFUSALS:
        lines.append(f"| `{r.path}` | {r.rule} | {r.why} |")
    return "\n".join(lines) + "\n"


def generated() -> dict[Path, str]:
    return {
        SCHEMA_FILE: json.dumps(stack_schema(), indent=2, ensure_ascii=False) + "\n",
        KEYS_DOC: keys_markdown() + "\n",
        REFUSALS_DOC: refusals_markdown(),
    }


def main(argv: Sequence[str]) -> int:
    stale = [path for path, text in generated().items() if not path.is_file() or path.read_text() != text]
    if "--write" in argv:
        for path, text in generated().items():
            path.write_text(text)
        return 0
    for path in stale:
        print(f"{path.relative_to(ROOT)} is stale: run python -m components.config.keys --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
