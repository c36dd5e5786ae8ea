"""The real Kueue controller, run as a local process with what the chart rendered.

The chart's pods are kwok's fakes, so the `kueue` binary runs here instead, with:
- the manager config from the chart's ConfigMap and the container arguments from its Deployment
  (which set no port or folder). The copy differs where a process on this host must differ from
  a pod (`local_config`): the leader-election namespace (a pod reads it from its service-account
  token folder, which does not exist here), and its own free ports on 127.0.0.1 and its own cert
  folder, so that several Kueues (one per cluster, as MultiKueue's manager and workers) run side
  by side;
- the webhook serving certificate that Kueue's internal cert manager writes into the Secret, copied
  into that cert folder, as the kubelet would for the Secret volume; it is emptied before every
  start;
- the Services' ClusterIPs forwarded to the process's ports, as kube-proxy would, and for the
  visibility Service a stand-in EndpointSlice, so that its APIService is Available (`ENDPOINTS_OWNER`).
Kueue talks to the API server with the cluster admin's kubeconfig, not a service account.

One path stays shared: the visibility server keeps a self-signed certificate in the hard-coded
/visibility (pkg/visibility/server.go), written once and then read by every Kueue; harmless, the
APIService skips TLS verification (insecureSkipTLSVerify).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from components.config.names import KUEUE_NAMESPACE
from components.kueue.values import KUEUE_RELEASE_NAME, KUEUE_WEBHOOK_SERVICE
from components.monitoring.scrape import METRICS_SERVICE

from .cluster import (
    Api,
    E2EError,
    Kubectl,
    StopWaiting,
    api_create,
    copy_secret_keys,
    free_ports,
    log_tail,
    micro_time,
    port_is_free,
    stop_process,
    wait_for,
)
from .forward import Forwarder, forward_to

CERT_SECRET = f"{KUEUE_RELEASE_NAME}-webhook-server-cert"
CONFIG_MAP = f"{KUEUE_RELEASE_NAME}-manager-config"
DEPLOYMENT = f"{KUEUE_RELEASE_NAME}-controller-manager"
VISIBILITY_SERVICE = f"{KUEUE_RELEASE_NAME}-visibility-server"
# Kueue's leader-election Lease name when the config sets none (apis/config/v1beta2/defaults.go).
LEADER_ELECTION_ID = "c1f6bfd2.kueue.x-k8s.io"
# The webhook Service's port, where the API server calls it (and the tests stand in for Kueue).
SERVICE_PORT = 443
# The aggregator marks an APIService Available only when its Service has an EndpointSlice with a
# ready address on the Service's port name, and then calls the ClusterIP (aggregator routing is
# off), which forward_services serves. The pods' loopback IPs are refused in EndpointSlices, so the
# harness writes one itself: a documentation address (RFC 5737) that nothing dials, and a
# managed-by of its own, which the endpointslice controller leaves alone.
ENDPOINTS_OWNER = "kueue-aks-e2e"
STAND_IN_ADDRESS = "192.0.2.1"

# Ready means Kueue's webhook answers for a real object: a server-side dry run passes it.
PROBE_PATH = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"
PROBE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "e2e-readiness-probe"},
}


def rendered_config(kubectl: Kubectl) -> tuple[dict[str, Any], list[str]]:
    """The manager config and container args exactly as the chart rendered them in the cluster."""
    cm = kubectl.get("configmap", CONFIG_MAP, "-n", KUEUE_NAMESPACE)
    config = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    deploy = kubectl.get("deployment", DEPLOYMENT, "-n", KUEUE_NAMESPACE)
    container = next(c for c in deploy["spec"]["template"]["spec"]["containers"] if c["name"] == "manager")
    return config, list(container.get("args", []))


@dataclass(frozen=True)
class KueuePorts:
    """The ports of Kueue's servers: in its pod, as the rendered config sets them (`in_pod`), or of
    one process here (`free`), which cannot keep the pod's: two processes on one host, one per
    cluster, cannot both listen on them."""

    health: int
    metrics: int
    webhook: int
    visibility: int

    @classmethod
    def free(cls) -> KueuePorts:
        return cls(*free_ports(4))

    @classmethod
    def in_pod(cls, config: Mapping[str, Any]) -> KueuePorts:
        """Where the rendered config makes Kueue listen, with Kueue's defaults for what it leaves
        out (apis/config/v1beta2/defaults.go; the visibility port in pkg/visibility/server.go)."""

        def port(address: str) -> int:
            return int(address.rsplit(":", 1)[1])

        return cls(
            health=port((config.get("health") or {}).get("healthProbeBindAddress", ":8081")),
            metrics=port((config.get("metrics") or {}).get("bindAddress", ":8443")),
            webhook=int((config.get("webhook") or {}).get("port", 9443)),
            visibility=int((config.get("visibilityServer") or {}).get("bindPort", 8082)),
        )


# The chart's Services, whose ports the process serves (their targetPorts are ports of Kueue's pod).
SERVICES = (KUEUE_WEBHOOK_SERVICE, VISIBILITY_SERVICE, METRICS_SERVICE)


def local_config(config: dict[str, Any], ports: KueuePorts, cert_dir: Path) -> dict[str, Any]:
    """The rendered config with what differs for a process on this host: where leader election
    keeps its lease, the process's own ports, on loopback only, and its own cert folder (which
    Kueue's cert rotator also waits on). Every field is one Kueue decodes (config-fields.yaml);
    the visibility server's port is a config field too, not a flag."""
    copy = yaml.safe_load(yaml.safe_dump(config))
    copy.setdefault("leaderElection", {})["resourceNamespace"] = KUEUE_NAMESPACE
    copy.setdefault("health", {})["healthProbeBindAddress"] = f"127.0.0.1:{ports.health}"
    copy.setdefault("metrics", {})["bindAddress"] = f"127.0.0.1:{ports.metrics}"
    copy.setdefault("webhook", {}).update({"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)})
    copy.setdefault("visibilityServer", {}).update({"bindAddress": "127.0.0.1", "bindPort": ports.visibility})
    return copy


def stand_in_endpoints(service: Mapping[str, Any]) -> dict[str, Any]:
    """An EndpointSlice for `service` with one ready endpoint on each of its ports (see
    ENDPOINTS_OWNER); deleted with the Service."""
    meta = service["metadata"]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-{ENDPOINTS_OWNER}",
            "namespace": meta["namespace"],
            "labels": {
                "kubernetes.io/service-name": meta["name"],
                "endpointslice.kubernetes.io/managed-by": ENDPOINTS_OWNER,
            },
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta["uid"]}],
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [STAND_IN_ADDRESS], "conditions": {"ready": True}}],
        "ports": [
            {"name": p.get("name", ""), "port": p["targetPort"], "protocol": p.get("protocol", "TCP")}
            for p in service["spec"]["ports"]
        ],
    }


