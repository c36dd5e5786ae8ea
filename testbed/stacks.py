"""Every stack the tests and the benchmark know, in one catalogue.

- The stack files of the repository (`stack_file_config`), the DESIGN.md example, and a stack
  file's map parsed as the program parses it (`load_stack`).
- The e2e tier's stacks (`config_map`, `load`): the dev stack, the DESIGN.md example and generated
  shapes that cover what the two real stacks do not: a spot GPU pool (AKS's spot taint and label)
  beside an autoscaled topology-aware pool (both with ProvisioningRequest), several GPU sizes side
  by side (flavor order between GPU pools) with a topology-aware GPU pool, several teams that each
  use a subset of the pools (quotas only where a team may go), one of them only a topology-aware
  pool (its `default` queue is `<team>-topology`) and one with an Azure identity for its data, and
  a GPU pool whose quotas the preflight clamped to the subscription's vCPU quota; the MultiKueue
  example; the engine's kubeconfig stack.
- The benchmark's generated stacks of N teams across M pools (`generated_config`): realistic worst
  cases for size: every team uses every pool (so each ClusterQueue lists a quota for every
  flavor), pools mix CPU and GPU catalog sizes, one CPU pool is topology-aware (so the Topology
  object and its dependency chain exist), one GPU pool is spot.
- The shapes the unit tier runs the whole program on under the mocks (`SHAPES`, `stack_run`): the
  dev stack as committed, the e2e tier's stacks, the MultiKueue example, and the modes and features
  that change what the program creates (existing cluster, AKS's Kueue extension, monitoring off or
  on existing Azure resources, team identities, a cluster by kubeconfig, the company's network).
  tests/arm/test_specs.py checks what goes to Azure, tests/test_assembly.py what goes to the cluster.
"""

from __future__ import annotations

import copy
import re
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import yaml

from components.config.parse import parse_config, raw_from_stack_file
from components.config.refusals import MINIMAL
from components.config.stack import StackConfig
from components.facts.built_in_roles import BUILT_IN_ROLES
from components.facts.capacity import CATALOG
from components.facts.device_plugin import DEVICE_PLUGIN_VERSION
from components.facts.kueue_versions import DEFAULT_VERSION
from components.preflight.arm import ArmClient, ProviderToken
from components.multikueue.manager import Worker
from components.preflight.check import decide, read
from testbed import azure_fake
from testbed.harness import SUBSCRIPTION  # the deployment's (the mocked client config's)
from testbed.loopback_tls import make_tls
from testbed.paths import ROOT, SHARED

if TYPE_CHECKING:
    from components import assembly
    from testbed.harness import ProgramMocks, ProgramRun, Registration


# --- stack files and their variants ---------------------------------------------------------

DESIGN_EXAMPLE = ROOT / "testbed" / "fixtures" / "design-example.yaml"


def stack_file_config(stack: str = "dev") -> dict[str, Any]:
    """The `config:` map of a Pulumi.<stack>.yaml in the repository."""
    return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]


def design_example() -> dict[str, Any]:
    """The example config of the stack-config contract in ../shared/DESIGN.md, as a config map."""
    return yaml.safe_load(DESIGN_EXAMPLE.read_text())["config"]


def design_md_example() -> dict[str, Any] | None:
    """The same example read from ../shared/DESIGN.md itself, where that file exists."""
    path = SHARED / "DESIGN.md"
    if not path.exists():
        return None
    block = re.search(r"```yaml\n(config:\n.*?)```", path.read_text(), re.S)
    assert block, "DESIGN.md has no ```yaml config: block"
    return yaml.safe_load(block.group(1))["config"]


def load_stack(config_map: dict[str, Any], stack: str = "dev") -> StackConfig:
    """A stack file's `config:` map, parsed as the program parses it."""
    raw, location = raw_from_stack_file({"config": config_map})
    return parse_config(raw, stack=stack, location=location)


def with_shares(config_map: dict[str, Any], **shares: int) -> dict[str, Any]:
    changed = copy.deepcopy(config_map)
    for team in changed["kueue-aks:teams"]:
        team["share"] = shares.get(team["name"], team["share"])
    return changed


