"""The stack's Kueue objects as the simulator reads them: quotas per flavor and resource, the
cohort's spare, fair-sharing weights, preemption and flavor-fungibility policies, priorities and
where each team's LocalQueues lead. Pure: plain dicts in (what components/kueue/objects.py builds,
and the manager configuration of components/kueue/values.py), frozen dataclasses out.

What the simulator does not model is not guessed at: each such setting becomes a reason
(`Queues.reasons`), and the forecast says so instead of a table. Kueue's own rules are cited
as file@v0.19.2 of kubernetes-sigs/kueue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.names import TEAM_LABEL
from ..k8s.quantity import QuantityError, parse_quantity
from ..k8s.resources import held

FlavorResource = tuple[str, str]  # (flavor, resource)

# A job that names no priority class has its pods' priority, 0 when they name none
# (components/config/teams.py DEFAULT_PRIORITY; Kueue's pkg/util/priority@v0.19.2).
DEFAULT_PRIORITY = 0
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# Kueue 0.19.2's defaults of the feature gates whose value changes what the simulator does
# (pkg/features/kube_features.go@v0.19.2); a stack that turns one the other way is not modelled.
MODELLED_GATES = {
    "FlavorFungibility": True,
    "PrioritySortingWithinCohort": True,
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "PrioritizePreemptorWorkloads": False,
    "AdmissionFairSharing": False,
    "ConcurrentAdmission": False,
    "PartialAdmission": True,  # a trace's jobs never allow it, so only its being off is safe too
}
STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
# Kueue's default strategies when fairSharing names none (pkg/scheduler/preemption/preemption.go@v0.19.2
# parseStrategies).
DEFAULT_STRATEGIES = STRATEGIES
WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority")
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
FUNGIBILITY = ("MayStopSearch", "TryNextFlavor")


@dataclass(frozen=True)
class Quota:
    """One flavor and resource of a ClusterQueue, in millicores, MiB or whole devices."""

    nominal: int
    borrowing_limit: int | None = None  # None: no limit
    lending_limit: int | None = None  # None: all of it may be lent


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    cohort: str | None
    flavors: tuple[str, ...]  # in the order Kueue tries them
    resources: tuple[str, ...]  # the resource group's coveredResources
    quotas: Mapping[FlavorResource, Quota]
    weight: float = 1.0  # fairSharing.weight (Kueue's default 1)
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    topology_only: bool = False  # every flavor topology-aware: Kueue places its jobs by topology


@dataclass(frozen=True)
class Queues:
    """Everything the simulator reads of a stack; `reasons` is what it cannot model (empty when
    it can), `notes` what it simplifies and the forecast says beside its table."""

    cluster_queues: tuple[ClusterQueue, ...]
    cohorts: Mapping[str, Mapping[FlavorResource, int]]  # a Cohort's own nominalQuota: the spare
    local_queues: Mapping[tuple[str, str], str]  # (team, LocalQueue) -> ClusterQueue
    priorities: Mapping[str, int]  # WorkloadPriorityClass -> value
    topology_flavors: frozenset[str]
    strategies: tuple[str, ...]  # fair sharing's preemption strategies, in order
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def cluster_queue(self, name: str) -> ClusterQueue:
        return next(q for q in self.cluster_queues if q.name == name)

    @property
    def teams(self) -> dict[str, tuple[str, ...]]:
        """team -> its LocalQueues, in object order."""
        found: dict[str, list[str]] = {}
        for team, queue in self.local_queues:
            found.setdefault(team, []).append(queue)
        return {team: tuple(queues) for team, queues in found.items()}


def amount(resource: str, value: Any) -> int:
    """A quantity in the simulator's units: millicores for cpu, MiB for memory, whole units
    otherwise; rounded up (a quota is written whole in these units, a request holds what it
    asks)."""
    return held(resource, parse_quantity(value))


def _quota(resource: Mapping[str, Any]) -> Quota:
    name = resource["name"]

    def optional(key: str) -> int | None:
        return None if resource.get(key) is None else amount(name, resource[key])

    return Quota(amount(name, resource.get("nominalQuota", 0)), optional("borrowingLimit"), optional("lendingLimit"))


def read_queues(
    objects: Sequence[Mapping[str, Any]],
    manager_config: Mapping[str, Any] | None,
    feature_gates: Mapping[str, bool] | None = None,
) -> Queues:
    """The simulator's view of a stack's Kueue objects. `manager_config`: Kueue's Configuration
    (None when the stack does not set it, as with AKS's managed extension); `feature_gates`: the
    gates the stack sets."""
    reasons: list[str] = []
    notes: list[str] = []
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    if "MultiKueueConfig" in by_kind or "MultiKueueCluster" in by_kind:
        reasons.append("a MultiKueue manager's queues dispatch to worker clusters, which are not simulated")

    if manager_config is None:
        reasons.append(
            "Kueue's manager configuration is not the stack's to read (AKS's managed extension sets its own)"
        )
        strategies: tuple[str, ...] = ()
    else:
        strategies = _manager_reasons(manager_config, reasons)
    for gate, value in sorted((feature_gates or {}).items()):
        if gate in MODELLED_GATES and value != MODELLED_GATES[gate]:
            reasons.append(f"feature gate {gate}={str(value).lower()} (Kueue 0.19.2's default is the other way)")

    topology = frozenset(
        o["metadata"]["name"] for o in by_kind.get("ResourceFlavor", []) if (o.get("spec") or {}).get("topologyName")
    )
    checks = {
        o["metadata"]["name"]: (o.get("spec") or {}).get("controllerName") for o in by_kind.get("AdmissionCheck", [])
    }
    cohorts: dict[str, dict[FlavorResource, int]] = {}
    for obj in by_kind.get("Cohort", []):
        spec = obj.get("spec") or {}
        name = obj["metadata"]["name"]
        if spec.get("parentName"):
            reasons.append(f"Cohort {name!r} has a parent: hierarchical cohorts are not modelled")
        cohorts[name] = {
            (f["name"], r["name"]): _quota(r).nominal
            for g in spec.get("resourceGroups", [])
            for f in g["flavors"]
            for r in f["resources"]
        }
    queues: list[ClusterQueue] = []
    provisioning = False
    for obj in by_kind.get("ClusterQueue", []):
        queue, uses_provisioning = _cluster_queue(obj, topology, checks, reasons)
        provisioning = provisioning or uses_provisioning
        queues.append(queue)
        if queue.cohort is not None and queue.cohort not in cohorts:
            cohorts[queue.cohort] = {}  # a cohort named by its queues alone holds no quota of its own
    if provisioning:
        notes.append(
            "ProvisioningRequest admission checks pass at once: the autoscaler's time to add the nodes is not modelled."
        )

    teams = {
        o["metadata"]["name"]: ((o["metadata"].get("labels") or {}).get(TEAM_LABEL) or o["metadata"]["name"])
        for o in by_kind.get("Namespace", [])
    }
    local_queues = {
        (teams.get(o["metadata"]["namespace"], o["metadata"]["namespace"]), o["metadata"]["name"]): o["spec"][
            "clusterQueue"
        ]
        for o in by_kind.get("LocalQueue", [])
    }
    priorities = {o["metadata"]["name"]: int(o["value"]) for o in by_kind.get("WorkloadPriorityClass", [])}
    return Queues(
        tuple(queues),
        {name: dict(q) for name, q in cohorts.items()},
        local_queues,
        priorities,
        topology,
        strategies,
        tuple(dict.fromkeys(reasons)),
        tuple(notes),
    )


def _manager_reasons(config: Mapping[str, Any], reasons: list[str]) -> tuple[str, ...]:
    """Fair sharing's strategies from the manager configuration, and what in it is not modelled."""
    fair = config.get("fairSharing")
    # In config.kueue.x-k8s.io/v1beta2 the block's presence turns fair sharing on (an older
    # `enable: false` in it keeps it off).
    if not isinstance(fair, Mapping) or fair.get("enable") is False:
        reasons.append("fair sharing is off: Kueue's classical preemption is not modelled")
        return ()
    strategies = tuple(fair.get("preemptionStrategies") or DEFAULT_STRATEGIES)
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        reasons.append(f"fair sharing's preemption strategies {unknown} are not modelled")
    if config.get("admissionFairSharing"):
        reasons.append("admission fair sharing (LocalQueue usage) is not modelled")
    ready = config.get("waitForPodsReady")
    if isinstance(ready, Mapping) and ready.get("enable", True):
        reasons.append("waitForPodsReady is not modelled: the simulator has no pods")
    return strategies


def _cluster_queue(
    obj: Mapping[str, Any], topology: frozenset[str], checks: Mapping[str, str | None], reasons: list[str]
) -> tuple[ClusterQueue, bool]:
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    if len(groups) != 1:
        reasons.append(f"ClusterQueue {name!r} has {len(groups)} resource groups; the simulator models one")
    group = groups[0] if groups else {"coveredResources": [], "flavors": []}
    quotas: dict[FlavorResource, Quota] = {}
    for flavor in group["flavors"]:
        for resource in flavor["resources"]:
            try:
                quotas[(flavor["name"], resource["name"])] = _quota(resource)
            except QuantityError as err:
                reasons.append(f"ClusterQueue {name!r}: {err}")
    if spec.get("queueingStrategy", "BestEffortFIFO") != "BestEffortFIFO":
        reasons.append(f"ClusterQueue {name!r}: queueingStrategy {spec['queueingStrategy']} is not modelled")
    if spec.get("stopPolicy", "None") != "None":
        reasons.append(f"ClusterQueue {name!r} is stopped (stopPolicy {spec['stopPolicy']})")
    preemption = spec.get("preemption") or {}
    within = preemption.get("withinClusterQueue", "Never")
    reclaim = preemption.get("reclaimWithinCohort", "Never")
    borrow = (preemption.get("borrowWithinCohort") or {}).get("policy", "Never")
    if within not in WITHIN_CLUSTER_QUEUE:
        reasons.append(f"ClusterQueue {name!r}: withinClusterQueue {within} is not modelled")
    if reclaim not in RECLAIM_WITHIN_COHORT:
        reasons.append(f"ClusterQueue {name!r}: reclaimWithinCohort {reclaim} is not modelled")
    if borrow != "Never":
        reasons.append(f"ClusterQueue {name!r}: borrowWithinCohort {borrow} is not modelled")
    fungibility = spec.get("flavorFungibility") or {}
    when_borrow = fungibility.get("whenCanBorrow", "MayStopSearch")
    when_preempt = fungibility.get("whenCanPreempt", "TryNextFlavor")
    if when_borrow not in FUNGIBILITY or when_preempt not in FUNGIBILITY or fungibility.get("preference"):
        reasons.append(f"ClusterQueue {name!r}: flavorFungibility {dict(fungibility)} is not modelled")
    names = [c["name"] for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks", [])]
    names += list(spec.get("admissionChecks") or [])
    provisioning = False
    for check in names:
        if checks.get(check) == PROVISIONING_CONTROLLER:
            provisioning = True
        else:
            reasons.append(f"ClusterQueue {name!r}: admission check {check!r} ({checks.get(check)}) is not modelled")
    flavors = tuple(f["name"] for f in group["flavors"])
    weight = (spec.get("fairSharing") or {}).get("weight")
    queue = ClusterQueue(
        name=name,
        cohort=spec.get("cohortName") or None,
        flavors=flavors,
        resources=tuple(group.get("coveredResources") or ()),
        quotas=quotas,
        weight=1.0 if weight is None else float(parse_quantity(weight)),
        within_cluster_queue=within,
        reclaim_within_cohort=reclaim,
        when_can_borrow=when_borrow,
        when_can_preempt=when_preempt,
        topology_only=bool(flavors) and all(f in topology for f in flavors),
    )
    return queue, provisioning
