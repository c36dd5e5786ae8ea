"""Quota changes between two versions of a stack (components/kueue/compare.py), from the quota rows
and teams the program builds its ClusterQueues of."""

from __future__ import annotations

import copy
import dataclasses
from decimal import Decimal
from typing import Any

from components.kueue.compare import (
    DETAILS,
    NO_CHANGE,
    Quota,
    StackQuotas,
    callouts,
    comparison_markdown,
    membership,
    quota_changes,
    stack_quotas,
)
from components.k8s.quantity import cpu_millicores, memory_mib, parse_quantity
from components.kueue.objects import QueueSet, queue_set
from components.multikueue.manager import manager_queue_set
from components.multikueue.worker import worker_facts
from testbed.stacks import (
    MULTIKUEUE_MANAGER,
    MULTIKUEUE_WORKERS,
    load_stack,
    multikueue_example,
    with_pool,
    with_shares,
    workers_of,
)


def quotas(config_map: dict[str, Any]) -> StackQuotas:
    config = load_stack(config_map)
    return stack_quotas(config, queue_set(config))


def opening(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """The comparison's lines between its heading and the details."""
    lines = comparison_markdown("dev", "`main`", quotas(before) if before else None, quotas(after)).splitlines()
    assert lines[:2] == ["### Quota changes: stack `dev`, `main` → this change", ""]
    return lines[2 : lines.index(DETAILS)]


def test_the_quotas_are_read_from_the_built_cluster_queues(dev_config_map: dict[str, Any]) -> None:
    dev = quotas(dev_config_map)
    assert dev.teams == ("research", "platform")
    assert set(dev.pools) == set(dev.flavors) == {"cpu", "gpu", "tas"}
    # 3 T4 GPUs: 60 % -> 1, 40 % -> 1; weights are the shares as the ClusterQueues write them (600m).
    assert dev.quotas[("research", "gpu", "nvidia.com/gpu")] == Quota(1, None, None, Decimal("0.6"))
    assert dev.quotas[("platform", "gpu", "nvidia.com/gpu")] == Quota(1, None, None, Decimal("0.4"))
    assert dev.quotas[("research", "cpu", "cpu")].nominal == 18768  # millicores: the plan's 18.77 vCPU
    assert dev.capacity[("gpu", "nvidia.com/gpu")] == 3


def stated(queues: QueueSet) -> dict[tuple[str, str, str], Quota]:
    """The quotas as the built ClusterQueues state them, in their order (display units)."""
    parse = {"cpu": cpu_millicores, "memory": memory_mib, "nvidia.com/gpu": lambda q: int(parse_quantity(q))}
    found = {}
    for obj in queues.objects:
        if obj["kind"] == "ClusterQueue":
            spec = obj["spec"]
            team = spec["namespaceSelector"]["matchLabels"]["kueue-aks.io/team"]
            for flavor in spec["resourceGroups"][0]["flavors"]:
                for r in flavor["resources"]:
                    limits = [parse[r["name"]](r[k]) if k in r else None for k in ("borrowingLimit", "lendingLimit")]
                    found[(team, flavor["name"], r["name"])] = Quota(
                        parse[r["name"]](r["nominalQuota"]), *limits, parse_quantity(spec["fairSharing"]["weight"])
                    )
    return found


def test_the_quotas_are_the_ones_the_cluster_queues_state(dev_config_map: dict[str, Any]) -> None:
    """Read from the rows and teams, they are what the built objects say, limits and order included: a
    team's ordinary queue's flavors, then its topology-aware queue's (`tas`), a manager's as its workers give."""
    limited = copy.deepcopy(dev_config_map)
    limited["kueue-aks:teams"][0]["borrowing"] = 2
    for config_map in (dev_config_map, limited):
        config = load_stack(config_map)
        queues = queue_set(config)
        assert list(stack_quotas(config, queues).quotas.items()) == list(stated(queues).items())
    assert stack_quotas(config, queues).quotas[("research", "gpu", "nvidia.com/gpu")] == Quota(
        1, 2, None, Decimal("0.6")
    )
    assert [f for t, f, r in stated(queues) if t == "research" and r == "cpu"] == ["cpu", "gpu", "tas"]
    manager = load_stack(multikueue_example(MULTIKUEUE_MANAGER), MULTIKUEUE_MANAGER)
    facts = {w: worker_facts(load_stack(multikueue_example(w), w)) for w in MULTIKUEUE_WORKERS}
    queues = manager_queue_set(
        manager, workers_of(manager, {w.name: facts[w.stack.rsplit("/", 1)[1]] for w in manager.multi_kueue.workers})
    )
    built = stack_quotas(manager, queues)
    assert list(built.quotas.items()) == list(stated(queues).items()) and built.quotas
    assert built.shares == {"research": Decimal(60), "platform": Decimal(40)}  # the workers' shares


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
    text = comparison_markdown(
        "dev", "`origin/main`", quotas(dev_config_map), quotas(with_shares(dev_config_map, research=30, platform=70))
    )
    assert text.startswith("### Quota changes: stack `dev`, `origin/main` → this change\n")
    assert (
        "| research | gpu | nvidia.com/gpu (GPU) | 1 → 0 (-1) | no limit | no limit | 0.6 → 0.3 (-0.3) |"
        in text.splitlines()
    )
    assert (
        "| platform | cpu | cpu (vCPU) | 12.51 → 21.90 (+9.38) | no limit | no limit | 0.4 → 0.7 (+0.3) |"
        in text.splitlines()
    )
    assert NO_CHANGE not in text


def test_identical_versions_have_no_quota_change(dev_config_map: dict[str, Any]) -> None:
    dev = quotas(dev_config_map)
    assert quota_changes(dev, dev) == [] and membership(dev, dev) == []
    assert comparison_markdown("dev", "`main`", dev, quotas(dev_config_map)).endswith(f"\n{NO_CHANGE}\n")


def test_added_and_removed_teams_pools_and_capacity(dev_config_map: dict[str, Any]) -> None:
    after_map = copy.deepcopy(dev_config_map)
    after_map["kueue-aks:nodePools"] = [p for p in after_map["kueue-aks:nodePools"] if p["name"] != "tas"] + [
        {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2}
    ]
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


# --- the summary a reviewer reads first ---------------------------------------------------------


def test_the_spare_and_the_shares_are_read_from_the_built_objects(dev_config_map: dict[str, Any]) -> None:
    dev = quotas(dev_config_map)
    # 3 T4 GPUs, 1 + 1 guaranteed: the cohort holds the third, which either team may borrow.
    assert dev.spare[("gpu", "nvidia.com/gpu")] == 1 and dev.spare[("cpu", "cpu")] == 0
    assert dev.shares == {"research": Decimal(60), "platform": Decimal(40)}


def test_the_issue_case_leads_with_the_gpus_the_lost_spare_and_the_shares(dev_config_map: dict[str, Any]) -> None:
    # Issue 51: shares 60/40 -> 50/50 and the gpu pool's maxCount 3 -> 2. Each team keeps its 1 GPU;
    # the GPU that goes was the one no team was guaranteed, and the unchanged guarantees stay out.
    after = with_pool(with_shares(dev_config_map, research=50, platform=50), "gpu", maxCount=2)
    assert opening(dev_config_map, after) == [
        "- `gpu` loses 1 of its 3 GPUs (3 → 2): it was the spare GPU, which no team was guaranteed and any team "
        "could borrow; no team's guarantee changes.",
        "- Shares: research 60 % → 50 %, platform 40 % → 50 %.",
        "",
    ]
    text = comparison_markdown("dev", "`main`", quotas(dev_config_map), quotas(after))
    details = text.split(f"\n{DETAILS}\n", 1)[1]
    assert details.startswith("\n- **research loses 3.13 vCPU on cpu** (18.77 → 15.64)\n")
    assert "- `gpu` nvidia.com/gpu capacity (GPU): 3 → 2 (-1)" in details.splitlines()
    assert "| research | cpu | cpu (vCPU) | 18.77 → 15.64 (-3.13) | no limit | no limit | 0.6 → 0.5 (-0.1) |" in details


def test_gpus_lost_are_attributed_by_comparing_guarantees_and_spare(dev_config_map: dict[str, Any]) -> None:
    # Issue 61: 3 -> 2 T4 at 60/40: 60 % of 2 is 1, 40 % rounds down to 0; the spare stays 1, so
    # the GPU came out of platform's guarantee, not the spare (the old summary said the spare).
    assert opening(dev_config_map, with_pool(dev_config_map, "gpu", maxCount=2)) == [
        "- `gpu` loses 1 of its 3 GPUs (3 → 2): it comes out of the guarantees (platform 1 → 0); the spare stays 1.",
        "",
    ]
    # 3 -> 1: both shares of 1 round down to 0; the spare stays 1, both GPUs are the guarantees'.
    assert opening(dev_config_map, with_pool(dev_config_map, "gpu", maxCount=1))[0] == (
        "- `gpu` loses 2 of its 3 GPUs (3 → 1): they come out of the guarantees (research 1 → 0, platform 1 → 0); "
        "the spare stays 1."
    )
    # 4 T4 at 50/50: 2 + 2, none spare; 3 -> 1 + 1 and 1 spare: the guarantees give up 2, 1 left spare.
    even = with_shares(with_pool(dev_config_map, "gpu", maxCount=4), research=50, platform=50)
    assert opening(even, with_pool(even, "gpu", maxCount=3))[0] == (
        "- `gpu` loses 1 of its 4 GPUs (4 → 3): the guarantees give up 2 (research 2 → 1, platform 2 → 1), of which "
        "1 stays spare as the shares round down (spare 0 → 1)."
    )


def test_four_teams_losing_two_of_four_gpus_lose_them_from_their_guarantees(dev_config_map: dict[str, Any]) -> None:
    # Issue 61's four-team stack: 4 T4 at 30/30/25/15 give 1 + 1 + 1 + 0 and 1 spare; on 2 every share
    # rounds to 0 and both are spare. The guarantees lose 3 (not 1, as the old split said), one of
    # which stays as spare; d, unchanged at 0, is not named.
    four = copy.deepcopy(with_pool(dev_config_map, "gpu", maxCount=4))
    four["kueue-aks:teams"] = [{"name": n, "share": v} for n, v in (("a", 30), ("b", 30), ("c", 25), ("d", 15))]
    before, after = quotas(four), quotas(with_pool(four, "gpu", maxCount=2))
    key = ("gpu", "nvidia.com/gpu")
    assert [before.capacity[key] - before.spare[key], after.capacity[key] - after.spare[key]] == [3, 0]
    assert opening(four, with_pool(four, "gpu", maxCount=2)) == [
        "- `gpu` loses 2 of its 4 GPUs (4 → 2): the guarantees give up 3 (a 1 → 0, b 1 → 0, c 1 → 0), of which 1 "
        "stays spare as the shares round down (spare 1 → 2).",
        "",
    ]


def test_a_share_change_alone_names_the_shares_and_only_the_gpus_that_move(dev_config_map: dict[str, Any]) -> None:
    assert opening(dev_config_map, with_shares(dev_config_map, research=50, platform=50)) == [
        "- Shares: research 60 % → 50 %, platform 40 % → 50 %.",
        "",
    ]
    # 4 T4: 60/40 gives 2 + 1 and a spare; 50/50 gives 2 + 2, the spare becomes platform's.
    four = with_pool(dev_config_map, "gpu", maxCount=4)
    assert opening(four, with_shares(four, research=50, platform=50)) == [
        "- Guaranteed GPUs on `gpu`: platform 1 → 2; spare 1 → 0.",
        "- Shares: research 60 % → 50 %, platform 40 % → 50 %.",
        "",
    ]


def test_a_gpu_pool_gained_added_or_removed_says_whose_guarantees_change(dev_config_map: dict[str, Any]) -> None:
    after = copy.deepcopy(dev_config_map)
    after["kueue-aks:nodePools"].append(
        {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2}
    )
    # 2 A100s: 60 % -> 1, 40 % -> 0, 1 spare. The T4 pool does not change: no line for it.
    assert opening(dev_config_map, after) == [
        "- The pool `a100` is added with 2 GPUs: guaranteed to research 1; 1 spare, which no team is guaranteed and "
        "any team may borrow.",
        "",
    ]
    assert opening(after, dev_config_map) == [
        "- The pool `a100` is removed with its 2 GPUs: 1 was spare (no team's guarantee, any team could borrow it) "
        "and 1 comes out of the guarantees (research 1 → –).",
        "",
    ]
    assert opening(dev_config_map, with_pool(dev_config_map, "gpu", maxCount=5)) == [
        "- `gpu` gains 2 GPUs (3 → 5): guarantees research 1 → 3, platform 1 → 2; spare 1 → 0.",
        "",
    ]


def test_teams_added_and_removed_lead_with_what_up_creates_and_deletes(dev_config_map: dict[str, Any]) -> None:
    after = copy.deepcopy(dev_config_map)
    after["kueue-aks:teams"] = [{"name": "research", "share": 60}, {"name": "vision", "share": 40}]
    # research keeps its share and its GPU: it is not in the headline.
    assert opening(dev_config_map, after) == [
        "- **Team `vision` is added** with a 40 % share: namespace `vision`, LocalQueues `default`, `topology`.",
        "- **Team `platform` is removed**: `up` deletes its namespace `platform` with every job in it, running or "
        "waiting, and its queues.",
        "- Guaranteed GPUs on `gpu`: vision – → 1, platform 1 → –; the spare stays 1.",
        "",
    ]
    assert opening(None, dev_config_map)[2:] == [  # after the sentence that the stack is new
        "- **Team `research` is added** with a 60 % share: namespace `research`, LocalQueues `default`, `topology`.",
        "- **Team `platform` is added** with a 40 % share: namespace `platform`, LocalQueues `default`, `topology`.",
        "- The pool `gpu` is added with 3 GPUs: guaranteed to research 1, platform 1; 1 spare, which no team is "
        "guaranteed and any team may borrow.",
        "- Priority classes: `high` added (1000), `normal` added (0), `low` added (-1000).",
        "",
    ]


def test_borrowing_and_lending_limits_lead_the_summary(dev_config_map: dict[str, Any]) -> None:
    def teams(**settings: Any) -> dict[str, Any]:
        changed = copy.deepcopy(dev_config_map)
        changed["kueue-aks:teams"][0].update(settings)
        return changed

    # Before, a table row was all a reviewer saw of a team that can no longer borrow.
    assert opening(dev_config_map, teams(borrowing=0)) == [
        "- **research can no longer borrow** on `cpu`, `gpu`, `tas` (borrowing limit).",
        "",
    ]
    assert opening(teams(borrowing=0), dev_config_map) == [
        "- **research may borrow without limit** on `cpu`, `gpu`, `tas` (borrowing limit).",
        "",
    ]
    assert opening(dev_config_map, teams(borrowing=1)) == [
        "- **research's borrowing limits change**: GPUs on `gpu` no limit → 1; vCPU and memory on `cpu`, `gpu`, "
        "`tas` too (details below).",
        "",
    ]
    # No key sets a lending limit; the built objects may (a MultiKueue manager's, Kueue's own).
    dev = quotas(dev_config_map)
    lent = dataclasses.replace(
        dev,
        quotas={
            k: dataclasses.replace(q, lending_limit=0) if k[0] == "research" and k[1] == "gpu" else q
            for k, q in dev.quotas.items()
        },
    )
    text = comparison_markdown("dev", "`main`", dev, lent)
    assert "- **research no longer lends its idle quota** on `gpu` (lending limit)." in text.splitlines()


def test_kueue_and_operator_upgrades_lead_the_summary(dev_config_map: dict[str, Any]) -> None:
    old = copy.deepcopy(dev_config_map)
    old["kueue-aks:kueue"] = {"version": "0.18.4"}
    # It used to say "No quota change." and nothing of the upgrade.
    text = comparison_markdown("dev", "`main`", quotas(old), quotas(dev_config_map))
    assert NO_CHANGE in text
    assert opening(old, dev_config_map) == [
        "- **Kueue 0.18.4 → 0.19.2**: `up` upgrades it in place; queues and workloads stay "
        "(docs/day-2.md#upgrade-kueue says what else changes).",
        "- **MPI Operator 0.8.0 → 0.8.2**: `up` upgrades it in place.",
        "",
    ]
    fewer = copy.deepcopy(dev_config_map)
    fewer["kueue-aks:kueue"] = {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}
    lines = opening(dev_config_map, fewer)
    assert (
        "- **KubeRay 1.6.2 is uninstalled**: no enabled framework needs it; `up` removes it and its CRDs, with "
        "every object of its kinds." in lines
    ), lines
    assert not any("JobSet" in line for line in lines), lines


def test_priority_classes_changed_are_named(dev_config_map: dict[str, Any]) -> None:
    after = copy.deepcopy(dev_config_map)
    after["kueue-aks:priorityClasses"] = [
        {"name": "urgent", "value": 2000},
        {"name": "normal", "value": 0},
        {"name": "low", "value": -500},
    ]
    assert opening(dev_config_map, after) == [
        "- Priority classes: `urgent` added (2000), `low` -1000 → -500, `high` removed (was 1000).",
        "",
    ]


def test_a_cpu_only_change_says_so_in_one_line_and_keeps_the_details(dev_config_map: dict[str, Any]) -> None:
    after = with_pool(dev_config_map, "cpu", maxCount=3)
    assert opening(dev_config_map, after) == ["- No GPU or share change; the changes below are to CPU and memory.", ""]
    text = comparison_markdown("dev", "`main`", quotas(dev_config_map), quotas(after))
    assert "- **research loses 4.69 vCPU on cpu** (18.77 → 14.08)" in text.split(DETAILS, 1)[1]
    assert "| research | cpu | cpu (vCPU) | 18.77 → 14.08 (-4.69) | no limit | no limit | 0.6 |" in text


def test_identical_stacks_say_no_quota_change_and_nothing_else(dev_config_map: dict[str, Any]) -> None:
    assert comparison_markdown("dev", "`main`", quotas(dev_config_map), quotas(dev_config_map)).splitlines() == [
        "### Quota changes: stack `dev`, `main` → this change",
        "",
        NO_CHANGE,
    ]
