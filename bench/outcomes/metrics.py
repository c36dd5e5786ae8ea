"""What a set-up delivered, from what the cluster showed while the trace ran. Pure functions.

The replay (replay.py) turns the cluster's objects into `Sample`s (every pod's place and phase,
summed per team) and `JobRecord`s (submitted, all pods running, finished); everything below is
arithmetic on those, so the unit tests give a hand-made history with a known answer.

Definitions (after Kueue's test/performance/scheduler/checker and the Philly trace's analysis notebook,
msr-fiddle/philly-traces "Philly Trace Analysis.ipynb"):
- utilization: used ÷ available, time-weighted over the run (Kueue's perf-test "CQ usage" shape),
  where a gang's pods count only while all of them run;
- makespan: when the last job finished; its lower bound is the largest of the work on each
  dimension ÷ its capacity, the longest job, and the latest arrival plus its own run time;
- queueing delay: first time all of a job's pods run − submission (Philly's definition);
- share kept: while a team has work waiting (a job waiting WAIT_GRACE_S or more), what it holds ÷ what it is owed, where it is owed its
  promised share, capped by what it holds plus its waiting jobs that fit in the unused part of the
  promise (a job larger than the promise can only run by borrowing, which nobody promised);
- fairness: Jain's index (Σx)² / (n·Σx²) over the teams with work waiting, x = dominant share held
  ÷ promised share, time-weighted over the moments when at least two teams wait.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .trace import TraceJob

GPU, CPU = "gpu", "cpu"  # the two dimensions: GPUs, and millicores of every user pool (a GPU node's too)
# A job counts as waiting for the share and fairness figures once it has waited this long (since
# submission, or since it lost its pods to a preemption): about the p95 of admission to all pods
# running measured here, the controllers' part of any start, which is not the queue's doing.
WAIT_GRACE_S = 5.0


def waiting_sizes(sample: Sample, team: str, grace: float = WAIT_GRACE_S) -> list[float]:
    """Dominant sizes of the team's jobs that have waited at least `grace` seconds."""
    return [size for size, waited in sample.waiting.get(team, ()) if waited >= grace]


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the trace started
    used: Mapping[str, Mapping[str, float]]  # team -> dimension -> held by its running pods
    waiting: Mapping[
        str, tuple[tuple[float, float], ...]
    ]  # team -> (dominant size, seconds waited) of each job not all running
    unschedulable_pods: int  # pods of admitted (or, without Kueue, created) jobs that found no node
    partial_gangs: frozenset[str] = frozenset()  # jobs with pods running while others found no node
    idle_held: Mapping[str, float] = field(default_factory=dict)  # dimension -> held by gangs not all running


@dataclass(frozen=True)
class JobRecord:
    name: str
    team: str
    submitted_s: float
    started_s: float | None  # first time all its pods ran
    finished_s: float | None
    admitted_s: float | None = None  # first time Kueue admitted it (None without Kueue)
    released_s: float | None = None  # Kueue marked it Finished: its quota is free again


@dataclass(frozen=True)
class Outcome:
    setup: str
    gpu_utilization: float
    cpu_utilization: float
    makespan_s: float | None  # None: some job never finished
    lower_bound_s: float
    delay_s: Mapping[str, tuple[float, float]]  # team -> (p50, p95); a job never started counts to the run's end
    share_kept: Mapping[str, float | None]  # None: the team never waited
    fairness: float | None  # None: never two teams waiting at once
    unschedulable_pod_seconds: float
    partial_gangs: int
    preemptions: int
    unfinished: int
    preemption_causes: Mapping[str, int] = field(default_factory=dict)
    # admission to all pods running, p50/p95 (s): the controllers' part of the wait, not the queue's
    start_latency_s: tuple[float, float] | None = None
    timeline: Sequence[tuple[float, float, float]] = field(default=(), repr=False)  # (t, gpu util, cpu util)


def dominant_size(job: TraceJob, capacity: Mapping[str, float]) -> float:
    """The job's largest fraction of a dimension."""
    return max(job.gpus / capacity[GPU], job.pods * job.pod.cpu_m / capacity[CPU])


