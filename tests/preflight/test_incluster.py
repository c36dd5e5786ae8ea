"""The kubeconfig-mode preflight: the Kueue a cluster already runs, and AKS's managed extension's signs.

The decisions (components/preflight/incluster.py) over clusters described as data (testbed/kube_fake.py);
the same reads against the real control plane: tests/e2e/engine/test_extension.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.config.stack import StackConfig
from components.kueue.values import kueue_helm_values
from components.preflight.incluster import ClusterKueue, newest_release, problems, read
from testbed.harness import parsed_config
from testbed.kube_fake import FakeCluster, controller, extension_cluster, helm_release_secret, release_path
from testbed.stacks import stack_file_config

KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://k.invalid'}}]\n"
    "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n"
)


def kubeconfig_config(**kueue: Any) -> StackConfig:
    config = {
        k: v
        for k, v in stack_file_config().items()
        if k not in ("azure-native:location", "kueue-aks:cluster", "kueue-aks:monitoring")
    }
    config["kueue-aks:cluster"] = {"kubeconfig": KUBECONFIG}
    config["kueue-aks:kueue"] = kueue or {}
    parsed = parsed_config(config)
    assert parsed is not None
    return parsed


HELM = kubeconfig_config()
EXTENSION = kubeconfig_config(install="aksExtension")


def found_in(cluster: FakeCluster) -> ClusterKueue:
    return read(cluster)


def test_a_helm_stack_on_a_cluster_with_the_extension_is_refused_naming_what_was_found() -> None:
    [problem] = problems(HELM, found_in(extension_cluster()))
    print(problem)
    assert problem.path == "kueue-aks:kueue.install"
    for said in (
        "AKS's managed Kueue extension",
        "ResourceFlavor aks-cpu",
        "WorkloadPriorityClass aks-high-priority",
        "Topology aks-default",
        "aks-h100-ncadsh100-v5",
        "chart kueue 0.19.6-aks.0.4.4, revision 3",
        "kueue-aks:kueue.install: aksExtension",
        "az k8s-extension delete",
    ):
        assert said in problem.message, said


def test_the_stacks_own_release_is_not_a_sign() -> None:
    own = FakeCluster({release_path(2): helm_release_secret(kueue_helm_values(HELM), revision=2), **controller(2)})
    found = found_in(own)
    assert found.release is not None and found.release.kueue_aks and not found.signs
    assert problems(HELM, found) == []


def test_a_kueue_release_kueue_aks_did_not_install_is_refused() -> None:
    foreign = FakeCluster(
        {release_path(): helm_release_secret({"controllerManager": {"replicas": 1}}), **controller(1)}
    )
    [problem] = problems(HELM, found_in(foreign))
    print(problem)
    assert "did not install" in problem.message and "helm uninstall kueue -n kueue-system" in problem.message


def test_an_empty_cluster_passes_a_helm_stack() -> None:
    empty = FakeCluster()
    assert problems(HELM, found_in(empty)) == []
    assert any(r.endswith("/resourceflavors/aks-cpu") for r in empty.reads), "the check must look"


def test_an_extension_stack_needs_the_extension_on_the_cluster() -> None:
    [problem] = problems(EXTENSION, found_in(FakeCluster()))
    print(problem)
    assert problem.path == "kueue-aks:kueue.install"
    assert "shows none of its objects" in problem.message
    assert "--version 0.19.6-aks.0.4.4 --auto-upgrade-mode none" in problem.message


@pytest.mark.parametrize("available", [0, None])
def test_an_extension_stack_waits_for_a_running_controller(available: int | None) -> None:
    cluster = extension_cluster(available=available or 0)
    if available is None:
        cluster.objects = {p: o for p, o in cluster.objects.items() if "/deployments/" not in p}
    [problem] = problems(EXTENSION, found_in(cluster))
    print(problem)
    assert "controller is not running" in problem.message
    assert ("has no Deployment" if available is None else "0 of 2 replicas available") in problem.message


def test_an_extension_stack_on_the_extension_passes() -> None:
    assert problems(EXTENSION, found_in(extension_cluster())) == []


def test_the_newest_revision_of_a_release_counts() -> None:
    secrets = [
        helm_release_secret({}, revision=1, status="superseded"),
        helm_release_secret(kueue_helm_values(HELM), revision=4),
        helm_release_secret({}, revision=3, status="superseded"),
    ]
    newest = newest_release(secrets)
    assert newest is not None and (newest.revision, newest.status, newest.kueue_aks) == (4, "deployed", True)
    assert newest_release([]) is None
