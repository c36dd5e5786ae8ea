"""The stack-config contract as parse_config reads it (components/config/parse.py): the dev stack
and the DESIGN.md example, defaults, every rule named at its key with what is allowed, all problems
at once, and any input giving a config or a ConfigError."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.checks import ConfigError
from components.config.kueue import DEFAULT_FRAMEWORKS
from components.config.parse import KEYS
from components.config.teams import DEFAULT_PRIORITY_CLASSES
from components.config.refusals import MINIMAL
from testbed.config_errors import refused
from testbed.harness import ROOT
from testbed.stacks import design_example, design_md_example, load_stack
from testbed.stacks import TAS_POOL, parse_raw, with_changes


def test_dev_stack_parses(dev_config: Any) -> None:
    assert [p.name for p in dev_config.node_pools] == ["cpu", "gpu", "tas"]
    gpu = dev_config.pool("gpu")
    assert gpu.is_gpu and gpu.node.gpus == 1
    assert [str(t) for t in gpu.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    assert dev_config.pool("cpu").taints == ()
    # All three scale from zero; only tas is topology-aware (autoscaled with ProvisioningRequest).
    assert [(p.name, p.min_count, p.max_count, p.topology) for p in dev_config.node_pools] == [
        ("cpu", 0, 4, False),
        ("gpu", 0, 3, False),
        ("tas", 0, 1, True),
    ]
    assert dev_config.uses_topology
    assert [(t.name, t.share, t.pools) for t in dev_config.teams] == [
        ("research", Decimal(60), ("cpu", "gpu", "tas")),
        ("platform", Decimal(40), ("cpu", "gpu", "tas")),
    ]
    assert dev_config.cluster.name == "kueue-dev"


def test_design_contract_example_parses() -> None:
    cfg = load_stack(design_example())
    assert cfg.cluster.name == "kueue-dev"
    assert cfg.cluster.kubernetes_version == "1.33"
    assert cfg.kueue.version == "0.19.2"
    assert cfg.kueue.frameworks[-1] == "trainer.kubeflow.org/trainjob"
    assert [p.name for p in cfg.priority_classes] == ["high"]
    assert cfg.topology_levels == ("topology.kubernetes.io/zone", "kubernetes.io/hostname")


def test_design_example_fixture_matches_the_contract() -> None:
    contract = design_md_example()
    if contract is None:  # only outside this workplace (e.g. on GitHub), where DESIGN.md is not shipped
        pytest.skip("../shared/DESIGN.md is not present")
    assert design_example() == contract


def test_defaults() -> None:
    cfg = parse_raw(MINIMAL)
    assert cfg.cluster.tier == "Free" and cfg.cluster.auto_upgrade_channel == "patch"
    assert cfg.cluster.system_pool.vm_size == "Standard_D4s_v5" and cfg.cluster.system_pool.count == 2
    assert cfg.cluster.kubernetes_version is None and not cfg.cluster.disable_local_accounts
    assert cfg.kueue.version == "0.19.2" and cfg.kueue.replicas == 2
    assert dict(cfg.kueue.feature_gates) == {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}
    assert cfg.kueue.frameworks == DEFAULT_FRAMEWORKS
    assert cfg.priority_classes == DEFAULT_PRIORITY_CLASSES
    assert cfg.pool("cpu").min_count == 0 and not cfg.pool("cpu").spot
    assert all(t.borrowing is None for t in cfg.teams)  # no borrowing limit


def test_pulumi_yaml_declares_every_key_with_the_same_defaults() -> None:
    """Pulumi.yaml's declared defaults, injected as the CLI would, change nothing."""
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert set(declared) == {
        "cluster",
        "nodePools",
        "kueue",
        "teams",
        "priorityClasses",
        "topology",
        "governance",
        "devicePlugin",
        "monitoring",
        "operators",
        "preflight",
        "multiKueue",
        "registryCredentials",
    }
    assert set(declared) == set(KEYS)  # every key the parser accepts is declared, and no other
    for key, decl in declared.items():
        assert {"type", "default", "description"} <= set(decl), key
    with_declared_defaults = {k: d["default"] for k, d in declared.items() if k not in MINIMAL} | MINIMAL
    assert parse_raw(with_declared_defaults) == parse_raw(MINIMAL)


