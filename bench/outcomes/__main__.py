"""python -m bench.outcomes [--tier all|workloads|pods] [--out results.json] [--png outcomes.png] [--setups a,b]

Two tiers, as docs/outcomes.md explains:
- `workloads`: the sweep (sweep.py): every Kueue set-up × seed × offered load as Workloads under
  the real Kueue, one control plane per set-up; figures with intervals over the seeds, and the
  policy's targets (sweep.missed_targets);
- `pods`: one seed at one load replayed as Jobs with pods on kwok nodes (replay.py) against every
  set-up, no Kueue included, then admission throughput (throughput.py); what only pods show:
  stranded pods and partial gangs (metrics.missed_targets).
Prints the tables, writes every figure to the JSON file and draws the pod tier's picture. Exit 1
names each target missed; exit 2 when the tier could not be built or a set-up did not come up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components.facts.kueue_versions import DEFAULT_VERSION
from testbed.binaries import BuildError, ensure_binaries
from testbed.cluster import E2EError
from testbed.forward import Forwarder
from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

from . import report, scenario, sweep, throughput
from .attempts import LaneOutcome
from .metrics import Outcome, lower_bound, missed_targets, outcome
from .replay import Run, bring_up, replay
from .setups import KUEUE_AKS, SETUPS, SINGLE_QUEUE, capacity_of, setups
from .trace import describe, generate
from .variants import VARIANTS, variants

# A set-up that has not finished the trace by this many lower bounds is stopped and reported with
# its unfinished jobs (the hand-written team quotas can hold a gang larger than a team may borrow
# forever); it keeps the whole run within the 15 minutes.
DEADLINE_FACTOR = 1.6
RUN_BUDGET_SECONDS = 15 * 60  # each tier's
TIERS = ("workloads", "pods")


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.outcomes", description=__doc__.split("\n\n")[1])
    parser.add_argument("--out", default="outcomes.json", help="every sample and figure, as JSON")
    parser.add_argument("--png", default="outcomes.png", help="utilization over time and delay per team")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table and the targets' verdict as Markdown")
    parser.add_argument("--tier", choices=("all", *TIERS), default="all")
    names = (*SETUPS, *(f"{KUEUE_AKS}+{v}" for v in VARIANTS))
    parser.add_argument("--setups", default=",".join(SETUPS), help=f"a subset of {','.join(names)}")
    parser.add_argument("--no-throughput", action="store_true", help="skip the admission-throughput part")
    parser.add_argument("--seed", type=int, default=scenario.SEED, help="the pod tier's trace")
    parser.add_argument("--seeds", default=",".join(map(str, sweep.SEEDS)), help="the sweep's seeds")
    parser.add_argument("--loads", default=",".join(map(str, sweep.LOADS)), help="the sweep's offered loads")
    parser.add_argument("--keep", metavar="DIR", help="keep each control plane's folder (its logs) here")
    parser.add_argument(
        "--kueue-log-level",
        type=int,
        metavar="N",
        help="the sweep's Kueue log level (6: every scheduling decision; with --keep, for a diagnosis)",
    )
    args = parser.parse_args(argv)
    chosen = [s for s in args.setups.split(",") if s]
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"--setups: unknown {unknown}; allowed: {', '.join(names)}")
    tiers = TIERS if args.tier == "all" else (args.tier,)
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x]
        loads = [float(x) for x in args.loads.split(",") if x]
    except ValueError as err:
        parser.error(f"--seeds takes integers and --loads numbers, comma-separated: {err}")

    # A stop (CI's timeout, kill) unwinds like an error: every control plane started is taken down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began = time.monotonic()
    config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))
    hand_config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE), governed=False)
    jobs = generate(scenario.TRACE, args.seed)
    capacity = capacity_of(config)
    base = setups(config, str(KUEUE_CHART_FILE))  # the program's first
    candidates = [*base, *variants(base[0])]
    shares = {t.name: float(t.share) / 100 for t in config.teams}
    bound = lower_bound(jobs, capacity)
    if "pods" in tiers:
        print(
            f"pod tier trace (seed {args.seed}): {json.dumps(describe(jobs, scenario.TRACE))}; lower bound {bound:.1f} s",
            flush=True,
        )
    try:
        binaries = ensure_binaries(DEFAULT_VERSION)
    except BuildError as err:
        print(f"the e2e tier's binaries could not be built: {err}", file=sys.stderr)
        return 2

    runs: list[Run] = []
    outcomes: list[Outcome] = []
    lanes: list[LaneOutcome] = []
    base_seconds = 0.0
    sweep_runs: list[dict[str, Any]] = []
    sweep_seconds = 0.0
    forwarder = Forwarder()
    thrpt: dict[str, Any] | None = None
    try:
        with (
            contextlib.nullcontext(args.keep)
            if args.keep
            else tempfile.TemporaryDirectory(prefix="kueue-aks-outcomes-") as folder
        ):
            if "workloads" in tiers:
                sweep_began = time.monotonic()
                lane_traces = sweep.traces(seeds, loads, capacity["gpu"])
                print(
                    f"sweep: {len(seeds)} seeds x loads {loads}: "
                    f"{sum(len(j) for _, _, j in lane_traces.values())} jobs per set-up",
                    flush=True,
                )
                base_seconds = 0.0  # the program's and the hand-written set-ups': the budget's
                for setup in sweep.kueue_setups([s for s in candidates if s.name in chosen]):
                    setup_began = time.monotonic()
                    print(
                        f"[{time.monotonic() - began:5.0f} s] sweep {setup.name}: {len(lane_traces)} lanes", flush=True
                    )
                    done = sweep.run_setup(
                        setup,
                        config,
                        binaries,
                        Path(folder),
                        forwarder,
                        lane_traces,
                        loads,
                        capacity,
                        shares,
                        args.kueue_log_level,
                    )
                    lanes += done.lanes
                    if not setup.name.startswith(f"{KUEUE_AKS}+"):
                        base_seconds += time.monotonic() - setup_began
                    sweep_runs.append(
                        {
                            "setup": done.setup,
                            "up_seconds": done.up_seconds,
                            "run_seconds": done.run_seconds,
                            "errors": done.errors,
                            "started_at": done.started_at,
                            "offsets": done.offsets,
                            "histories": {
                                lane: [sweep.history_json(h) for h in hs] for lane, hs in done.histories.items()
                            },
                        }
                    )
                    unfinished = {o.load: 0 for o in done.lanes}
                    for o in done.lanes:
                        unfinished[o.load] += o.unfinished
                    print(
                        f"[{time.monotonic() - began:5.0f} s] sweep {setup.name}: up {done.up_seconds} s, "
                        f"run {done.run_seconds} s, unfinished jobs by load {unfinished}, "
                        f"runner errors {done.errors[:3]}",
                        flush=True,
                    )
                sweep_seconds = time.monotonic() - sweep_began
                print(
                    f"sweep: {sweep_seconds:.0f} s, of which the program's and the hand-written set-ups' "
                    f"{base_seconds:.0f} s",
                    flush=True,
                )
                print(sweep.table(lanes), flush=True)
            for setup in (s for s in candidates if s.name in chosen and "pods" in tiers):
                print(f"[{time.monotonic() - began:5.0f} s] {setup.name}: bringing up", flush=True)
                sc = bring_up(setup, config, hand_config, binaries, Path(folder), forwarder)
                try:
                    print(f"[{time.monotonic() - began:5.0f} s] {setup.name}: replaying {len(jobs)} jobs", flush=True)
                    run = replay(sc, setup, jobs, capacity, DEADLINE_FACTOR * bound)
                finally:
                    sc.down()
                runs.append(run)
                outcomes.append(outcome(setup.name, jobs, run.records, run.samples, capacity, shares, run.preemptions))
                print(report.row_text(outcomes[-1]), flush=True)
            if not args.no_throughput and "pods" in tiers:
                print(f"[{time.monotonic() - began:5.0f} s] admission throughput", flush=True)
                thrpt = throughput.measure(binaries, Path(folder), forwarder)
    except E2EError as err:
        print(f"a set-up failed: {err}", file=sys.stderr)
        return 2
    finally:
        forwarder.stop()

    took = time.monotonic() - began
    missed = missed_targets(outcomes, KUEUE_AKS) if outcomes and KUEUE_AKS in chosen else []
    if lanes and KUEUE_AKS in chosen:
        missed += sweep.missed_targets(lanes, KUEUE_AKS, SINGLE_QUEUE)
    if lanes and base_seconds > RUN_BUDGET_SECONDS:
        missed.append(
            f"the Workload-level sweep of the set-ups took {base_seconds:.0f} s, over the "
            f"{RUN_BUDGET_SECONDS} s budget (the variants' time not counted)"
        )
    pods_seconds = took - sweep_seconds
    if "pods" in tiers and pods_seconds > RUN_BUDGET_SECONDS:
        missed.append(f"the pod tier took {pods_seconds:.0f} s, over the {RUN_BUDGET_SECONDS} s budget")
    results = {
        "machine": machine(),
        "seconds": round(took, 1),
        "sweep_seconds": round(sweep_seconds, 1),
        "sweep": {"seeds": seeds, "loads": loads, "runs": sweep_runs, "lanes": [sweep.lane_json(o) for o in lanes]},
        "seed": args.seed,
        "trace": describe(jobs, scenario.TRACE),
        "jobs": [asdict(j) for j in jobs],
        "capacity": capacity,
        "shares": shares,
        "outcomes": [asdict(o) for o in outcomes],
        "runs": [
            {
                "setup": r.setup,
                "up_seconds": r.up_seconds,
                "replay_seconds": round(r.replay_seconds, 1),
                "records": [asdict(x) for x in r.records],
                "samples": [report.sample_json(s) for s in r.samples],
            }
            for r in runs
        ],
        "throughput": thrpt,
        "missed": missed,
    }
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    sweep_text = f"{sweep.table(lanes)}\n\n{sweep.comparisons(lanes, KUEUE_AKS)}" if lanes else ""
    text = "\n\n".join(t for t in (sweep_text, report.table(outcomes, thrpt) if outcomes else "") if t)
    print(text)
    if args.markdown:
        verdict = "\n".join(f"- missed: {line}" for line in missed) or "- every target met"
        Path(args.markdown).write_text(
            f"### Scheduling outcomes ({took:.0f} s on {machine()['cpus']} cores)\n\n{text}\n\n{verdict}\n"
        )
    if outcomes:
        report.picture(outcomes, Path(args.png))
    print(f"whole run: {took:.0f} s on {machine()}; samples in {args.out}, picture in {args.png}")
    for line in missed:
        print(f"MISSED: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
