"""Kueue's admission in virtual time, for the queues this program builds (queues.py reads them).

Quota-level, as Kueue itself decides: a job is admitted when its pods' summed requests fit a
flavor's quota, whole or not at all; no node, pod or kube-scheduler is simulated, so the time the
autoscaler takes to add nodes (and any ProvisioningRequest check's wait for them) is not
modelled. What is, with the Kueue 0.19.2 source each rule follows (kubernetes-sigs/kueue,
file@v0.19.2; read, not copied):

- queues: per ClusterQueue BestEffortFIFO, priority first and then submission
  (pkg/cache/queue/cluster_queue.go baseCompareFunc); a head that cannot be admitted is set aside
  with every equal job (its scheduling equivalence class: same requests and priority), and the
  next job is tried; the set-aside jobs of a cohort are tried again one second after quota is
  first freed in it, however often it is freed in that second (requeueIfNotPresent,
  handleInadmissibleHash; a finish or eviction calls QueueAssociatedInadmissibleWorkloadsAfter,
  whose requeue request waits requeueBatchPeriod in a delaying work queue,
  pkg/cache/queue/inadmissible_workloads.go); a job that preempted stays at the head
  (preemptorWorkload, sticky);
- cycles: each cycle takes one head per ClusterQueue, assigns flavors to all of them against the
  cycle's state (pkg/scheduler/scheduler.go nominate), then admits them in fair-sharing order: a
  tournament that prefers a queue not borrowing on the flavors it asks for, then the lowest
  dominant resource share with the head's usage added, then priority, then submission
  (pkg/scheduler/fair_sharing_iterator.go); an entry that no longer fits waits for the next cycle;
- quota: nominalQuota, borrowingLimit and lendingLimit through the cohort, whose own nominalQuota
  is the spare anyone may borrow (pkg/cache/scheduler/resource_node.go available,
  potentialAvailable, addUsage, removeUsage);
- flavors in order, all of a job's resources on one flavor, with whenCanBorrow / whenCanPreempt
  (pkg/scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets, fitsResourceQuota,
  shouldTryNextFlavor, isPreferred); a flavor with topologyName only for a topology-aware queue;
- dominant resource share: per resource, what a queue borrows summed over flavors × 1000 ÷ what
  the cohort could lend of it, the largest, ÷ the fairSharing weight
  (pkg/cache/scheduler/fair_sharing.go dominantResourceShare, CompareDRS);
- preemption under fair sharing: candidates from the preemptor's own queue by priority
  (withinClusterQueue) and from borrowing queues of the cohort (reclaimWithinCohort), ordered as
  Kueue orders them; queues taken by highest share, a borrowing queue's job preempted when the
  strategy allows it (LessThanOrEqualToFinalShare, then LessThanInitialShare if configured), a
  preemptor within its nominal quota preempting regardless of shares; the fewest victims kept by
  filling back (pkg/scheduler/preemption/preemption.go fairPreemptions, runFirstFsStrategy,
  runSecondFsStrategy, fillBackWorkloads, findCandidates; preemption/fairsharing/ordering.go,
  strategy.go; preemption/common/ordering.go CandidatesOrdering, preemption_policy.go;
  preemption_oracle.go for the flavor assigner's look-ahead);
- a preempted job gives its quota back at once and starts over from nothing, queued again by its
  submission time (pkg/workload/workload.go GetQueueOrderTimestamp).

Where it departs from Kueue, knowingly: a class that asks for at least as much of the same
resources at no higher priority than one just set aside is set aside with it, where Kueue tries
it in the next cycles and it fails alike (a larger request fits no flavor a smaller one did not,
and finds no more preemption targets); evictions are instant (pods take seconds to stop); the
flavor scan starts from the first flavor every time (Kueue 0.19 may resume where it left off,
FlavorFungibilityPreserveScanProgress); ties Kueue leaves to map order or UIDs are broken by
object and trace order, so a run is deterministic; one cycle's entries are admitted one after
another against the state the earlier ones left, where Kueue checks each against the cycle's
snapshot and retries it in the next cycle, milliseconds later.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from .queues import DEFAULT_PRIORITY, ClusterQueue, FlavorResource, Queues
from .trace import TraceJob

# preemption modes of a flavor, worst first (flavorassigner.go preemptionMode)
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
# A safety stop: cycles at one instant that admit or preempt something. A preemption loop is
# broken before (see Simulator.loops); the run says when it was reached.
MAX_CYCLES_PER_INSTANT = 2_000
# The times one preemption (the same job evicting the same jobs) may repeat, with no job arriving
# or finishing in between, before it is taken for a loop (Simulator.issued).
LOOP_REPEATS = 3
# Kueue's requeueBatchPeriod (kubernetes-sigs/kueue pkg/cache/queue/inadmissible_workloads.go@v0.19.2):
# set-aside jobs wait this long after quota is freed. It matters on a busy cohort: a slot freed while
# every head is set aside stays idle until then.
REQUEUE_BATCH_S = 1.0
# Event kinds, in the order one instant handles them.
FINISH, ARRIVAL, REQUEUE = range(3)


@dataclass(frozen=True)
class Run:
    """One admission of a job: when it started and ended, on which flavor; `completed` when it ran
    to its end, False when it was preempted."""

    job: int  # index into the trace
    flavor: str
    start_s: float
    end_s: float
    completed: bool


@dataclass(frozen=True)
class Outcome:
    runs: tuple[Run, ...]
    never_admitted: tuple[int, ...]  # jobs still waiting when nothing else could happen
    unqueued: tuple[int, ...]  # jobs whose team or LocalQueue the stack does not have
    cut_short: bool = False  # MAX_CYCLES_PER_INSTANT was reached at some instant
    loops: int = 0  # preemptions refused because they repeated one already issued at the same instant
    reasons: tuple[str, ...] = ()  # what it cannot model; then nothing was simulated


def unmodelled(queues: Queues, jobs: Sequence[TraceJob]) -> tuple[str, ...]:
    """Why the simulator cannot forecast these jobs under these queues: the queues' own reasons,
    and jobs sent to a topology-aware queue (Kueue places them by topology, which is not modelled)."""
    reasons = list(queues.reasons)
    tas = sorted(
        {
            f"{job.team}/{job.queue}"
            for job in jobs
            if (cq := queues.local_queues.get((job.team, job.queue))) is not None
            and queues.cluster_queue(cq).topology_only
        }
    )
    if tas:
        reasons.append(
            f"jobs of LocalQueue {', '.join(tas)} go to a topology-aware queue: placement by topology is not modelled"
        )
    return tuple(reasons)


# --- dominant resource share --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Share:
    """A queue's dominant resource share (fair_sharing.go DRS)."""

    weight: float
    ratio: float  # unweighted, ×1000
    borrowing: bool
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def weighted(self) -> float:
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0


