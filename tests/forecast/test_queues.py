"""What the simulator reads of a stack (components/forecast/queues.py): the dev stack's built Kueue
objects and manager configuration, and every setting it does not model becoming a reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.forecast.forecast import stack_queues
from components.forecast.queues import Quota, Queues, amount, read_queues
from components.kueue.objects import queue_set
from components.kueue.values import manager_config
from testbed.stacks import load_stack


@pytest.fixture
def dev(dev_config_map: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    config = load_stack(dev_config_map)
    return queue_set(config).objects, manager_config(config)


def cluster_queue(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == name)


def test_the_dev_stack_reads_as_its_objects_say(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    queues = stack_queues(config, queue_set(config))
    assert queues.reasons == ()
    research = queues.cluster_queue("research")
    assert research.flavors == ("cpu", "gpu") and research.cohort == "teams" and research.weight == 0.6
    assert research.quotas[("gpu", "nvidia.com/gpu")] == Quota(1)
    assert research.quotas[("cpu", "cpu")] == Quota(18768)  # millicores
    assert research.quotas[("gpu", "memory")] == Quota(47379)  # MiB
    assert (research.within_cluster_queue, research.reclaim_within_cohort) == ("LowerPriority", "Any")
    assert (research.when_can_borrow, research.when_can_preempt) == ("MayStopSearch", "TryNextFlavor")
    assert not research.topology_only and queues.cluster_queue("research-topology").topology_only
    assert queues.cohorts["teams"][("gpu", "nvidia.com/gpu")] == 1  # the spare GPU any team may borrow
    assert queues.local_queues[("platform", "topology")] == "platform-topology"
    assert queues.priorities == {"high": 1000, "normal": 0, "low": -1000}
    assert queues.strategies == ("LessThanOrEqualToFinalShare",)
    assert queues.topology_flavors == {"tas"}
    assert any("ProvisioningRequest" in n for n in queues.notes)  # the gpu and tas pools' checks


def test_teams_queues_and_priorities_are_what_a_trace_is_checked_against(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    queues = stack_queues(config, queue_set(config))
    assert queues.teams == {"research": ("default", "topology"), "platform": ("default", "topology")}


def test_quantities_are_read_in_the_simulators_units() -> None:
    assert [amount("cpu", "500m"), amount("cpu", "2"), amount("cpu", "1500u")] == [500, 2000, 2]  # rounded up
    assert [amount("memory", "1Gi"), amount("memory", "1G"), amount("nvidia.com/gpu", "3")] == [1024, 954, 3]


def test_limits_and_weights_come_from_the_cluster_queues(dev: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, manager = dev
    research = cluster_queue(objects, "research")
    gpu = next(f for f in research["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    gpu["resources"][-1].update(borrowingLimit="2", lendingLimit="0")
    del research["spec"]["fairSharing"]
    read = read_queues(objects, manager).cluster_queue("research")
    assert read.quotas[("gpu", "nvidia.com/gpu")] == Quota(1, 2, 0)
    assert read.weight == 1.0  # Kueue's default weight


def changed(objects: list[dict[str, Any]], name: str, **spec: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(objects)
    cluster_queue(out, name)["spec"].update(spec)
    return out


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"queueingStrategy": "StrictFIFO"}, "ClusterQueue 'research': queueingStrategy StrictFIFO is not modelled"),
        ({"stopPolicy": "Hold"}, "ClusterQueue 'research' is stopped (stopPolicy Hold)"),
        (
            {"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}},
            "ClusterQueue 'research': borrowWithinCohort LowerPriority is not modelled",
        ),
        (
            {"preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority"}},
            "ClusterQueue 'research': withinClusterQueue LowerOrNewerEqualPriority is not modelled",
        ),
        (
            {"flavorFungibility": {"preference": "PreemptionOverBorrowing"}},
            "ClusterQueue 'research': flavorFungibility {'preference': 'PreemptionOverBorrowing'} is not modelled",
        ),
        (
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "multikueue"}]}},
            "ClusterQueue 'research': admission check 'multikueue' (None) is not modelled",
        ),
    ],
)
def test_what_a_cluster_queue_sets_beyond_the_model_is_a_reason(
    dev: tuple[list[dict[str, Any]], dict[str, Any]], spec: dict[str, Any], reason: str
) -> None:
    objects, manager = dev
    assert read_queues(objects, manager).reasons == ()
    assert read_queues(changed(objects, "research", **spec), manager).reasons == (reason,)


def test_two_resource_groups_and_a_cohort_with_a_parent_are_reasons(
    dev: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    objects, manager = dev
    groups = cluster_queue(objects, "platform")["spec"]["resourceGroups"]
    two = changed(objects, "platform", resourceGroups=[*groups, copy.deepcopy(groups[0])])
    assert read_queues(two, manager).reasons == (
        "ClusterQueue 'platform' has 2 resource groups; the simulator models one",
    )
    nested = copy.deepcopy(objects)
    next(o for o in nested if o["kind"] == "Cohort")["spec"]["parentName"] = "org"
    assert read_queues(nested, manager).reasons == (
        "Cohort 'teams' has a parent: hierarchical cohorts are not modelled",
    )


def test_kueues_configuration_beyond_the_model_is_a_reason(dev: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, manager = dev
    assert read_queues(objects, None).reasons == (
        "Kueue's manager configuration is not the stack's to read (AKS's managed extension sets its own)",
    )
    without = {k: v for k, v in manager.items() if k != "fairSharing"}
    assert read_queues(objects, without).reasons == (
        "fair sharing is off: Kueue's classical preemption is not modelled",
    )
    default = read_queues(objects, {**manager, "fairSharing": {}})
    assert default.reasons == () and default.strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    assert read_queues(objects, {**manager, "admissionFairSharing": {"usageHalfLifeTime": "1h"}}).reasons == (
        "admission fair sharing (LocalQueue usage) is not modelled",
    )
    assert read_queues(objects, {**manager, "waitForPodsReady": {"timeout": "5m"}}).reasons == (
        "waitForPodsReady is not modelled: the simulator has no pods",
    )
    assert read_queues(
        objects, manager, {"FairSharingPreemptWithinNominal": False, "LocalQueueMetrics": True}
    ).reasons == ("feature gate FairSharingPreemptWithinNominal=false (Kueue 0.19.2's default is the other way)",)
    multikueue = [*objects, {"kind": "MultiKueueConfig", "metadata": {"name": "workers"}, "spec": {"clusters": []}}]
    assert read_queues(multikueue, manager).reasons[0] == (
        "a MultiKueue manager's queues dispatch to worker clusters, which are not simulated"
    )


def test_an_extension_stack_is_not_forecast(dev_config_map: dict[str, Any]) -> None:
    """AKS's managed Kueue extension runs its own manager configuration: its fair sharing is not the stack's."""
    extension = {
        **dev_config_map,
        "azure-native:location": "eastus",
        "kueue-aks:kueue": {"install": "aksExtension"},
        "kueue-aks:cluster": {**dev_config_map["kueue-aks:cluster"], "kubernetesVersion": "1.34"},
    }
    config = load_stack(extension)
    queues: Queues = stack_queues(config, queue_set(config))
    assert queues.reasons == (
        "Kueue's manager configuration is not the stack's to read (AKS's managed extension sets its own)",
    )
