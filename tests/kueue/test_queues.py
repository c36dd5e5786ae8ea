"""KueueQueues under mocks: explicit names, provider, readiness, reference ordering, outputs."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from components.kueue import objects as builders
from components.kueue import queues
from testbed.harness import ProgramRun, Registration, run_program
from testbed.stacks import load_stack

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


@pytest.fixture(scope="module")
def dev_run(request: pytest.FixtureRequest) -> ProgramRun:
    import yaml

    return run_program(yaml.safe_load(open("Pulumi.dev.yaml"))["config"])


def kueue_objects(run: ProgramRun) -> list[Registration]:
    return [r for r in run.registrations if r.type.startswith(KUEUE)]


def named(run: ProgramRun, kind: str, name: str, namespace: str | None = None) -> Registration:
    found = [
        r
        for r in run.of_type(KUEUE + kind)
        if r.inputs["metadata"]["name"] == name and r.inputs["metadata"].get("namespace") == namespace
    ]
    assert len(found) == 1, (kind, name, namespace)
    return found[0]


def test_every_object_is_created_with_its_explicit_name_through_the_cluster_provider(dev_run: ProgramRun) -> None:
    objects = kueue_objects(dev_run)
    assert {r.type.removeprefix(KUEUE) for r in objects} == {
        "Topology",
        "ResourceFlavor",
        "Cohort",
        "ClusterQueue",
        "LocalQueue",
        "WorkloadPriorityClass",
        "ProvisioningRequestConfig",
        "AdmissionCheck",
    }
    provider = dev_run.one("pulumi:providers:kubernetes")
    for r in objects:
        assert r.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert r.inputs["metadata"]["name"]
        assert r.provider.startswith(provider.urn)


def test_objects_are_what_the_builders_made(dev_run: ProgramRun) -> None:
    wpc = named(dev_run, "WorkloadPriorityClass", "high")
    assert wpc.inputs["value"] == 1000 and "spec" not in wpc.inputs
    cq = named(dev_run, "ClusterQueue", "research")
    assert cq.inputs["spec"]["cohortName"] == "teams"
    gpu = next(f for f in cq.inputs["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    assert {r["name"]: r["nominalQuota"] for r in gpu["resources"]}["nvidia.com/gpu"] == "1"


def test_every_kueue_object_waits_for_kueue(dev_run: ProgramRun) -> None:
    release = dev_run.one("kubernetes:helm.sh/v3:Release", "kueue-release")
    for r in kueue_objects(dev_run):
        assert release.urn in r.dependencies, r.name


def test_each_object_depends_on_what_it_references(dev_run: ProgramRun) -> None:
    def urn(kind: str, name: str) -> str:
        return named(dev_run, kind, name).urn

    for team in ("research", "platform"):
        lq = named(dev_run, "LocalQueue", "default", team)
        ns = next(r for r in dev_run.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == team)
        assert {urn("ClusterQueue", team), ns.urn} <= set(lq.dependencies)
        cq = named(dev_run, "ClusterQueue", team)
        assert {urn("ResourceFlavor", "cpu"), urn("ResourceFlavor", "gpu"), urn("Cohort", "teams")} <= set(
            cq.dependencies
        )
        # The team's second pair: LocalQueue `topology` -> ClusterQueue `<team>-topology` -> flavor tas.
        topology_lq = named(dev_run, "LocalQueue", "topology", team)
        assert {urn("ClusterQueue", f"{team}-topology"), ns.urn} <= set(topology_lq.dependencies)
        topology_cq = named(dev_run, "ClusterQueue", f"{team}-topology")
        assert {urn("ResourceFlavor", "tas"), urn("Cohort", "teams")} <= set(topology_cq.dependencies)
        # The namespace after the team's queues, so that destroy takes it (and its jobs) first.
        assert set(ns.dependencies) >= {cq.urn, topology_cq.urn}
        other = "platform" if team == "research" else "research"
        assert urn("ClusterQueue", other) not in ns.dependencies
    assert {urn("ResourceFlavor", "cpu"), urn("ResourceFlavor", "gpu"), urn("ResourceFlavor", "tas")} <= set(
        named(dev_run, "Cohort", "teams").dependencies
    )


def test_flavor_depends_on_its_topology(dev_run: ProgramRun) -> None:
    topology = named(dev_run, "Topology", "default")
    assert topology.urn in named(dev_run, "ResourceFlavor", "tas").dependencies  # the dev tas pool is topology-aware
    assert topology.urn not in named(dev_run, "ResourceFlavor", "cpu").dependencies
    assert topology.urn not in named(dev_run, "ResourceFlavor", "gpu").dependencies


def test_no_topology_without_a_topology_aware_pool(dev_config_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map)
    next(p for p in config["kueue-aks:nodePools"] if p["name"] == "tas").update(topology=False)
    run = run_program(config)
    assert run.of_type(KUEUE + "Topology") == []
    assert "topologyName" not in named(run, "ResourceFlavor", "tas").inputs["spec"]
    # Without a topology-aware pool a team has one ClusterQueue and only LocalQueue `default`.
    assert sorted(r.inputs["metadata"]["name"] for r in run.of_type(KUEUE + "ClusterQueue")) == ["platform", "research"]
    assert run.exports["localQueues"] == {
        team: {
            "default": {"clusterQueue": team, "topologyAware": False, "pools": ["cpu", "tas", "gpu"]}
        }  # flavor order
        for team in ("research", "platform")
    }


def test_team_namespaces_depend_on_but_do_not_belong_to_the_release(dev_run: ProgramRun) -> None:
    # Not part of the Helm release (replacing Kueue never deletes them), but after it, so that
    # destroy deletes their jobs and Workloads while Kueue still clears the finalizers.
    release = dev_run.one("kubernetes:helm.sh/v3:Release", "kueue-release")
    component = dev_run.one("kueue-aks:queues:KueueQueues")
    teams = [
        ns
        for ns in dev_run.of_type("kubernetes:core/v1:Namespace")
        if ns.inputs["metadata"]["name"] in ("research", "platform")
    ]
    assert len(teams) == 2
    for ns in teams:
        assert release.urn in ns.dependencies
        assert ns.parent == component.urn
        assert ns.inputs["metadata"]["labels"]["kueue-aks.io/managed"] == "true"


def test_stack_exports_where_to_submit_and_how_much(dev_run: ProgramRun) -> None:
    # Per team: where to submit (namespace/LocalQueue), the ClusterQueue behind it and its pools.
    assert dev_run.exports["localQueues"] == {
        team: {
            "default": {"clusterQueue": team, "topologyAware": False, "pools": ["cpu", "gpu"]},
            "topology": {"clusterQueue": f"{team}-topology", "topologyAware": True, "pools": ["tas"]},
        }
        for team in ("research", "platform")
    }
    rows = {(r["flavor"], r["resource"]): r for r in dev_run.exports["quotaTable"]}
    # Flavor order: CPU pools (config order) first, then GPU; every covered resource of each.
    assert list(rows) == [(f, r) for f in ("cpu", "tas", "gpu") for r in ("cpu", "memory", "nvidia.com/gpu")]
    assert {f: rows[(f, "cpu")]["topologyAware"] for f in ("cpu", "tas", "gpu")} == {
        "cpu": False,
        "tas": True,
        "gpu": False,
    }
    gpu = rows[("gpu", "nvidia.com/gpu")]
    assert (gpu["capacity"], gpu["teams"], gpu["cohortShared"]) == (3, {"research": 1, "platform": 1}, 1)
    # One D8s_v5 node: 7820 m allocatable; 60 % -> 4692 m, 40 % -> 3128 m, in the -topology queues.
    tas = rows[("tas", "cpu")]
    assert (tas["unit"], tas["capacity"], tas["teams"], tas["cohortShared"]) == (
        "millicores",
        7820,
        {"research": 4692, "platform": 3128},
        0,
    )
    assert all(r["nominalQuotaTotal"] + r["cohortShared"] == r["capacity"] for r in rows.values())


def test_reports_show_which_queue_covers_which_pools() -> None:
    """A team with only topology-aware pools submits to `default` and `topology`, both feeding
    `<team>-topology`; a team with only ordinary pools has `default` alone."""
    config = load_stack(
        {
            "azure-native:location": "eastus2",
            "kueue-aks:nodePools": [
                {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
                {"name": "packed", "vmSize": "Standard_D4s_v5", "minCount": 2, "maxCount": 2, "topology": True},
            ],
            "kueue-aks:teams": [
                {"name": "web", "share": 40, "pools": ["cpu"]},
                {"name": "hpc", "share": 30, "pools": ["packed"]},
                {"name": "data", "share": 30},
            ],
        }
    )
    assert builders.local_queue_report(config) == {
        "web": {"default": {"clusterQueue": "web", "topologyAware": False, "pools": ["cpu"]}},
        "hpc": {
            "default": {"clusterQueue": "hpc-topology", "topologyAware": True, "pools": ["packed"]},
            "topology": {"clusterQueue": "hpc-topology", "topologyAware": True, "pools": ["packed"]},
        },
        "data": {
            "default": {"clusterQueue": "data", "topologyAware": False, "pools": ["cpu"]},
            "topology": {"clusterQueue": "data-topology", "topologyAware": True, "pools": ["packed"]},
        },
    }
    rows = {(r["flavor"], r["resource"]): r for r in queues.quota_report(builders.queue_set(config))}
    # Only the teams that use a pool hold quota in it; the cohort keeps the share of those that do not.
    # cpu, D8s_v5 x 2 = 15640 m: web 40 % -> 6256, data 30 % -> 4692, cohort (hpc's 30 %) 4692.
    # packed, D4s_v5 x 2 = 7720 m: hpc and data 30 % -> 2316 each, cohort (web's 40 %) 3088.
    assert [(f, r["topologyAware"], r["teams"], r["cohortShared"]) for (f, res), r in rows.items() if res == "cpu"] == [
        ("cpu", False, {"web": 6256, "data": 4692}, 4692),
        ("packed", True, {"hpc": 2316, "data": 2316}, 3088),
    ]


def test_invalid_objects_stop_the_program_before_any_resource(
    dev_config_map: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = builders.queue_set

    def broken(config: Any) -> Any:
        built = real(config)
        lq = next(o for o in built.objects if o["kind"] == "LocalQueue")
        lq["spec"]["clusterQueue"] = "nobody"
        return built

    monkeypatch.setattr(builders, "queue_set", broken)  # as __main__ imports it
    with pytest.raises(pulumi.RunError) as err:
        run_program(dev_config_map)
    assert "LocalQueue/research/default" in str(err.value) and "nobody" in str(err.value)
    from pulumi.runtime.settings import SETTINGS

    assert SETTINGS.monitor.registrations == []
