"""A local control plane for one stack: kwokctl's binary runtime, fake nodes, the charts, Kueue.

Everything listens on loopback. The API server's service range is a loopback /16 (127.100.0.0/16
unless the cluster is given another), so when it calls a webhook or an aggregated API through a
Service's ClusterIP the call stays on this machine, where a forwarder (forward.py) hands it to the
Kueue process. Clusters that run at the same time get distinct ranges: the forwarder listens on
<ClusterIP>:443 for all of them, so two clusters must never hand out the same ClusterIP.
"""

from __future__ import annotations

import base64
import datetime
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.k8s import documents
from components.k8s.charts import ChartRef

from .binaries import KUBERNETES_VERSION, Binaries, cache_root, locked

STAGES = Path(__file__).resolve().parent / "stages.yaml"
# The default service range; a cluster that runs beside others takes its own (KwokCluster).
SERVICE_CIDR = "127.100.0.0/16"


def worker_service_cidr() -> str:
    """This process's service range for its stacks. Each xdist worker's stacks run beside the
    other's (testbed/lanes.py); with one range, two clusters could give two Services the same
    ClusterIP, where the forwarder listens. The first worker (or no worker) keeps SERVICE_CIDR;
    the next ones take ranges after MultiKueue's (127.101 to 127.103)."""
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    return SERVICE_CIDR if index == 0 else f"127.{103 + index}.0.0/16"


# Pod IPs kwok hands out: loopback too, though nothing ever dials them (Services are reached at
# their ClusterIP, the processes on 127.0.0.1), so clusters running side by side may share it.
# EndpointSlices refuse loopback addresses, so Services have no endpoints from their pods; the
# visibility APIService, which needs one to be Available, gets a stand-in (kueue_controller.py).
POD_CIDR = "127.64.0.1/16"
# The CN of the admin certificate kwokctl writes (its pki.DefaultUser), which the API server also
# presents as its proxy client certificate when it calls an aggregated API.
ADMIN_CERT_USER = "kwok-admin"

T = TypeVar("T")


class E2EError(AssertionError):
    """A step of the e2e setup failed; the message says what was seen and what to do."""


class StopWaiting(E2EError):
    """Raised by a probe when waiting longer cannot help (the process it waits for has exited)."""


MAX_POLL_SECONDS = 1.0


def wait_for(what: str, probe: Callable[[], tuple[bool, T]], timeout: float, interval: float = 0.25) -> T:
    """Poll `probe` (returns (done, seen)) until done; on timeout fail with the last thing seen.

    The first polls are `interval` apart, then each half as long again, up to MAX_POLL_SECONDS:
    most conditions hold within a second or two, and a long wait (an autoscaler's scale-down, a
    job's run) then costs a probe (often a kubectl process) a second, not four.

    A probe that raises has not seen its object yet (kubectl's NotFound, a status still null, a
    Workload Kueue has not made): the error is what was seen, and the wait goes on to its deadline,
    so a race between a controller and the probe never fails a run by itself."""
    deadline = time.monotonic() + timeout
    interval = min(interval, MAX_POLL_SECONDS)
    while True:
        try:
            done, seen = probe()
        except StopWaiting:
            raise
        except Exception as err:  # noqa: BLE001 (reported at the deadline)
            done, seen = False, f"the probe raised {type(err).__name__}: {err}"  # type: ignore[assignment]
        if done:
            return seen
        if time.monotonic() > deadline:
            raise E2EError(f"timed out after {timeout:g} s waiting for {what}; last seen:\n{_show(seen)}")
        time.sleep(min(interval, max(deadline - time.monotonic(), 0.0) + 0.01))
        interval = min(interval * 1.5, MAX_POLL_SECONDS)


