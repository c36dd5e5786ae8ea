"""Why Workloads wait: Kueue's own log of a sweep run read beside the run's histories.

    python -m bench.outcomes --tier workloads --setups kueue-aks --seeds 25,26 --loads 1.1 \\
        --kueue-log-level 6 --keep diag --out diag.json
    python -m bench.outcomes.diagnose diag.json diag/kueue-aks/kueue.log

For every "Workload requires preemption, but there are no candidate workloads allowed for
preemption" (scheduler.go, logged at level 2), it finds, in the same scheduling cycle, whether
fair sharing had candidates and its strategies refused them all ("All fair sharing strategies
failed", preemption.go, level 6), and reads from the run's histories what the waiting workload's
team held in Kueue's books at that moment against its nominal GPU quota: the review's outline
(docs/outcomes.md#why-a-team-waits) says such a GPU gang's team was over its nominal quota
with the gang counted. It also counts the queue mechanics the outline names: equivalent workloads
bulk-moved to inadmissible, sticky preemptors, and preemptions by reason. Pure but for reading the
two files; the report is plain text.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from components.k8s.quantity import parse_quantity

NO_CANDIDATES = "Workload requires preemption, but there are no candidate workloads allowed for preemption"
STRATEGIES_FAILED = "All fair sharing strategies failed"
COUNTED = (
    "Bulk-moved equivalent workloads to inadmissible",
    "Prioritizing sticky workload",
    "Preempted",
    "Fair sharing strategies succeeded",
    STRATEGIES_FAILED,
    NO_CANDIDATES,
)


@dataclass(frozen=True)
class Wait:
    """One "no candidates" of one workload."""

    lane: str
    team: str
    job: str
    t: float  # seconds after the lane's start
    gpus: int  # the workload's
    team_gpus: float  # what its team held in Kueue's books then
    nominal_gpus: float
    strategies_refused: bool  # fair sharing had candidates and refused them all

    @property
    def over_nominal(self) -> bool:
        return self.team_gpus + self.gpus > self.nominal_gpus


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def log_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Kueue's JSON log lines that matter here (others, and lines that are not JSON, are skipped)."""
    out = []
    for line in lines:
        if '"msg"' not in line or not any(m in line for m in COUNTED):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") in COUNTED:
            out.append(entry)
    return out


def _held(histories: Sequence[Mapping[str, Any]], team: str, t: float) -> float:
    return float(
        sum(h["gpus"] for h in histories if h["team"] == team and any(a[0] <= t < a[1] for a in h["attempts"]))
    )


def waits(entries: Sequence[Mapping[str, Any]], run: Mapping[str, Any], nominal: Mapping[str, float]) -> list[Wait]:
    """Every "no candidates" of the run, with its team's books at that moment. `run`: one entry
    of the results JSON's sweep.runs (histories, started_at, offsets); `nominal`: team -> GPUs."""
    refused = {
        (
            e.get("schedulingCycle"),
            (e.get("preemptingWorkload") or {}).get("namespace"),
            (e.get("preemptingWorkload") or {}).get("name"),
        )
        for e in entries
        if e.get("msg") == STRATEGIES_FAILED
    }
    out = []
    for e in entries:
        if e.get("msg") != NO_CANDIDATES:
            continue
        namespace, name = e["workload"]["namespace"], e["workload"]["name"]
        lane = next((lane for lane in run["histories"] if namespace.startswith(f"{lane}-")), None)
        if lane is None:
            continue
        team = namespace.removeprefix(f"{lane}-")
        job = next(h for h in run["histories"][lane] if h["job"] == name)
        t = _ts(e["ts"]) - run["started_at"] - run["offsets"][lane]
        out.append(
            Wait(
                lane,
                team,
                name,
                round(t, 2),
                job["gpus"],
                _held(run["histories"][lane], team, t),
                nominal[team],
                (e.get("schedulingCycle"), namespace, name) in refused,
            )
        )
    return out


def report(entries: Sequence[Mapping[str, Any]], found: Sequence[Wait]) -> str:
    counts = Counter(e.get("msg") for e in entries)
    reasons = Counter(e.get("reason") for e in entries if e.get("msg") == "Preempted")
    lines = [
        f"log: {dict(counts)}",
        f"preemptions by reason: {dict(reasons)}",
        "no-candidates events by team and kind (GPU workload / CPU workload):",
    ]
    for team in sorted({w.team for w in found}):
        mine = [w for w in found if w.team == team]
        gpu = [w for w in mine if w.gpus]
        lines.append(
            f"- {team}: {len(mine)} ({len(gpu)} GPU, {len(mine) - len(gpu)} CPU) on {len({w.job for w in mine})} workloads; "
            f"GPU ones over nominal with the gang counted: {sum(w.over_nominal for w in gpu)} of {len(gpu)}; "
            f"fair sharing had candidates and refused them all: {sum(w.strategies_refused for w in mine)} of {len(mine)}"
        )
    return "\n".join(lines)


def nominal_gpus(objects: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """team -> its nominal GPUs, from the set-up's ClusterQueues (named by team)."""
    out: dict[str, float] = {}
    for q in objects:
        if q["kind"] != "ClusterQueue":
            continue
        out[q["metadata"]["name"]] = float(
            sum(
                parse_quantity(r["nominalQuota"])
                for g in q["spec"]["resourceGroups"]
                for f in g["flavors"]
                for r in f["resources"]
                if r["name"] == "nvidia.com/gpu"
            )
        )
    return out


def main(argv: Sequence[str]) -> int:
    results, log = Path(argv[0]), Path(argv[1])
    setup = argv[2] if len(argv) > 2 else "kueue-aks"
    data = json.loads(results.read_text())
    run = next(r for r in data["sweep"]["runs"] if r["setup"] == setup)
    from components.kueue.objects import build_objects
    from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

    from . import scenario

    config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))
    entries = log_lines(log.read_text().splitlines())
    print(report(entries, waits(entries, run, nominal_gpus(build_objects(config)))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
