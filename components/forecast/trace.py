"""The job trace: who submits what, when, for how long. A synthetic trace from a seed and
published statistics, and a CSV format for a recorded one (docs/forecast.md).

Pure: the same spec and seed give the same jobs, and the forecast, the outcome benchmark
(bench/outcomes), their tests and their reports read the same list. The figures below come from
Microsoft's Philly trace (msr-fiddle/philly-traces README.md@29a1b87f) as two projects publish it:
- GPUs per job: Gavel's Philly-derived split (stanford-futuredata/gavel scheduler/utils.py
  `_generate_scale_factor` and scheduler/philly_job_distribution.pickle@c4fa4009),
  1 GPU 70 %, 2 GPUs 10 %, 4 GPUs 15 %, 8 GPUs 5 %;
- run time: a log-normal through Philly's run-time median 1,186 s and p90 12,860 s (Alibaba's
  alibaba/clusterdata cluster-trace-gpu-v2020/analysis/philly_runtime.csv@7a6c496e), compressed
  from hours to seconds when the spec says so. No floor: short jobs stay short. The tail is capped
  at a quantile (the 95th by default), so at most that tail's jobs are clipped and one job cannot
  outlast the rest of the run by hours; `describe` reports the clipped fraction;
- arrivals: a Poisson process per team (exponential gaps) over the team's active window, the rates
  scaled together to an offered load (`at_load`): the GPU work the trace brings per second ÷ the
  GPUs, so below 1 the pools can keep up and above 1 they cannot.

The CSV format (`read_trace`, `write_trace`): one header line naming the columns, in any order,
then one job a line. Lines that start with `#` are comments.

    submit_s    seconds from the trace's start (≥ 0)
    team        the team that submits it (its namespace's kueue-aks.io/team label)
    pods        how many pods, all admitted together or not at all (≥ 1)
    cpu, memory, gpus
                what each pod requests, as Kubernetes quantities (4, 500m, 16Gi); gpus whole
    duration_s  how long it runs once admitted (≥ 0)
    priority    optional: a WorkloadPriorityClass of the stack; empty for none
    queue       optional: the team's LocalQueue; empty for `default`
    name        optional: unique; empty for `<team>-<line>`

cpu is kept in whole millicores and memory in whole MiB, rounded up (what quota a pod holds).
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist

from ..k8s.quantity import QuantityError, format_cpu, format_memory, parse_quantity
from ..k8s.resources import RESOURCE_CPU, RESOURCE_MEMORY, held

# Where a job goes when it names no LocalQueue: the team's `default` (components/kueue/objects.py
# LOCAL_QUEUE_NAME, which is also where Kueue puts a job that names no queue).
DEFAULT_QUEUE = "default"

# (GPUs, probability), from Gavel's Philly split (stanford-futuredata/gavel
# scheduler/philly_job_distribution.pickle@c4fa4009).
PHILLY_GPU_SPLIT: tuple[tuple[int, float], ...] = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
# Philly's run time (s): median and p90 (alibaba/clusterdata
# cluster-trace-gpu-v2020/analysis/philly_runtime.csv@7a6c496e).
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
    arrival_s: float  # its submission, seconds from the trace's start
    duration_s: float
    pods: int  # all start together or not at all (a gang when more than one)
    pod: Pod
    priority: str | None = None  # a WorkloadPriorityClass; None: the pods' priority, 0
    queue: str = DEFAULT_QUEUE  # the team's LocalQueue

    @property
    def gpus(self) -> int:
        return self.pods * self.pod.gpus

    @property
    def is_gpu(self) -> bool:
        return self.pod.gpus > 0


# --- the synthetic trace ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TeamLoad:
    """A team's promise (share, %) and its demand: Poisson arrivals at `rate_per_s` in [start_s, end_s)."""

    name: str
    share: float
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
    seconds_per_hour: float  # compression of Philly's run times (3600: none)
    cap_quantile: float = 0.95  # run times above this quantile are cut to it
    # GPUs per GPU job: Philly's split, or its sizes that fit the pools, in the same proportions.
    gpu_split: tuple[tuple[int, float], ...] = PHILLY_GPU_SPLIT


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
    below = math.exp(mu + _SIGMA**2 / 2) * NormalDist().cdf((math.log(cap) - mu - _SIGMA**2) / _SIGMA)
    return below + cap * (1 - spec.cap_quantile)


def mean_gpus(split: tuple[tuple[int, float], ...] = PHILLY_GPU_SPLIT) -> float:
    """GPUs of a GPU job on average (1.9 in Philly's split)."""
    return sum(g * p for g, p in split)


