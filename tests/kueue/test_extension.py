"""`kueue.install: aksExtension` under Pulumi mocks: what the program registers instead of the Helm
release, and the config errors that name the key. The same stacks on the real control plane:
tests/e2e/engine/test_extension.py; the extension found by Azure: tests/preflight."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config.names import KUEUE_NAMESPACE
from components.config.parse import parse_config, raw_from_stack_file
from components.kueue.policies import priority_class_guard
from components.kueue.values import kueue_frameworks
from components.facts.kueue_versions import AKS_PRIORITY_CLASSES
from testbed.config_errors import refused
from testbed.harness import ProgramRun, run_program
from testbed.kube_fake import extension_cluster
from testbed.stacks import extension_stack, load_stack, stack_file_config

EXTENSION = "azure-native:kubernetesconfiguration:Extension"
RELEASE = "kubernetes:helm.sh/v3:Release"
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://k.invalid'}}]\n"
    "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n"
)


def kubeconfig_stack(install: str) -> dict[str, Any]:
    config = {
        k: v
        for k, v in stack_file_config().items()
        if k not in ("azure-native:location", "kueue-aks:cluster", "kueue-aks:monitoring")
    }
    return {**config, "kueue-aks:cluster": {"kubeconfig": KUBECONFIG}, "kueue-aks:kueue": {"install": install}}


@pytest.fixture(scope="module")
def create_run() -> ProgramRun:
    return run_program(extension_stack())


def test_create_registers_one_pinned_extension_and_no_kueue_release(create_run: ProgramRun) -> None:
    extension = create_run.one(EXTENSION)
    print(extension.inputs)
    assert extension.inputs["extensionType"] == "microsoft.kueue"
    assert extension.inputs["extensionName"] == "kueue"
    assert extension.inputs["version"] == "0.19.6-aks.0.4.4"
    assert extension.inputs["autoUpgradeMinorVersion"] is False
    # No release train: the ARM spec applies one only while autoUpgradeMinorVersion is true
    # (Azure/azure-rest-api-specs …/extensions/stable/2025-03-01/extensions.json), and the SDK would send
    # Stable by default.
    assert "releaseTrain" not in extension.inputs
    assert extension.inputs["scope"] == {"cluster": {"releaseNamespace": KUEUE_NAMESPACE}}
    assert (extension.inputs["clusterRp"], extension.inputs["clusterResourceName"]) == (
        "Microsoft.ContainerService",
        "managedClusters",
    )
    releases = [r.name for r in create_run.of_type(RELEASE)]
    assert "kueue-release" not in releases, releases
    assert create_run.exports["kueueVersion"] == "0.19.6"
    assert create_run.exports["kueueNamespace"] == KUEUE_NAMESPACE


def test_the_extension_stack_is_told_how_to_pin_the_auto_upgrade_mode(caplog: pytest.LogCaptureFixture) -> None:
    # API 2023-05-01 has no autoUpgradeMode; the docs pin it with --auto-upgrade-mode none (docs/azure-rules.md).
    run_program(extension_stack())
    said = [r.getMessage() for r in caplog.records if "auto-upgrade mode" in r.getMessage()]
    assert len(said) == 1 and "--name kueue --auto-upgrade-mode none" in said[0], said
    caplog.clear()
    run_program(kubeconfig_stack("aksExtension"), cluster=extension_cluster())  # the cluster's own: not ours to pin
    assert not [r for r in caplog.records if "auto-upgrade mode" in r.getMessage()]


def test_the_queues_wait_for_the_extension(create_run: ProgramRun) -> None:
    extension = create_run.one(EXTENSION)
    flavors = create_run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavors and all(extension.urn in f.dependencies for f in flavors), [f.dependencies for f in flavors]


def test_kubeconfig_mode_uses_the_clusters_extension_and_creates_none() -> None:
    run = run_program(kubeconfig_stack("aksExtension"), cluster=extension_cluster())
    assert not run.of_type(EXTENSION)
    assert "kueue-release" not in [r.name for r in run.of_type(RELEASE)]
    assert run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")


def test_a_helm_stack_on_the_extension_stops_before_any_resource() -> None:
    with pytest.raises(Exception) as err:
        run_program(kubeconfig_stack("helm"), cluster=extension_cluster())
    print(err.value)
    assert "kueue-aks:kueue.install" in str(err.value) and "AKS's managed Kueue extension" in str(err.value)


@pytest.mark.parametrize(
    "key, value",
    [
        ("version", "0.19.2"),
        ("featureGates", {"TopologyAwareScheduling": True}),
        ("replicas", 1),
        ("chart", "oci://example.com/kueue"),
        ("imageRepository", "example.azurecr.io/kueue/kueue"),
    ],
)
def test_what_the_extension_sets_itself_is_an_error_naming_the_key(key: str, value: Any) -> None:
    found = refused(load_stack, extension_stack(**{key: value})).by_path
    assert f"kueue-aks:kueue.{key}" in found, found
    assert "install: helm" in found[f"kueue-aks:kueue.{key}"]


def test_frameworks_beyond_the_extensions_kinds_are_refused() -> None:
    found = refused(load_stack, extension_stack(frameworks=["batch/job", "kubeflow.org/pytorchjob"])).by_path
    assert (
        "kueue-aks:kueue.frameworks[1]" in found
        and "batch/job, jobset.x-k8s.io/jobset, ray.io/rayjob" in found["kueue-aks:kueue.frameworks[1]"]
    )


def test_region_and_kubernetes_version_are_checked() -> None:
    config = extension_stack()
    config["azure-native:location"] = "eastus2"
    config["kueue-aks:cluster"]["kubernetesVersion"] = "1.33"
    found = refused(load_stack, config).by_path
    assert (
        "eastus2" in found["azure-native:location"]
        and "centralus, eastus, westus, westus2" in found["azure-native:location"]
    )
    assert "1.34" in found["kueue-aks:cluster.kubernetesVersion"]
    del config["kueue-aks:cluster"]["kubernetesVersion"]
    assert "is required" in refused(load_stack, config).by_path["kueue-aks:cluster.kubernetesVersion"]


def test_a_multikueue_manager_cannot_use_the_extension() -> None:
    config = extension_stack()
    config["kueue-aks:multiKueue"] = {"role": "manager", "workers": [{"name": "w1", "stack": "org/kueue-aks/w1"}]}
    config.pop("kueue-aks:nodePools")
    assert "MultiKueue manager" in refused(load_stack, config).by_path["kueue-aks:kueue.install"]


def test_extension_version_needs_the_extension() -> None:
    config = copy.deepcopy(stack_file_config())
    config["kueue-aks:kueue"] = {"extensionVersion": "0.19.6-aks.0.4.4"}
    assert "install: aksExtension" in refused(load_stack, config).by_path["kueue-aks:kueue.extensionVersion"]


def test_the_extensions_kinds_and_priority_classes_shape_governance() -> None:
    raw, location = raw_from_stack_file({"config": extension_stack()})
    config = parse_config(raw, stack="dev", location=location)
    assert "pod" not in kueue_frameworks(config)  # the extension enables no pod integration
    allowed = priority_class_guard(config)[0]["spec"]["validations"][0]["expression"]
    assert all(f"'{name}'" in allowed for name in AKS_PRIORITY_CLASSES), allowed
    helm = parse_config(*[raw_from_stack_file({"config": stack_file_config()})[0]], stack="dev", location="eastus2")
    assert "aks-high-priority" not in priority_class_guard(helm)[0]["spec"]["validations"][0]["expression"]


def test_an_existing_clusters_region_and_version_are_left_to_the_preflight() -> None:
    """azure-native:location need not be the cluster's own region; the preflight reads the cluster
    (tests/preflight/test_extensions.py)."""
    config = copy.deepcopy(stack_file_config())
    config["azure-native:location"] = "eastus2"
    config["kueue-aks:cluster"] = {"existing": {"resourceGroup": "rg", "name": "aks1"}}
    config["kueue-aks:kueue"] = {"install": "aksExtension"}
    config.pop("kueue-aks:monitoring", None)
    raw, location = raw_from_stack_file({"config": config})
    assert parse_config(raw, stack="dev", location=location).kueue.extension is not None