@pytest.mark.parametrize(
    ("raw", "location", "expected"),
    [
        (with_changes(), None, "azure-native:location: is required"),
        (with_changes(nodepools=[]), "x", "kueue-aks:nodepools: unknown key (did you mean 'nodePools'?)"),
        ({"teams": MINIMAL["teams"]}, "x", "kueue-aks:nodePools: is required"),
        (with_changes(nodePools=[]), "x", "kueue-aks:nodePools: is an empty list; allowed: 1 or more node pools"),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxcount": 3}]),
            "x",
            "kueue-aks:nodePools[0].maxcount: unknown key (did you mean 'maxCount'?)",
        ),
        (
            with_changes(nodePools=[{"name": "Cpu-1", "vmSize": "Standard_D16s_v5", "maxCount": 3}]),
            "x",
            "kueue-aks:nodePools[0].name: 'Cpu-1' is not allowed",
        ),
        (
            with_changes(nodePools=[{"name": "system", "vmSize": "Standard_D16s_v5", "maxCount": 3}]),
            "x",
            "kueue-aks:nodePools[0].name: 'system' is the system pool's name",
        ),
        (
            with_changes(nodePools=[MINIMAL["nodePools"][0], MINIMAL["nodePools"][0]]),
            "x",
            "kueue-aks:nodePools[1].name: 'cpu' is used by another pool",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v9", "maxCount": 3}]),
            "x",
            "kueue-aks:nodePools[0].vmSize: 'Standard_D16s_v9' is not in the capacity catalog",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": 3, "maxCount": 2}]),
            "x",
            "kueue-aks:nodePools[0].maxCount: 2 is below minCount 3",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 0}]),
            "x",
            "kueue-aks:nodePools[0].maxCount: 0 is out of range; allowed: 1 to 1000",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": -1, "maxCount": 2}]),
            "x",
            "kueue-aks:nodePools[0].minCount: -1 is out of range",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": "3"}]),
            "x",
            "kueue-aks:nodePools[0].maxCount: must be an integer",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "spot": "yes"}]),
            "x",
            "kueue-aks:nodePools[0].spot: must be true or false",
        ),
        (
            with_changes(
                nodePools=[
                    {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "taints": ["gpu=true:NoScheduled"]}
                ]
            ),
            "x",
            "kueue-aks:nodePools[0].taints[0]: 'gpu=true:NoScheduled' has effect 'NoScheduled'",
        ),
        (
            with_changes(
                nodePools=[
                    {
                        "name": "cpu",
                        "vmSize": "Standard_D16s_v5",
                        "maxCount": 2,
                        "labels": {"kubernetes.azure.com/x": "1"},
                    }
                ]
            ),
            "x",
            "kueue-aks:nodePools[0].labels.kubernetes.azure.com/x: AKS reserves",
        ),
        (
            with_changes(
                nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "labels": {"tier": True}}]
            ),
            "x",
            "kueue-aks:nodePools[0].labels.tier: must be a string (quote numbers and booleans); got a boolean True",
        ),
        (
            with_changes(nodePools=[{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "topology": True}]),
            "x",
            "kueue-aks:nodePools[0].minCount: 0 is below maxCount (2) on a topology-aware pool without provisioningRequest",
        ),
        (
            with_changes(
                nodePools=[
                    {"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": 1, "maxCount": 3, "topology": True}
                ]
            ),
            "x",
            "kueue-aks:nodePools[0].minCount: 1 is below maxCount (3) on a topology-aware pool without provisioningRequest",
        ),
        (
            with_changes(nodePools=[{"name": "x", "vmSize": "Standard_X9", "maxCount": 2, "capacity": {"cpu": "8"}}]),
            "x",
            "kueue-aks:nodePools[0].capacity: Standard_X9 is not in the catalog, so capacity needs both cpu and memory",
        ),
        (
            with_changes(
                nodePools=[{"name": "x", "vmSize": "Standard_D16s_v5", "maxCount": 2, "capacity": {"gpus": 1}}]
            ),
            "x",
            "kueue-aks:nodePools[0].capacity.gpus: unknown key",
        ),
        (
            with_changes(cluster={"tier": "free"}),
            "x",
            "kueue-aks:cluster.tier: 'free' is not allowed (did you mean 'Free'?)",
        ),
        (
            with_changes(cluster={"kubernetesVersion": 1.33}),
            "x",
            "kueue-aks:cluster.kubernetesVersion: must be a quoted string",
        ),
        (
            with_changes(cluster={"kubernetesVersion": "1.29"}),
            "x",
            "kueue-aks:cluster.kubernetesVersion: '1.29' is below 1.30: the program installs a ValidatingAdmissionPolicy",
        ),
        (with_changes(cluster={"zones": ["1", "4"]}), "x", "kueue-aks:cluster.zones[1]: '4' is not allowed"),
        (
            with_changes(cluster={"systemPool": {"vmSize": "Standard_NC4as_T4_v3"}}),
            "x",
            "kueue-aks:cluster.systemPool.vmSize: Standard_NC4as_T4_v3 is a GPU size",
        ),
        (
            with_changes(cluster={"adminGroupObjectIds": ["not-a-guid"]}),
            "x",
            "kueue-aks:cluster.adminGroupObjectIds[0]: 'not-a-guid' is not allowed",
        ),
        (
            with_changes(cluster={"autoUpgradeChannel": "weekly"}),
            "x",
            "kueue-aks:cluster.autoUpgradeChannel: 'weekly' is not allowed",
        ),
        (with_changes(cluster={"name": "-bad"}), "x", "kueue-aks:cluster.name: '-bad' is not allowed"),
        (with_changes(kueue={"version": "latest"}), "x", "kueue-aks:kueue.version: 'latest' is not allowed"),
        (
            with_changes(kueue={"version": "v0.19.2"}),
            "x",
            "kueue-aks:kueue.version: 'v0.19.2': write the chart version without 'v'",
        ),
        (
            with_changes(kueue={"version": "0.18.0"}),
            "x",
            "kueue-aks:kueue.version: '0.18.0' has no gate and framework tables",
        ),
        (
            with_changes(kueue={"featureGates": {"TopologyAwareSchedulng": True}}),
            "x",
            "kueue-aks:kueue.featureGates.TopologyAwareSchedulng: is not a Kueue 0.19.2 feature gate (did you mean 'TopologyAwareScheduling'?)",
        ),
        (
            with_changes(kueue={"featureGates": {"LendingLimit": True}}),
            "x",
            "kueue-aks:kueue.featureGates.LendingLimit: was removed",
        ),
        (
            with_changes(kueue={"featureGates": {"HierarchicalCohorts": False}}),
            "x",
            "kueue-aks:kueue.featureGates.HierarchicalCohorts: is locked to true",
        ),
        (
            with_changes(kueue={"featureGates": {"TopologyAwareScheduling": False}}),
            "x",
            "kueue-aks:kueue.featureGates.TopologyAwareScheduling: false needs these TAS gates set to false too",
        ),
        (
            with_changes(kueue={"frameworks": ["batch/job", "ray.io/rayjobs"]}),
            "x",
            "kueue-aks:kueue.frameworks[1]: 'ray.io/rayjobs' is not a Kueue 0.19.2 framework (did you mean 'ray.io/rayjob'?)",
        ),
        (
            with_changes(kueue={"frameworks": ["batch/job", "batch/job"]}),
            "x",
            "kueue-aks:kueue.frameworks[1]: 'batch/job' is listed twice",
        ),
        (
            with_changes(kueue={"frameworks": ["sparkoperator.k8s.io/sparkapplication"]}),
            "x",
            "kueue-aks:kueue.featureGates.SparkApplicationIntegration: must be true",
        ),
        (with_changes(kueue={"replicas": 0}), "x", "kueue-aks:kueue.replicas: 0 is out of range"),
        (with_changes(teams=[]), "x", "kueue-aks:teams: is an empty list; allowed: 1 or more teams"),
        (
            with_changes(teams=[{"name": "Research", "share": 50}]),
            "x",
            "kueue-aks:teams[0].name: 'Research' must be a DNS-1123 label",
        ),
        (
            with_changes(teams=[{"name": "kube-system", "share": 50}]),
            "x",
            "kueue-aks:teams[0].name: 'kube-system' is a reserved namespace",
        ),
        (with_changes(teams=[{"name": "a", "share": 0}]), "x", "kueue-aks:teams[0].share: 0 is out of range"),
        (with_changes(teams=[{"name": "a", "share": "50%"}]), "x", "kueue-aks:teams[0].share: must be a number"),
        (
            with_changes(teams=[{"name": "a", "share": 60}, {"name": "b", "share": 50}]),
            "x",
            "kueue-aks:teams: shares add up to 110%; the total must be at most 100%",
        ),
        (
            with_changes(teams=[{"name": "a", "share": 50}, {"name": "a", "share": 10}]),
            "x",
            "kueue-aks:teams[1].name: 'a' is used by another team",
        ),
        (
            with_changes(teams=[{"name": "a", "share": 50, "pools": ["gpu"]}]),
            "x",
            "kueue-aks:teams[0].pools[0]: 'gpu' is not a user pool",
        ),
        (
            with_changes(nodePools=[TAS_POOL], teams=[{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}]),
            "x",
            "kueue-aks:teams[1].name: 'a-topology' is the name of team 'a''s ClusterQueue for its topology-aware pools",
        ),
        (with_changes(teams=[{"name": "a"}]), "x", "kueue-aks:teams[0].share: is required"),
        (
            with_changes(teams=[{"name": "a", "share": 50, "borrowing": -1}]),
            "x",
            "kueue-aks:teams[0].borrowing: -1 is out of range; allowed: 0 to 100 (a multiple of the team's quota) "
            "or 'unlimited'",
        ),
        (
            with_changes(teams=[{"name": "a", "share": 50, "borrowing": "none"}]),
            "x",
            "kueue-aks:teams[0].borrowing: must be a number from 0 to 100 (a multiple of the team's quota) or 'unlimited'",
        ),
        (
            with_changes(teams=[{"name": "a", "share": 50, "borrowing": None}]),
            "x",
            "kueue-aks:teams[0].borrowing: is empty; allowed: a number from 0 to 100 (a multiple of the team's quota) "
            "or 'unlimited'",
        ),
        (
            with_changes(priorityClasses=[{"name": "high", "value": 2**31}]),
            "x",
            "kueue-aks:priorityClasses[0].value: 2147483648 is out of range",
        ),
        (
            with_changes(priorityClasses=[{"name": "high", "value": 1}, {"name": "high", "value": 2}]),
            "x",
            "kueue-aks:priorityClasses[1].name: 'high' is used twice",
        ),
        (
            with_changes(priorityClasses=[{"name": "High", "value": 1}]),
            "x",
            "kueue-aks:priorityClasses[0].name: 'High' must be a DNS-1123 name",
        ),
        (
            with_changes(topology={"levels": ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]}),
            "x",
            "kueue-aks:topology.levels[0]: kubernetes.io/hostname may only be the last",
        ),
        (
            with_changes(topology={"levels": []}),
            "x",
            "kueue-aks:topology.levels: is an empty list; allowed: 1 or more node label keys",
        ),
        (
            with_changes(topology={"level": ["a"]}),
            "x",
            "kueue-aks:topology.level: unknown key (did you mean 'levels'?)",
        ),
    ],
)
def test_bad_config_names_the_key_and_what_is_allowed(raw: dict[str, Any], location: str | None, expected: str) -> None:
    problems = refused(parse_raw, raw, location).lines
    assert any(p.startswith(expected) for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    raw = {
        "nodePools": [
            {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 0},
            {"name": "g", "vmSize": "nope", "maxCount": 1},
        ],
        "teams": [{"name": "a", "share": 70}, {"name": "b", "share": 70}],
        "kueue": {"featureGates": {"Nope": True}},
        "cluster": {"tier": "Gold"},
    }
    with pytest.raises(ConfigError) as err:
        parse_raw(raw, location=None)
    assert [p.path for p in err.value.problems] == [
        "azure-native:location",
        "kueue-aks:cluster.tier",
        "kueue-aks:nodePools[0].maxCount",
        "kueue-aks:nodePools[1].vmSize",
        "kueue-aks:kueue.featureGates.Nope",
        "kueue-aks:teams",
    ]


def test_config_error_message_lists_every_problem() -> None:
    with pytest.raises(ConfigError) as err:
        parse_raw(with_changes(teams=[{"name": "a", "share": 101}], kueue={"replicas": 99}))
    text = str(err.value)
    assert text.startswith("stack config has 2 problems:")
    assert "kueue-aks:teams[0].share" in text and "kueue-aks:kueue.replicas" in text


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2000) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


