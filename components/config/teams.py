"""`kueue-aks:teams` and `kueue-aks:priorityClasses`: each team's share, pools, members,
borrowing and Azure identity, and the priority classes jobs may name; their defaults and parsers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..facts.built_in_roles import BUILT_IN_ROLES, PRIVILEGED_ROLES, role_name
from ..k8s.names import is_dns1123_label, is_dns1123_subdomain
from .checks import (
    INVALID,
    Checks,
    Problems,
    Reader,
    group_ids,
    group_names,
    shown,
    suggest,
)
from .keys import GUID, PRIORITY_CLASSES, TEAM, TEAMS, UNLIMITED
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
class TeamRole:
    """A role the team's identity holds: one Azure role assignment."""

    definition: str  # the role definition's name, a GUID, in lower case
    scope: str  # the Azure resource ID it is held on, as given (Azure compares IDs without case)

    @property
    def subscription(self) -> str:
        """The scope's subscription, whose role definitions the assignment names."""
        return self.scope.split("/")[2]


@dataclass(frozen=True)
class TeamIdentity:
    """The Azure identity a team's jobs run as (workload identity), and what it may do."""

    roles: tuple[TeamRole, ...]


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
    identity: TeamIdentity | None = None  # AKS only (create and existing modes)


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


# A role definition ID as Azure prints it (az role definition list --query [].id), with or without
# its subscription, or its bare name: the GUID names the role.
_ROLE_ID = re.compile(
    rf"(?i:(/subscriptions/{GUID})?/providers/Microsoft\.Authorization/roleDefinitions/)?(?P<guid>{GUID})"
)
_ROLE_NAMES = {name.lower(): guid for name, guid in {**BUILT_IN_ROLES, **PRIVILEGED_ROLES}.items()}
_PRIVILEGED = frozenset(PRIVILEGED_ROLES.values())
IDENTITY_ROLES = TEAM.key("identity").key("roles")


def parse_identity(problems: Problems, path: str, raw: Any) -> Any:
    """A team's identity, or INVALID: each role known and not privileged, each (role, scope) once."""
    r = Reader(problems, path, raw, TEAM.key("identity"))
    if not r.value:  # not an object, or one without roles: said by the Reader
        return INVALID

    def role(p: str, v: str) -> Any:
        given = _ROLE_ID.fullmatch(v)
        definition = given.group("guid").lower() if given else _ROLE_NAMES.get(v.lower())
        if definition is None:
            problems.add(
                p,
                f"{shown(v)} is not a built-in role this program knows{suggest(v, list(BUILT_IN_ROLES), 3)}; "
                "any other role is given by its definition ID (az role definition list --name '<role>' "
                "--query [0].name -o tsv)",
            )
            return INVALID
        if definition in _PRIVILEGED:
            problems.add(
                p,
                f"{role_name(definition)!r} would let every job of the team take over what it is held on; "
                "give the identity the data roles its jobs need, such as Storage Blob Data Reader",
            )
            return INVALID
        return definition

    items = r.get("roles", None)
    if items is None:
        return INVALID
    roles: list[TeamRole] = []
    seen: dict[tuple[str, str], int] = {}
    ok = True
    for i, item in enumerate(items):
        ip = f"{r.at('roles')}[{i}]"
        ir = Reader(problems, ip, item, IDENTITY_ROLES.items)  # type: ignore[arg-type]
        if not ir.value:
            if item is None or isinstance(item, Mapping):
                problems.add(ip, "must be an object with role and scope")
            ok = False
            continue
        definition, scope = ir.get("role", None, role), ir.get("scope", None)
        if definition is None or scope is None:
            ok = False
            continue
        key = (definition, scope.lower())
        if key in seen:
            problems.add(
                ip,
                f"holds {role_name(definition)!r} on {shown(scope)} as [{seen[key]}] does (scopes compare without "
                "case): Azure keeps one assignment of a role to an identity at a scope; list each once",
            )
            ok = False
            continue
        seen[key] = i
        roles.append(TeamRole(definition, scope))
    return TeamIdentity(tuple(roles)) if ok else INVALID


def parse_teams(
    problems: Problems,
    raw: Any,
    pools: tuple[NodePool, ...],
    pools_ok: bool,
    *,
    manager: bool = False,
    azure: bool = True,
    reserved: frozenset[str] = frozenset(),
) -> tuple[Team, ...]:
    """The teams; on a MultiKueue manager only their names: its quotas are the sum of the workers'.
    `azure`: the cluster is AKS (create or existing mode), so members are Entra ID groups and a team
    may have an Azure identity. `reserved`: namespaces other parts of the stack own (the operators'),
    which no team may take."""
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
        members = r.get("members", (), group_ids(problems) if azure else group_names(problems))
        borrow = r.get("borrowing", UNLIMITED)
        identity = None
        if "identity" in r.value and manager:
            problems.add(
                r.at("identity"),
                "is for the workers: a MultiKueue manager runs no team jobs; give the team its identity in the "
                "worker stacks, where its jobs run",
            )
        elif "identity" in r.value and not azure:
            problems.add(
                r.at("identity"),
                "needs AKS: with cluster.kubeconfig the stack makes nothing in Azure, so no identity the jobs "
                "could run as; remove it, or give the jobs their credentials another way",
            )
        else:
            identity = r.get("identity", None, lambda p, v: parse_identity(problems, p, v))
        if name is not None and s is not None:
            if name in teams:
                problems.add(r.at("name"), f"{name!r} is used by another team; team names must be unique")
            else:
                teams[name] = Team(name, s, team_pool_names, members, None if borrow == UNLIMITED else borrow, identity)
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
