"""Admission throughput: the program's queues for a large stack against Kueue's baseline shape.

Kueue's own scheduler performance test (kubernetes-sigs/kueue test/performance/scheduler@v0.19.2) creates
Workloads directly, with no Job and no pod, lets each "run" for its class's time after admission
and then marks it Finished; it reports time to admission per class and the run's wall time. This
does the same, on the tier's control plane with the real Kueue controller, for two queue designs
one after the other:
- `kueue-baseline`: the baseline's shape (configs/baseline/generator.yaml): 5 cohorts × 6
  ClusterQueues, one flavor, cpu quota 20 with borrowingLimit 100, preemption Any/LowerPriority,
  classes small (1 cpu, 200 ms, every 100 ms), medium (5 cpu, 500 ms, every 500 ms) and large (20
  cpu, 1 s, every 1.2 s), with Kueue's chart defaults (no fair sharing), 600 of its 15,000 workloads;
- `kueue-aks 200×12`: the program's objects and Helm values for testbed.stacks' generated stack of
  200 teams over 12 pools, each team sent the same classes at the same pace, in the same total.
Workload priorities are left out (the baseline gives each class one; the program's teams would
need WorkloadPriorityClasses), so both run at one priority.
"""

from __future__ import annotations

import heapq
import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from testbed.binaries import Binaries
from testbed.cluster import Api, E2EError, is_true
from testbed.forward import Forwarder
from testbed.stack_cluster import StackCluster
from testbed.stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE, generated_config
from components.config.parse import parse_config, raw_from_stack_file
from components.kueue.objects import LOCAL_QUEUE_NAME, build_objects
from components.kueue.values import kueue_helm_values

from .metrics import percentile
from .replay import with_kueue
from .setups import chart_config

API = "kueue.x-k8s.io/v1beta2"
LABEL = "bench.kueue-aks.io/throughput"


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    cpu: int
    runtime_s: float
    interval_s: float
    count: int  # per queue


# The baseline's classes (configs/baseline/generator.yaml); counts are per queue, in proportion.
BASELINE_CLASSES = (
    WorkloadClass("small", 1, 0.2, 0.1, 35),
    WorkloadClass("medium", 5, 0.5, 0.5, 10),
    WorkloadClass("large", 20, 1.0, 1.2, 5),
)
COHORTS, QUEUES_PER_COHORT = 5, 6
PROGRAM_TEAMS, PROGRAM_POOLS = 200, 12


def baseline_objects() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The baseline's flavor, ClusterQueues, namespaces and LocalQueues; and (namespace, LocalQueue) per queue."""
    objects: list[dict[str, Any]] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "rf"}}]
    queues = []
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            name = f"cq-{q}-cohort-{c}"
            objects.append(
                {
                    "apiVersion": API,
                    "kind": "ClusterQueue",
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": f"cohort-{c}",
                        "namespaceSelector": {},
                        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu"],
                                "flavors": [
                                    {
                                        "name": "rf",
                                        "resources": [{"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}],
                                    }
                                ],
                            }
                        ],
                    },
                }
            )
            objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            objects.append(
                {
                    "apiVersion": API,
                    "kind": "LocalQueue",
                    "metadata": {"name": "lq", "namespace": name},
                    "spec": {"clusterQueue": name},
                }
            )
            queues.append((name, "lq"))
    return objects, queues


def program_config() -> Any:
    config = generated_config(PROGRAM_TEAMS, PROGRAM_POOLS)
    config["kueue-aks:kueue"] = {"chart": str(KUEUE_CHART_FILE)}
    config["kueue-aks:devicePlugin"] = {"chart": str(DEVICE_PLUGIN_CHART_FILE)}
    raw, location = raw_from_stack_file({"config": config})
    return parse_config(raw, stack="bench-outcomes-throughput", location=location)


