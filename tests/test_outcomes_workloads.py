"""The Workload-level tier's pure parts: offered load, lanes, attempts, intervals and targets.

The tier itself runs Kueue for minutes (`python -m bench.outcomes`); here each function gets a
hand-made input whose answer is worked out in the comments.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
from typing import Any

import pytest

from bench.outcomes import scenario, setups, stats, sweep, trace
from bench.outcomes.attempts import Attempt, History, LaneOutcome, isolated_jct, lane_outcome
from bench.outcomes.lanes import lane_name, lane_objects, lanes_objects
from bench.outcomes.metrics import CPU, GPU
from bench.outcomes.trace import Pod, TraceJob
from bench.outcomes.workloads import Planned, Runner, _Job, finished, unreserved, workload_object
from components.k8s.quantity import parse_quantity
from components.kueue.crds import kueue_crds
from components.kueue.validate import validate_objects
from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE


@pytest.fixture(scope="module")
def config() -> Any:
    return scenario.stack_config(str(KUEUE_CHART_FILE), str(DEVICE_PLUGIN_CHART_FILE))


@pytest.fixture(scope="module")
def all_setups(config: Any) -> dict[str, setups.Setup]:
    return {s.name: s for s in setups.setups(config, str(KUEUE_CHART_FILE))}


# --- the trace's run times and offered load --------------------------------------------------------


def test_outcomes_mean_run_time_is_the_capped_log_normals() -> None:
    spec = sweep.trace_spec(0.9, 24)
    rng = random.Random(1)
    drawn = [trace.philly_duration_s(rng.random(), spec) for _ in range(40_000)]
    # The closed form against 40,000 draws: within 2 % (the draws' standard error is about 1 %).
    assert statistics.fmean(drawn) == pytest.approx(trace.mean_duration_s(spec), rel=0.02)
    assert sum(d >= round(trace.cap_s(spec), 1) for d in drawn) / len(drawn) == pytest.approx(0.05, abs=0.005)


@pytest.mark.parametrize("load", sweep.LOADS)
def test_outcomes_a_trace_at_a_load_brings_that_much_gpu_work(load: float) -> None:
    spec = sweep.trace_spec(load, 24)
    assert trace.offered_load(spec, 24) == pytest.approx(load)
    # The teams keep their windows and their proportions.
    w = sweep.WINDOW_S
    assert [(t.name, t.start_s, t.end_s) for t in spec.teams] == [
        ("vision", 0.0, w),
        ("speech", pytest.approx(0.4 * w), w),
        ("research", 0.0, w),
    ]
    rates = {t.name: t.rate_per_s for t in spec.teams}
    assert rates["research"] == pytest.approx(2 * rates["vision"]) and rates["speech"] == pytest.approx(rates["vision"])
    # Realized over many seeds, the GPU work per second of window ÷ 24 GPUs is the load.
    realized = statistics.fmean(
        sum(j.gpus * j.duration_s for j in trace.generate(spec, s)) / (w * 24) for s in range(200)
    )
    assert realized == pytest.approx(load, rel=0.1)


def test_outcomes_description_reports_the_cap_and_the_clipped_fraction() -> None:
    spec = sweep.trace_spec(1.1, 24)
    described = trace.describe(trace.generate(spec, 25), spec)
    # Philly's 95th percentile, 25,275 s, at 10 s an hour.
    assert sweep.SECONDS_PER_HOUR == 10.0
    assert described["cap_s"] == round(trace.cap_s(spec), 1) == pytest.approx(70.2, abs=0.05)
    assert 0.0 <= described["clipped"] <= 0.12 and described["median_s"] < 10


# --- lanes -----------------------------------------------------------------------------------------


def _names(objects: list[dict[str, Any]], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in objects if o["kind"] == kind}


@pytest.mark.parametrize("setup", ["kueue-aks", "single-queue", "team-quotas"])
def test_outcomes_lanes_share_no_queue_cohort_or_namespace(all_setups: dict[str, setups.Setup], setup: str) -> None:
    objects = all_setups[setup].objects
    a, b = lane_objects(objects, "s1-l070"), lane_objects(objects, "s2-l070")
    for kind in ("Namespace", "ClusterQueue", "Cohort"):
        assert not _names(a, kind) & _names(b, kind), kind
        assert all(n.startswith("s1-l070-") for n in _names(a, kind)), kind
    namespaces = _names(a, "Namespace")
    queues = _names(a, "ClusterQueue")
    cohorts = _names(a, "Cohort") | {
        o["spec"]["cohortName"] for o in a if o["kind"] == "ClusterQueue" and o["spec"].get("cohortName")
    }
    for o in a:
        if o["kind"] == "LocalQueue":
            assert o["metadata"]["namespace"] in namespaces and o["spec"]["clusterQueue"] in queues
        if o["kind"] == "ClusterQueue" and o["spec"].get("cohortName"):
            assert o["spec"]["cohortName"] in cohorts and o["spec"]["cohortName"].startswith("s1-l070-")
        if o["kind"] == "ClusterQueue":  # a selector picks the lane's namespaces, never another lane's
            selector = o["spec"].get("namespaceSelector") or {}
            for value in (selector.get("matchLabels") or {}).values():
                assert value in namespaces or value not in {n.split("-", 2)[-1] for n in namespaces}
    # Every LocalQueue of the set-up has its copy; a lane's namespace keeps its labels, renamed.
    assert sum(o["kind"] == "LocalQueue" for o in a) == sum(o["kind"] == "LocalQueue" for o in objects)
    if setup == "kueue-aks":
        vision = next(o for o in a if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "s1-l070-vision")
        assert vision["spec"]["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/team": "s1-l070-vision"}}
        ns = next(o for o in a if o["kind"] == "Namespace" and o["metadata"]["name"] == "s1-l070-vision")
        assert ns["metadata"]["labels"]["kueue-aks.io/team"] == "s1-l070-vision"


def test_outcomes_lanes_objects_are_valid_for_the_pinned_kueue_and_share_the_flavors(
    config: Any, all_setups: dict[str, setups.Setup]
) -> None:
    crds = kueue_crds(config.kueue.chart, config.kueue.version).crds
    assert crds is not None
    for setup in ("kueue-aks", "single-queue", "team-quotas"):
        objects = lanes_objects(all_setups[setup].objects, ["s1-l070", "s2-l110"])
        assert validate_objects(objects, crds=crds) == [], setup
        flavors = [o for o in objects if o["kind"] == "ResourceFlavor"]
        assert len(flavors) == len(_names(flavors, "ResourceFlavor")), "shared objects come once"
    assert lane_name(25, 0.9) == "s25-l090" and lane_name(3, 1.1) == "s3-l110"


def test_outcomes_a_kind_lanes_cannot_copy_is_an_error_not_dropped() -> None:
    with pytest.raises(ValueError, match="Secret"):
        lane_objects([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "a"}}], "s1-l070")


# --- the runner's objects --------------------------------------------------------------------------


def test_outcomes_a_workload_is_the_jobs_pod_set_in_the_lanes_namespace(
    config: Any, all_setups: dict[str, setups.Setup]
) -> None:
    gang = TraceJob("vision-004", "vision", 3.0, 12.5, 4, scenario.TRACE.gpu_pod)
    wl = workload_object(gang, all_setups["team-quotas"], "s25-l090")
    assert wl["metadata"]["namespace"] == "s25-l090-vision" and wl["spec"]["queueName"] == "vision-queue"
    (pod_set,) = wl["spec"]["podSets"]
    assert pod_set["count"] == 4
    assert pod_set["template"]["spec"]["tolerations"] == [setups.GPU_TOLERATION]
    assert pod_set["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    crds = kueue_crds(config.kueue.chart, config.kueue.version).crds
    assert validate_objects([wl], crds=crds) == []


def test_outcomes_an_eviction_ends_as_a_job_controller_ends_it() -> None:
    wl = {
        "metadata": {"resourceVersion": "42"},
        "status": {
            "admission": {"clusterQueue": "x"},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
                {"type": "Evicted", "status": "True", "reason": "Preempted"},
            ],
        },
    }
    patch = unreserved(wl)
    assert patch["metadata"] == {"resourceVersion": "42"} and patch["status"]["admission"] is None
    by_type = {c["type"]: c for c in patch["status"]["conditions"]}
    assert by_type["QuotaReserved"]["status"] == "False" and by_type["QuotaReserved"]["reason"] == "Pending"
    assert by_type["Admitted"]["status"] == "False" and by_type["Evicted"]["status"] == "True"
    done = finished(wl)
    assert done["metadata"] == {"resourceVersion": "42"}
    assert [c["type"] for c in done["status"]["conditions"]] == ["QuotaReserved", "Admitted", "Evicted", "Finished"]


def test_outcomes_a_workload_is_finished_only_on_a_version_seen_while_it_ran() -> None:
    # The race seen in a sweep: the run time passed, the finish patch waited for a free patcher,
    # the watch meanwhile saw Kueue evict the Workload; a patch on that evicted version succeeds
    # and ends the job in Kueue's books while the runner waits for it to run again.
    job = _Job(Planned(0.0, "l", TraceJob("research-000", "research", 0.0, 2.0, 1, GPU_POD)))
    running = {"status": {"conditions": [{"type": "Admitted", "status": "True"}]}}
    evicted = {
        "status": {"conditions": [{"type": "Admitted", "status": "True"}, {"type": "Evicted", "status": "True"}]}
    }
    assert not job.running(0)  # never admitted
    job.open, job.last = 1.0, running
    assert job.running(0) and not job.running(1)  # attempt 0 holds quota; attempt 1 does not exist
    job.last = evicted
    assert not job.running(0)  # the eviction seen, not yet recorded as an attempt
    job.attempts.append(Attempt(1.0, 2.5, False, "InCohortFairSharing"))
    job.open = None
    assert not job.running(0) and not job.running(1)
    job.open, job.last = 3.0, running  # admitted again: Kueue set Evicted back to False
    assert job.running(1) and not job.running(0)


def test_outcomes_a_version_from_before_the_finish_opens_no_new_attempt() -> None:
    # Seen in a sweep: the finish patch returned, then the watch brought an earlier version of the
    # Workload, admitted and not yet Finished, and the runner counted a second run that never ended.
    planned = Planned(0.0, "s1-l070", TraceJob("vision-016", "vision", 0.0, 2.4, 2, GPU_POD))
    runner = Runner(None, None, [planned])  # type: ignore[arg-type]  # no request is made here
    key = "s1-l070-vision/vision-016"
    stale = {
        "metadata": {"namespace": "s1-l070-vision", "name": "vision-016", "resourceVersion": "7"},
        "status": {
            "admission": {"clusterQueue": "x"},
            "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
        },
    }
    runner.jobs[key].attempts.append(Attempt(1.0, 3.4, True))
    runner._seen(stale)
    assert runner.jobs[key].open is None and len(runner.jobs[key].attempts) == 1
    runner.close()


def _version(rv: str, evicted: bool) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "s1-l110-vision", "name": "vision-048", "resourceVersion": rv},
        "status": {
            "admission": {"clusterQueue": "x"},
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
                {"type": "Evicted", "status": "True" if evicted else "False"},
            ],
        },
    }


def test_outcomes_an_eviction_seen_while_one_was_being_ended_is_ended_too() -> None:
    # Seen in a sweep (Kueue's log): an admission and a preemption of one Workload crossed in one
    # scheduling cycle. The runner's patch on the evicted version conflicted, the version it read
    # then was not evicted, and the eviction written right after came while the runner was still
    # ending the first, so it was passed over: the Workload held its quota, evicted, to the end.
    planned = Planned(0.0, "s1-l110", TraceJob("vision-048", "vision", 0.0, 22.2, 1, GPU_POD))
    key = "s1-l110-vision/vision-048"
    patched: list[str] = []

    class FakeApi:
        def request(self, method: str, path: str, body: Any = None, content_type: str = "") -> tuple[int, Any]:
            if method == "GET":  # the version in between; meanwhile the watch brings the next eviction
                runner._seen(_version("7", evicted=True))
                return 200, _version("6", evicted=False)
            patched.append(body["metadata"]["resourceVersion"])
            return (409, {}) if body["metadata"]["resourceVersion"] == "5" else (200, {})

    runner = Runner(lambda: FakeApi(), None, [planned])  # type: ignore[arg-type]
    runner.jobs[key].open = 1.0
    runner._seen(_version("5", evicted=True))  # the watch: evicted, the attempt ends, the patch starts
    deadline = time.monotonic() + 10
    while patched != ["5", "7"] and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.close()
    assert patched == ["5", "7"] and runner.errors == [], (patched, runner.errors)
    assert [a.reason for a in runner.jobs[key].attempts] == [""]


# --- attempts and a lane's figures -----------------------------------------------------------------

CAPACITY = {GPU: 4.0, CPU: 8000.0}
GPU_POD = Pod(1000, 1024, 1)


def test_outcomes_isolated_jct_is_fifo_on_the_share() -> None:
    jobs = [
        TraceJob("a", "t", 0.0, 10.0, 2, GPU_POD),
        TraceJob("b", "t", 1.0, 5.0, 2, GPU_POD),
        TraceJob("c", "t", 2.0, 1.0, 1, GPU_POD),
        TraceJob("big", "t", 3.0, 2.0, 4, GPU_POD),
    ]
    # On 2 GPUs: a runs 0-10; b waits for it, 10-15; c (1 GPU) may not pass b, starts 15, ends 16;
    # big (4 GPUs, more than the share) runs alone once c is done: 16-18.
    assert isolated_jct(jobs, {GPU: 2.0, CPU: 8000.0}) == {"a": 10.0, "b": 14.0, "c": 14.0, "big": 15.0}


def test_outcomes_a_lane_counts_every_re_wait_and_the_work_thrown_away() -> None:
    a = TraceJob("a-000", "a", 0.0, 10.0, 2, GPU_POD)
    b = TraceJob("b-000", "b", 0.0, 4.0, 2, GPU_POD)
    histories = [
        # a: admitted at 0, evicted at 3 (6 GPU-s thrown away), admitted again at 5, done at 15.
        History(a, 0.0, (Attempt(0.0, 3.0, False, "InCohortReclamation"), Attempt(5.0, 15.0, True))),
        History(b, 0.0, (Attempt(3.0, 7.0, True),)),
    ]
    o = lane_outcome("x", 1, 0.9, histories, CAPACITY, {"a": 0.5, "b": 0.5}, 20.0)
    assert o.makespan_s == 15.0 and o.unfinished == 0 and o.preemptions == 1
    assert o.preemption_causes == {"InCohortReclamation": 1} and o.wasted_gpu_s == 6.0
    assert o.jct_s["a"] == (15.0, 15.0) and o.jct_s["b"] == (7.0, 7.0)
    # a held quota 3 + 10 of its 15 s: it waited 2 s (the re-wait); b waited 3 s.
    assert o.wait_s["a"] == (2.0, 2.0) and o.wait_s["b"] == (3.0, 3.0)
    # Useful GPU work (2 × 10 + 2 × 4) ÷ (4 GPUs × 15 s); the thrown-away run does not count.
    assert o.gpu_utilization == pytest.approx(28 / 60, abs=0.001)
    # Alone on 2 GPUs each would finish in its run time: rho = 15 / 10 and 7 / 4.
    assert o.rho == {"a": 1.5, "b": 1.75} and o.worst_rho == 1.75
    # b waited from 0 to 3 while a held 2 of 4 GPUs; b was owed its half and held nothing.
    assert o.share_kept["b"] == 0.0
    never = lane_outcome("x", 1, 0.9, [History(a, 0.0, ())], CAPACITY, {"a": 0.5}, 20.0)
    assert never.makespan_s is None and never.unfinished == 1 and never.jct_s["a"] == (20.0, 20.0)


# --- intervals and targets -------------------------------------------------------------------------


def test_outcomes_intervals_and_paired_comparisons() -> None:
    assert stats.interval([5.0, 5.0, 5.0]) == stats.Interval(5.0, 5.0, 5.0, 3)
    # Mean 3, standard deviation sqrt(2.5), t(4) = 2.776: 3 ± 2.776 × 1.5811 / sqrt(5) = 3 ± 1.963.
    spread = stats.interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (
        spread.mean == 3.0
        and spread.low == pytest.approx(1.037, abs=0.001)
        and spread.high == pytest.approx(4.963, abs=0.001)
    )
    one = stats.interval([7.0])  # one seed: no interval, so never ahead and never behind
    assert one.mean == 7.0 and one.low == -math.inf and one.high == math.inf
    assert not stats.ahead([1.0], [9.0]) and stats.not_behind([9.0], [1.0])
    # Paired by seed: always 1 lower is ahead, even though the two sets of values overlap.
    assert stats.ahead([10.0, 20.0, 30.0], [11.0, 21.0, 31.0])
    assert not stats.ahead([10.0, 22.0, 30.0], [11.0, 21.0, 31.0]), "one seed the other way: within the noise"
    assert stats.not_behind([10.0, 22.0, 30.0], [11.0, 21.0, 31.0])
    assert not stats.not_behind([12.0, 23.0, 33.0], [11.0, 21.0, 31.0])
    with pytest.raises(ValueError):
        stats.paired([1.0], [1.0, 2.0])


def _lane(setup: str, seed: int, load: float, **changes: Any) -> LaneOutcome:
    base: dict[str, Any] = dict(
        setup=setup,
        seed=seed,
        load=load,
        jobs=10,
        unfinished=0,
        makespan_s=100.0 + seed,
        lower_bound_s=90.0,
        gpu_utilization=0.8,
        cpu_utilization=0.3,
        wasted_gpu_s=0.0,
        preemptions=0,
        jct_s={},
        wait_s={},
        rho={"a": 1.0},
        worst_rho=1.0 + seed / 100,
        share_kept={"a": 0.95},
        jain=0.9,
    )
    return LaneOutcome(**{**base, **changes})


def test_outcomes_sweep_targets_hold_and_each_miss_is_named() -> None:
    ours = [_lane("kueue-aks", s, 0.9) for s in (1, 2, 3)]
    single = [_lane("single-queue", s, 0.9, makespan_s=101.0 + s, worst_rho=1.5 + s / 100) for s in (1, 2, 3)]
    assert sweep.missed_targets(ours + single, "kueue-aks", "single-queue") == []
    slower = [_lane("kueue-aks", s, 0.9, makespan_s=110.0 + s) for s in (1, 2, 3)]
    assert any(
        "makespan behind single-queue" in m for m in sweep.missed_targets(slower + single, "kueue-aks", "single-queue")
    )
    unfair = [_lane("kueue-aks", s, 0.9, worst_rho=1.6 + s / 100) for s in (1, 2, 3)]
    assert any(
        "fairness not ahead of single-queue" in m
        for m in sweep.missed_targets(unfair + single, "kueue-aks", "single-queue")
    )
    starved = [_lane("kueue-aks", s, 0.9, share_kept={"a": 0.5}) for s in (1, 2, 3)]
    assert any(
        "kept 50% of its share" in m for m in sweep.missed_targets(starved + single, "kueue-aks", "single-queue")
    )
    text = sweep.table(ours + single)
    assert "| kueue-aks | 0.9 | 3 | 102.0 [" in text and "| single-queue | 0.9 | 3 | 103.0 [" in text


def test_outcomes_the_plan_staggers_loads_and_keeps_each_lanes_arrivals() -> None:
    lanes = sweep.traces([1, 2], [0.7, 1.1], 24)
    assert set(lanes) == {"s1-l070", "s2-l070", "s1-l110", "s2-l110"}
    planned = sweep.plan(lanes, [0.7, 1.1])
    assert len(planned) == sum(len(jobs) for _, _, jobs in lanes.values())
    offsets = {p.lane: p.offset_s for p in planned}
    assert offsets == {"s1-l070": 0.0, "s2-l070": 0.0, "s1-l110": sweep.STAGGER_S, "s2-l110": sweep.STAGGER_S}
    assert [p.at_s for p in planned] == sorted(p.at_s for p in planned)


# --- the program's variants for the A/B ------------------------------------------------------------


def _queue_resources(setup: setups.Setup) -> list[tuple[str, dict[str, Any]]]:
    """(ClusterQueue name, one of its flavors' resources) for every resource of every queue."""
    return [
        (q["metadata"]["name"], r)
        for q in setup.objects
        if q["kind"] == "ClusterQueue"
        for g in q["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
    ]


def _quota_sums(objects: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    total: dict[tuple[str, str], Any] = {}
    for o in objects:
        if o["kind"] in ("ClusterQueue", "Cohort"):
            for g in o["spec"].get("resourceGroups") or []:
                for f in g["flavors"]:
                    for r in f["resources"]:
                        key = (f["name"], r["name"])
                        total[key] = total.get(key, 0) + parse_quantity(r["nominalQuota"])
    return total


def test_outcomes_variants_are_valid_for_the_pinned_kueue_and_keep_every_quota(
    config: Any, all_setups: dict[str, setups.Setup]
) -> None:
    from bench.outcomes import variants

    crds = kueue_crds(config.kueue.chart, config.kueue.version).crds
    program = all_setups["kueue-aks"]
    built = {s.name: s for s in variants.variants(program)}
    assert set(built) == {f"kueue-aks+{v}" for v in variants.VARIANTS}
    for name, setup in built.items():
        assert validate_objects(lanes_objects(setup.objects, ["s1-l070"]), crds=crds) == [], name
        # Nothing of the pools' capacity is lost or added: the quotas sum to the program's.
        assert _quota_sums(list(setup.objects)) == _quota_sums(list(program.objects)), name
    split = built["kueue-aks+split"]
    queues = {o["metadata"]["name"]: o for o in split.objects if o["kind"] == "ClusterQueue"}
    assert set(queues) == {"vision", "vision-gpu", "speech", "speech-gpu", "research", "research-gpu"}
    assert [f["name"] for f in queues["vision"]["spec"]["resourceGroups"][0]["flavors"]] == ["cpu", "gpu"]
    assert all(
        r["nominalQuota"] == "0" for r in queues["vision"]["spec"]["resourceGroups"][0]["flavors"][1]["resources"]
    )
    assert [f["name"] for f in queues["vision-gpu"]["spec"]["resourceGroups"][0]["flavors"]] == ["gpu"]
    gang = TraceJob("vision-004", "vision", 3.0, 12.5, 4, scenario.TRACE.gpu_pod)
    cpu_job = TraceJob("vision-005", "vision", 3.0, 12.5, 2, scenario.TRACE.cpu_pod)
    assert split.queue_for(gang) == "gpu" and split.queue_for(cpu_job) == "default"
    assert program.queue_for(gang) == program.queue_for(cpu_job) == "default"
    gates = {
        g["name"]: g["enabled"] for g in built["kueue-aks+preemptor"].helm_values["controllerManager"]["featureGates"]
    }
    assert gates["PrioritizePreemptorWorkloads"] is True
    afs = built["kueue-aks+afs"]
    (shared,) = [o for o in afs.objects if o["kind"] == "ClusterQueue"]
    assert shared["spec"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    weights = {
        o["metadata"]["namespace"]: o["spec"]["fairSharing"]["weight"] for o in afs.objects if o["kind"] == "LocalQueue"
    }
    assert weights == {"vision": "500m", "speech": "300m", "research": "200m"}
    for name in ("kueue-aks+limit", "kueue-aks+classical-limit"):
        for queue, r in _queue_resources(built[name]):
            assert r.get("borrowingLimit") == (r["nominalQuota"] if parse_quantity(r["nominalQuota"]) else None), (
                name,
                queue,
            )
    again = built["kueue-aks+again"]  # the A/A control: the program itself under another name
    assert (again.objects, again.helm_values, again.gpu_queues) == (
        program.objects,
        program.helm_values,
        program.gpu_queues,
    )
    for queue, r in _queue_resources(built["kueue-aks+limit-2x"]):
        assert parse_quantity(r.get("borrowingLimit", "0")) == 2 * parse_quantity(r["nominalQuota"]), (queue, r)
    for queue, r in _queue_resources(built["kueue-aks+limit-1.5x"]):
        limit, nominal = parse_quantity(r.get("borrowingLimit", "0")), parse_quantity(r["nominalQuota"])
        if r["name"] == "nvidia.com/gpu":  # whole devices, rounded down: 7 GPUs -> 10, not 10.5
            assert limit == int(nominal * 3 / 2), (queue, r)
        else:
            assert limit == nominal * 3 / 2, (queue, r)
    combined = built["kueue-aks+split-preemptor-limit"]
    queues = {o["metadata"]["name"]: o for o in combined.objects if o["kind"] == "ClusterQueue"}
    assert set(queues) == {"vision", "vision-gpu", "speech", "speech-gpu", "research", "research-gpu"}
    # The CPU queue's zero GPU quota gets no limit: its CPU jobs still borrow GPU nodes.
    (cpu_flavor, gpu_flavor) = queues["vision"]["spec"]["resourceGroups"][0]["flavors"]
    assert all("borrowingLimit" not in r for r in gpu_flavor["resources"])
    assert all(
        r.get("borrowingLimit") == (r["nominalQuota"] if parse_quantity(r["nominalQuota"]) else None)
        for r in cpu_flavor["resources"]
    )
    assert {g["name"]: g["enabled"] for g in combined.helm_values["controllerManager"]["featureGates"]}[
        "PrioritizePreemptorWorkloads"
    ] is True
    assert combined.queue_for(gang) == "gpu"
    import yaml

    assert "fairSharing" not in yaml.safe_load(
        built["kueue-aks+classical-limit"].helm_values["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert "fairSharing" in yaml.safe_load(
        built["kueue-aks+limit"].helm_values["managerConfig"]["controllerManagerConfigYaml"]
    )
    for name, key, expected in (
        ("kueue-aks+afs", "admissionFairSharing", {"usageHalfLifeTime": "30s", "usageSamplingInterval": "1s"}),
        (
            "kueue-aks+strategies",
            "fairSharing",
            {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        ),
    ):
        manager = yaml.safe_load(built[name].helm_values["managerConfig"]["controllerManagerConfigYaml"])
        assert manager[key] == expected, name


# --- the diagnosis ---------------------------------------------------------------------------------


def test_outcomes_diagnosis_reads_each_no_candidates_beside_the_teams_books() -> None:
    from bench.outcomes import diagnose

    started = 1_800_000_000.0

    def at(seconds: float) -> str:
        from datetime import datetime, timezone

        return datetime.fromtimestamp(started + seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    lines = [
        "not json, skipped",
        '{"msg":"Reconciling"}',
        # Lane s1-l110 starts 40 s after the run: vision-004 waits at 10 s into the lane, twice.
        json.dumps(
            {
                "ts": at(50.0),
                "schedulingCycle": 7,
                "msg": diagnose.STRATEGIES_FAILED,
                "preemptingWorkload": {"namespace": "s1-l110-vision", "name": "vision-004"},
            }
        ),
        json.dumps(
            {
                "ts": at(50.0),
                "schedulingCycle": 7,
                "msg": diagnose.NO_CANDIDATES,
                "workload": {"namespace": "s1-l110-vision", "name": "vision-004"},
            }
        ),
        json.dumps(
            {
                "ts": at(52.0),
                "schedulingCycle": 9,
                "msg": diagnose.NO_CANDIDATES,
                "workload": {"namespace": "s1-l110-vision", "name": "vision-004"},
            }
        ),
        json.dumps({"ts": at(53.0), "msg": "Preempted", "reason": "InCohortReclamation"}),
    ]
    run = {
        "started_at": started,
        "offsets": {"s1-l110": 40.0},
        "histories": {
            "s1-l110": [
                {"job": "vision-004", "team": "vision", "gpus": 4, "attempts": []},
                # vision holds 10 GPUs from 5 s to 11 s into the lane, then 6.
                {"job": "vision-001", "team": "vision", "gpus": 6, "attempts": [[5.0, 30.0, True, ""]]},
                {"job": "vision-002", "team": "vision", "gpus": 4, "attempts": [[5.0, 11.0, True, ""]]},
                {"job": "research-001", "team": "research", "gpus": 8, "attempts": [[0.0, 30.0, True, ""]]},
            ]
        },
    }
    entries = diagnose.log_lines(lines)
    assert len(entries) == 4
    found = diagnose.waits(entries, run, {"vision": 12.0, "research": 5.0})
    assert [(w.t, w.team_gpus, w.over_nominal, w.strategies_refused) for w in found] == [
        (10.0, 10.0, True, True),  # 10 held + the 4-GPU gang > 12: over nominal; fair sharing refused
        (12.0, 6.0, False, False),
    ]  # 6 + 4 within 12, and no strategy ran: no candidate at all
    text = diagnose.report(entries, found)
    assert "- vision: 2 (2 GPU, 0 CPU) on 1 workloads; GPU ones over nominal with the gang counted: 1 of 2" in text
    assert "refused them all: 1 of 2" in text and "'InCohortReclamation': 1" in text


def test_outcomes_comparisons_say_lower_or_higher_only_beyond_the_interval() -> None:
    ours = [_lane("kueue-aks", s, 0.9) for s in (1, 2, 3)]
    faster = [
        _lane("x", s, 0.9, makespan_s=95.0 + s, worst_rho=1.0 + s / 100 + (0.2 if s == 2 else -0.2)) for s in (1, 2, 3)
    ]
    text = sweep.comparisons(ours + faster, "kueue-aks")
    (row,) = [line for line in text.splitlines() if line.startswith("| x |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:2] == ["x", "0.9"]
    assert cells[2] == "-5.0 [-5.0, -5.0] lower"  # 5 s faster on every seed
    assert not cells[3].endswith(("lower", "higher")), "rho -0.2, +0.2, -0.2: within the noise"
    assert "kueue-aks |" not in text.split("\n", 2)[2], "no row against itself"


def test_outcomes_the_programs_variants_are_candidates_not_rivals_in_the_targets() -> None:
    ours = [_lane("kueue-aks", s, 0.9) for s in (1, 2, 3)]
    single = [_lane("single-queue", s, 0.9, makespan_s=101.0 + s, worst_rho=1.5 + s / 100) for s in (1, 2, 3)]
    fairer_variant = [_lane("kueue-aks+split", s, 0.9, worst_rho=0.5) for s in (1, 2, 3)]
    assert sweep.missed_targets(ours + single + fairer_variant, "kueue-aks", "single-queue") == []
