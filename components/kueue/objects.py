"""Kueue objects and team namespaces as plain dicts, derived from the config and pool capacity.

One implementation serves the program (queues.py), the offline plan (plan.py), the validator
(validate.py) and the tests. Quotas are never typed by hand: a team's nominalQuota for a flavor
and resource is its share of that pool's allocatable capacity, rounded down; what no team owns
(shares under 100 %, rounding, pools a team does not use) stays in the shared Cohort's own quota,
so the cohort as a whole can admit exactly the pools' capacity and never more.

A team gets one ClusterQueue per kind of pool it uses: `<team>` for its ordinary pools and
`<team>-topology` for its topology-aware ones. Kueue places a workload that requests no topology
only on flavors without `topologyName`, unless every flavor of its ClusterQueue is topology-aware
(then it applies implicit TAS), so a queue that mixed the two would send ordinary jobs past a
topology-aware CPU pool to the next (GPU) flavor, and never run them on a topology-aware GPU pool
(kubernetes-sigs/kueue pkg/scheduler/flavorassigner/tas_flavorassigner.go@v0.19.2;
docs/queues-and-quotas.md#two-kinds-of-pool-two-queues).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any

from ..config.names import MANAGED_LABEL, POOL_LABEL, TEAM_LABEL, TOPOLOGY_QUEUE_SUFFIX
from ..config.pools import NodePool
from ..config.stack import StackConfig
from ..config.teams import Team
from ..k8s.meta import object_meta
from ..k8s.quantity import canonical
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY, format_quantity

API_VERSION = "kueue.x-k8s.io/v1beta2"
COHORT_NAME = "teams"
NANO = Decimal("1e-9")  # the finest a Kubernetes quantity holds
# Kueue puts jobs that name no queue into the LocalQueue called "default" of their namespace.
LOCAL_QUEUE_NAME = "default"
# The LocalQueue for topology-aware pools, in namespaces of teams that use any.
TOPOLOGY_LOCAL_QUEUE_NAME = "topology"
TOPOLOGY_NAME = "default"
# ProvisioningRequest (kubernetes/autoscaler cluster-autoscaler/provisioningrequest/besteffortatomic/
# provisioning_class.go@cluster-autoscaler-1.36.1): the autoscaler adds every node a
# workload's pods need, or none, before Kueue admits it. CA's all-or-nothing scale-up must fit all
# of a request's pods into one node group, so a request must hold only the pods of one pool.
# Kueue picks a request's pods by resource, not by flavor: on GPU pools the check asks only for the
# pods that use GPUs (a Ray head or MPI launcher on a CPU pool starts as usual); elsewhere it asks
# for every pod, which in a `<team>-topology` queue are all on topology-aware flavors.
ATOMIC_SCALE_UP_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
ATOMIC_SCALE_UP = "atomic-scale-up"  # AdmissionCheck and ProvisioningRequestConfig, every pod
ATOMIC_SCALE_UP_GPU = "atomic-scale-up-gpu"  # the same for the pods that use GPUs
# Kueue's defaults, written out for reviewers: a request the autoscaler marks Failed (pods it
# cannot create, or unprovisioned for 7 days) is retried 3 times, 1, 2 and 4 min apart; then
# the workload is deactivated.
PROVISIONING_RETRY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}


def covered_resources(config: StackConfig) -> list[str]:
    """cpu and memory always; nvidia.com/gpu when any pool has GPUs (one group covers all three)."""
    return [RESOURCE_CPU, RESOURCE_MEMORY] + ([RESOURCE_GPU] if config.has_gpu else [])


def flavor_order(pools: tuple[NodePool, ...]) -> list[NodePool]:
    """CPU pools first, then on-demand GPU pools, then spot: Kueue tries flavors in this order,
    so CPU-only jobs fill CPU nodes before GPU nodes, and GPU jobs prefer nodes that stay."""
    return sorted(pools, key=lambda p: (p.is_gpu, p.spot))  # sorted() is stable: config order within a kind


# --- quota arithmetic ------------------------------------------------------------------------


def team_quota(capacity: int, share: Decimal) -> int:
    """A team's share of a capacity, rounded down so quotas never add up to more than exists."""
    return int((Decimal(capacity) * share / 100).to_integral_value(rounding=ROUND_FLOOR))


