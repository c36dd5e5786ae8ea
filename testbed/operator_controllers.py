"""The job operators' real controllers, run as local processes with what their manifests rendered.

As for Kueue (kueue_controller.py), the operators' pods are kwok's fakes, so each controller binary
(binaries.ensure_operator_binaries) runs here, talking to the API server with the admin kubeconfig:
- its container arguments from the rendered Deployment and, for JobSet and Trainer, its manager
  config from the chart's ConfigMap (both decode it strictly), changed only where a process on this
  host must differ from a pod: its own free ports (metrics and health servers off), and the
  leader-election namespace a pod reads from its service-account folder;
- for the three webhook owners (JobSet, Trainer, training-operator), the serving certificate their
  cert-controller rotator writes into the Secret, copied into `$TMPDIR/k8s-webhook-server/serving-certs`
  with a TMPDIR of its own (controller-runtime's default cert folder is under os.TempDir(), so no
  two processes serve each other's certificate; Kueue's folder is set in its config instead), and
  the webhook Service's ClusterIP:443 forwarded to the process's webhook port, as kube-proxy would.
The rotators also wait for `tls.crt` at the hard-coded /tmp/k8s-webhook-server/serving-certs
(open-policy-agent/cert-controller pkg/rotator/rotator.go@v0.16.0: ensureCertsMounted only stats it). No
server here reads that
folder, Kueue included (its cert folder is under its work folder). When nothing is there, a copy of
the process's own certificate is put there, created exclusively so that another operator's copy (or
a file left by an earlier run) is never replaced; stop() removes it if unchanged. When a tls.crt is
already there, a first start can lose the race to the copy and exit; wait_ready then restarts it
once, as a kubelet would (see _check_alive).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from .cluster import (
    Api,
    E2EError,
    Kubectl,
    api_create,
    copy_secret_keys,
    free_ports,
    log_tail,
    micro_time,
    port_is_free,
    stop_process,
    wait_for,
)
from .binaries import cache_root
from .forward import Forwarder, forward_to
from .measurements import report

SERVICE_PORT = 443
CONFIG_KEY = "controller_manager_config.yaml"
# Hard-coded in the JobSet, Trainer and training-operator rotators (pkg/util/cert/cert.go, pkg/cert/cert.go).
ROTATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
PROBE_NAME = "e2e-readiness-probe"
# A port a binary hard-codes belongs to the machine: the suite's two lanes (pyproject.toml) or two
# runs that would run that operator at once take turns on it, through a lock in the tier's one
# machine-wide folder. The lanes are ordered so that a turn is rarely waited for; a wait is printed.
FIXED_PORT_WAIT_SECONDS = 900

# training-operator kinds Kueue runs (never mpijob: that CRD is the MPI Operator's v2beta1 one,
# kubeflow/trainer#1930), each with the replica type and container name its validator requires.
TRAINING_SCHEMES = {
    "tfjob": ("TFJob", "tfReplicaSpecs", "Worker", "tensorflow"),
    "pytorchjob": ("PyTorchJob", "pytorchReplicaSpecs", "Master", "pytorch"),
    "xgboostjob": ("XGBoostJob", "xgbReplicaSpecs", "Master", "xgboost"),
    "paddlejob": ("PaddleJob", "paddleReplicaSpecs", "Master", "paddle"),
    "jaxjob": ("JAXJob", "jaxReplicaSpecs", "Worker", "jax"),
}


def _pod(container: str) -> dict[str, Any]:
    return {"spec": {"restartPolicy": "Never", "containers": [{"name": container, "image": "busybox"}]}}


def _jobset_probe(namespace: str, args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    return f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets", {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": PROBE_NAME, "namespace": namespace},
        "spec": {"replicatedJobs": [{"name": "probe", "template": {"spec": {"template": _pod("probe")}}}]},
    }


def _trainer_probe(namespace: str, args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    return "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": PROBE_NAME},
        "spec": {
            "template": {
                "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": _pod("node")}}}]}
            }
        },
    }


def _training_probe(namespace: str, args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """A job of the first kind the process serves (only enabled kinds register a webhook)."""
    scheme = next(s for s in _schemes(args) if s in TRAINING_SCHEMES)
    kind, specs, replica, container = TRAINING_SCHEMES[scheme]
    return f"/apis/kubeflow.org/v1/namespaces/{namespace}/{scheme}s", {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": PROBE_NAME, "namespace": namespace},
        "spec": {specs: {replica: {"replicas": 1, "template": _pod(container)}}},
    }


def _schemes(args: Sequence[str]) -> list[str]:
    return [a.split("=", 1)[1].lower() for a in args if a.startswith("--enable-scheme=")]


@dataclass(frozen=True)
class Spec:
    """How one operator runs here. `config` and `flags` get the process's webhook port."""

    namespace: str
    deployment: str  # the rendered Deployment whose container args the process takes
    container: str
    deployment_required: bool = True  # False: KubeRay's chart is not available offline, CRDs only
    config_map: str = ""  # the chart's ConfigMap with the manager config (key CONFIG_KEY)
    config: Callable[[int], dict[str, Any]] = lambda port: {}  # merged into that config
    flags: Callable[[int], dict[str, str]] = lambda port: {}  # replace the rendered flags of the same name
    default_args: tuple[str, ...] = ()  # added when the rendered args have none of these flags
    kubeconfig_flag: str = "--kubeconfig"
    env: Mapping[str, str] = field(default_factory=dict)
    secret: str = ""  # webhook owners: the Secret their rotator fills, and
    service: str = ""  # the Service their webhook configurations call
    probe: Callable[[str, Sequence[str]], tuple[str, dict[str, Any]]] | None = None
    lease: str = ""  # the others: ready once this Lease is ours and `ready_log` was logged
    ready_log: str = ""
    fixed_ports: tuple[int, ...] = ()  # ports the binary hard-codes


