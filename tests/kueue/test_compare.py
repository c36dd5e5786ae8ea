"""Quota changes between two versions of a stack (components/kueue/compare.py), from the objects
the program builds."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from components.kueue.compare import (NO_CHANGE, Quota, StackQuotas, callouts, comparison_markdown, membership,
                                      quota_changes, stack_quotas)
from components.kueue.objects import queue_set
from tests.conftest import load_stack


def quotas(config_map: dict[str, Any]) -> StackQuotas:
    config = load_stack(config_map)
    return stack_quotas(config, queue_set(config))


def with_shares(config_map: dict[str, Any], **shares: int) -> dict[str, Any]:
    changed = copy.deepcopy(config_map)
    for team in changed["kueue-aks:teams"]:
        team["share"] = shares.get(team["name"], team["share"])
    return changed


def test_the_quotas_are_read_from_the_built_cluster_queues(dev_config_map: dict[str, Any]) -> None:
    dev = quotas(dev_config_map)
    assert dev.teams == ("research", "platform")
    assert set(dev.pools) == set(dev.flavors) == {"cpu", "gpu", "tas"}
    # 3 T4 GPUs: 60 % -> 1, 40 % -> 1; weights are the shares as the ClusterQueues write them (600m).
    assert dev.quotas[("research", "gpu", "nvidia.com/gpu")] == Quota(1, None, None, Decimal("0.6"))
    assert dev.quotas[("platform", "gpu", "nvidia.com/gpu")] == Quota(1, None, None, Decimal("0.4"))
    assert dev.quotas[("research", "cpu", "cpu")].nominal == 18768  # millicores: the plan's 18.77 vCPU
    assert dev.capacity[("gpu", "nvidia.com/gpu")] == 3


def test_limits_are_read_where_a_cluster_queue_sets_them(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    queues = queue_set(config)
    [research] = [o for o in queues.objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "research"]
    gpu = next(f for f in research["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    gpu["resources"][-1].update(borrowingLimit="2", lendingLimit="0")
    assert stack_quotas(config, queues).quotas[("research", "gpu", "nvidia.com/gpu")] == Quota(1, 2, 0, Decimal("0.6"))


def test_a_gpu_that_moves_is_called_out_first(dev_config_map: dict[str, Any]) -> None:
    before, after = quotas(dev_config_map), quotas(with_shares(dev_config_map, research=30, platform=70))
    changes = quota_changes(before, after)
    words = callouts(changes, after.flavors)
    assert words[:2] == ["**research loses 1 GPU on gpu** (1 → 0)", "**platform gains 1 GPU on gpu** (1 → 2)"]
    assert all("GPU" not in w for w in words[2:])  # then vCPUs and memory
    assert "**platform gains 9.38 vCPU on cpu** (12.51 → 21.90)" in words
    # GPUs of the CPU pools: none on either side, so no row, although the weight changed.
    assert ("research", "cpu", "nvidia.com/gpu") not in {(c.team, c.flavor, c.resource) for c in changes}


def test_the_table_shows_each_changed_row_before_and_after(dev_config_map: dict[str, Any]) -> None:
    text = comparison_markdown("dev", "`origin/main`", quotas(dev_config_map),
                               quotas(with_shares(dev_config_map, research=30, platform=70)))
    assert text.startswith("### Quota changes: stack `dev`, `origin/main` → this change\n")
    assert ("| research | gpu | nvidia.com/gpu (GPU) | 1 → 0 (-1) | no limit | no limit | 0.6 → 0.3 (-0.3) |"
            in text.splitlines())
    assert ("| platform | cpu | cpu (vCPU) | 12.51 → 21.90 (+9.38) | no limit | no limit | 0.4 → 0.7 (+0.3) |"
            in text.splitlines())
    assert NO_CHANGE not in text


def test_identical_versions_have_no_quota_change(dev_config_map: dict[str, Any]) -> None:
    dev = quotas(dev_config_map)
    assert quota_changes(dev, dev) == [] and membership(dev, dev) == []
    assert comparison_markdown("dev", "`main`", dev, quotas(dev_config_map)).endswith(f"\n{NO_CHANGE}\n")


def test_added_and_removed_teams_pools_and_capacity(dev_config_map: dict[str, Any]) -> None:
    after_map = copy.deepcopy(dev_config_map)
    after_map["kueue-aks:nodePools"] = [p for p in after_map["kueue-aks:nodePools"] if p["name"] != "tas"] + [
        {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2}]
    next(p for p in after_map["kueue-aks:nodePools"] if p["name"] == "gpu")["maxCount"] = 4
    after_map["kueue-aks:teams"] = [{"name": "research", "share": 60}, {"name": "vision", "share": 40}]
    before, after = quotas(dev_config_map), quotas(after_map)
    assert membership(before, after) == [
        "team `vision` added",
        "team `platform` removed",
        "pool `a100` added (Standard_NC24ads_A100_v4, 0–2 nodes)",
        "pool `tas` removed (Standard_D8s_v5, 0–1 nodes)",
        "`gpu` cpu capacity (vCPU): 11.58 → 15.44 (+3.86)",
        "`gpu` memory capacity (GiB): 77.12 → 102.82 (+25.71)",
        "`gpu` nvidia.com/gpu capacity (GPU): 3 → 4 (+1)",
    ]
    words = callouts(quota_changes(before, after), after.flavors)
    assert "**vision gains 1 GPU on gpu** (– → 1)" in words
    assert "**platform loses 1 GPU on gpu** (1 → –)" in words
    assert "**research gains 1 GPU on a100** (– → 1)" in words  # 60 % of 2 A100s
    text = comparison_markdown("dev", "`main`", before, after)
    assert "| platform | tas | cpu (vCPU) | 3.13 → – | no limit → – | no limit → – | 0.4 → – |" in text
    assert "| platform | gpu | nvidia.com/gpu (GPU) | 1 → – | no limit → – | no limit → – | 0.4 → – |" in text


def test_a_new_stack_shows_everything_as_added(dev_config_map: dict[str, Any]) -> None:
    text = comparison_markdown("dev", "`origin/main`", None, quotas(dev_config_map))
    assert "Stack `dev` is new: `origin/main` has no `Pulumi.dev.yaml`, so everything is added." in text
    assert "- team `research` added" in text and "- pool `gpu` added (Standard_NC4as_T4_v3, 0–3 nodes)" in text
    assert "- **research gains 1 GPU on gpu** (– → 1)" in text
    assert NO_CHANGE not in text