def with_pool(config_map: dict[str, Any], name: str, **settings: Any) -> dict[str, Any]:
    changed = copy.deepcopy(config_map)
    next(p for p in changed["kueue-aks:nodePools"] if p["name"] == name).update(settings)
    return changed


# Raw configs, as parse_config takes them (the keys without the kueue-aks: prefix).
# Written out, not imported, so a change to the governance taint is a test failure to look at.
QUEUED = "kueue-aks.io/queued=true:NoSchedule"
# A topology-aware pool as the config requires it: fixed-size (minCount == maxCount).
TAS_POOL: dict[str, Any] = {"name": "tas", "vmSize": "Standard_D8s_v5", "minCount": 2, "maxCount": 2, "topology": True}


def with_changes(**changes: Any) -> dict[str, Any]:
    """The smallest config parse_config accepts (components/config/refusals.py MINIMAL), with
    `changes` on top."""
    raw = copy.deepcopy(dict(MINIMAL))
    raw.update(changes)
    return raw


def parse_raw(raw: dict[str, Any], location: str | None = "eastus2") -> StackConfig:
    return parse_config(raw, stack="test", location=location)


# A cluster that exists, or one given by kubeconfig (whose token must never show up outside a secret).
EXISTING = {"resourceGroup": "rg", "name": "aks1"}
SERVER = "https://example.invalid:6443"
TOKEN = "kubeconfig-token-not-real"
KUBECONFIG = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "byo", "cluster": {"server": SERVER}}],
        "contexts": [{"name": "byo", "context": {"cluster": "byo", "user": "u"}}],
        "current-context": "byo",
        "users": [{"name": "u", "user": {"token": TOKEN}}],
    }
)


def with_cluster(config: dict[str, Any], cluster: dict[str, Any] | None, **keys: Any) -> dict[str, Any]:
    """A copy of a stack config map with kueue-aks:cluster replaced (None: removed) and other
    kueue-aks: keys set, e.g. kueue={...}."""
    changed = copy.deepcopy(config)
    changed.pop("kueue-aks:cluster", None)
    if cluster is not None:
        # Monitoring differs per mode (tests/monitoring/test_monitoring.py); a test that wants it sets it.
        changed.pop("kueue-aks:monitoring", None)
    if cluster is not None:
        changed["kueue-aks:cluster"] = cluster
    changed.update({f"kueue-aks:{key}": value for key, value in keys.items()})
    return changed


def kubeconfig_stack(config: dict[str, Any], **keys: Any) -> dict[str, Any]:
    """A kubeconfig stack: no azure-native:location at all, as its stack file would have."""
    changed = with_cluster(config, {"kubeconfig": KUBECONFIG}, **keys)
    changed.pop("azure-native:location", None)
    return changed


def extension_stack(**kueue: Any) -> dict[str, Any]:
    """The dev stack on AKS's managed Kueue, in a region and on a version the extension takes."""
    config = copy.deepcopy(stack_file_config())
    config["azure-native:location"] = "eastus"
    config["kueue-aks:cluster"] = {**(config.get("kueue-aks:cluster") or {}), "kubernetesVersion": "1.34"}
    config["kueue-aks:kueue"] = {"install": "aksExtension", **kueue}
    return config


# Monitoring on existing Azure resources, in the deployment's subscription (the mocked client
# config's): the program refuses others.
WORKSPACE_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/obs-rg/providers/Microsoft.Monitor/accounts/amw1"
GRAFANA_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/graf-rg/providers/Microsoft.Dashboard/grafana/graf1"

# The company's network: a subnet for the cluster, another for the GPU pool, egress by its routes,
# the API server open to two ranges only.
SUB = "00000000-0000-0000-0000-0000000000aa"
VNET = f"/subscriptions/{SUB}/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/spoke"
SUBNET = f"{VNET}/subnets/aks"
GPU_SUBNET = f"{VNET}/subnets/gpu"
BYO = {
    "network": {
        "subnetId": SUBNET,
        "outboundType": "userDefinedRouting",
        "podCidr": "192.168.0.0/16",
        "serviceCidr": "10.1.0.0/16",
        "dnsServiceIp": "10.1.0.10",
    },
    "apiServer": {"authorizedIpRanges": ["203.0.113.0/24", "198.51.100.16/28"]},
}


