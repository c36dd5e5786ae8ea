"""The Workload-level tier: a set-up's queues under the real Kueue, with Workloads and no pods.

As Kueue's own scheduler performance test does (kubernetes-sigs/kueue
test/performance/scheduler/runner/controller/controller.go@v0.19.2): each trace job is a Workload
whose pod set is the Job's pod template, created at its arrival; once Kueue admits it the runner lets it "run" for its run time and then marks it
Finished, which gives its quota back. When Kueue evicts it (a preemption), the runner does what a
job controller does after stopping the pods: it clears the admission (QuotaReserved False, as
`workload.UnsetQuotaReservationWithCondition` does), and the Workload waits again; its next
admission starts its run from nothing. There is no Job, pod, node or kube-scheduler in the way,
so what is measured is the queue policy with Kueue's own latency, and every seed and load of a
set-up runs at once in lanes (lanes.py) on one control plane.

Every transition is seen on one watch of the Workloads and timed when seen; `History` per job is
the result (attempts.py turns it into figures).
"""

from __future__ import annotations

import heapq
import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from testbed.cluster import Api, E2EError, condition, is_true

from .attempts import STOPPED, Attempt, History
from .setups import Setup, job_object
from .trace import TraceJob

API = "kueue.x-k8s.io/v1beta2"
LANE_LABEL = "bench.kueue-aks.io/lane"
CREATORS = 4  # threads posting Workloads (each through Kueue's webhooks)
PATCHERS = 4  # threads finishing Workloads and completing evictions
MAX_RECORDED = 10  # unfinished Workloads read back at the end of a run
UNRESERVE_TRIES = 5


@dataclass(frozen=True)
class Planned:
    offset_s: float  # when the lane starts, since the run's start
    lane: str
    job: TraceJob

    @property
    def at_s(self) -> float:
        return self.offset_s + self.job.arrival_s


def workload_object(job: TraceJob, setup: Setup, lane: str) -> dict[str, Any]:
    """The Workload Kueue would make for the job's batch/v1 Job under `setup`, in the lane's
    namespace: one pod set of the job's pods with the Job's pod template."""
    template = job_object(job, setup)["spec"]["template"]
    return {
        "apiVersion": API,
        "kind": "Workload",
        "metadata": {"name": job.name, "namespace": f"{lane}-{job.team}", "labels": {LANE_LABEL: lane}},
        "spec": {
            "queueName": setup.queue_for(job),
            "podSets": [{"name": "main", "count": job.pods, "template": template}],
        },
    }


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reserved(wl: Mapping[str, Any]) -> bool:
    return is_true(wl, "QuotaReserved") or bool((wl.get("status") or {}).get("admission"))


def _holds_eviction(wl: Mapping[str, Any]) -> bool:
    """Evicted while still holding quota: waiting for its job controller (here, the runner)."""
    return is_true(wl, "Evicted") and _reserved(wl) and not is_true(wl, "Finished")


