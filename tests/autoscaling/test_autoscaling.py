"""Pools that autoscale with ProvisioningRequest: the Kueue objects, their wiring, and the order
that lets Kueue see the ProvisioningRequest API when it starts. Behaviour on the real autoscaler
and Kueue: tests/e2e/platform/test_autoscaler.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.autoscaling.component import PROVISIONING_REQUEST_CRD
from components.kueue.objects import ATOMIC_SCALE_UP, ATOMIC_SCALE_UP_CLASS, ATOMIC_SCALE_UP_GPU, build_objects
from components.kueue.validate import check_objects
from testbed.harness import ProgramRun, run_program
from testbed.stacks import load_stack

CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


@pytest.fixture(scope="module")
def dev_run(dev_config_map_module: dict[str, Any]) -> ProgramRun:
    return run_program(dev_config_map_module)


@pytest.fixture(scope="module")
def dev_config_map_module() -> dict[str, Any]:
    import yaml

    from testbed.harness import ROOT

    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_dev_stack_checks_gpu_and_topology_pools(dev_config_map_module: dict[str, Any]) -> None:
    objects = build_objects(load_stack(dev_config_map_module))
    configs = by_kind(objects, "ProvisioningRequestConfig")
    assert set(configs) == {ATOMIC_SCALE_UP, ATOMIC_SCALE_UP_GPU}
    for name, prc in configs.items():
        assert prc["spec"]["provisioningClassName"] == ATOMIC_SCALE_UP_CLASS
        # Only the GPU pods of a job on a GPU pool: its CPU pods go elsewhere, and one request
        # must fit one node group.
        assert prc["spec"]["managedResources"] == (["nvidia.com/gpu"] if name == ATOMIC_SCALE_UP_GPU else [])
        assert prc["spec"]["retryStrategy"]["backoffLimitCount"] == 3
    checks = by_kind(objects, "AdmissionCheck")
    assert {n: c["spec"]["parameters"]["name"] for n, c in checks.items()} == {n: n for n in configs}
    assert {c["spec"]["controllerName"] for c in checks.values()} == {"kueue.x-k8s.io/provisioning-request"}
    queues = by_kind(objects, "ClusterQueue")
    strategy = {n: q["spec"].get("admissionChecksStrategy") for n, q in queues.items()}
    for team in ("research", "platform"):
        # The check applies on the flavors that need it, never on the CPU pool's.
        assert strategy[team] == {"admissionChecks": [{"name": ATOMIC_SCALE_UP_GPU, "onFlavors": ["gpu"]}]}
        assert strategy[f"{team}-topology"] == {"admissionChecks": [{"name": ATOMIC_SCALE_UP, "onFlavors": ["tas"]}]}
    check_objects(objects, crds=None)


def test_no_provisioning_objects_without_a_pool_that_uses_them(dev_config_map_module: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map_module)
    for pool in config["kueue-aks:nodePools"]:
        if pool["name"] == "gpu":
            pool["provisioningRequest"] = False
        if pool["name"] == "tas":
            pool.update(minCount=1, maxCount=1, provisioningRequest=False)
    objects = build_objects(load_stack(config))
    assert not by_kind(objects, "ProvisioningRequestConfig") and not by_kind(objects, "AdmissionCheck")
    assert all("admissionChecksStrategy" not in q["spec"] for q in by_kind(objects, "ClusterQueue").values())
    run = run_program(config)
    assert not [r for r in run.registrations if r.type == CRD_TYPE and r.read_id]


def test_kueue_starts_after_the_provisioning_request_api_is_there(dev_run: ProgramRun) -> None:
    (crd,) = [r for r in dev_run.registrations if r.type == CRD_TYPE and r.read_id == PROVISIONING_REQUEST_CRD]
    # Read, never created: the CRD is the platform's (AKS's autoscaler), not the stack's.
    assert not [
        r
        for r in dev_run.registrations
        if r.type == CRD_TYPE and not r.read_id and r.inputs.get("metadata", {}).get("name") == PROVISIONING_REQUEST_CRD
    ]
    pools = {r.name: r.urn for r in dev_run.of_type("azure-native:containerservice:AgentPool")}
    # After the autoscaled pools that use it (creating them turns AKS's autoscaler on)...
    assert set(crd.dependencies) == {pools["kueue-gpu"], pools["kueue-tas"]}
    assert crd.provider.startswith(dev_run.one("pulumi:providers:kubernetes").urn)
    # ...and before Kueue, which looks for the API only when it starts.
    release = dev_run.one("kubernetes:helm.sh/v3:Release", "kueue-release")
    assert crd.urn in release.dependencies


def test_kueue_objects_for_provisioning_are_registered(dev_run: ProgramRun) -> None:
    checks = {r.inputs["metadata"]["name"]: r for r in dev_run.of_type(KUEUE + "AdmissionCheck")}
    configs = {r.inputs["metadata"]["name"]: r for r in dev_run.of_type(KUEUE + "ProvisioningRequestConfig")}
    assert set(checks) == set(configs) == {ATOMIC_SCALE_UP, ATOMIC_SCALE_UP_GPU}
    for name, check in checks.items():
        assert configs[name].urn in check.dependencies  # the check names its config
    research = next(r for r in dev_run.of_type(KUEUE + "ClusterQueue") if r.inputs["metadata"]["name"] == "research")
    assert checks[ATOMIC_SCALE_UP_GPU].urn in research.dependencies
