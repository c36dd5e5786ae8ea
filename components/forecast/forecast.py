"""Each team's waits, GPU-hours and finished jobs under a trace, for one stack or before → after a
change, and the Markdown the plan prints (docs/forecast.md).

The trace is the stack's own when the project keeps one, `traces/<stack>.csv` (the head's file
serves both sides, so both face the same work); otherwise a synthetic one from a seed:
Philly's GPUs per job and run times (trace.py) at DEFAULT_LOAD of the base's GPUs and vCPUs, each
team submitting in proportion to its share on the base, the side whose quotas were sized for
today's demand, so that cutting a busy team's share shows in its waits.

Definitions, per team:
- wait: submission to the start of the run the job finished under; a preempted job's lost run
  counts as waiting, and its preemptions are counted apart; over every job that finished (the
  simulation runs until nothing more can start), so a late job is not left out;
- GPU-hours: GPUs × hours of the runs that completed (a preempted run's are lost work, not
  counted), up to the trace's horizon;
- jobs finished: runs completed by the horizon;
- horizon: when the trace's work would be done had no job waited, the latest submission +
  run time.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..config.stack import StackConfig
from ..kueue.objects import QueueSet
from ..kueue.values import manager_config
from .queues import Queues, read_queues
from .simulate import Outcome, simulate
from .trace import (
    Pod,
    TeamLoad,
    TraceError,
    TraceJob,
    TraceSpec,
    fitting_split,
    generate,
    load_trace,
    mean_duration_s,
    mean_gpus,
)

TRACES_DIR = "traces"  # in the project root: traces/<stack>.csv
DEFAULT_SEED = 1
DEFAULT_LOAD = 0.8  # offered load: the trace's GPU (and CPU) work ÷ the capacity, over its span
DEFAULT_JOBS = 2_000  # expected jobs of a synthetic trace: its span follows from the rates
CPU_PODS_MAX = 4  # a synthetic CPU job has 1..4 pods, each a quarter of a CPU node
NOT_MODELLED = (
    "Not modelled: the simulator admits on quota alone, so a job starts the moment its quota is free: the time "
    "nodes take to come up, pod placement, topology and node failures are not modelled, and evictions are instant."
)


@dataclass(frozen=True)
class Fidelity:
    """What the e2e tier holds the simulator to, replaying traces through real Kueue on every run in
    which Kueue keeps its cadence (tests/e2e/queues/test_fidelity.py): each team's median and p95
    wait within `median` and `p95` percentile points of the same percentile of Kueue's waits
    (bench/outcomes/fidelity.py rank_error); at least `order` of the waiting jobs' pairs admitted
    in Kueue's order; the simulator's preemptions between `preemptions` times Kueue's; on the
    traces `measured_on` names."""

    median: float
    p95: float
    order: float
    preemptions: tuple[float, float]
    measured_on: str


# The bounds tests/e2e/queues/test_fidelity.py asserts; the figures it measured are in
# docs/forecast.md#fidelity, which a test keeps in step with these.
MEASURED_ERROR = Fidelity(
    median=0.50,
    p95=0.15,
    order=0.85,
    preemptions=(0.5, 3.0),
    measured_on="the outcome benchmark's three teams on 24 GPUs at offered load 2.5, seeds 51-53",
)


@dataclass(frozen=True)
class TeamForecast:
    team: str
    jobs: int  # submitted to its queues on this side
    finished: int  # by the horizon
    median_wait_s: float | None  # None: no job finished
    p95_wait_s: float | None
    gpu_hours: float  # of runs that completed, by the horizon: the work done, not the work lost
    preemptions: int  # runs cut short by a preemption
    never_admitted: int  # still waiting when nothing more could start


@dataclass(frozen=True)
class Forecast:
    teams: Mapping[str, TeamForecast]
    horizon_s: float
    unqueued: Mapping[str, int]  # team -> jobs with no queue on this side
    cut_short: bool = False
    loops: int = 0  # preemption loops the simulator broke (simulate.py Simulator.issued)


@dataclass(frozen=True)
class Trace:
    """The jobs both sides face and how to name them in the output."""

    jobs: tuple[TraceJob, ...]
    label: str

    @property
    def horizon_s(self) -> float:
        return max((j.arrival_s + j.duration_s for j in self.jobs), default=0.0)


def stack_queues(config: StackConfig, queues: QueueSet) -> Queues:
    """The simulator's view of a stack: its built Kueue objects and Kueue's manager configuration
    as the Helm release gets it (none with AKS's managed extension, which sets its own)."""
    manager = None if config.kueue.extension else manager_config(config)
    read = read_queues(queues.objects, manager, config.kueue.feature_gates)
    if config.multi_kueue.is_manager:  # one reason says it all: its jobs run on the workers
        return replace(
            read, reasons=("a MultiKueue manager dispatches its jobs to its workers, which are not simulated",)
        )
    return read


# --- the trace --------------------------------------------------------------------------------


def synthetic_spec(config: StackConfig, load: float = DEFAULT_LOAD, jobs: int = DEFAULT_JOBS) -> TraceSpec | None:
    """A synthetic trace's spec scaled to `config`'s pools that the teams' default queues reach:
    GPU jobs of one GPU-slice pods (a GPU node's allocatable ÷ its GPUs) in Philly's sizes that fit
    the largest GPU pool; CPU jobs of 1..4 pods of a quarter CPU node; the mix and the rate such
    that GPU and CPU work each come to `load` of their capacity; each team's rate in proportion to
    its share. None when the pools have neither GPUs nor CPU pools."""
    used = {p for t in config.teams for p in t.pools}
    pools = [p for p in config.node_pools if p.name in used and not p.topology and p.capacity_nodes > 0]
    gpu_pools = [p for p in pools if p.is_gpu and p.capacity.gpus > 0]
    cpu_pools = [p for p in pools if not p.is_gpu]
    gpus = sum(p.capacity.gpus for p in gpu_pools)
    cpu_m = sum(p.capacity.cpu_millicores for p in cpu_pools)
    split = fitting_split(max((p.capacity.gpus for p in gpu_pools), default=0))
    if gpu_pools:
        gpu_pod = Pod(
            min(p.capacity.cpu_millicores // p.capacity.gpus for p in gpu_pools),
            min(p.capacity.memory_mib // p.capacity.gpus for p in gpu_pools),
            1,
        )
    else:
        gpu_pod = Pod(1000, 1024, 1)
    if cpu_pools:
        cpu_pod = Pod(
            min(p.allocatable.cpu_millicores // 4 for p in cpu_pools),
            min(p.allocatable.memory_mib // 4 for p in cpu_pools),
        )
    else:
        cpu_pod = Pod(1000, 1024)
    spec = TraceSpec((), gpu_pod, cpu_pod, CPU_PODS_MAX, seconds_per_hour=3600.0, gpu_split=split or ((1, 1.0),))
    duration = mean_duration_s(spec)
    # per job arrival: GPU work ÷ GPUs (x) and CPU work ÷ vCPUs (y); the mix f makes them equal
    x = mean_gpus(split) / gpus if gpus and split else 0.0
    y = (1 + CPU_PODS_MAX) / 2 * cpu_pod.cpu_m / cpu_m if cpu_m else 0.0
    if x == 0 and y == 0:
        return None
    if x and y:
        fraction = y / (x + y)
    else:
        fraction = 1.0 if x else 0.0
    # jobs a second: the GPU load is rate × f × x × E[d] (and the CPU load, equal, rate × (1 - f) × y × E[d])
    rate = load / (duration * (fraction * x if x else y))
    span = jobs / rate
    total = sum(float(t.share) for t in config.teams) or 1.0
    teams = tuple(
        TeamLoad(
            t.name,
            float(t.share),
            0.0,
            span,
            rate * float(t.share) / total,
            fraction if any(p.name in t.pools for p in gpu_pools) else 0.0,
        )
        for t in config.teams
    )
    return replace(spec, teams=teams)


def synthetic_trace(
    config: StackConfig,
    seed: int = DEFAULT_SEED,
    load: float = DEFAULT_LOAD,
    jobs: int = DEFAULT_JOBS,
    side: str = "the stack",
) -> Trace | None:
    """The synthetic trace of synthetic_spec from `seed`, labelled for the output; `side` names
    whose pools and shares it was scaled to."""
    spec = synthetic_spec(config, load, jobs)
    if spec is None:
        return None
    generated = tuple(generate(spec, seed))
    span = max(t.end_s for t in spec.teams)
    shares = ", ".join(f"{t.name} {t.share:g} %" for t in spec.teams)
    sizes = " or ".join(str(g) for g, _ in spec.gpu_split)
    label = (
        f"synthetic, seed {seed}, load {load:g}, {len(generated):,} jobs over {duration_text(span)}: Philly's run "
        f"times and GPUs per job ({sizes}, the sizes the largest GPU pool holds), GPU and CPU work each "
        f"{load * 100:g} % of {side}'s pools, each team's jobs in proportion to its share on {side} ({shares})"
    )
    return Trace(generated, label)


def stack_trace(config: StackConfig, queues: Queues, root: Path) -> Trace | str | None:
    """The project's trace of the stack, `traces/<stack>.csv`, checked against its teams,
    LocalQueues and priority classes; the problems as text when it does not read; None when
    there is no such file."""
    path = root / TRACES_DIR / f"{config.stack}.csv"
    if not path.exists():
        return None
    where = f"{TRACES_DIR}/{config.stack}.csv"
    try:
        jobs = load_trace(path, where=where, teams=queues.teams, priorities=queues.priorities)
    except TraceError as err:
        return str(err)
    return Trace(jobs, f"`{where}`, {len(jobs):,} jobs over {duration_text(Trace(jobs, '').horizon_s)}")


# --- figures ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (p in 0..100) of `values`, None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def figures(jobs: Sequence[TraceJob], outcome: Outcome, horizon_s: float) -> Forecast:
    waits: dict[str, list[float]] = {}
    finished: Counter[str] = Counter()
    gpu_seconds: defaultdict[str, float] = defaultdict(float)
    preempted: Counter[str] = Counter()
    for run in outcome.runs:
        job = jobs[run.job]
        if run.completed:
            held = max(0.0, min(run.end_s, horizon_s) - min(run.start_s, horizon_s))
            gpu_seconds[job.team] += job.gpus * held
            waits.setdefault(job.team, []).append(run.start_s - job.arrival_s)
            finished[job.team] += run.end_s <= horizon_s
        else:
            preempted[job.team] += 1
    unqueued = dict(Counter(jobs[index].team for index in outcome.unqueued))
    waiting = Counter(jobs[index].team for index in outcome.never_admitted)
    submitted = Counter(job.team for job in jobs)
    teams = {
        team: TeamForecast(
            team,
            count - unqueued.get(team, 0),
            finished.get(team, 0),
            percentile(waits.get(team, []), 50),
            percentile(waits.get(team, []), 95),
            gpu_seconds.get(team, 0.0) / 3600,
            preempted.get(team, 0),
            waiting.get(team, 0),
        )
        for team, count in submitted.items()
        if count > unqueued.get(team, 0)
    }
    return Forecast(teams, horizon_s, unqueued, outcome.cut_short, outcome.loops)


def forecast(queues: Queues, trace: Trace) -> Forecast | tuple[str, ...]:
    """The trace's figures under `queues`, or why the simulator cannot model them."""
    outcome = simulate(queues, trace.jobs)
    if outcome.reasons:
        return outcome.reasons
    return figures(trace.jobs, outcome, trace.horizon_s)


# --- Markdown ---------------------------------------------------------------------------------


def duration_text(seconds: float) -> str:
    """12 s, 14 min, 3.2 h, 4.1 days."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86_400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"


def _wait(value: float | None) -> str:
    return "–" if value is None else duration_text(value)


def _cells(team: TeamForecast | None) -> list[str]:
    if team is None:
        return ["–"] * 6
    finished = f"{team.finished:,}" + (f" ({team.never_admitted:,} never start)" if team.never_admitted else "")
    return [
        f"{team.jobs:,}",
        _wait(team.median_wait_s),
        _wait(team.p95_wait_s),
        f"{team.gpu_hours:,.0f}",
        finished,
        f"{team.preemptions:,}",
    ]


def _fidelity() -> str:
    e = MEASURED_ERROR
    low, high = e.preemptions
    return (
        "Fidelity: the e2e tier replays traces through real Kueue and holds the simulator to each "
        f"team's p95 wait within {e.p95 * 100:.0f} and its median within {e.median * 100:.0f} percentile points of "
        f"Kueue's, at least {e.order:.0%} of the waiting jobs admitted in Kueue's order, and {low:g} to {high:g} "
        "times Kueue's preemptions "
        f"({e.measured_on}; docs/forecast.md#fidelity)."
    )


HEADER = "| team | jobs | median wait | p95 wait | GPU-hours | jobs finished | preempted |"
RULE = "|---|---:|---:|---:|---:|---:|---:|"


def _section(title: str, *body: str) -> str:
    """A section of the plan's Markdown: a blank line, the heading, the body, as the plan's other
    sections are joined (components/plan.py)."""
    return "\n".join(["", title, "", *body]) + "\n"


def forecast_markdown(
    before: tuple[StackConfig, QueueSet] | None, after: tuple[StackConfig, QueueSet], root: Path
) -> str:
    """The forecast section of the plan: for `after` alone when `before` is None (the plain plan),
    else before → after (the PR comment). Says why instead of a table when the simulator cannot
    model a side or the stack's trace does not read."""
    config, built = after
    title = f"#### Waiting-time forecast: stack `{config.stack}`" + (", before → after" if before else "")
    head = stack_queues(config, built)
    base = stack_queues(*before) if before else None
    if base is not None and base == head:
        return _section(title, "The queues are the same on both sides, so the forecast does not change.")
    for which, queues in (("this change" if before else "the stack", head), ("the base", base)):
        if queues is not None and queues.reasons:
            return _section(
                title,
                f"Not forecast: the simulator does not model {which}'s queues: " + "; ".join(queues.reasons) + ".",
            )
    trace = stack_trace(config, head, root)
    if isinstance(trace, str):
        return _section(title, "Not forecast: " + trace.replace("\n", " "))
    if trace is None:
        trace = synthetic_trace(before[0], side="the base") if before else synthetic_trace(config)
    if trace is None or not trace.jobs:
        return _section(title, "Not forecast: no team's queue reaches a pool with GPUs or CPU nodes.")
    names = ("the base", "this change") if base is not None else ("the stack",)
    results = [forecast(q, trace) for q in ((base, head) if base is not None else (head,))]
    sides: list[Forecast] = []
    for name, result in zip(names, results, strict=True):
        if not isinstance(result, Forecast):
            return _section(
                title, f"Not forecast: the simulator does not model {name}'s jobs: " + "; ".join(result) + "."
            )
        sides.append(result)
    body = [f"Trace: {trace.label}.", "", HEADER, RULE]
    for team in dict.fromkeys([t for side in sides for t in side.teams]):
        cells = [_cells(side.teams.get(team)) for side in sides]
        joined = [c[0] if len(set(c)) == 1 else " → ".join(c) for c in zip(*cells, strict=True)]
        body.append(f"| {team} | " + " | ".join(joined) + " |")
    body += [
        "",
        "Wait: submission to the start of the run a job finished under (a preempted job's lost run counts as "
        f"waiting). GPU-hours of the runs that finished, and jobs finished, by {duration_text(trace.horizon_s)}: "
        "when the trace's work would be done had no job waited. Preempted: runs cut short by a preemption, their "
        "work lost.",
    ]
    for name, side in zip(names, sides, strict=True):
        for team, count in side.unqueued.items():
            body.append(
                f"On {name}, {count:,} jobs of `{team}` have no queue (the team or its LocalQueue is not there)."
            )
        if side.loops:
            body.append(
                f"**On {name}, queues take the same quota back and forth ({side.loops:,} times):** a queue within its "
                "nominal quota of one flavor reclaims it while fair sharing, which counts a resource over every "
                "flavor, lets the other take it back. Kueue would keep evicting both; the simulator stops each such "
                "loop after three rounds."
            )
        if side.cut_short:
            body.append(f"On {name}, one instant took too many cycles and was cut short: the figures are not reliable.")
    notes = " ".join(dict.fromkeys([*head.notes, *(base.notes if base else ())]))
    body += ["", f"{NOT_MODELLED} {notes}".strip(), "", _fidelity()]
    return _section(title, *body)
