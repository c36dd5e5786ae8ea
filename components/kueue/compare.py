"""What a change does to a stack's queues, as plain data and Markdown, for reviewers.

Each side is what the program builds (components/plan.py builds both with the same code): per
team, flavor and resource, the nominal quota, borrowing and lending limits and fair-sharing weight
its ClusterQueue is built with (from the quota rows and the teams), each team's share and
LocalQueues, the pools and flavors, each flavor's capacity and spare (the cohort's quota, as the
quota table has it), the priority classes, and what is installed of Kueue and the operators. The
comparison opens with a headline of only what changes: the caller's leading lines (edits AKS cannot
apply in place), versions, teams added and removed, per GPU flavor the GPUs gained or lost and
where they come from (the spare, what no team is guaranteed and any team may borrow, and each
team's guarantee, both sides compared), borrowing and lending limits, shares and priority classes;
then the caller's other lines (the team identities' Azure roles). Then the details, before → after:
who gains or loses guaranteed capacity (nominal quota), GPUs first; every changed quota row; the
teams, pools and flavors added or removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ..config.stack import StackConfig
from ..facts.operators import OPERATOR_PINS, OPERATORS
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY, UNITS, human, human_amount
from .objects import QueueSet, borrowing_limit, fair_sharing_weight

# GPUs first: the scarcest capacity, and the change a reviewer must not miss.
RESOURCE_ORDER = (RESOURCE_GPU, RESOURCE_CPU, RESOURCE_MEMORY)
NO_CHANGE = "No quota change."
DETAILS = "#### Details"

QuotaKey = tuple[str, str, str]  # team, flavor, resource


@dataclass(frozen=True)
class Quota:
    """A team's quota of one flavor and resource, as its ClusterQueue has it (display units)."""

    nominal: int
    borrowing_limit: int | None  # None: no limit, it may borrow whatever the cohort leaves idle
    lending_limit: int | None  # None: no limit, others may borrow all of it while it is idle
    weight: Decimal  # the ClusterQueue's fair-sharing weight


@dataclass(frozen=True)
class StackQuotas:
    """One version of a stack, as far as quotas go."""

    teams: tuple[str, ...]
    pools: Mapping[str, str]  # pool -> what it is, e.g. "Standard_D8s_v5, 0–4 nodes"
    flavors: tuple[str, ...]
    capacity: Mapping[tuple[str, str], int]  # (flavor, resource) -> capacity
    quotas: Mapping[QuotaKey, Quota]
    # (flavor, resource) -> what no team is guaranteed: the cohort's own quota, any team may borrow it
    spare: Mapping[tuple[str, str], int] = field(default_factory=dict)
    shares: Mapping[str, Decimal] = field(default_factory=dict)  # team -> share in percent (its weight × 100)
    local_queues: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # team -> its LocalQueues
    priorities: Mapping[str, int] = field(default_factory=dict)  # WorkloadPriorityClass -> value
    versions: Mapping[str, str] = field(default_factory=dict)  # Kueue and each operator -> what is installed


@dataclass(frozen=True)
class QuotaChange:
    """A quota row that differs; a side is None where the team does not use the flavor there."""

    team: str
    flavor: str
    resource: str
    before: Quota | None
    after: Quota | None


def stack_quotas(config: StackConfig, queues: QueueSet) -> StackQuotas:
    """The quotas of the stack's ClusterQueues, from the quota rows and the teams they are built of,
    in the queues' order: per team its ordinary queue's flavors, then its topology-aware queue's."""
    quotas: dict[QuotaKey, Quota] = {}
    for team in queues.teams:
        weight = fair_sharing_weight(team.share)
        for topology in (False, True):
            for row in queues.rows:
                if row.topology == topology and team.name in row.teams:
                    nominal = row.teams[team.name]
                    # No builder sets a lending limit: the ClusterQueues lend all their idle quota.
                    quotas[(team.name, row.flavor, row.resource)] = Quota(
                        nominal, borrowing_limit(nominal, team.borrowing), None, weight
                    )
    return StackQuotas(
        teams=tuple(queues.local_queues),
        pools={p.name: f"{p.vm_size}, {p.min_count}–{p.max_count} nodes" for p in config.node_pools},
        flavors=tuple(dict.fromkeys(row.flavor for row in queues.rows)),
        capacity={(row.flavor, row.resource): row.capacity for row in queues.rows},
        quotas=quotas,
        spare={(row.flavor, row.resource): row.cohort for row in queues.rows},
        shares={team.name: fair_sharing_weight(team.share) * 100 for team in queues.teams},
        local_queues={team: tuple(q) for team, q in queues.local_queues.items()},
        priorities={pc.name: pc.value for pc in config.priority_classes},
        versions=installed_versions(config),
    )


