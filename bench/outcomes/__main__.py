"""python -m bench.outcomes [--out results.json] [--png outcomes.png] [--setups a,b] [--no-throughput]

Replays one synthetic trace against each set-up (setups.py), one control plane after the other,
then measures admission throughput (throughput.py); prints the table, writes every sample to the
JSON file and draws the picture. Exit 1 names each target the program's set-up missed
(metrics.missed_targets); exit 2 when the tier could not be built or a set-up did not come up.
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

from components.kueue.versions import DEFAULT_VERSION
from tests.e2e.binaries import BuildError, ensure_binaries
from tests.e2e.cluster import E2EError
from tests.e2e.forward import Forwarder
from tests.e2e.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

from . import report, scenario, throughput
from .metrics import Outcome, lower_bound, missed_targets, outcome
from .replay import Run, bring_up, replay
from .setups import KUEUE_AKS, SETUPS, capacity_of, setups
from .trace import describe, generate

# A set-up that has not finished the trace by this many lower bounds is stopped and reported with
# its unfinished jobs (the hand-written team quotas can hold a gang larger than a team may borrow
# forever); it keeps the whole run within the 15 minutes.
DEADLINE_FACTOR = 1.6
RUN_BUDGET_SECONDS = 15 * 60


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.outcomes", description=__doc__.split("\n\n")[1])
    parser.add_argument("--out", default="outcomes.json", help="every sample and figure, as JSON")
    parser.add_argument("--png", default="outcomes.png", help="utilization over time and delay per team")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table and the targets' verdict as Markdown")
    parser.add_argument("--setups", default=",".join(SETUPS), help=f"a subset of {','.join(SETUPS)}")
    parser.add_argument("--no-throughput", action="store_true", help="skip the admission-throughput part")
    parser.add_argument("--seed", type=int, default=scenario.SEED)
    parser.add_argument("--keep", metavar="DIR", help="keep each control plane's folder (its logs) here")
    args = parser.parse_args(argv)
    chosen = [s for s in args.setups.split(",") if s]
    unknown = sorted(set(chosen) - set(SETUPS))
    if unknown:
        parser.error(f"--setups: unknown {unknown}; allowed: {', '.join(SETUPS)}")

    # A stop (CI's timeout, kill) unwinds like an error: every control plane started is taken down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began = time.monotonic()
    config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))
    hand_config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE), governed=False)
    jobs = generate(scenario.TRACE, args.seed)
    capacity = capacity_of(config)
    shares = {t.name: float(t.share) / 100 for t in config.teams}
    bound = lower_bound(jobs, capacity)
    print(f"trace (seed {args.seed}): {json.dumps(describe(jobs))}; lower bound {bound:.1f} s", flush=True)
    try:
        binaries = ensure_binaries(DEFAULT_VERSION)
    except BuildError as err:
        print(f"the e2e tier's binaries could not be built: {err}", file=sys.stderr)
        return 2

    runs: list[Run] = []
    outcomes: list[Outcome] = []
    forwarder = Forwarder()
    thrpt: dict[str, Any] | None = None
    try:
        with contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="kueue-aks-outcomes-") as folder:
            for setup in (s for s in setups(config, str(KUEUE_CHART_FILE)) if s.name in chosen):
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
            if not args.no_throughput:
                print(f"[{time.monotonic() - began:5.0f} s] admission throughput", flush=True)
                thrpt = throughput.measure(binaries, Path(folder), forwarder)
    except E2EError as err:
        print(f"a set-up failed: {err}", file=sys.stderr)
        return 2
    finally:
        forwarder.stop()

    took = time.monotonic() - began
    missed = missed_targets(outcomes, KUEUE_AKS) if KUEUE_AKS in chosen and len(chosen) > 1 else []
    if took > RUN_BUDGET_SECONDS:
        missed.append(f"the run took {took:.0f} s, over the {RUN_BUDGET_SECONDS} s budget")
    results = {"machine": machine(), "seconds": round(took, 1), "seed": args.seed, "trace": describe(jobs),
               "jobs": [asdict(j) for j in jobs], "capacity": capacity, "shares": shares,
               "outcomes": [asdict(o) for o in outcomes],
               "runs": [{"setup": r.setup, "up_seconds": r.up_seconds, "replay_seconds": round(r.replay_seconds, 1),
                         "records": [asdict(x) for x in r.records],
                         "samples": [report.sample_json(s) for s in r.samples]} for r in runs],
               "throughput": thrpt, "missed": missed}
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    text = report.table(outcomes, thrpt)
    print(text)
    if args.markdown:
        verdict = "\n".join(f"- missed: {line}" for line in missed) or "- every target met"
        Path(args.markdown).write_text(f"### Scheduling outcomes ({took:.0f} s on {machine()['cpus']} cores)\n\n"
                                       f"{text}\n\n{verdict}\n")
    if outcomes:
        report.picture(outcomes, Path(args.png))
    print(f"whole run: {took:.0f} s on {machine()}; samples in {args.out}, picture in {args.png}")
    for line in missed:
        print(f"MISSED: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
