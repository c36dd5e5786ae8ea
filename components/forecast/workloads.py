"""A running cluster's finished Kueue Workloads as a trace (the CSV format of trace.py). Pure:
the JSON of `kubectl get workloads.kueue.x-k8s.io -A -o json` and of `kubectl get namespaces -o
json` in, trace jobs and counts of what was left out.

Per Workload: submit is its creationTimestamp (from the earliest one kept), run time is its
Finished condition's lastTransitionTime − its Admitted condition's (the last admission: for a
Workload evicted and admitted again, the run it finished under, which started from nothing; it is
kept and counted as re-admitted), the team is its namespace's kueue-aks.io/team label, the
LocalQueue its spec.queueName, the priority its WorkloadPriorityClass. What each pod asks for
comes from the admission (status.admission.podSetAssignments' resourceUsage ÷ count), else from
the pod template (containers summed, init containers' largest, overhead). Left out, and counted:
Workloads not finished, finished without being admitted (deactivated, rejected by a check), in a
namespace of no team, or with times out of order. Several pod sets of one shape are one gang;
of several shapes they are folded into one pod holding their sum, the quota they take together.
Only cpu, memory and nvidia.com/gpu are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..config.names import TEAM_LABEL
from ..k8s.quantity import QuantityError, parse_quantity
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY, held
from .trace import DEFAULT_QUEUE, MAX_JOBS, Pod, TraceJob

WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
# v1beta1's spec.priorityClassSource for a WorkloadPriorityClass
WORKLOAD_PRIORITY_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_GPU)


@dataclass(frozen=True)
class Recorded:
    jobs: tuple[TraceJob, ...]
    start: datetime | None  # the trace's zero: the earliest creation kept
    skipped: Mapping[str, int] = field(default_factory=dict)  # why -> how many
    readmitted: int = 0  # kept: evicted, then admitted again and finished
    folded: int = 0  # kept: pod sets of several shapes folded into one pod
    unranked: int = 0  # kept without a priority: it named a pod PriorityClass, not a WorkloadPriorityClass

    def summary(self) -> str:
        parts = [f"{len(self.jobs):,} Workloads kept"]
        if self.readmitted:
            parts.append(f"{self.readmitted:,} of them evicted and admitted again (run time from their last admission)")
        if self.folded:
            parts.append(f"{self.folded:,} with pod sets of several shapes folded into one pod")
        if self.unranked:
            parts.append(f"{self.unranked:,} whose pod PriorityClass is left out (no WorkloadPriorityClass)")
        parts += [f"{n:,} left out: {why}" for why, n in sorted(self.skipped.items())]
        return "; ".join(parts)


def items(doc: Any) -> list[Mapping[str, Any]]:
    """The objects of a `kubectl get -o json` answer: a List's items, or a list itself."""
    if isinstance(doc, Mapping):
        found = doc.get("items", [doc] if doc.get("kind") not in (None, "List") else [])
        return [i for i in found if isinstance(i, Mapping)]
    if isinstance(doc, list):
        return [i for i in doc if isinstance(i, Mapping)]
    return []