def installed_versions(config: StackConfig) -> dict[str, str]:
    """What the stack installs of Kueue and each operator, by title: a pinned version, the AKS
    extension's, or "yours" for an operator the cluster already has."""
    kueue = config.kueue
    ext = kueue.extension
    versions = {"Kueue": f"{ext.version} (AKS extension, Kueue {ext.kueue})" if ext else kueue.version}
    for settings in config.operators:
        title = OPERATORS[settings.key].title
        external = settings.install == "external"
        versions[title] = "yours" if external else OPERATOR_PINS[kueue.version][settings.key].version
    return versions


def quota_changes(before: StackQuotas, after: StackQuotas) -> list[QuotaChange]:
    """Every quota row that differs, in the after side's order, then the rows that are gone.

    Rows of a resource the flavor has none of on either side (GPUs of a CPU pool: one resource group
    covers all three) guarantee nothing; they would differ only in the queue's weight, and are left out."""
    keys = [*after.quotas, *(k for k in before.quotas if k not in after.quotas)]
    return [
        QuotaChange(*key, before.quotas.get(key), after.quotas.get(key))
        for key in keys
        if before.quotas.get(key) != after.quotas.get(key)
        and (before.capacity.get(key[1:]) or after.capacity.get(key[1:]))
    ]


def callouts(changes: Sequence[QuotaChange], flavors: Sequence[str]) -> list[str]:
    """Each team that gains or loses guaranteed capacity, in words: GPUs first, then vCPUs and
    memory; within a kind by flavor, losses before gains."""
    moved = []
    for c in changes:
        was, now = (c.before.nominal if c.before else 0), (c.after.nominal if c.after else 0)
        if was != now:
            moved.append(
                (
                    RESOURCE_ORDER.index(c.resource),
                    flavors.index(c.flavor) if c.flavor in flavors else len(flavors),
                    now > was,
                    c,
                    was,
                    now,
                )
            )
    moved.sort(key=lambda m: m[:3])
    lines = []
    for *_, c, was, now in moved:
        verb = "gains" if now > was else "loses"
        before = human(c.resource, was) if c.before else "–"
        after = human(c.resource, now) if c.after else "–"
        lines.append(
            f"**{c.team} {verb} {human_amount(c.resource, abs(now - was))} on {c.flavor}** ({before} → {after})"
        )
    return lines


def _difference(resource: str | None, was: int | Decimal | None, now: int | Decimal | None) -> str:
    """before → after (difference), or the one value when it did not change; – where there is none."""

    def show(v: int | Decimal | None) -> str:
        if v is None:
            return "–"
        return human(resource, int(v)) if resource else f"{Decimal(v).normalize():f}"

    if was == now:
        return show(now)
    if was is None or now is None:
        return f"{show(was)} → {show(now)}"
    delta = Decimal(now) - Decimal(was)
    return f"{show(was)} → {show(now)} ({'+' if delta > 0 else '-'}{show(abs(delta))})"


def _limit(resource: str, was: Quota | None, now: Quota | None, attr: str) -> str:
    values = [getattr(q, attr) if q else None for q in (was, now)]
    words = [
        "–" if q is None else "no limit" if v is None else human(resource, v)
        for q, v in zip((was, now), values, strict=True)
    ]
    if words[0] == words[1]:
        return words[1]
    if None in values:
        return f"{words[0]} → {words[1]}"
    return _difference(resource, *values)


def _added_removed(
    what: str, before: Sequence[str], after: Sequence[str], describe: Callable[[str], str] = lambda name: ""
) -> list[str]:
    lines = [f"{what} `{name}` added{describe(name)}" for name in after if name not in before]
    return lines + [f"{what} `{name}` removed{describe(name)}" for name in before if name not in after]


def membership(before: StackQuotas, after: StackQuotas) -> list[str]:
    """Teams, pools and flavors added or removed, and flavors whose capacity changed."""
    pools = {**before.pools, **after.pools}
    lines = _added_removed("team", before.teams, after.teams)
    lines += _added_removed("pool", list(before.pools), list(after.pools), lambda name: f" ({pools[name]})")
    # A pool's flavor has its name: say so once, as the pool; a MultiKueue manager has flavors alone.
    lines += _added_removed(
        "flavor", [f for f in before.flavors if f not in pools], [f for f in after.flavors if f not in pools]
    )
    for (flavor, resource), capacity in after.capacity.items():
        was = before.capacity.get((flavor, resource))
        if was is not None and was != capacity:
            lines.append(
                f"`{flavor}` {resource} capacity ({UNITS[resource][0]}): {_difference(resource, was, capacity)}"
            )
    return lines


