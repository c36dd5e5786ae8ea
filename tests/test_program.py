"""The whole program under Pulumi mocks: what AksCluster registers, with which inputs and options."""

from __future__ import annotations

import asyncio
import copy
import gc
from decimal import Decimal
from typing import Any

import pulumi
import pytest
import yaml

from components.governance.policies import pool_guard
from components.kueue.objects import quota_table, zero_gpu_quotas
from components.multikueue.worker import FACTS_OUTPUT, KUBECONFIG_OUTPUT
from testbed.harness import ProgramRun, run_program
from testbed.stacks import MULTIKUEUE_MANAGER, MULTIKUEUE_WEST, SHAPES, stack_run
from testbed.stacks import design_example, load_stack

AKS = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
K8S_PROVIDER = "pulumi:providers:kubernetes"
POOL_GUARD_COMPONENT = "kueue-aks:governance:PoolGuard"
ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
ADMISSION_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
# Governance is on by default: every user pool carries this taint, after its other taints.
QUEUED_TAINT = "kueue-aks.io/queued=true:NoSchedule"


@pytest.fixture(scope="module")
def dev_run() -> ProgramRun:
    config = yaml.safe_load(open("Pulumi.dev.yaml"))["config"]
    return run_program(config)


def test_cluster_has_only_the_system_pool_inline(dev_run: ProgramRun) -> None:
    aks = dev_run.one(AKS).inputs
    assert [p["name"] for p in aks["agentPoolProfiles"]] == ["system"]
    system = aks["agentPoolProfiles"][0]
    assert (system["mode"], system["vmSize"], system["count"]) == ("System", "Standard_D4s_v5", 1)
    assert aks["resourceName"] == "kueue-dev"
    assert aks["location"] == "eastus2"


