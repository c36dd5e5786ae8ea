"""The waiting-time forecast against real Kueue: the same traces through the Kueue controller and
through the simulator (docs/forecast.md#fidelity).

The traces are the outcome benchmark's (its three teams at 50/30/20 % on 24 GPUs and 8 CPU nodes),
busy enough for every team to wait, at seeds nothing was tuned on: the simulator's tests use
hand-made traces, the forecast seed 1, the benchmark's sweep seeds 25 to 29, and the simulator's
requeue batch was found on seeds 41 to 43. They run as Workloads under the program's own Kueue
values and objects (bench/outcomes/workloads.py: Kueue admits, the runner lets each run for its
run time and finishes it), every seed at once in lanes on one control plane, and through
`simulate` with the queues the forecast reads from the same stack, as Kueue's books saw them
(submitted when created, each holding quota as long as Kueue saw it held). Every run in which
Kueue keeps up (it admits the jobs that fit at once within half its one-second cadence) is held to the
bounds the forecast prints (MEASURED_ERROR); on a machine too busy for that, the test says so and
skips, since it would measure the machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.outcomes import scenario
from bench.outcomes.fidelity import KEEPS_UP_S, ORDER_GRACE_S, LaneFidelity, compare, observed, table
from bench.outcomes.lanes import lane_name
from bench.outcomes.setups import KUEUE_AKS, capacity_of, setups
from bench.outcomes.sweep import run_setup, trace_spec
from bench.outcomes.trace import generate
from components.forecast.forecast import MEASURED_ERROR, stack_queues
from components.forecast.simulate import simulate
from components.kueue.objects import queue_set
from testbed.binaries import Binaries
from testbed.forward import Forwarder
from testbed.measurements import report
from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

SEEDS = (51, 52, 53)
LOAD = 2.5  # offered GPU load over the arrival window: queues long enough for every team to wait
WINDOW_S = 40.0  # the teams' arrival windows (the sweep's 90 s, shortened: the run takes about 2.5 min)


def test_the_forecast_stays_within_its_stated_error_of_kueue(binaries: Binaries, tmp_path: Path) -> None:
    config = scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))
    setup = next(s for s in setups(config, str(KUEUE_CHART_FILE)) if s.name == KUEUE_AKS)
    capacity = capacity_of(config)
    shares = {t.name: float(t.share) / 100 for t in config.teams}
    lanes = {lane_name(s, LOAD): (s, LOAD, generate(trace_spec(LOAD, capacity["gpu"], WINDOW_S), s)) for s in SEEDS}
    forwarder = Forwarder()
    try:
        run = run_setup(setup, config, binaries, tmp_path, forwarder, lanes, [LOAD], capacity, shares)
    finally:
        forwarder.stop()
    queues = stack_queues(config, queue_set(config))
    results: list[LaneFidelity] = []
    for lane, (_, _, jobs) in lanes.items():
        histories = run.histories.get(lane, [])
        seen_by_kueue = observed(jobs, histories)  # the runner's lag taken out: see fidelity.py
        results.append(compare(lane, seen_by_kueue, histories, simulate(queues, seen_by_kueue)))
    seen = table(results)
    latency = max(r.kueue_latency_s for r in results)
    report(
        f"e2e[fidelity]: Kueue up in {run.up_seconds} s, the traces ran in {run.run_seconds} s, Kueue's latency "
        f"{latency:.2f} s\n{seen}"
    )
    assert not run.errors, f"the runner failed: {run.errors}"
    for r in results:
        assert not r.only_real and not r.only_simulated, f"{r.lane}: jobs finished on one side only\n{seen}"
    if latency > KEEPS_UP_S:
        # What is compared is then this machine's load, not the simulator: say so, do not pass or fail on it.
        pytest.skip(
            f"Kueue took a median {latency:.2f} s to admit jobs that fit at once (over {KEEPS_UP_S:.1f} s, half its "
            f"{ORDER_GRACE_S:.0f} s cadence): the machine is too busy to measure the forecast's fidelity\n{seen}"
        )
    low, high = MEASURED_ERROR.preemptions
    for r in results:
        assert r.median_rank_error() <= MEASURED_ERROR.median, f"{r.lane}: a median wait off\n{seen}"
        assert r.p95_rank_error() <= MEASURED_ERROR.p95, f"{r.lane}: a p95 wait off\n{seen}"
        assert r.order_agreement >= MEASURED_ERROR.order, f"{r.lane}: {r.order_agreement:.0%} in order\n{seen}"
        assert low <= r.preemption_ratio <= high, f"{r.lane}: {r.preemption_ratio:.2f} x Kueue's preemptions\n{seen}"