def namespace_teams(namespaces: Any) -> dict[str, str]:
    """namespace -> team, from the namespaces' kueue-aks.io/team label (TEAM_LABEL)."""
    found = {}
    for ns in items(namespaces):
        meta = ns.get("metadata") or {}
        team = (meta.get("labels") or {}).get(TEAM_LABEL)
        if team and meta.get("name"):
            found[meta["name"]] = team
    return found


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _condition(workload: Mapping[str, Any], kind: str) -> datetime | None:
    """When the condition last turned True, or None when it is not True."""
    for c in (workload.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return _time(c.get("lastTransitionTime")) if c.get("status") == "True" else None
    return None


def _amounts(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    found: dict[str, Decimal] = {}
    for name in RESOURCES:
        value = (resources or {}).get(name)
        if value is not None:
            found[name] = parse_quantity(value)
    return found


def _pod_requests(template: Mapping[str, Any]) -> dict[str, Decimal]:
    """What one pod asks for, as Kubernetes computes it (k8s.io/component-helpers resource
    PodRequests): the containers summed, at least the largest init container, plus overhead;
    a container's limit stands in for a request it does not give."""
    spec = template.get("spec") or {}

    def container(c: Mapping[str, Any]) -> dict[str, Decimal]:
        resources = c.get("resources") or {}
        return {**_amounts(resources.get("limits")), **_amounts(resources.get("requests"))}

    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        for name, v in container(c).items():
            total[name] = total.get(name, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for name, v in container(c).items():
            total[name] = max(total.get(name, Decimal(0)), v)
    for name, v in _amounts(spec.get("overhead")).items():
        total[name] = total.get(name, Decimal(0)) + v
    return total


def _pod_sets(workload: Mapping[str, Any]) -> list[tuple[int, dict[str, Decimal]]]:
    """(count, per-pod requests) of each pod set: from the admission when it is there."""
    status = workload.get("status") or {}
    assignments = (status.get("admission") or {}).get("podSetAssignments") or []
    spec_sets = (workload.get("spec") or {}).get("podSets") or []
    found = []
    if assignments and all(a.get("resourceUsage") is not None for a in assignments):
        counts = {s.get("name"): s.get("count", 1) for s in spec_sets}
        for a in assignments:
            count = int(a.get("count") if a.get("count") is not None else counts.get(a.get("name"), 1))
            usage = _amounts(a.get("resourceUsage"))
            found.append((count, {k: v / count for k, v in usage.items()} if count else usage))
        return found
    for s in spec_sets:
        found.append((int(s.get("count", 1)), _pod_requests(s.get("template") or {})))
    return found


def _pod(requests: Mapping[str, Decimal]) -> Pod:
    return Pod(
        held(RESOURCE_CPU, requests.get(RESOURCE_CPU, Decimal(0))),
        held(RESOURCE_MEMORY, requests.get(RESOURCE_MEMORY, Decimal(0))),
        held(RESOURCE_GPU, requests.get(RESOURCE_GPU, Decimal(0))),
    )


def _priority(spec: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The WorkloadPriorityClass it names, and whether it named a pod PriorityClass instead
    (v1beta2 spec.priorityClassRef; v1beta1 spec.priorityClassName and priorityClassSource)."""
    ref = spec.get("priorityClassRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        if ref.get("kind", WORKLOAD_PRIORITY_CLASS) == WORKLOAD_PRIORITY_CLASS:
            return str(ref["name"]), False
        return None, True
    name = spec.get("priorityClassName")
    if name:
        if spec.get("priorityClassSource") == WORKLOAD_PRIORITY_SOURCE:
            return str(name), False
        return None, True
    return None, False


def _readmitted(workload: Mapping[str, Any]) -> bool:
    status = workload.get("status") or {}
    evictions = ((status.get("schedulingStats") or {}).get("evictions")) or []
    requeued = (status.get("requeueState") or {}).get("count") or 0
    conditions = {c.get("type") for c in status.get("conditions") or [] if isinstance(c, Mapping)}
    return bool(evictions) or requeued > 0 or bool(conditions & {"Evicted", "Preempted"})


def trace_from_workloads(workloads: Any, teams: Mapping[str, str]) -> Recorded:
    """The finished Workloads of `workloads` (a List or a list) in team namespaces (`teams`:
    namespace -> team) as trace jobs, the most recent MAX_JOBS by creation, sorted by it."""
    kept: list[tuple[datetime, float, str, str, int, Pod, str | None, str]] = []
    skipped: dict[str, int] = {}
    readmitted = folded = unranked = 0

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for wl in items(workloads):
        meta = wl.get("metadata") or {}
        spec = wl.get("spec") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
        team = teams.get(namespace or "")
        if team is None:
            skip("in a namespace of no team")
            continue
        finished, admitted, created = (
            _condition(wl, "Finished"),
            _condition(wl, "Admitted"),
            _time(meta.get("creationTimestamp")),
        )
        if finished is None:
            skip("not finished")
            continue
        if admitted is None or created is None:
            skip("finished without being admitted")
            continue
        if not created <= admitted <= finished:
            skip("with times out of order (created, admitted, finished)")
            continue
        try:
            sets = _pod_sets(wl)
        except (QuantityError, ArithmeticError, TypeError, ValueError):
            skip("with requests that are not quantities")
            continue
        sets = [(count, requests) for count, requests in sets if count > 0]
        if not sets:
            skip("with no pods")
            continue
        pods = [(count, _pod(requests)) for count, requests in sets]
        if len({pod for _, pod in pods}) == 1:
            count, pod = sum(c for c, _ in pods), pods[0][1]
        else:
            total = {r: sum((c * requests.get(r, Decimal(0)) for c, requests in sets), Decimal(0)) for r in RESOURCES}
            count, pod = 1, _pod(total)
            folded += 1
        priority, pod_class = _priority(spec)
        unranked += pod_class
        readmitted += _readmitted(wl)
        duration = (finished - admitted).total_seconds()
        kept.append(
            (
                created,
                duration,
                f"{namespace}/{name}",
                team,
                count,
                pod,
                priority,
                spec.get("queueName") or DEFAULT_QUEUE,
            )
        )
    if len(kept) > MAX_JOBS:
        kept.sort(key=lambda k: k[0])
        skipped[f"older than the last {MAX_JOBS:,} (a trace holds at most that many)"] = len(kept) - MAX_JOBS
        kept = kept[-MAX_JOBS:]
    if not kept:
        return Recorded((), None, skipped, readmitted, folded, unranked)
    start = min(k[0] for k in kept)
    jobs = sorted(
        (
            TraceJob(name, team, (created - start).total_seconds(), duration, count, pod, priority, queue)
            for created, duration, name, team, count, pod, priority, queue in kept
        ),
        key=lambda j: (j.arrival_s, j.name),
    )
    return Recorded(tuple(jobs), start, skipped, readmitted, folded, unranked)


def comment(recorded: Recorded, source: str) -> str:
    """The comment the command writes on top of a recorded trace."""
    start = recorded.start.isoformat() if recorded.start else "–"
    return f"Finished Kueue Workloads of {source}, from {start}.\n{recorded.summary()}."
