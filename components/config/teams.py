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
    INVALID,
    Checks,
    Problems,
    Reader,
    group_ids,
    group_names,
    shown,
)
from .keys import PRIORITY_CLASSES, TEAM, TEAMS, UNLIMITED
from .names import (
    RESERVED_NAMESPACES,
    RESERVED_PREFIX,
    TOPOLOGY_QUEUE_SUFFIX,
)
from .pools import NodePool

# How much a team may borrow of each flavor's resources is a multiple of its own quota there
# (Kueue's borrowingLimit), UNLIMITED by default: on the outcome benchmark (docs/outcomes.md) a
# limit of 2 never shortened the makespan, and its fairness gain did not repeat.


@dataclass(frozen=True)
class Team:
    name: str
    share: Decimal  # percent of every flavor's capacity, 0.01 to 100 with at most 10 decimal places
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
    reserved: frozenset[str] = frozenset(),
) -> tuple[Team, ...]:
    """The teams; on a MultiKueue manager only their names: its quotas are the sum of the workers'.
    `reserved`: namespaces other parts of the stack own (the operators'), which no team may take."""
    c = Checks(problems)
    path = TEAMS.name
    if raw is None:
        problems.add(path, f"is required{TEAMS.required}")
        return ()
    items = c.value(path, raw, TEAMS)
    if items is INVALID:
        return ()
    pool_names = [p.name for p in pools]
    teams: dict[str, Team] = {}  # by name: uniqueness in constant time for hundreds of teams
    for i, t in enumerate(items):
        tp = f"{path}[{i}]"
        r = Reader(problems, tp, t, TEAM, exempt=("share",) if manager else ())
        if not r.value:
            if t is None or isinstance(t, Mapping):
                problems.add(tp, "must be an object with name and share")
            continue

        def team_name(p: str, v: str) -> Any:
            if not is_dns1123_label(v):
                problems.add(
                    p,
                    f"{shown(v)} must be a DNS-1123 label (≤ 63 lowercase letters, digits and '-'); it names the "
                    "team's namespace and ClusterQueue",
                )
                return INVALID
            if v in RESERVED_NAMESPACES:
                problems.add(p, f"{v!r} is a reserved namespace; choose another team name")
                return INVALID
            if v in reserved:
                problems.add(
                    p,
                    f"{v!r} is the namespace of a job operator the stack installs; a team there would share it "
                    "with the operator's controller (and removing the team would delete it): choose another team name",
                )
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
            s = r.get("share", None)
            team_pool_names = r.get("pools", tuple(pool_names), team_pools)
        members = r.get("members", (), group_ids(problems) if azure_groups else group_names(problems))
        borrow = r.get("borrowing", UNLIMITED)
        if name is not None and s is not None:
            if name in teams:
                problems.add(r.at("name"), f"{name!r} is used by another team; team names must be unique")
            else:
                teams[name] = Team(name, s, team_pool_names, members, None if borrow == UNLIMITED else borrow)
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
    path = PRIORITY_CLASSES.name
    if raw is None:
        return DEFAULT_PRIORITY_CLASSES
    items = c.value(path, raw, PRIORITY_CLASSES)
    if items is INVALID:
        return DEFAULT_PRIORITY_CLASSES
    out: dict[str, PriorityClass] = {}
    for i, pc in enumerate(items):
        r = Reader(problems, f"{path}[{i}]", pc, PRIORITY_CLASSES.items)  # type: ignore[arg-type]
        if not r.value:
            if pc is None or isinstance(pc, Mapping):
                problems.add(f"{path}[{i}]", "must be an object with name and value")
            continue

        def pc_name(p: str, v: str) -> Any:
            if not (is_dns1123_subdomain(v) and len(v) <= 63):
                problems.add(
                    p, f"{shown(v)} must be a DNS-1123 name of at most 63 characters (it becomes a label value)"
                )
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
        value = r.get("value", None)
        text = r.get("description", "")
        if name is not None and value is not None:
            if name in out:
                problems.add(r.at("name"), f"{name!r} is used twice; names must be unique")
            else:
                out[name] = PriorityClass(name, value, text)
    return tuple(out.values())
