"""Pure decisions of the preflight: Azure's answers in, findings and a capacity table out.

Azure's shapes (learn.microsoft.com/rest/api/compute):
- Usage - List: `{"value": [{"name": {"value", "localizedValue"}, "currentValue", "limit", "unit"}]}`.
  A regular VM draws on its family's quota (`name.value` is the SKU's `family`, e.g.
  `standardNCADSA100v4Family`) and on `cores` ("Total Regional vCPUs"); a Spot VM only on
  `lowPriorityCores` ("Total Regional Low-priority vCPUs").
  (learn.microsoft.com/azure/virtual-machines/spot-vms, "Quota"; .../quotas, "vCPU quotas")
- Resource Skus - List: `{"value": [{"resourceType", "name", "family", "locations",
  "locationInfo": [{"location", "zones"}], "capabilities": [{"name", "value"}],
  "restrictions": [{"type": "Location" | "Zone", "restrictionInfo": {"locations", "zones"},
  "reasonCode": "QuotaId" | "NotAvailableForSubscription"}]}]}`.
- Managed Clusters - Get/List: `properties.agentPoolProfiles[]` with `name`, `count`, `vmSize`,
  `scaleSetPriority` ("Spot" | "Regular"): the stack's own nodes, which the usage already counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..config.checks import Problem
from ..config.names import CONFIG_PREFIX, SYSTEM_POOL_NAME
from ..config.stack import StackConfig

# Quotas are looked up by lower-cased name: the SKU list and the usage list spell families alike
# but not always in the same case.
REGIONAL = "cores"
LOW_PRIORITY = "lowprioritycores"
_TITLES = {REGIONAL: "Total Regional vCPUs", LOW_PRIORITY: "Total Regional Low-priority vCPUs"}


@dataclass(frozen=True)
class Usage:
    name: str
    current: int
    limit: int
    title: str  # Azure's localizedValue, what the portal shows


@dataclass(frozen=True)
class Offer:
    """One VM size as the region offers it to this subscription."""

    name: str
    family: str
    vcpus: int
    zones: frozenset[str]
    location_restriction: str | None  # Azure's reasonCode when the size is not offered here at all
    zone_restrictions: Mapping[str, str]  # zone -> reasonCode
    low_priority: bool  # Spot (low-priority) VMs of this size can be made


@dataclass(frozen=True)
class RunningPool:
    name: str
    vm_size: str
    count: int
    spot: bool


@dataclass(frozen=True)
class PoolDemand:
    """What one pool can ask of the quota: `min_nodes` at once, up to `max_nodes`."""

    pool: str
    key: str  # the config path to name in messages
    vm_size: str
    spot: bool
    min_nodes: int
    max_nodes: int
    system: bool = False


@dataclass(frozen=True)
class Bucket:
    """One quota line: limit and use across the subscription, and what of that the stack holds."""

    name: str  # Azure's spelling, the quota's resource name
    title: str
    limit: int
    current: int
    own: int

    @property
    def free(self) -> int:
        """What the stack can hold at most: the limit minus what everything else uses."""
        return self.limit - (self.current - self.own)


@dataclass(frozen=True)
class CapacityRow:
    pool: str
    vm_size: str
    family: str
    quota: str  # the title of the quota the pool draws on first: its family's, or low-priority for Spot
    cores_at_max: int
    quota_free: int | None  # None: Azure lists no such quota
    fits_nodes: int
    max_nodes: int


@dataclass(frozen=True)
class Assessment:
    location: str
    subscription: str
    rows: tuple[CapacityRow, ...]
    errors: tuple[Problem, ...]  # never deployable: a size not offered, or minCount does not fit
    shortfalls: tuple[Problem, ...]  # maxCount does not fit: error, warning or clamp by policy
    fits: Mapping[str, int]  # user pool -> nodes the quota allows (fair split of what is free)


# --- parsing Azure's answers ---------------------------------------------------------------------


def parse_usages(items: Iterable[Mapping[str, Any]]) -> dict[str, Usage]:
    out = {}
    for item in items:
        name = str(item.get("name", {}).get("value", ""))
        if name:
            out[name.lower()] = Usage(
                name,
                int(item.get("currentValue", 0)),
                int(item.get("limit", 0)),
                str(item.get("name", {}).get("localizedValue") or name),
            )
    return out


def parse_skus(items: Iterable[Mapping[str, Any]], location: str) -> dict[str, Offer]:
    here = location.lower()
    out = {}
    for item in items:
        if item.get("resourceType") != "virtualMachines" or here not in {x.lower() for x in item.get("locations", [])}:
            continue
        capabilities = {c.get("name"): c.get("value") for c in item.get("capabilities", [])}
        zones = frozenset(
            z
            for info in item.get("locationInfo", [])
            if str(info.get("location", "")).lower() == here
            for z in info.get("zones") or []
        )
        location_restriction: str | None = None
        zone_restrictions: dict[str, str] = {}
        for r in item.get("restrictions", []):
            info = r.get("restrictionInfo") or {}
            if here not in {x.lower() for x in info.get("locations") or r.get("values") or []}:
                continue
            reason = str(r.get("reasonCode", "restricted"))
            if r.get("type") == "Location":
                location_restriction = reason
            elif r.get("type") == "Zone":
                zone_restrictions |= {str(z): reason for z in info.get("zones") or []}
        out[str(item["name"]).lower()] = Offer(
            name=str(item["name"]),
            family=str(item.get("family", "")),
            vcpus=int(capabilities.get("vCPUs", 0)),
            zones=zones,
            location_restriction=location_restriction,
            zone_restrictions=zone_restrictions,
            low_priority=str(capabilities.get("LowPriorityCapable", "True")).lower() == "true",
        )
    return out


def parse_running_pools(cluster: Mapping[str, Any]) -> tuple[RunningPool, ...]:
    return tuple(
        RunningPool(
            str(p.get("name")), str(p.get("vmSize", "")), int(p.get("count") or 0), p.get("scaleSetPriority") == "Spot"
        )
        for p in cluster.get("properties", {}).get("agentPoolProfiles", [])
    )


# --- deciding ----------------------------------------------------------------------------------


def demands(config: StackConfig) -> list[PoolDemand]:
    """Every pool the stack can grow. An existing cluster's system pool is not the stack's to size."""
    out = []
    if config.cluster.mode == "create":
        system = config.cluster.system_pool
        out.append(
            PoolDemand(
                SYSTEM_POOL_NAME,
                f"{CONFIG_PREFIX}:cluster.systemPool",
                system.vm_size,
                False,
                system.count,
                system.count,
                system=True,
            )
        )
    out += [
        PoolDemand(p.name, f"{CONFIG_PREFIX}:nodePools[{i}]", p.vm_size, p.spot, p.min_count, p.max_count)
        for i, p in enumerate(config.node_pools)
    ]
    return out


def _draws(spot: bool, offer: Offer) -> tuple[str, ...]:
    """The quotas a node draws on, the most specific first."""
    return (LOW_PRIORITY,) if spot else (offer.family.lower(), REGIONAL)


def _availability(config: StackConfig, demand: PoolDemand, offer: Offer | None) -> list[Problem]:
    where = config.location
    if offer is None:
        return [
            Problem(
                f"{demand.key}.vmSize",
                f"pool {demand.pool}: {demand.vm_size} is not offered in {where} "
                "(not in the region's resource SKU list); pick a size the region lists "
                f"(az vm list-skus --location {where} --size {demand.vm_size})",
            )
        ]
    if offer.location_restriction:
        return [
            Problem(
                f"{demand.key}.vmSize",
                f"pool {demand.pool}: {demand.vm_size} is restricted in {where} for "
                f"this subscription ({offer.location_restriction}); pick another size or region, or ask "
                "Azure support to enable it",
            )
        ]
    found = []
    for zone in config.cluster.zones:
        reason = offer.zone_restrictions.get(zone)
        if reason or (offer.zones and zone not in offer.zones):
            why = f"restricted there for this subscription ({reason})" if reason else "not offered there"
            found.append(
                Problem(
                    f"{CONFIG_PREFIX}:cluster.zones",
                    f"pool {demand.pool}: {demand.vm_size} is {why}: "
                    f"zone {zone} of {where}; remove zone {zone} from cluster.zones or pick another size",
                )
            )
    if demand.spot and not offer.low_priority:
        found.append(
            Problem(
                f"{demand.key}.spot",
                f"pool {demand.pool}: {demand.vm_size} cannot run as Spot "
                "(LowPriorityCapable is False); set spot: false or pick another size",
            )
        )
    return found


def _fair_split(
    pools: Sequence[PoolDemand], offer_of: Mapping[str, Offer], buckets: Mapping[str, Bucket]
) -> dict[str, int]:
    """Nodes per pool that fit every quota the pool draws on: minCount first, then one node at a
    time round the pools, so no pool takes all that is left."""
    left = {name: b.free for name, b in buckets.items()}
    draws = {d.pool: [b for b in _draws(d.spot, offer_of[d.pool]) if b in left] for d in pools}
    nodes = {}
    for d in pools:
        nodes[d.pool] = d.min_nodes
        for b in draws[d.pool]:
            left[b] -= d.min_nodes * offer_of[d.pool].vcpus
    grew = True
    while grew:
        grew = False
        for d in pools:
            vcpus = offer_of[d.pool].vcpus
            if nodes[d.pool] < d.max_nodes and all(left[b] >= vcpus for b in draws[d.pool]):
                nodes[d.pool] += 1
                for b in draws[d.pool]:
                    left[b] -= vcpus
                grew = True
    return nodes


def quota_request(bucket: Bucket, limit: int, subscription: str, location: str) -> str:
    kind = "lowPriority" if bucket.name.lower() == LOW_PRIORITY else "dedicated"
    return (
        f"az quota update --resource-name {bucket.name} "
        f"--scope /subscriptions/{subscription}/providers/Microsoft.Compute/locations/{location} "
        f"--limit-object value={limit} --resource-type {kind}"
    )


def assess(
    config: StackConfig,
    usages: Mapping[str, Usage],
    offers: Mapping[str, Offer],
    running: Sequence[RunningPool],
    subscription: str,
) -> Assessment:
    wanted = demands(config)
    errors = [f for d in wanted for f in _availability(config, d, offers.get(d.vm_size.lower()))]
    if errors:  # quota cannot be reasoned about for a size Azure does not offer
        return Assessment(config.location, subscription, (), tuple(errors), (), {})

    offer_of = {d.pool: offers[d.vm_size.lower()] for d in wanted}
    # The stack's own running nodes are in `currentValue` already; they are what it holds.
    own: dict[str, int] = {}
    for r in running:
        offer = offers.get(r.vm_size.lower())
        if r.name in offer_of and offer is not None:
            for b in _draws(r.spot, offer):
                own[b] = own.get(b, 0) + r.count * offer.vcpus
    buckets = {
        key: Bucket(
            usages[key].name,
            _TITLES.get(key, usages[key].title),
            usages[key].limit,
            usages[key].current,
            own.get(key, 0),
        )
        for d in wanted
        for key in _draws(d.spot, offer_of[d.pool])
        if key in usages
    }

    fits = _fair_split(wanted, offer_of, buckets)
    shortfalls: list[Problem] = []
    for name, bucket in buckets.items():
        members = [d for d in wanted if name in _draws(d.spot, offer_of[d.pool])]
        at_min = sum(d.min_nodes * offer_of[d.pool].vcpus for d in members)
        at_max = sum(d.max_nodes * offer_of[d.pool].vcpus for d in members)
        if at_max <= bucket.free:
            continue
        who = (
            f"pool {members[0].pool}"
            if len(members) == 1
            else "pools " + ", ".join(d.pool for d in members) + " together"
        )
        sizes = "; ".join(
            (f"{d.pool}: " if len(members) > 1 else "") + f"{d.vm_size}, {offer_of[d.pool].vcpus} vCPUs a node"
            for d in members
        )
        held = f", {bucket.own} of them by this stack's nodes" if bucket.own else ""
        facts = (
            f"{who} ({sizes}) need{'s' if len(members) == 1 else ''} {at_max} vCPUs of quota {bucket.title} "
            f"at maxCount, but {max(bucket.free, 0)} are free for this stack in {config.location} "
            f"(limit {bucket.limit}, {bucket.current} in use{held})"
        )
        limit = at_max + bucket.current - bucket.own
        raise_it = (
            f"raise the quota to {limit}: {quota_request(bucket, limit, subscription, config.location)} "
            "(or the portal: Quotas > Compute)"
        )
        key = f"{members[0].key}.maxCount" if len(members) == 1 else f"{CONFIG_PREFIX}:nodePools"
        if at_min > bucket.free:
            errors.append(
                Problem(
                    key,
                    f"{facts}; even minCount (and the system pool) needs {at_min}, which Azure "
                    f"would refuse at create; {raise_it}, or lower minCount",
                )
            )
            continue
        smaller = ", ".join(
            f"{d.pool} to {fits[d.pool]}" for d in members if not d.system and fits[d.pool] < d.max_nodes
        )
        shortfalls.append(
            Problem(
                key,
                f"{facts}; {raise_it}; or lower maxCount ({smaller}: what fits); or set "
                f"{CONFIG_PREFIX}:preflight.quotaPolicy: clamp to size Kueue's quotas to what fits",
            )
        )

    rows = []
    for d in wanted:
        offer = offer_of[d.pool]
        first = _draws(d.spot, offer)[0]
        rows.append(
            CapacityRow(
                d.pool,
                d.vm_size,
                offer.family,
                buckets[first].title if first in buckets else first,
                d.max_nodes * offer.vcpus,
                buckets[first].free if first in buckets else None,
                fits[d.pool],
                d.max_nodes,
            )
        )
    return Assessment(
        config.location,
        subscription,
        tuple(rows),
        tuple(errors),
        tuple(shortfalls),
        {d.pool: fits[d.pool] for d in wanted if not d.system},
    )


def clamped(config: StackConfig, fits: Mapping[str, int]) -> StackConfig:
    """The config whose Kueue quotas count only the nodes the quota allows; pools keep maxCount."""
    return replace(
        config,
        node_pools=tuple(
            replace(p, quota_nodes=fits[p.name]) if fits.get(p.name, p.max_count) < p.max_count else p
            for p in config.node_pools
        ),
    )


def capacity_markdown(assessment: Assessment) -> str:
    lines = [
        f"### Azure capacity in {assessment.location} (vCPU quota at maxCount)",
        "",
        "| pool | VM size | family | quota | vCPUs at maxCount | quota free | nodes that fit |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for r in assessment.rows:
        free = "not listed" if r.quota_free is None else str(max(r.quota_free, 0))
        lines.append(
            f"| {r.pool} | {r.vm_size} | {r.family} | {r.quota} | {r.cores_at_max} | {free} | "
            f"{r.fits_nodes} of {r.max_nodes} |"
        )
    return "\n".join(lines) + "\n"
