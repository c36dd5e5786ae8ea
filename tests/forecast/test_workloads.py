"""A cluster's finished Kueue Workloads as a trace (components/forecast/workloads.py), from
hand-written `kubectl get -o json` answers."""

from __future__ import annotations

import copy

from components.forecast.trace import Pod, TraceJob, read_trace, write_trace
from components.forecast.workloads import comment, namespace_teams, trace_from_workloads
from testbed.workloads import FINISHED, NAMESPACES, condition, workload


def test_a_finished_workload_is_a_job_submitted_at_its_creation_running_from_admission_to_finish() -> None:
    workloads = {
        "kind": "List",
        "items": [
            workload(
                "train-1",
                "research",
                "2025-03-01T10:00:00Z",
                FINISHED,
                priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
            ),
            workload(
                "etl",
                "platform",
                "2025-03-01T09:59:00Z",
                [condition("Admitted", "2025-03-01T10:00:00Z"), condition("Finished", "2025-03-01T10:01:30Z")],
                queueName="topology",
            ),
        ],
    }
    recorded = trace_from_workloads(workloads, namespace_teams(NAMESPACES))
    assert recorded.jobs == (
        TraceJob("platform/etl", "platform", 0.0, 90.0, 2, Pod(2000, 8192, 1), None, "topology"),
        TraceJob("research/train-1", "research", 60.0, 3600.0, 2, Pod(2000, 8192, 1), "high"),
    )
    assert recorded.start is not None and recorded.start.isoformat() == "2025-03-01T09:59:00+00:00"
    assert recorded.skipped == {} and recorded.summary() == "2 Workloads kept"
    # What the command writes reads back as the same jobs.
    text = write_trace(recorded.jobs, comment(recorded, "workloads.json"))
    assert text.startswith("# Finished Kueue Workloads of workloads.json, from 2025-03-01T09:59:00+00:00.\n")
    assert (
        read_trace(text, teams={"research": ["default"], "platform": ["default", "topology"]}, priorities=["high"])
        == recorded.jobs
    )


def test_what_is_left_out_is_counted_by_why() -> None:
    running = workload("running", "research", "2025-03-01T10:00:00Z", FINISHED[:2])
    pending = workload(
        "pending", "research", "2025-03-01T10:00:00Z", [condition("QuotaReserved", "2025-03-01T10:00:00Z", "False")]
    )
    deactivated = workload(
        "deactivated", "research", "2025-03-01T10:00:00Z", [condition("Finished", "2025-03-01T10:05:00Z")]
    )
    system = workload("system", "kube-system", "2025-03-01T10:00:00Z", FINISHED)
    backwards = workload("backwards", "research", "2025-03-01T12:00:00Z", FINISHED)
    kept = workload("kept", "research", "2025-03-01T10:00:00Z", FINISHED)
    recorded = trace_from_workloads(
        [running, pending, deactivated, system, backwards, kept], namespace_teams(NAMESPACES)
    )
    assert [j.name for j in recorded.jobs] == ["research/kept"]
    assert recorded.skipped == {
        "not finished": 2,
        "finished without being admitted": 1,
        "in a namespace of no team": 1,
        "with times out of order (created, admitted, finished)": 1,
    }


def test_an_evicted_and_readmitted_workload_keeps_the_run_it_finished_under() -> None:
    conditions = [
        condition("Evicted", "2025-03-01T10:10:00Z", "False"),
        condition("Preempted", "2025-03-01T10:10:00Z", "False"),
        condition("Admitted", "2025-03-01T10:20:00Z"),
        condition("Finished", "2025-03-01T10:50:00Z"),
    ]
    readmitted = workload("again", "research", "2025-03-01T10:00:00Z", conditions)
    readmitted["status"]["schedulingStats"] = {
        "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
    }
    recorded = trace_from_workloads([readmitted], namespace_teams(NAMESPACES))
    assert [(j.arrival_s, j.duration_s) for j in recorded.jobs] == [(0.0, 1800.0)]  # last admission to finish
    assert recorded.readmitted == 1
    assert "1 of them evicted and admitted again (run time from their last admission)" in recorded.summary()


def test_requests_come_from_the_admission_when_it_is_there() -> None:
    wl = workload("a", "research", "2025-03-01T10:00:00Z", FINISHED)
    wl["status"]["admission"] = {
        "clusterQueue": "research",
        "podSetAssignments": [
            {
                "name": "main",
                "count": 2,
                "flavors": {"cpu": "gpu"},
                "resourceUsage": {"cpu": "5", "memory": "16Gi", "nvidia.com/gpu": "2", "example.com/fpga": "1"},
            }
        ],
    }
    [job] = trace_from_workloads([wl], namespace_teams(NAMESPACES)).jobs
    assert (job.pods, job.pod) == (2, Pod(2500, 8192, 1))  # its usage ÷ its count; other resources left out


def test_the_pod_template_counts_as_kubernetes_counts_a_pod() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
        ],
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
        "overhead": {"memory": "100Mi"},
    }
    wl = workload("a", "research", "2025-03-01T10:00:00Z", FINISHED)
    wl["spec"]["podSets"] = [{"name": "main", "count": 3, "template": {"spec": spec}}]
    [job] = trace_from_workloads([wl], namespace_teams(NAMESPACES)).jobs
    # cpu: max(500m + 250m, 2) = 2; memory: a limit stands in for a request, 1Gi + 512Mi + 100Mi overhead.
    assert (job.pods, job.pod) == (3, Pod(2000, 1636, 0))


def test_pod_sets_of_several_shapes_fold_into_their_sum() -> None:
    wl = workload("ray", "research", "2025-03-01T10:00:00Z", FINISHED)
    head = {
        "name": "head",
        "count": 1,
        "template": {"spec": {"containers": [{"name": "h", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}},
    }
    wl["spec"]["podSets"] = [head, copy.deepcopy(wl["spec"]["podSets"][0])]
    same = copy.deepcopy(wl)
    same["spec"]["podSets"][0] = {**copy.deepcopy(wl["spec"]["podSets"][1]), "name": "launcher", "count": 1}
    folded, gang = (trace_from_workloads([w], namespace_teams(NAMESPACES)) for w in (wl, same))
    assert (folded.jobs[0].pods, folded.jobs[0].pod) == (1, Pod(5000, 18432, 2)) and folded.folded == 1
    assert (gang.jobs[0].pods, gang.jobs[0].pod) == (3, Pod(2000, 8192, 1)) and gang.folded == 0


def test_priorities_of_v1beta1_and_pod_priority_classes() -> None:
    v1beta1 = workload(
        "old",
        "research",
        "2025-03-01T10:00:00Z",
        FINISHED,
        priorityClassName="low",
        priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
    )
    pod = workload(
        "pod",
        "research",
        "2025-03-01T10:00:00Z",
        FINISHED,
        priorityClassRef={"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "system-node-critical"},
    )
    recorded = trace_from_workloads([v1beta1, pod], namespace_teams(NAMESPACES))
    assert {j.name: j.priority for j in recorded.jobs} == {"research/old": "low", "research/pod": None}
    assert recorded.unranked == 1


def test_the_namespaces_teams_come_from_their_label() -> None:
    assert namespace_teams(NAMESPACES) == {"research": "research", "platform": "platform"}
    assert namespace_teams([{"metadata": {"name": "ml", "labels": {"kueue-aks.io/team": "vision"}}}]) == {
        "ml": "vision"
    }
    assert namespace_teams("not a list") == {}