NEGATIVE = Share(1.0, -1.0, False)


def compare(a: Share, b: Share) -> int:
    """CompareDRS: lower is preferred for admission, higher for preemption."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    x, y = a.weighted, b.weighted
    return (x > y) - (x < y)


# --- the cluster's state ---------------------------------------------------------------------------


class _Cohort:
    __slots__ = ("name", "subtree", "usage", "lendable", "queues")

    def __init__(self, name: str, own: Mapping[FlavorResource, int]) -> None:
        self.name = name
        self.subtree: dict[FlavorResource, int] = dict(own)
        self.usage: dict[FlavorResource, int] = {}  # every key of subtree, once the queues are in
        self.lendable: dict[str, int] = {}
        self.queues: list[_Queue] = []


class _Admitted:
    __slots__ = ("job", "flavor", "usage", "start", "attempt")

    def __init__(self, job: _Job, flavor: str, usage: dict[FlavorResource, int], start: float, attempt: int) -> None:
        self.job, self.flavor, self.usage, self.start, self.attempt = job, flavor, usage, start, attempt


class _Job:
    __slots__ = ("index", "trace", "queue", "requests", "priority", "key", "shape", "pending", "attempts", "admitted")

    def __init__(self, index: int, trace: TraceJob, queue: _Queue, priority: int) -> None:
        self.index, self.trace, self.queue, self.priority = index, trace, queue, priority
        pod = trace.pod
        requests = {
            "cpu": pod.cpu_m * trace.pods,
            "memory": pod.memory_mib * trace.pods,
            "nvidia.com/gpu": pod.gpus * trace.pods,
        }
        # A pod lists only what it asks for; Kueue counts only those resources.
        self.requests = {r: v for r, v in requests.items() if v > 0}
        self.key = (-priority, trace.arrival_s, index)  # the queue's order
        self.shape = (priority, tuple(sorted(self.requests.items())))  # its equivalence class
        self.pending = False
        self.attempts = 0
        self.admitted: _Admitted | None = None


class _Shape:
    """The pending jobs of one equivalence class in one queue: a heap of their keys (a job pushed
    again after a preemption may be in it twice; the heap is cleaned as it is read)."""

    __slots__ = ("keys", "jobs", "parked")

    def __init__(self) -> None:
        self.keys: list[tuple[float, float, int]] = []
        self.jobs: dict[tuple[float, float, int], _Job] = {}
        self.parked = False

    def push(self, job: _Job) -> None:
        heapq.heappush(self.keys, job.key)
        self.jobs[job.key] = job

    def head(self) -> _Job | None:
        while self.keys:
            job = self.jobs.get(self.keys[0])
            if job is not None and job.pending:
                return job
            key = heapq.heappop(self.keys)
            if job is not None:
                del self.jobs[key]
        return None


class _Queue:
    __slots__ = (
        "model",
        "cohort",
        "nominal",
        "borrowing_limit",
        "local",
        "usage",
        "admitted",
        "shapes",
        "heads",
        "sticky",
        "version",
        "cached",
        "zero",
        "frs",
    )

    def __init__(self, model: ClusterQueue, cohort: _Cohort | None) -> None:
        self.model = model
        self.cohort = cohort
        self.nominal = {fr: q.nominal for fr, q in model.quotas.items()}
        self.borrowing_limit = {fr: q.borrowing_limit for fr, q in model.quotas.items()}
        # localQuota: what a lending limit keeps from the cohort (resource_node.go localQuota)
        self.local = {
            fr: (max(0, q.nominal - q.lending_limit) if q.lending_limit is not None else 0)
            for fr, q in model.quotas.items()
        }
        # every flavor-resource of the queue is a key from the start, so reads need no default
        self.usage: dict[FlavorResource, int] = dict.fromkeys(model.quotas, 0)
        self.frs = tuple((fr, q.nominal, fr[1]) for fr, q in model.quotas.items())
        self.admitted: dict[int, _Admitted] = {}  # by job index, in admission order
        self.shapes: dict[tuple[int, tuple[tuple[str, int], ...]], _Shape] = {}
        self.heads: list[
            tuple[tuple[float, float, int], tuple[int, tuple[tuple[str, int], ...]]]
        ] = []  # (job key, shape key), lazily kept
        self.sticky: _Job | None = None
        self.version = 0  # bumped by every change of usage: the share below is kept until then
        self.zero = Share(model.weight, 0.0, False)
        self.cached: tuple[int, Share] = (-1, self.zero)

    # quota arithmetic (resource_node.go)

    def local_available(self, fr: FlavorResource) -> int:
        return max(0, self.local[fr] - self.usage[fr])

    def available(self, fr: FlavorResource) -> int:
        nominal, used = self.nominal[fr], self.usage[fr]
        cohort = self.cohort
        if cohort is None:
            return max(0, nominal - used)
        parent = cohort.subtree[fr] - cohort.usage[fr]
        local = self.local[fr]
        limit = self.borrowing_limit[fr]
        if limit is not None:
            parent = min(nominal - local - max(0, used - local) + limit, parent)
        return max(0, max(0, local - used) + parent)

    def potential(self, fr: FlavorResource) -> int:
        if self.cohort is None:
            return self.nominal[fr]
        avail = self.local[fr] + self.cohort.subtree[fr]
        limit = self.borrowing_limit[fr]
        return avail if limit is None else min(self.nominal[fr] + limit, avail)

    def add(self, usage: Mapping[FlavorResource, int]) -> None:
        self.version += 1
        mine, local, cohort = self.usage, self.local, self.cohort
        for fr, v in usage.items():
            used = mine[fr]
            free = local[fr] - used
            mine[fr] = used + v
            if cohort is not None and v > free:
                cohort.usage[fr] += v - max(0, free)

    def remove(self, usage: Mapping[FlavorResource, int]) -> None:
        self.version += 1
        mine, local, cohort = self.usage, self.local, self.cohort
        for fr, v in usage.items():
            used = mine[fr]
            stored = used - local[fr]
            mine[fr] = used - v
            if stored > 0 and cohort is not None:
                cohort.usage[fr] -= min(v, stored)

    def borrowing_with(self, fr: FlavorResource, v: int) -> bool:
        return self.nominal[fr] < self.usage[fr] + v

    def share(self, extra: Mapping[FlavorResource, int] | None = None) -> Share:
        if self.cohort is None:
            return self.zero
        if extra is None and self.cached[0] == self.version:
            return self.cached[1]
        usage = self.usage
        borrowed: dict[str, int] = {}
        frs = []
        for fr, nominal, resource in self.frs:
            b = usage[fr] - nominal
            if extra:
                b += extra.get(fr, 0)
            if b > 0:
                borrowed[resource] = borrowed.get(resource, 0) + b
                frs.append(fr)
        if not borrowed:
            share = self.zero
        else:
            ratio, dominant = 0.0, ""
            lendable = self.cohort.lendable
            for resource, b in borrowed.items():
                total = lendable.get(resource, 0)
                if total > 0:
                    r = b * 1000.0 / total
                    if r > ratio or (r == ratio and resource < dominant):
                        ratio, dominant = r, resource
            share = Share(self.model.weight, ratio, True, frozenset(frs))
        if extra is None:
            self.cached = (self.version, share)
        return share

    # pending jobs

    def push(self, job: _Job) -> None:
        job.pending = True
        shape = self.shapes.get(job.shape)
        if shape is None:
            shape = self.shapes[job.shape] = _Shape()
        shape.push(job)
        if not shape.parked:
            heapq.heappush(self.heads, (job.key, job.shape))

    def head(self) -> _Job | None:
        if self.sticky is not None and self.sticky.pending:
            return self.sticky
        self.sticky = None
        while self.heads:
            key, shape_key = self.heads[0]
            shape = self.shapes[shape_key]
            first = shape.head()
            if not shape.parked and first is not None and first.key == key:
                return first
            heapq.heappop(self.heads)
            if not shape.parked and first is not None:
                heapq.heappush(self.heads, (first.key, shape_key))
        return None

    def park(self, job: _Job) -> None:
        """Set the job's class aside until quota is freed (Kueue's inadmissible workloads), and with
        it every class that asks for at least as much of the same resources at no higher a
        priority: each would fail as it did, in the cycles Kueue would spend finding that out."""
        priority, requests = job.shape
        for key, shape in self.shapes.items():
            if shape.parked:
                continue
            other_priority, other = key
            if key == job.shape or (
                other_priority <= priority
                and len(other) == len(requests)
                and all(o[0] == r[0] and o[1] >= r[1] for o, r in zip(other, requests, strict=True))
            ):
                shape.parked = True
        if self.sticky is job:
            self.sticky = None

    def unpark(self) -> None:
        for shape_key, shape in self.shapes.items():
            if shape.parked:
                shape.parked = False
                first = shape.head()
                if first is not None:
                    heapq.heappush(self.heads, (first.key, shape_key))


@dataclass
class _Choice:
    """A flavor assignment (flavorassigner.go Assignment): the mode, the flavor, the borrowing
    level, the flavor-resources that need preemption and the preemption targets."""

    mode: int  # FIT, PREEMPT (any of the preemption modes) or NO_FIT
    flavor: str | None
    borrow: int
    usage: dict[FlavorResource, int]
    need: frozenset[FlavorResource]
    targets: list[_Admitted]


def _preferred(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """isPreferred without a preference: (preemption mode, borrowing level), BorrowingOverPreemption."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


