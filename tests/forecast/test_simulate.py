"""The admission simulator (components/forecast/simulate.py): hand-made cases on the dev stack's
queues, each with its answer worked out from Kueue's rules, and its speed on a synthetic trace."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from components.forecast.forecast import stack_queues, synthetic_trace
from components.forecast.queues import Queues
from components.forecast.simulate import Outcome, simulate
from components.forecast.trace import Pod, TraceJob
from components.kueue.objects import queue_set
from testbed.stacks import load_stack, with_pool, with_shares

GPU_POD = Pod(1000, 1024, 1)  # small beside a T4 node's 3.86 vCPU and 25.7 GiB: only the GPU counts


def queues_of(config_map: dict[str, Any]) -> Queues:
    config = load_stack(config_map)
    return stack_queues(config, queue_set(config))


def gpus(config_map: dict[str, Any], count: int, **shares: float) -> dict[str, Any]:
    """The dev stack with `count` T4 GPUs (one a node) and these shares."""
    return with_pool(with_shares(config_map, **shares), "gpu", maxCount=count)  # type: ignore[arg-type]


def job(
    name: str,
    team: str,
    at: float,
    pods: int = 1,
    duration: float = 100.0,
    priority: str | None = None,
    pod: Pod = GPU_POD,
) -> TraceJob:
    return TraceJob(name, team, at, duration, pods, pod, priority)


def runs(outcome: Outcome, jobs: list[TraceJob]) -> dict[str, list[tuple[float, float, bool]]]:
    """job name -> its runs: (start, end, ran to its end)."""
    found: dict[str, list[tuple[float, float, bool]]] = {j.name: [] for j in jobs}
    for run in outcome.runs:
        found[jobs[run.job].name].append((run.start_s, run.end_s, run.completed))
    return found


def test_two_teams_with_a_gpu_each_start_at_once(dev_config_map: dict[str, Any]) -> None:
    jobs = [job("r", "research", 0.0), job("p", "platform", 0.0)]
    outcome = simulate(queues_of(gpus(dev_config_map, 2, research=50, platform=50)), jobs)
    assert runs(outcome, jobs) == {"r": [(0.0, 100.0, True)], "p": [(0.0, 100.0, True)]}
    assert {run.flavor for run in outcome.runs} == {"gpu"}  # past the cpu flavor, which has no GPU


def test_a_team_without_gpu_quota_waits_for_the_other_teams_job(dev_config_map: dict[str, Any]) -> None:
    # 2 GPUs at 99.99 / 0.01 %: research 1, platform 0 (rounded down), the cohort's spare 1. Research's gang
    # takes its GPU and the spare; platform can only borrow, and fair sharing will not let a queue of
    # weight 0.0001 take a borrowed GPU from one of weight 0.9999.
    jobs = [job("gang", "research", 0.0, pods=2), job("p", "platform", 10.0)]
    outcome = simulate(queues_of(gpus(dev_config_map, 2, research=99.99, platform=0.01)), jobs)
    # Set aside at 10 s, platform's job is tried again a second after the gang frees its GPUs (Kueue's
    # requeue batch).
    assert runs(outcome, jobs) == {"gang": [(0.0, 100.0, True)], "p": [(101.0, 201.0, True)]}


def test_borrowed_gpus_are_reclaimed_by_preemption_and_the_job_starts_over(dev_config_map: dict[str, Any]) -> None:
    # 2 GPUs at 50 / 50: research's gang borrows platform's idle GPU until platform wants it.
    jobs = [job("gang", "research", 0.0, pods=2), job("p", "platform", 10.0)]
    outcome = simulate(queues_of(gpus(dev_config_map, 2, research=50, platform=50)), jobs)
    assert runs(outcome, jobs) == {
        # its 10 s are lost: set aside, it is tried again a second after p finishes and runs 100 s again
        "gang": [(0.0, 10.0, False), (111.0, 211.0, True)],
        "p": [(10.0, 110.0, True)],
    }


def test_a_lending_limit_keeps_the_lenders_quota(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(gpus(dev_config_map, 2, research=50, platform=50))
    built = queue_set(config)
    jobs = [job("r1", "research", 0.0), job("r2", "research", 0.0), job("gang", "research", 1.0, pods=2)]
    free = simulate(stack_queues(config, built), jobs)
    assert runs(free, jobs)["r2"] == [(0.0, 100.0, True)]  # borrowed from idle platform
    platform = next(o for o in built.objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "platform")
    gpu = next(f for f in platform["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "gpu")
    next(r for r in gpu["resources"] if r["name"] == "nvidia.com/gpu")["lendingLimit"] = "0"
    limited = simulate(stack_queues(config, built), jobs)
    assert runs(limited, jobs)["r2"] == [(101.0, 201.0, True)]  # platform lends none of its GPU
    assert runs(limited, jobs)["gang"] == [] and limited.never_admitted == (2,)  # 2 GPUs never fit in 1


def test_a_borrowing_limit_caps_what_a_team_holds(dev_config_map: dict[str, Any]) -> None:
    # 4 GPUs at 50 / 50: 2 each; borrowing 0.5 lets research hold 2 + 1.
    jobs = [job(f"r{i}", "research", 0.0) for i in range(4)]
    unlimited = gpus(dev_config_map, 4, research=50, platform=50)
    assert all(r[0][0] == 0.0 for r in runs(simulate(queues_of(unlimited), jobs), jobs).values())
    limited = copy.deepcopy(unlimited)
    next(t for t in limited["kueue-aks:teams"] if t["name"] == "research")["borrowing"] = 0.5
    starts = sorted(r[0][0] for r in runs(simulate(queues_of(limited), jobs), jobs).values())
    assert starts == [0.0, 0.0, 0.0, 101.0]  # a second after a GPU is freed: Kueue's requeue batch


def test_a_gang_that_does_not_fit_waits_whole_while_a_smaller_job_passes(dev_config_map: dict[str, Any]) -> None:
    jobs = [job("p", "platform", 0.0), job("gang", "research", 5.0, pods=2), job("small", "research", 6.0)]
    outcome = simulate(queues_of(gpus(dev_config_map, 2, research=50, platform=50)), jobs)
    # Platform's job holds its own GPU: the gang cannot preempt it, and never starts on one GPU.
    assert runs(outcome, jobs) == {
        "p": [(0.0, 100.0, True)],
        "small": [(6.0, 106.0, True)],  # BestEffortFIFO: past the gang that does not fit
        "gang": [(107.0, 207.0, True)],  # both GPUs, a second after both are free (the requeue batch)
    }


def test_priority_orders_a_queue(dev_config_map: dict[str, Any]) -> None:
    alone = copy.deepcopy(gpus(dev_config_map, 2))
    alone["kueue-aks:teams"] = [{"name": "research", "share": 100}]
    jobs = [
        job("first", "research", 0.0, pods=2, priority="high"),
        job("low", "research", 1.0, pods=2, priority="low"),
        job("normal", "research", 2.0, pods=2, priority="normal"),
        job("unlabelled", "research", 3.0, pods=2),
    ]
    started = {name: r[0][0] for name, r in runs(simulate(queues_of(alone), jobs), jobs).items()}
    # Priority first (an unlabelled job is 0, as normal), then submission; each set aside, tried again
    # a second after the one before finishes.
    assert started == {"first": 0.0, "normal": 101.0, "unlabelled": 202.0, "low": 303.0}


def test_a_higher_priority_preempts_a_lower_one_in_its_queue(dev_config_map: dict[str, Any]) -> None:
    alone = copy.deepcopy(gpus(dev_config_map, 2))
    alone["kueue-aks:teams"] = [{"name": "research", "share": 100}]
    jobs = [job("low", "research", 0.0, pods=2, priority="low"), job("high", "research", 10.0, pods=2, priority="high")]
    assert runs(simulate(queues_of(alone), jobs), jobs) == {
        "low": [(0.0, 10.0, False), (111.0, 211.0, True)],
        "high": [(10.0, 110.0, True)],
    }
    # The same jobs at one priority: no preemption within the queue.
    same = [job("low", "research", 0.0, pods=2), job("high", "research", 10.0, pods=2)]
    assert runs(simulate(queues_of(alone), same), same)["high"] == [(101.0, 201.0, True)]


def test_a_set_aside_job_is_tried_a_second_after_quota_is_first_freed(dev_config_map: dict[str, Any]) -> None:
    # Kueue 0.19.2's requeue request waits requeueBatchPeriod (1 s) in a delaying work queue, which keeps
    # an item's earliest time: the second finish, half a second later, does not push the retry back.
    alone = copy.deepcopy(gpus(dev_config_map, 2))
    alone["kueue-aks:teams"] = [{"name": "research", "share": 100}]
    jobs = [
        job("r1", "research", 0.0),
        job("r2", "research", 0.0, duration=100.5),
        job("gang", "research", 1.0, pods=2),
    ]
    assert runs(simulate(queues_of(alone), jobs), jobs)["gang"] == [(101.0, 201.0, True)]


def test_flavors_are_tried_in_order(dev_config_map: dict[str, Any]) -> None:
    # The dev CPU pool: 4 D8s_v5 nodes, 31.28 vCPU, 15.64 each at 50 / 50. A job of all of it borrows
    # platform's half on the first flavor (whenCanBorrow MayStopSearch: it does not look further);
    # the next finds that flavor full and goes on to the gpu flavor's vCPUs.
    node = Pod(7820, 1024)
    jobs = [job("wide", "research", 0.0, pods=4, pod=node), job("next", "research", 1.0, pod=Pod(1000, 1024))]
    outcome = simulate(queues_of(with_shares(dev_config_map, research=50, platform=50)), jobs)
    flavors = {jobs[r.job].name: (r.flavor, r.start_s) for r in outcome.runs}
    assert flavors == {"wide": ("cpu", 0.0), "next": ("gpu", 1.0)}


@pytest.mark.parametrize(("research", "platform", "spare_to"), [(60, 40, "research"), (40, 60, "platform")])
def test_fair_sharing_lends_the_spare_to_the_queue_with_the_lower_share(
    dev_config_map: dict[str, Any], research: int, platform: int, spare_to: str
) -> None:
    # 3 GPUs: 1 each, the cohort's spare 1. With both second jobs borrowing, the tournament admits
    # the one whose queue's dominant share after admission is lower: 1/3 ÷ 0.6 beats 1/3 ÷ 0.4.
    loser_team = "platform" if spare_to == "research" else "research"
    # The loser's jobs first in the trace, so that trace order (the last tie-break) would pick it.
    teams = (loser_team, spare_to)
    jobs = [job(f"{t[0]}{i}", t, 0.0) for t in teams for i in (1, 2)]
    started = {
        n: r[0][0]
        for n, r in runs(
            simulate(queues_of(with_shares(dev_config_map, research=research, platform=platform)), jobs), jobs
        ).items()
    }
    winner, loser = ("r2", "p2") if spare_to == "research" else ("p2", "r2")
    assert started == {"p1": 0.0, "r1": 0.0, winner: 0.0, loser: 101.0}


def test_jobs_without_a_queue_or_in_a_topology_queue(dev_config_map: dict[str, Any]) -> None:
    queues = queues_of(dev_config_map)
    jobs = [job("a", "research", 0.0), job("b", "ghosts", 0.0)]
    assert simulate(queues, jobs).unqueued == (1,)
    tas = [TraceJob("t", "research", 0.0, 10.0, 1, Pod(1000, 1024), queue="topology")]
    outcome = simulate(queues, tas)
    assert outcome.runs == () and outcome.reasons == (
        "jobs of LocalQueue research/topology go to a topology-aware queue: placement by topology is not modelled",
    )


def test_a_run_is_the_same_for_a_seed_and_differs_for_another(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    queues = stack_queues(config, queue_set(config))
    one, again, other = (synthetic_trace(config, seed=s, jobs=300) for s in (7, 7, 8))
    assert one is not None and again is not None and other is not None
    assert simulate(queues, one.jobs) == simulate(queues, again.jobs)
    assert simulate(queues, one.jobs).runs != simulate(queues, other.jobs).runs


def test_three_thousand_jobs_take_a_few_seconds(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    trace = synthetic_trace(config, jobs=3_000)
    assert trace is not None and len(trace.jobs) > 2_500
    queues = stack_queues(config, queue_set(config))
    started = time.process_time()  # this process's CPU: other work on the machine does not count
    outcome = simulate(queues, trace.jobs)
    took = time.process_time() - started
    assert len({r.job for r in outcome.runs if r.completed}) == len(trace.jobs)
    assert took < 5.0, f"{len(trace.jobs)} jobs took {took:.1f} s of CPU"
