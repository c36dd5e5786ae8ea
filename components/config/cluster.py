"""`kueue-aks:cluster`: the AKS cluster the stack creates, an existing one, or any cluster by
kubeconfig; its defaults and its parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import ENCRYPTED, INVALID, Problems, Reader, group_ids
from .credentials import kubeconfig_credentials, kubeconfig_document, plain_text_problem
from .keys import CLUSTER, SYSTEM_POOL
from .network import ApiServer, NetworkSettings, parse_api_server, parse_network
from .pools import vm_size_checker

# Keys that shape a cluster the program creates; meaningless for a cluster it only uses.
CREATION_KEYS = (
    "name",
    "kubernetesVersion",
    "tier",
    "zones",
    "systemPool",
    "adminGroupObjectIds",
    "disableLocalAccounts",
    "autoUpgradeChannel",
    "deployerAdmin",
    "network",
    "apiServer",
)


# ValidatingAdmissionPolicy, which the stack's guards use (components/k8s/admission.py), is GA from 1.30.
MIN_KUBERNETES_VERSION = (1, 30)


# The newest Kubernetes minor released upstream when this was written (1.36, the e2e tier's API
# server); AKS offers a minor only after upstream releases it, so a newer pin is a typo, which AKS
# would refuse only after the stack's resource group exists.
MAX_KUBERNETES_VERSION = (1, 36)


MAX_KUBECONFIG_BYTES = 1 << 20


def kubernetes_minor(version: str) -> tuple[int, int]:
    """(major, minor) of a Kubernetes version the config accepted, e.g. "1.33" or "1.33.2"."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


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
    network: NetworkSettings = NetworkSettings()  # the subnet, egress and ranges; AKS's defaults
    api_server: ApiServer = ApiServer()  # public, authorized ranges only, or private
    existing: ExistingCluster | None = None  # an AKS cluster made elsewhere: nothing Azure is created
    kubeconfig: str | None = field(default=None, repr=False)  # any cluster: no Azure at all; a secret

    @property
    def mode(self) -> str:
        """create | existing | kubeconfig"""
        return "existing" if self.existing else "kubeconfig" if self.kubeconfig else "create"


def _is_kubeconfig(doc: Any) -> bool:
    """A kubeconfig document: YAML with a list of clusters, each with a server address."""
    clusters = doc.get("clusters") if isinstance(doc, Mapping) else None
    return (
        isinstance(clusters, list)
        and bool(clusters)
        and all(
            isinstance(c, Mapping)
            and isinstance(c.get("cluster"), Mapping)
            and isinstance(c["cluster"].get("server"), str)
            for c in clusters
        )
    )


def parse_cluster(problems: Problems, raw: Any, stack: str, *, secret: bool | None = None) -> ClusterSettings:
    """`secret`: whether the program was handed the section as a Pulumi secret (None: unknown)."""
    r = Reader(problems, CLUSTER.name, raw, CLUSTER)
    name = r.get("name", f"kueue-{stack}")

    def k8s_version(p: str, v: str) -> Any:
        newest = ".".join(map(str, MAX_KUBERNETES_VERSION))
        if kubernetes_minor(v) < MIN_KUBERNETES_VERSION:
            problems.add(
                p,
                f"{v!r} is below {'.'.join(map(str, MIN_KUBERNETES_VERSION))}: the program installs a "
                "ValidatingAdmissionPolicy (GA in Kubernetes 1.30) to make Kueue's uninstall finish",
            )
            return INVALID
        if kubernetes_minor(v) > MAX_KUBERNETES_VERSION:
            problems.add(
                p,
                f"{v!r} is newer than any Kubernetes AKS offers ({newest} is the newest it has announced); "
                "run az aks get-versions --location <region> for the versions your region has",
            )
            return INVALID
        return v

    def system_pool(p: str, v: Any) -> Any:
        s = Reader(problems, p, v, SYSTEM_POOL)
        return SystemPool(
            vm_size=s.get("vmSize", SystemPool.vm_size, vm_size_checker(problems, gpu_allowed=False)),
            count=s.get("count", SystemPool.count),
        )

    def existing(p: str, v: Any) -> Any:
        e = Reader(problems, p, v, CLUSTER.key("existing"))
        if not e.value:
            if isinstance(v, Mapping):
                problems.add(p, "must name the cluster: {resourceGroup, name}")
            return INVALID
        group = e.get("resourceGroup", None)
        cluster_name = e.get("name", None)
        return ExistingCluster(group, cluster_name) if group and cluster_name else INVALID

    def kubeconfig(p: str, v: Any) -> Any:
        if isinstance(v, Mapping) and set(v) == {"secure"} and isinstance(v["secure"], str):
            # Still encrypted: read from the stack file (the offline plan); the program gets it decrypted.
            return ENCRYPTED
        # Never echo the value, not even in a YAML parse error: it holds credentials.
        if isinstance(v, str) and len(v) > MAX_KUBECONFIG_BYTES:
            problems.add(p, f"has {len(v)} characters; a kubeconfig document is at most {MAX_KUBECONFIG_BYTES}")
            return INVALID
        doc = kubeconfig_document(v) if isinstance(v, str) else None
        if not _is_kubeconfig(doc):
            problems.add(
                p,
                "must be a kubeconfig document (set it with `pulumi config set --secret --path "
                "kueue-aks:cluster.kubeconfig < file`); the value given is not one",
            )
            return INVALID
        held = kubeconfig_credentials(doc)
        if held and secret is False:
            # A kubeconfig whose users sign in by exec (kubelogin) holds none and may stay in plain text.
            problems.add(p, plain_text_problem(f"a credential ({', '.join(held[:3])})", p, "< kubeconfig"))
            return INVALID
        return v

    if isinstance(r.value.get("kubernetesVersion"), float):
        problems.add(
            r.at("kubernetesVersion"),
            f'must be a quoted string such as "1.33"; YAML read {r.value["kubernetesVersion"]!r} as a number',
        )
    modes = [k for k in ("existing", "kubeconfig") if k in r.value]
    if len(modes) == 2:
        problems.add(r.at("kubeconfig"), "cannot be set together with cluster.existing; choose one cluster mode")
    elif modes:
        for key in CREATION_KEYS:
            if key in r.value:
                problems.add(
                    r.at(key),
                    f"configures a cluster the program creates; with cluster.{modes[0]} the "
                    "program creates no cluster, so remove it",
                )
    return ClusterSettings(
        name=name,
        kubernetes_version=None
        if isinstance(r.value.get("kubernetesVersion"), float)
        else r.get("kubernetesVersion", None, k8s_version),
        tier=r.get("tier", "Free"),
        zones=tuple(r.get("zones", ())),
        system_pool=r.get("systemPool", SystemPool(), system_pool),
        admin_group_object_ids=r.get("adminGroupObjectIds", (), group_ids(problems)),
        disable_local_accounts=r.get("disableLocalAccounts", False),
        auto_upgrade_channel=r.get("autoUpgradeChannel", "patch"),
        deployer_admin=r.get("deployerAdmin", True),
        existing=r.get("existing", None, existing),
        kubeconfig=r.get("kubeconfig", None, kubeconfig),
        network=parse_network(problems, r.value.get("network")),
        api_server=parse_api_server(problems, r.value.get("apiServer")),
    )
