"""`kueue-aks:multiKueue`: a stack's MultiKueue role, a manager's worker stacks and its dispatch
settings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..k8s.names import is_dns1123_label, is_label_value
from .checks import Problems, Reader, checked, shown
from .keys import MULTIKUEUE
from .kueue import KueueSettings
from .names import CONFIG_PREFIX

# MultiKueueConfig.spec.clusters holds 1 to 20 names (kueue v0.19.2 apis/kueue/v1beta2/multikueue_types.go).
MAX_WORKERS = 20


# The dispatchers Kueue builds in (kubernetes-sigs/kueue pkg/controller/workloaddispatcher@v0.19.2); any other
# name would wait for an external controller this program does not install.
DISPATCHERS = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}


# Go's time.ParseDuration, which reads Kueue's configuration, refuses a sum past int64 nanoseconds
# (about 292 years): Kueue's controller would not start, after `pulumi up`.
_DURATION_PART = re.compile(r"([0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_NANOSECONDS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
_NANOSECONDS["h"] = 60 * _NANOSECONDS["m"]
MAX_DURATION_NS = 2**63 - 1


def duration_problem(v: str) -> str | None:
    """What is wrong with a duration the key's pattern allows, or None."""
    total = sum(int(n) * _NANOSECONDS[unit] for n, unit in _DURATION_PART.findall(v))
    if total > MAX_DURATION_NS:
        return f"{shown(v)} is longer than a Go duration holds (about 292 years): Kueue would refuse its configuration"
    return None


@dataclass(frozen=True)
class WorkerStack:
    """A MultiKueue worker as the manager names it: the MultiKueueCluster's name and the kueue-aks
    worker stack whose outputs give its credentials, queues and quotas."""

    name: str
    stack: str


@dataclass(frozen=True)
class MultiKueue:
    """kueue-aks:multiKueue. A worker is the ordinary single cluster plus a ServiceAccount whose
    kubeconfig it exports; a manager keeps the teams' queues and dispatches to its workers."""

    role: str = "none"  # none | worker | manager
    server: str | None = None  # worker: the API server URL its managers dial; default the cluster's own
    workers: tuple[WorkerStack, ...] = ()  # manager: in dispatch preference order
    origin: str = ""  # manager: the label value on its objects in the workers; default kueue-aks-<stack>
    worker_lost_timeout: str = "15m"
    gc_interval: str = "1m"
    dispatcher: str = "AllAtOnce"

    @property
    def is_manager(self) -> bool:
        return self.role == "manager"

    @property
    def is_worker(self) -> bool:
        return self.role == "worker"


def parse_multikueue(problems: Problems, raw: Any, stack: str, kueue: KueueSettings) -> MultiKueue:
    manager_keys = ("workers", "origin", "workerLostTimeout", "gcInterval", "dispatcher")
    r = Reader(problems, MULTIKUEUE.name, raw, MULTIKUEUE)
    if not r.value:
        return MultiKueue()
    role = r.get("role", None)

    origin = checked(
        problems,
        lambda v: (
            None
            if v and is_label_value(v)
            else (
                f"{shown(v)} must be a label value (≤ 63 letters, digits, '-', '_' or '.'); Kueue labels the "
                "manager's objects in the workers with it"
            )
        ),
    )
    durations = checked(problems, duration_problem)
    worker_spec = MULTIKUEUE.key("workers").items
    assert worker_spec is not None

    def workers(p: str, items: list[Any]) -> Any:
        if not 1 <= len(items) <= MAX_WORKERS:
            problems.add(p, f"lists {len(items)} workers; a MultiKueueConfig takes 1 to {MAX_WORKERS}")
        out: list[WorkerStack] = []
        for i, item in enumerate(items):
            w = Reader(problems, f"{p}[{i}]", item, worker_spec)
            if not w.value:
                if item is None or isinstance(item, Mapping):
                    problems.add(f"{p}[{i}]", "must be an object with name and stack")
                continue

            name = w.get(
                "name",
                None,
                checked(
                    problems,
                    lambda x: (
                        None
                        if is_dns1123_label(x)
                        else f"{shown(x)} must be a DNS-1123 label; it names the worker's MultiKueueCluster"
                    ),
                ),
            )
            ref = w.get("stack", None)
            if name is None or ref is None:
                continue
            if any(o.name == name for o in out):
                problems.add(w.at("name"), f"{name!r} names another worker too; worker names must be unique")
            elif any(o.stack == ref for o in out):
                problems.add(w.at("stack"), f"{ref!r} is listed twice; each worker stack is one cluster")
            else:
                out.append(WorkerStack(name, ref))
        return tuple(out)

    settings = MultiKueue(
        role=role,
        server=r.get("server", None),
        workers=r.get("workers", (), workers),
        origin=r.get("origin", f"kueue-aks-{stack}"[:63].rstrip("-_."), origin),
        worker_lost_timeout=r.get("workerLostTimeout", MultiKueue.worker_lost_timeout, durations),
        gc_interval=r.get("gcInterval", MultiKueue.gc_interval, durations),
        dispatcher=r.get("dispatcher", MultiKueue.dispatcher),
    )
    if role is None:  # its problem is recorded; the other keys were checked above
        return MultiKueue()
    if role != "manager":
        for key in manager_keys:
            if key in r.value:
                problems.add(r.at(key), f"configures a MultiKueue manager; this stack's role is {role!r}")
    elif "workers" not in r.value:
        problems.add(
            r.at("workers"),
            "is required for a manager: the worker stacks it dispatches to, [{name, stack}], in order of preference",
        )
    if role == "manager" and "server" in r.value:
        problems.add(r.at("server"), "is a worker's key: the URL its managers dial")
    if role != "none" and kueue.feature_gates.get("MultiKueue", kueue.release.gates["MultiKueue"].default) is False:
        problems.add(
            f"{CONFIG_PREFIX}:kueue.featureGates.MultiKueue",
            f"is false, but multiKueue.role is {role!r}; enable the gate or set role: none",
        )
    return settings if role != "none" else MultiKueue()