def fitting_split(largest: int) -> tuple[tuple[int, float], ...]:
    """Philly's split without the sizes above `largest` GPUs, the rest in the same proportions
    (a gang of 8 never runs on 3 GPUs: it would only wait); () when not even 1 GPU fits."""
    kept = [(g, p) for g, p in PHILLY_GPU_SPLIT if g <= largest]
    total = sum(p for _, p in kept)
    return tuple((g, p / total) for g, p in kept)


def offered_load(spec: TraceSpec, gpus: float) -> float:
    """The GPU work the teams bring per second over the trace's span, expected, ÷ `gpus`."""
    span = max(t.end_s for t in spec.teams) - min(t.start_s for t in spec.teams)
    jobs = sum(t.rate_per_s * t.gpu_fraction * (t.end_s - t.start_s) for t in spec.teams)
    return jobs * mean_gpus(spec.gpu_split) * mean_duration_s(spec) / (span * gpus)


def at_load(spec: TraceSpec, load: float, gpus: float) -> TraceSpec:
    """The same teams, windows and mix, every rate scaled by one factor to offer `load`."""
    factor = load / offered_load(spec, gpus)
    return replace(spec, teams=tuple(replace(t, rate_per_s=t.rate_per_s * factor) for t in spec.teams))


def gpus_for(u: float, split: tuple[tuple[int, float], ...] = PHILLY_GPU_SPLIT) -> int:
    """GPUs of a job at quantile u of the split."""
    total = 0.0
    for gpus, p in split:
        total += p
        if u < total:
            return gpus
    return split[-1][0]