def byo_config(api_server: dict[str, Any] | None = None) -> dict[str, Any]:
    config = stack_file_config("dev")
    cluster = {**config["kueue-aks:cluster"], **BYO}
    if api_server is not None:
        cluster["apiServer"] = api_server
    pools = [dict(p) for p in config["kueue-aks:nodePools"]]
    pools[1]["subnetId"] = GPU_SUBNET  # the GPU pool in a subnet of its own
    return {**config, "kueue-aks:cluster": cluster, "kueue-aks:nodePools": pools}


# A team's data: research reads a storage account in another subscription than the stack's
# (testbed/harness.py SUBSCRIPTION) and a key vault's secrets; a role by name and one by its
# definition ID (a full ID), with members who may read the ServiceAccount; platform: no identity.
READER, SECRETS_USER = BUILT_IN_ROLES["Storage Blob Data Reader"], BUILT_IN_ROLES["Key Vault Secrets User"]
DATA_SUBSCRIPTION = "11111111-2222-4333-8444-555555555555"
ACCOUNT = (
    f"/subscriptions/{DATA_SUBSCRIPTION}/resourceGroups/data/providers/Microsoft.Storage/storageAccounts/researchdata"
)
VAULT = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/secrets/providers/Microsoft.KeyVault/vaults/research-kv"
MEMBERS = ["0d3c9a51-7a6e-4c43-9bd4-3a0f1c0e5a11"]
IDENTITIES = {
    "research": {
        "roles": [
            {"role": "Storage Blob Data Reader", "scope": ACCOUNT},
            {"role": f"/providers/Microsoft.Authorization/roleDefinitions/{SECRETS_USER.upper()}", "scope": VAULT},
        ]
    }
}


def with_identities(
    config: dict[str, Any], identities: dict[str, Any] | None = None, *, members: bool = True
) -> dict[str, Any]:
    """A copy of a stack config map whose teams get these identities (default IDENTITIES), and with
    `members` research a member group."""
    given = IDENTITIES if identities is None else identities
    changed = copy.deepcopy(config)
    for team in changed["kueue-aks:teams"]:
        if team["name"] in given:
            team["identity"] = given[team["name"]]
        if team["name"] == "research" and members:
            team["members"] = MEMBERS
    return changed


# --- the e2e tier's stacks --------------------------------------------------------------------