def test_cluster_identity_network_and_upgrades(dev_run: ProgramRun) -> None:
    aks = dev_run.one(AKS).inputs
    assert aks["identity"] == {"type": "SystemAssigned"}
    assert aks["oidcIssuerProfile"] == {"enabled": True}
    assert aks["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert aks["aadProfile"] == {"managed": True, "enableAzureRBAC": True, "adminGroupObjectIDs": []}
    assert aks["disableLocalAccounts"] is False
    net = aks["networkProfile"]
    assert (net["networkPlugin"], net["networkPluginMode"], net["networkDataplane"], net["networkPolicy"]) == (
        "azure",
        "overlay",
        "cilium",
        "cilium",
    )
    assert aks["autoUpgradeProfile"]["upgradeChannel"] == "patch"
    assert aks["sku"] == {"name": "Base", "tier": "Free"}
    assert "kubernetesVersion" not in aks  # AKS's default version unless configured


def test_user_pools_are_autoscaled_agent_pools(dev_run: ProgramRun) -> None:
    pools = {r.inputs["agentPoolName"]: r for r in dev_run.of_type(POOL)}
    assert set(pools) == {"cpu", "gpu", "tas"}
    for name in ("cpu", "gpu", "tas"):  # tas too: topology-aware, autoscaled with ProvisioningRequest
        reg = pools[name]
        i = reg.inputs
        assert (i["mode"], i["enableAutoScaling"], i["count"], i["maxPods"]) == ("User", True, i["minCount"], 110)
        assert reg.ignore_changes == ["count"]
        assert i["resourceName"] == "kueue-dev"
    cpu = pools["cpu"].inputs
    assert (cpu["minCount"], cpu["maxCount"], cpu["nodeTaints"]) == (0, 4, [QUEUED_TAINT])
    assert "gpuProfile" not in pools["cpu"].inputs
    gpu = pools["gpu"].inputs
    assert (gpu["vmSize"], gpu["minCount"], gpu["maxCount"]) == ("Standard_NC4as_T4_v3", 0, 3)
    assert gpu["nodeTaints"] == [GPU_TAINT, QUEUED_TAINT]
    assert gpu["gpuProfile"] == {"driver": "Install"}
    assert "scaleSetPriority" not in gpu


def test_fixed_size_topology_aware_pool_is_not_autoscaled(dev_config_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map)
    tas_pool = next(p for p in config["kueue-aks:nodePools"] if p["name"] == "tas")
    tas_pool.update(minCount=1, maxCount=1)
    del tas_pool["provisioningRequest"]
    tas = run_program(config).one(POOL, "kueue-tas")
    i = tas.inputs
    assert (i["agentPoolName"], i["mode"], i["vmSize"], i["maxPods"]) == ("tas", "User", "Standard_D8s_v5", 110)
    # Not autoscaled: without ProvisioningRequest TAS places jobs only on nodes that exist.
    assert (i["enableAutoScaling"], i["count"]) == (False, 1)
    assert "minCount" not in i and "maxCount" not in i
    # Nothing scales it, so a changed count is a real change to apply, not drift to ignore.
    assert "count" not in tas.ignore_changes
    assert i["resourceName"] == "kueue-dev" and i["nodeTaints"] == [QUEUED_TAINT]


def test_topology_aware_gpu_pool_keeps_its_size_and_gpu_specifics(dev_config_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map)
    config["kueue-aks:nodePools"] = [
        {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 4},
        {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "minCount": 3, "maxCount": 3, "topology": True},
        {"name": "a100spot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True},
    ]
    pools = {r.inputs["agentPoolName"]: r for r in run_program(config).of_type(POOL)}
    h100 = pools["h100"]
    assert (h100.inputs["enableAutoScaling"], h100.inputs["count"]) == (False, 3)
    assert "minCount" not in h100.inputs and "maxCount" not in h100.inputs and h100.ignore_changes == []
    assert h100.inputs["gpuProfile"] == {"driver": "Install"}
    assert h100.inputs["nodeTaints"] == [GPU_TAINT, QUEUED_TAINT]
    assert pools["a100spot"].inputs["nodeTaints"] == [GPU_TAINT, SPOT_TAINT, QUEUED_TAINT]
    for name, (min_count, max_count) in {"cpu": (0, 4), "a100spot": (0, 2)}.items():  # autoscaled ones keep theirs
        i = pools[name].inputs
        assert (i["enableAutoScaling"], i["minCount"], i["maxCount"], i["count"]) == (
            True,
            min_count,
            max_count,
            min_count,
        )
        assert pools[name].ignore_changes == ["count"]


def test_pools_do_not_depend_on_each_other(dev_run: ProgramRun) -> None:
    pool_urns = {r.urn for r in dev_run.of_type(POOL)}
    for reg in dev_run.of_type(POOL):
        assert not pool_urns & set(reg.dependencies)
        assert dev_run.one(AKS).urn in reg.dependencies


def test_children_are_parented_to_the_component(dev_run: ProgramRun) -> None:
    component = dev_run.one("kueue-aks:cluster:AksCluster")
    children = [r for r in dev_run.registrations if r.parent == component.urn]
    assert {r.type for r in children} >= {"azure-native:resources:ResourceGroup", AKS, POOL, K8S_PROVIDER}


def test_kubeconfig_is_a_secret_and_feeds_the_provider(dev_run: ProgramRun) -> None:
    assert "kubeconfig" in dev_run.secret_exports
    assert "admin-token-not-real" in dev_run.exports["kubeconfig"]
    assert dev_run.invokes.count("azure-native:containerservice:listManagedClusterAdminCredentials") == 1
    provider = dev_run.one(K8S_PROVIDER).inputs
    assert provider["clusterIdentifier"] == "kueue-aks_id"
    assert provider["deleteUnreachable"] == "true"
    # Non-secret outputs stay readable.
    assert dev_run.exports["clusterName"] == "kueue-dev"
    assert "clusterName" not in dev_run.secret_exports


def _with(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed[key] = value
    return changed


def test_entra_only_cluster_uses_an_exec_kubeconfig_for_kubelogin(dev_config_map: dict[str, Any]) -> None:
    config = _with(
        dev_config_map,
        "kueue-aks:cluster",
        {"disableLocalAccounts": True, "adminGroupObjectIds": ["11111111-2222-3333-4444-555555555555"]},
    )
    run = run_program(config)
    assert run.one(AKS).inputs["disableLocalAccounts"] is True
    assert run.one(AKS).inputs["aadProfile"]["adminGroupObjectIDs"] == ["11111111-2222-3333-4444-555555555555"]
    assert run.invokes.count("azure-native:containerservice:listManagedClusterUserCredentials") == 1
    assert "listManagedClusterAdminCredentials" not in " ".join(run.invokes)
    kubeconfig = yaml.safe_load(run.exports["kubeconfig"])
    assert kubeconfig["users"][0]["user"]["exec"]["args"][:3] == ["get-token", "--login", "azurecli"]
    assert "kubeconfig" in run.secret_exports


def test_spot_zonal_pinned_version(dev_config_map: dict[str, Any]) -> None:
    config = _with(
        dev_config_map, "kueue-aks:cluster", {"zones": ["1", "2"], "kubernetesVersion": "1.33", "tier": "Standard"}
    )
    config["kueue-aks:nodePools"] = [
        {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "labels": {"team.example.com/tier": "batch"}},
        {"name": "a100spot", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 4, "spot": True},
    ]
    run = run_program(config)
    aks = run.one(AKS).inputs
    assert aks["kubernetesVersion"] == "1.33" and aks["sku"]["tier"] == "Standard"
    assert aks["agentPoolProfiles"][0]["availabilityZones"] == ["1", "2"]
    pools = {r.inputs["agentPoolName"]: r.inputs for r in run.of_type(POOL)}
    spot = pools["a100spot"]
    assert (spot["scaleSetPriority"], spot["scaleSetEvictionPolicy"], spot["spotMaxPrice"]) == ("Spot", "Delete", -1)
    # Configured (GPU default), then AKS's spot taint, then the governance taint.
    assert spot["nodeTaints"] == [GPU_TAINT, SPOT_TAINT, QUEUED_TAINT]
    assert pools["cpu"]["nodeTaints"] == [QUEUED_TAINT]
    assert spot["availabilityZones"] == ["1", "2"] and spot["orchestratorVersion"] == "1.33"
    assert pools["cpu"]["nodeLabels"] == {"team.example.com/tier": "batch"}


# --- governance -----------------------------------------------------------------------------


def test_governance_registers_the_pool_guard_on_the_cluster(
    dev_run: ProgramRun, dev_config_map: dict[str, Any]
) -> None:
    component = dev_run.one(POOL_GUARD_COMPONENT, "governance")
    # A top-level component, beside Kueue's installation (not inside it: Kueue's release does not wait for it).
    assert not component.custom and component.parent == dev_run.one("kueue-aks:kueue:KueueInstallation").parent
    assert "pulumi:pulumi:Stack" in component.parent
    policy = dev_run.one(ADMISSION_POLICY, "governance-policy")
    binding = dev_run.one(ADMISSION_BINDING, "governance-policy-binding")
    assert policy.parent == binding.parent == component.urn
    assert [r.name for r in dev_run.registrations if r.parent == component.urn] == [
        "governance-policy",
        "governance-policy-binding",
    ]
    # Bound after the policy exists (and unbound before it is deleted).
    assert policy.urn in binding.dependencies and binding.urn not in policy.dependencies
    # Both go to the AKS cluster through its provider, passed down from the component.
    provider = dev_run.one(K8S_PROVIDER)
    assert policy.provider.rsplit("::", 1)[0] == binding.provider.rsplit("::", 1)[0] == provider.urn
    # What is registered is exactly what the pure builder makes for this stack.
    built_policy, built_binding = pool_guard(load_stack(dev_config_map))
    assert (policy.inputs["metadata"], policy.inputs["spec"]) == (built_policy["metadata"], built_policy["spec"])
    assert (binding.inputs["metadata"], binding.inputs["spec"]) == (built_binding["metadata"], built_binding["spec"])
    assert policy.inputs["metadata"]["name"] == "kueue-aks-pool-guard"
    assert binding.inputs["spec"] == {"policyName": "kueue-aks-pool-guard", "validationActions": ["Deny"]}


def test_governance_pool_guard_covers_every_pool_and_the_configured_exemptions(dev_config_map: dict[str, Any]) -> None:
    config = _with(dev_config_map, "kueue-aks:governance", {"exemptNamespaces": ["monitoring"]})
    spec = run_program(config).one(ADMISSION_POLICY, "governance-policy").inputs["spec"]
    (selector,) = spec["matchConstraints"]["namespaceSelector"]["matchExpressions"]
    assert selector == {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", "nvidia-device-plugin", "monitoring"],
    }
    selects = next(v["expression"] for v in spec["variables"] if v["name"] == "selects")
    assert "['cpu', 'gpu', 'tas']" in selects


def test_without_governance_nothing_of_it_is_registered(dev_config_map: dict[str, Any]) -> None:
    run = run_program(_with(dev_config_map, "kueue-aks:governance", {"enforce": False}))
    assert run.of_type(POOL_GUARD_COMPONENT) == []
    # Only Kueue's aggregated-role guard, the priority-class guard and the RayService guard (not
    # governance's) are left.
    assert sorted(r.name for r in run.of_type(ADMISSION_POLICY)) == [
        "kueue-role-guard",
        "operators-rayservice-guard",
        "queues-priority-guard",
    ]
    assert sorted(r.name for r in run.of_type(ADMISSION_BINDING)) == [
        "kueue-role-guard-binding",
        "operators-rayservice-guard-binding",
        "queues-priority-guard-binding",
    ]
    taints = {r.inputs["agentPoolName"]: r.inputs["nodeTaints"] for r in run.of_type(POOL)}
    assert taints == {"cpu": [], "gpu": [GPU_TAINT], "tas": []}
    # Nor does anything tolerate the taint, and Kueue gets no pod integration.
    for flavor in run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"):
        assert "kueue-aks.io/queued" not in str(flavor.inputs), flavor.name
    plugin = run.one("kubernetes:helm.sh/v3:Release", "gpu-release").inputs["values"]
    assert plugin["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    manager = yaml.safe_load(
        run.one("kubernetes:helm.sh/v3:Release", "kueue-release").inputs["values"]["managerConfig"][
            "controllerManagerConfigYaml"
        ]
    )
    assert "pod" not in manager["integrations"]["frameworks"]


def test_with_governance_flavors_and_the_device_plugin_tolerate_the_queued_taint(dev_run: ProgramRun) -> None:
    # The positive side of the test above, on the dev stack (governance on by default).
    queued = {"key": "kueue-aks.io/queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    flavors = dev_run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert len(flavors) == 3
    for flavor in flavors:
        assert flavor.inputs["spec"]["tolerations"][-1] == queued, flavor.name
    plugin = dev_run.one("kubernetes:helm.sh/v3:Release", "gpu-release").inputs["values"]
    assert queued in plugin["tolerations"]
    manager = yaml.safe_load(
        dev_run.one("kubernetes:helm.sh/v3:Release", "kueue-release").inputs["values"]["managerConfig"][
            "controllerManagerConfigYaml"
        ]
    )
    assert manager["integrations"]["frameworks"][-1] == "pod"


def test_design_contract_example_runs_under_mocks() -> None:
    run = run_program(design_example())
    assert {r.inputs["agentPoolName"] for r in run.of_type(POOL)} == {"cpu", "gpu"}


def test_preview_runs_the_same_program(dev_config_map: dict[str, Any]) -> None:
    run = run_program(dev_config_map, preview=True)
    assert len(run.of_type(POOL)) == 3
    tas = run.one(POOL, "kueue-tas")
    assert (tas.inputs["enableAutoScaling"], tas.inputs["count"], tas.ignore_changes) == (True, 0, ["count"])


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "kueue-aks:nodePools",
            [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 0}],
            "kueue-aks:nodePools[0].maxCount",
        ),
        ("kueue-aks:teams", [{"name": "a", "share": 120}], "kueue-aks:teams[0].share"),
        ("kueue-aks:nodepools", [], "kueue-aks:nodepools: unknown key"),
    ],
)
def test_bad_config_stops_before_any_resource(
    dev_config_map: dict[str, Any], key: str, value: Any, expected: str
) -> None:
    config = _with(dev_config_map, key, value)
    with pytest.raises(pulumi.RunError) as err:
        run_program(config)
    assert expected in str(err.value)
    from pulumi.runtime.settings import SETTINGS  # the mock monitor of that run

    assert not [r for r in SETTINGS.monitor.registrations]