def dominant_share(used: Mapping[str, float], capacity: Mapping[str, float]) -> float:
    return max((used.get(d, 0.0) / c for d, c in capacity.items() if c), default=0.0)


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one has everything."""
    total, squares = sum(values), sum(v * v for v in values)
    return 1.0 if squares == 0 else total * total / (len(values) * squares)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _spans(samples: Sequence[Sample], end: float) -> list[tuple[Sample, float]]:
    """Each sample with how long it held: until the next sample, the last one until `end`."""
    spans = []
    for i, s in enumerate(samples):
        until = samples[i + 1].t if i + 1 < len(samples) else end
        spans.append((s, max(0.0, min(until, end) - s.t)))
    return spans


def working(sample: Sample, dimension: str) -> float:
    """What the running pods hold, less what gangs hold while some of their pods are not running
    (those pods wait for their peers and do no work)."""
    return sum(u.get(dimension, 0.0) for u in sample.used.values()) - sample.idle_held.get(dimension, 0.0)


def utilization(samples: Sequence[Sample], capacity: Mapping[str, float], dimension: str, end: float) -> float:
    held = sum(working(s, dimension) * dt for s, dt in _spans(samples, end))
    return held / (capacity[dimension] * end) if end > 0 else 0.0


def lower_bound(jobs: Sequence[TraceJob], capacity: Mapping[str, float]) -> float:
    gpu_work = sum(j.gpus * j.duration_s for j in jobs)
    cpu_work = sum(j.pods * j.pod.cpu_m * j.duration_s for j in jobs)
    return max(
        gpu_work / capacity[GPU],
        cpu_work / capacity[CPU],
        max(j.duration_s for j in jobs),
        max(j.arrival_s + j.duration_s for j in jobs),
    )


def owed(share: float, held: float, waiting: Sequence[float]) -> float:
    """What a team is owed: its share, capped by what it holds plus the waiting jobs that fit in
    the unused part of its share (smallest first)."""
    room, claim = max(0.0, share - held), 0.0
    for size in sorted(waiting):
        if claim + size > room + 1e-9:
            break
        claim += size
    return min(share, held + claim)


def share_kept(
    samples: Sequence[Sample],
    shares: Mapping[str, float],
    capacity: Mapping[str, float],
    end: float,
    grace: float = WAIT_GRACE_S,
) -> dict[str, float | None]:
    kept: dict[str, float | None] = {}
    for team, share in shares.items():
        weighted = total = 0.0
        for s, dt in _spans(samples, end):
            waiting = waiting_sizes(s, team, grace)
            if not waiting or dt == 0:
                continue
            held = dominant_share(s.used.get(team, {}), capacity)
            due = owed(share, held, waiting)
            weighted += (1.0 if held >= due - 1e-9 else held / due) * dt
            total += dt
        kept[team] = weighted / total if total else None
    return kept


def fairness(
    samples: Sequence[Sample],
    shares: Mapping[str, float],
    capacity: Mapping[str, float],
    end: float,
    grace: float = WAIT_GRACE_S,
) -> float | None:
    weighted = total = 0.0
    for s, dt in _spans(samples, end):
        contending = [t for t in shares if waiting_sizes(s, t, grace)]
        if len(contending) < 2 or dt == 0:
            continue
        weighted += jain([dominant_share(s.used.get(t, {}), capacity) / shares[t] for t in contending]) * dt
        total += dt
    return weighted / total if total else None


def outcome(
    setup: str,
    jobs: Sequence[TraceJob],
    records: Sequence[JobRecord],
    samples: Sequence[Sample],
    capacity: Mapping[str, float],
    shares: Mapping[str, float],
    preemptions: Mapping[str, int],
) -> Outcome:
    """Every figure of one set-up's run; `shares` are fractions (0.5 for 50 %)."""
    finished = [r.finished_s for r in records if r.finished_s is not None]
    unfinished = len(records) - len(finished)
    run_end = max([s.t for s in samples] + finished + [0.0])
    end = max(finished) if finished and not unfinished else run_end
    delays: dict[str, tuple[float, float]] = {}
    for team in shares:
        waits = [
            (r.started_s if r.started_s is not None else run_end) - r.submitted_s for r in records if r.team == team
        ]
        if waits:
            delays[team] = (round(percentile(waits, 50), 1), round(percentile(waits, 95), 1))
    latencies = [
        r.started_s - r.admitted_s
        for r in records
        if r.started_s is not None and r.admitted_s is not None and r.started_s >= r.admitted_s
    ]
    spans = _spans(samples, end)
    partial = set().union(*(s.partial_gangs for s in samples)) if samples else set()
    timeline = tuple(
        (round(s.t, 1), round(working(s, GPU) / capacity[GPU], 3), round(working(s, CPU) / capacity[CPU], 3))
        for s in samples
    )
    return Outcome(
        setup=setup,
        gpu_utilization=round(utilization(samples, capacity, GPU, end), 3),
        cpu_utilization=round(utilization(samples, capacity, CPU, end), 3),
        makespan_s=None if unfinished else round(end, 1),
        lower_bound_s=round(lower_bound(jobs, capacity), 1),
        delay_s=delays,
        share_kept={
            t: None if v is None else round(v, 3) for t, v in share_kept(samples, shares, capacity, end).items()
        },
        fairness=None if (f := fairness(samples, shares, capacity, end)) is None else round(f, 3),
        unschedulable_pod_seconds=round(sum(s.unschedulable_pods * dt for s, dt in spans), 1),
        partial_gangs=len(partial),
        preemptions=sum(preemptions.values()),
        unfinished=unfinished,
        preemption_causes=dict(preemptions),
        start_latency_s=(round(percentile(latencies, 50), 1), round(percentile(latencies, 95), 1))
        if latencies
        else None,
        timeline=timeline,
    )


def missed_targets(outcomes: Sequence[Outcome], ours: str) -> list[str]:
    """The pod tier's targets for the program's set-up, each one missed in words: what only pods on
    nodes show (no admitted pod without a node, no gang partly started, every job finished). The
    policy's targets (makespan, fairness, share kept) are the Workload-level sweep's (sweep.py),
    which has the seeds to tell a difference from noise."""
    mine = {o.setup: o for o in outcomes}[ours]
    missed: list[str] = []
    if mine.unschedulable_pod_seconds > 0:
        missed.append(f"{ours}: {mine.unschedulable_pod_seconds} admitted-but-unschedulable pod-seconds (target 0)")
    if mine.partial_gangs:
        missed.append(f"{ours}: {mine.partial_gangs} partially started gang(s) (target 0)")
    if mine.makespan_s is None:
        missed.append(f"{ours}: {mine.unfinished} job(s) never finished")
    return missed
