"""The pure Helm-values builders against the pinned charts' data in ../shared.

- Kueue, for every supported version (0.18.4 and the default 0.19.2): every values key path exists
  in that chart's values.yaml, gates are valid gates of that release, and the manager config is a
  complete v1beta2 Configuration whose fields all exist in its config-fields.yaml (Kueue decodes it
  strictly) and that keeps every chart default.
- NVIDIA device plugin: key paths exist in chart 0.20.0's values.yaml; it runs exactly on the
  GPU pools and tolerates all their taints.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.facts.device_plugin import DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_VERSION
from components.gpu import values as device_plugin_values
from components.config.checks import ConfigError
from components.config.names import KUEUE_NAMESPACE, MANAGED_LABEL, SPOT_TAINT, TEAM_LABEL
from components.config.stack import StackConfig
from components.config.device_plugin import DEFAULT_DEVICE_PLUGIN_CHART
from components.config.kueue import DEFAULT_KUEUE_CHART, NAMESPACE_SELECTOR_GATE
from components.facts.kueue_resources import DEFAULT_MANAGER_MEMORY_MIB
from components.kueue.values import (
    CONTROLLER_POD_LABELS,
    KUEUE_RELEASE_NAME,
    MANAGER_CONFIG_API_VERSION,
    kueue_helm_values,
    manager_config,
)
from components.facts.kueue_versions import DEFAULT_VERSION, POD_BASED_FRAMEWORKS, RELEASES
from components.facts.operators import needed_operators
from testbed.harness import ROOT
from testbed.paths import SHARED
from testbed.stacks import load_stack, stack_file_config
from testbed.upstream import (
    CONFIG_FIELDS,
    config_fields,
    kueue_data,
    minor,
    unknown_config_fields,
    upstream_gates,
    upstream_removed,
)

VERSIONS = sorted(RELEASES)
PLUGIN_DATA = SHARED / "nvidia-device-plugin" / "v0.20.0"
PLUGIN_CHART_VALUES = yaml.safe_load((PLUGIN_DATA / "values.yaml").read_text())


# Each version's chart values.yaml, manager-config field tree, and the chart's default manager config.
CHART_VALUES = {v: yaml.safe_load((kueue_data(v) / "values.yaml").read_text()) for v in VERSIONS}
FIELDS = {v: config_fields(v) for v in VERSIONS}
CHART_DEFAULT_CONFIGS = {
    v: yaml.safe_load(CHART_VALUES[v]["managerConfig"]["controllerManagerConfigYaml"]) for v in VERSIONS
}
KUEUE_CHART_VALUES = CHART_VALUES[DEFAULT_VERSION]
# Kueue 0.19 raised these chart defaults (kubernetes-sigs/kueue CHANGELOG/CHANGELOG-0.19.md: "Increase OOTB QPS
# and concurrency", kueue#12440). The manager config writes 0.19.2's values on 0.18.4 too: the same fields, only
# more client throughput, and a stack keeps them across the upgrade.
RAISED_IN_0_19 = {
    "controller.groupKindConcurrency.Workload.kueue.x-k8s.io": (5, 10),
    "controller.groupKindConcurrency.LocalQueue.kueue.x-k8s.io": (1, 5),
    "controller.groupKindConcurrency.ClusterQueue.kueue.x-k8s.io": (1, 5),
    "clientConnection.qps": (50, 300),
    "clientConnection.burst": (100, 500),
}
MULTIKUEUE_MANAGER = ROOT / "examples" / "multikueue" / "Pulumi.batch-manager.yaml"
# Every user pool carries kueue-aks.io/queued=true:NoSchedule while governance is on (the default).
QUEUED_TOLERATION = {"key": "kueue-aks.io/queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


# --- checkers (each has a test below proving it can fail) ----------------------------------


def unknown_value_paths(ours: Mapping[str, Any], chart: Mapping[str, Any], path: str = "") -> list[str]:
    """Paths in `ours` that the chart's values.yaml does not have, or with the wrong shape.

    A key whose chart default is an empty map or a list is free-form below it (nodeSelector,
    tolerations, featureGates); a non-empty map is checked key by key; a null default takes a scalar.
    """
    problems: list[str] = []
    for key, value in ours.items():
        at = f"{path}.{key}" if path else str(key)
        if key not in chart:
            problems.append(f"{at}: not in the chart's values.yaml")
            continue
        default = chart[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                problems.append(f"{at}: the chart expects a map")
            elif default:
                problems += unknown_value_paths(value, default, at)
        elif isinstance(default, list):
            if not isinstance(value, list):
                problems.append(f"{at}: the chart expects a list")
        elif isinstance(value, (dict, list)):
            problems.append(f"{at}: the chart expects a scalar")
    return problems


def leaves(doc: Any, path: str = "") -> dict[str, Any]:
    if isinstance(doc, dict):
        return {k: v for key, sub in doc.items() for k, v in leaves(sub, f"{path}.{key}" if path else key).items()}
    return {path: doc}


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A matchLabels-only LabelSelector's verdict on a label set."""
    assert set(selector) == {"matchLabels"}, "only matchLabels is evaluated here"
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


