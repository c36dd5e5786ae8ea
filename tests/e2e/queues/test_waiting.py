"""Why is my job waiting: the messages a batch user really sees, produced by the real Kueue, API
server, scheduler and cluster autoscaler, one test per reason (docs/batch-users.md quotes them).

Each message is a module-level constant: its stable words, with `{placeholders}` for the parts that
vary (names, quantities, UIDs). `pattern()` turns one into a regex; a test fills in the parts it
knows and checks the rest loosely, so a docs test can find every quoted message in this file.

On the dev stack: research's and platform's ClusterQueues each own 1 of the gpu pool's 3 T4s and
borrow the rest; a T4 node has 4 vCPUs (3.86 allocatable) and a D8s_v5 cpu node 8 (7.82).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from components.kueue.objects import ATOMIC_SCALE_UP_GPU, TOPOLOGY_LOCAL_QUEUE_NAME

from testbed.cluster import condition, conditions, is_true, pattern, status, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import events_of, job, wait_admitted, workload_of
from testbed.stack_cluster import StackCluster

# --- what Kueue writes on the Workload (condition QuotaReserved=False, and a Warning event) ----

# Every "cannot admit yet" message starts so; the reasons follow, one per flavor tried, comma-separated.
COULD_NOT_ASSIGN = "couldn't assign flavors to pod set {podset}: {reasons}"
# 1. The team's quota, and what it may borrow from the cohort, is in use by other jobs.
QUOTA_IN_USE = "insufficient unused quota for {resource} in flavor {flavor}, {amount} more needed"
# 4. More than the team can ever have on that flavor, borrowing included (0 where it has none).
EXCEEDS_MAX_QUOTA = (
    "insufficient quota for {resource} in flavor {flavor}, previously considered podsets "
    "requests ({previous}) + current podset request ({request}) > maximum capacity ({maximum})"
)
# 4. A resource no flavor of the team's ClusterQueue has a quota for.
RESOURCE_UNAVAILABLE = "resource {resource} unavailable in ClusterQueue"
# 2. Added to the message once Kueue has evicted the workloads that make room.
PENDING_PREEMPTION = ". Pending the preemption of {count} workload(s)"
# 2. What the preempted workload's Evicted and Preempted conditions say.
PREEMPTED = (
    "Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {why}; "
    "preemptor path: {preemptor_path}; preemptee path: {preemptee_path}"
)
PREEMPTED_WITHIN_QUEUE = "prioritization in the ClusterQueue"
PREEMPTED_TO_RECLAIM = "reclamation within the cohort"
# 2. The preempted workload's Admitted=False condition while it waits again (reason NoReservationUnsatisfiedChecks).
NO_RESERVATION = "The workload has no reservation and not all checks ready"

# --- quota reserved, admission checks not yet Ready (ProvisioningRequest pools) ----------------

# 3. The Workload's QuotaReserved=True condition, and its events: quota first, then the nodes.
QUOTA_RESERVED = "Quota reserved in ClusterQueue {cluster_queue}"
PROVISIONING_REQUEST_CREATED = 'Created ProvisioningRequest: "{name}"'
# 3. The check's message (status.admissionChecks) while the autoscaler cannot add the nodes: the
# cluster autoscaler's words on the ProvisioningRequest, copied by Kueue.
CAPACITY_NOT_FOUND = "Capacity is not found, CA will try to find it later."
# 3. Its message once the nodes are there, and the Workload's event for the change.
CAPACITY_FOUND = "Capacity is found in the cluster"
CHECK_UPDATED = "Admission check {check} updated state from {old} to {new} with message: {message}"
ADMITTED_AFTER_CHECKS = "Admitted by ClusterQueue {cluster_queue}, wait time since reservation was {seconds}s"

# --- admitted, but the pod fits no node (pools without ProvisioningRequest) --------------------

# 5. kube-scheduler's FailedScheduling event on the pod.
NO_NODE_FITS = "0/{nodes} nodes are available: {reasons}"
INSUFFICIENT_CPU = "Insufficient cpu"
# 5. The cluster autoscaler's NotTriggerScaleUp event on the pod: no node group's nodes could hold it.
NO_SCALE_UP = "pod didn't trigger scale-up: {reasons}"

# --- outside Kueue -----------------------------------------------------------------------------

# 6. What `kubectl get workloads` prints in a namespace that is not a team's (on stderr).
NO_WORKLOADS = "No resources found in {namespace} namespace."
# 7. The API server's refusal of a job whose priority class does not exist (the stack's guard,
# components/kueue/policies.py). Without it Kueue accepts the job, makes no Workload and leaves it
# suspended for ever, the one trace a `WorkloadPriorityClass... not found` line in Kueue's log.
UNKNOWN_PRIORITY_CLASS = (
    "kueue.x-k8s.io/priority-class: {name} is not a WorkloadPriorityClass of this cluster; "
    "use one of: {classes} (kubectl get workloadpriorityclasses), or leave the label out to run "
    "as {default} (policy kueue-aks-priority-class-guard)"
)

GPU = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
RUN_FOR = "1h"  # pods keep running until the test deletes their Job


def _quota_reserved(wl: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return condition(wl or {}, "QuotaReserved") or {}


def _seen(cluster: StackCluster, namespace: str, name: str) -> dict[str, Any]:
    """The Workload's conditions, admission checks and events: what `kubectl describe workload` shows."""
    wl = workload_of(cluster, namespace, name)
    if wl is None:
        return {"workload": None}
    return {
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")} for c in conditions(wl)],
        "admissionChecks": status(wl).get("admissionChecks"),
        "events": events_of(cluster, namespace, "Workload", wl["metadata"]["name"]),
    }


