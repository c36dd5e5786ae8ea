"""Three control planes at once: the MultiKueue example's manager and its two workers.

Each is a StackCluster of its example stack (examples/multikueue/), brought up as `pulumi up` would,
workers first, as docs/multikueue.md tells admins to deploy them:
- each worker: the ordinary stack, then its access exactly as MultiKueueWorker makes it
  (components.multikueue.worker.manager_access_objects: the ServiceAccount, the ClusterRole with the
  worker's rules, the binding and the token Secret), and the kubeconfig built from what the
  token controller put in that Secret (worker_kubeconfig), with the API server's loopback URL;
- the manager: the workers' facts (worker_facts, as the worker stacks export them) checked with
  worker_problems, its kubeconfig Secrets (secret_object), then its Kueue objects summed from the
  workers' (manager_queue_set), as the program builds them from its StackReferences.
Each cluster has a service range of its own; each Kueue its own ports and cert folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.config.names import KUEUE_NAMESPACE
from components.multikueue.manager import Worker, secret_object, worker_problems
from components.multikueue.worker import TOKEN_SECRET, manager_access_objects, worker_facts, worker_kubeconfig

from .binaries import Binaries
from .cluster import E2EError, status, wait_for
from .forward import Forwarder
from .jobs import workload_of
from .stack_cluster import StackCluster
from .stacks import MULTIKUEUE_MANAGER, MULTIKUEUE_WORKERS, load

MULTIKUEUE = "multikueue"  # the tests' `stack`: the three clusters together
# A service range each: the forwarder serves every cluster's ClusterIPs on one host.
SERVICE_RANGES = {
    MULTIKUEUE_MANAGER: "127.101.0.0/16",
    MULTIKUEUE_WORKERS[0]: "127.102.0.0/16",
    MULTIKUEUE_WORKERS[1]: "127.103.0.0/16",
}


def token_data(sc: StackCluster, secret: str = TOKEN_SECRET, timeout: float = 30) -> dict[str, str]:
    """A token Secret's data once the token controller filled in the token and the CA."""

    def filled() -> tuple[bool, Any]:
        data = sc.kubectl.get("secret", secret, "-n", KUEUE_NAMESPACE).get("data") or {}
        return {"token", "ca.crt"} <= set(data), data if {"token", "ca.crt"} <= set(data) else sorted(data)

    return wait_for(f"the token controller to fill {KUEUE_NAMESPACE}/{secret} on {sc.stack}", filled, timeout)  # type: ignore[no-any-return]


def kubeconfig_with(worker: StackCluster, secret: str = TOKEN_SECRET) -> str:
    """A worker's kubeconfig as its stack exports it: a token Secret's data and its API server."""
    return worker_kubeconfig(worker.config.cluster.name, worker.cluster.server_url(), token_data(worker, secret))


class MultiKueueClusters:
    """The manager and its workers (by the manager's name for each), owned together: up() brings
    them all up, down() stops every process any of them started."""

    stack = MULTIKUEUE

    def __init__(
        self, binaries: Binaries, root: Path, forwarder: Forwarder, operator_binaries: dict[str, Path]
    ) -> None:
        self.binaries, self.root, self.forwarder, self.operator_binaries = binaries, root, forwarder, operator_binaries
        self.manager_config = load(MULTIKUEUE_MANAGER)
        by_stack = {w.stack.rsplit("/", 1)[-1]: w.name for w in self.manager_config.multi_kueue.workers}
        self.workers = {by_stack[stack]: self._cluster(stack) for stack in MULTIKUEUE_WORKERS}
        self.manager: StackCluster | None = None
        self.kubeconfigs: dict[str, str] = {}
        self.timings: dict[str, float] = {}
        self.up_seconds = 0.0  # set by the session fixture (conftest.ControlPlanes.multikueue)

    def _cluster(self, stack: str, workers: tuple[Worker, ...] = ()) -> StackCluster:
        return StackCluster(
            stack,
            load(stack),
            self.binaries,
            self.root / stack,
            self.forwarder,
            self.operator_binaries,
            service_cidr=SERVICE_RANGES[stack],
            workers=workers,
        )

    @property
    def clusters(self) -> list[StackCluster]:
        return [*self.workers.values(), *([self.manager] if self.manager else [])]

    def up(self) -> None:
        start = time.monotonic()
        for name, worker in self.workers.items():
            worker.up()
            worker.kubectl.apply(manager_access_objects(worker.config))
            self.kubeconfigs[name] = kubeconfig_with(worker)
            self.timings[f"worker {name} up"] = round(time.monotonic() - start, 1)
        workers = tuple(
            Worker(w.name, w.stack, worker_facts(self.workers[w.name].config))
            for w in self.manager_config.multi_kueue.workers
        )
        problems = worker_problems(self.manager_config, workers)
        if problems:
            raise E2EError("the example workers do not fit the manager:\n" + "\n".join(map(str, problems)))
        self.manager = self._cluster(MULTIKUEUE_MANAGER, workers)
        self.manager.secrets = [secret_object(name, kubeconfig) for name, kubeconfig in self.kubeconfigs.items()]
        self.manager.up()
        self.timings["manager up"] = round(time.monotonic() - start, 1)

    def down(self) -> None:
        for sc in reversed(self.clusters):
            sc.down()

    def describe(self) -> Mapping[str, Any]:
        return {"timings (s since start)": self.timings, "clusters": [sc.describe() for sc in self.clusters]}

    # --- what the scenarios read ------------------------------------------------------------

    @property
    def m(self) -> StackCluster:
        assert self.manager is not None, "the manager is not up"
        return self.manager

    def dispatched(
        self, namespace: str, name: str, kind: str = "Job", timeout: float = 60
    ) -> tuple[dict[str, Any], str]:
        """The manager's Workload once a worker admitted it, and that worker's name."""

        def probe() -> tuple[bool, Any]:
            wl = workload_of(self.m, namespace, name, kind)
            if not wl:  # Kueue has not made it yet: wait on
                return False, "no Workload on the manager yet"
            where = status(wl).get("clusterName")
            seen = {
                "clusterName": where,
                "nominated": status(wl).get("nominatedClusterNames"),
                "admissionChecks": status(wl).get("admissionChecks"),
                "conditions": status(wl).get("conditions"),
            }
            return bool(where), (wl, where) if where else seen

        return wait_for(f"{kind} {namespace}/{name} to be admitted by a worker", probe, timeout)  # type: ignore[no-any-return]

    def remote(self, worker: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object in a worker, or None."""
        done = self.workers[worker].kubectl.run(
            "get", resource, "-n", namespace, name, "-o", "json", "--ignore-not-found"
        )
        return json.loads(done.stdout) if done.stdout.strip() else None
