"""One stack's whole in-cluster setup on a local control plane, built with the program's builders.

The cluster is AKS-shaped before the program runs: every pool at its starting size (nodes.py) and,
when a pool autoscales, the real cluster autoscaler with the ProvisioningRequest API it serves
(autoscaler.py), as AKS's managed autoscaler brings it.

`StackCluster.up()` does what `pulumi up` does inside the cluster, in the program's order, with
the program's own functions and names: Kueue's namespace and chart (release name, namespace and
values from components.kueue.values), the device plugin's when the stack has GPUs
(components.gpu.values), then every Kueue object from components.kueue.objects in
dependency order once Kueue's webhook serves, and with monitoring the scrape objects of
components.monitoring.scrape. Nothing is copied from the program.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.access.identity import identity_objects, identity_teams, with_client_ids
from components.access.members import access_objects
from components.config.names import KUEUE_NAMESPACE
from components.config.stack import StackConfig
from components.facts.device_plugin import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_RELEASE_NAME
from components.gpu.values import device_plugin_chart, device_plugin_values
from components.kueue.objects import queue_set
from components.multikueue.manager import Worker, manager_queue_set
from components.kueue.values import KUEUE_RELEASE_NAME, kueue_chart, kueue_helm_values
from components.governance.policies import pool_guard
from components.kueue.policies import aggregated_role_guard, priority_class_guard
from components.kueue.queues import references
from components.monitoring.scrape import scrape_objects, service_monitor

from .autoscaler import Autoscaler, autoscaled_pools
from .binaries import Binaries, provisioning_request_crd
from .cluster import SERVICE_CIDR, E2EError, Helm, Kubectl, KwokCluster, conditions, is_true, wait_for
from .forward import Forwarder
from .kueue_controller import KueueController
from .nodes import fake_nodes
from .operators import Operators
from .scraping import install_crd, service_monitor_crd_for
from .stacks import client_id

KUEUE_KINDS = ("Topology", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")
HELM_WAIT_SECONDS = 180


@dataclass
class StackCluster:
    stack: str
    config: StackConfig
    binaries: Binaries
    workdir: Path
    forwarder: Forwarder
    # The job operators' controllers by name (binaries.ensure_operator_binaries); empty: no operators.
    operator_binaries: dict[str, Path] = field(default_factory=dict)
    # The control plane's service range: distinct for every cluster that runs at the same time.
    service_cidr: str = SERVICE_CIDR
    # A MultiKueue manager's workers (testbed/multikueue.py): its objects are built from them,
    # and `secrets` (their kubeconfig Secrets, as MultiKueueManager makes them) come before those.
    workers: tuple[Worker, ...] = ()
    secrets: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    up_seconds: float = 0.0
    # What else down() must stop first: a test's helpers that outlive it (engine.KueueFollower).
    stoppers: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cluster = KwokCluster(f"kueue-aks-{self.stack}", self.binaries, self.workdir, self.service_cidr)
        self.kubectl = self.cluster.kubectl
        self.helm = Helm(self.binaries.helm, self.cluster.kubeconfig, self.workdir / "helm")
        self.kueue = KueueController(self.binaries.kueue, self.kubectl, self.workdir, self.forwarder)
        self.operators = Operators(self.kubectl, self.helm, self.workdir, self.forwarder, self.operator_binaries)
        self.queue_set = (
            manager_queue_set(self.config, self.workers)
            if self.config.multi_kueue.is_manager
            else queue_set(self.config)
        )
        self.objects = self.queue_set.objects
        self.initial_nodes = fake_nodes(self.config)
        self.autoscaler = Autoscaler(self.binaries.cluster_autoscaler, self.kubectl, self.workdir)

    @property
    def clusters(self) -> list[StackCluster]:
        """The control planes this stands for, whose logs the session keeps: itself (a MultiKueue
        group, testbed/multikueue.py, has several)."""
        return [self]

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """The nodes now: the autoscaler adds and removes them."""
        return self.kubectl.items("nodes")

    @staticmethod
    def member_user(team: str) -> str:
        return f"{team}-member@example.com"

    def member(self, team: str) -> Kubectl:
        """kubectl as a user in the team's member groups, as AKS's Entra ID sign-in presents them
        (the token's groups claim holds the group object IDs)."""
        groups = next(t.members for t in self.config.teams if t.name == team)
        return self.kubectl.impersonating(self.member_user(team), list(groups))

    def _timed(self, step: str, started: float) -> None:
        self.timings[step] = round(time.monotonic() - started, 1)

    def up(self, *, program: bool = True) -> None:
        """The platform (control plane, pools' nodes, the autoscaler), then unless `program` is
        False what `pulumi up` does in the cluster; without it the real engine does that part."""
        start = time.monotonic()
        self.cluster.create()
        self._timed("control plane", start)
        self.kubectl.apply(self.initial_nodes)
        wait_for("every fake node to be Ready", self._nodes_ready, 60)
        self._timed("nodes ready", start)
        if autoscaled_pools(self.config):
            # The platform's: AKS's autoscaler serves the API (components/autoscaling/component.py).
            install_crd(self.kubectl, yaml.safe_load(provisioning_request_crd().read_text()))
            self.autoscaler.start(self.config)
            self._timed("cluster autoscaler", start)
        if program:
            self._replay_program(start)

    def _replay_program(self, start: float) -> None:
        if self.operator_binaries:
            # The program's Kueue release waits for them: Kueue sets up each kind's controller at start-up.
            self.operators.install_crds(self.config)
            self._timed("operator CRDs", start)
        self.kubectl.apply(aggregated_role_guard())  # the release depends on it (components/kueue/install.py)
        if self.config.governance.enforce:
            self.kubectl.apply(pool_guard(self.config))  # components/governance/component.py
        self.install_kueue(kueue_helm_values(self.config), start)

        if self.config.has_gpu:
            self.kubectl.apply(
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEVICE_PLUGIN_NAMESPACE}}]
            )
            self.helm.install(
                DEVICE_PLUGIN_RELEASE_NAME,
                device_plugin_chart(self.config),
                namespace=DEVICE_PLUGIN_NAMESPACE,
                values=device_plugin_values(self.config),
                workdir=self.workdir,
                wait_seconds=HELM_WAIT_SECONDS,
            )
            self._timed("device plugin chart", start)

        self.kubectl.apply(priority_class_guard(self.config))  # before the namespaces (components/kueue/queues.py)
        if self.secrets:
            self.kubectl.apply(self.secrets)  # the program's Kueue objects wait for them (__main__.py)
        self.apply_objects()
        if access := access_objects(
            self.config, self.queue_set.local_queues
        ):  # after the team namespaces (components/access)
            self.kubectl.apply(access)
        if identities := identity_objects(self.config):  # components/access/component.py: TeamIdentities
            self.kubectl.apply(
                with_client_ids(identities, {t.name: client_id(t.name) for t in identity_teams(self.config)})
            )
        if self.config.monitoring.enabled:
            self.apply_scrape_objects()
        wait_for("every ClusterQueue and LocalQueue to be Active", self.queues_active, 60)
        self._timed("queues active", start)
        if self.operator_binaries:
            # After the queues: the program creates them in parallel, and Kueue needs no operator.
            self.operators.install(self.config, lambda step: self._timed(step, start))

    def install_kueue(self, values: Mapping[str, Any], start: float) -> None:
        """Kueue's namespace and chart with these values, then its controller, serving webhooks."""
        self.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}])
        self.helm.install(
            KUEUE_RELEASE_NAME,
            kueue_chart(self.config),
            namespace=KUEUE_NAMESPACE,
            values=values,
            workdir=self.workdir,
            wait_seconds=HELM_WAIT_SECONDS,
        )
        self._timed("kueue chart", start)
        self.kueue.start()
        self.kueue.wait_ready()
        self._timed("kueue webhook serving", start)

    def apply_scrape_objects(self) -> None:
        """Monitoring's objects (components/monitoring/component.py), after the ServiceMonitor CRD that the
        managed Prometheus add-on (or the Prometheus Operator) would have installed."""
        monitor = service_monitor(self.config)
        if monitor is not None:
            install_crd(self.kubectl, service_monitor_crd_for(monitor["apiVersion"]))
        self.kubectl.apply(scrape_objects(self.config))

    def apply_objects(self) -> None:
        """Create the program's objects in its dependency order (each after what it names), in one
        kubectl apply, which applies its documents one after another in their order."""
        done: set[tuple[str, str]] = set()
        for obj in self.objects:
            missing = [ref for ref in references(obj, self.objects) if ref not in done]
            if missing:
                raise E2EError(f"{obj['kind']} {obj['metadata']['name']} comes before {missing} in build order")
            meta = obj["metadata"]
            done.add((obj["kind"], f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]))
        self.kubectl.apply(self.objects)

    def _nodes_ready(self) -> tuple[bool, Any]:
        nodes = self.kubectl.items("nodes")
        not_ready = [n["metadata"]["name"] for n in nodes if not is_true(n, "Ready")]
        return len(nodes) == len(self.initial_nodes) and not not_ready, {"nodes": len(nodes), "not ready": not_ready}

    def queues_active(self) -> tuple[bool, Any]:
        queues = self.kubectl.items("clusterqueues.kueue.x-k8s.io") + self.kubectl.items(
            "localqueues.kueue.x-k8s.io", "-A"
        )
        inactive = {q["metadata"]["name"]: conditions(q) for q in queues if not is_true(q, "Active")}
        expected = sum(1 for o in self.objects if o["kind"] in ("ClusterQueue", "LocalQueue"))
        return len(queues) == expected and not inactive, {"queues": len(queues), "inactive": inactive}

    def stop_control_plane(self) -> None:
        """Lose the cluster (KwokCluster.stop); the processes it started here keep running, as
        they would beside an API server that went away."""
        self.cluster.stop()

    def start_control_plane(self) -> None:
        """Get the cluster back (KwokCluster.start), with Kueue serving again. Kueue exits once it
        cannot renew its leader Lease for renewDeadline (10 s), so after an outage it either renews
        it or exits soon; when it exited it is restarted here, as a kubelet would restart its pod.
        A restarted Kueue serves its webhooks at once but leads (admits) only once the dead
        process's Lease has expired, about 15 s (leaseDuration) later. The autoscaler and the job
        operators are not restarted."""
        back = time.time()
        self.cluster.start()
        wait_for("Kueue to renew its leader Lease or exit", lambda: self.kueue.settled_since(back), 30)
        if self.kueue.process is not None and self.kueue.process.poll() is not None:
            self.kueue.stop()
            self.kueue.start()
            self.kueue.wait_ready()

    def down(self) -> None:
        """Stop every process this cluster started; safe to call twice and after a failed up()."""
        while self.stoppers:
            self.stoppers.pop()()
        self.operators.stop()
        self.kueue.stop()
        self.autoscaler.stop()
        self.cluster.delete()

    def describe(self) -> Mapping[str, Any]:
        return {
            "stack": self.stack,
            "timings (s since start)": self.timings,
            "kueue log tail": self.kueue.log_tail(20),
            "autoscaler log tail": self.autoscaler.log_tail(20),
            "operator log tails": self.operators.describe(),
        }
