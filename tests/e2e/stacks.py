"""The stacks the e2e tier runs: the dev stack, the DESIGN.md example and generated shapes.

The generated ones cover what the two real stacks do not: a spot GPU pool (AKS's spot taint and
label) beside an autoscaled topology-aware pool (both with ProvisioningRequest), several GPU sizes side by side (flavor order between GPU pools) with a topology-aware
GPU pool, several teams that each use a subset of the pools (quotas only where a team may
go), one of them only a topology-aware pool (its `default` queue is `<team>-topology`) and one with
an Azure identity for its data, and a GPU pool whose quotas the preflight clamped to the
subscription's vCPU quota.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml

from components.config.parse import parse_config, raw_from_stack_file
from components.config.stack import StackConfig
from components.facts.device_plugin import DEVICE_PLUGIN_VERSION
from components.facts.kueue_versions import DEFAULT_VERSION
from components.preflight.arm import ArmClient, ProviderToken
from components.preflight.check import decide, read
from tests.azure_fake import SUBSCRIPTION, FakeArm
from tests.harness import ROOT
from tests.paths import SHARED
from tests.loopback_tls import make_tls

PREFLIGHT_CLAMPED = "quota-clamp"
_GENERATED: dict[str, dict[str, Any]] = {
    "spot-gpu": {
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 3},
            {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2},
            {"name": "a100spot", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2, "spot": True},
            {"name": "packed", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 2, "topology": True,
             "provisioningRequest": True},
        ],
        "kueue-aks:teams": [{"name": "vision", "share": 50}, {"name": "speech", "share": 50}],
    },
    "multi-gpu": {
        "kueue-aks:cluster": {"zones": ["1", "2", "3"]},
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_F16s_v2", "minCount": 0, "maxCount": 3},
            {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 2},
            {"name": "a100", "vmSize": "Standard_NC48ads_A100_v4", "minCount": 0, "maxCount": 2},
            {"name": "h100", "vmSize": "Standard_NC40ads_H100_v5", "minCount": 2, "maxCount": 2, "topology": True,
             "taints": ["sku=h100:NoSchedule"], "labels": {"example.com/gpu": "h100"}},
        ],
        "kueue-aks:teams": [{"name": "llm", "share": 70}, {"name": "infra", "share": 30}],
    },
    # A T4 pool of maxCount 3 in a subscription whose T4 family quota (8 vCPUs, the recorded answers
    # in tests/fixtures/azure/) holds 2 of its nodes: the preflight's clamp sizes Kueue's quotas.
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
            {"name": "data", "share": 25, "pools": ["general", "memory", "packed"], "identity": {"roles": [
                {"role": "Storage Blob Data Reader", "scope": "/subscriptions/00000000-0000-0000-0000-00000000000a/"
                 "resourceGroups/data/providers/Microsoft.Storage/storageAccounts/teamdata"}]}},
            {"name": "ml", "share": 30, "pools": ["gpu"]},
            {"name": "ops", "share": 10, "pools": ["memory", "gpu"]},
            {"name": "hpc", "share": 10, "pools": ["packed"]},
        ],
    },
}

STACKS = ("dev", "design", *_GENERATED)
# Stacks whose job operators the tier installs and runs (tests/e2e/operators.py): the dev stack,
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
DEVICE_PLUGIN_CHART_FILE = (SHARED / "nvidia-device-plugin" / f"v{DEVICE_PLUGIN_VERSION}" / "chart"
                            / f"nvidia-device-plugin-{DEVICE_PLUGIN_VERSION}.tgz")
# A stack that pulls its images from a mirror (the images need not exist: kwok runs no container).
MIRROR = "mirror.example.com"
MIRRORED = "spot-gpu"


# The MultiKueue example (examples/multikueue/): a manager and two workers, up at the same time
# (tests/e2e/multikueue.py). The manager's timings are set short here, as Kueue's own integration
# tests do (3 s there): a lost worker's jobs move after WORKER_LOST_TIMEOUT, and the manager's
# garbage collector runs every GC_INTERVAL, instead of 15 min and 1 min.
MULTIKUEUE_EXAMPLES = ROOT / "examples" / "multikueue"
MULTIKUEUE_MANAGER = "batch-manager"
MULTIKUEUE_WORKERS = ("batch-westus3", "batch-swedencentral")
WORKER_LOST_TIMEOUT_SECONDS = 20
GC_INTERVAL_SECONDS = 5


def client_id(team: str) -> str:
    """The client ID the tier gives a team identity's ServiceAccount, made up as Azure would give
    one at `pulumi up` (there is no Azure here)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://kueue-aks.example/e2e/identities/{team}"))


def member_group(team: str) -> str:
    """The group object ID the tier gives a team's members: made up, stable, an Entra ID group's
    shape (tests/e2e/test_access.py acts as a user of that group)."""
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
        return dict(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"])
    if stack == UNGOVERNED:
        return {**_stack_config_map("dev"), "kueue-aks:governance": {"enforce": False}}
    if stack == ENGINE:
        return _stack_config_map("dev")  # as committed; engine_config() makes it a kubeconfig stack
    if stack in (MULTIKUEUE_MANAGER, *MULTIKUEUE_WORKERS):
        config = dict(yaml.safe_load((MULTIKUEUE_EXAMPLES / f"Pulumi.{stack}.yaml").read_text())["config"])
        if stack == MULTIKUEUE_MANAGER:
            config["kueue-aks:multiKueue"] = {**config["kueue-aks:multiKueue"],
                                              "workerLostTimeout": f"{WORKER_LOST_TIMEOUT_SECONDS}s",
                                              "gcInterval": f"{GC_INTERVAL_SECONDS}s"}
        return config
    if stack == "design":
        return dict(yaml.safe_load((ROOT / "tests" / "fixtures" / "design-example.yaml").read_text())["config"])
    return {"azure-native:location": "eastus2",
            "kueue-aks:cluster": {"systemPool": {"vmSize": "Standard_D4s_v5", "count": 1}},
            **_GENERATED[stack]}


def load(stack: str) -> StackConfig:
    """The stack's config as the program builds from it: parsed, then for PREFLIGHT_CLAMPED
    through the program's preflight, reading a loopback Azure with the recorded answers."""
    raw, location = raw_from_stack_file({"config": config_map(stack)})
    config = parse_config(raw, stack=stack, location=location)
    if stack != PREFLIGHT_CLAMPED:
        return config
    with tempfile.TemporaryDirectory(prefix="kueue-aks-azure-") as folder:
        azure = FakeArm(*make_tls(Path(folder))).recorded()
        try:
            with azure.serving():
                built, _ = decide(config, read(config, ArmClient(ProviderToken("e2e"), SUBSCRIPTION), f"kueue-aks/{stack}"))
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
        config["kueue-aks:teams"] = [{**t, "share": shares.get(t["name"], t["share"])} for t in config["kueue-aks:teams"]]
    return config


def engine_jobs_config() -> dict[str, Any]:
    """The engine stack's config with Jobs only and no monitoring: for the scenarios about Kueue's
    own install (an interrupted `up`, an upgrade, AKS's extension, MultiKueue), which no operator
    changes, so their stacks come up and go in seconds."""
    config = engine_config()
    return {**config, "kueue-aks:kueue": {**(config.get("kueue-aks:kueue") or {}), "frameworks": ["batch/job"]},
            "kueue-aks:monitoring": {"enabled": False}}