def test_zero_gpu_quotas_name_the_flavor_the_teams_and_the_share_for_one_gpu() -> None:
    config = load_stack(
        {
            "azure-native:location": "eastus2",
            "kueue-aks:nodePools": [
                {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
                {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 3},
                {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4},
            ],
            "kueue-aks:teams": [
                {"name": "big", "share": 70},
                {"name": "small", "share": 20},
                {"name": "cpuonly", "share": 10, "pools": ["cpu"]},
            ],
        }
    )
    found = zero_gpu_quotas(config, quota_table(config))
    # 20 % of 3 T4s and of 4 A100s rounds down to 0; the CPU-only team uses no GPU flavor.
    assert [(z.flavor, z.gpus, z.teams, z.share_for_one) for z in found] == [
        ("t4", 3, (("small", Decimal(20)),), Decimal("33.34")),
        ("a100", 4, (("small", Decimal(20)),), Decimal(25)),
    ]
    assert str(found[0]).startswith(
        "team 'small' (20%) gets a nominal quota of 0 GPUs on flavor 't4' (its share of 3 GPUs, rounded down)"
    )
    assert str(found[0]).endswith("a share of at least 33.34% gives a team 1 GPU")


def test_the_program_warns_of_a_team_with_0_gpus(
    dev_config_map: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One T4 node: 60 % and 40 % of 1 GPU are both 0.
    pools = [{**p, "maxCount": 1} if p["name"] == "gpu" else p for p in dev_config_map["kueue-aks:nodePools"]]
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))
    run = run_program(_with(dev_config_map, "kueue-aks:nodePools", pools))
    assert run.of_type(POOL)  # a warning, not an error: the stack is built
    assert [w for w in warnings if "nominal quota of 0 GPUs" in w] == [
        "teams 'research' (60%), 'platform' (40%) get a nominal quota of 0 GPUs on flavor 'gpu' (their share of 1 GPU, "
        "rounded down): their GPU jobs run there only on GPUs borrowed while other teams leave them idle, and are "
        "preempted when those teams reclaim them; a share of at least 100% gives a team 1 GPU"
    ]


