"""A synthetic job trace from a seed and published statistics: who submits what, when, for how long.

Pure: the same spec and seed give the same jobs, and the benchmark, its tests and its report read
the same list. The figures below come from ../shared/reference/benchmark.md §2:
- GPUs per job: Gavel's Philly-derived split (scheduler/utils.py `_generate_scale_factor`),
  1 GPU 70 %, 2 GPUs 10 %, 4 GPUs 15 %, 8 GPUs 5 %;
- run time: a log-normal through Philly's run-time median 1,186 s and p90 12,860 s (Alibaba's
  `philly_runtime.csv`), compressed from hours to seconds. No floor: short jobs stay short. The
  tail is capped at a quantile (the 95th by default), so at most that tail's jobs are clipped and
  one job cannot outlast the rest of the run by hours; `describe` reports the clipped fraction;
- arrivals: a Poisson process per team (exponential gaps) over the team's active window, the rates
  scaled together to an offered load (`at_load`): the GPU work the trace brings per second ÷ the
  GPUs, so below 1 the pools can keep up and above 1 they cannot.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from statistics import NormalDist

# (GPUs, probability), from Gavel's Philly split (benchmark.md §2.1).
PHILLY_GPU_SPLIT: tuple[tuple[int, float], ...] = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
# Philly's run time (s): median and p90 (benchmark.md §2.1, philly_runtime.csv).
PHILLY_MEDIAN_S, PHILLY_P90_S = 1186.0, 12860.0
_Z90 = 1.2815515655446004  # the standard normal's 90th percentile


@dataclass(frozen=True)
class Pod:
    """What each of a job's pods asks for: millicores, MiB, GPUs."""

    cpu_m: int
    memory_mib: int
    gpus: int = 0


@dataclass(frozen=True)
class TraceJob:
    name: str
    team: str
    arrival_s: float
    duration_s: float
    pods: int  # all start together or not at all (a gang when more than one)
    pod: Pod

    @property
    def gpus(self) -> int:
        return self.pods * self.pod.gpus

    @property
    def is_gpu(self) -> bool:
        return self.pod.gpus > 0


@dataclass(frozen=True)
class TeamLoad:
    """A team's promise (share, %) and its demand: Poisson arrivals at `rate_per_s` in [start_s, end_s)."""

    name: str
    share: int
    start_s: float
    end_s: float
    rate_per_s: float
    gpu_fraction: float  # of its jobs; the rest are CPU jobs


@dataclass(frozen=True)
class TraceSpec:
    teams: tuple[TeamLoad, ...]
    gpu_pod: Pod  # one GPU each: a job of N GPUs is a gang of N pods
    cpu_pod: Pod
    cpu_pods_max: int  # a CPU job has 1..cpu_pods_max pods
    seconds_per_hour: float  # compression of Philly's run times
    cap_quantile: float = 0.95  # run times above this quantile are cut to it


_SIGMA = math.log(PHILLY_P90_S / PHILLY_MEDIAN_S) / _Z90  # the log-normal's sigma (1.86)


def _compressed(seconds: float, spec: TraceSpec) -> float:
    return seconds / 3600.0 * spec.seconds_per_hour


def cap_s(spec: TraceSpec) -> float:
    """The longest run time: Philly's run time at the cap quantile, compressed."""
    return _compressed(PHILLY_MEDIAN_S * math.exp(_SIGMA * NormalDist().inv_cdf(spec.cap_quantile)), spec)


def philly_duration_s(u: float, spec: TraceSpec) -> float:
    """The run time at quantile u (0 < u < 1) of Philly's log-normal, compressed, at most the cap;
    0.1 s at the least (the resolution every time here is kept at)."""
    seconds = _compressed(PHILLY_MEDIAN_S * math.exp(_SIGMA * NormalDist().inv_cdf(u)), spec)
    return max(0.1, round(min(cap_s(spec), seconds), 1))


