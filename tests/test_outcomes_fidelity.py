"""The forecast's fidelity comparison (bench/outcomes/fidelity.py) on hand-made runs whose answers
are worked out in the comments, and docs/forecast.md#fidelity held to the bounds the forecast prints."""

from __future__ import annotations

import re

import pytest

from bench.outcomes.attempts import STOPPED, Attempt, History
from bench.outcomes.fidelity import compare, observed, rank_error, real_admissions, simulated_admissions
from bench.outcomes.trace import Pod, TraceJob
from components.forecast.forecast import MEASURED_ERROR
from components.forecast.simulate import Outcome, Run
from testbed.harness import ROOT

POD = Pod(1000, 1024, 1)


def trace_job(name: str, team: str, at: float, duration: float = 10.0) -> TraceJob:
    return TraceJob(name, team, at, duration, 1, POD)


def test_a_wait_is_to_the_run_that_finished_and_order_is_the_first_admission() -> None:
    job = trace_job("a", "t", 0.0)
    # Admitted at 1, evicted at 3, admitted again at 8 and finished: waited 8 s, first admitted at 1.
    real = real_admissions(
        [History(job, 0.0, (Attempt(1.0, 3.0, False, "InCohortReclamation"), Attempt(8.0, 18.0, True)))]
    )
    assert (real["a"].first_s, real["a"].wait_s) == (1.0, 8.0)
    sim = simulated_admissions([job], Outcome((Run(0, "gpu", 2.0, 4.0, False), Run(0, "gpu", 5.0, 15.0, True)), (), ()))
    assert (sim["a"].first_s, sim["a"].wait_s) == (2.0, 5.0)
    # A job that never finished is on neither side.
    assert real_admissions([History(job, 0.0, (Attempt(1.0, 3.0, False, STOPPED),))]) == {}


@pytest.mark.parametrize(
    ("simulated", "q", "error"),
    [
        (0.0, 50, 0.1),  # Kueue's waits 0, 0.5, 4, 20, 30: 0 and 0.5 (a second from 0) are its 40th percentile
        (4.4, 50, 0.0),  # within a second of Kueue's median
        (20.0, 50, 0.1),  # 3 of 5 waits are under 19 s: the 60th percentile, 10 points from the median
        (30.0, 95, 0.0),  # Kueue's p95 is 30
        (0.0, 95, 0.55),  # at most 2 of 5 waits are 1 s or less: 40 %, 55 points below the 95th
    ],
)
def test_rank_error_is_in_percentile_points_of_kueues_waits(simulated: float, q: float, error: float) -> None:
    assert rank_error([0.0, 0.5, 4.0, 20.0, 30.0], simulated, q) == pytest.approx(error)


def test_compare_counts_pairs_in_order_and_preemptions() -> None:
    jobs = [trace_job("a", "t", 0.0), trace_job("b", "t", 0.0), trace_job("c", "u", 0.0)]
    # Kueue: a waited 5 s, b 10 s, c 20 s; b was first admitted at 2 and evicted at 3. The simulator
    # admits a at 6, c at 9, b at 12, and evicts nothing.
    histories = [
        History(jobs[0], 0.0, (Attempt(5.0, 15.0, True),)),
        History(jobs[1], 0.0, (Attempt(2.0, 3.0, False, "InCohortFairSharing"), Attempt(10.0, 20.0, True))),
        History(jobs[2], 0.0, (Attempt(20.0, 30.0, True),)),
    ]
    outcome = Outcome(
        (Run(0, "gpu", 6.0, 16.0, True), Run(2, "gpu", 9.0, 19.0, True), Run(1, "gpu", 12.0, 22.0, True)), (), ()
    )
    fidelity = compare("lane", jobs, histories, outcome)
    # b's first admission (at 2, before a's at 5) orders it: Kueue's order is b, a, c; the
    # simulator's a, c, b: (b,a) and (b,c) swapped, (a,c) kept.
    assert (fidelity.pairs, fidelity.same_order) == (3, 1.0)
    assert (fidelity.real_preemptions, fidelity.simulated_preemptions) == (1, 0)
    assert fidelity.preemption_ratio == 0.0
    assert fidelity.kueue_latency_s == 0.0  # the simulator admitted none at once: no latency to measure
    assert [t.team for t in fidelity.teams] == ["t", "u"]
    assert fidelity.only_real == () and fidelity.only_simulated == ()


def test_observed_replays_the_trace_as_kueues_books_saw_it() -> None:
    jobs = [trace_job("a", "t", 0.0, duration=10.0), trace_job("b", "t", 1.0, duration=5.0), trace_job("c", "t", 2.0)]
    # a's Workload was created at 0.5 and held quota 12 s on its finished run; b's at 3.0 and 6 s;
    # c never finished and keeps its figures. b now comes after c.
    histories = [
        History(jobs[0], 0.5, (Attempt(1.0, 2.0, False, "InCohortReclamation"), Attempt(4.0, 16.0, True))),
        History(jobs[1], 3.0, (Attempt(3.5, 9.5, True),)),
    ]
    seen = observed(jobs, histories)
    assert [(j.name, j.arrival_s, j.duration_s) for j in seen] == [("a", 0.5, 12.0), ("c", 2.0, 10.0), ("b", 3.0, 6.0)]


def test_the_docs_state_the_bounds_the_forecast_prints() -> None:
    page = (ROOT / "docs" / "forecast.md").read_text()
    section = page.split("## Fidelity", 1)[1]
    bounds = section.split("<!-- fidelity: measured by the e2e tier; keep in step with MEASURED_ERROR -->", 1)[1]
    rows = dict(re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|$", bounds.split("\n\n", 1)[0], re.M))
    low, high = MEASURED_ERROR.preemptions
    assert rows["each team's p95 wait, from Kueue's p95"] == f"at most {MEASURED_ERROR.p95 * 100:.0f} points"
    assert rows["each team's median wait, from Kueue's median"] == f"at most {MEASURED_ERROR.median * 100:.0f} points"
    assert rows["waiting jobs admitted in Kueue's order"] == f"at least {MEASURED_ERROR.order * 100:.0f} %"
    assert rows["the simulator's preemptions ÷ Kueue's"] == f"{low:g} to {high:g}"
    seeds = re.search(r"seeds (\d+)-(\d+)", MEASURED_ERROR.measured_on)
    assert seeds and f"Measured on seeds {seeds[1]} to {seeds[2]}" in section
    assert (ROOT / "tests" / "e2e" / "queues" / "test_fidelity.py").is_file()