def fair_sharing_weight(share: Decimal) -> Decimal:
    """A team's fair-sharing weight: its share as a fraction, to the nano a Kubernetes quantity
    holds (a share has up to 10 decimals, so 33.3333333333 % is 0.333333333, not 0.333333333333)."""
    return (share / 100).quantize(NANO, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class QuotaRow:
    """One flavor and resource: the pool's capacity and who holds how much of it (display units)."""

    flavor: str
    resource: str
    capacity: int
    teams: Mapping[str, int]  # nominal quota per team that uses the pool
    cohort: int  # unassigned remainder, held by the Cohort and borrowable by every team
    topology: bool  # a topology-aware flavor: in the teams' `<team>-topology` queues (a manager's never is)

    @property
    def assigned(self) -> int:
        return sum(self.teams.values()) + self.cohort


def borrowing_limit(quota: int, borrowing: Decimal | None) -> int | None:
    """What a team may borrow beyond its quota of a flavor's resource (display units), or None for
    no limit: `borrowing` times the quota, rounded down. A team with no quota there keeps borrowing
    without a limit, as before: a limit of 0 would shut it out of the pool altogether."""
    if borrowing is None or quota <= 0:
        return None
    return int((Decimal(quota) * borrowing).to_integral_value(rounding=ROUND_FLOOR))


def most_held(row: QuotaRow, team: Team) -> int:
    """The most of a flavor's resource a team can hold while the others leave theirs idle: its quota
    and what it may borrow, never more than the pool."""
    quota = row.teams.get(team.name, 0)
    limit = borrowing_limit(quota, team.borrowing)
    return row.capacity if limit is None else min(row.capacity, quota + limit)


def quota_table(config: StackConfig) -> list[QuotaRow]:
    resources = covered_resources(config)
    rows: list[QuotaRow] = []
    for pool in flavor_order(config.node_pools):
        capacity = pool.capacity.as_dict()
        users = [t for t in config.teams if pool.name in t.pools]
        for resource in resources:
            quotas = {t.name: team_quota(capacity[resource], t.share) for t in users}
            rows.append(
                QuotaRow(
                    pool.name,
                    resource,
                    capacity[resource],
                    quotas,
                    capacity[resource] - sum(quotas.values()),
                    pool.topology,
                )
            )
    return rows


@dataclass(frozen=True)
class ZeroGpuQuota:
    """A GPU flavor on which teams that use it get a nominal quota of 0 GPUs: their share rounds down."""

    flavor: str
    gpus: int  # the flavor's GPU capacity
    teams: tuple[tuple[str, Decimal], ...]  # (team, share in percent), in config order

    @property
    def share_for_one(self) -> Decimal:
        """The smallest share, in hundredths of a percent, whose quota on this flavor is 1 GPU."""
        return (Decimal(100) / self.gpus).quantize(Decimal("0.01"), rounding=ROUND_CEILING)

    def __str__(self) -> str:
        gpus = f"{self.gpus} GPU" + ("s" if self.gpus != 1 else "")
        shares = ", ".join(f"{team!r} ({share.normalize():f}%)" for team, share in self.teams)
        one = len(self.teams) == 1
        return (
            f"{'team' if one else 'teams'} {shares} {'gets' if one else 'get'} a nominal quota of 0 GPUs on flavor "
            f"{self.flavor!r} ({'its' if one else 'their'} share of {gpus}, rounded down): "
            f"{'its' if one else 'their'} GPU jobs run there only on GPUs borrowed while other teams leave them "
            f"idle, and are preempted when those teams reclaim them; a share of at least "
            f"{self.share_for_one.normalize():f}% gives a team 1 GPU"
        )


def zero_gpu_quotas(config: StackConfig, rows: Sequence[QuotaRow]) -> list[ZeroGpuQuota]:
    """The GPU flavors where teams get a nominal quota of 0 GPUs, from a stack's own quota rows
    (quota_table): the plan prints them and the program warns with them, one per flavor so that a
    stack of many small teams gets one line per GPU pool, not one per team."""
    if config.multi_kueue.is_manager:
        return []  # a manager's rows sum its workers' quotas; each worker warns for its own pools
    shares = {t.name: t.share for t in config.teams}
    found = []
    for row in rows:
        if row.resource == RESOURCE_GPU and row.capacity > 0:
            teams = tuple((team, shares[team]) for team, quota in row.teams.items() if quota == 0)
            if teams:
                found.append(ZeroGpuQuota(row.flavor, row.capacity, teams))
    return found


def flavor_capacity(config: StackConfig) -> dict[str, dict[str, Any]]:
    """flavor -> resource -> capacity quantity, for the validator's quota-versus-capacity check."""
    resources = covered_resources(config)
    return {
        pool.name: {r: format_quantity(r, amount) for r, amount in pool.capacity.as_dict().items() if r in resources}
        for pool in config.node_pools
    }


# --- object builders ---------------------------------------------------------------------------


def namespace(team: Team) -> dict[str, Any]:
    meta = object_meta(team.name)
    meta["labels"].update({TEAM_LABEL: team.name, MANAGED_LABEL: "true"})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def topology(config: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": object_meta(TOPOLOGY_NAME),
        "spec": {"levels": [{"nodeLabel": level} for level in config.topology_levels]},
    }


def resource_flavor(pool: NodePool) -> dict[str, Any]:
    # Kueue adds the flavor's nodeLabels and tolerations to every pod it admits on this flavor,
    # so the tolerations must cover every taint the pool's nodes carry (spot taint included).
    tolerations = [t.toleration() for t in pool.node_taints]
    spec: dict[str, Any] = {"nodeLabels": {POOL_LABEL: pool.name}}
    if tolerations:
        spec["tolerations"] = tolerations
    if pool.topology:
        spec["topologyName"] = TOPOLOGY_NAME
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": object_meta(pool.name), "spec": spec}


def resource_group(
    resources: list[str],
    rows: list[QuotaRow],
    quota: Callable[[QuotaRow], int | None],
    borrowing: Decimal | None = None,
) -> dict[str, Any]:
    """The one resource group: every flavor that `quota` gives a value for, in the rows' order,
    each resource with the borrowing limit `borrowing` gives it (borrowing_limit)."""
    flavors: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        amount = quota(row)
        if amount is not None:
            resource = {"name": row.resource, "nominalQuota": format_quantity(row.resource, amount)}
            limit = borrowing_limit(amount, borrowing)
            if limit is not None:
                resource["borrowingLimit"] = format_quantity(row.resource, limit)
            flavors.setdefault(row.flavor, []).append(resource)
    return {
        "coveredResources": resources,
        "flavors": [{"name": name, "resources": resources} for name, resources in flavors.items()],
    }


def cohort(resources: list[str], rows: list[QuotaRow]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Cohort",
        "metadata": object_meta(COHORT_NAME),
        "spec": {"resourceGroups": [resource_group(resources, rows, lambda r: r.cohort)]},
    }


@dataclass(frozen=True)
class TeamQueue:
    """One ClusterQueue of a team: its ordinary pools, or its topology-aware ones."""

    team: Team
    name: str
    topology: bool
    pools: tuple[str, ...]  # flavor order


def team_queues(config: StackConfig, team: Team) -> list[TeamQueue]:
    """The team's ClusterQueues: `<team>` (ordinary pools) and `<team>-topology`, each only when
    the team uses a pool of that kind."""
    pools = [p for p in flavor_order(config.node_pools) if p.name in team.pools]
    queues = []
    for topology, name in ((False, team.name), (True, team.name + TOPOLOGY_QUEUE_SUFFIX)):
        kind = tuple(p.name for p in pools if p.topology == topology)
        if kind:
            queues.append(TeamQueue(team, name, topology, kind))
    return queues


def local_queue_targets(config: StackConfig, team: Team) -> dict[str, TeamQueue]:
    """LocalQueue name -> ClusterQueue: `default` to the ordinary queue (the topology-aware one
    when the team has only such pools), `topology` to the topology-aware queue when there is one."""
    queues = team_queues(config, team)
    targets = {LOCAL_QUEUE_NAME: queues[0]}
    topology = [q for q in queues if q.topology]
    if topology:
        targets[TOPOLOGY_LOCAL_QUEUE_NAME] = topology[0]
    return targets


def provisioning_check(pool: NodePool) -> str | None:
    """The AdmissionCheck a pool's flavor needs before admission, or None."""
    if not pool.provisioning_request:
        return None
    return ATOMIC_SCALE_UP_GPU if pool.is_gpu else ATOMIC_SCALE_UP


def provisioning_objects(config: StackConfig) -> list[dict[str, Any]]:
    """A ProvisioningRequestConfig and its AdmissionCheck for each kind of check the pools use."""
    checks = sorted({c for p in config.node_pools if (c := provisioning_check(p))})
    objects: list[dict[str, Any]] = []
    for check in checks:
        spec: dict[str, Any] = {
            "provisioningClassName": ATOMIC_SCALE_UP_CLASS,
            "managedResources": [RESOURCE_GPU] if check == ATOMIC_SCALE_UP_GPU else [],
            "retryStrategy": dict(PROVISIONING_RETRY),
        }
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ProvisioningRequestConfig",
                "metadata": object_meta(check),
                "spec": spec,
            }
        )
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "AdmissionCheck",
                "metadata": object_meta(check),
                "spec": {
                    "controllerName": PROVISIONING_CONTROLLER,
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": check},
                },
            }
        )
    return objects


