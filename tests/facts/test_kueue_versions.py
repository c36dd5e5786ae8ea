"""components/facts/kueue_versions.py against Kueue's own data for each supported release kept in
../shared (kueue/v<version>/).

Each release's gate table must equal what its versioned_feature_list.yaml says is in force at its
minor version (stage, default, lockToDefault), and its removed set must equal its
removed_feature_list.yaml, so a gate that config validation accepts is one that release starts with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from components.facts import kueue_versions
from components.config.kueue import DEFAULT_FEATURE_GATES, DEFAULT_FRAMEWORKS
from components.facts.kueue_versions import Gate, KueueRelease
from testbed.upstream import VERSION, kueue_data, minor, upstream_gates, upstream_removed

VERSIONS = sorted(kueue_versions.RELEASES)
# Gates each release defines (kubernetes-sigs/kueue pkg/features/kube_features.go at the tag).
GATE_COUNTS = {"0.18.4": 74, "0.19.2": 89}
# The locked gates: GA ones and the locked Deprecated ones, per versioned_feature_list.yaml.
LOCKED = {
    "0.18.4": {
        "HierarchicalCohorts",
        "ObjectRetentionPolicies",
        "PropagateBatchJobLabelsToWorkload",
        "SkipFinalizersForPodsSuspendedByParent",
        "MultiKueueWaitForWorkloadAdmitted",
        "MultiKueueRedoAdmissionOnEvictionInWorker",
        "MultiKueueBatchJobWithManagedBy",
        "LendingLimit",
        "LocalQueueDefaulting",
        "SanitizePodSets",
        "DRAExtendedResources",
        "DynamicResourceAllocation",
    },
    "0.19.2": {
        "HierarchicalCohorts",
        "ObjectRetentionPolicies",
        "ManagedJobsNamespaceSelectorAlwaysRespected",
        "PropagateBatchJobLabelsToWorkload",
        "SkipFinalizersForPodsSuspendedByParent",
        "MultiKueueWaitForWorkloadAdmitted",
        "MultiKueueRedoAdmissionOnEvictionInWorker",
        "MultiKueueAllowInsecureKubeconfigs",
    },
}


def chart_frameworks(release: str = VERSION) -> set[str]:
    """Every framework the chart's default config names, enabled or commented out."""
    text = yaml.safe_load((kueue_data(release) / "values.yaml").read_text())["managerConfig"][
        "controllerManagerConfigYaml"
    ]
    section = text.split("integrations:", 1)[1].split("externalFrameworks", 1)[0]
    return set(re.findall(r'^\s*#?\s*- "([^"]+)"', section, re.M))


def gate_differences(table: Mapping[str, Gate], upstream: Mapping[str, Gate]) -> list[str]:
    problems = [f"{name}: not in upstream list" for name in sorted(set(table) - set(upstream))]
    problems += [f"{name}: missing from table" for name in sorted(set(upstream) - set(table))]
    problems += [
        f"{name}: table {table[name]} != upstream {upstream[name]}"
        for name in sorted(set(table) & set(upstream))
        if table[name] != upstream[name]
    ]
    return problems


@pytest.fixture(scope="module", params=VERSIONS)
def release(request: pytest.FixtureRequest) -> KueueRelease:
    return kueue_versions.RELEASES[request.param]


def test_default_version_is_a_release_with_data() -> None:
    assert kueue_versions.DEFAULT_VERSION == VERSION
    assert VERSIONS == sorted(GATE_COUNTS) == sorted(LOCKED) == ["0.18.4", "0.19.2"]
    assert all((kueue_data(v) / "featuregates").is_dir() for v in VERSIONS)


def test_each_release_is_its_charts_version(release: KueueRelease) -> None:
    chart = yaml.safe_load((kueue_data(release.version) / "Chart.yaml").read_text())
    assert chart["version"] == release.version
    assert chart["appVersion"] == f"v{release.version}"


def test_gate_table_matches_upstream_list(release: KueueRelease) -> None:
    upstream = upstream_gates(release.version)
    assert len(upstream) == GATE_COUNTS[release.version]
    assert gate_differences(release.gates, upstream) == []


def test_removed_gates_match_upstream_list(release: KueueRelease) -> None:
    assert release.removed_gates == upstream_removed(release.version)
    assert not release.removed_gates & set(release.gates)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda g: {**g, "LocalQueueMetrics": Gate("Alpha", False)},  # wrong stage and default
        lambda g: {**g, "HierarchicalCohorts": Gate("GA", True, locked=False)},  # lost the lock
        lambda g: {k: v for k, v in g.items() if k != "TopologyAwareScheduling"},  # missing
        lambda g: {**g, "QueueVisibility": Gate("GA", True)},  # a removed gate
    ],
)
def test_gate_comparison_catches_a_wrong_table(release: KueueRelease, tamper: Any) -> None:
    assert gate_differences(tamper(dict(release.gates)), upstream_gates(release.version))


def test_locked_gates_are_the_ga_and_locked_deprecated_ones(release: KueueRelease) -> None:
    locked = {name for name, gate in release.gates.items() if gate.locked}
    assert locked == LOCKED[release.version]
    # The opt-in namespace selector applies to every integration only while this gate is on:
    # locked on from 0.19, on by default (but not locked) in 0.18.
    expected = Gate("GA", True, locked=True) if minor(release.version) >= (0, 19) else Gate("Beta", True)
    assert release.gates["ManagedJobsNamespaceSelectorAlwaysRespected"] == expected


def test_tas_subgates_are_tas_gates_on_by_default(release: KueueRelease) -> None:
    for name in release.tas_subgates:
        assert name.startswith("TAS") and release.gates[name].default, name


def test_default_gates_exist_and_are_not_locked_the_other_way(release: KueueRelease) -> None:
    for name, on in DEFAULT_FEATURE_GATES.items():
        gate = release.gates[name]
        assert not (gate.locked and gate.default != on), name


def test_frameworks_cover_the_chart_and_the_defaults(release: KueueRelease) -> None:
    named = chart_frameworks(release.version)
    assert "batch/job" in named and "kubeflow.org/pytorchjob" in named  # parsed enabled and commented entries
    assert named <= release.frameworks
    assert set(DEFAULT_FRAMEWORKS) <= release.frameworks
    assert kueue_versions.POD_BASED_FRAMEWORKS <= release.frameworks


def test_upstream_parsing_picks_the_newest_spec_not_after_the_version() -> None:
    # ManagedJobsNamespaceSelectorAlwaysRespected went Alpha 0.13, Beta 0.15, GA+locked 0.19.
    assert upstream_gates(at="0.14.0")["ManagedJobsNamespaceSelectorAlwaysRespected"] == Gate("Alpha", False)
    assert upstream_gates(at="0.18.0")["ManagedJobsNamespaceSelectorAlwaysRespected"] == Gate("Beta", True)
    assert upstream_gates()["ManagedJobsNamespaceSelectorAlwaysRespected"] == Gate("GA", True, locked=True)