_pool = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["cpu", "gpu", "Bad", "system", ""]),
        "vmSize": st.sampled_from(["Standard_D16s_v5", "Standard_NC4as_T4_v3", "Standard_Nope", 7]),
        "maxCount": st.integers(-1, 1001) | _values,
    },
    optional={
        "minCount": st.integers(-1, 5) | _values,
        "spot": _values,
        "taints": _values,
        "labels": _values,
        "topology": st.booleans() | _values,
        "capacity": _values,
        "extra": _values,
    },
)


# Names that are a team ("a"), fine ("mon"), or invalid ("A", ""), mixed with anything else.
_governance = st.fixed_dictionaries(
    {},
    optional={
        "enforce": st.booleans() | _values,
        "exemptNamespaces": st.lists(st.sampled_from(["a", "mon", "A", ""]) | _values, max_size=3) | _values,
    },
)


@settings(max_examples=200, deadline=None)
@given(
    pools=st.lists(_pool, max_size=3) | _values,
    teams=st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "b", "A"]), "share": st.integers(-5, 120) | _values},
            optional={"pools": _values},
        ),
        max_size=3,
    )
    | _values,
    cluster=_values,
    kueue=_values,
    governance=_values | _governance,
)
def test_any_input_gives_a_config_or_a_config_error(
    pools: Any, teams: Any, cluster: Any, kueue: Any, governance: Any
) -> None:
    """Whatever the YAML holds, the user sees a StackConfig or a ConfigError, never a traceback."""
    raw = {"nodePools": pools, "teams": teams, "cluster": cluster, "kueue": kueue, "governance": governance}
    try:
        cfg = parse_raw(raw)
    except ConfigError as err:
        assert err.problems and all(p.path.startswith("kueue-aks:") for p in err.problems)
    else:
        assert sum(t.share for t in cfg.teams) <= 100
        assert all(p.max_count >= max(1, p.min_count) for p in cfg.node_pools)
        assert all(p.min_count == p.max_count for p in cfg.node_pools if p.topology)
        assert all(p.governed == cfg.governance.enforce for p in cfg.node_pools)
        assert not {t.name for t in cfg.teams} & set(cfg.governance.exempt)  # a team is never exempt