def wait_pending_message(
    cluster: StackCluster, namespace: str, name: str, expected: re.Pattern[str], timeout: float = 30
) -> dict[str, Any]:
    """Until the Workload's QuotaReserved=False condition says `expected`; returns what was seen."""

    def probe() -> tuple[bool, Any]:
        seen = _seen(cluster, namespace, name)
        pending = next((c for c in seen.get("conditions", []) if c["type"] == "QuotaReserved"), {})
        return pending.get("status") == "False" and bool(expected.search(pending.get("message") or "")), seen

    return wait_for(f"{namespace}/{name} to wait with a message matching {expected.pattern!r}", probe, timeout)  # type: ignore[no-any-return]


def wait_event(
    cluster: StackCluster, namespace: str, kind: str, name: str, expected: re.Pattern[str], timeout: float = 30
) -> dict[str, Any]:
    """Until an event about the object matches `expected`; returns that event."""

    def probe() -> tuple[bool, Any]:
        events = events_of(cluster, namespace, kind, name)
        hit = next((e for e in events if expected.search(e["message"])), None)
        return hit is not None, hit if hit is not None else events

    return wait_for(f"an event on {kind} {namespace}/{name} matching {expected.pattern!r}", probe, timeout)  # type: ignore[no-any-return]


def _pods(cluster: StackCluster, namespace: str, job_name: str) -> list[dict[str, Any]]:
    return cluster.kubectl.items("pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={job_name}")