def unreserved(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that ends an eviction as a job controller does once the pods are gone: no
    admission, QuotaReserved and Admitted False; the resourceVersion makes it fail rather than
    overwrite a change Kueue made since."""
    conditions = []
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c.get("type") == "QuotaReserved":
            c = {
                **c,
                "status": "False",
                "reason": "Pending",
                "message": "evicted; stopped by the benchmark's runner",
                "lastTransitionTime": _now(),
            }
        elif c.get("type") == "Admitted" and c.get("status") == "True":
            c = {
                **c,
                "status": "False",
                "reason": "NoReservation",
                "message": "the quota reservation was removed",
                "lastTransitionTime": _now(),
            }
        conditions.append(c)
    return {
        "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
        "status": {"admission": None, "conditions": conditions},
    }


def finished(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that marks a Workload Finished (as the job controller does when the Job
    succeeds), on the version given."""
    conditions = [c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") != "Finished"]
    conditions.append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "ByTest",
            "message": "the benchmark's run time passed",
            "lastTransitionTime": _now(),
        }
    )
    return {"metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}}


class _Job:
    """The runner's view of one Workload."""

    def __init__(self, planned: Planned) -> None:
        self.planned = planned
        self.submitted: float | None = None
        self.attempts: list[Attempt] = []
        self.open: float | None = None  # when the current attempt was admitted
        self.unreserving = False
        self.last: Mapping[str, Any] = {}  # the Workload as last seen

    @property
    def done(self) -> bool:
        return any(a.finished for a in self.attempts)

    def running(self, attempt: int) -> bool:
        """Whether attempt number `attempt` still holds its quota as far as the watch has seen: not
        ended, and the version last seen not evicted. A finish patch is made only on such a version:
        on an evicted one it would succeed and end, in Kueue's books, a job the runner counts as
        thrown away and waiting again, so it would never run again."""
        return self.open is not None and len(self.attempts) == attempt and not is_true(self.last, "Evicted")


class Runner:
    """Creates the Workloads on schedule, follows them on a watch, finishes and un-reserves them."""

    def __init__(self, api_for: Any, setup: Setup, plan: Sequence[Planned]) -> None:
        self.api_for, self.setup = api_for, setup
        self.jobs = {f"{p.lane}-{p.job.team}/{p.job.name}": _Job(p) for p in plan}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._due: list[tuple[float, str, int]] = []
        self._patchers = ThreadPoolExecutor(PATCHERS)
        self._patch_apis = threading.local()
        self._connection: http.client.HTTPSConnection | None = None
        self.t0 = 0.0
        self.ended = 0.0  # seconds from the start to the stop
        self.t0_wall = 0.0  # the start, as Unix time: Kueue's log is timed so

    # --- time -----------------------------------------------------------------------------------
    def _t(self) -> float:
        return time.monotonic() - self.t0

    # --- the run --------------------------------------------------------------------------------
    def run(self, deadline_s: float) -> dict[str, History]:
        """Everything until every Workload finished or `deadline_s` after the start; a History per
        `<namespace>/<name>`, times since the start less the lane's offset."""
        self.t0 = time.monotonic()
        self.t0_wall = time.time()
        watcher = threading.Thread(target=self._watch_loop, name="outcomes-watch", daemon=True)
        finisher = threading.Thread(target=self._finish_loop, name="outcomes-finish", daemon=True)
        watcher.start()
        finisher.start()
        plan = sorted(self.jobs.items(), key=lambda kv: kv[1].planned.at_s)
        creators = [
            threading.Thread(target=self._create, args=(plan[i::CREATORS],), daemon=True) for i in range(CREATORS)
        ]
        for thread in creators:
            thread.start()
        try:
            while self._t() < deadline_s:
                if self.errors and any(e.startswith("create") for e in self.errors):
                    raise E2EError(f"{self.setup.name}: the API server refused Workloads: {self.errors[:3]}")
                with self._lock:
                    done = all(j.done for j in self.jobs.values())
                if done:
                    break
                time.sleep(0.2)
        finally:
            self.close()
        self.ended = self._t()
        self._record_unfinished()
        return {key: self._history(j, self.ended) for key, j in self.jobs.items()}

    def _record_unfinished(self) -> None:
        """Each Workload that never finished, as Kueue has it at the end, among the errors: what
        the runner saw of it is in its attempts, this says why it did not run again."""
        unfinished = [key for key, j in self.jobs.items() if not j.done]
        if not unfinished:
            return
        api = self.api_for()
        try:
            for key in unfinished[:MAX_RECORDED]:
                namespace, name = key.split("/")
                status, body = api.request("GET", f"/apis/{API}/namespaces/{namespace}/workloads/{name}")
                conditions = (
                    [
                        {k: c.get(k) for k in ("type", "status", "reason", "message")}
                        for c in (body.get("status") or {}).get("conditions") or []
                    ]
                    if status < 300
                    else status
                )
                self.errors.append(f"unfinished {key}: {conditions}")
        finally:
            api.close()

    def _history(self, j: _Job, end: float) -> History:
        offset = j.planned.offset_s
        attempts = [replace(a, start_s=a.start_s - offset, end_s=a.end_s - offset) for a in j.attempts]
        if j.open is not None:  # still running when stopped: an unfinished attempt, not thrown away
            attempts.append(Attempt(j.open - offset, end - offset, False, STOPPED))
        submitted = (j.submitted if j.submitted is not None else j.planned.at_s) - offset
        return History(j.planned.job, submitted, tuple(attempts))

    def close(self) -> None:
        self.stop.set()
        sock = self._connection.sock if self._connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._patchers.shutdown(wait=True, cancel_futures=True)

    # --- creation -------------------------------------------------------------------------------
    def _create(self, items: Sequence[tuple[str, _Job]]) -> None:
        api = self.api_for()
        try:
            for key, j in items:
                if self.stop.wait(max(0.0, self.t0 + j.planned.at_s - time.monotonic())):
                    return
                p = j.planned
                submitted = self._t()
                status, body = api.request(
                    "POST",
                    f"/apis/{API}/namespaces/{p.lane}-{p.job.team}/workloads",
                    workload_object(p.job, self.setup, p.lane),
                )
                if status >= 300:
                    self.errors.append(f"create {key}: {status} {body.get('message', body)}")
                    return
                with self._lock:
                    j.submitted = submitted
        finally:
            api.close()

    # --- the watch ------------------------------------------------------------------------------
    def _watch_loop(self) -> None:
        api = self.api_for()
        path = f"/apis/{API}/workloads?watch=1&labelSelector={LANE_LABEL}&timeoutSeconds=3600"
        while not self.stop.is_set():
            try:
                # Without a resourceVersion a watch first lists what exists: a restart misses nothing.
                self._connection = api.connect()
                self._connection.request("GET", path)
                response = self._connection.getresponse()
                if self._connection.sock is not None:  # a quiet minute is not a dead watch
                    self._connection.sock.settimeout(None)
                while not self.stop.is_set():
                    line = response.readline()
                    if not line:
                        break
                    self._seen(json.loads(line).get("object") or {})
            except (OSError, http.client.HTTPException, ValueError) as err:
                if not self.stop.is_set():
                    self.errors.append(f"watch: {err!r}")
            finally:
                if self._connection is not None:
                    self._connection.close()

    def _seen(self, wl: Mapping[str, Any]) -> None:
        meta = wl.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        now = self._t()
        with self._lock:
            j = self.jobs.get(key)
            # After the finish patch the watch can still bring the versions before it, still
            # admitted: a job that finished never runs again, so they are no new attempt.
            if j is None or is_true(wl, "Finished") or j.done:
                return
            j.last = wl
            if _holds_eviction(wl):
                if j.open is not None:
                    preempted = condition(wl, "Preempted")
                    reason = (
                        (preempted or {}).get("reason")
                        if is_true(wl, "Preempted")
                        else (condition(wl, "Evicted") or {}).get("reason")
                    )
                    j.attempts.append(Attempt(j.open, now, False, reason or ""))
                    j.open = None
                if not j.unreserving:
                    j.unreserving = True
                    self._patchers.submit(self._unreserve, key, dict(wl))
                return
            if not _reserved(wl):
                j.unreserving = False
            if is_true(wl, "Admitted") and j.open is None:
                j.open = now
                heapq.heappush(self._due, (now + j.planned.job.duration_s, key, len(j.attempts)))

    # --- patches --------------------------------------------------------------------------------
    def _api(self) -> Api:
        api = getattr(self._patch_apis, "api", None)
        if api is None:
            api = self._patch_apis.api = self.api_for()
        return api

    def _unreserve(self, key: str, wl: Mapping[str, Any]) -> None:
        """End the eviction; on a conflict, read the Workload again and retry: the event of the
        change that conflicted may have come and gone while this patch was on its way, and no
        other event follows until the eviction ends. Kueue can write a Workload again right after
        evicting it (seen: an admission and an eviction crossing in one scheduling cycle, the read
        in between not evicted); the eviction the watch saw meanwhile is ended here, since the
        watch passes evictions over while one is being ended."""
        namespace, name = key.split("/")
        path = f"/apis/{API}/namespaces/{namespace}/workloads/{name}"
        status, body, cleared = 0, {}, False
        try:
            for _ in range(UNRESERVE_TRIES):
                status, body = self._api().request(
                    "PATCH", f"{path}/status", unreserved(wl), content_type="application/merge-patch+json"
                )
                cleared = status < 300
                if status != 409:
                    break
                status, body = self._api().request("GET", path)
                if status >= 300 or not _holds_eviction(body):
                    break
                wl = body
        except (OSError, http.client.HTTPException, ValueError) as err:
            # In a pool thread an exception would vanish with its Future and the eviction stay.
            self._patch_apis.api = None
            status, body = 0, {"message": repr(err)}
        if status == 0 or status >= 300:
            self.errors.append(f"unreserve {key}: {status} {body.get('message', body)}")
        examined = (body.get("metadata") or {}).get("resourceVersion")
        with self._lock:
            j = self.jobs[key]
            j.unreserving = False
            last = j.last
            # Not ended here because the version read was not (or not yet) an eviction: end the
            # one the watch brought since, if it is another version.
            if (
                not cleared
                and 0 < status < 300
                and _holds_eviction(last)
                and (last.get("metadata") or {}).get("resourceVersion") != examined
            ):
                j.unreserving = True
                self._patchers.submit(self._unreserve, key, dict(last))

    def _finish_loop(self) -> None:
        while not self.stop.wait(0.02):
            while True:
                with self._lock:
                    if not self._due or self._due[0][0] > self._t():
                        break
                    _, key, attempt = heapq.heappop(self._due)
                    if not self.jobs[key].running(attempt):
                        continue  # evicted meanwhile
                self._patchers.submit(self._finish, key, attempt)

    def _finish(self, key: str, attempt: int) -> None:
        """Mark it Finished, on the version last seen: if Kueue evicted it meanwhile the patch
        conflicts, and the eviction stands (the run is thrown away)."""
        namespace, name = key.split("/")
        with self._lock:  # checked again: the watch may have seen the eviction since it was due
            j = self.jobs[key]
            if not j.running(attempt):
                return
            last = j.last
        status, body = self._api().request(
            "PATCH",
            f"/apis/{API}/namespaces/{namespace}/workloads/{name}/status",
            finished(last),
            content_type="application/merge-patch+json",
        )
        now = self._t()
        with self._lock:
            j = self.jobs[key]
            if status == 409:  # changed since: try again on the next version, unless it was evicted
                heapq.heappush(self._due, (now + 0.05, key, attempt))
            elif status >= 300:
                self.errors.append(f"finish {key}: {status} {body.get('message', body)}")
            elif j.open is not None and len(j.attempts) == attempt:
                j.attempts.append(Attempt(j.open, now, True))
                j.open = None