# --- a component per part ---------------------------------------------------------------------

# What every stack exports, what a cluster in Azure adds, and what each part's component adds (its Azure
# resources' only in Azure).
EXPORTS = {"nodePools", "kueueNamespace", "kueueVersion", "operatorVersions", "localQueues", "quotaTable", "teams"}
AZURE_EXPORTS = {"clusterName", "resourceGroupName", "oidcIssuerUrl", "kubeconfig"}
MONITORING_EXPORTS = {"azureMonitorWorkspaceId", "prometheusQueryEndpoint", "grafanaName", "grafanaUrl"}
PART_EXPORTS = {
    "kueue-aks:monitoring:Monitoring": MONITORING_EXPORTS,
    "kueue-aks:access:TeamIdentities": {"teamIdentities"},
    "kueue-aks:multikueue:MultiKueueWorker": {FACTS_OUTPUT, KUBECONFIG_OUTPUT},
    "kueue-aks:multikueue:MultiKueueManager": {"multiKueueWorkers"},
}
# The program's components that take no part: the cluster, and the read of the ProvisioningRequest API.
PARTLESS = ("kueue-aks:cluster:", "kueue-aks:autoscaling:")


@pytest.mark.parametrize(
    "name", ["dev", "kubeconfig", "existing-aks-extension", "identities", MULTIKUEUE_WEST, MULTIKUEUE_MANAGER]
)
def test_the_program_builds_one_component_per_part_and_exports_what_each_gives(name: str) -> None:
    run = stack_run(name)
    (parts,) = run.parts
    components = [
        (r.type, r.name)
        for r in run.run.registrations
        if not r.custom and "::pulumi:pulumi:Stack::" in r.parent and not r.type.startswith(PARTLESS)
    ]
    assert sorted(components) == sorted((p.type, p.name) for p in parts)
    exported = EXPORTS | AZURE_EXPORTS | {e for p in parts for e in PART_EXPORTS.get(p.type, ())}
    if SHAPES[name].mode == "kubeconfig":  # no Azure resources
        exported -= AZURE_EXPORTS | MONITORING_EXPORTS
    assert set(run.run.exports) == exported


def test_a_stopped_runs_errors_are_not_logged_again_but_others_are(
    dev_run: ProgramRun, caplog: pytest.LogCaptureFixture
) -> None:
    """run_program drops asyncio's "never retrieved" log of a RunError (the run raised it already)."""
    loop = asyncio.get_event_loop_policy().get_event_loop()  # the one the run used
    for error in (pulumi.RunError("kueue-aks:teams: refused"), ValueError("a bug in an apply")):
        future = loop.create_future()
        future.set_exception(error)
        del future
        gc.collect()
    assert [r.getMessage().splitlines()[0] for r in caplog.records if r.name == "asyncio"] == [
        "Future exception was never retrieved"
    ]
    assert "a bug in an apply" in caplog.text and "refused" not in caplog.text