# --- configs --------------------------------------------------------------------------------


def variant(dev_map: Mapping[str, Any], **changes: Any) -> StackConfig:
    """The dev stack with top-level keys (without namespace) replaced."""
    config_map = copy.deepcopy(dict(dev_map))
    for key, value in changes.items():
        config_map[f"kueue-aks:{key}"] = value
    return load_stack(config_map)


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def on_version(dev_config_map: dict[str, Any], version: str) -> StackConfig:
    """The dev stack on each supported Kueue version."""
    return variant(dev_config_map, kueue={"version": version})


def external_operators(frameworks: list[str]) -> dict[str, Any]:
    """`kueue-aks:operators` declaring the controllers the stack does not ship as the cluster's own."""
    return {o.key: {"install": "external"} for o in needed_operators(frameworks) if not o.managed}


def team_namespace_labels(team: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": team, TEAM_LABEL: team, MANAGED_LABEL: "true"}


# --- Kueue values ---------------------------------------------------------------------------


def test_constants_name_the_official_chart_and_release() -> None:
    assert DEFAULT_KUEUE_CHART == "oci://registry.k8s.io/kueue/charts/kueue"
    assert KUEUE_RELEASE_NAME == "kueue"


def test_dev_values_exist_in_the_pinned_chart(on_version: StackConfig, version: str) -> None:
    assert on_version.kueue.version == version
    assert unknown_value_paths(kueue_helm_values(on_version), CHART_VALUES[version]) == []


@pytest.mark.parametrize(
    "values",
    [
        {"controllerManager": {"replica": 2}},  # typo
        {"controllerManager": {"nodeSelector": "system"}},  # map expected
        {"controllerManager": {"featureGates": {"TopologyAwareScheduling": True}}},  # list expected
        {"managerConfig": {"controllerManagerConfigYaml": {"apiVersion": "x"}}},  # string expected
        {"controllerManager": {"manager": {"resource": {}}}},  # typo one level down
    ],
)
def test_value_path_check_catches_mistakes(values: dict[str, Any]) -> None:
    assert unknown_value_paths(values, KUEUE_CHART_VALUES)


def test_dev_feature_gates_are_the_list_of_valid_gates(on_version: StackConfig, version: str) -> None:
    gates = kueue_helm_values(on_version)["controllerManager"]["featureGates"]
    assert gates == [
        {"name": "LocalQueueMetrics", "enabled": True},
        {"name": "TopologyAwareScheduling", "enabled": True},
    ]
    upstream, removed = upstream_gates(version), upstream_removed(version)
    for gate in gates:
        assert gate["name"] in upstream and gate["name"] not in removed
        spec = upstream[gate["name"]]
        assert not (spec.locked and spec.default != gate["enabled"])


def test_custom_gates_replace_the_defaults_and_stay_on_the_command_line_only(dev_config_map: dict[str, Any]) -> None:
    config = variant(dev_config_map, kueue={"featureGates": {"PartialAdmission": False, "LocalQueueMetrics": True}})
    values = kueue_helm_values(config)
    assert values["controllerManager"]["featureGates"] == [
        {"name": "LocalQueueMetrics", "enabled": True},
        {"name": "PartialAdmission", "enabled": False},
    ]
    # Kueue exits when gates are set both on the command line and in the config (pkg/config/validation.go@v0.19.2).
    assert "featureGates" not in manager_config(config)


def test_manager_config_string_is_the_full_v1beta2_configuration(on_version: StackConfig, version: str) -> None:
    text = kueue_helm_values(on_version)["managerConfig"]["controllerManagerConfigYaml"]
    doc = yaml.safe_load(text)
    assert doc == manager_config(on_version)
    assert doc["apiVersion"] == MANAGER_CONFIG_API_VERSION == "config.kueue.x-k8s.io/v1beta2"
    assert CHART_DEFAULT_CONFIGS[version]["apiVersion"] == MANAGER_CONFIG_API_VERSION
    assert doc["kind"] == "Configuration"
    assert unknown_config_fields(doc, FIELDS[version]) == []
    # The chart injects internalCertManagement with its own names only when the key is absent
    # (charts/kueue/templates/manager/manager-config.yaml@v0.19.2).
    assert "internalCertManagement" not in doc


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["metrics"].update(localQueueMetric={"enable": True}),  # typo
        lambda d: d["metrics"]["localQueueMetrics"].update(enabled=True),  # nested typo
        lambda d: d["leaderElection"].update(leaderElect="yes"),  # wrong type
        lambda d: d["controller"]["groupKindConcurrency"].update({"Job.batch": True}),  # map value type
        lambda d: d["managedJobsNamespaceSelector"].update(matchLabel={}),  # LabelSelector typo
        lambda d: d["integrations"].update(frameworks="batch/job"),  # list expected
        lambda d: d.update(featureGate={}),  # unknown top-level field
    ],
)
def test_config_field_check_catches_mistakes(dev_config: StackConfig, mutate: Any) -> None:
    doc = manager_config(dev_config)
    mutate(doc)
    assert unknown_config_fields(doc, CONFIG_FIELDS)