class KueueController:
    def __init__(self, binary: Path, kubectl: Kubectl, workdir: Path, forwarder: Forwarder) -> None:
        self.binary, self.kubectl, self.workdir, self.forwarder = binary, kubectl, workdir, forwarder
        self.log = workdir / "kueue.log"
        self.cert_dir = workdir / "kueue-serving-certs"
        # Chosen free at every start(), as close as possible to the moment Kueue binds them.
        self.ports: KueuePorts | None = None
        self._pod_to_local: dict[int, int] = {}  # a port of Kueue's pod -> the process's port
        self._lease = ""  # the leader-election Lease it renews, when it elects itself
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._cert_thread: threading.Thread | None = None
        self.service_ips: dict[str, str] = {}
        self._forwarded: list[tuple[str, int]] = []
        self.startup_errors: list[str] = []
        self.started = self.ready_after = 0.0
        self.started_wall = 0.0  # the last start as a Unix time: tells its Lease from an earlier process's

    def start(self) -> None:
        self.ports = KueuePorts.free()
        config, args = rendered_config(self.kubectl)
        in_pod = asdict(KueuePorts.in_pod(config))
        self._pod_to_local = {in_pod[server]: port for server, port in asdict(self.ports).items()}
        local = local_config(config, self.ports, self.cert_dir)
        election = local["leaderElection"]  # Kueue's defaults: elected, under its fixed ID
        self._lease = election.get("resourceName", LEADER_ELECTION_ID) if election.get("leaderElect", True) else ""
        config_file = self.workdir / "controller_manager_config.yaml"
        config_file.write_text(yaml.safe_dump(local, sort_keys=False))
        args = [f"--config={config_file}" if a.startswith("--config=") else a for a in args]

        shutil.rmtree(self.cert_dir, ignore_errors=True)
        self.cert_dir.mkdir(parents=True)
        self._stop.clear()
        self._cert_thread = threading.Thread(target=self._sync_certs, name="e2e-cert-sync", daemon=True)
        self._cert_thread.start()
        self.forward_services()

        self.started, self.started_wall = time.monotonic(), time.time()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary), *args, f"--kubeconfig={self.kubectl.kubeconfig}"],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )

    def forward_services(self) -> None:
        """Every port of Kueue's Services, at its ClusterIP, relayed to the process's port that
        stands for the pod's port it targets, as kube-proxy would; replaces whatever listened
        there (a test's stand-in)."""
        if not self._pod_to_local:
            raise E2EError("Kueue was not started, so it has no ports to forward to")
        for service in SERVICES:
            obj = self.kubectl.get("service", service, "-n", KUEUE_NAMESPACE)
            spec = obj["spec"]
            self.service_ips[service] = spec["clusterIP"]
            if service == VISIBILITY_SERVICE:
                self.kubectl.apply([stand_in_endpoints(obj)])
            for port in spec["ports"]:
                target = self._pod_to_local.get(port["targetPort"])
                if target is None:  # in a pod, nothing would answer there either
                    raise E2EError(
                        f"Service {service} port {port['port']} targets {port['targetPort']!r}, where "
                        f"Kueue's pod serves nothing (its ports: {sorted(self._pod_to_local)})"
                    )
                address = (spec["clusterIP"], int(port["port"]))
                self.forwarder.listen(*address, forward_to("127.0.0.1", target))
                if address not in self._forwarded:
                    self._forwarded.append(address)

    def _sync_certs(self) -> None:
        """Copy the Secret's keys into the cert folder whenever they change, as a kubelet does for a
        volume (empty keys too, as the chart ships them: Kueue's rotator fills them)."""
        written: dict[str, str] = {}
        with Api(self.kubectl.kubeconfig, timeout=10) as api:
            while not self._stop.wait(0.3):
                copy_secret_keys(api, KUEUE_NAMESPACE, CERT_SECRET, self.cert_dir, written, skip_empty=False)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until a server-side dry run passes the webhook; keep every distinct error the API
        server answered with meanwhile (startup_errors) and how long it took (ready_after)."""
        self.startup_errors = []

        def probe() -> tuple[bool, str]:
            if self.process is not None and self.process.poll() is not None:
                raise StopWaiting(
                    f"Kueue exited with {self.process.returncode}{self._taken_ports()}; its log:\n{self.log_tail()}"
                )
            status, message = api_create(self.kubectl.kubeconfig, PROBE_PATH, PROBE)
            if message and message not in self.startup_errors:
                self.startup_errors.append(message)
            return status < 300, message

        wait_for("Kueue's webhook to answer a server-side dry run", probe, timeout, interval=0.2)
        self.ready_after = time.monotonic() - self.started

    def settled_since(self, wall: float) -> tuple[bool, Any]:
        """(done, seen) for wait_for, after the API server was away: done once it is known whether
        Kueue outlived that. The leader gives up (exits) when it cannot renew its Lease for
        renewDeadline, so it is done once it renewed the Lease after `wall` (a Unix time) or exited;
        a process still waiting for the Lease (an earlier process's, until it expires) never
        gives up, so it is done at once."""
        if self.process is None or self.process.poll() is not None:
            return True, "not running"
        if not self._lease:
            return True, "elects no leader, so never gives up"
        done = self.kubectl.run(
            "get", "lease", self._lease, "-n", KUEUE_NAMESPACE, "-o", "json", check=False, timeout=10
        )
        if done.returncode != 0:  # no Lease yet: nobody leads, and a candidate never gives up
            return "NotFound" in done.stderr, done.stderr.strip()
        lease = json.loads(done.stdout).get("spec") or {}
        leading = micro_time(lease.get("acquireTime")) >= self.started_wall
        return not leading or micro_time(lease.get("renewTime")) >= wall, lease

    def _taken_ports(self) -> str:
        """After Kueue exited: its ports that another process now holds. They were free when
        chosen, so one taken since is why Kueue could not listen ("address already in use")."""
        ports = asdict(self.ports) if self.ports is not None else {}
        taken = [f"{port} ({name})" for name, port in ports.items() if not port_is_free(port)]
        if not taken:
            return ""
        return (
            f"; its port(s) {', '.join(taken)} were taken by another process after they were chosen free "
            "(find it with `ss -ltnp`); starting it again chooses new ones"
        )

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log, lines)

    def stop(self) -> None:
        self._stop.set()
        stop_process(self.process)
        if self._cert_thread is not None:
            self._cert_thread.join(timeout=5)
        while self._forwarded:
            self.forwarder.close(*self._forwarded.pop())