def _teams(before: StackQuotas, after: StackQuotas) -> list[str]:
    return [*after.teams, *(t for t in before.teams if t not in after.teams)]


def _gpu_flavors(before: StackQuotas, after: StackQuotas) -> list[str]:
    """The flavors with GPUs on either side, the after side's order first."""
    flavors = [*after.flavors, *(f for f in before.flavors if f not in after.flavors)]
    return [f for f in flavors if before.capacity.get((f, RESOURCE_GPU)) or after.capacity.get((f, RESOURCE_GPU))]


def _gpus(count: int) -> str:
    return human_amount(RESOURCE_GPU, count)


def _guarantee_changes(flavor: str, before: StackQuotas, after: StackQuotas) -> list[tuple[str, int, int]]:
    """(team, GPUs before, after) for each team whose guaranteed GPUs on the flavor change; a team
    absent on a side holds 0 there (the line shows it as –)."""
    moved = []
    for team in _teams(before, after):
        was, now = (side.quotas.get((team, flavor, RESOURCE_GPU)) for side in (before, after))
        if (was.nominal if was else 0) != (now.nominal if now else 0):
            moved.append((team, was.nominal if was else 0, now.nominal if now else 0))
    return moved


def _who(flavor: str, moved: Sequence[tuple[str, int, int]], before: StackQuotas, after: StackQuotas) -> str:
    """Each moved team's guarantee, before → after, – where the team does not exist."""

    def side(team: str, quotas: StackQuotas, n: int) -> str:
        return str(n) if (team, flavor, RESOURCE_GPU) in quotas.quotas else "–"

    return ", ".join(f"{team} {side(team, before, was)} → {side(team, after, now)}" for team, was, now in moved)


def _spare_words(n: int) -> str:
    return "it was the spare GPU" if n == 1 else f"{'both' if n == 2 else 'all'} were spare GPUs"


def _gpu_line(flavor: str, before: StackQuotas, after: StackQuotas) -> str | None:
    """What happens to a GPU flavor's GPUs, in one sentence, or None when neither its capacity nor
    any team's guarantee on it changes. A loss is split between the spare (what no team is
    guaranteed: the cohort's, any team may borrow it) and the guarantees by comparing both sides,
    since rounding can move a GPU between them."""
    key = (flavor, RESOURCE_GPU)
    cap_was, cap_now = before.capacity.get(key, 0), after.capacity.get(key, 0)
    spare_was, spare_now = before.spare.get(key, 0), after.spare.get(key, 0)
    moved = _guarantee_changes(flavor, before, after)
    who = _who(flavor, moved, before, after)
    name = f"pool `{flavor}`" if flavor in {**before.pools, **after.pools} else f"flavor `{flavor}`"
    spare = f"spare {spare_was} → {spare_now}" if spare_was != spare_now else f"the spare stays {spare_now}"
    if cap_was == cap_now:
        if not moved and spare_was == spare_now:
            return None
        return f"Guaranteed GPUs on `{flavor}`: {who or 'no team changes'}; {spare}."
    if flavor not in before.flavors:
        given = ", ".join(f"{team} {now}" for team, _, now in moved if now) or "none"
        return (
            f"The {name} is added with {_gpus(cap_now)}: guaranteed to {given}; {spare_now} spare, which no team is "
            "guaranteed and any team may borrow."
        )
    if cap_now > cap_was:
        to = f"guarantees {who}" if moved else "no team's guarantee changes"
        return f"`{flavor}` gains {_gpus(cap_now - cap_was)} ({cap_was} → {cap_now}): {to}; {spare}."
    lost = cap_was - cap_now
    from_teams = sum(was - now for _, was, now in moved)
    from_spare = spare_was - spare_now
    if from_teams <= 0:
        verdict = f"{_spare_words(lost)}, which no team was guaranteed and any team could borrow"
        verdict += f"; guarantees {who}" if moved else "; no team's guarantee changes"
    elif from_spare == 0:
        comes = "it comes" if lost == 1 else "they come"
        verdict = f"{comes} out of the guarantees ({who}); the spare stays {spare_now}"
    elif from_spare < 0:
        verdict = (
            f"the guarantees give up {from_teams} ({who}), of which {-from_spare} "
            f"{'stays' if from_spare == -1 else 'stay'} spare as the shares round down ({spare})"
        )
    else:
        verdict = (
            f"{from_spare} {'was' if from_spare == 1 else 'were'} spare (no team's guarantee, any team could borrow "
            f"{'it' if from_spare == 1 else 'them'}) and {from_teams} {'comes' if from_teams == 1 else 'come'} out "
            f"of the guarantees ({who})"
        )
    if flavor not in after.flavors:
        return f"The {name} is removed with its {_gpus(cap_was)}: {verdict}."
    return f"`{flavor}` loses {lost} of its {_gpus(cap_was)} ({cap_was} → {cap_now}): {verdict}."


