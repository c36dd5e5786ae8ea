"""The real Kueue controller, run as a local process with what the chart rendered.

The chart's pods are kwok's fakes, so the `kueue` binary runs here instead, with:
- the manager config from the chart's ConfigMap and the container arguments from its Deployment.
  The copy differs in one field, `leaderElection.resourceNamespace` (in a pod Kueue reads the
  namespace from its service-account token folder, which does not exist here);
- the webhook serving certificate that Kueue's internal cert manager writes into the Secret, copied
  into the folder its webhook server reads, as the kubelet would for the Secret volume. With
  v0.19.2 that folder is controller-runtime's default under the temp dir (Kueue's log line
  "Updated current TLS certificate" names it), so it is emptied before every start;
- the Services' ClusterIPs forwarded to the process's ports, as kube-proxy would.
Kueue talks to the API server with the cluster admin's kubeconfig, not a service account.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from components.config import KUEUE_NAMESPACE
from components.kueue_values import KUEUE_RELEASE_NAME, KUEUE_WEBHOOK_SERVICE

from .cluster import E2EError, Kubectl, api_create, log_tail, port_is_free, stop_process, wait_for
from .forward import Forwarder, forward_to

CERT_DIR = Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"
CERT_SECRET = f"{KUEUE_RELEASE_NAME}-webhook-server-cert"
CONFIG_MAP = f"{KUEUE_RELEASE_NAME}-manager-config"
DEPLOYMENT = f"{KUEUE_RELEASE_NAME}-controller-manager"
VISIBILITY_SERVICE = f"{KUEUE_RELEASE_NAME}-visibility-server"
# The process's ports (the chart's manager config and container ports).
HEALTH_PORT, METRICS_PORT, WEBHOOK_PORT, VISIBILITY_PORT = 8081, 8443, 9443, 8082
SERVICE_PORT = 443

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


def local_config(config: dict[str, Any]) -> dict[str, Any]:
    """The one change from the rendered config: where leader election keeps its lease."""
    copy = yaml.safe_load(yaml.safe_dump(config))
    copy.setdefault("leaderElection", {})["resourceNamespace"] = KUEUE_NAMESPACE
    return copy


class KueueController:
    def __init__(self, binary: Path, kubectl: Kubectl, workdir: Path, forwarder: Forwarder) -> None:
        self.binary, self.kubectl, self.workdir, self.forwarder = binary, kubectl, workdir, forwarder
        self.log = workdir / "kueue.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._cert_thread: threading.Thread | None = None
        self.service_ips: dict[str, str] = {}
        self.startup_errors: list[str] = []
        self.started = self.ready_after = 0.0

    def start(self) -> None:
        busy = [p for p in (HEALTH_PORT, METRICS_PORT, WEBHOOK_PORT, VISIBILITY_PORT) if not port_is_free(p)]
        if busy:
            raise E2EError(
                f"port(s) {', '.join(map(str, busy))} are in use, so Kueue would exit at start. A Kueue left by an "
                "earlier run? Find it with `ss -ltnp` and stop it."
            )
        config, args = rendered_config(self.kubectl)
        config_file = self.workdir / "controller_manager_config.yaml"
        config_file.write_text(yaml.safe_dump(local_config(config), sort_keys=False))
        args = [f"--config={config_file}" if a.startswith("--config=") else a for a in args]

        shutil.rmtree(CERT_DIR, ignore_errors=True)
        CERT_DIR.mkdir(parents=True)
        self._stop.clear()
        self._cert_thread = threading.Thread(target=self._sync_certs, name="e2e-cert-sync", daemon=True)
        self._cert_thread.start()

        for service, target in ((KUEUE_WEBHOOK_SERVICE, WEBHOOK_PORT), (VISIBILITY_SERVICE, VISIBILITY_PORT)):
            ip = self.kubectl.get("service", service, "-n", KUEUE_NAMESPACE)["spec"]["clusterIP"]
            self.service_ips[service] = ip
            self.forwarder.listen(ip, SERVICE_PORT, forward_to("127.0.0.1", target))

        self.started = time.monotonic()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary), *args, f"--kubeconfig={self.kubectl.kubeconfig}"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
            )

    def _sync_certs(self) -> None:
        """Copy the Secret's keys into CERT_DIR whenever they change, as a kubelet does for a volume."""
        written: dict[str, str] = {}
        while not self._stop.wait(0.3):
            try:
                done = self.kubectl.run("get", "secret", CERT_SECRET, "-n", KUEUE_NAMESPACE,
                                        "-o", "jsonpath={.data}", check=False, timeout=10)
            except subprocess.TimeoutExpired:  # a busy API server: try again on the next tick
                continue
            if done.returncode != 0 or not done.stdout.strip():
                continue
            data = yaml.safe_load(done.stdout) or {}
            for key, value in data.items():
                if written.get(key) != value:
                    (CERT_DIR / key).write_bytes(base64.b64decode(value))
                    written[key] = value

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until a server-side dry run passes the webhook; keep every distinct error the API
        server answered with meanwhile (startup_errors) and how long it took (ready_after)."""
        self.startup_errors = []

        def probe() -> tuple[bool, str]:
            if self.process is not None and self.process.poll() is not None:
                raise E2EError(f"Kueue exited with {self.process.returncode}; its log:\n{self.log_tail()}")
            status, message = api_create(self.kubectl.kubeconfig, PROBE_PATH, PROBE)
            if message and message not in self.startup_errors:
                self.startup_errors.append(message)
            return status < 300, message

        wait_for("Kueue's webhook to answer a server-side dry run", probe, timeout, interval=0.2)
        self.ready_after = time.monotonic() - self.started

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log, lines)

    def stop(self) -> None:
        self._stop.set()
        stop_process(self.process)
        if self._cert_thread is not None:
            self._cert_thread.join(timeout=5)
        for ip in self.service_ips.values():
            self.forwarder.close(ip, SERVICE_PORT)