def mean_duration_s(spec: TraceSpec) -> float:
    """The expected run time of the capped log-normal: E[D; D < cap] + cap * P(D >= cap), where
    E[D; D < c] = exp(mu + sigma^2/2) * Phi((ln c - mu - sigma^2) / sigma) (compressed seconds)."""
    mu, cap = math.log(_compressed(PHILLY_MEDIAN_S, spec)), cap_s(spec)
    below = math.exp(mu + _SIGMA ** 2 / 2) * NormalDist().cdf((math.log(cap) - mu - _SIGMA ** 2) / _SIGMA)
    return below + cap * (1 - spec.cap_quantile)


def mean_gpus() -> float:
    """GPUs of a GPU job on average (1.9 in Philly's split)."""
    return sum(g * p for g, p in PHILLY_GPU_SPLIT)


def offered_load(spec: TraceSpec, gpus: float) -> float:
    """The GPU work the teams bring per second over the trace's span, expected, ÷ `gpus`."""
    span = max(t.end_s for t in spec.teams) - min(t.start_s for t in spec.teams)
    jobs = sum(t.rate_per_s * t.gpu_fraction * (t.end_s - t.start_s) for t in spec.teams)
    return jobs * mean_gpus() * mean_duration_s(spec) / (span * gpus)


def at_load(spec: TraceSpec, load: float, gpus: float) -> TraceSpec:
    """The same teams, windows and mix, every rate scaled by one factor to offer `load`."""
    factor = load / offered_load(spec, gpus)
    return replace(spec, teams=tuple(replace(t, rate_per_s=t.rate_per_s * factor) for t in spec.teams))


def gpus_for(u: float) -> int:
    """GPUs of a job at quantile u of the Philly split."""
    total = 0.0
    for gpus, p in PHILLY_GPU_SPLIT:
        total += p
        if u < total:
            return gpus
    return PHILLY_GPU_SPLIT[-1][0]


def generate(spec: TraceSpec, seed: int) -> list[TraceJob]:
    """Every team's jobs, sorted by arrival; names are `<team>-<index>`."""
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    for team in spec.teams:
        t, index = team.start_s, 0
        while True:
            t += rng.expovariate(team.rate_per_s)
            if t >= team.end_s:
                break
            gpu = rng.random() < team.gpu_fraction
            duration = philly_duration_s(rng.random(), spec)
            if gpu:
                pods, pod = gpus_for(rng.random()), spec.gpu_pod
            else:
                pods, pod = rng.randint(1, spec.cpu_pods_max), spec.cpu_pod
            jobs.append(TraceJob(f"{team.name}-{index:03d}", team.name, round(t, 2), duration, pods, pod))
            index += 1
    return sorted(jobs, key=lambda j: (j.arrival_s, j.name))


def describe(jobs: list[TraceJob], spec: TraceSpec | None = None) -> dict[str, object]:
    """Counts a reader checks against the spec: jobs, pods, gangs and work per team; with the spec,
    the cap and the fraction of jobs cut to it."""
    teams: dict[str, dict[str, float]] = {}
    for job in jobs:
        row = teams.setdefault(job.team, {"jobs": 0, "gpu_jobs": 0, "gangs": 0, "gpu_seconds": 0.0, "cpu_seconds": 0.0})
        row["jobs"] += 1
        row["gpu_jobs"] += job.is_gpu
        row["gangs"] += job.pods > 1
        row["gpu_seconds"] += job.gpus * job.duration_s
        row["cpu_seconds"] += job.pods * job.pod.cpu_m / 1000 * job.duration_s
    described: dict[str, object] = {
        "jobs": len(jobs), "pods": sum(j.pods for j in jobs), "gangs": sum(j.pods > 1 for j in jobs),
        "teams": {k: {m: round(v, 1) for m, v in row.items()} for k, row in teams.items()}}
    if spec is not None and jobs:
        cap = round(cap_s(spec), 1)
        described["cap_s"] = cap
        described["clipped"] = round(sum(j.duration_s >= cap for j in jobs) / len(jobs), 3)
        described["median_s"] = sorted(j.duration_s for j in jobs)[len(jobs) // 2]
    return described