def _percent(share: Decimal) -> str:
    return f"{share.normalize():f} %"


def _share_changes(before: StackQuotas, after: StackQuotas) -> list[str]:
    """Share changes of the teams on both sides (a new or removed team has a line of its own)."""
    parts = [
        f"{team} {_percent(before.shares[team])} → {_percent(after.shares[team])}"
        for team in after.teams
        if team in before.shares and team in after.shares and before.shares[team] != after.shares[team]
    ]
    return [f"Shares: {', '.join(parts)}."] if parts else []


def _team_lines(before: StackQuotas, after: StackQuotas) -> list[str]:
    """Each team added (its share and queues) or removed (what `up` deletes with it)."""
    lines = []
    for team in after.teams:
        if team not in before.teams:
            queues = ", ".join(f"`{q}`" for q in after.local_queues.get(team, ()))
            share = f" with a {_percent(after.shares[team])} share" if team in after.shares else ""
            lines.append(f"**Team `{team}` is added**{share}: namespace `{team}`, LocalQueues {queues or '–'}.")
    for team in before.teams:
        if team not in after.teams:
            lines.append(
                f"**Team `{team}` is removed**: `up` deletes its namespace `{team}` with every job in it, running "
                "or waiting, and its queues."
            )
    return lines


def _limit_words(kind: str, limit: int | None) -> str:
    if kind == "borrowing":
        return "may borrow without limit" if limit is None else "can no longer borrow" if limit == 0 else ""
    return "lends all its idle quota" if limit is None else "no longer lends its idle quota" if limit == 0 else ""


def _limit_lines(changes: Sequence[QuotaChange]) -> list[str]:
    """Per team and kind of limit, the borrowing and lending limits that change on rows the team
    has on both sides: in words where every new limit says the same (none, or no limit), else
    each row's before → after."""
    rows: dict[tuple[str, str], list[tuple[QuotaChange, int | None, int | None]]] = {}
    for c in changes:
        if c.before is None or c.after is None:
            continue
        for kind in ("borrowing", "lending"):
            was, now = getattr(c.before, f"{kind}_limit"), getattr(c.after, f"{kind}_limit")
            if was != now:
                rows.setdefault((c.team, kind), []).append((c, was, now))
    lines = []
    for (team, kind), moved in rows.items():
        flavors = ", ".join(dict.fromkeys(f"`{c.flavor}`" for c, _, _ in moved))
        words = {_limit_words(kind, now) for _, _, now in moved}
        if len(words) == 1 and "" not in words:
            lines.append(f"**{team} {words.pop()}** on {flavors} ({kind} limit).")
            continue
        gpus = [(c, was, now) for c, was, now in moved if c.resource == RESOURCE_GPU]
        each = "; ".join(
            f"GPUs on `{c.flavor}` {'no limit' if was is None else was} → {'no limit' if now is None else now}"
            for c, was, now in gpus
        )
        rest = ", ".join(dict.fromkeys(f"`{c.flavor}`" for c, _, _ in moved if c.resource != RESOURCE_GPU))
        if rest:
            each += f"{'; ' if each else ''}vCPU and memory on {rest}{' too' if gpus else ''} (details below)"
        lines.append(f"**{team}'s {kind} limits change**: {each}.")
    return lines


def _priority_lines(before: StackQuotas, after: StackQuotas) -> list[str]:
    """The priority classes added, removed or revalued, in one line."""
    parts = [f"`{n}` added ({v})" for n, v in after.priorities.items() if n not in before.priorities]
    parts += [
        f"`{n}` {before.priorities[n]} → {v}"
        for n, v in after.priorities.items()
        if n in before.priorities and before.priorities[n] != v
    ]
    parts += [f"`{n}` removed (was {v})" for n, v in before.priorities.items() if n not in after.priorities]
    return [f"Priority classes: {', '.join(parts)}."] if parts else []


