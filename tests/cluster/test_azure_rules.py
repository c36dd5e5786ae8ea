"""Azure's rules across the keys of a cluster the program creates (docs/azure-rules.md): each one an
error naming the key and what to write, before any resource; and what the program then sends."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from testbed.config_errors import refused
from testbed.harness import ROOT, assert_nothing_registered, run_program
from testbed.stacks import load_stack

MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"


def with_cluster(config: dict[str, Any], **keys: Any) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed["kueue-aks:cluster"] = {**changed.get("kueue-aks:cluster", {}), **keys}
    return changed


@pytest.mark.parametrize(
    ("keys", "path", "says"),
    [
        (
            {"kubernetesVersion": "1.33", "autoUpgradeChannel": "stable"},
            "kueue-aks:cluster.kubernetesVersion",
            ["autoUpgradeChannel stable", "downgrade", "remove kubernetesVersion", "patch"],
        ),
        (
            {"kubernetesVersion": "1.33", "autoUpgradeChannel": "rapid"},
            "kueue-aks:cluster.kubernetesVersion",
            ["autoUpgradeChannel rapid", "downgrade"],
        ),
        (
            {"kubernetesVersion": "1.33.2", "autoUpgradeChannel": "patch"},
            "kueue-aks:cluster.kubernetesVersion",
            ["patch version '1.33.2'", 'pin the minor only ("1.33")', "autoUpgradeChannel: none"],
        ),
        (
            {"tier": "Premium", "autoUpgradeChannel": "stable"},
            "kueue-aks:cluster.autoUpgradeChannel",
            ["long-term support", "set autoUpgradeChannel: patch"],
        ),
        (
            {"disableLocalAccounts": True, "deployerAdmin": False},
            "kueue-aks:cluster.deployerAdmin",
            ["nobody", "adminGroupObjectIds"],
        ),
        (
            {"name": "k" * 63},
            "kueue-aks:cluster.name",
            ["node resource group", "91 characters long in eastus2", "more than 80", "at most 52 characters"],
        ),
    ],
)
def test_each_rule_names_the_key_and_what_to_write(
    dev_config_map: dict[str, Any], keys: dict[str, Any], path: str, says: list[str]
) -> None:
    found = refused(load_stack, with_cluster(dev_config_map, **keys)).by_path
    print(found)
    assert path in found
    assert all(part in found[path] for part in says), found[path]
    # Nothing registered either: the config stops the program before any resource.
    with pytest.raises(Exception, match=path.replace(".", r"\.")):
        run_program(with_cluster(dev_config_map, **keys))
    assert_nothing_registered()


@pytest.mark.parametrize(
    "keys",
    [
        {"kubernetesVersion": "1.33", "autoUpgradeChannel": "patch"},
        {"kubernetesVersion": "1.33.2", "autoUpgradeChannel": "none"},
        {"kubernetesVersion": "1.33.2", "autoUpgradeChannel": "node-image"},
        {"autoUpgradeChannel": "stable"},
        {"tier": "Premium"},
        {
            "disableLocalAccounts": True,
            "deployerAdmin": False,
            "adminGroupObjectIds": ["11111111-2222-3333-4444-555555555555"],
        },
        {"name": "k" * 52},
    ],
)
def test_what_azure_takes_passes(dev_config_map: dict[str, Any], keys: dict[str, Any]) -> None:
    load_stack(with_cluster(dev_config_map, **keys))


def test_too_many_nodes_for_the_free_tier(dev_config_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_config_map)
    config["kueue-aks:nodePools"] = [
        {"name": f"p{i}", "vmSize": "Standard_D4s_v5", "minCount": 0, "maxCount": 1000} for i in range(2)
    ]
    config["kueue-aks:teams"] = [{"name": "research", "share": 100}]
    found = refused(load_stack, config).by_path
    assert "2001 at maxCount" in found["kueue-aks:cluster.tier"] and "tier: Standard" in found["kueue-aks:cluster.tier"]
    load_stack(with_cluster(config, tier="Standard"))


@pytest.mark.parametrize(
    ("tier", "plan"),
    [("Free", "KubernetesOfficial"), ("Standard", "KubernetesOfficial"), ("Premium", "AKSLongTermSupport")],
)
def test_premium_comes_with_long_term_support_and_only_premium(
    dev_config_map: dict[str, Any], tier: str, plan: str
) -> None:
    cluster = run_program(with_cluster(dev_config_map, tier=tier)).one(MANAGED_CLUSTER)
    assert (cluster.inputs["sku"], cluster.inputs["supportPlan"]) == ({"name": "Base", "tier": tier}, plan)


def test_the_dns_prefix_is_derived_valid_and_a_valid_name_is_kept(dev_config_map: dict[str, Any]) -> None:
    kept = run_program(dev_config_map).one(MANAGED_CLUSTER).inputs
    assert kept["dnsPrefix"] == kept["resourceName"] == "kueue-dev"
    derived = run_program(with_cluster(dev_config_map, name="ml_team_cluster")).one(MANAGED_CLUSTER).inputs
    assert (derived["resourceName"], derived["dnsPrefix"]) == ("ml_team_cluster", "ml-team-cluster")


def test_the_stack_resource_group_is_the_one_the_length_rule_counts(dev_config_map: dict[str, Any]) -> None:
    from components.facts.azure_names import STACK_RESOURCE_GROUP

    group = run_program(dev_config_map).one("azure-native:resources:ResourceGroup")
    assert group.name == STACK_RESOURCE_GROUP and "resourceGroupName" not in group.inputs  # autonamed


def test_a_multikueue_managers_cluster_follows_the_same_rules() -> None:
    """A manager creates an AKS cluster too (without user pools): a pinned minor on stable is refused there."""
    config = yaml.safe_load((ROOT / "examples" / "multikueue" / "Pulumi.batch-manager.yaml").read_text())["config"]
    config["kueue-aks:cluster"] = {
        **config.get("kueue-aks:cluster", {}),
        "kubernetesVersion": "1.33",
        "autoUpgradeChannel": "stable",
    }
    found = refused(load_stack, config).by_path
    assert "autoUpgradeChannel stable" in found["kueue-aks:cluster.kubernetesVersion"], found