def schedule(
    queues: Sequence[tuple[str, str]], classes: Sequence[WorkloadClass], total: int
) -> list[tuple[float, str, str, WorkloadClass]]:
    """(at, namespace, LocalQueue, class) for `total` workloads, the classes in the proportions of
    their counts: a class's k-th workload goes to queue k mod Q, each queue getting its workloads of
    the class at the class's interval, as the baseline paces each queue."""
    per_queue = sum(c.count for c in classes)
    out = []
    for cls in classes:
        for k in range(round(total * cls.count / per_queue)):
            namespace, queue = queues[k % len(queues)]
            out.append((k // len(queues) * cls.interval_s, namespace, queue, cls))
    return sorted(out, key=lambda x: x[0])


def _workload(name: str, namespace: str, queue: str, cls: WorkloadClass) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: cls.name}},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "image": "busybox:1.37", "resources": {"requests": {"cpu": str(cls.cpu)}}}
                            ],
                        }
                    },
                }
            ],
        },
    }


class _Finisher(threading.Thread):
    """Watches the Workloads; `runtime` after each one's admission, marks it Finished (as the
    performance test's runner does), which gives its quota back."""

    def __init__(self, api: Api, runtimes: Mapping[str, float], timeout_s: float) -> None:
        super().__init__(name="throughput-finisher", daemon=True)
        self.api, self.runtimes, self.timeout_s = api, runtimes, timeout_s
        self.connection: http.client.HTTPSConnection | None = None
        self.admitted: dict[str, float] = {}
        self.finished: set[str] = set()
        self.stop = threading.Event()
        self.errors: list[str] = []
        self._due: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        threading.Thread(target=self._finish_loop, name="throughput-finish", daemon=True).start()
        path = f"/apis/{API}/workloads?watch=1&labelSelector={LABEL}&timeoutSeconds={int(self.timeout_s)}"
        while not self.stop.is_set():
            try:
                self._watch(path)
            except (OSError, http.client.HTTPException, ValueError) as err:  # a dropped watch: start another
                if not self.stop.is_set():
                    self.errors.append(f"watch: {err!r}")

    def close(self) -> None:
        """Stop: shut the watch's socket down under the thread reading it (closing the connection
        from here would wait on that read), then let the thread end."""
        self.stop.set()
        sock = self.connection.sock if self.connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass
        self.join(timeout=10)

    def _watch(self, path: str) -> None:
        # A watch starting without a resourceVersion first lists every existing object as ADDED,
        # so a restarted watch misses no admission.
        self.connection = self.api.connect()
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        while not self.stop.is_set():
            line = response.readline()
            if not line:
                self.connection.close()
                return
            event = json.loads(line)
            wl = event.get("object") or {}
            meta = wl.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if key in self.admitted or not is_true(wl, "Admitted"):
                continue
            now = time.monotonic()
            self.admitted[key] = now
            with self._lock:
                heapq.heappush(self._due, (now + self.runtimes[key], meta["namespace"], meta["name"]))

    def _finish_loop(self) -> None:
        while not self.stop.wait(0.02):
            while True:
                with self._lock:
                    if not self._due or self._due[0][0] > time.monotonic():
                        break
                    _, namespace, name = heapq.heappop(self._due)
                condition = {
                    "type": "Finished",
                    "status": "True",
                    "reason": "ByTest",
                    "message": "the benchmark's run time passed",
                    "lastTransitionTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
                status, body = self.api.request(
                    "PATCH",
                    f"/apis/{API}/namespaces/{namespace}/workloads/{name}/status",
                    [{"op": "add", "path": "/status/conditions/-", "value": condition}],
                    content_type="application/json-patch+json",
                )
                if status >= 300:
                    self.errors.append(f"finish {namespace}/{name}: {status} {body.get('message', body)}")
                else:
                    self.finished.add(f"{namespace}/{name}")


CREATORS = 4  # threads posting Workloads: one cannot keep the baseline's pace through Kueue's webhook


def _create(
    api: Api,
    items: Sequence[tuple[str, float, str, str, WorkloadClass]],
    t0: float,
    created: dict[str, float],
    errors: list[str],
) -> None:
    for name, at, namespace, queue, cls in items:
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        status, body = api.request(
            "POST", f"/apis/{API}/namespaces/{namespace}/workloads", _workload(name, namespace, queue, cls)
        )
        if status >= 300:
            errors.append(f"creating workload {namespace}/{name}: {status} {body.get('message', body)}")
            return
        created[f"{namespace}/{name}"] = time.monotonic()


def drive(
    sc: StackCluster, name: str, queues: Sequence[tuple[str, str]], total: int, timeout_s: float
) -> dict[str, Any]:
    """Create the workloads on schedule, finish each after its run time; admission figures."""
    plan = [
        (f"wl-{i:05d}", at, ns, q, cls) for i, (at, ns, q, cls) in enumerate(schedule(queues, BASELINE_CLASSES, total))
    ]
    runtimes = {f"{ns}/{n}": cls.runtime_s for n, _, ns, _, cls in plan}
    finisher = _Finisher(Api(sc.kubectl.kubeconfig, timeout=timeout_s + 60), runtimes, timeout_s)
    finisher.start()
    created: dict[str, float] = {}
    errors: list[str] = []
    apis = [Api(sc.kubectl.kubeconfig) for _ in range(CREATORS)]
    t0 = time.monotonic()
    creators = [
        threading.Thread(target=_create, args=(api, plan[i::CREATORS], t0, created, errors), daemon=True)
        for i, api in enumerate(apis)
    ]
    try:
        for thread in creators:
            thread.start()
        for thread in creators:
            thread.join(timeout_s)
        if errors:
            raise E2EError(f"{name}: {errors[:3]}")
        deadline = t0 + timeout_s
        while len(finisher.finished) < len(plan) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        finisher.close()
        for api in apis:
            api.close()
    # A watch event can arrive before the POST that caused it returns: such a wait counts as 0. A
    # workload not admitted by the timeout waits until then, and is counted as not admitted.
    end = time.monotonic()
    waits = {k: max(0.0, finisher.admitted.get(k, end) - created[k]) for k in created}
    admitted = [k for k in created if k in finisher.admitted]
    span = (max(finisher.admitted[k] for k in admitted) if admitted else end) - t0
    by_class: dict[str, list[float]] = {}
    for n, _, namespace, _, cls in plan:
        by_class.setdefault(cls.name, []).append(waits[f"{namespace}/{n}"])
    return {
        "name": name,
        "workloads": len(plan),
        "queues": len(queues),
        "not_admitted": len(plan) - len(admitted),
        "seconds_to_last_creation": round(max(created.values()) - t0, 1),
        "seconds_to_last_admission": round(span, 1),
        "admitted_per_second": round(len(admitted) / span, 1),
        "time_to_admission_p50_s": round(percentile(list(waits.values()), 50), 2),
        "time_to_admission_p95_s": round(percentile(list(waits.values()), 95), 2),
        "average_time_to_admission_s": {c: round(sum(v) / len(v), 2) for c, v in by_class.items()},
    }


def _up(
    name: str,
    config: Any,
    values: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    binaries: Binaries,
    workdir: Path,
    forwarder: Forwarder,
) -> StackCluster:
    sc = StackCluster(name, config, binaries, workdir / name, forwarder)
    try:
        started = time.monotonic()
        sc.up(program=False)
        with_kueue(sc, name, values, objects, started)
        return sc
    except BaseException:
        sc.down()
        raise


def measure(
    binaries: Binaries, workdir: Path, forwarder: Forwarder, total: int = 600, timeout_s: float = 150
) -> dict[str, Any]:
    """Both shapes, each on its own control plane, with the same number of workloads."""
    config = program_config()
    shapes: list[dict[str, Any]] = []
    objects, queues = baseline_objects()
    defaults = yaml.safe_dump(chart_config(str(KUEUE_CHART_FILE)), sort_keys=False)
    chart_defaults = {"managerConfig": {"controllerManagerConfigYaml": defaults}}
    for name, cfg, values, objs, qs in (
        ("kueue-baseline", config, chart_defaults, objects, queues),
        (
            f"kueue-aks {PROGRAM_TEAMS}x{PROGRAM_POOLS}",
            config,
            kueue_helm_values(config),
            build_objects(config),
            [(t.name, LOCAL_QUEUE_NAME) for t in config.teams],
        ),
    ):
        sc = _up(f"throughput-{len(shapes)}", cfg, values, objs, binaries, workdir, forwarder)
        try:
            shapes.append(drive(sc, name, qs, total, timeout_s))
        finally:
            sc.down()
    return {"shapes": shapes}
