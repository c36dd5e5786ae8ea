"""The Workload-level sweep: every Kueue set-up × seed × offered load, with intervals and targets.

Each set-up gets one control plane (the e2e tier's, Kueue only matters here) with one lane per
(seed, load) (lanes.py); the lanes of one load start together and each load starts `STAGGER_S`
after the one before, so the control plane carries about one load's Workloads at a time. Figures
per lane come from attempts.py; per set-up and load they are the mean over seeds with a t
interval, and comparisons are paired by seed (stats.py).

The trace is the pod tier's (scenario.TRACE: the same three teams, windows and mix), stretched to
`WINDOW_S` and compressed harder (`SECONDS_PER_HOUR`): with no pods, Kueue's own cadence (its 1 s
inadmissible requeue batch) is the only latency, so jobs can be shorter than in the pod tier.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from components.config.stack import StackConfig
from testbed.binaries import Binaries
from testbed.cluster import Api
from testbed.forward import Forwarder
from testbed.stack_cluster import StackCluster

from . import scenario
from .attempts import History, LaneOutcome, lane_outcome
from .lanes import lane_name, lanes_objects
from .metrics import lower_bound
from .replay import with_kueue
from .setups import NO_KUEUE, Setup
from .stats import Interval, ahead, interval, not_behind, paired
from .trace import TraceJob, TraceSpec, at_load, generate
from .workloads import Planned, Runner

SEEDS = (25, 26, 27, 28, 29)
LOADS = (0.7, 0.9, 1.1)  # offered GPU load: below, near and above the pools' capacity
WINDOW_S = 90.0  # the teams' arrival windows, stretched from the pod tier's 50 s
SECONDS_PER_HOUR = 10.0  # Philly's median 1,186 s becomes 3.3 s; the p95 cap 70 s
STAGGER_S = 30.0
DEADLINE_FACTOR = 2.0  # a lane not done by this many lower bounds is stopped with its jobs unfinished
SERVICE_CIDR = "127.102.0.0/16"  # its own, so a sweep can run beside the e2e tier
SHARE_KEPT_MIN = 0.90


def trace_spec(load: float, gpus: float, window_s: float = WINDOW_S) -> TraceSpec:
    stretch = window_s / max(t.end_s for t in scenario.TRACE.teams)
    teams = tuple(
        replace(t, start_s=t.start_s * stretch, end_s=t.end_s * stretch, rate_per_s=t.rate_per_s / stretch)
        for t in scenario.TRACE.teams
    )
    return at_load(replace(scenario.TRACE, teams=teams, seconds_per_hour=SECONDS_PER_HOUR), load, gpus)


def traces(seeds: Sequence[int], loads: Sequence[float], gpus: float) -> dict[str, tuple[int, float, list[TraceJob]]]:
    """lane -> (seed, load, jobs)."""
    return {lane_name(s, load): (s, load, generate(trace_spec(load, gpus), s)) for load in loads for s in seeds}


def plan(lanes: Mapping[str, tuple[int, float, list[TraceJob]]], loads: Sequence[float]) -> list[Planned]:
    offsets = {load: i * STAGGER_S for i, load in enumerate(loads)}
    return sorted(
        (Planned(offsets[load], lane, j) for lane, (_, load, jobs) in lanes.items() for j in jobs), key=lambda p: p.at_s
    )


@dataclass(frozen=True)
class SetupRun:
    setup: str
    up_seconds: float
    run_seconds: float
    lanes: list[LaneOutcome]
    errors: list[str]
    histories: dict[str, list[History]]  # lane -> every job's submission and attempts, for a diagnosis
    started_at: float  # Unix time of the run's start, to read Kueue's log beside the histories
    offsets: dict[str, float]  # lane -> its start, seconds after the run's


def run_setup(
    setup: Setup,
    config: StackConfig,
    binaries: Binaries,
    workdir: Path,
    forwarder: Forwarder,
    lanes: Mapping[str, tuple[int, float, list[TraceJob]]],
    loads: Sequence[float],
    capacity: Mapping[str, float],
    shares: Mapping[str, float],
    log_level: int | None = None,
) -> SetupRun:
    """One set-up's control plane, every lane on it, each lane's figures; `log_level` sets Kueue's
    (the chart's controllerManager.manager.logLevel, 2 by default; 6 logs every scheduling decision)."""
    if setup.helm_values is None:
        raise ValueError(f"{setup.name}: the Workload-level tier needs Kueue")
    if log_level is not None:
        values = dict(setup.helm_values)
        manager = {
            **values["controllerManager"],
            "manager": {**values["controllerManager"].get("manager", {}), "logLevel": log_level},
        }
        setup = replace(setup, helm_values={**values, "controllerManager": manager})
    started = time.monotonic()
    sc = StackCluster(
        f"outcomes-wl-{setup.name}", config, binaries, workdir / setup.name, forwarder, service_cidr=SERVICE_CIDR
    )
    try:
        sc.up(program=False)
        with_kueue(sc, setup.name, setup.helm_values, lanes_objects(setup.objects, list(lanes)), started, timeout_s=180)
        up_seconds = time.monotonic() - started
        planned = plan(lanes, loads)
        deadline = max(p.offset_s for p in planned) + DEADLINE_FACTOR * max(
            lower_bound(jobs, capacity) for _, _, jobs in lanes.values()
        )
        runner = Runner(lambda: Api(sc.kubectl.kubeconfig), setup, planned)
        began = time.monotonic()
        histories = runner.run(deadline)
        run_seconds = time.monotonic() - began
    finally:
        sc.down()
    by_lane: dict[str, list[History]] = {}
    for key, history in histories.items():
        by_lane.setdefault(key.split("/")[0].removesuffix(f"-{history.job.team}"), []).append(history)
    offsets = {p.lane: p.offset_s for p in planned}
    outcomes = [
        lane_outcome(setup.name, seed, load, by_lane.get(lane, []), capacity, shares, runner.ended - offsets[lane])
        for lane, (seed, load, _) in lanes.items()
    ]
    return SetupRun(
        setup.name,
        round(up_seconds, 1),
        round(run_seconds, 1),
        outcomes,
        runner.errors[:20],
        by_lane,
        runner.t0_wall,
        offsets,
    )


# --- the summary and the targets ---------------------------------------------------------------

FIGURES = (
    "makespan_s",
    "gpu_utilization",
    "cpu_utilization",
    "wasted_gpu_s",
    "preemptions",
    "worst_rho",
    "jain",
    "min_share_kept",
)


def figure(o: LaneOutcome, name: str) -> float:
    if name == "makespan_s":
        return o.makespan_s if o.makespan_s is not None else float("inf")
    if name == "min_share_kept":
        kept = [v for v in o.share_kept.values() if v is not None]
        return min(kept) if kept else 1.0
    if name == "jain":
        return o.jain if o.jain is not None else 1.0
    return float(getattr(o, name))


def by_setup_load(lanes: Sequence[LaneOutcome]) -> dict[tuple[str, float], list[LaneOutcome]]:
    """(set-up, load) -> its lanes in seed order, so two set-ups' lists pair by seed."""
    out: dict[tuple[str, float], list[LaneOutcome]] = {}
    for o in sorted(lanes, key=lambda o: (o.setup, o.load, o.seed)):
        out.setdefault((o.setup, o.load), []).append(o)
    return out


def summary(lanes: Sequence[LaneOutcome]) -> dict[tuple[str, float], dict[str, Interval]]:
    return {
        key: {
            f: interval([figure(o, f) for o in group])
            for f in FIGURES
            if all(figure(o, f) != float("inf") for o in group)
        }
        for key, group in by_setup_load(lanes).items()
    }


def missed_targets(lanes: Sequence[LaneOutcome], ours: str, single: str) -> list[str]:
    """The issue's targets for the Workload-level tier, each one missed in words:
    - at every load, the program's makespan not behind the single queue's (paired interval);
    - at every load, its worst team's finish-time fairness ahead of every other set-up's (the
      hand-written ones: the program's own variants are candidates, not rivals);
    - every team's share kept at SHARE_KEPT_MIN or more (the interval's mean of the lowest team)."""
    groups = by_setup_load(lanes)
    loads = sorted({load for (_, load) in groups})
    others = sorted(s for s in {s for (s, _) in groups} - {ours} if not s.startswith(f"{ours}+"))
    missed = []
    for load in loads:
        mine = groups.get((ours, load))
        if not mine:
            missed.append(f"{ours} did not run at load {load}")
            continue
        if any(o.unfinished for o in mine):
            missed.append(f"{ours} at load {load}: {sum(o.unfinished for o in mine)} job(s) never finished")
        single_lanes = groups.get((single, load))
        if (
            single_lanes
            and not any(o.unfinished for o in mine + single_lanes)
            and not not_behind([figure(o, "makespan_s") for o in mine], [figure(o, "makespan_s") for o in single_lanes])
        ):
            missed.append(f"{ours} at load {load}: makespan behind {single}'s beyond the interval")
        for other in others:
            theirs = groups.get((other, load))
            if theirs and not ahead([figure(o, "worst_rho") for o in mine], [figure(o, "worst_rho") for o in theirs]):
                missed.append(f"{ours} at load {load}: finish-time fairness not ahead of {other}'s beyond the interval")
        kept = interval([figure(o, "min_share_kept") for o in mine])
        if kept.mean < SHARE_KEPT_MIN:
            missed.append(
                f"{ours} at load {load}: a team kept {kept.mean:.0%} of its share while it waited "
                f"(target {SHARE_KEPT_MIN:.0%})"
            )
    return missed


def table(lanes: Sequence[LaneOutcome]) -> str:
    """Markdown: per set-up and load, each figure's mean [95 % interval] over the seeds."""
    head = [
        "set-up",
        "load",
        "seeds",
        "makespan (s)",
        "GPU util",
        "wasted GPU-s",
        "preemptions",
        "worst team's FTF rho",
        "Jain",
        "lowest share kept",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (setup, load), figures in sorted(summary(lanes).items(), key=lambda kv: (kv[0][1], kv[0][0])):

        def cell(name: str, digits: int = 1) -> str:
            return figures[name].text(digits) if name in figures else "n/a (unfinished)"

        n = next(iter(figures.values())).n if figures else 0
        lines.append(
            f"| {setup} | {load} | {n} | {cell('makespan_s')} | {cell('gpu_utilization', 2)} | "
            f"{cell('wasted_gpu_s', 0)} | {cell('preemptions', 1)} | {cell('worst_rho', 2)} | {cell('jain', 3)} | "
            f"{cell('min_share_kept', 2)} |"
        )
    return "\n".join(lines)


PAIRED = (
    ("makespan_s", "makespan (s)", 1),
    ("worst_rho", "worst team's rho", 2),
    ("wasted_gpu_s", "wasted GPU-s", 0),
    ("min_share_kept", "lowest share kept", 2),
)


def comparisons(lanes: Sequence[LaneOutcome], against: str) -> str:
    """Markdown: every other set-up minus `against`, per load, paired by seed: the mean difference
    and its 95 % interval for each figure; "lower"/"higher" only when the interval excludes 0."""
    groups = by_setup_load(lanes)
    head = ["set-up − " + against, "load", *(label for _, label, _ in PAIRED)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (setup, load), theirs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        base = groups.get((against, load))
        if setup == against or not base or len(base) != len(theirs):
            continue
        cells = []
        for name, _, digits in PAIRED:
            a, b = [figure(o, name) for o in theirs], [figure(o, name) for o in base]
            if float("inf") in a + b:
                cells.append("n/a (unfinished)")
                continue
            diff = paired(a, b)
            verdict = " lower" if diff.high < 0 else " higher" if diff.low > 0 else ""
            cells.append(f"{diff.text(digits)}{verdict}")
        lines.append(f"| {setup} | {load} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def lane_json(o: LaneOutcome) -> dict[str, Any]:
    return asdict(o)


def history_json(h: History) -> dict[str, Any]:
    return {
        "job": h.job.name,
        "team": h.job.team,
        "gpus": h.job.gpus,
        "pods": h.job.pods,
        "run_s": h.job.duration_s,
        "arrival_s": h.job.arrival_s,
        "submitted_s": round(h.submitted_s, 3),
        "attempts": [[round(a.start_s, 3), round(a.end_s, 3), a.finished, a.reason] for a in h.attempts],
    }


def kueue_setups(all_setups: Sequence[Setup]) -> list[Setup]:
    return [s for s in all_setups if s.name != NO_KUEUE]