def _version_lines(before: StackQuotas, after: StackQuotas) -> list[str]:
    """Kueue and each operator whose version changes, is added or is removed, and what `up` does."""
    lines = []
    for title, now in after.versions.items():
        was = before.versions.get(title)
        if not before.versions or was == now:
            continue
        if was is None:
            lines.append(f"**{title} {now} is installed** for the enabled frameworks.")
        elif title == "Kueue":
            lines.append(
                f"**Kueue {was} → {now}**: `up` upgrades it in place; queues and workloads stay "
                "(docs/day-2.md#upgrade-kueue says what else changes)."
            )
        else:
            lines.append(f"**{title} {was} → {now}**: `up` upgrades it in place.")
    lines += [
        f"**{title} {was} is uninstalled**: no enabled framework needs it; `up` removes it and its CRDs, with "
        "every object of its kinds."
        for title, was in before.versions.items()
        if title not in after.versions and was != "yours"
    ]
    return lines


def headline(before: StackQuotas, after: StackQuotas, changes: Sequence[QuotaChange]) -> list[str]:
    """What a reviewer reads first, a sentence a line, only of what changes: Kueue's and the
    operators' versions; teams added or removed; per GPU flavor, the GPUs gained or lost and whose
    guarantees change; borrowing and lending limits; shares; priority classes."""
    lines = _version_lines(before, after) + _team_lines(before, after)
    lines += [line for flavor in _gpu_flavors(before, after) if (line := _gpu_line(flavor, before, after))]
    return lines + _limit_lines(changes) + _share_changes(before, after) + _priority_lines(before, after)


def summary(before: StackQuotas, after: StackQuotas, changes: Sequence[QuotaChange]) -> list[str]:
    """The headline, or one line saying that none of it changed."""
    return headline(before, after, changes) or [
        "No GPU or share change" + ("; the changes below are to CPU and memory." if changes else ".")
    ]


def comparison_markdown(
    stack: str,
    base: str,
    before: StackQuotas | None,
    after: StackQuotas,
    also: Sequence[str] = (),
    lead: Sequence[str] = (),
) -> str:
    """The comparison a reviewer reads: `base`'s version of the stack (None: it has none) → this one.
    First the summary: `lead` (what must be read before anything else: edits AKS cannot apply in
    place), the summary of the queues, then `also` (other changes in words); then the details."""
    lines = [f"### Quota changes: stack `{stack}`, {base} → this change", ""]
    if before is None:
        lines += [f"Stack `{stack}` is new: {base} has no `Pulumi.{stack}.yaml`, so everything is added.", ""]
        before = StackQuotas((), {}, (), {}, {})
    changes = quota_changes(before, after)
    listed = membership(before, after)
    if not changes and not listed and not also and not lead and not headline(before, after, changes):
        return "\n".join(lines + [NO_CHANGE]) + "\n"
    lines += [f"- {line}" for line in [*lead, *summary(before, after, changes), *also]] + ["", DETAILS, ""]
    words = callouts(changes, after.flavors)
    lines += [f"- {line}" for line in words] + ([""] if words else [])
    lines += [f"- {line}" for line in listed] + ([""] if listed else [])
    if not changes:
        return "\n".join(lines + [NO_CHANGE]) + "\n"
    lines += [
        "Nominal quota is what a team is guaranteed; it may borrow others' idle quota up to its borrowing limit, "
        "and others may borrow its own up to its lending limit. Idle quota is shared in proportion to the "
        "fair-sharing weights. Only changed rows are listed.",
        "",
        "| team | flavor | resource | nominal quota | borrowing limit | lending limit | fair-sharing weight |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for c in changes:
        nominal = _difference(c.resource, c.before.nominal if c.before else None, c.after.nominal if c.after else None)
        weight = _difference(None, c.before.weight if c.before else None, c.after.weight if c.after else None)
        lines.append(
            f"| {c.team} | {c.flavor} | {c.resource} ({UNITS[c.resource][0]}) | {nominal} | "
            f"{_limit(c.resource, c.before, c.after, 'borrowing_limit')} | "
            f"{_limit(c.resource, c.before, c.after, 'lending_limit')} | {weight} |"
        )
    return "\n".join(lines) + "\n"


def unreadable_base_markdown(stack: str, base: str, reason: str, problems: Sequence[str]) -> str:
    """What the comparison says when the base's version of the stack no longer builds."""
    return (
        "\n".join(
            [
                f"### Quota changes: stack `{stack}`, {base} → this change",
                "",
                f"Not compared: {base}'s `Pulumi.{stack}.yaml` {reason}, so there is nothing to compare against. The "
                "plan of this change shows its quotas. What this change's code says of the base:",
                "",
                *(f"- {p}" for p in problems),
            ]
        )
        + "\n"
    )