def _show(seen: Any) -> str:
    if isinstance(seen, str):
        return seen
    try:
        return json.dumps(seen, indent=1, default=str)[:6000]
    except TypeError:
        return repr(seen)[:6000]


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 15 s, as a kubelet stops a container; safe on an ended process."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def log_tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 now (all held open together while they are
    chosen, so the kernel cannot hand out one of them twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def micro_time(value: str | None) -> float:
    """A MicroTime (a Lease's acquireTime or renewTime) as a Unix time; 0 when unset."""
    if not value:
        return 0.0
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def kubeconfig_entries(kubeconfig: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (cluster, user) entries of a kubeconfig with one of each, as kwokctl writes it."""
    config = yaml.safe_load(kubeconfig.read_text())
    return config["clusters"][0]["cluster"], config["users"][0]["user"]


class Kubectl:
    """kubectl against one cluster; every call has a timeout and returns text or parsed JSON.

    `plugins` is a folder of kubectl plugins (binaries.Binaries.kubectl_kueue's) put first on PATH
    for `kueue()`; `impersonating()` gives one that acts as another user."""

    def __init__(
        self, binary: Path, kubeconfig: Path, plugins: Path | None = None, identity: tuple[str, ...] = ()
    ) -> None:
        self.binary, self.kubeconfig, self.plugins = binary, kubeconfig, plugins
        self.identity = identity  # --as/--as-group flags added to every command
        self._reads: ApiReads | None = None

    def impersonating(self, user: str, groups: Iterable[str] = ()) -> Kubectl:
        """This kubectl acting as `user` in `groups`, as the API server authorizes a team member
        (the admin's credentials may impersonate anyone)."""
        return Kubectl(
            self.binary, self.kubeconfig, self.plugins, (f"--as={user}", *(f"--as-group={g}" for g in groups))
        )

    def run(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return self._run([f"--kubeconfig={self.kubeconfig}", *self.identity, *args], input, check, timeout)

    def kueue(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`kubectl kueue …`, Kueue's plugin, as this kubectl's user. kubectl finds a plugin only
        by the arguments before the first flag, so the flags follow the plugin's name."""
        if self.plugins is None:
            raise E2EError("this kubectl has no plugin folder; make it with Kubectl(..., plugins=...)")
        env = {**os.environ, "PATH": f"{self.plugins}{os.pathsep}{os.environ.get('PATH', '')}"}
        return self._run(["kueue", f"--kubeconfig={self.kubeconfig}", *self.identity, *args], None, check, timeout, env)

    def _run(
        self, argv: list[str], input: str | None, check: bool, timeout: float, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.binary), *argv], input=input, capture_output=True, text=True, timeout=timeout, env=env
        )
        if check and done.returncode != 0:
            shown = [a for a in argv if not a.startswith("--kubeconfig=")]
            raise E2EError(f"kubectl {' '.join(shown)} failed:\n{done.stderr.strip()}")
        return done

    def get(self, *args: str) -> Any:
        """`kubectl get -o json …`. The admin's reads of one resource type (by name, namespace and
        selectors) go to the API server in this process (ApiReads), as kubectl's would; other
        users' and other shapes run kubectl."""
        if not self.identity:
            if self._reads is None:
                self._reads = ApiReads(self.kubeconfig)
            found = self._reads.get(args)
            if found is not None:
                return found
        return json.loads(self.run("get", "-o", "json", *args).stdout)

    def items(self, *args: str) -> list[dict[str, Any]]:
        return list(self.get(*args)["items"])

    def apply(
        self, objects: Iterable[Mapping[str, Any]], *, check: bool = True, dry_run: bool = False, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Server-side apply; with dry_run the API server checks everything and stores nothing."""
        docs = documents.dump_all([dict(o) for o in objects])
        return self.run(
            "apply",
            "--server-side",
            "--field-manager=kueue-aks-e2e",
            *(["--dry-run=server"] if dry_run else []),
            "-f",
            "-",
            input=docs,
            check=check,
            timeout=timeout,
        )


class Api:
    """The API server over one kept-alive HTTPS connection, with the kubeconfig's client certificate:
    for callers that ask many times a second, where a kubectl process per call would be the load."""

    def __init__(self, kubeconfig: Path, timeout: float = 30) -> None:
        cluster, user = kubeconfig_entries(kubeconfig)
        self._context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self._context.load_cert_chain(user["client-certificate"], user["client-key"])
        url = urllib.parse.urlsplit(cluster["server"])
        self._host, self._port, self._timeout = url.hostname or "127.0.0.1", url.port, timeout
        self._connection: http.client.HTTPSConnection | None = None

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | list[Any] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """(status, parsed body); reconnects once if the kept-alive connection was closed."""
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self.connect()
            try:
                self._connection.request(
                    method,
                    path,
                    body=None if body is None else json.dumps(body),
                    headers={"Content-Type": content_type},
                )
                response = self._connection.getresponse()
                return response.status, json.loads(response.read() or b"{}")
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def connect(self) -> http.client.HTTPSConnection:
        """A new connection of its own, e.g. for a watch that streams for minutes."""
        return http.client.HTTPSConnection(self._host, self._port, context=self._context, timeout=self._timeout)

    def items(self, path: str) -> list[dict[str, Any]]:
        status, body = self.request("GET", path)
        if status >= 300:
            raise E2EError(f"GET {path}: {status} {body.get('message', body)}")
        return list(body.get("items") or [])

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@dataclass(frozen=True)
class ApiResource:
    """A resource type as the API server's discovery lists it."""

    prefix: str  # /api/v1 or /apis/<group>/<version>
    group_version: str
    plural: str
    kind: str
    namespaced: bool
    aliases: frozenset[str]  # its plural, singular, short names and kind, in lower case


def _resources(prefix: str, body: Mapping[str, Any]) -> list[ApiResource]:
    found = []
    for r in body.get("resources") or []:
        if "/" in r["name"]:  # a subresource
            continue
        aliases = {r["name"], r.get("singularName") or "", r["kind"].lower(), *(r.get("shortNames") or [])}
        found.append(
            ApiResource(prefix, body["groupVersion"], r["name"], r["kind"], r["namespaced"], frozenset(aliases - {""}))
        )
    return found


class ApiReads:
    """`kubectl get -o json` of one resource type, answered in this process over one kept-alive
    connection (Api) with the kubeconfig's client certificate: the tier's probes poll thousands of
    times a run, and a kubectl process per poll took about 0.14 s of a core (309 s of a run).

    The resource is found as kubectl finds it, through discovery, by plural, singular, short name
    or kind, optionally `.group`; discovery is read again when a name is not found (a CRD installed
    since) and when the kubeconfig changes (a cluster made again). `get` answers None for what it
    does not do (several types or names, `type/name`, output flags, an ambiguous name, a kubeconfig
    without certificate files), and the caller runs kubectl. Lists come back as kubectl prints them:
    a List whose items carry their apiVersion and kind."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self._lock = threading.Lock()
        self._seen: bytes | None = None
        self._api: Api | None = None
        self._core: list[ApiResource] = []
        self._groups: dict[str, list[ApiResource]] | None = None

    def get(self, args: Iterable[str]) -> Any:
        request = _get_request(list(args))
        if request is None:
            return None
        token, name, namespace, everywhere, query = request
        with self._lock:
            try:
                if not self._connected():
                    return None
                resource = self._resolve(token)
                if resource is None:
                    return None
                where = "" if not resource.namespaced or everywhere else f"/namespaces/{namespace or 'default'}"
                path = f"{resource.prefix}{where}/{resource.plural}" + (f"/{name}" if name else "")
                assert self._api is not None
                url = path + (f"?{urllib.parse.urlencode(query)}" if query else "")
                # An API server still starting a type's storage answers 429, and one remaking it after
                # its CRD changed a plain-text 503, for a moment: kubectl's client retries both.
                for backoff in (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 0):
                    try:
                        status, body = self._api.request("GET", url)
                    except ValueError:
                        if not backoff:
                            raise
                        status = 503
                    if (status != 429 and status < 500) or not backoff:
                        break
                    time.sleep(backoff)
            except (OSError, http.client.HTTPException, ValueError) as err:
                raise E2EError(f"kubectl get {' '.join(args)} failed:\n{err}") from err
        if status >= 300:
            raise E2EError(
                f"kubectl get {' '.join(args)} failed:\nError from server ({body.get('reason')}): {body.get('message')}"
            )
        if name:
            return body
        items = [{"apiVersion": resource.group_version, "kind": resource.kind, **i} for i in body.get("items") or []]
        return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}

    def _connected(self) -> bool:
        """Whether there is an Api for the kubeconfig as it is now (made again when it changed)."""
        try:
            seen = self.kubeconfig.read_bytes()
        except OSError:
            return False
        if seen != self._seen:
            if self._api is not None:
                self._api.close()
            self._seen, self._api, self._core, self._groups = seen, None, [], None
            try:
                self._api = Api(self.kubeconfig)
            except (KeyError, IndexError, TypeError, OSError, ssl.SSLError):  # no certificate files
                return False
        return self._api is not None

    def _discover(self) -> None:
        assert self._api is not None
        status, core = self._api.request("GET", "/api/v1")
        status_groups, groups = self._api.request("GET", "/apis")
        if status != 200 or status_groups != 200:
            raise E2EError(f"discovery answered {status} and {status_groups}")
        self._core = _resources("/api/v1", core)
        self._groups = {}
        for group in groups.get("groups") or []:
            version = group["preferredVersion"]["groupVersion"]
            # An aggregated API not serving yet (Kueue's visibility API) answers a plain-text 503;
            # kubectl warns and goes on without it, and so does this.
            try:
                status, body = self._api.request("GET", f"/apis/{version}")
            except ValueError:
                continue
            if status == 200:
                self._groups[group["name"]] = _resources(f"/apis/{version}", body)

    def _resolve(self, token: str) -> ApiResource | None:
        """The one resource `token` names (None when none does, or several: kubectl's own priorities
        decide those). Discovery is read again on a miss, unless it was read just now."""
        fresh = self._groups is None
        if fresh:
            self._discover()
        matches = self._matches(token)
        if not matches and not fresh:  # a type installed since discovery was read
            self._discover()
            matches = self._matches(token)
        return matches[0] if len(matches) == 1 else None

    def _matches(self, token: str) -> list[ApiResource]:
        assert self._groups is not None
        alias, _, group = token.lower().partition(".")
        if group:
            candidates = self._groups.get(group, [])
        else:
            candidates = [r for r in self._core if alias in r.aliases] or [
                r for rs in self._groups.values() for r in rs
            ]
        return [r for r in candidates if alias in r.aliases]


def _get_request(args: list[str]) -> tuple[str, str, str, bool, dict[str, str]] | None:
    """(resource, name or "", namespace or "", all namespaces, query) of `kubectl get` arguments,
    or None for a shape ApiReads leaves to kubectl."""
    positional: list[str] = []
    namespace, everywhere, query = "", False, {}
    flags = {"-n": "namespace", "--namespace": "namespace", "-l": "labelSelector", "--selector": "labelSelector"}
    flags["--field-selector"] = "fieldSelector"
    i = 0
    while i < len(args):
        arg = args[i]
        key, eq, value = arg.partition("=")
        if arg in ("-A", "--all-namespaces"):
            everywhere = True
        elif key in flags and (eq or i + 1 < len(args)):
            if not eq:
                i += 1
                value = args[i]
            if flags[key] == "namespace":
                namespace = value
            else:
                query[flags[key]] = value
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
        i += 1
    if not 1 <= len(positional) <= 2 or any("/" in p or "," in p for p in positional):
        return None
    return positional[0], positional[1] if len(positional) == 2 else "", namespace, everywhere, query


def copy_secret_keys(
    api: Api, namespace: str, name: str, folder: Path, written: dict[str, str], *, skip_empty: bool
) -> None:
    """Write the Secret's keys into `folder` when they change, as a kubelet does for a Secret
    volume; `written` holds what was written, by key. A Secret not there yet, or an API server
    too busy to answer, leaves everything as it was until the next call. Read over `api`'s
    kept-alive connection: the controllers' cert threads call this three times a second each, and
    a kubectl process per call took most of a core with two stacks up."""
    try:
        status, body = api.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
    except (OSError, http.client.HTTPException):
        return
    if status != 200:
        return
    for key, value in (body.get("data") or {}).items():
        if (value or not skip_empty) and written.get(key) != value:
            (folder / key).write_bytes(base64.b64decode(value))
            written[key] = value


def api_create(kubeconfig: Path, path: str, obj: Mapping[str, Any], *, dry_run: bool = True) -> tuple[int, str]:
    """POST an object straight to the API server; returns the status code and, on failure, the
    `message` of the Status the API server answered with, exactly as any client receives it."""
    with Api(kubeconfig) as api:
        status, body = api.request("POST", path + ("?dryRun=All" if dry_run else ""), obj)
    return status, "" if status < 300 else str(body.get("message", body))


class KwokCluster:
    """kwokctl's binary runtime with the locally built binaries; downloads nothing.

    `service_cidr` is the cluster's service range, a loopback /16; clusters that run at the same
    time need distinct ones (see the module's docstring).
    """

    def __init__(self, name: str, binaries: Binaries, workdir: Path, service_cidr: str = SERVICE_CIDR) -> None:
        self.name, self.binaries, self.workdir, self.service_cidr = name, binaries, workdir, service_cidr
        self.kubeconfig = workdir / "kubeconfig"
        self.env = {**os.environ, "KWOK_WORKDIR": str(workdir / "kwok")}
        self.kubectl = Kubectl(binaries.kubectl, self.kubeconfig, binaries.kubectl_kueue.parent)

    def _config(self) -> Path:
        b = self.binaries
        options = {
            "runtime": "binary",
            "kubeVersion": KUBERNETES_VERSION,
            "bindAddress": "127.0.0.1",
            "kubeApiserverBinary": str(b.kube_apiserver),
            "kubeControllerManagerBinary": str(b.kube_controller_manager),
            "kubeSchedulerBinary": str(b.kube_scheduler),
            "kubectlBinary": str(b.kubectl),
            "kwokControllerBinary": str(b.kwok),
            "etcdBinary": str(b.etcd),
        }

        def args(component: str, pairs: Mapping[str, str]) -> dict[str, Any]:
            return {"name": component, "extraArgs": [{"key": k, "value": v} for k, v in pairs.items()]}

        kwokctl = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
            "componentsPatches": [
                args(
                    "kube-apiserver",
                    {
                        "service-cluster-ip-range": self.service_cidr,
                        "advertise-address": "127.0.0.1",
                        "endpoint-reconciler-type": "none",
                        # kwokctl sets the proxy client certificate but not these: without them an
                        # aggregated API (Kueue's visibility API) cannot trust the X-Remote-* headers
                        # and sees every request as the admin whose certificate the API server presents.
                        "requestheader-client-ca-file": str(self.pki_dir() / "ca.crt"),
                        "requestheader-allowed-names": ADMIN_CERT_USER,
                        "requestheader-username-headers": "X-Remote-User",
                        "requestheader-group-headers": "X-Remote-Group",
                        "requestheader-extra-headers-prefix": "X-Remote-Extra-",
                    },
                ),
                args("kube-controller-manager", {"service-cluster-ip-range": self.service_cidr}),
                args("kwok-controller", {"cidr": POD_CIDR, "node-ip": "127.0.0.1"}),
            ],
        }
        path = self.workdir / "kwokctl.yaml"
        path.write_text(yaml.safe_dump(kwokctl) + "---\n" + STAGES.read_text())
        return path

    def create(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.delete()  # a cluster of the same name left by a killed run
        # kwokctl picks the new cluster's ports among the free ones: two creations at once (one per
        # xdist worker) can pick the same and both hang. One at a time on the machine; the ports
        # are taken when it returns.
        with locked(cache_root() / "ports" / "kwokctl-create"):
            done = subprocess.run(
                [
                    str(self.binaries.kwokctl),
                    "create",
                    "cluster",
                    f"--name={self.name}",
                    f"--config={self._config()}",
                    f"--kubeconfig={self.kubeconfig}",
                    "--wait=60s",
                ],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=180,
            )
        if done.returncode != 0:
            raise E2EError(
                f"kwokctl create cluster failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n"
                f"component logs: {self.workdir / 'kwok' / 'clusters' / self.name / 'logs'}"
            )

    def server_url(self) -> str:
        """The API server's URL, https://127.0.0.1:<port>, as kwokctl wrote it into the kubeconfig."""
        return str(kubeconfig_entries(self.kubeconfig)[0]["server"])

    def ca_data(self) -> str:
        """The cluster's CA certificate as base64 PEM, a kubeconfig's `certificate-authority-data`.
        kwokctl's kubeconfig names the CA by file path, which a kubeconfig handed to another
        process (MultiKueue's manager reads its workers' from Secrets) cannot use."""
        ca_file = Path(kubeconfig_entries(self.kubeconfig)[0]["certificate-authority"])
        return base64.b64encode(ca_file.read_bytes()).decode()

    # Losing the cluster and getting it back. kwokctl 0.8 stops and starts only whole clusters, and
    # stopping the API server alone gains nothing: the controller-manager and the scheduler exit
    # once they cannot renew their leader leases (about 10 s), and `kwokctl start cluster` restarts
    # every component that is not running, with its recorded arguments. (SIGTERM to the API server
    # is no quicker: its graceful shutdown took 60 s.) Measured on 2 cores with three clusters up:
    # stop 0.1 to 0.5 s, start to /readyz 3 to 6 s.

    def stop(self, timeout: float = 30) -> None:
        """Lose the control plane: `kwokctl stop cluster` SIGKILLs every component, as a crash
        would; etcd's data, the certificates, the ports and the kubeconfig stay. Returns once no
        component runs and the API server refuses connections."""
        self._kwokctl("stop", timeout)

        def down() -> tuple[bool, Any]:
            pids, ready = self._component_pids(), self._ready()
            return not pids and not ready[0], {"component pids": pids, "readyz": ready[1]}

        wait_for(f"cluster {self.name}'s components to exit", down, timeout)

    def start(self, timeout: float = 60) -> None:
        """Bring a stopped control plane back with `kwokctl start cluster`: the same API server URL
        and credentials, the objects etcd held. Returns once /readyz answers ok; on a running
        cluster it only waits for that."""
        port = urllib.parse.urlsplit(self.server_url()).port
        if port is not None and not self._component_pids() and not port_is_free(port):
            # kwokctl picks a new cluster's ports among the free ones at creation; one created while
            # this one was stopped can take them.
            raise E2EError(
                f"cluster {self.name}'s API server port {port} is in use by another process "
                "(a cluster created while this one was stopped?); find it with `ss -ltnp`"
            )
        self._kwokctl("start", timeout)
        try:
            wait_for(f"cluster {self.name}'s API server to be ready again", self._ready, timeout)
        except E2EError as err:
            apiserver_log = log_tail(self.logs_dir() / "kube-apiserver.log", 30)
            raise E2EError(f"{err}\nkube-apiserver log:\n{apiserver_log}") from None

    def _kwokctl(self, verb: str, timeout: float) -> None:
        done = subprocess.run(
            [str(self.binaries.kwokctl), verb, "cluster", f"--name={self.name}"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise E2EError(
                f"kwokctl {verb} cluster --name={self.name} failed:\n{done.stderr[-3000:]}\n"
                f"component logs: {self.logs_dir()}"
            )

    def _ready(self) -> tuple[bool, str]:
        """(ready, what /readyz answered); a stopped API server answers nothing."""
        done = self.kubectl.run("get", "--raw", "/readyz", "--request-timeout=2s", check=False, timeout=10)
        return done.returncode == 0, (done.stdout or done.stderr).strip()[-500:]

    def delete(self) -> None:
        """Delete the cluster and make sure every component process is gone (kwokctl returns
        before they exit, and a killed run may have left some behind)."""
        leftover = self._component_pids()
        subprocess.run(
            [str(self.binaries.kwokctl), "delete", "cluster", f"--name={self.name}", f"--kubeconfig={self.kubeconfig}"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        deadline = time.monotonic() + 10
        while leftover and time.monotonic() < deadline:
            time.sleep(0.2)
            leftover = self._component_pids()
        for pid in leftover:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _component_pids(self) -> list[int]:
        """Processes running a binary from this cluster's kwokctl folder."""
        prefix = str(self.workdir / "kwok" / "clusters" / self.name)
        pids = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
                except OSError:
                    continue
                if argv0.startswith(prefix):
                    pids.append(int(proc.name))
        return pids

    def logs_dir(self) -> Path:
        return self.workdir / "kwok" / "clusters" / self.name / "logs"

    def pki_dir(self) -> Path:
        """Where kwokctl writes the cluster's CA and admin certificate (known before it runs)."""
        return self.workdir / "kwok" / "clusters" / self.name / "pki"


class Helm:
    """helm against one cluster, with the chart files from ../shared (no registry)."""

    def __init__(self, binary: Path, kubeconfig: Path, home: Path) -> None:
        self.binary, self.kubeconfig = binary, kubeconfig
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    def run(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise E2EError(f"helm {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done

    def install(
        self,
        release: str,
        chart: ChartRef,
        *,
        namespace: str,
        values: Mapping[str, Any],
        workdir: Path,
        wait_seconds: int,
        extra: Iterable[str] = (),
    ) -> None:
        """Install as the program's Release does: the same chart, version and repository."""
        values_file = workdir / f"{release}-values.yaml"
        values_file.write_text(yaml.safe_dump(dict(values), sort_keys=False))
        repository = [f"--repo={chart.repository}"] if chart.repository else []
        self.run(
            "install",
            release,
            chart.chart,
            f"--version={chart.version}",
            *repository,
            f"--namespace={namespace}",
            f"--values={values_file}",
            "--wait",
            f"--timeout={wait_seconds}s",
            *extra,
            timeout=wait_seconds + 60,
        )


def pattern(template: str, **known: str) -> re.Pattern[str]:
    """A message template (`{placeholders}` for what varies) as a regex: the placeholders given
    here must match exactly, the others match anything."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else (re.escape(known[part]) if part in known else ".+?")
        for i, part in enumerate(parts)
    )
    return re.compile(regex)


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's status; a just-created object may have it still null."""
    return obj.get("status") or {}


def conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """An object's status conditions, empty while they are still null."""
    return status(obj).get("conditions") or []


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == kind), None)


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"