def test_the_config_field_check_follows_the_version() -> None:
    # A field 0.19 added: Kueue 0.18.4 would exit at start-up on it.
    doc = {"multiKueue": {"incrementalDispatcherConfig": {"stepSize": 2}}}
    assert unknown_config_fields(doc, FIELDS["0.19.2"]) == []
    assert unknown_config_fields(doc, FIELDS["0.18.4"]) == [
        "multiKueue.incrementalDispatcherConfig: not a field of the v1beta2 Configuration"
    ]


def test_manager_config_keeps_every_chart_default(on_version: StackConfig, version: str) -> None:
    ours = leaves(manager_config(on_version))
    defaults = leaves(CHART_DEFAULT_CONFIGS[version])
    del defaults["integrations.frameworks"]  # replaced by the configured list on purpose
    assert {
        "health.healthProbeBindAddress",
        "leaderElection.resourceName",
        "clientConnection.qps",
        "controller.groupKindConcurrency.Workload.kueue.x-k8s.io",
    } <= set(defaults)
    if minor(version) < (0, 19):
        for path, (old, new) in RAISED_IN_0_19.items():
            assert (defaults.pop(path), ours[path]) == (old, new), path
    assert {path: ours.get(path) for path in defaults} == defaults


@pytest.mark.parametrize("dispatcher", ["AllAtOnce", "Incremental"])
def test_a_multikueue_managers_config_decodes_on_every_version(version: str, dispatcher: str) -> None:
    config_map = yaml.safe_load(MULTIKUEUE_MANAGER.read_text())["config"]
    config_map["kueue-aks:kueue"] = {**config_map["kueue-aks:kueue"], "version": version}
    config_map["kueue-aks:multiKueue"] = {**config_map["kueue-aks:multiKueue"], "dispatcher": dispatcher}
    doc = manager_config(load_stack(config_map, stack="batch-manager"))
    assert set(doc["multiKueue"]) == {"origin", "workerLostTimeout", "gcInterval", "dispatcherName"}
    assert unknown_config_fields(doc, FIELDS[version]) == []


