"""Quota changes between two versions of a stack, as plain data and Markdown, for reviewers.

Each side is what the program builds (components/plan.py builds both with the same code): per
team, flavor and resource, the nominal quota, borrowing and lending limits and fair-sharing weight
as its ClusterQueue states them, each team's share (its weight), the pools and flavors, and each
flavor's capacity and spare (the cohort's quota, as the quota table has it). The comparison
opens with a few lines for the reviewer: each team's guaranteed GPUs before → after, the GPUs a pool
gains or loses and whether the lost ones were the spare (what no team is guaranteed and any team may
borrow through the cohort) or came out of the teams' guarantees, and each share change in percent;
beside them, lines the caller adds (the team identities' Azure roles gained or lost). Then the
details, before → after: who gains or loses guaranteed capacity (nominal quota), GPUs first; every
changed quota row; the teams, pools and flavors added or removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..config.names import TEAM_LABEL
from ..config.stack import StackConfig
from ..k8s.quantity import cpu_millicores, memory_mib, parse_quantity
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY, UNITS, human, human_amount
from .objects import QueueSet

# GPUs first: the scarcest capacity, and the change a reviewer must not miss.
RESOURCE_ORDER = (RESOURCE_GPU, RESOURCE_CPU, RESOURCE_MEMORY)
NO_CHANGE = "No quota change."
DETAILS = "#### Details"

# Quantities as the ClusterQueues write them, back to display units (QuotaRow's).
_PARSE: Mapping[str, Callable[[Any], int]] = {
    RESOURCE_CPU: cpu_millicores,
    RESOURCE_MEMORY: memory_mib,
    RESOURCE_GPU: lambda q: int(parse_quantity(q)),
}

QuotaKey = tuple[str, str, str]  # team, flavor, resource


@dataclass(frozen=True)
class Quota:
    """A team's quota of one flavor and resource, as its ClusterQueue states it (display units)."""

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


@dataclass(frozen=True)
class QuotaChange:
    """A quota row that differs; a side is None where the team does not use the flavor there."""

    team: str
    flavor: str
    resource: str
    before: Quota | None
    after: Quota | None


def stack_quotas(config: StackConfig, queues: QueueSet) -> StackQuotas:
    """The quotas of the built ClusterQueues, so limits and weights are the applied ones."""
    quotas: dict[QuotaKey, Quota] = {}
    shares: dict[str, Decimal] = {}
    for obj in queues.objects:
        if obj["kind"] != "ClusterQueue":
            continue
        spec = obj["spec"]
        team = spec["namespaceSelector"]["matchLabels"][TEAM_LABEL]
        weight = parse_quantity(spec.get("fairSharing", {}).get("weight", 1))  # Kueue's default weight is 1
        shares[team] = weight * 100
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:
                for r in flavor["resources"]:
                    parse = _PARSE[r["name"]]
                    limits = [parse(r[k]) if k in r else None for k in ("borrowingLimit", "lendingLimit")]
                    quotas[(team, flavor["name"], r["name"])] = Quota(
                        parse(r["nominalQuota"]), limits[0], limits[1], weight
                    )
    return StackQuotas(
        teams=tuple(queues.local_queues),
        pools={p.name: f"{p.vm_size}, {p.min_count}–{p.max_count} nodes" for p in config.node_pools},
        flavors=tuple(dict.fromkeys(row.flavor for row in queues.rows)),
        capacity={(row.flavor, row.resource): row.capacity for row in queues.rows},
        quotas=quotas,
        spare={(row.flavor, row.resource): row.cohort for row in queues.rows},
        shares=shares,
    )


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


def _guaranteed_gpus(flavor: str, before: StackQuotas, after: StackQuotas) -> str:
    """Each team's nominal GPU quota on the flavor, before → after (– where it has none)."""
    parts, same = [], True
    for team in _teams(before, after):
        was, now = (side.quotas.get((team, flavor, RESOURCE_GPU)) for side in (before, after))
        if was is not None or now is not None:
            parts.append(f"{team} {was.nominal if was else '–'} → {now.nominal if now else '–'}")
            same = same and was is not None and now is not None and was.nominal == now.nominal
    if not parts:
        return f"No team is guaranteed a GPU on `{flavor}`: no team uses it."
    return f"Guaranteed GPUs on `{flavor}`: {', '.join(parts)}{' (unchanged)' if same else ''}."