def _servers_off(port: int) -> dict[str, Any]:
    # controller-runtime turns a server off with "0"; only the webhook server is needed here.
    return {"webhook": {"port": port}, "metrics": {"bindAddress": "0"}, "health": {"healthProbeBindAddress": "0"}}


SPECS: dict[str, Spec] = {
    "jobset": Spec(
        namespace="jobset-system",
        deployment="jobset-controller",
        container="controller",
        config_map="jobset-controller-config",
        config=_servers_off,
        secret="jobset-webhook-server-cert",
        service="jobset-webhook-service",
        probe=_jobset_probe,
    ),
    "trainer": Spec(
        namespace="kubeflow-system",
        deployment="kubeflow-trainer-controller-manager",
        container="manager",
        config_map="kubeflow-trainer-config",
        config=_servers_off,
        secret="kubeflow-trainer-webhook-cert",
        service="kubeflow-trainer-controller-manager",
        probe=_trainer_probe,
    ),
    "training-operator": Spec(
        namespace="kubeflow",
        deployment="training-operator",
        container="training-operator",
        flags=lambda port: {
            "--webhook-server-port": str(port),
            "--metrics-bind-address": "0",
            "--health-probe-bind-address": "0",
        },
        default_args=tuple(f"--enable-scheme={s}" for s in TRAINING_SCHEMES),
        env={"MY_POD_NAMESPACE": "kubeflow"},  # its rotator's namespace (pkg/cert/cert.go)
        secret="training-operator-webhook-cert",
        service="training-operator",
        probe=_training_probe,
    ),
    "kuberay": Spec(
        namespace="kuberay-system",
        deployment="kuberay-operator",
        container="kuberay-operator",
        deployment_required=False,
        # Its defaults, :8080 metrics and :8082 probe: the MPI Operator hard-codes :8080.
        flags=lambda port: {
            "--metrics-addr": "0",
            "--health-probe-bind-address": "0",
            "--enable-leader-election": "true",
            "--leader-election-namespace": "kuberay-system",
        },
        lease="ray-operator-leader",
        ready_log="Starting workers",
    ),
    "mpi-operator": Spec(
        namespace="mpi-operator",
        deployment="mpi-operator",
        container="mpi-operator",
        kubeconfig_flag="--kubeConfig",  # capital C; KUBECONFIG overrides it, so both are set
        flags=lambda port: {"--lock-namespace": "mpi-operator"},
        lease="mpi-operator",
        ready_log="Started workers",
        fixed_ports=(8080,),  # its healthz (cmd/mpi-operator/app/server.go); it exits when taken
    ),
}


def _flag_name(arg: str) -> str:
    return "--" + arg.lstrip("-").split("=", 1)[0]


def with_flags(args: Sequence[str], flags: Mapping[str, str], defaults: Sequence[str] = ()) -> list[str]:
    """`args` with every flag in `flags` set to its value (whatever the rendered value was), and
    `defaults` added when none of their flags is there."""
    names = set(flags)
    kept = [a for a in args if _flag_name(a) not in names]
    if defaults and not {_flag_name(d) for d in defaults} & {_flag_name(a) for a in kept}:
        kept += defaults
    return kept + [f"{k}={v}" for k, v in flags.items()]


def _merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