PREFLIGHT_CLAMPED = "quota-clamp"
_GENERATED: dict[str, dict[str, Any]] = {
    "spot-gpu": {
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 3},
            {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2},
            {"name": "a100spot", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2, "spot": True},
            {
                "name": "packed",
                "vmSize": "Standard_D8s_v5",
                "minCount": 0,
                "maxCount": 2,
                "topology": True,
                "provisioningRequest": True,
            },
        ],
        "kueue-aks:teams": [{"name": "vision", "share": 50}, {"name": "speech", "share": 50}],
    },
    "multi-gpu": {
        "kueue-aks:cluster": {"zones": ["1", "2", "3"]},
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_F16s_v2", "minCount": 0, "maxCount": 3},
            {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 2},
            {"name": "a100", "vmSize": "Standard_NC48ads_A100_v4", "minCount": 0, "maxCount": 2},
            {
                "name": "h100",
                "vmSize": "Standard_NC40ads_H100_v5",
                "minCount": 2,
                "maxCount": 2,
                "topology": True,
                "taints": ["sku=h100:NoSchedule"],
                "labels": {"example.com/gpu": "h100"},
            },
        ],
        "kueue-aks:teams": [{"name": "llm", "share": 70}, {"name": "infra", "share": 30}],
    },
    # A T4 pool of maxCount 3 in a subscription whose T4 family quota (8 vCPUs, the recorded answers
    # in testbed/fixtures/azure/) holds 2 of its nodes: the preflight's clamp sizes Kueue's quotas.
    PREFLIGHT_CLAMPED: {
        "kueue-aks:nodePools": [{"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 3}],
        "kueue-aks:teams": [{"name": "ml", "share": 50}, {"name": "ops", "share": 50}],
        "kueue-aks:preflight": {"quotaPolicy": "clamp"},
    },
    "team-subsets": {
        "kueue-aks:nodePools": [
            {"name": "general", "vmSize": "Standard_D4s_v5", "minCount": 0, "maxCount": 4},
            {"name": "memory", "vmSize": "Standard_E8s_v5", "minCount": 0, "maxCount": 2},
            {"name": "gpu", "vmSize": "Standard_NC8as_T4_v3", "minCount": 0, "maxCount": 2},
            {"name": "packed", "vmSize": "Standard_D4s_v5", "minCount": 2, "maxCount": 2, "topology": True},
        ],
        "kueue-aks:teams": [
            # A borrowing limit (twice its quota), shown in test_sharing.py.
            {"name": "web", "share": 25, "pools": ["general"], "borrowing": 2},
            # An Azure identity for its data (test_identity.py): its ServiceAccount and who may use it.
            {
                "name": "data",
                "share": 25,
                "pools": ["general", "memory", "packed"],
                "identity": {
                    "roles": [
                        {
                            "role": "Storage Blob Data Reader",
                            "scope": "/subscriptions/00000000-0000-0000-0000-00000000000a/"
                            "resourceGroups/data/providers/Microsoft.Storage/storageAccounts/teamdata",
                        }
                    ]
                },
            },
            {"name": "ml", "share": 30, "pools": ["gpu"]},
            {"name": "ops", "share": 10, "pools": ["memory", "gpu"]},
            {"name": "hpc", "share": 10, "pools": ["packed"]},
        ],
    },
}

STACKS = ("dev", "design", *_GENERATED)
# Stacks whose job operators the tier installs and runs (testbed/operators.py): the dev stack,
# whose samples are the promise, and one with several GPU pools.
OPERATOR_STACKS = ("dev", "multi-gpu")
# The dev stack with governance off: shows the bypass the governance tests guard against.
UNGOVERNED = "dev-ungoverned"
# The dev stack as committed, which the real Pulumi engine brings up (test_engine*.py), in
# kubeconfig mode, every chart from the tier's loopback mirror (mirror.py): the tier gives it only
# the platform (nodes, the autoscaler, the ServiceMonitor CRD); the program does the rest.
ENGINE = "engine"


# The published charts as files (../shared), installed through the program's own chart source
# code path (components/k8s/charts.py), as a stack whose registry is a local file would.
KUEUE_CHART_FILE = SHARED / "kueue" / f"v{DEFAULT_VERSION}" / "chart" / f"kueue-{DEFAULT_VERSION}.tgz"
DEVICE_PLUGIN_CHART_FILE = (
    SHARED
    / "nvidia-device-plugin"
    / f"v{DEVICE_PLUGIN_VERSION}"
    / "chart"
    / f"nvidia-device-plugin-{DEVICE_PLUGIN_VERSION}.tgz"
)
# A stack that pulls its images from a mirror (the images need not exist: kwok runs no container).
MIRROR = "mirror.example.com"
MIRRORED = "spot-gpu"


# The MultiKueue example (examples/multikueue/): a manager and two workers, up at the same time
# (testbed/multikueue.py). The manager's timings are set short here, as Kueue's own integration
# tests do (3 s there): a lost worker's jobs move after WORKER_LOST_TIMEOUT, and the manager's
# garbage collector runs every GC_INTERVAL, instead of 15 min and 1 min.
MULTIKUEUE_EXAMPLES = ROOT / "examples" / "multikueue"
MULTIKUEUE_MANAGER = "batch-manager"
MULTIKUEUE_WEST, MULTIKUEUE_SWEDEN = "batch-westus3", "batch-swedencentral"
MULTIKUEUE_WORKERS = (MULTIKUEUE_WEST, MULTIKUEUE_SWEDEN)
WORKER_LOST_TIMEOUT_SECONDS = 20
GC_INTERVAL_SECONDS = 5


def multikueue_example(stack: str) -> dict[str, Any]:
    """The `config:` map of a stack of the MultiKueue example, as committed."""
    return dict(yaml.safe_load((MULTIKUEUE_EXAMPLES / f"Pulumi.{stack}.yaml").read_text())["config"])


def workers_of(manager: StackConfig, facts: Mapping[str, Mapping[str, Any] | None]) -> list[Worker]:
    """The manager's workers, each with the facts its stack exported."""
    return [Worker(w.name, w.stack, facts[w.name]) for w in manager.multi_kueue.workers]


def client_id(team: str) -> str:
    """The client ID the tier gives a team identity's ServiceAccount, made up as Azure would give
    one at `pulumi up` (there is no Azure here)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://kueue-aks.example/e2e/identities/{team}"))


def member_group(team: str) -> str:
    """The group object ID the tier gives a team's members: made up, stable, an Entra ID group's
    shape (tests/e2e/access/test_access.py acts as a user of that group)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://kueue-aks.example/e2e/teams/{team}"))


def with_members(config: dict[str, Any]) -> dict[str, Any]:
    """Every team with one member group, as a platform admin lists them (kueue-aks:teams[].members);
    a stack file's own members are kept."""
    teams = [{**t, "members": t.get("members") or [member_group(t["name"])]} for t in config["kueue-aks:teams"]]
    return {**config, "kueue-aks:teams": teams}


def config_map(stack: str) -> dict[str, Any]:
    """The stack's `config:` map, with the charts installed from ../shared's files and every team
    with a member group."""
    config = with_members(_stack_config_map(stack))
    kueue = dict(config.get("kueue-aks:kueue") or {})
    kueue["chart"] = str(KUEUE_CHART_FILE)
    plugin: dict[str, Any] = {"chart": str(DEVICE_PLUGIN_CHART_FILE)}
    if stack == MIRRORED:
        kueue["imageRepository"] = f"{MIRROR}/kueue/kueue"
        plugin["imageRepository"] = f"{MIRROR}/nvidia/k8s-device-plugin"
    return {**config, "kueue-aks:kueue": kueue, "kueue-aks:devicePlugin": plugin}


def _stack_config_map(stack: str) -> dict[str, Any]:
    """The `config:` map of a stack file, as the program and the plan command read it."""
    if stack == "dev":
        return dict(stack_file_config("dev"))
    if stack == UNGOVERNED:
        return {**_stack_config_map("dev"), "kueue-aks:governance": {"enforce": False}}
    if stack == ENGINE:
        return _stack_config_map("dev")  # as committed; engine_config() makes it a kubeconfig stack
    if stack in (MULTIKUEUE_MANAGER, *MULTIKUEUE_WORKERS):
        config = multikueue_example(stack)
        if stack == MULTIKUEUE_MANAGER:
            config["kueue-aks:multiKueue"] = {
                **config["kueue-aks:multiKueue"],
                "workerLostTimeout": f"{WORKER_LOST_TIMEOUT_SECONDS}s",
                "gcInterval": f"{GC_INTERVAL_SECONDS}s",
            }
        return config
    if stack == "design":
        return design_example()
    return {
        "azure-native:location": "eastus2",
        "kueue-aks:cluster": {"systemPool": {"vmSize": "Standard_D4s_v5", "count": 1}},
        **_GENERATED[stack],
    }


def load(stack: str) -> StackConfig:
    """The stack's config as the program builds from it: parsed, then for PREFLIGHT_CLAMPED
    through the program's preflight, reading a loopback Azure with the recorded answers."""
    raw, location = raw_from_stack_file({"config": config_map(stack)})
    config = parse_config(raw, stack=stack, location=location)
    if stack != PREFLIGHT_CLAMPED:
        return config
    with tempfile.TemporaryDirectory(prefix="kueue-aks-azure-") as folder:
        azure = azure_fake.FakeArm(*make_tls(Path(folder))).recorded()
        try:
            with azure.serving():
                built, _ = decide(
                    config, read(config, ArmClient(ProviderToken("e2e"), azure_fake.SUBSCRIPTION), f"kueue-aks/{stack}")
                )
        finally:
            azure.stop()
    return built


def engine_config(shares: dict[str, int] | None = None) -> dict[str, Any]:
    """The engine stack's config as a platform admin writes it for a cluster given by kubeconfig:
    no Azure keys, the charts from the packaged files (as from a registry mirror)."""
    config = {k: v for k, v in config_map(ENGINE).items() if k not in ("kueue-aks:cluster", "azure-native:location")}
    # Its monitoring is Azure's managed Prometheus, which a cluster by kubeconfig cannot have; such a
    # cluster takes the in-cluster part, a Prometheus Operator ServiceMonitor (docs/monitoring.md),
    # whose CRD the tier installs.
    config["kueue-aks:monitoring"] = {**config["kueue-aks:monitoring"], "serviceMonitor": True}
    if shares:
        config["kueue-aks:teams"] = [
            {**t, "share": shares.get(t["name"], t["share"])} for t in config["kueue-aks:teams"]
        ]
    return config


def engine_jobs_config() -> dict[str, Any]:
    """The engine stack's config with Jobs only and no monitoring: for the scenarios about Kueue's
    own install (an interrupted `up`, an upgrade, AKS's extension, MultiKueue), which no operator
    changes, so their stacks come up and go in seconds."""
    config = engine_config()
    return {
        **config,
        "kueue-aks:kueue": {**(config.get("kueue-aks:kueue") or {}), "frameworks": ["batch/job"]},
        "kueue-aks:monitoring": {"enabled": False},
    }


# --- the benchmark's generated stacks -------------------------------------------------------

# Sizes cycled through for generated pools; every name must be in the capacity catalog.
CPU_SIZES = (
    "Standard_D16s_v5",
    "Standard_E16s_v5",
    "Standard_F16s_v2",
    "Standard_D32as_v5",
    "Standard_D8ds_v5",
    "Standard_E32s_v5",
    "Standard_F32s_v2",
    "Standard_D64s_v5",
)
GPU_SIZES = (
    "Standard_NC24ads_A100_v4",
    "Standard_NC4as_T4_v3",
    "Standard_ND96isr_H100_v5",
    "Standard_NV36ads_A10_v5",
)

# (teams, pools) of the generated stacks the benchmark measures.
GRID: tuple[tuple[int, int], ...] = ((10, 4), (50, 4), (200, 4), (10, 12), (50, 12), (200, 12))


def stack_name(teams: int, pools: int) -> str:
    return f"bench-t{teams}-p{pools}"


def team_share(teams: int) -> Decimal:
    """100/teams rounded down to 2 decimals, so the shares never add up to more than 100."""
    if teams < 1:
        raise ValueError("at least one team")
    return (Decimal(100) / teams).quantize(Decimal("0.01"), rounding=ROUND_FLOOR)


def _number(share: Decimal) -> int | float:
    """The share as YAML writes a number: an int when whole, else a float with 2 decimals."""
    return int(share) if share == share.to_integral_value() else float(share)


def pool_specs(pools: int) -> list[dict[str, Any]]:
    """`pools` user pools: a quarter GPU (at least one), the rest CPU; names cpu00.., gpu00.."""
    if pools < 2:
        raise ValueError("at least two pools (one CPU, one GPU)")
    gpu_count = max(1, pools // 4)
    cpu_count = pools - gpu_count
    specs: list[dict[str, Any]] = []
    for i in range(cpu_count):
        spec: dict[str, Any] = {
            "name": f"cpu{i:02d}",
            "vmSize": CPU_SIZES[i % len(CPU_SIZES)],
            "minCount": 0,
            "maxCount": 10,
        }
        if i == 0:  # topology-aware pools are fixed-size (TAS uses only nodes that exist)
            spec.update(minCount=2, maxCount=2, topology=True)
        specs.append(spec)
    for i in range(gpu_count):
        spec = {"name": f"gpu{i:02d}", "vmSize": GPU_SIZES[i % len(GPU_SIZES)], "minCount": 0, "maxCount": 4}
        if i == 1:
            spec["spot"] = True
        specs.append(spec)
    return specs


def generated_config(teams: int, pools: int) -> dict[str, Any]:
    """The `config:` map (full keys) of a stack with `teams` teams t000.. across `pools` pools."""
    share = _number(team_share(teams))
    return {
        "azure-native:location": "eastus2",
        "kueue-aks:cluster": {"tier": "Standard", "systemPool": {"vmSize": "Standard_D4s_v5", "count": 2}},
        "kueue-aks:nodePools": pool_specs(pools),
        "kueue-aks:teams": [{"name": f"t{i:03d}", "share": share} for i in range(teams)],
    }


def write_stack(root: Path, name: str, config: dict[str, Any]) -> Path:
    """Write `config` as root/Pulumi.<name>.yaml, as the plan command reads it."""
    path = root / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def all_sizes_in_catalog() -> bool:
    return all(size in CATALOG for size in (*CPU_SIZES, *GPU_SIZES))


# --- the shapes the unit tier runs the program on ---------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A stack as a test runs it: its config map, stack name, and (a MultiKueue manager) the
    workers whose outputs its StackReferences read."""

    config: Callable[[], dict[str, Any]]
    stack: str = "dev"
    workers: tuple[str, ...] = ()
    mode: str = "create"


def _e2e(stack: str) -> Shape:
    return Shape(lambda: config_map(stack), stack)


def _existing(base: Callable[[], dict[str, Any]], **keys: Any) -> Shape:
    return Shape(lambda: with_cluster(base(), {"existing": EXISTING}, **keys), mode="existing")


SHAPES: dict[str, Shape] = {
    "dev": Shape(stack_file_config),
    **{f"e2e-{stack}": _e2e(stack) for stack in (*STACKS, UNGOVERNED) if stack != "dev"},  # dev: above
    **{stack: Shape(lambda stack=stack: config_map(stack), stack) for stack in MULTIKUEUE_WORKERS},
    MULTIKUEUE_MANAGER: Shape(lambda: config_map(MULTIKUEUE_MANAGER), MULTIKUEUE_MANAGER, MULTIKUEUE_WORKERS),
    # AKS's Kueue extension, with monitoring on an existing workspace and Grafana.
    "aks-extension": Shape(
        lambda: {
            **extension_stack(),
            "kueue-aks:monitoring": {"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID, "grafanaId": GRAFANA_ID},
        }
    ),
    "existing": _existing(stack_file_config, monitoring={"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID}),
    # In a region the extension is offered in (extension_stack's); monitoring off.
    "existing-aks-extension": _existing(
        extension_stack, kueue={"install": "aksExtension"}, monitoring={"enabled": False}
    ),
    # Team identities for their data (a role by name, one by ID, in two subscriptions), on a new
    # cluster and on an existing one.
    "identities": Shape(lambda: with_identities(stack_file_config())),
    "existing-identities": _existing(
        lambda: with_identities(stack_file_config(), members=False), monitoring={"enabled": False}
    ),
    # In a subnet of the company's VNet (the GPU pool in its own), egress by its routes, the API
    # server open to two ranges only.
    "byo-network": Shape(byo_config),
    # The e2e tier's engine stack, a cluster by kubeconfig.
    "kubeconfig": Shape(
        lambda: {**engine_config(), "kueue-aks:cluster": {"kubeconfig": KUBECONFIG}}, ENGINE, mode="kubeconfig"
    ),
}


@dataclass
class StackRun:
    run: ProgramRun
    mocks: ProgramMocks
    preflight: list[tuple[str, Any]]  # each read of the loopback Azure: (path with query, its answer)
    parts: list[tuple[assembly.Part, ...]]  # what each call of components.assembly.stack_parts returned

    def azure(self) -> list[Registration]:
        from testbed.arm_specs import RESOURCES  # jsonschema: only for the tests that read Azure's specs

        return [r for r in self.run.registrations if r.type in RESOURCES]


@cache
def stack_run(name: str) -> StackRun:
    """The shape run once a session (a manager's workers first: their outputs are its input)."""
    from components import assembly  # the program and Pulumi: only for the tests that run it
    from testbed.harness import ProgramMocks, generous_azure, run_program

    shape = SHAPES[name]
    config = shape.config()
    mocks = ProgramMocks(stacks={f"organization/kueue-aks/{w}": dict(stack_run(w).run.exports) for w in shape.workers})
    azure = generous_azure(config, shape.stack)
    start = len(azure.requests)
    parts: list[tuple[assembly.Part, ...]] = []

    def recorded(*args: Any, **kwargs: Any) -> tuple[assembly.Part, ...]:
        parts.append(stack_parts(*args, **kwargs))
        return parts[-1]

    stack_parts = assembly.stack_parts
    with mock.patch.object(assembly, "stack_parts", recorded):
        run = run_program(config, stack=shape.stack, mocks=mocks, azure=azure)
    return StackRun(run, mocks, [(path, azure.answer(path)[2]) for path, _ in azure.requests[start:]], parts)