def _gpu_capacity(flavor: str, before: StackQuotas, after: StackQuotas) -> str:
    """The GPUs a flavor gains or loses, and for a loss whether they were the spare (what no team
    was guaranteed: the cohort's) or came out of the teams' guarantees."""
    key = (flavor, RESOURCE_GPU)
    was, now = before.capacity.get(key, 0), after.capacity.get(key, 0)
    spare_was, spare_now = before.spare.get(key, 0), after.spare.get(key, 0)
    account = f"teams' guarantees {was - spare_was} → {now - spare_now}, spare {spare_was} → {spare_now}"
    name = f"pool `{flavor}`" if flavor in {**before.pools, **after.pools} else f"flavor `{flavor}`"
    if now > was:
        if flavor not in before.flavors:
            return (
                f"The {name} is added with {_gpus(now)}: {now - spare_now} guaranteed to teams, {spare_now} spare, "
                "which no team is guaranteed and any team may borrow."
            )
        return f"`{flavor}` gains {_gpus(now - was)} ({was} → {now}): {account}."
    lost = was - now
    # Where the GPUs came from, by comparing both sides: the guarantees and the spare each before
    # and after (rounding can move a GPU between them, so neither is assumed to go first).
    from_teams = (was - spare_was) - (now - spare_now)
    from_spare = spare_was - spare_now
    it = "it" if lost == 1 else "them"
    if from_teams <= 0:
        verdict = (
            "it was the spare GPU, which no team was guaranteed and any team could borrow"
            if lost == 1
            else "they were spare GPUs, which no team was guaranteed and any team could borrow"
        )
        if from_teams < 0:
            verdict += f", and {-from_teams} more of the spare becomes the teams' guarantee"
    elif from_spare <= 0:
        verdict = f"none came from the spare: the teams' guarantees give {it} up"
        if from_spare < 0:
            verdict = (
                f"none came from the spare: the teams' guarantees give up {from_teams}, of which {-from_spare} "
                f"{'is' if from_spare == -1 else 'are'} left spare as the shares round down"
            )
    else:
        verdict = (
            f"{from_spare} {'was' if from_spare == 1 else 'were'} spare (no team's guarantee, any team could "
            f"borrow {'it' if from_spare == 1 else 'them'}), {from_teams} "
            f"{'comes' if from_teams == 1 else 'come'} out of the teams' guarantees"
        )
    if flavor not in after.flavors:
        return f"The {name} is removed with its {_gpus(was)}: {verdict} ({account})."
    return f"`{flavor}` loses {lost} of its {_gpus(was)} ({was} → {now}): {verdict} ({account})."


def _percent(share: Decimal) -> str:
    return f"{share.normalize():f} %"


def _share_changes(before: StackQuotas, after: StackQuotas) -> list[str]:
    parts = []
    for team in _teams(before, after):
        was, now = before.shares.get(team), after.shares.get(team)
        if was is None and now is not None:
            parts.append(f"{team} {_percent(now)} (new)")
        elif now is None and was is not None:
            parts.append(f"{team} {_percent(was)} → – (removed)")
        elif was is not None and now is not None and was != now:
            parts.append(f"{team} {_percent(was)} → {_percent(now)}")
    return [f"Shares: {', '.join(parts)}."] if parts else []


def summary(before: StackQuotas, after: StackQuotas, changes: Sequence[QuotaChange]) -> list[str]:
    """What a reviewer reads first, a sentence a line: per GPU flavor whose GPU rows or capacity
    changed, each team's guaranteed GPUs before → after and the GPUs gained or lost; each share
    change in percent. One line when none of that changed."""
    gpu_rows = {c.flavor for c in changes if c.resource == RESOURCE_GPU}
    lines = []
    for flavor in _gpu_flavors(before, after):
        key = (flavor, RESOURCE_GPU)
        moved = before.capacity.get(key, 0) != after.capacity.get(key, 0)
        if flavor not in gpu_rows and not moved:
            continue
        line = _guaranteed_gpus(flavor, before, after)
        spare_was, spare_now = before.spare.get(key, 0), after.spare.get(key, 0)
        if not moved and spare_was != spare_now:
            line += f" Spare GPUs, which no team is guaranteed and any team may borrow: {spare_was} → {spare_now}."
        lines.append(line)
        if moved:
            lines.append(_gpu_capacity(flavor, before, after))
    lines += _share_changes(before, after)
    if not lines:
        lines = ["No GPU or share change" + ("; the changes below are to CPU and memory." if changes else ".")]
    return lines


def comparison_markdown(
    stack: str, base: str, before: StackQuotas | None, after: StackQuotas, also: Sequence[str] = ()
) -> str:
    """The comparison a reviewer reads: `base`'s version of the stack (None: it has none) → this one.
    First the summary (GPUs and shares, then `also`: other changes in words), then the details."""
    lines = [f"### Quota changes: stack `{stack}`, {base} → this change", ""]
    if before is None:
        lines += [f"Stack `{stack}` is new: {base} has no `Pulumi.{stack}.yaml`, so everything is added.", ""]
        before = StackQuotas((), {}, (), {}, {})
    changes = quota_changes(before, after)
    listed = membership(before, after)
    if not changes and not listed and not also:
        return "\n".join(lines + [NO_CHANGE]) + "\n"
    lines += [f"- {line}" for line in [*summary(before, after, changes), *also]] + ["", DETAILS, ""]
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
