"""The scheduling-outcome benchmark's pure parts: trace, metrics, targets, set-ups, report.

The benchmark itself runs control planes for minutes (`python -m bench.outcomes`); here each
function gets a hand-made input with an answer worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.outcomes import metrics, report, scenario, setups, throughput, trace
from bench.outcomes.metrics import CPU, GPU, JobRecord, Outcome, Sample
from bench.outcomes.trace import Pod, TeamLoad, TraceJob, TraceSpec
from components.kueue.crds import kueue_crds
from components.kueue.validate import validate_objects
from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

SPEC = TraceSpec(
    teams=(TeamLoad("a", 60, 0.0, 100.0, 0.5, 0.5), TeamLoad("b", 40, 50.0, 100.0, 0.2, 0.0)),
    gpu_pod=Pod(8000, 65536, 1),
    cpu_pod=Pod(2000, 4096),
    cpu_pods_max=3,
    seconds_per_hour=30.0,
)


# --- trace -----------------------------------------------------------------------------------------


def test_outcomes_trace_is_reproducible_from_its_seed() -> None:
    assert trace.generate(SPEC, 7) == trace.generate(SPEC, 7)
    assert trace.generate(SPEC, 7) != trace.generate(SPEC, 8)


def test_outcomes_trace_keeps_each_team_in_its_window_and_mix() -> None:
    jobs = trace.generate(SPEC, 3)
    a = [j for j in jobs if j.team == "a"]
    b = [j for j in jobs if j.team == "b"]
    assert all(0 <= j.arrival_s < 100 for j in a) and all(50 <= j.arrival_s < 100 for j in b)
    assert not any(j.is_gpu for j in b), "team b's gpu_fraction is 0"
    # Poisson counts: a expects 50 jobs, b expects 10; a generous band that a wrong rate misses.
    assert 30 <= len(a) <= 70 and 3 <= len(b) <= 20
    assert len({j.name for j in jobs}) == len(jobs)
    assert [j.arrival_s for j in jobs] == sorted(j.arrival_s for j in jobs)
    for j in jobs:
        assert 0.1 <= j.duration_s <= trace.cap_s(SPEC)
        assert (j.pod == SPEC.gpu_pod and j.pods in (1, 2, 4, 8)) or (j.pod == SPEC.cpu_pod and 1 <= j.pods <= 3)


def test_outcomes_trace_follows_the_philly_split_and_run_times() -> None:
    assert [trace.gpus_for(u) for u in (0.0, 0.69, 0.70, 0.79, 0.80, 0.94, 0.95, 0.999)] == [1, 1, 2, 2, 4, 4, 8, 8]
    # The median maps to Philly's 1,186 s, compressed at 30 s an hour: 9.9 s; the p90 to 12,860 s: 107.2 s.
    assert trace.philly_duration_s(0.5, SPEC) == pytest.approx(9.9, abs=0.05)
    assert trace.philly_duration_s(0.9, SPEC) == pytest.approx(107.2, abs=0.05)
    # No floor: the 1st percentile (1,186 s × e^(1.86 × -2.33) = 15.6 s) stays 0.1 s at 30 s an hour.
    assert trace.philly_duration_s(0.01, SPEC) == pytest.approx(0.1, abs=0.05)
    # Above the 95th percentile (25,275 s: 210.6 s here) every run time is the cap.
    assert trace.cap_s(SPEC) == pytest.approx(210.6, abs=0.05)
    assert trace.philly_duration_s(0.99, SPEC) == trace.philly_duration_s(0.951, SPEC) == round(trace.cap_s(SPEC), 1)
    share = sum(trace.gpus_for(i / 1000) == 1 for i in range(1000)) / 1000
    assert share == pytest.approx(0.70, abs=0.002)


def test_outcomes_trace_description_adds_up() -> None:
    jobs = [
        TraceJob("a-000", "a", 0.0, 10.0, 4, Pod(8000, 1024, 1)),
        TraceJob("a-001", "a", 1.0, 5.0, 2, Pod(2000, 1024)),
    ]
    described = trace.describe(jobs)
    assert described["jobs"] == 2 and described["pods"] == 6 and described["gangs"] == 2
    assert described["teams"] == {
        "a": {"jobs": 2, "gpu_jobs": 1, "gangs": 2, "gpu_seconds": 40.0, "cpu_seconds": 4 * 8 * 10 + 2 * 2 * 5}
    }


# --- metrics ---------------------------------------------------------------------------------------

CAPACITY = {GPU: 4.0, CPU: 8000.0}
SHARES = {"a": 0.5, "b": 0.5}


def test_outcomes_jain_and_percentiles_have_their_textbook_values() -> None:
    assert metrics.jain([1.0, 1.0]) == 1.0
    assert metrics.jain([1.0, 0.0]) == 0.5
    assert metrics.jain([2.0, 1.0]) == pytest.approx(0.9)
    assert metrics.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert metrics.percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    with pytest.raises(ValueError):
        metrics.percentile([], 50)


def test_outcomes_lower_bound_is_the_largest_of_work_longest_job_and_last_end() -> None:
    gpu_job = TraceJob("g", "a", 0.0, 10.0, 2, Pod(1000, 1024, 1))
    cpu_job = TraceJob("c", "a", 5.0, 30.0, 1, Pod(4000, 1024))
    # GPU work 20 GPU-s / 4 = 5 s; CPU work (20,000 + 120,000) m-s / 8,000 = 17.5 s; longest 30 s; last end 35 s.
    assert metrics.lower_bound([gpu_job, cpu_job], CAPACITY) == 35.0
    heavy = TraceJob("h", "a", 0.0, 10.0, 8, Pod(1000, 1024, 1))
    assert metrics.lower_bound([heavy, gpu_job], CAPACITY) == (80 + 20) / 4


def test_outcomes_owed_counts_only_waiting_jobs_that_fit_the_unused_share() -> None:
    assert metrics.owed(0.5, 0.1, [0.3, 0.2]) == pytest.approx(0.3)  # 0.2 fits the 0.4 left, then 0.3 does not
    assert metrics.owed(0.5, 0.1, [0.8]) == pytest.approx(0.1)  # larger than the promise: only borrowing runs it
    assert metrics.owed(0.5, 0.0, [0.25, 0.25, 0.25]) == pytest.approx(0.5)


def _history() -> list[Sample]:
    # 0-10 s: a holds 2 GPUs; b waits for one 1-GPU job (owed 0.25, holds 0). 10-20 s: both run, nobody waits.
    return [
        Sample(0.0, {"a": {GPU: 2.0}}, {"b": ((0.25, 10.0),)}, 0),
        Sample(10.0, {"a": {GPU: 2.0}, "b": {GPU: 1.0}}, {}, 0),
    ]


def test_outcomes_utilization_and_share_kept_from_a_known_history() -> None:
    samples = _history()
    assert metrics.utilization(samples, CAPACITY, GPU, 20.0) == pytest.approx((2 * 10 + 3 * 10) / (4 * 20))
    assert metrics.share_kept(samples, SHARES, CAPACITY, 20.0) == {"a": None, "b": 0.0}
    assert metrics.fairness(samples, SHARES, CAPACITY, 20.0) is None  # never two teams waiting


def test_outcomes_a_job_waiting_less_than_the_grace_is_the_controllers_not_the_queues() -> None:
    just_submitted = [
        Sample(0.0, {"a": {GPU: 2.0}}, {"b": ((0.25, metrics.WAIT_GRACE_S - 0.5),)}, 0),
        Sample(10.0, {"a": {GPU: 2.0}, "b": {GPU: 1.0}}, {}, 0),
    ]
    assert metrics.share_kept(just_submitted, SHARES, CAPACITY, 20.0) == {"a": None, "b": None}


def test_outcomes_a_partially_started_gang_counts_as_held_not_working() -> None:
    samples = [
        Sample(0.0, {"a": {GPU: 3.0}}, {"a": ((0.5, 10.0),)}, 1, frozenset({"a-gang"}), {GPU: 3.0}),
        Sample(5.0, {"a": {GPU: 4.0}}, {}, 0),
    ]
    assert metrics.utilization(samples, CAPACITY, GPU, 10.0) == pytest.approx(4 * 5 / (4 * 10))


def test_outcomes_fairness_is_jain_over_share_normalized_holdings_of_waiting_teams() -> None:
    samples = [
        Sample(0.0, {"a": {GPU: 3.0}, "b": {GPU: 1.0}}, {"a": ((0.25, 10.0),), "b": ((0.25, 10.0),)}, 0),
        Sample(10.0, {"a": {GPU: 2.0}, "b": {GPU: 2.0}}, {"a": ((0.25, 10.0),), "b": ((0.25, 10.0),)}, 0),
    ]
    # x = 0.75/0.5, 0.25/0.5 = 1.5, 0.5 -> Jain 4 / (2 * 2.5) = 0.8; then 1, 1 -> 1. Time-weighted: 0.9.
    assert metrics.fairness(samples, SHARES, CAPACITY, 20.0) == pytest.approx(0.9)
    kept = metrics.share_kept(samples, SHARES, CAPACITY, 20.0)
    assert kept["a"] == 1.0 and kept["b"] == pytest.approx((0.5 * 10 + 1.0 * 10) / 20)


def test_outcomes_outcome_reports_delays_makespan_and_unschedulable_pod_seconds() -> None:
    jobs = [
        TraceJob("a-000", "a", 0.0, 10.0, 2, Pod(1000, 1024, 1)),
        TraceJob("b-000", "b", 0.0, 10.0, 1, Pod(1000, 1024, 1)),
    ]
    records = [JobRecord("a-000", "a", 0.0, 0.0, 10.0), JobRecord("b-000", "b", 0.0, 10.0, 20.0)]
    samples = [Sample(0.0, {"a": {GPU: 2.0}}, {"b": ((0.25, 10.0),)}, 2), Sample(10.0, {"b": {GPU: 1.0}}, {}, 0)]
    o = metrics.outcome("x", jobs, records, samples, CAPACITY, SHARES, {"InCohortReclamation": 1})
    assert o.makespan_s == 20.0 and o.unfinished == 0 and o.lower_bound_s == 10.0
    assert o.delay_s == {"a": (0.0, 0.0), "b": (10.0, 10.0)}
    assert o.unschedulable_pod_seconds == 20.0  # two pods for 10 s
    assert o.preemptions == 1 and o.gpu_utilization == pytest.approx((2 * 10 + 1 * 10) / (4 * 20), abs=0.001)
    unfinished = metrics.outcome(
        "y", jobs, [records[0], JobRecord("b-000", "b", 0.0, None, None)], samples, CAPACITY, SHARES, {}
    )
    assert unfinished.makespan_s is None and unfinished.unfinished == 1
    assert unfinished.delay_s["b"] == (10.0, 10.0), "a job never started waits until the run's end"


def _outcome(setup: str, **changes: Any) -> Outcome:
    base: dict[str, Any] = dict(
        setup=setup,
        gpu_utilization=0.9,
        cpu_utilization=0.5,
        makespan_s=110.0,
        lower_bound_s=100.0,
        delay_s={},
        share_kept={"a": 0.95, "b": None},
        fairness=0.95,
        unschedulable_pod_seconds=0.0,
        partial_gangs=0,
        preemptions=0,
        unfinished=0,
    )
    return Outcome(**{**base, **changes})


def test_outcomes_pod_tier_targets_pass_when_the_program_meets_every_one() -> None:
    ours = _outcome("kueue-aks")
    others = [_outcome("no-kueue", makespan_s=None, unfinished=3, fairness=None, unschedulable_pod_seconds=90.0)]
    assert metrics.missed_targets([ours, *others], "kueue-aks") == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"unschedulable_pod_seconds": 3.5}, "3.5 admitted-but-unschedulable pod-seconds"),
        ({"partial_gangs": 1}, "1 partially started gang"),
        ({"makespan_s": None, "unfinished": 2}, "2 job(s) never finished"),
    ],
)
def test_outcomes_each_missed_pod_tier_target_is_named(changes: dict[str, Any], expected: str) -> None:
    missed = metrics.missed_targets([_outcome("kueue-aks", **changes), _outcome("single-queue")], "kueue-aks")
    assert len(missed) == 1 and expected in missed[0], missed


# --- set-ups ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def config() -> Any:
    return scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))


def test_outcomes_hand_written_setups_type_quotas_from_raw_vm_sizes(config: Any) -> None:
    by_name = {s.name: s for s in setups.setups(config, str(KUEUE_CHART_FILE))}
    assert list(by_name) == list(setups.SETUPS)
    cq = next(o for o in by_name["single-queue"].objects if o["kind"] == "ClusterQueue")
    quotas = {r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    # 8 × D16s_v5 (16 vCPU, 64 GiB) + 24 × NC24ads_A100_v4 (24 vCPU, 220 GiB, 1 GPU), as Azure lists them.
    assert quotas == {"cpu": 8 * 16 + 24 * 24, "memory": f"{8 * 64 + 24 * 220}Gi", "nvidia.com/gpu": 24}
    team_cqs = [o for o in by_name["team-quotas"].objects if o["kind"] == "ClusterQueue"]
    gpus = [cq["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0] for cq in team_cqs]
    assert [g["nominalQuota"] for g in gpus] == [12, 7, 5] and all(
        g["borrowingLimit"] == g["nominalQuota"] for g in gpus
    )
    assert {cq["spec"]["cohortName"] for cq in team_cqs} == {"shared-cohort"}
    assert by_name["no-kueue"].helm_values is None and by_name["kueue-aks"].program


def test_outcomes_every_setup_object_is_valid_for_the_pinned_kueue(config: Any) -> None:
    crds = kueue_crds(config.kueue.chart, config.kueue.version).crds
    assert crds is not None
    for setup in setups.setups(config, str(KUEUE_CHART_FILE)):
        assert validate_objects(setup.objects, crds=crds) == [], setup.name
    assert validate_objects(throughput.baseline_objects()[0], crds=crds) == []


def test_outcomes_guide_values_keep_the_chart_defaults_with_the_guides_gates_and_frameworks() -> None:
    values = setups.guide_values(str(KUEUE_CHART_FILE))
    assert {g["name"] for g in values["controllerManager"]["featureGates"]} == {
        "TopologyAwareScheduling",
        "LocalQueueMetrics",
    }
    manager = __import__("yaml").safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert manager["integrations"]["frameworks"] == list(setups.GUIDE_FRAMEWORKS)
    assert manager["kind"] == "Configuration" and "fairSharing" not in manager


def test_outcomes_jobs_carry_their_queue_run_time_and_the_users_toleration(config: Any) -> None:
    by_name = {s.name: s for s in setups.setups(config, str(KUEUE_CHART_FILE))}
    gang = TraceJob("speech-001", "speech", 1.0, 12.5, 4, scenario.TRACE.gpu_pod)
    ours, hand, bare = (setups.job_object(gang, by_name[n]) for n in ("kueue-aks", "team-quotas", "no-kueue"))
    assert ours["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert "tolerations" not in ours["spec"]["template"]["spec"], "the program's flavors add them"
    assert hand["spec"]["template"]["spec"]["tolerations"] == [setups.GPU_TOLERATION]
    assert hand["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "speech-queue"
    assert "kueue.x-k8s.io/queue-name" not in bare["metadata"]["labels"]
    assert ours["spec"]["parallelism"] == ours["spec"]["completions"] == 4
    assert ours["spec"]["template"]["metadata"]["annotations"][setups.RUN_FOR_ANNOTATION] == "12.5s"
    assert ours["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"


def test_outcomes_capacity_is_allocatable_not_raw(config: Any) -> None:
    capacity = setups.capacity_of(config)
    assert capacity[GPU] == 24
    # Every user node's CPU: 8 × D16s_v5 and 24 × NC24ads_A100_v4, each below its vCPUs after AKS's reservation.
    assert 8 * 15_000 + 24 * 23_000 < capacity[CPU] < 8 * 16_000 + 24 * 24_000


# --- throughput ------------------------------------------------------------------------------------


def test_outcomes_throughput_schedule_keeps_the_baseline_mix_and_pace() -> None:
    plan = throughput.schedule([("n1", "lq"), ("n2", "lq")], throughput.BASELINE_CLASSES, 100)
    assert len(plan) == 100
    counts = {c.name: sum(1 for p in plan if p[3] is c) for c in throughput.BASELINE_CLASSES}
    assert counts == {"small": 70, "medium": 20, "large": 10}
    smalls = sorted(p[0] for p in plan if p[1] == "n1" and p[3].name == "small")
    assert smalls[:3] == [0.0, pytest.approx(0.1), pytest.approx(0.2)]
    objects, queues = throughput.baseline_objects()
    assert len(queues) == 30 and sum(o["kind"] == "ClusterQueue" for o in objects) == 30


# --- report ----------------------------------------------------------------------------------------


def test_outcomes_report_table_json_and_picture(tmp_path: Path) -> None:
    outcomes = [
        _outcome("kueue-aks", delay_s={"a": (1.0, 2.0)}, timeline=((0.0, 0.5, 0.2), (1.0, 1.0, 0.3))),
        _outcome(
            "no-kueue",
            makespan_s=None,
            unfinished=2,
            fairness=None,
            delay_s={"a": (3.0, 9.0)},
            timeline=((0.0, 0.1, 0.1),),
        ),
    ]
    text = report.table(
        outcomes,
        {
            "shapes": [
                {
                    "name": "kueue-baseline",
                    "queues": 30,
                    "workloads": 10,
                    "not_admitted": 1,
                    "admitted_per_second": 5.0,
                    "time_to_admission_p50_s": 0.1,
                    "time_to_admission_p95_s": 0.4,
                }
            ]
        },
    )
    lines = text.splitlines()
    assert lines[2].startswith("| kueue-aks | 90% | 50% | 110 / 100.0 | 0 | 0.95 | 1 / 2, 95% |")
    assert "| no-kueue |" in lines[3] and "n/a / 100.0 | 2 | n/a" in lines[3]
    assert "| kueue-baseline | 30 | 10 (1) | 5.0 | 0.1 / 0.4 |" in text
    json.dumps(report.sample_json(Sample(1.0, {"a": {GPU: 1.0}}, {"a": ((0.5, 10.0),)}, 0, frozenset({"x"}))))
    png = tmp_path / "o.png"
    report.picture(outcomes, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