def _admission_checks(config: StackConfig, queue: TeamQueue) -> list[dict[str, Any]]:
    on_flavors: dict[str, list[str]] = {}
    for name in queue.pools:
        if check := provisioning_check(config.pool(name)):
            on_flavors.setdefault(check, []).append(name)
    return [{"name": check, "onFlavors": flavors} for check, flavors in sorted(on_flavors.items())]


def cluster_queue(config: StackConfig, queue: TeamQueue, rows: list[QuotaRow]) -> dict[str, Any]:
    team = queue.team
    group = resource_group(
        covered_resources(config),
        rows,
        lambda r: r.teams.get(team.name) if r.flavor in queue.pools else None,
        team.borrowing,
    )
    return team_cluster_queue(queue.name, team.name, team.share, group, _admission_checks(config, queue))


def team_cluster_queue(
    name: str, team: str, share: Decimal, group: dict[str, Any], checks: list[dict[str, Any]]
) -> dict[str, Any]:
    """A team's ClusterQueue in the shared cohort, with its one resource group and admission checks."""
    strategy = {"admissionChecksStrategy": {"admissionChecks": checks}} if checks else {}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": object_meta(name),
        "spec": {
            "cohortName": COHORT_NAME,
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team}},
            "queueingStrategy": "BestEffortFIFO",
            "stopPolicy": "None",
            "resourceGroups": [group],
            # A team borrows what the cohort leaves idle, up to its borrowingLimits when it has
            # them (config `borrowing`); lenders get their quota back by preemption, and inside the
            # queue a higher priority evicts a lower one.
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "Never"},
                "withinClusterQueue": "LowerPriority",
            },
            # Written out as Kueue's defaults, so a reviewer sees them: borrow on the first flavor that
            # fits rather than spill onto the next (GPU) flavor.
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            # Under fair sharing, borrowed capacity is divided in proportion to the shares.
            "fairSharing": {"weight": canonical(fair_sharing_weight(share))},
            **strategy,
        },
    }