def _check(wl: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    return next((dict(s) for s in status(wl or {}).get("admissionChecks") or [] if s.get("name") == name), {})


def _wait_reserved(cluster: StackCluster, namespace: str, name: str) -> dict[str, Any]:
    def probe() -> tuple[bool, Any]:
        wl = workload_of(cluster, namespace, name)
        return wl is not None and is_true(wl, "QuotaReserved"), wl if wl is not None else "no Workload yet"

    return wait_for(f"{namespace}/{name} to reserve quota", probe, 30)  # type: ignore[no-any-return]


# --- 1. the team's quota is full --------------------------------------------------------------


@on_stacks("dev")
def test_waiting_for_quota_another_job_holds(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    """All 3 GPUs (research's own and what it borrows) held by one job: the next one waits."""
    cluster.kubectl.apply([job("research", "holder", pods=3, requests=GPU, run_for=RUN_FOR)])
    cleanup.append(("research", "holder"))
    _wait_reserved(cluster, "research", "holder")
    cluster.kubectl.apply([job("research", "waiter", requests=GPU, run_for=RUN_FOR)])
    cleanup.append(("research", "waiter"))
    in_use = pattern(QUOTA_IN_USE, resource="nvidia.com/gpu", flavor="gpu", amount="1")
    seen = wait_pending_message(cluster, "research", "waiter", in_use)
    pending = next(c for c in seen["conditions"] if c["type"] == "QuotaReserved")
    assert pending["reason"] == "Pending", pending
    # The cpu flavor is tried first and has no GPUs at all: both reasons are in the one message.
    assert pattern(COULD_NOT_ASSIGN, podset="main").match(pending["message"]), pending
    assert pattern(
        EXCEEDS_MAX_QUOTA, resource="nvidia.com/gpu", flavor="cpu", previous="0", request="1", maximum="0"
    ).search(pending["message"]), pending
    print(f"quota in use: {seen}")
    # The same words as a Warning event, which `kubectl describe workload` lists.
    waiter = workload_of(cluster, "research", "waiter")
    assert waiter is not None
    event = wait_event(cluster, "research", "Workload", waiter["metadata"]["name"], in_use)
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "Pending", pending["message"]), event


# --- 2. waiting for a preemption to finish ----------------------------------------------------


@on_stacks("dev")
@pytest.mark.parametrize(
    ("victim_team", "victim_priority", "why"),
    [
        pytest.param("research", "low", PREEMPTED_WITHIN_QUEUE, id="priority"),
        pytest.param("platform", "normal", PREEMPTED_TO_RECLAIM, id="reclaim"),
    ],
)
def test_waiting_for_preemption(
    cluster: StackCluster, cleanup: list[tuple[str, str]], victim_team: str, victim_priority: str, why: str
) -> None:
    """A research job that can start only once another is preempted: a lower-priority research
    job (within the queue), or a platform job that borrowed research's GPU (reclaim)."""
    cluster.kubectl.apply([job(victim_team, "victim", pods=3, requests=GPU, priority=victim_priority, run_for=RUN_FOR)])
    cleanup.append((victim_team, "victim"))
    wait_admitted(cluster, victim_team, "victim")
    cluster.kubectl.apply([job("research", "preemptor", requests=GPU, priority="high", run_for=RUN_FOR)])
    cleanup.append(("research", "preemptor"))
    # Kueue writes this once, in the cycle that evicts; the Warning event keeps it after admission.
    preemptor = wait_admitted(cluster, "research", "preemptor")
    event = wait_event(
        cluster, "research", "Workload", preemptor["metadata"]["name"], pattern(PENDING_PREEMPTION, count="1")
    )
    assert event["type"] == "Warning", event
    assert pattern(COULD_NOT_ASSIGN, podset="main").match(event["message"]), event
    print(f"preemptor waited with: {event}")

    victim = workload_of(cluster, victim_team, "victim")
    assert victim is not None
    preempted = condition(victim, "Preempted") or {}
    evicted = condition(victim, "Evicted") or {}
    expected = pattern(PREEMPTED, uid=preemptor["metadata"]["uid"], why=why)
    assert expected.match(preempted.get("message") or ""), conditions(victim)
    assert evicted.get("reason") == "Preempted" and expected.match(evicted.get("message") or ""), conditions(victim)
    admitted = condition(victim, "Admitted") or {}
    assert admitted.get("status") == "False" and admitted.get("message") == NO_RESERVATION, conditions(victim)
    print(f"victim: {conditions(victim)}")


# --- 3. waiting for the autoscaler's ProvisioningRequest --------------------------------------


@on_stacks("dev")
def test_waiting_for_provisioning_request(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    """A GPU job reserves quota at once, then waits for the gpu pool's nodes (ProvisioningRequest)."""
    cluster.kubectl.apply([job("platform", "provisioned", requests=GPU, run_for=RUN_FOR)])
    cleanup.append(("platform", "provisioned"))
    reserved = _wait_reserved(cluster, "platform", "provisioned")
    name = reserved["metadata"]["name"]
    admitted = wait_admitted(cluster, "platform", "provisioned")
    assert _check(admitted, ATOMIC_SCALE_UP_GPU).get("state") == "Ready", status(admitted)
    assert _check(admitted, ATOMIC_SCALE_UP_GPU).get("message") == CAPACITY_FOUND, status(admitted)
    # The check was Pending meanwhile (the too-big test below shows it so); the events keep the change.
    wait_event(
        cluster,
        "platform",
        "Workload",
        name,
        pattern(CHECK_UPDATED, check=ATOMIC_SCALE_UP_GPU, old="Pending", new="Ready", message=CAPACITY_FOUND),
    )
    wait_event(cluster, "platform", "Workload", name, pattern(ADMITTED_AFTER_CHECKS, cluster_queue="platform"))
    print(f"provisioned: {_seen(cluster, 'platform', 'provisioned')}")


@on_stacks("dev")
def test_waiting_for_provisioning_request_no_node_can_hold(
    cluster: StackCluster, cleanup: list[tuple[str, str]]
) -> None:
    """A GPU pod asking 5 vCPUs: within quota (the gpu flavor has 11.58 vCPUs), but no T4 node
    has that many, so the autoscaler never provisions and the job never starts."""
    cluster.kubectl.apply(
        [job("research", "too-wide", requests={"cpu": "5", "memory": "1Gi", "nvidia.com/gpu": "1"}, run_for=RUN_FOR)]
    )
    cleanup.append(("research", "too-wide"))

    def stuck() -> tuple[bool, Any]:
        check = _check(workload_of(cluster, "research", "too-wide"), ATOMIC_SCALE_UP_GPU)
        return check.get("state") == "Pending" and check.get("message") == CAPACITY_NOT_FOUND, _seen(
            cluster, "research", "too-wide"
        )

    seen = wait_for("the check to say the autoscaler found no capacity", stuck, 60)
    wl = workload_of(cluster, "research", "too-wide")
    assert wl is not None
    # Quota is held (and counted against the team) while the job waits for nodes; no Admitted condition yet.
    reserved = condition(wl, "QuotaReserved") or {}
    assert reserved.get("status") == "True", seen
    assert pattern(QUOTA_RESERVED, cluster_queue="research").fullmatch(reserved.get("message") or ""), seen
    assert not is_true(wl, "Admitted"), seen
    assert any(pattern(PROVISIONING_REQUEST_CREATED).fullmatch(e["message"]) for e in seen["events"]), seen
    assert not _pods(cluster, "research", "too-wide"), "a pod was created before admission"
    print(f"no capacity: {seen}")


# --- 4. a request no flavor can hold ----------------------------------------------------------


@on_stacks("dev")
def test_waiting_for_more_gpus_than_the_pool_has(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    """4 GPUs, where the whole pool (all the team may borrow) has 3: it waits for ever."""
    cluster.kubectl.apply([job("research", "four-gpus", pods=4, requests=GPU, run_for=RUN_FOR)])
    cleanup.append(("research", "four-gpus"))
    seen = wait_pending_message(
        cluster,
        "research",
        "four-gpus",
        pattern(EXCEEDS_MAX_QUOTA, resource="nvidia.com/gpu", flavor="gpu", previous="0", request="4", maximum="3"),
    )
    reason = next(c["reason"] for c in seen["conditions"] if c["type"] == "QuotaReserved")
    print(f"too many GPUs ({reason}): {seen}")


@on_stacks("dev")
def test_waiting_for_gpus_in_a_queue_without_gpus(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    """A GPU job sent to LocalQueue `topology`, whose only flavor (tas) has no GPUs."""
    cluster.kubectl.apply([job("research", "gpu-in-topology", queue=TOPOLOGY_LOCAL_QUEUE_NAME, requests=GPU)])
    cleanup.append(("research", "gpu-in-topology"))
    seen = wait_pending_message(
        cluster,
        "research",
        "gpu-in-topology",
        pattern(EXCEEDS_MAX_QUOTA, resource="nvidia.com/gpu", flavor="tas", previous="0", request="1", maximum="0"),
    )
    print(f"no GPU flavor: {seen}")


@on_stacks("dev")
def test_waiting_for_a_resource_no_flavor_has(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    cluster.kubectl.apply(
        [job("research", "fpga", requests={"cpu": "100m", "memory": "64Mi", "example.com/fpga": "1"})]
    )
    cleanup.append(("research", "fpga"))
    seen = wait_pending_message(cluster, "research", "fpga", pattern(RESOURCE_UNAVAILABLE, resource="example.com/fpga"))
    print(f"unknown resource: {seen}")


# --- 5. too large for any node ----------------------------------------------------------------


@on_stacks("dev")
def test_waiting_admitted_but_no_node_can_hold_the_pod(cluster: StackCluster, cleanup: list[tuple[str, str]]) -> None:
    """10 vCPUs: research's cpu quota (18.77) admits it, but a cpu node has 7.82. Kueue does not
    look at node sizes here (no ProvisioningRequest on the cpu pool): the pod stays Pending."""
    cluster.kubectl.apply([job("research", "too-big-pod", requests={"cpu": "10", "memory": "1Gi"}, run_for=RUN_FOR)])
    cleanup.append(("research", "too-big-pod"))
    wait_admitted(cluster, "research", "too-big-pod", timeout=30)

    def pod_events() -> tuple[bool, Any]:
        pods = _pods(cluster, "research", "too-big-pod")
        events = events_of(cluster, "research", "Pod", pods[0]["metadata"]["name"]) if pods else []
        reasons = {e["reason"] for e in events}
        return {"FailedScheduling", "NotTriggerScaleUp"} <= reasons, {"pods": len(pods), "events": events}

    seen = wait_for("the pod's scheduling and scale-up events", pod_events, 60)
    scheduling = next(e for e in seen["events"] if e["reason"] == "FailedScheduling")
    assert pattern(NO_NODE_FITS).match(scheduling["message"]), scheduling
    no_scale_up = next(e for e in seen["events"] if e["reason"] == "NotTriggerScaleUp")
    assert pattern(NO_SCALE_UP).match(no_scale_up["message"]), no_scale_up
    assert INSUFFICIENT_CPU in no_scale_up["message"], no_scale_up
    pod = _pods(cluster, "research", "too-big-pod")[0]
    assert pod["status"].get("phase") == "Pending" and not pod["spec"].get("nodeName"), pod["status"]
    print(f"pod fits no node: {seen}")


# --- 6. outside the team namespaces -----------------------------------------------------------

OUTSIDE = "e2e-not-a-team"


@pytest.fixture
def outside(cluster: StackCluster) -> Iterator[str]:
    """A namespace without Kueue's label, as anyone might create."""
    cluster.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OUTSIDE}}])
    yield OUTSIDE
    cluster.kubectl.run("delete", "namespace", OUTSIDE, "--wait=true", "--timeout=60s", timeout=90)


@on_stacks("dev")
def test_waiting_outside_a_team_namespace(cluster: StackCluster, outside: str) -> None:
    """A GPU job with a queue label, in a namespace that is not a team's: Kueue never sees it, no
    Workload, and its pod cannot go onto the GPU pool (the pool's taint; Kueue adds the
    toleration only to jobs it admits), so it waits with the scheduler's event."""
    cluster.kubectl.apply([job(outside, "unqueued-gpu", requests=GPU, run_for=RUN_FOR)])

    def pending_pod() -> tuple[bool, Any]:
        pods = _pods(cluster, outside, "unqueued-gpu")
        events = events_of(cluster, outside, "Pod", pods[0]["metadata"]["name"]) if pods else []
        return any(e["reason"] == "FailedScheduling" for e in events), {"pods": len(pods), "events": events}

    seen = wait_for("the unmanaged GPU pod's scheduling event", pending_pod, 60)
    scheduling = next(e for e in seen["events"] if e["reason"] == "FailedScheduling")
    assert pattern(NO_NODE_FITS).match(scheduling["message"]), scheduling
    assert workload_of(cluster, outside, "unqueued-gpu") is None
    listed = cluster.kubectl.run("get", "workloads.kueue.x-k8s.io", "-n", outside)
    assert listed.stderr.strip() == NO_WORKLOADS.format(namespace=outside), (listed.stdout, listed.stderr)
    print(f"outside Kueue: {seen}")


# --- 7. a priority class that does not exist --------------------------------------------------


@on_stacks("dev")
def test_refused_with_an_unknown_priority_class(cluster: StackCluster) -> None:
    """`kubectl apply` fails at once, naming the classes there are; nothing is stored."""
    member = cluster.member("research")
    done = member.apply([job("research", "urgent", priority="urgent")], check=False)
    assert done.returncode != 0, done.stdout
    classes = ", ".join(pc.name for pc in cluster.config.priority_classes)
    expected = UNKNOWN_PRIORITY_CLASS.format(name="urgent", classes=classes, default="normal")
    assert expected in done.stderr, done.stderr
    assert cluster.kubectl.run("get", "job", "urgent", "-n", "research", check=False).returncode != 0