class Simulator:
    """One run of a trace under one set of queues. Use `simulate`."""

    def __init__(self, queues: Queues) -> None:
        self.model = queues
        self.cohorts = {name: _Cohort(name, own) for name, own in queues.cohorts.items()}
        self.queues: dict[str, _Queue] = {}
        for model in queues.cluster_queues:
            cohort = self.cohorts.get(model.cohort) if model.cohort else None
            queue = _Queue(model, cohort)
            self.queues[model.name] = queue
            if cohort is not None:
                cohort.queues.append(queue)
                for fr, nominal in queue.nominal.items():  # accumulateFromChild
                    cohort.subtree[fr] = cohort.subtree.get(fr, 0) + nominal - queue.local[fr]
        for cohort in self.cohorts.values():
            cohort.usage = dict.fromkeys(cohort.subtree, 0)
            # What the cohort could lend of each resource, over every flavor (calculateLendable of the root)
            for (_, resource), quota in cohort.subtree.items():
                cohort.lendable[resource] = cohort.lendable.get(resource, 0) + quota
        self.strategies = queues.strategies
        self.topology = queues.topology_flavors
        self.runs: list[Run] = []
        self.events: list[tuple[float, int, int, int]] = []  # (time, kind, job or group, attempt)
        # What one requeue request retries: a cohort's queues, or a queue in no cohort
        # (notifyCohort, notifyClusterQueue); the groups with a request waiting.
        self.groups: list[list[_Queue]] = [c.queues for c in self.cohorts.values()]
        self.groups += [[q] for q in self.queues.values() if q.cohort is None]
        self.group_of = {id(q): i for i, group in enumerate(self.groups) for q in group}
        self.requested: set[int] = set()
        self.now = 0.0
        self.cut_short = False
        # Kueue's rules can let two queues take the same quota back and forth: fair sharing's share
        # adds up a resource over every flavor, while a queue within its nominal quota of one
        # flavor reclaims it regardless of shares (FairSharingPreemptWithinNominal), so a queue
        # borrowing CPUs on one flavor loses jobs on another and takes them back. Kueue would keep
        # evicting; here a preemption issued LOOP_REPEATS times while no job arrived or finished (the
        # rounds a second apart, each after a requeue batch) is not issued again
        # (the job waits as if it had no candidates) and counted, and the forecast says so.
        self.issued: dict[tuple[int, frozenset[int]], int] = {}
        self.loops = 0

    # --- flavors ---------------------------------------------------------------------------------

    def _quota_fit(self, queue: _Queue, fr: FlavorResource, value: int) -> tuple[int, int] | None:
        """fitsResourceQuota up to its preemption look-ahead: the preemption mode and borrowing
        level of one resource on one flavor, or None when only the oracle can tell."""
        if value > queue.potential(fr):
            return NO_FIT, 0
        borrowing = queue.cohort is not None and queue.borrowing_with(fr, value)
        borrow, may_reclaim = (1, False) if borrowing else (0, queue.cohort is not None)
        if value <= queue.available(fr):
            return FIT, borrow
        can_preempt_while_borrowing = queue.model.reclaim_within_cohort != "Never"  # fair sharing is on
        if queue.nominal.get(fr, 0) >= value or may_reclaim or can_preempt_while_borrowing:
            return None
        return NO_FIT, borrow

    def _oracle(self, queue: _Queue, job: _Job, fr: FlavorResource, value: int) -> tuple[int, int]:
        """preemption_oracle.go SimulatePreemption: whether preempting could free `value` of `fr`."""
        targets = self._targets(queue, job, frozenset((fr,)), {fr: value})
        if targets:
            for t in targets:
                t.job.queue.remove(t.usage)
        borrow = 1 if queue.cohort is not None and queue.borrowing_with(fr, value) else 0
        for t in targets:
            t.job.queue.add(t.usage)
        if not targets:
            return NO_CANDIDATES, borrow
        return (PREEMPT if any(t.job.queue is queue for t in targets) else RECLAIM), borrow

    def _assign(self, job: _Job) -> _Choice:
        queue = job.queue
        model = queue.model
        none = _Choice(NO_FIT, None, 0, {}, frozenset(), [])
        if any(r not in model.resources for r in job.requests):
            return none  # "resource unavailable in ClusterQueue": it never fits here
        best: tuple[str, tuple[int, int], dict[str, int]] | None = None
        best_mode = (NO_FIT, 1 << 30)
        for flavor in model.flavors:
            if flavor in self.topology and not model.topology_only:
                continue  # a job that asks for no topology goes only to flavors without one
            mode = (FIT, 0)
            modes: dict[str, int] = {}
            ask: list[tuple[str, FlavorResource, int]] = []
            for resource, value in job.requests.items():
                fr = (flavor, resource)
                if fr not in queue.nominal:
                    mode = (NO_FIT, 0)
                    break
                m = self._quota_fit(queue, fr, value)
                if m is None:
                    ask.append((resource, fr, value))
                    continue
                modes[resource] = m[0]
                if _preferred(mode, m):
                    mode = m
                if mode[0] == NO_FIT:
                    break
            # The oracle last, and only for a flavor no resource rules out: the flavor's mode is
            # the worst of its resources', whatever their order, and NO_FIT is the worst.
            if mode[0] != NO_FIT:
                for resource, fr, value in ask:
                    m = self._oracle(queue, job, fr, value)
                    modes[resource] = m[0]
                    if _preferred(mode, m):
                        mode = m
            # shouldTryNextFlavor
            try_next = (
                mode[0] in (NO_FIT, NO_CANDIDATES)
                or (mode[0] in (PREEMPT, RECLAIM) and model.when_can_preempt == "TryNextFlavor")
                or (mode[1] > 0 and model.when_can_borrow == "TryNextFlavor")
            )
            if not try_next:
                best, best_mode = (flavor, mode, modes), mode
                break
            if _preferred(mode, best_mode):
                best, best_mode = (flavor, mode, modes), mode
        if best is None:
            return none
        flavor, mode, modes = best
        usage = {(flavor, r): v for r, v in job.requests.items()}
        if mode[0] == FIT:
            return _Choice(FIT, flavor, mode[1], usage, frozenset(), [])
        need = frozenset((flavor, r) for r, m in modes.items() if m != FIT)
        targets = self._targets(queue, job, need, usage)
        return _Choice(PREEMPT, flavor, mode[1], usage, need, targets)

    # --- preemption (fair sharing) ---------------------------------------------------------------

    def _candidates(self, queue: _Queue, job: _Job, need: frozenset[FlavorResource]) -> list[_Admitted]:
        """findCandidates, in CandidatesOrdering's order."""
        found: list[_Admitted] = []
        model = queue.model
        if model.within_cluster_queue == "LowerPriority":
            found += [
                a for a in queue.admitted.values() if a.job.priority < job.priority and not need.isdisjoint(a.usage)
            ]
        if queue.cohort is not None and model.reclaim_within_cohort != "Never":
            lower = model.reclaim_within_cohort == "LowerPriority"
            for other in queue.cohort.queues:
                if other is queue or not any(other.nominal.get(fr, 0) < other.usage.get(fr, 0) for fr in need):
                    continue  # only a queue that borrows what is needed gives it back
                found += [
                    a
                    for a in other.admitted.values()
                    if (not lower or a.job.priority < job.priority) and not need.isdisjoint(a.usage)
                ]
        found.sort(key=lambda a: self._candidate_key(a, queue))
        return found

    @staticmethod
    def _candidate_key(a: _Admitted, queue: _Queue) -> tuple[bool, int, float, int]:
        # other queues first, lower priority first, the most recently admitted first, then trace order
        return (a.job.queue is queue, a.job.priority, -a.start, a.job.index)

    def _fits(self, queue: _Queue, usage: Mapping[FlavorResource, int]) -> bool:
        for fr, v in usage.items():
            if v > queue.available(fr):
                return False
        return True

    def _targets(
        self, queue: _Queue, job: _Job, need: frozenset[FlavorResource], usage: dict[FlavorResource, int]
    ) -> list[_Admitted]:
        """fairPreemptions: the workloads to evict so that `usage` fits, or none."""
        candidates = self._candidates(queue, job, need)
        if not candidates:
            return []
        queue.add(usage)  # shares include the incoming workload
        fits, targets, retry = self._first_strategy(queue, need, usage, candidates)
        if not fits and len(self.strategies) > 1:
            fits, targets = self._second_strategy(queue, usage, retry, targets)
        queue.remove(usage)
        if not fits:
            for t in targets:
                t.job.queue.add(t.usage)
            return []
        # fillBackWorkloads: in reverse, give back every target the workload fits without
        i = len(targets) - 2
        while i >= 0:
            t = targets[i]
            t.job.queue.add(t.usage)
            if self._fits(queue, usage):
                targets[i] = targets[-1]
                targets.pop()
            else:
                t.job.queue.remove(t.usage)
            i -= 1
        for t in targets:
            t.job.queue.add(t.usage)
        return targets

    def _fits_fair(self, queue: _Queue, usage: dict[FlavorResource, int]) -> bool:
        queue.remove(usage)
        fits = self._fits(queue, usage)
        queue.add(usage)
        return fits

    def _ordering(self, queue: _Queue, candidates: list[_Admitted]) -> dict[str, list[_Admitted]]:
        by_queue: dict[str, list[_Admitted]] = {}
        for c in candidates:
            by_queue.setdefault(c.job.queue.model.name, []).append(c)
        return by_queue

    def _next_target(self, queue: _Queue, by_queue: dict[str, list[_Admitted]], pruned: set[str]) -> _Queue | None:
        """TargetClusterQueueOrdering.nextTarget for a cohort without children cohorts."""
        if queue.cohort is None:
            return queue if by_queue.get(queue.model.name) and queue.model.name not in pruned else None
        highest: _Queue | None = None
        highest_share = NEGATIVE
        for other in queue.cohort.queues:
            name = other.model.name
            if name in pruned:
                continue
            share = other.share()
            if (not share.borrowing and other is not queue) or not by_queue.get(name):
                pruned.add(name)
                continue
            c = compare(share, highest_share)
            if c == 0 and highest is not None:
                mine, theirs = by_queue[name][0], by_queue[highest.model.name][0]
                if self._candidate_key(mine, queue) < self._candidate_key(theirs, queue):
                    highest = other
            elif c == 1:
                highest, highest_share = other, share
        return highest

    def _first_strategy(
        self,
        queue: _Queue,
        need: frozenset[FlavorResource],
        usage: dict[FlavorResource, int],
        candidates: list[_Admitted],
    ) -> tuple[bool, list[_Admitted], list[_Admitted]]:
        by_queue = self._ordering(queue, candidates)
        pruned: set[str] = set()
        targets: list[_Admitted] = []
        retry: list[_Admitted] = []
        # FairSharingPreemptWithinNominal: a preemptor within its nominal quota takes it back
        within = not any(queue.nominal.get(fr, 0) < queue.usage.get(fr, 0) for fr in need)
        strategy = self.strategies[0]
        while True:
            target = self._next_target(queue, by_queue, pruned)
            if target is None:
                return False, targets, retry
            pending = by_queue[target.model.name]
            if target is queue or within:
                victim = pending.pop(0)
                victim.job.queue.remove(victim.usage)
                targets.append(victim)
                if self._fits_fair(queue, usage):
                    return True, targets, []
                continue
            mine, old = queue.share(), target.share()
            if math.isinf(mine.weighted) and not math.isinf(old.weighted):
                retry += pending  # no candidate of that queue can pass either strategy
                pending.clear()
                continue
            while pending:
                victim = pending.pop(0)
                target.remove(victim.usage)
                new = target.share()
                target.add(victim.usage)
                if strategy == "LessThanOrEqualToFinalShare":
                    passed = compare(mine, new) <= 0
                else:  # LessThanInitialShare
                    passed = compare(mine, old) < 0
                if passed:
                    target.remove(victim.usage)
                    targets.append(victim)
                    if self._fits_fair(queue, usage):
                        return True, targets, []
                    break  # the shares moved: pick the queue again
                retry.append(victim)

    def _second_strategy(
        self, queue: _Queue, usage: dict[FlavorResource, int], retry: list[_Admitted], targets: list[_Admitted]
    ) -> tuple[bool, list[_Admitted]]:
        """Rule S2-b (LessThanInitialShare) over the candidates the first strategy passed by."""
        by_queue = self._ordering(queue, retry)
        pruned: set[str] = set()
        while True:
            target = self._next_target(queue, by_queue, pruned)
            if target is None:
                return False, targets
            mine, old = queue.share(), target.share()
            victim = by_queue[target.model.name].pop(0)
            if compare(mine, old) < 0:
                target.remove(victim.usage)
                targets.append(victim)
                if self._fits_fair(queue, usage):
                    return True, targets
            pruned.add(target.model.name)

    # --- the cycle -------------------------------------------------------------------------------

    def _order(self, entries: list[tuple[_Job, _Choice]]) -> Iterator[tuple[_Job, _Choice]]:
        """The fair-sharing iterator: the next entry to process is the tournament's winner among
        the remaining ones of the first queue's cohort, with their usage added to the shares."""
        remaining = list(entries)
        while remaining:
            cohort = remaining[0][0].queue.cohort
            if cohort is None:
                yield remaining.pop(0)
                continue
            best_i, best_rank = -1, None
            for i, (job, choice) in enumerate(remaining):
                if job.queue.cohort is not cohort:
                    continue
                share = job.queue.share(choice.usage)
                borrowing = not share.borrowed.isdisjoint(choice.usage)  # FairSharingPrioritizeNonBorrowing
                rank = (borrowing, share, -job.priority, job.trace.arrival_s, job.index)
                if best_rank is None or self._less(rank, best_rank):
                    best_i, best_rank = i, rank
            yield remaining.pop(best_i)

    @staticmethod
    def _less(a: tuple[bool, Share, int, float, int], b: tuple[bool, Share, int, float, int]) -> bool:
        if a[0] != b[0]:
            return not a[0]
        c = compare(a[1], b[1])
        if c != 0:
            return c < 0
        return a[2:] < b[2:]

    def _release(self, queue: _Queue) -> None:
        """Quota was freed: every set-aside job of the cohort is tried again after the batch period,
        unless a request is already waiting (a delaying queue keeps an item's earliest time)."""
        group = self.group_of[id(queue)]
        if group not in self.requested:
            self.requested.add(group)
            heapq.heappush(self.events, (self.now + REQUEUE_BATCH_S, REQUEUE, group, 0))

    def _admit(self, job: _Job, choice: _Choice) -> None:
        queue = job.queue
        assert choice.flavor is not None
        job.pending = False
        job.attempts += 1
        admitted = _Admitted(job, choice.flavor, choice.usage, self.now, job.attempts)
        job.admitted = admitted
        queue.admitted[job.index] = admitted
        queue.add(choice.usage)
        if queue.sticky is job:
            queue.sticky = None
        heapq.heappush(self.events, (self.now + job.trace.duration_s, FINISH, job.index, job.attempts))

    def _end(self, admitted: _Admitted, completed: bool) -> None:
        job = admitted.job
        queue = job.queue
        del queue.admitted[job.index]
        queue.remove(admitted.usage)
        job.admitted = None
        self.runs.append(Run(job.index, admitted.flavor, admitted.start, self.now, completed))
        if not completed:
            queue.push(job)  # starts over from nothing, queued by its submission
        self._release(queue)

    def _cycle(self) -> bool:
        """One scheduling cycle; whether anything was admitted or preempted."""
        heads = [job for queue in self.queues.values() if (job := queue.head()) is not None]
        if not heads:
            return False
        entries = [(job, self._assign(job)) for job in heads]  # nominate
        reserved: list[tuple[_Queue, dict[FlavorResource, int]]] = []
        progress = False
        for job, choice in self._order(entries):
            queue = job.queue
            if choice.mode == NO_FIT or (choice.mode == PREEMPT and not choice.targets):
                if choice.mode == PREEMPT and queue.model.reclaim_within_cohort != "Any":
                    # reserveCapacityForUnreclaimablePreempt: hold what it could get for this cycle
                    hold = self._reserve(queue, choice)
                    queue.add(hold)
                    reserved.append((queue, hold))
                queue.park(job)
                progress = True  # a queue's head moved on
                continue
            if choice.mode == PREEMPT:
                if any(t.job.admitted is not t for t in choice.targets):
                    continue  # overlapping targets another entry preempted: the next cycle
                for t in choice.targets:
                    t.job.queue.remove(t.usage)
                fits = self._fits(queue, choice.usage)
                for t in choice.targets:
                    t.job.queue.add(t.usage)
                if not fits:
                    continue
                issued = (job.index, frozenset(t.job.index for t in choice.targets))
                if self.issued.get(issued, 0) >= LOOP_REPEATS:
                    self.loops += 1
                    queue.park(job)
                    progress = True
                    continue
                self.issued[issued] = self.issued.get(issued, 0) + 1
                for t in choice.targets:
                    self._end(t, completed=False)
                queue.sticky = job
                queue.add(choice.usage)  # held for the rest of the cycle, so others do not take it
                reserved.append((queue, choice.usage))
                progress = True
                continue
            if not self._fits(queue, choice.usage):
                continue  # no longer fits after an earlier entry: the next cycle
            self._admit(job, choice)
            progress = True
        for queue, hold in reserved:
            queue.remove(hold)
        return progress

    @staticmethod
    def _reserve(queue: _Queue, choice: _Choice) -> dict[FlavorResource, int]:
        """quotaResourcesToReserve for a preempting entry without candidates."""
        hold: dict[FlavorResource, int] = {}
        for fr, v in choice.usage.items():
            nominal, used = queue.nominal.get(fr, 0), queue.usage.get(fr, 0)
            if choice.borrow > 0:
                limit = queue.borrowing_limit.get(fr)
                hold[fr] = v if limit is None else min(v, nominal + limit - used)
            else:
                hold[fr] = max(0, min(v, nominal - used))
        return {fr: v for fr, v in hold.items() if v > 0}

    # --- the run ---------------------------------------------------------------------------------

    def run(self, jobs: Sequence[TraceJob]) -> Outcome:
        known: list[_Job] = []
        unqueued: list[int] = []
        for index, trace in enumerate(jobs):
            name = self.model.local_queues.get((trace.team, trace.queue))
            if name is None:
                unqueued.append(index)
                continue
            priority = (
                self.model.priorities.get(trace.priority, DEFAULT_PRIORITY) if trace.priority else DEFAULT_PRIORITY
            )
            job = _Job(index, trace, self.queues[name], priority)
            known.append(job)
            heapq.heappush(self.events, (trace.arrival_s, ARRIVAL, index, 0))
        by_index = {job.index: job for job in known}
        while self.events:
            self.now = self.events[0][0]
            changed = False  # a job arrived or finished: the preemptions issued so far may be right again
            while self.events and self.events[0][0] == self.now:
                _, kind, index, attempt = heapq.heappop(self.events)
                if kind == REQUEUE:
                    self.requested.discard(index)
                    for queue in self.groups[index]:
                        queue.unpark()
                    continue
                job = by_index[index]
                changed = True
                if kind == ARRIVAL:
                    job.queue.push(job)
                elif job.admitted is not None and job.admitted.attempt == attempt:
                    self._end(job.admitted, completed=True)
            if changed:
                self.issued.clear()
            for _ in range(MAX_CYCLES_PER_INSTANT):
                if not self._cycle():
                    break
            else:
                self.cut_short = True
        waiting = tuple(sorted(job.index for job in known if job.pending))
        return Outcome(tuple(self.runs), waiting, tuple(unqueued), self.cut_short, self.loops)


def simulate(queues: Queues, jobs: Sequence[TraceJob]) -> Outcome:
    """Every job's admissions under `queues`, deterministic; an Outcome with `reasons` and nothing
    simulated when the queues or the jobs use what the simulator does not model."""
    reasons = unmodelled(queues, jobs)
    if reasons:
        return Outcome((), (), (), reasons=reasons)
    return Simulator(queues).run(jobs)