class OperatorController:
    def __init__(self, name: str, binary: Path, kubectl: Kubectl, workdir: Path, forwarder: Forwarder) -> None:
        if name not in SPECS:
            raise E2EError(f"no local runner for operator {name!r}; known: {', '.join(SPECS)}")
        self.name, self.spec = name, SPECS[name]
        self.binary, self.kubectl, self.forwarder = binary, kubectl, forwarder
        self.home = workdir / name  # its config file and its own TMPDIR
        self.tmpdir = self.home / "tmp"
        self.cert_dir = self.tmpdir / "k8s-webhook-server" / "serving-certs"
        self.log = workdir / f"{name}.log"
        self.args: list[str] = []
        self.webhook_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.service_ip = ""
        self._stop = threading.Event()
        self._cert_thread: threading.Thread | None = None
        self._written: dict[str, str] = {}
        self._placeholder: bytes | None = None  # what we put at ROTATOR_CERT_DIR, if anything
        self.started_wall = 0.0
        self.restarted = False  # a first start lost the certificate race and was restarted once
        self._started_without_cert = False
        self._port_locks: list[IO[str]] = []

    def _claim_fixed_ports(self) -> None:
        """Take the lock of every port the binary hard-codes, waiting while another lane holds it."""
        folder = cache_root() / "ports"
        folder.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        for port in self.spec.fixed_ports:
            lock = (folder / f"{port}.lock").open("a")
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() - started > FIXED_PORT_WAIT_SECONDS:
                        lock.close()
                        self._release_fixed_ports()
                        raise E2EError(
                            f"{self.name} hard-codes port {port}, and another process of the tier "
                            f"held it for {FIXED_PORT_WAIT_SECONDS} s ({folder / f'{port}.lock'})"
                        ) from None
                    time.sleep(0.5)
            self._port_locks.append(lock)
        waited = time.monotonic() - started
        if waited >= 1:
            report(
                f"e2e: {self.name} waited {waited:.0f} s for its hard-coded port(s) "
                f"{list(self.spec.fixed_ports)}, held by the other lane"
            )

    def _release_fixed_ports(self) -> None:
        for lock in self._port_locks:
            lock.close()  # closing the file drops its flock
        self._port_locks = []

    # -- start -------------------------------------------------------------------------------

    def _rendered_args(self) -> list[str]:
        spec = self.spec
        done = self.kubectl.run(
            "get", "deployment", spec.deployment, "-n", spec.namespace, "-o", "json", check=spec.deployment_required
        )
        if done.returncode != 0:
            return []
        deploy = yaml.safe_load(done.stdout)
        containers = deploy["spec"]["template"]["spec"]["containers"]
        container = next((c for c in containers if c["name"] == spec.container), containers[0])
        return list(container.get("args", []))

    def _local_config(self, args: list[str]) -> list[str]:
        """Write the chart's manager config with the local changes; point --config at it."""
        spec = self.spec
        cm = self.kubectl.get("configmap", spec.config_map, "-n", spec.namespace)
        config = yaml.safe_load(cm["data"][CONFIG_KEY]) or {}
        _merge(config, spec.config(self.webhook_port))
        if "leaderElection" in config:  # a pod reads it from its service-account folder
            config["leaderElection"]["resourceNamespace"] = spec.namespace
        path = self.home / CONFIG_KEY
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return [a for a in args if _flag_name(a) != "--config"] + [f"--config={path}"]

    def start(self) -> None:
        spec = self.spec
        self._claim_fixed_ports()
        busy = [p for p in spec.fixed_ports if not port_is_free(p)]
        if busy:
            self._release_fixed_ports()
            raise E2EError(
                f"{self.name} hard-codes port(s) {', '.join(map(str, busy))}, which are in use; "
                "a controller left by an earlier run? Find it with `ss -ltnp`."
            )
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.cert_dir.mkdir(parents=True)
        self.webhook_port = free_ports(1)[0] if spec.secret else 0
        args = self._rendered_args()
        if spec.config_map:
            args = self._local_config(args)
        self.args = with_flags(args, spec.flags(self.webhook_port), spec.default_args)

        if spec.secret:
            self._written = {}
            self._copy_secret_once()  # a restart finds the Secret already valid: serve it from the start
            self._stop.clear()
            self._cert_thread = threading.Thread(target=self._sync_certs, name=f"e2e-{self.name}-certs", daemon=True)
            self._cert_thread.start()
            ip = self.kubectl.get("service", spec.service, "-n", spec.namespace)["spec"]["clusterIP"]
            self.forwarder.listen(ip, SERVICE_PORT, forward_to("127.0.0.1", self.webhook_port))
            self.service_ip = ip

        self.restarted = False
        self._launch()

    def _launch(self) -> None:
        spec = self.spec
        # Started before the rotator filled the Secret: a first start can lose the race (wait_ready).
        self._started_without_cert = bool(spec.secret) and "tls.crt" not in self._written
        env = {**os.environ, "TMPDIR": str(self.tmpdir), "KUBECONFIG": str(self.kubectl.kubeconfig), **spec.env}
        self.started_wall = time.time()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary), *self.args, f"{spec.kubeconfig_flag}={self.kubectl.kubeconfig}"],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                env=env,
            )

    # -- certificates ------------------------------------------------------------------------

    def _copy_secret(self, api: Api) -> None:
        """Copy the Secret's keys into the process's cert folder when they change, as a kubelet
        does for a Secret volume (the charts ship the keys empty; an empty tls.crt is no
        certificate to serve); then make sure the rotator's hard-coded folder has a tls.crt."""
        copy_secret_keys(api, self.spec.namespace, self.spec.secret, self.cert_dir, self._written, skip_empty=True)
        if "tls.crt" in self._written and self._placeholder is None:
            self._ensure_rotator_cert()

    def _ensure_rotator_cert(self) -> None:
        target = ROTATOR_CERT_DIR / "tls.crt"
        content = (self.cert_dir / "tls.crt").read_bytes()
        try:
            ROTATOR_CERT_DIR.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # never replace another's
        except FileExistsError:
            self._placeholder = b""  # someone's tls.crt is there: the stat passes, nothing to undo
            return
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        self._placeholder = content

    def _sync_certs(self) -> None:
        with Api(self.kubectl.kubeconfig, timeout=10) as api:  # this thread's own connection
            while not self._stop.wait(0.3):
                self._copy_secret(api)

    def _copy_secret_once(self) -> None:
        with Api(self.kubectl.kubeconfig, timeout=10) as api:
            self._copy_secret(api)

    # -- readiness ---------------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self.process is None:
            raise E2EError(f"{self.name} was not started")
        if self.process.poll() is None:
            return
        if self._started_without_cert and not self.restarted:
            # The race a kubelet meets too: when some tls.crt is already at the rotator's hard-coded
            # folder (another operator's, or one left by an earlier run), its check passes the moment
            # it has filled the Secret, and the webhook server can start before the copy above reaches
            # the process's own folder ("Starting webhook server", then the manager stops). Restart it
            # once, as the kubelet would, now with the Secret's certificate in place before it starts.
            self._copy_secret_once()
            if "tls.crt" in self._written:
                self.restarted = True
                self._launch()
                return
        raise E2EError(f"{self.name} exited with {self.process.returncode}; its log:\n{self.log_tail()}")

    def _webhook_answers(self) -> tuple[bool, str]:
        self._check_alive()
        assert self.spec.probe is not None
        path, obj = self.spec.probe(self.spec.namespace, self.args)
        status, message = api_create(self.kubectl.kubeconfig, path, obj)
        return status < 300, message

    def _leading(self) -> tuple[bool, Any]:
        self._check_alive()
        done = self.kubectl.run(
            "get", "lease", self.spec.lease, "-n", self.spec.namespace, "-o", "json", check=False, timeout=10
        )
        lease = yaml.safe_load(done.stdout).get("spec", {}) if done.returncode == 0 else {}
        # Ours: acquired after this process started (a lease left by an earlier process expires first).
        ours = micro_time(lease.get("acquireTime")) >= self.started_wall - 1
        logged = self.spec.ready_log in self.log.read_text(errors="replace")
        return ours and logged, {"lease": lease or done.stderr.strip(), f"logged {self.spec.ready_log!r}": logged}

    def wait_ready(self, timeout: float = 60) -> None:
        """Webhook owners: a server-side dry run of a minimal object of its kind passes its webhook.
        Others: it holds its leader Lease and its controllers' informers are running."""
        try:
            if self.spec.probe is not None:
                wait_for(
                    f"{self.name}'s webhook to answer a server-side dry run",
                    self._webhook_answers,
                    timeout,
                    interval=0.3,
                )
            else:
                wait_for(f"{self.name} to lead and start its workers", self._leading, timeout, interval=0.5)
        except E2EError as err:
            if "log:" in str(err):
                raise
            raise E2EError(f"{err}\n{self.name}'s log:\n{self.log_tail()}") from None

    # -- stop --------------------------------------------------------------------------------

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log, lines)

    def stop(self) -> None:
        self._stop.set()
        stop_process(self.process)
        self._release_fixed_ports()
        if self._cert_thread is not None:
            self._cert_thread.join(timeout=5)
            self._cert_thread = None
        if self.service_ip:
            self.forwarder.close(self.service_ip, SERVICE_PORT)
            self.service_ip = ""
        if self._placeholder:
            target = ROTATOR_CERT_DIR / "tls.crt"
            try:
                if target.read_bytes() == self._placeholder:  # still our copy
                    target.unlink()
            except OSError:
                pass
        self._placeholder = None


def operator_controller(
    name: str, binaries: Mapping[str, Path], kubectl: Kubectl, workdir: Path, forwarder: Forwarder
) -> OperatorController:
    """The local runner for one operator, with the binary binaries.ensure_operator_binaries() built."""
    return OperatorController(name, binaries[name], kubectl, workdir, forwarder)