def local_queue(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": object_meta(name, namespace),
        "spec": {"clusterQueue": cluster_queue, "stopPolicy": "None"},
    }


def priority_classes(config: StackConfig) -> list[dict[str, Any]]:
    # value and description sit at the top level of a WorkloadPriorityClass, not under spec.
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": object_meta(pc.name),
            "value": pc.value,
            "description": pc.description,
        }
        for pc in config.priority_classes
    ]


def build_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Every object kueue-aks creates inside the cluster besides the Helm releases, in apply order."""
    rows = quota_table(config)
    objects: list[dict[str, Any]] = [topology(config)] if config.uses_topology else []
    objects += [resource_flavor(p) for p in flavor_order(config.node_pools)]
    objects.append(cohort(covered_resources(config), rows))
    objects += provisioning_objects(config)
    objects += [cluster_queue(config, q, rows) for t in config.teams for q in team_queues(config, t)]
    # After the queues that select them, so that destroy deletes them first (queues.references).
    objects += [namespace(t) for t in config.teams]
    objects += [
        local_queue(name, t.name, q.name) for t in config.teams for name, q in local_queue_targets(config, t).items()
    ]
    objects += priority_classes(config)
    return objects


def local_queue_report(config: StackConfig) -> dict[str, dict[str, Any]]:
    """team namespace -> LocalQueue -> the ClusterQueue it feeds and the pools that queue covers."""
    return {
        team.name: {
            name: {"clusterQueue": q.name, "topologyAware": q.topology, "pools": list(q.pools)}
            for name, q in local_queue_targets(config, team).items()
        }
        for team in config.teams
    }


@dataclass(frozen=True)
class QueueSet:
    """What a stack applies of Kueue and reports of it: every object, the capacity its quotas must
    fit (flavor -> resource -> amount), the quota rows, the LocalQueue report and the teams as the
    ClusterQueues have them (share and borrowing). `queue_set` builds it for one cluster; a
    MultiKueue manager builds its own from its workers (multikueue.manager)."""

    objects: list[dict[str, Any]]
    capacity: dict[str, dict[str, Any]]
    rows: list[QuotaRow]
    local_queues: dict[str, dict[str, Any]]
    teams: tuple[Team, ...]


def queue_set(config: StackConfig) -> QueueSet:
    """The Kueue objects, capacity, quota rows, LocalQueues and teams of a stack's own pools."""
    return QueueSet(
        build_objects(config),
        flavor_capacity(config),
        quota_table(config),
        local_queue_report(config),
        config.teams,
    )
