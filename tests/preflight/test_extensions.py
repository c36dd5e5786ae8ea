"""The preflight's read of the cluster's AKS extensions: AKS's managed Kueue and KubeRay extensions
against what the stack installs, on an existing cluster and on the cluster the stack made.

The program runs under mocks; the preflight's client reads a loopback HTTPS server (testbed/azure_fake.py)
where every pool fits, so only the extensions decide.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.preflight.arm import ArmClient, ProviderToken
from components.preflight.check import STACK_TAG, PreflightFailed, decide, read
from components.preflight.extensions import cluster_facts, parse_extensions
from testbed.azure_fake import SUBSCRIPTION, Failure, FakeArm, extension, generous, managed_cluster
from testbed.harness import PROVIDER_TOKEN, parsed_config, run_program
from testbed.loopback_tls import make_tls
from testbed.stacks import stack_file_config

DEV = stack_file_config("dev")
PROJECT_STACK = "kueue-aks/dev"
EXISTING = {"existing": {"resourceGroup": "their-rg", "name": "their-aks"}}
PINNED = "0.19.6-aks.0.4.4"
DELETE = (
    "az k8s-extension delete --resource-group their-rg --cluster-name their-aks --cluster-type managedClusters "
    "--name {} --yes"
)


def with_keys(base: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**base, **{f"kueue-aks:{k}": v for k, v in keys.items()}}


def existing(location: str = "eastus2", **keys: Any) -> dict[str, Any]:
    """The dev stack on the cluster their-rg/their-aks (monitoring off: it needs a workspace there)."""
    return {
        **with_keys(DEV, cluster=EXISTING, monitoring={"enabled": False}, **keys),
        "azure-native:location": location,
    }


def kueue_extension(name: str = "kueue", extension_type: str = "microsoft.kueue", **more: Any) -> dict[str, Any]:
    return extension(
        "their-rg",
        "their-aks",
        name,
        extension_type,
        version=PINNED,
        current_version=PINNED,
        namespace="kueue-system",
        **more,
    )


def kuberay_extension() -> dict[str, Any]:
    return extension(
        "their-rg",
        "their-aks",
        "kuberay",
        "microsoft.kuberay",
        version=None,
        current_version="1.4.2",
        namespace="kuberay-system",
    )


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_tls(tmp_path_factory.mktemp("azure-tls"))


@pytest.fixture
def azure(tls: tuple[Path, Path]) -> Iterator[FakeArm]:
    """Loopback Azure, empty; `fits` fills it for a config. The client points at it."""
    fake = FakeArm(*tls)
    with fake.serving():
        yield fake
    fake.stop()


def fits(azure: FakeArm, config_map: dict[str, Any], *extensions: dict[str, Any]) -> FakeArm:
    """Every pool of `config_map` fits; its existing cluster (their-rg/their-aks) has `extensions`."""
    config = parsed_config(config_map)
    assert config is not None
    azure.usages, azure.skus, azure.clusters = generous(config)
    azure.extensions = {"their-rg/their-aks": list(extensions)}
    return azure


def client() -> ArmClient:
    return ArmClient(ProviderToken(PROVIDER_TOKEN), SUBSCRIPTION, retries=2, timeout=2)


def problems(config_map: dict[str, Any]) -> list[str]:
    """What the preflight refuses, read through the real client."""
    config = parsed_config(config_map)
    assert config is not None
    try:
        decide(config, read(config, client(), PROJECT_STACK))
    except PreflightFailed as err:
        return [str(p) for p in err.problems]
    return []


def extension_reads(azure: FakeArm) -> list[str]:
    return [path for path, _ in azure.requests if "/providers/Microsoft.KubernetesConfiguration/extensions" in path]


# --- AKS's managed Kueue extension -----------------------------------------------------------------


def test_extensions_a_helm_stack_on_a_cluster_with_the_kueue_extension_fails_before_any_resource(
    azure: FakeArm,
) -> None:
    from pulumi.runtime.settings import SETTINGS  # the mock monitor of the last run

    fits(azure, existing(), kueue_extension())
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing(), azure=azure)
    assert not [r.type for r in SETTINGS.monitor.registrations]
    text = str(err.value)
    assert text.startswith("preflight: this stack cannot be deployed as configured (1 problem):")
    for said in (
        "kueue-aks:kueue.install: is helm, but cluster their-rg/their-aks has AKS's managed Kueue extension "
        f"'kueue' (microsoft.kueue {PINNED}, provisioning state Succeeded, release namespace kueue-system)",
        "also kueue in kueue-system",
        "two Kueues would serve the same CRDs and webhooks",
        f"set kueue-aks:kueue.install: aksExtension (the stack then uses this extension, pinned to {PINNED})",
        f"remove the extension: {DELETE.format('kueue')}",
    ):
        assert said in text, (said, text)
    # Read with the provider's token, at the documented API version.
    (path,) = extension_reads(azure)
    assert path.endswith(
        "/resourceGroups/their-rg/providers/Microsoft.ContainerService/managedClusters/their-aks/"
        "providers/Microsoft.KubernetesConfiguration/extensions?api-version=2025-03-01"
    ), path
    assert all(auth == f"Bearer {PROVIDER_TOKEN}" for _, auth in azure.requests)


@pytest.mark.parametrize("extension_type", ["Microsoft.Kueue", "MICROSOFT.KUEUE"])
def test_extensions_the_type_is_compared_without_case(azure: FakeArm, extension_type: str) -> None:
    fits(azure, existing(), kueue_extension(extension_type=extension_type))
    (problem,) = problems(existing())
    assert problem.startswith("kueue-aks:kueue.install: is helm") and f"({extension_type} {PINNED}," in problem


def test_extensions_the_stacks_own_cluster_is_checked_too_found_by_its_tag(azure: FakeArm) -> None:
    # A created cluster gets the extension after the stack: the next preview finds it, in the
    # resource group its ARM id names. Named otherwise than the stack would name its own, it can
    # only go; a failed install still names its state.
    fits(azure, DEV)
    azure.clusters = [
        managed_cluster(
            "kueue-rg123", "kueue-dev", [("system", "Standard_D4s_v5", 1, False)], tags={STACK_TAG: PROJECT_STACK}
        )
    ]
    azure.extensions = {
        "kueue-rg123/kueue-dev": [
            extension(
                "kueue-rg123",
                "kueue-dev",
                "aks-kueue",
                "microsoft.kueue",
                version=None,
                current_version="0.19.6-aks.0.4.5",
                namespace="kueue-system",
                state="Failed",
            )
        ]
    }
    with pytest.raises(pulumi.RunError) as err:
        run_program(DEV, preview=True, azure=azure)
    text = str(err.value)
    assert (
        "cluster kueue-rg123/kueue-dev has AKS's managed Kueue extension 'aks-kueue' (microsoft.kueue "
        "0.19.6-aks.0.4.5, provisioning state Failed" in text
    ), text
    assert (
        "remove the extension: az k8s-extension delete --resource-group kueue-rg123 --cluster-name kueue-dev "
        "--cluster-type managedClusters --name aks-kueue --yes (install: aksExtension would not take it over: the "
        "stack names its own extension kueue)" in text
    ), text
    assert "set kueue-aks:kueue.install: aksExtension" not in text


def test_extensions_a_first_up_reads_no_extensions(azure: FakeArm) -> None:
    fits(azure, DEV)
    run_program(DEV, preview=True, azure=azure)
    assert extension_reads(azure) == []  # no cluster yet, so none to read


def test_extensions_other_extensions_pass(azure: FakeArm) -> None:
    fits(
        azure,
        existing(),
        extension(
            "their-rg",
            "their-aks",
            "flux",
            "microsoft.flux",
            version=None,
            current_version="1.15.1",
            namespace="flux-system",
        ),
    )
    run_program(existing(), preview=True, azure=azure)
    assert len(extension_reads(azure)) == 1


def test_extensions_aks_extension_stack_accepts_its_own_and_refuses_another_name(azure: FakeArm) -> None:
    config_map = existing("eastus", kueue={"install": "aksExtension"})
    fits(azure, config_map, kueue_extension())
    assert problems(config_map) == []  # the stack's own, on a later run
    azure.extensions["their-rg/their-aks"].append(kueue_extension("kueue-preview"))
    (problem,) = problems(config_map)
    assert problem.startswith(
        "kueue-aks:kueue.install: is aksExtension, but cluster their-rg/their-aks already has "
        "AKS's managed Kueue extension 'kueue-preview'"
    ), problem
    assert "two extensions of type microsoft.kueue" in problem
    assert (
        f"remove this one: {DELETE.format('kueue-preview')} (the stack then creates kueue, pinned to {PINNED})"
        in problem
    )


# --- an existing cluster for the extension ---------------------------------------------------------


def test_extensions_an_existing_cluster_on_old_kubernetes_in_another_region_is_refused(azure: FakeArm) -> None:
    config_map = existing("eastus", kueue={"install": "aksExtension"})
    fits(azure, config_map)
    azure.clusters = [managed_cluster("their-rg", "their-aks", [], location="eastus2", kubernetes_version="1.33.5")]
    version, region = problems(config_map)
    assert version == (
        "kueue-aks:cluster.existing: cluster their-rg/their-aks runs Kubernetes 1.33.5, older than 1.34, "
        f"the oldest AKS's managed Kueue extension {PINNED} runs on; upgrade the cluster (az aks upgrade "
        "--resource-group their-rg --name their-aks --kubernetes-version <1.34 or newer>), or set "
        "kueue-aks:kueue.install: helm"
    )
    assert region == (
        "kueue-aks:cluster.existing: cluster their-rg/their-aks is in eastus2, where AKS's managed Kueue "
        f"extension {PINNED} is not offered (offered in centralus, eastus, westus, westus2); use a cluster "
        "in one of those regions, or set kueue-aks:kueue.install: helm"
    )


def test_extensions_an_existing_cluster_in_a_region_spelt_otherwise_on_1_34_passes(azure: FakeArm) -> None:
    config_map = existing("eastus", kueue={"install": "aksExtension"})
    fits(azure, config_map)
    azure.clusters = [managed_cluster("their-rg", "their-aks", [], location="East US", kubernetes_version="1.34.0")]
    assert problems(config_map) == []


def test_extensions_a_helm_stack_does_not_mind_the_clusters_version_or_region(azure: FakeArm) -> None:
    fits(azure, existing())
    azure.clusters = [managed_cluster("their-rg", "their-aks", [], location="westeurope", kubernetes_version="1.31.1")]
    assert problems(existing()) == []


# --- AKS's managed KubeRay extension ---------------------------------------------------------------


@pytest.mark.parametrize("install", ["managed", "external"])
def test_extensions_the_kuberay_extension_refuses_a_managed_kuberay(azure: FakeArm, install: str) -> None:
    config_map = existing(
        kueue={"frameworks": ["batch/job", "ray.io/rayjob"]}, operators={"kuberay": {"install": install}}
    )
    fits(azure, config_map, kuberay_extension())
    found = problems(config_map)
    if install == "external":
        assert found == []  # the extension's KubeRay serves the RayJobs
        return
    (problem,) = found
    assert problem.startswith(
        "kueue-aks:operators.kuberay.install: is managed, but cluster their-rg/their-aks has AKS's "
        "managed KubeRay extension 'kuberay' (microsoft.kuberay 1.4.2, provisioning state "
        "Succeeded, release namespace kuberay-system)"
    ), problem
    assert "kuberay-operator in kuberay-system" in problem
    assert (
        "set kueue-aks:operators.kuberay.install: external (the extension's KubeRay then serves RayJobs), or "
        f"remove the extension: {DELETE.format('kuberay')}" in problem
    ), problem


def test_extensions_the_kuberay_extension_is_none_of_a_stack_without_ray(azure: FakeArm) -> None:
    config_map = existing(kueue={"frameworks": ["batch/job"]})
    fits(azure, config_map, kuberay_extension())
    assert problems(config_map) == []


def test_extensions_all_problems_come_in_one_error(azure: FakeArm) -> None:
    config_map = existing(kueue={"frameworks": ["batch/job", "ray.io/rayjob"]})
    fits(azure, config_map, kueue_extension(), kuberay_extension())
    with pytest.raises(pulumi.RunError) as err:
        run_program(config_map, preview=True, azure=azure)
    text = str(err.value)
    assert "(2 problems)" in text
    assert (
        "  - kueue-aks:kueue.install: is helm" in text and "  - kueue-aks:operators.kuberay.install: is managed" in text
    )


# --- Azure's answers -------------------------------------------------------------------------------


def test_extensions_are_read_on_every_page(azure: FakeArm) -> None:
    others = [
        extension(
            "their-rg", "their-aks", name, f"microsoft.{name}", version=None, current_version="1.0.0", namespace=name
        )
        for name in ("flux", "dapr", "azureml")
    ]
    fits(azure, existing(), *others, kueue_extension())
    azure.page_size = 2
    (problem,) = problems(existing())
    assert "'kueue' (microsoft.kueue" in problem  # on the second page
    assert sum("page=" in path for path in extension_reads(azure)) == 1


@pytest.mark.parametrize(
    "failure",
    [
        Failure(404, 1, body={"error": {"code": "ResourceNotFound", "message": "not found"}}),
        # A subscription not registered for the resource provider has no extensions to list.
        Failure(
            409,
            1,
            body={
                "error": {
                    "code": "MissingSubscriptionRegistration",
                    "message": "The subscription is not "
                    "registered to use namespace 'Microsoft.KubernetesConfiguration'.",
                }
            },
        ),
    ],
)
def test_extensions_azure_having_none_to_list_is_none(azure: FakeArm, failure: Failure) -> None:
    fits(azure, existing())
    azure.fail["extensions"] = failure
    run_program(existing(), preview=True, azure=azure)
    assert failure.times == 0  # it was asked


def test_extensions_an_identity_without_the_read_gets_the_permission_and_the_way_to_skip(azure: FakeArm) -> None:
    fits(azure, existing(), kueue_extension())
    azure.fail["extensions"] = Failure(
        403,
        1,
        body={
            "error": {
                "code": "AuthorizationFailed",
                "message": "does not have "
                "authorization to perform action 'Microsoft.KubernetesConfiguration/extensions/read'",
            }
        },
    )
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing(), preview=True, azure=azure)
    text = str(err.value)
    assert text.startswith(
        "preflight: the identity that deploys cannot read extensions of AKS cluster their-rg/their-aks in subscription "
    ), text
    assert "(HTTP 403 AuthorizationFailed: does not have authorization" in text
    assert (
        "this read needs Microsoft.KubernetesConfiguration/extensions/read (the preflight's other reads need " in text
    )
    assert "Reader role has them all" in text and "kueue-aks:preflight.enabled false" in text
    assert PROVIDER_TOKEN not in text


def test_extensions_skipping_the_preflight_says_the_extensions_were_not_checked(
    azure: FakeArm, monkeypatch: pytest.MonkeyPatch
) -> None:
    fits(azure, existing(), kueue_extension())
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))
    run_program(existing(preflight={"enabled": False}), preview=True, azure=azure)
    assert azure.requests == []
    (skipped,) = [w for w in warnings if w.startswith("preflight skipped")]
    assert "the cluster's AKS extensions (managed Kueue, KubeRay)" in skipped


# --- pure parts ------------------------------------------------------------------------------------


def test_extensions_parsers_read_azures_shapes() -> None:
    (kueue,) = parse_extensions([kueue_extension()])
    assert (
        kueue.name,
        kueue.extension_type,
        kueue.version,
        kueue.current_version,
        kueue.provisioning_state,
        kueue.release_namespace,
    ) == ("kueue", "microsoft.kueue", PINNED, PINNED, "Succeeded", "kueue-system")
    assert kueue.is_type("Microsoft.Kueue") and not kueue.is_type("microsoft.kuberay")
    # ARM ids are case-insensitive; the current version wins over the requested one.
    cluster = {
        "id": "/subscriptions/x/resourcegroups/MC-rg/providers/Microsoft.ContainerService/managedClusters/c",
        "name": "c",
        "location": "westus2",
        "properties": {"kubernetesVersion": "1.34", "currentKubernetesVersion": "1.34.1"},
    }
    facts = cluster_facts(cluster)
    assert (facts.resource_group, facts.name, facts.location, facts.kubernetes_version) == (
        "MC-rg",
        "c",
        "westus2",
        "1.34.1",
    )