def test_frameworks_come_from_config(dev_config: StackConfig, dev_config_map: dict[str, Any]) -> None:
    # Governance is on in the dev stack, so Kueue's pod integration follows the configured list.
    assert manager_config(dev_config)["integrations"]["frameworks"] == [*dev_config.kueue.frameworks, "pod"]
    assert "trainer.kubeflow.org/trainjob" in dev_config.kueue.frameworks
    assert "pod" not in dev_config.kueue.frameworks  # added by governance, not configured
    custom = variant(dev_config_map, kueue={"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]})
    assert manager_config(custom)["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "pod"]
    ungoverned = variant(
        dev_config_map, kueue={"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}, governance={"enforce": False}
    )
    assert manager_config(ungoverned)["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset"]


@pytest.mark.parametrize(
    ("frameworks", "enforce", "expected"),
    [
        (["batch/job"], True, ["batch/job", "pod"]),
        (["batch/job"], False, ["batch/job"]),
        # Configured already: kept where the user put it, not listed twice.
        (["pod", "batch/job"], True, ["pod", "batch/job"]),
        (["batch/job", "pod"], True, ["batch/job", "pod"]),
        (["batch/job", "pod"], False, ["batch/job", "pod"]),  # configured pod stays without governance
    ],
)
def test_governance_adds_the_pod_integration(
    dev_config_map: dict[str, Any], frameworks: list[str], enforce: bool, expected: list[str]
) -> None:
    config = variant(dev_config_map, kueue={"frameworks": frameworks}, governance={"enforce": enforce})
    doc = yaml.safe_load(kueue_helm_values(config)["managerConfig"]["controllerManagerConfigYaml"])
    assert doc["integrations"]["frameworks"] == expected
    assert unknown_config_fields(doc, CONFIG_FIELDS) == []
    assert list(config.kueue.frameworks) == frameworks  # the config itself is left as written


@pytest.mark.parametrize("frameworks", [["batch/job"], ["batch/job", *sorted(POD_BASED_FRAMEWORKS)], ["pod"]])
def test_namespace_selector_selects_only_team_namespaces(dev_config_map: dict[str, Any], frameworks: list[str]) -> None:
    config = variant(dev_config_map, kueue={"frameworks": frameworks}, operators=external_operators(frameworks))
    selector = manager_config(config)["managedJobsNamespaceSelector"]
    assert selector == {"matchLabels": {MANAGED_LABEL: "true"}}
    for team in config.teams:
        assert selects(selector, team_namespace_labels(team.name))
    for other in ("kube-system", KUEUE_NAMESPACE, DEVICE_PLUGIN_NAMESPACE, "default", "monitoring"):
        assert not selects(selector, {"kubernetes.io/metadata.name": other})


def test_local_queue_metrics_stay_on_explicitly(dev_config: StackConfig, dev_config_map: dict[str, Any]) -> None:
    # A localQueueMetrics block without `enable: true` turns the metrics off (pkg/metrics/localqueue.go@v0.19.2).
    assert manager_config(dev_config)["metrics"]["localQueueMetrics"] == {"enable": True}
    # Gates given without LocalQueueMetrics: the 0.19.2 default (on) applies.
    assert RELEASES["0.19.2"].gates["LocalQueueMetrics"].default is True
    config = variant(dev_config_map, kueue={"featureGates": {"PartialAdmission": True}})
    assert manager_config(config)["metrics"]["localQueueMetrics"] == {"enable": True}
    off = variant(dev_config_map, kueue={"featureGates": {"LocalQueueMetrics": False}}, monitoring={"enabled": False})
    assert manager_config(off)["metrics"]["localQueueMetrics"] == {"enable": False}


def test_controller_is_highly_available_on_the_system_pool(dev_config: StackConfig) -> None:
    cm = kueue_helm_values(dev_config)["controllerManager"]
    assert cm["replicas"] == 2
    assert cm["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    assert cm["nodeSelector"] == {"kubernetes.azure.com/mode": "system"}
    assert cm["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert [c["topologyKey"] for c in cm["topologySpreadConstraints"]] == ["kubernetes.io/hostname"]
    for constraint in cm["topologySpreadConstraints"]:
        # ScheduleAnyway: the dev stack's one-node system pool must still run both replicas.
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
        assert constraint["labelSelector"] == {"matchLabels": CONTROLLER_POD_LABELS}
    assert cm["manager"]["priorityClassName"] == "system-cluster-critical"


def test_single_replica_has_no_pdb_and_zonal_clusters_spread_over_zones(dev_config_map: dict[str, Any]) -> None:
    one = kueue_helm_values(variant(dev_config_map, kueue={"replicas": 1}))["controllerManager"]
    assert one["replicas"] == 1
    assert one["podDisruptionBudget"]["enabled"] is False  # minAvailable 1 of 1 would block node drains
    assert "topologySpreadConstraints" not in one
    zonal = variant(dev_config_map, kueue={"replicas": 3}, cluster={"zones": ["1", "2", "3"]})
    cm = kueue_helm_values(zonal)["controllerManager"]
    assert cm["replicas"] == 3
    assert [c["topologyKey"] for c in cm["topologySpreadConstraints"]] == [
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    ]


def test_controller_memory_is_raised_only_for_topology_aware_pools(
    dev_config: StackConfig, dev_config_map: dict[str, Any]
) -> None:
    # The dev stack's tas pool: 1 system + 4 cpu + 3 gpu + 1 tas nodes at 32 MiB each on top of the
    # chart's 512 MiB is 800 MiB, below the 1 GiB floor.
    assert kueue_helm_values(dev_config)["controllerManager"]["manager"]["resources"] == {
        "requests": {"memory": "1024Mi"},
        "limits": {"memory": "1024Mi"},
    }
    pools = copy.deepcopy(dev_config_map["kueue-aks:nodePools"])
    tas_pool = next(p for p in pools if p["name"] == "tas")
    tas_pool.update(topology=False)
    assert (
        "resources" not in kueue_helm_values(variant(dev_config_map, nodePools=pools))["controllerManager"]["manager"]
    )
    tas_pool.update(topology=True, minCount=40, maxCount=40, provisioningRequest=False)  # a fixed-size one
    tas = variant(dev_config_map, nodePools=pools)
    assert tas.uses_topology
    resources = kueue_helm_values(tas)["controllerManager"]["manager"]["resources"]
    # 1 system node + 4 cpu + 3 gpu + 40 tas nodes at 32 MiB each on top of the chart's 512 MiB.
    assert resources == {"requests": {"memory": "2048Mi"}, "limits": {"memory": "2048Mi"}}
    assert 2048 > DEFAULT_MANAGER_MEMORY_MIB
    assert unknown_value_paths(kueue_helm_values(tas), KUEUE_CHART_VALUES) == []


def test_image_is_left_to_the_published_chart(dev_config: StackConfig) -> None:
    # The published chart already uses registry.k8s.io/kueue/kueue:v0.19.2 (hack/helm-chart-package.sh@v0.19.2).
    assert "image" not in kueue_helm_values(dev_config)["controllerManager"]["manager"]


@pytest.mark.parametrize(
    ("kueue", "path"),
    [
        ({"frameworks": ["batch/job", "kubeflow.org/pytorchjobs"]}, "kueue-aks:kueue.frameworks[1]"),
        ({"frameworks": ["batch/job", "batch/job"]}, "kueue-aks:kueue.frameworks[1]"),
        ({"featureGates": {"TopologyAwareSchedulin": True}}, "kueue-aks:kueue.featureGates.TopologyAwareSchedulin"),
        ({"featureGates": {"LendingLimit": True}}, "kueue-aks:kueue.featureGates.LendingLimit"),
        ({"featureGates": {"HierarchicalCohorts": False}}, "kueue-aks:kueue.featureGates.HierarchicalCohorts"),
        ({"version": "latest"}, "kueue-aks:kueue.version"),
    ],
)
def test_bad_frameworks_gates_and_versions_are_config_errors(
    dev_config_map: dict[str, Any], kueue: dict[str, Any], path: str
) -> None:
    with pytest.raises(ConfigError) as err:
        variant(dev_config_map, kueue=kueue)
    assert path in [p.path for p in err.value.problems]


def free_gates(version: str) -> list[str]:
    """Gates a user may flip without other gates following (TAS and its sub-gates move together);
    not the namespace-selector gate, which the config keeps on where Kueue does not lock it."""
    release = RELEASES[version]
    return sorted(
        n
        for n, g in release.gates.items()
        if not g.locked
        and n != "TopologyAwareScheduling"
        and n not in release.tas_subgates
        and n not in ("SparkApplicationIntegration", NAMESPACE_SELECTOR_GATE)
    )


@pytest.mark.parametrize("kueue_version", VERSIONS)
@settings(max_examples=60, deadline=None)
@given(
    draw=st.data(),
    replicas=st.integers(min_value=1, max_value=10),
    enforce=st.booleans(),
)
def test_any_valid_kueue_config_renders_valid_values(
    kueue_version: str, draw: st.DataObject, replicas: int, enforce: bool
) -> None:
    release = RELEASES[kueue_version]
    frameworks = draw.draw(
        st.lists(
            st.sampled_from(sorted(release.frameworks - {"sparkoperator.k8s.io/sparkapplication"})),
            min_size=1,
            unique=True,
        ),
        label="frameworks",
    )
    gates = draw.draw(
        st.dictionaries(st.sampled_from(free_gates(kueue_version)), st.booleans(), max_size=6), label="gates"
    )
    # A system pool that holds up to 10 Kueue replicas and every operator.
    config = variant(
        stack_file_config("dev"),
        kueue={"version": kueue_version, "frameworks": frameworks, "featureGates": gates, "replicas": replicas},
        governance={"enforce": enforce},
        monitoring={"enabled": gates.get("LocalQueueMetrics", True)},
        operators=external_operators(frameworks),
        cluster={"systemPool": {"vmSize": "Standard_D8s_v5", "count": 3}},
    )
    values = kueue_helm_values(config)
    assert unknown_value_paths(values, CHART_VALUES[kueue_version]) == []
    doc = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert unknown_config_fields(doc, FIELDS[kueue_version]) == []
    # The configured list in order; governance adds Kueue's pod integration unless it is already there.
    added = ["pod"] if enforce and "pod" not in frameworks else []
    assert doc["integrations"]["frameworks"] == frameworks + added
    assert doc["integrations"]["frameworks"].count("pod") == (1 if enforce or "pod" in frameworks else 0)
    assert {g["name"]: g["enabled"] for g in values["controllerManager"]["featureGates"]} == gates


# --- NVIDIA device plugin values ------------------------------------------------------------


def test_device_plugin_pin_matches_the_chart_data() -> None:
    chart = yaml.safe_load((PLUGIN_DATA / "Chart.yaml").read_text())
    assert (chart["name"], chart["version"]) == (DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION)
    assert DEFAULT_DEVICE_PLUGIN_CHART == "https://nvidia.github.io/k8s-device-plugin"


def test_device_plugin_values_exist_in_the_pinned_chart(dev_config: StackConfig) -> None:
    values = device_plugin_values.device_plugin_values(dev_config)
    assert unknown_value_paths(values, PLUGIN_CHART_VALUES) == []
    assert unknown_value_paths({"nodeSelectorr": {}}, PLUGIN_CHART_VALUES)  # the check can fail here too


def test_device_plugin_runs_exactly_on_the_gpu_pools(dev_config: StackConfig) -> None:
    terms = device_plugin_values.device_plugin_values(dev_config)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    # One term: Helm replaces the chart's NFD-based terms, which match no AKS node.
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.azure.com/agentpool", "operator": "In", "values": ["gpu"]}]}
    ]


def test_device_plugin_tolerates_every_gpu_pool_taint_and_no_cpu_taint(dev_config_map: dict[str, Any]) -> None:
    pools = copy.deepcopy(dev_config_map["kueue-aks:nodePools"])
    pools[0]["taints"] = ["workload=cpu:NoSchedule"]
    pools.append(
        {
            "name": "gpuspot",
            "vmSize": "Standard_NC24ads_A100_v4",
            "maxCount": 2,
            "spot": True,
            "taints": ["sku=gpu:NoSchedule", "nvidia.com/gpu=present:NoSchedule"],
        }
    )
    config = variant(dev_config_map, nodePools=pools)
    values = device_plugin_values.device_plugin_values(config)
    expressions = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"]
    assert expressions[0]["values"] == ["gpu", "gpuspot"]
    spot_key, _, spot_rest = SPOT_TAINT.partition("=")
    gpu = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    sku = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    spot = {"key": spot_key, "operator": "Equal", "value": spot_rest.split(":")[0], "effect": "NoSchedule"}
    # Pool by pool, each toleration once: gpu's (its taint, the queued one), then gpuspot's new ones.
    # The queued taint is on every pool, CPU pools included; only the CPU pool's own taint is left out.
    assert values["tolerations"] == [gpu, QUEUED_TOLERATION, sku, spot]
    for pool in config.node_pools:
        if pool.is_gpu:
            assert all(t.toleration() in values["tolerations"] for t in pool.node_taints)
    assert {"key": "workload", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"} not in values["tolerations"]
    ungoverned = device_plugin_values.device_plugin_values(
        variant(dev_config_map, nodePools=pools, governance={"enforce": False})
    )
    assert ungoverned["tolerations"] == [gpu, sku, spot]


def test_device_plugin_tolerates_a_value_less_taint_with_exists(dev_config_map: dict[str, Any]) -> None:
    pools = copy.deepcopy(dev_config_map["kueue-aks:nodePools"])
    pools[1]["taints"] = ["dedicated:NoExecute"]
    values = device_plugin_values.device_plugin_values(variant(dev_config_map, nodePools=pools))
    assert values["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        QUEUED_TOLERATION,
    ]
    ungoverned = variant(dev_config_map, nodePools=pools, governance={"enforce": False})
    assert device_plugin_values.device_plugin_values(ungoverned)["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
    ]


def test_device_plugin_values_need_a_gpu_pool(dev_config_map: dict[str, Any]) -> None:
    cpu_only = variant(dev_config_map, nodePools=[dev_config_map["kueue-aks:nodePools"][0]])
    assert not cpu_only.has_gpu
    with pytest.raises(ValueError):
        device_plugin_values.device_plugin_values(cpu_only)


def test_fair_sharing_is_on_so_the_queues_share_weights_matter(dev_config: StackConfig) -> None:
    config_doc = yaml.safe_load(kueue_helm_values(dev_config)["managerConfig"]["controllerManagerConfigYaml"])
    # One strategy: borrowers do not preempt each other back and forth (docs/outcomes.md).
    assert config_doc["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}
