"""A job's life as Kueue's books saw it, and the figures of a Workload-level run. Pure functions.

The Workload-level tier (workloads.py) records, for every trace job, when it was submitted and
each attempt: from the moment Kueue admitted it (its quota is held) to the moment it finished or
was evicted (the quota given back; an evicted job starts again from nothing, as a Job without
checkpoints does). Everything below is arithmetic on those records:
- job completion time (JCT): finish − submission;
- wait: the time a job held no quota before it finished, every re-wait after an eviction included;
- wasted GPU-time: GPUs × the run time of every evicted attempt (work thrown away);
- utilization: GPUs (millicores) × run time of the attempts that finished ÷ capacity × makespan:
  an admitted Workload is a whole gang, so this is the utilization of whole gangs;
- finish-time fairness (Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling",
  NSDI 2020): rho = a job's JCT here ÷ its JCT had its team run alone on its share of the pools,
  here a first-in-first-out queue of the team's own jobs on that share (`isolated_jct`); 1 is what
  the share promises, above 1 is worse. Themis judges a policy by its worst rho; reported per team
  (mean over its jobs) and as the worst team's;
- share kept: the tier-B definition (metrics.share_kept) on samples of Kueue's own accounting:
  what a team's admitted Workloads hold, while it has a Workload waiting.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from components.forecast.simulate import REQUEUE_BATCH_S

from .metrics import CPU, GPU, Sample, dominant_size, fairness, lower_bound, percentile, share_kept
from .trace import TraceJob

# A Workload counts as waiting for share kept and fairness after this long: Kueue retries the
# Workloads it set aside one requeue batch after quota frees, so a wait shorter than that is the
# controller's cadence, not the policy.
WAIT_GRACE_S = REQUEUE_BATCH_S
SAMPLE_S = 0.25  # the grid share kept and Jain are sampled on
STOPPED = "stopped"  # an attempt cut short by the run's end: neither finished nor thrown away by Kueue


@dataclass(frozen=True)
class Attempt:
    start_s: float  # admitted: quota held from here
    end_s: float
    finished: bool  # False: evicted, its run thrown away
    reason: str = ""  # why it was evicted (Kueue's Preempted reason), when it was


@dataclass(frozen=True)
class History:
    job: TraceJob
    submitted_s: float
    attempts: tuple[Attempt, ...] = ()

    @property
    def finished_run(self) -> Attempt | None:
        """The attempt that ran to its end, if one did."""
        return next((a for a in self.attempts if a.finished), None)

    @property
    def finished_s(self) -> float | None:
        run = self.finished_run
        return run.end_s if run else None


@dataclass(frozen=True)
class LaneOutcome:
    """One run (a seed at a load) of one set-up."""

    setup: str
    seed: int
    load: float
    jobs: int
    unfinished: int
    makespan_s: float | None  # None: a job never finished
    lower_bound_s: float
    gpu_utilization: float
    cpu_utilization: float
    wasted_gpu_s: float
    preemptions: int
    jct_s: Mapping[str, tuple[float, float]]  # team -> (p50, p95)
    wait_s: Mapping[str, tuple[float, float]]  # team -> (p50, p95)
    rho: Mapping[str, float]  # team -> mean finish-time fairness of its jobs
    worst_rho: float
    share_kept: Mapping[str, float | None]
    jain: float | None
    preemption_causes: Mapping[str, int] = field(default_factory=dict)


def isolated_jct(jobs: Sequence[TraceJob], capacity: Mapping[str, float]) -> dict[str, float]:
    """Each job's completion time in a first-in-first-out queue of these jobs alone on `capacity`
    (GPUs and millicores): a job starts when it fits and not before the one ahead of it started.
    A job larger than the capacity runs once it is alone (its team is promised less than it asks,
    so only borrowing could run it sooner)."""
    free = dict(capacity)
    running: list[tuple[float, int, float, float]] = []  # (end, order, GPUs, millicores)
    out: dict[str, float] = {}
    now = 0.0

    def give_back() -> float:
        end, _, gpus, cpu = heapq.heappop(running)
        free[GPU] += gpus
        free[CPU] += cpu
        return end

    for order, job in enumerate(sorted(jobs, key=lambda j: (j.arrival_s, j.name))):
        gpus, cpu = float(job.gpus), float(job.pods * job.pod.cpu_m)
        now = max(now, job.arrival_s)
        while running and running[0][0] <= now:
            give_back()
        while running and (gpus > free[GPU] + 1e-9 or cpu > free[CPU] + 1e-9):
            now = max(now, give_back())
        free[GPU] -= gpus
        free[CPU] -= cpu
        heapq.heappush(running, (now + job.duration_s, order, gpus, cpu))
        out[job.name] = now + job.duration_s - job.arrival_s
    return out


def samples(
    histories: Sequence[History], capacity: Mapping[str, float], end: float, step: float = SAMPLE_S
) -> list[Sample]:
    """What each team held in Kueue's books (its admitted Workloads' requests) and what waited, on
    a grid of `step` seconds from 0 to `end`."""
    out = []
    steps = int(end / step) + 1
    for i in range(steps):
        t = i * step
        used: dict[str, dict[str, float]] = {}
        waiting: dict[str, list[tuple[float, float]]] = {}
        for h in histories:
            if h.submitted_s > t or (h.finished_s is not None and h.finished_s <= t):
                continue
            holding = next((a for a in h.attempts if a.start_s <= t < a.end_s), None)
            if holding is not None:
                held = used.setdefault(h.job.team, {})
                held[GPU] = held.get(GPU, 0.0) + h.job.gpus
                held[CPU] = held.get(CPU, 0.0) + h.job.pods * h.job.pod.cpu_m
                continue
            since = max([h.submitted_s] + [a.end_s for a in h.attempts if a.end_s <= t])
            waiting.setdefault(h.job.team, []).append((dominant_size(h.job, capacity), t - since))
        out.append(Sample(t, used, {k: tuple(v) for k, v in waiting.items()}, 0))
    return out


def _p50_p95(values: Sequence[float]) -> tuple[float, float]:
    return (round(percentile(values, 50), 2), round(percentile(values, 95), 2)) if values else (0.0, 0.0)


def lane_outcome(
    setup: str,
    seed: int,
    load: float,
    histories: Sequence[History],
    capacity: Mapping[str, float],
    shares: Mapping[str, float],
    run_end_s: float,
) -> LaneOutcome:
    """Every figure of one lane; `shares` are fractions, `run_end_s` when the lane was stopped."""
    jobs = [h.job for h in histories]
    finished = [h.finished_s for h in histories if h.finished_s is not None]
    unfinished = len(histories) - len(finished)
    end = max(finished) if finished and not unfinished else run_end_s
    work = {GPU: 0.0, CPU: 0.0}
    wasted = 0.0
    causes: dict[str, int] = {}
    for h in histories:
        for a in h.attempts:
            if a.finished or a.reason == STOPPED:
                work[GPU] += h.job.gpus * (a.end_s - a.start_s)
                work[CPU] += h.job.pods * h.job.pod.cpu_m * (a.end_s - a.start_s)
            else:
                wasted += h.job.gpus * (a.end_s - a.start_s)
                causes[a.reason or "unknown"] = causes.get(a.reason or "unknown", 0) + 1
    isolated: dict[str, float] = {}
    for team, share in shares.items():
        isolated.update(isolated_jct([j for j in jobs if j.team == team], {d: c * share for d, c in capacity.items()}))
    jct: dict[str, list[float]] = {}
    wait: dict[str, list[float]] = {}
    rho: dict[str, list[float]] = {}
    for h in histories:
        done = h.finished_s if h.finished_s is not None else run_end_s
        held = sum(min(a.end_s, done) - a.start_s for a in h.attempts)
        jct.setdefault(h.job.team, []).append(done - h.submitted_s)
        wait.setdefault(h.job.team, []).append(max(0.0, done - h.submitted_s - held))
        rho.setdefault(h.job.team, []).append((done - h.submitted_s) / max(isolated[h.job.name], 0.1))
    grid = samples(histories, capacity, end)
    team_rho = {t: round(sum(v) / len(v), 3) for t, v in rho.items()}
    return LaneOutcome(
        setup=setup,
        seed=seed,
        load=load,
        jobs=len(histories),
        unfinished=unfinished,
        makespan_s=None if unfinished else round(end, 1),
        lower_bound_s=round(lower_bound(jobs, capacity), 1),
        gpu_utilization=round(work[GPU] / (capacity[GPU] * end), 3) if end > 0 else 0.0,
        cpu_utilization=round(work[CPU] / (capacity[CPU] * end), 3) if end > 0 else 0.0,
        wasted_gpu_s=round(wasted, 1),
        preemptions=sum(causes.values()),
        jct_s={t: _p50_p95(v) for t, v in jct.items()},
        wait_s={t: _p50_p95(v) for t, v in wait.items()},
        rho=team_rho,
        worst_rho=max(team_rho.values(), default=1.0),
        share_kept={
            t: None if v is None else round(v, 3)
            for t, v in share_kept(grid, shares, capacity, end, WAIT_GRACE_S).items()
        },
        jain=None if (f := fairness(grid, shares, capacity, end, WAIT_GRACE_S)) is None else round(f, 3),
        preemption_causes=causes,
    )
