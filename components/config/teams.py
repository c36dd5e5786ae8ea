"""`kueue-aks:teams` and `kueue-aks:priorityClasses`: each team's share, pools, members and
borrowing, and the priority classes jobs may name; their defaults and parsers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..k8s.names import is_dns1123_label, is_dns1123_subdomain
from .checks import (
    INT32_MAX,
    INVALID,
    Checks,
    Problems,
    Reader,
    group_ids,
    group_names,
    type_name,
)
from .names import (
    NAMESPACE,
    RESERVED_NAMESPACES,
    RESERVED_PREFIX,
    TOPOLOGY_QUEUE_SUFFIX,
)
from .pools import NodePool

# How much a team may borrow of each flavor's resources, as a multiple of its own quota there
# (Kueue's borrowingLimit). No limit by default: on the outcome benchmark (docs/outcomes.md) a
# limit of 2 never shortened the makespan, and its fairness gain did not repeat.
UNLIMITED = "unlimited"


@dataclass(frozen=True)
class Team:
    name: str
    share: Decimal  # percent of every flavor's capacity, (0, 100]
    pools: tuple[str, ...]
    # The groups whose users may submit to the team's queues: Entra ID group object IDs on AKS, the
    # cluster's own group names in kubeconfig mode (components/access grants them).
    members: tuple[str, ...] = ()
    # A multiple of the team's quota it may borrow from what the others leave idle; None: no limit.
    borrowing: Decimal | None = None


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    description: str = ""


# A job without the kueue.x-k8s.io/priority-class label gets its pods' priority, 0 when they name no
# PriorityClass (Kueue's pkg/util/priority), so the everyday class is 0 and such a job runs as
# `normal`, not below `low`.
DEFAULT_PRIORITY = 0


DEFAULT_PRIORITY_CLASSES = (
    PriorityClass("high", 1000, "Urgent work; preempts lower priorities in its team's queue."),
    PriorityClass(
        "normal", DEFAULT_PRIORITY, "Everyday batch jobs; a job without a priority label runs at this priority."
    ),
    PriorityClass("low", -1000, "Opportunistic work; first to be preempted."),
)


def parse_teams(
    problems: Problems,
    raw: Any,
    pools: tuple[NodePool, ...],
    pools_ok: bool,
    *,
    manager: bool = False,
    azure_groups: bool = True,
) -> tuple[Team, ...]:
    """The teams; on a MultiKueue manager only their names: its quotas are the sum of the workers'."""
    c = Checks(problems)
    path = f"{NAMESPACE}:teams"
    if raw is None:
        problems.add(path, "is required: a list of at least one team")
        return ()
    items = c.items(path, raw, "teams")
    if not items:
        if items is not None:
            problems.add(path, "must list at least one team")
        return ()
    pool_names = [p.name for p in pools]
    teams: dict[str, Team] = {}  # by name: uniqueness in constant time for hundreds of teams
    for i, t in enumerate(items):
        tp = f"{path}[{i}]"
        r = Reader(problems, tp, t, ["name", "share", "pools", "members", "borrowing"])
        if not r.value:
            if t is None or isinstance(t, Mapping):
                problems.add(tp, "must be an object with name and share")
            continue

        def team_name(p: str, v: Any) -> Any:
            if c.string(p, v) is INVALID:
                return INVALID
            if not is_dns1123_label(v):
                problems.add(
                    p,
                    f"{v!r} must be a DNS-1123 label (≤ 63 lowercase letters, digits and '-'); it names the team's "
                    "namespace and ClusterQueue",
                )
                return INVALID
            if v in RESERVED_NAMESPACES:
                problems.add(p, f"{v!r} is a reserved namespace; choose another team name")
                return INVALID
            if v.startswith(RESERVED_PREFIX):
                problems.add(
                    p,
                    f"{v!r} would name the team's namespace and ClusterQueue with the {RESERVED_PREFIX!r} "
                    "prefix, which AKS's managed Kueue extension reserves for its own objects; choose another "
                    "team name",
                )
                return INVALID
            return v

        def share(p: str, v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                problems.add(p, f"must be a number of percent in (0, 100]; got {type_name(v)} {v!r}")
                return INVALID
            d = Decimal(str(v))
            if not 0 < d <= 100:
                problems.add(p, f"{v} is out of range; allowed: more than 0, at most 100 (percent)")
                return INVALID
            return d

        def borrowing(p: str, v: Any) -> Any:
            if v == UNLIMITED:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
                problems.add(
                    p,
                    f"must be a multiple of the team's quota in [0, 100] (0: no borrowing) or "
                    f"{UNLIMITED!r} (the default); got {type_name(v)} {v!r}",
                )
                return INVALID
            return Decimal(str(v))

        def team_pools(p: str, v: Any) -> Any:
            return c.choices(
                p,
                v,
                "user pool names",
                pool_names if pools_ok else None,
                empty="pool (omit the key for all pools)",
                unknown="a user pool",
            )

        name = r.get("name", None, team_name)
        if "name" not in r.value:
            problems.add(r.at("name"), "is required (a DNS-1123 label such as research)")
        if manager:
            for key in ("share", "pools"):
                if key in r.value:
                    problems.add(
                        r.at(key),
                        "is set on the workers: a MultiKueue manager's quota for a team is the sum "
                        "of the team's quotas on its workers; remove it",
                    )
            s: Decimal | None = Decimal(0)
            team_pool_names: tuple[str, ...] = ()
        else:
            s = r.get("share", None, share)
            if "share" not in r.value:
                problems.add(r.at("share"), "is required (percent of every flavor's capacity, in (0, 100])")
            team_pool_names = r.get("pools", tuple(pool_names), team_pools)
        members = r.get("members", (), group_ids(problems) if azure_groups else group_names(problems))
        # `borrowing:` left empty is a slip, not a choice: the error asks for one.
        borrow = None if "borrowing" not in r.value else r.get("borrowing", INVALID, borrowing)
        if "borrowing" in r.value and r.value["borrowing"] is None:
            problems.add(
                r.at("borrowing"), f"is empty; allowed: a multiple of the team's quota in [0, 100] or {UNLIMITED!r}"
            )
        if name is not None and s is not None and borrow is not INVALID:
            if name in teams:
                problems.add(r.at("name"), f"{name!r} is used by another team; team names must be unique")
            else:
                teams[name] = Team(name, s, team_pool_names, members, borrow)
    by_pool = {p.name: p for p in pools}
    for i, t in enumerate(items):
        name = t.get("name") if isinstance(t, Mapping) else None
        if not isinstance(name, str) or not name.endswith(TOPOLOGY_QUEUE_SUFFIX):
            continue
        owner = teams.get(name[: -len(TOPOLOGY_QUEUE_SUFFIX)])
        if name in teams and owner is not None and any(by_pool[p].topology for p in owner.pools if p in by_pool):
            problems.add(
                f"{path}[{i}].name",
                f"{name!r} is the name of team {owner.name!r}'s ClusterQueue for its "
                "topology-aware pools; choose another team name",
            )
    total = sum((t.share for t in teams.values()), Decimal(0))
    if total > 100:
        problems.add(path, f"shares add up to {total}%; the total must be at most 100% of capacity")
    return tuple(teams.values())


def parse_priority_classes(problems: Problems, raw: Any) -> tuple[PriorityClass, ...]:
    c = Checks(problems)
    path = f"{NAMESPACE}:priorityClasses"
    if raw is None:
        return DEFAULT_PRIORITY_CLASSES
    items = c.items(path, raw, "priority classes {name, value, description}")
    if items is None:
        return DEFAULT_PRIORITY_CLASSES
    out: dict[str, PriorityClass] = {}
    for i, pc in enumerate(items):
        r = Reader(problems, f"{path}[{i}]", pc, ["name", "value", "description"])

        def pc_name(p: str, v: Any) -> Any:
            if c.string(p, v) is INVALID:
                return INVALID
            if not (is_dns1123_subdomain(v) and len(v) <= 63):
                problems.add(p, f"{v!r} must be a DNS-1123 name of at most 63 characters (it becomes a label value)")
                return INVALID
            if v.startswith(RESERVED_PREFIX):
                problems.add(
                    p,
                    f"{v!r} would name a WorkloadPriorityClass with the {RESERVED_PREFIX!r} prefix, which AKS's "
                    "managed Kueue extension reserves for its own (aks-low-priority, aks-medium-priority, "
                    "aks-high-priority); choose another name",
                )
                return INVALID
            return v

        name = r.get("name", None, pc_name)
        value = r.get("value", None, lambda p, v: c.integer(p, v, -(2**31), INT32_MAX))
        for key in ("name", "value"):
            if key not in r.value:
                problems.add(r.at(key), "is required")

        def description(p: str, v: Any) -> Any:
            if isinstance(v, str) and len(v) > 2048:
                problems.add(p, f"has {len(v)} characters; Kueue allows at most 2048")
                return INVALID
            return c.string(p, v)

        text = r.get("description", "", description)
        if name is not None and value is not None:
            if name in out:
                problems.add(r.at("name"), f"{name!r} is used twice; names must be unique")
            else:
                out[name] = PriorityClass(name, value, text)
    return tuple(out.values())
