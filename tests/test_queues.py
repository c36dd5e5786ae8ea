"""KueueQueues under mocks: explicit names, provider, readiness, reference ordering, outputs."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from components import queues
from tests.harness import ProgramRun, Registration, run_program

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


@pytest.fixture(scope="module")
def dev_run(request: pytest.FixtureRequest) -> ProgramRun:
    import yaml

    return run_program(yaml.safe_load(open("Pulumi.dev.yaml"))["config"])


def kueue_objects(run: ProgramRun) -> list[Registration]:
    return [r for r in run.registrations if r.type.startswith(KUEUE)]


def named(run: ProgramRun, kind: str, name: str, namespace: str | None = None) -> Registration:
    found = [r for r in run.of_type(KUEUE + kind) if r.inputs["metadata"]["name"] == name
             and r.inputs["metadata"].get("namespace") == namespace]
    assert len(found) == 1, (kind, name, namespace)
    return found[0]


def test_every_object_is_created_with_its_explicit_name_through_the_cluster_provider(dev_run: ProgramRun) -> None:
    objects = kueue_objects(dev_run)
    assert {r.type.removeprefix(KUEUE) for r in objects} == {
        "Topology", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
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
    assert {r["name"]: r["nominalQuota"] for r in gpu["resources"]}["nvidia.com/gpu"] == 1


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
        assert {urn("ResourceFlavor", "cpu"), urn("ResourceFlavor", "gpu"), urn("Cohort", "teams")} <= set(cq.dependencies)
    assert {urn("ResourceFlavor", "cpu"), urn("ResourceFlavor", "gpu")} <= set(named(dev_run, "Cohort", "teams").dependencies)


def test_flavor_depends_on_its_topology(dev_run: ProgramRun) -> None:
    topology = named(dev_run, "Topology", "default")
    assert topology.urn in named(dev_run, "ResourceFlavor", "cpu").dependencies  # the dev cpu pool is topology-aware
    assert topology.urn not in named(dev_run, "ResourceFlavor", "gpu").dependencies


def test_no_topology_without_a_topology_aware_pool(dev_config_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map)
    config["kueue-aks:nodePools"][0].update(topology=False, minCount=0)
    run = run_program(config)
    assert run.of_type(KUEUE + "Topology") == []
    assert "topologyName" not in named(run, "ResourceFlavor", "cpu").inputs["spec"]


def test_team_namespaces_do_not_wait_for_or_belong_to_the_release(dev_run: ProgramRun) -> None:
    release = dev_run.one("kubernetes:helm.sh/v3:Release", "kueue-release")
    component = dev_run.one("kueue-aks:queues:KueueQueues")
    for ns in dev_run.of_type("kubernetes:core/v1:Namespace"):
        if ns.inputs["metadata"]["name"] in ("research", "platform"):
            assert release.urn not in ns.dependencies
            assert ns.parent == component.urn
            assert ns.inputs["metadata"]["labels"]["kueue-aks.io/managed"] == "true"


def test_stack_exports_where_to_submit_and_how_much(dev_run: ProgramRun) -> None:
    assert dev_run.exports["localQueues"] == {"research": "research/default", "platform": "platform/default"}
    rows = {(r["flavor"], r["resource"]): r for r in dev_run.exports["quotaTable"]}
    gpu = rows[("gpu", "nvidia.com/gpu")]
    assert (gpu["capacity"], gpu["teams"], gpu["cohortShared"]) == (3, {"research": 1, "platform": 1}, 1)
    assert all(r["nominalQuotaTotal"] + r["cohortShared"] == r["capacity"] for r in rows.values())


def test_invalid_objects_stop_the_program_before_any_resource(dev_config_map: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real = queues.build_objects

    def broken(config: Any) -> list[dict[str, Any]]:
        objects = real(config)
        lq = next(o for o in objects if o["kind"] == "LocalQueue")
        lq["spec"]["clusterQueue"] = "nobody"
        return objects

    monkeypatch.setattr(queues, "build_objects", broken)
    with pytest.raises(pulumi.RunError) as err:
        run_program(dev_config_map)
    assert "LocalQueue/research/default" in str(err.value) and "nobody" in str(err.value)
    from pulumi.runtime.settings import SETTINGS

    assert SETTINGS.monitor.registrations == []
