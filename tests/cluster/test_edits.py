"""Edits AKS cannot apply to a created cluster in place (components/cluster/edits.py), judged on
the inputs the cluster component sends for both versions of a stack."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.cluster.component import agent_pool_args, network_profile, system_pool_profile
from components.cluster.edits import (
    AGENT_POOL_FIELDS,
    NETWORK_FIELDS,
    REFUSED,
    REPLACED,
    SYSTEM_POOL_FIELDS,
    edit_lines,
    fixed_edits,
)
from testbed.stacks import load_stack

SUBNETS = (
    "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/net-rg/providers/Microsoft.Network/"
    "virtualNetworks/spoke/subnets/"
)


def changed(config_map: dict[str, Any], pool: str | None = None, **settings: Any) -> dict[str, Any]:
    """The stack with one pool's settings, or the cluster's (pool None), updated."""
    edited = copy.deepcopy(config_map)
    target = (
        next(p for p in edited["kueue-aks:nodePools"] if p["name"] == pool) if pool else edited["kueue-aks:cluster"]
    )
    target.update(settings)
    return edited


def edits(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(e.target, e.what, e.key, e.outcome) for e in fixed_edits(load_stack(before), load_stack(after))]


def test_a_vm_size_replaces_the_pool_and_says_the_safe_way(dev_config_map: dict[str, Any]) -> None:
    after = changed(dev_config_map, "gpu", vmSize="Standard_NC16as_T4_v3")
    # The GPU driver profile is the same; a VM size makes a new pool, so nothing else is listed.
    assert edits(dev_config_map, after) == [("pool `gpu`", "VM size", "kueue-aks:nodePools[1].vmSize", REPLACED)]
    [line] = edit_lines(load_stack(dev_config_map), load_stack(after))
    assert "`up` deletes `gpu` and creates it anew" in line and "every job running there stops" in line
    assert "add a pool with the new VM size beside it (e.g. `gpu2`)" in line


def test_spot_subnet_and_the_system_pool_make_up_fail(dev_config_map: dict[str, Any]) -> None:
    assert edits(dev_config_map, changed(dev_config_map, "gpu", spot=True)) == [
        ("pool `gpu`", "spot setting", "kueue-aks:nodePools[1].spot", REFUSED)
    ]
    [line] = edit_lines(load_stack(dev_config_map), load_stack(changed(dev_config_map, "gpu", spot=True)))
    assert (
        "(on-demand → spot, `kueue-aks:nodePools[1].spot`): `up` fails" in line and "PropertyChangeNotAllowed" in line
    )
    assert edits(dev_config_map, changed(dev_config_map, systemPool={"vmSize": "Standard_D8s_v5", "count": 1})) == [
        ("the system pool", "VM size", "kueue-aks:cluster.systemPool.vmSize", REFUSED)
    ]
    with_subnet = changed(dev_config_map, network={"subnetId": SUBNETS + "a"})
    moved = edits(with_subnet, changed(with_subnet, "cpu", subnetId=SUBNETS + "b"))
    assert moved == [("pool `cpu`", "subnet", "kueue-aks:nodePools[0].subnetId", REFUSED)]


def test_a_cluster_wide_key_is_one_line_for_every_pool_it_reaches(dev_config_map: dict[str, Any]) -> None:
    after = changed(dev_config_map, zones=["1", "2"])
    assert {e[0] for e in edits(dev_config_map, after)} == {"the system pool", "pool `cpu`", "pool `gpu`", "pool `tas`"}
    [line] = edit_lines(load_stack(dev_config_map), load_stack(after))
    assert line.startswith("**AKS cannot change the zones of the system pool and pools `cpu`, `gpu`, `tas` in place**")


def test_a_network_range_replaces_the_cluster_and_nothing_else_is_listed(dev_config_map: dict[str, Any]) -> None:
    after = changed(dev_config_map, network={"podCidr": "10.200.0.0/16"}, zones=["1"])
    assert edits(dev_config_map, after) == [("the cluster", "pod range", "kueue-aks:cluster.network.podCidr", REPLACED)]
    [line] = edit_lines(load_stack(dev_config_map), load_stack(after))
    assert "`up` deletes the cluster and creates a new one" in line


@pytest.mark.parametrize("settings", [{"maxCount": 6}, {"minCount": 1}, {"labels": {"team": "x"}}])
def test_edits_aks_applies_in_place_are_not_listed(dev_config_map: dict[str, Any], settings: dict[str, Any]) -> None:
    assert edits(dev_config_map, changed(dev_config_map, "gpu", **settings)) == []


def test_only_a_created_cluster_is_judged(dev_config_map: dict[str, Any]) -> None:
    existing = copy.deepcopy(dev_config_map)
    existing.pop("kueue-aks:monitoring")
    existing["kueue-aks:cluster"] = {"existing": {"resourceGroup": "rg", "name": "aks1"}}
    assert edits(existing, changed(existing, "gpu", vmSize="Standard_NC16as_T4_v3")) == []
    assert edit_lines(None, load_stack(dev_config_map)) == []


def test_every_input_the_builders_send_is_judged(dev_config_map: dict[str, Any]) -> None:
    """A new input must be judged in the tables first (the comparison raises on one it lacks)."""
    stack = load_stack(
        changed(
            changed(dev_config_map, "gpu", spot=True),
            network={
                "subnetId": SUBNETS + "a",
                "outboundType": "userDefinedRouting",
                "podCidr": "10.200.0.0/16",
                "serviceCidr": "10.0.0.0/16",
                "dnsServiceIp": "10.0.0.10",
            },
            zones=["1"],
        )
    )
    sent = set().union(*(agent_pool_args(p, stack.cluster) for p in stack.node_pools))
    assert sent <= set(AGENT_POOL_FIELDS), sent - set(AGENT_POOL_FIELDS)
    assert set(system_pool_profile(stack.cluster)) <= set(SYSTEM_POOL_FIELDS)
    assert set(network_profile(stack.cluster)) <= set(NETWORK_FIELDS)