def generate(spec: TraceSpec, seed: int) -> list[TraceJob]:
    """Every team's jobs, sorted by arrival; names are `<team>-<index>`."""
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    for team in spec.teams:
        t, index = team.start_s, 0
        while team.rate_per_s > 0:
            t += rng.expovariate(team.rate_per_s)
            if t >= team.end_s:
                break
            gpu = rng.random() < team.gpu_fraction
            duration = philly_duration_s(rng.random(), spec)
            if gpu:
                pods, pod = gpus_for(rng.random(), spec.gpu_split), spec.gpu_pod
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
        "jobs": len(jobs),
        "pods": sum(j.pods for j in jobs),
        "gangs": sum(j.pods > 1 for j in jobs),
        "teams": {k: {m: round(v, 1) for m, v in row.items()} for k, row in teams.items()},
    }
    if spec is not None and jobs:
        cap = round(cap_s(spec), 1)
        described["cap_s"] = cap
        described["clipped"] = round(sum(j.duration_s >= cap for j in jobs) / len(jobs), 3)
        described["median_s"] = sorted(j.duration_s for j in jobs)[len(jobs) // 2]
    return described


# --- the CSV format -----------------------------------------------------------------------------

REQUIRED = ("submit_s", "team", "pods", "cpu", "memory", "gpus", "duration_s")
OPTIONAL = ("priority", "queue", "name")
COLUMNS = REQUIRED + OPTIONAL  # the order write_trace writes

# Bounds on what a trace may hold, so that a mistyped unit or a runaway export is refused by name
# rather than simulated for minutes: the simulator takes a few thousand jobs in seconds.
MAX_JOBS = 20_000
MAX_LINE = 1_000  # characters
MAX_BYTES = MAX_JOBS * 200
MAX_TIME_S = 366 * 86_400.0  # a year: submissions and run times
MAX_PODS = 10_000
MAX_CPU_M = 1_024_000  # 1,024 cores a pod: past the largest Azure VM
MAX_MEMORY_MIB = 16 * 1024 * 1024  # 16 TiB a pod: likewise
MAX_GPUS = 64  # a pod: no VM has more than 8
MAX_NAME = 253
MAX_PROBLEMS = 20  # reported at once; the rest are counted


@dataclass(frozen=True)
class TraceProblem:
    line: int  # 1-based; 0 for the file as a whole
    column: str  # the column's name, or "" for the line as a whole
    message: str

    def __str__(self) -> str:
        at = f"line {self.line}" if self.line else "the file"
        return f"{at}, column `{self.column}`: {self.message}" if self.column else f"{at}: {self.message}"


class TraceError(ValueError):
    """A trace that cannot be read: every problem found, each with its line and column."""

    def __init__(self, where: str, problems: Iterable[TraceProblem], more: int = 0) -> None:
        self.where = where
        self.problems = tuple(problems)
        self.more = more
        tail = f"\n  ... and {more} more" if more else ""
        super().__init__(f"{where}: " + "\n  ".join(str(p) for p in self.problems) + tail)


@dataclass
class _Problems:
    found: list[TraceProblem] = field(default_factory=list)
    more: int = 0

    def add(self, line: int, column: str, message: str) -> None:
        if len(self.found) < MAX_PROBLEMS:
            self.found.append(TraceProblem(line, column, message))
        else:
            self.more += 1


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def _seconds(problems: _Problems, line: int, column: str, text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        problems.add(line, column, f"{_shown(text)} is not a number of seconds (e.g. 0, 90, 3600.5)")
        return None
    if not math.isfinite(value) or value < 0:
        problems.add(line, column, f"{_shown(text)} must be a number of seconds, 0 or more")
        return None
    if value > MAX_TIME_S:
        problems.add(line, column, f"{_shown(text)} is past a year ({MAX_TIME_S:.0f} s), the most a trace holds")
        return None
    return value


def _whole(problems: _Problems, line: int, column: str, text: str, low: int, high: int, what: str) -> int | None:
    try:
        quantity = parse_quantity(text) if text.strip() else None
    except QuantityError:
        quantity = None
    if quantity is None or quantity != quantity.to_integral_value():
        problems.add(line, column, f"{_shown(text)} must be a whole number of {what}, {low} to {high}")
        return None
    if not low <= quantity <= high:
        problems.add(line, column, f"{_shown(text)} must be {low} to {high} {what}")
        return None
    return int(quantity)


def _request(problems: _Problems, line: int, resource: str, text: str, high: int, what: str) -> int | None:
    """A per-pod request of `resource` (also its column) in display units, rounded up: what the
    pod holds of a quota."""
    column = resource
    try:
        quantity = parse_quantity(text)
    except QuantityError:
        problems.add(line, column, f"{_shown(text)} is not a Kubernetes quantity ({what}, e.g. 4, 500m, 16Gi)")
        return None
    if quantity < 0:
        problems.add(line, column, f"{_shown(text)} must not be negative")
        return None
    amount = held(resource, quantity)
    if amount > high:
        problems.add(line, column, f"{_shown(text)} is more than any node has ({what}: at most {high} a pod)")
        return None
    return amount


def read_trace(
    text: str,
    *,
    where: str = "trace",
    teams: Mapping[str, Collection[str]] | None = None,
    priorities: Collection[str] | None = None,
) -> tuple[TraceJob, ...]:
    """The jobs of a trace in the CSV format, sorted by submission. `teams`: the stack's teams,
    each with its LocalQueues, and `priorities` its WorkloadPriorityClasses; a job naming another
    is refused (None: not checked). Raises TraceError, and nothing else."""
    problems = _Problems()
    if len(text) > MAX_BYTES:
        raise TraceError(where, [TraceProblem(0, "", f"has {len(text)} characters; a trace holds at most {MAX_BYTES}")])
    lines = [
        (i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise TraceError(
            where, [TraceProblem(0, "", f"is empty: it needs a header line ({','.join(REQUIRED)}) and jobs")]
        )
    header_line, header_text = lines[0]
    header = [c.strip() for c in next(csv.reader([header_text]))]
    for column in header:
        if column not in COLUMNS:
            problems.add(header_line, column, f"is no column of a trace; the columns are {', '.join(COLUMNS)}")
    for column in sorted({c for c in header if header.count(c) > 1}):
        problems.add(header_line, column, "is named twice")
    for column in REQUIRED:
        if column not in header:
            problems.add(header_line, column, f"is missing; every trace has {', '.join(REQUIRED)}")
    if problems.found:
        raise TraceError(where, problems.found, problems.more)
    rows = lines[1:]
    if not rows:
        raise TraceError(where, [TraceProblem(0, "", "has a header and no jobs")])
    if len(rows) > MAX_JOBS:
        raise TraceError(
            where, [TraceProblem(rows[MAX_JOBS][0], "", f"is job {MAX_JOBS + 1}; a trace holds at most {MAX_JOBS}")]
        )
    jobs: list[tuple[float, int, TraceJob]] = []
    names: dict[str, int] = {}
    for number, line in rows:
        if len(line) > MAX_LINE:
            problems.add(number, "", f"has {len(line)} characters; a line holds at most {MAX_LINE}")
            continue
        try:
            cells = next(csv.reader([line]))
        except csv.Error as err:  # e.g. a quote that never closes
            problems.add(number, "", f"is not a CSV line ({err})")
            continue
        if len(cells) != len(header):
            problems.add(number, "", f"has {len(cells)} cells; the header names {len(header)} columns")
            continue
        job = _job(problems, number, dict(zip(header, (c.strip() for c in cells), strict=True)), teams, priorities)
        if job is None:
            continue
        if job.name in names:
            problems.add(number, "name", f"{_shown(job.name)} is the name of the job on line {names[job.name]}")
            continue
        names[job.name] = number
        jobs.append((job.arrival_s, number, job))
    if problems.found:
        raise TraceError(where, problems.found, problems.more)
    return tuple(job for _, _, job in sorted(jobs, key=lambda j: (j[0], j[1])))


def _job(
    problems: _Problems,
    number: int,
    cells: Mapping[str, str],
    teams: Mapping[str, Collection[str]] | None,
    priorities: Collection[str] | None,
) -> TraceJob | None:
    before = len(problems.found) + problems.more
    submit = _seconds(problems, number, "submit_s", cells["submit_s"])
    duration = _seconds(problems, number, "duration_s", cells["duration_s"])
    pods = _whole(problems, number, "pods", cells["pods"], 1, MAX_PODS, "pods")
    cpu = _request(problems, number, RESOURCE_CPU, cells["cpu"], MAX_CPU_M, "millicores")
    memory = _request(problems, number, RESOURCE_MEMORY, cells["memory"], MAX_MEMORY_MIB, "MiB")
    gpus = _whole(problems, number, "gpus", cells["gpus"], 0, MAX_GPUS, "GPUs")
    team = cells["team"]
    if not team:
        problems.add(number, "team", "is empty; every job has a team")
    elif teams is not None and team not in teams:
        problems.add(
            number, "team", f"{_shown(team)} is not a team of the stack (its teams: {', '.join(teams) or 'none'})"
        )
    queue = cells.get("queue") or DEFAULT_QUEUE
    if teams is not None and team in teams and queue not in teams[team]:
        problems.add(
            number, "queue", f"{_shown(queue)} is not a LocalQueue of team {team!r} ({', '.join(teams[team])})"
        )
    priority = cells.get("priority") or None
    if priority is not None and priorities is not None and priority not in priorities:
        allowed = ", ".join(priorities) or "none"
        problems.add(
            number, "priority", f"{_shown(priority)} is not a priority class of the stack ({allowed}; empty for none)"
        )
    name = cells.get("name") or f"{team}-{number}"
    if len(name) > MAX_NAME or not name.isprintable():
        problems.add(number, "name", f"{_shown(name)} must be printable and at most {MAX_NAME} characters")
    if len(problems.found) + problems.more > before:
        return None
    assert submit is not None and duration is not None and pods is not None
    assert cpu is not None and memory is not None and gpus is not None
    return TraceJob(name, team, submit, duration, pods, Pod(cpu, memory, gpus), priority, queue)


def load_trace(
    path: Path,
    *,
    where: str | None = None,
    teams: Mapping[str, Collection[str]] | None = None,
    priorities: Collection[str] | None = None,
) -> tuple[TraceJob, ...]:
    """read_trace of a file; a file that cannot be read, or is not UTF-8, is a TraceError too."""
    label = where or str(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TraceError(label, [TraceProblem(0, "", f"is larger than {MAX_BYTES} bytes, the most a trace holds")])
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as err:
        raise TraceError(label, [TraceProblem(0, "", f"cannot be read ({err.strerror or err})")]) from None
    except UnicodeDecodeError as err:
        raise TraceError(label, [TraceProblem(0, "", f"is not UTF-8 text (byte {err.start})")]) from None
    return read_trace(text, where=label, teams=teams, priorities=priorities)


def _seconds_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_trace(jobs: Iterable[TraceJob], comment: str = "") -> str:
    """The jobs in the CSV format, every column written; `comment` (one line per line) goes on top
    after `# `, e.g. where the trace came from."""
    lines = [f"# {c}" if c else "#" for c in comment.splitlines()]
    lines.append(",".join(COLUMNS))
    for job in jobs:
        cells = [
            _seconds_text(job.arrival_s),
            job.team,
            str(job.pods),
            format_cpu(job.pod.cpu_m),
            format_memory(job.pod.memory_mib),
            str(job.pod.gpus),
            _seconds_text(job.duration_s),
            job.priority or "",
            "" if job.queue == DEFAULT_QUEUE else job.queue,
            job.name,
        ]
        lines.append(",".join(_cell(c) for c in cells))
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text
