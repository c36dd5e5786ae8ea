"""A private chart mirror on loopback, serving the stack's charts as an ACR mirror serves them.

docs/registries.md: a cluster that cannot pull from public registries takes its charts from your
own, `kueue-aks:kueue.chart`, `kueue-aks:devicePlugin.chart` and `kueue-aks:operators.<key>.chart`
set to an `oci://` repository or an `https://` chart repository. `ChartMirror` is both, on
127.0.0.1, each with TLS from one private CA (tests/loopback_tls.make_tls), nothing trusted
by default:

- an OCI registry: CNCF Distribution's `registry` (binaries.ensure_registry), configured by a
  generated file (its TLS certificate and key, filesystem storage in the mirror's temp folder).
  Every chart is pushed with `helm push <chart>.tgz oci://127.0.0.1:<port>/helm`, as the doc's
  `helm push kueue-0.19.2.tgz oci://myregistry.azurecr.io/helm`, so it is
  `oci://127.0.0.1:<port>/helm/<name>` at the tag of its version;
- an https chart repository: the same archives and an index.yaml made by `helm repo index`,
  served by http.server over ssl at `https://127.0.0.1:<port>/charts`.

The charts, each at the version the program pins and checked to hold it:

| chart | version | from |
|---|---|---|
| kueue | facts.kueue_versions.DEFAULT_VERSION, or the one asked for | ../shared (stacks.KUEUE_CHART_FILE) |
| nvidia-device-plugin | facts.device_plugin.DEVICE_PLUGIN_VERSION | ../shared (stacks.DEVICE_PLUGIN_CHART_FILE) |
| kuberay-operator | the kuberay pin | ../shared/kuberay-operator/v<pin>/chart/ (its SOURCE.md: `helm package` of the release tag's folder) |
| jobset | the jobset pin | `charts/jobset` of the pinned module, packaged as JobSet's release does |
| kubeflow-trainer | the trainer pin | `charts/kubeflow-trainer` of the pinned module, packaged as Trainer's release does |

JobSet's release (its module's hack/helm-chart-package.sh) packages the git folder with
`--version <tag without v> --app-version <tag>` after pointing the image at
registry.k8s.io/jobset/jobset:<tag>, IfNotPresent; the git folder says the staging image at `main`.
Trainer's (.github/workflows/publish-helm-charts.yaml) runs `helm dependency build` and then
`helm package --version <Chart.yaml's version>`; its two subcharts come from registry.k8s.io,
unreachable here, so they are packaged from their own modules the way their releases package
them: JobSet v0.11.0 (the version Trainer 2.2.1 declares, not the 0.12.0 the stack installs) and
LeaderWorkerSet v0.8.0, whose Chart.yaml in git says 0.1.0 (its hack/push-chart.sh sets the
version when it packages). The program turns both off (`jobset.install: false`, no data cache).
Every module's zip is checked against a pinned checksum (the program's pins; the two subcharts'
below), read as the tier's replay reads the operators' charts (operators.module_folder).

Trust: the program's own chart reads (components/kueue/crds.py, Python requests and oras) use
REQUESTS_CA_BUNDLE; Helm, in the helm CLI and inside the kubernetes provider, uses Go's system
roots, which SSL_CERT_FILE replaces. `environ()` gives both, pointing at one bundle: the public
roots and the mirror's CA, so the rest of the network (the Go module proxy) stays trusted. The
provider's Helm Release (pulumi-kubernetes 4.34.2, Helm 3.18.6) pulls an OCI chart with the
registry client it makes itself, with no TLS options, so `repository_opts.ca_file` does nothing
for an `oci://` chart and only the process's roots count; for an `https://` repository
`ca_file` works as well as SSL_CERT_FILE. Seen by running the provider's own getChart against
this mirror: OCI fails with ca_file alone and succeeds with SSL_CERT_FILE; https succeeds with
either and fails with neither.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
import yaml

from components.config.kueue import DEFAULT_FRAMEWORKS
from components.config.names import CONFIG_PREFIX
from components.facts.device_plugin import DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION
from components.kueue.values import KUEUE_CHART_NAME
from components.facts.kueue_versions import AKS_EXTENSIONS, DEFAULT_AKS_EXTENSION, DEFAULT_VERSION
from components.facts.operators import JOBSET, KUBERAY, OPERATOR_PINS, TRAINER, needed_operators
from components.facts.operators import Module
from testbed.loopback_tls import make_tls
from testbed.paths import SHARED

from .cluster import E2EError, stop_process, wait_for
from .operators import module_folder
from .stacks import DEVICE_PLUGIN_CHART_FILE, KUEUE_CHART_FILE

# The repository path a mirror keeps its charts under (docs/registries.md: oci://<registry>/helm/<name>).
OCI_NAMESPACE = "helm"
HTTPS_PATH = "charts"
# Charts that the mirror's stack config takes from the https repository; the others from OCI.
# KubeRay's upstream is an https repository (catalog.KUBERAY.chart), so its mirror is one too.
DEFAULT_HTTPS_CHARTS = (KUBERAY.chart_name,)
START_TIMEOUT_SECONDS = 30.0
HELM_TIMEOUT_SECONDS = 120.0

# Trainer's subcharts (its Chart.yaml `dependencies`), packaged from their modules. Trainer 2.2.1
# declares jobset 0.11.0; LeaderWorkerSet's chart in git is at 0.1.0, its release sets 0.8.0.
# Checksums: the `Sum` that `go mod download -json` gives for each (proxy.golang.org).
TRAINER_DEPENDENCIES = {
    "jobset": Module("sigs.k8s.io/jobset", "v0.11.0", "h1:1r2uTNQmylnqG/WCSSDADgNkHryvyUaCNCOgvSPWpN8="),
    "lws": Module("sigs.k8s.io/lws", "v0.8.0", "h1:DdhJ8QabwTfWgbgaHH2gdf8twliioHaoSfmDXRYEVU0="),
}


@dataclass(frozen=True)
class MirroredChart:
    """One chart the mirror publishes, and the stack config key that points at it."""

    name: str  # Chart.yaml's name: the OCI repository's last segment and the index.yaml entry
    version: str  # the version the program pins
    config_path: tuple[str, ...]  # e.g. ("kueue-aks:operators", "jobset", "chart")
    archive: Path | None = None  # the packaged chart, once made

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}.tgz"  # helm package's and helm pull's name


def pinned_charts(kueue_version: str = DEFAULT_VERSION) -> dict[str, MirroredChart]:
    """The charts the program installs, by name, at the versions it pins."""
    pins = OPERATOR_PINS[kueue_version]
    charts = [
        MirroredChart(KUEUE_CHART_NAME, kueue_version, (f"{CONFIG_PREFIX}:kueue", "chart")),
        MirroredChart(DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION, (f"{CONFIG_PREFIX}:devicePlugin", "chart")),
        *(
            MirroredChart(op.chart_name, pins[op.key].version, (f"{CONFIG_PREFIX}:operators", op.key, "chart"))
            for op in (KUBERAY, JOBSET, TRAINER)
        ),
    ]
    return {c.name: c for c in charts}


def chart_metadata(archive: Path | bytes) -> dict[str, Any]:
    """The top-level Chart.yaml of a packaged chart (not a subchart's)."""
    opened = tarfile.open(archive) if isinstance(archive, Path) else tarfile.open(fileobj=io.BytesIO(archive))
    with opened as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
        stream = tar.extractfile(member)
        assert stream is not None
        return dict(yaml.safe_load(stream.read()))


def ca_bundle(ca: Path, into: Path) -> Path:
    """One PEM file with the public roots (requests' certifi, and the system's) and `ca`."""
    parts = []
    try:
        import certifi

        parts.append(Path(certifi.where()).read_text())
    except ImportError:
        pass
    system = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    if Path(system).is_file():
        parts.append(Path(system).read_text())
    parts.append(ca.read_text())
    into.write_text("\n".join(p.rstrip("\n") for p in parts) + "\n")
    return into


def _set_values(path: Path, key: Sequence[str], values: Mapping[str, str]) -> None:
    """Set scalar keys under the mapping at `key` in a values.yaml, keeping its comments (what the
    releases' `yq e '.image.repository = ...' -i values.yaml` does), then check the result."""
    lines = path.read_text().splitlines(keepends=True)
    stack: list[tuple[int, str]] = []
    done: set[str] = set()
    for i, line in enumerate(lines):
        found = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(\s*)(.*?)(\s*)$", line)
        if not found or line.lstrip().startswith("#"):
            continue
        indent = len(found.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        name = found.group(2)
        if tuple(k for _, k in stack) == tuple(key) and name in values:
            lines[i] = f"{found.group(1)}{name}: {values[name]}\n"
            done.add(name)
        stack.append((indent, name))
    if done != set(values):
        raise E2EError(f"{path}: no {', '.join(sorted(set(values) - done))} under {'.'.join(key)}")
    path.write_text("".join(lines))
    node: Any = yaml.safe_load(path.read_text())
    for k in key:
        node = node[k]
    if any(str(node[k]) != v for k, v in values.items()):
        raise E2EError(f"{path}: {'.'.join(key)} is {node}, not {dict(values)}")


class ChartMirror:
    """The loopback OCI registry and https chart repository, with the stack's charts in both.

    `start()` brings both up and publishes every chart; `stop()` kills the registry, shuts the
    https server and removes the temp folder (also after a failed start). A context manager, and
    fine as a session-scoped object: nothing it holds belongs to a test.
    """

    def __init__(
        self,
        helm: Path,
        registry: Path,
        *,
        https_charts: Iterable[str] = DEFAULT_HTTPS_CHARTS,
        kueue_version: str = DEFAULT_VERSION,
        more_kueue_versions: Iterable[str] = (),
    ) -> None:
        """`more_kueue_versions`: other Kueue chart versions to publish beside `kueue_version`, in
        the same repositories (a stack upgraded from one of them)."""
        self.helm_binary, self.registry_binary = helm, registry
        self.charts = pinned_charts(kueue_version)
        self.more_kueue = tuple(
            KUEUE_CHART_FILE.parents[2] / f"v{v}" / "chart" / f"{KUEUE_CHART_NAME}-{v}.tgz" for v in more_kueue_versions
        )
        self.https_charts = tuple(https_charts)
        unknown = set(self.https_charts) - set(self.charts)
        if unknown:
            raise ValueError(f"no such mirrored chart: {sorted(unknown)}")
        self.workdir: Path | None = None
        self.registry_process: subprocess.Popen[bytes] | None = None
        self.https_server: ThreadingHTTPServer | None = None
        self.oci_host = self.https_host = ""
        self.ca_file = self.key_file = self.bundle = Path()
        self.digests: dict[str, str] = {}  # chart name -> the manifest digest `helm push` printed
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------------------------------------
    # Where things are

    @property
    def oci_base(self) -> str:
        return f"oci://{self.oci_host}/{OCI_NAMESPACE}"

    @property
    def https_base(self) -> str:
        return f"https://{self.https_host}/{HTTPS_PATH}"

    def oci(self, name: str) -> str:
        """The chart's OCI repository, the value of its `chart` key for an OCI mirror."""
        return f"{self.oci_base}/{name}"

    def source(self, name: str) -> str:
        """The `chart` key's value for this chart: the https repository or its OCI repository."""
        return self.https_base if name in self.https_charts else self.oci(name)

    def config(self, operators: Iterable[str] = (KUBERAY.key, JOBSET.key, TRAINER.key)) -> dict[str, Any]:
        """The stack config keys a private-registry user writes (docs/registries.md), as a stack
        file's `config:` map; `operators` are the catalog keys of the operators the stack manages."""
        keys: dict[str, Any] = {}
        wanted = set(operators)
        for chart in self.charts.values():
            if chart.config_path[0] == f"{CONFIG_PREFIX}:operators" and chart.config_path[1] not in wanted:
                continue
            node = keys
            for part in chart.config_path[:-1]:
                node = node.setdefault(part, {})
            node[chart.config_path[-1]] = self.source(chart.name)
        return keys

    def apply(self, config_map: Mapping[str, Any]) -> dict[str, Any]:
        """A stack's `config:` map with every chart it installs from the mirror: Kueue's (unless
        AKS's extension installs Kueue, which takes no chart), the device plugin's, and the chart
        of each operator the stack's frameworks make it manage (a key for another operator would
        be refused as having no effect). Read from the raw keys as the parser reads them, so a
        stack whose kubeconfig is set later (the engine's) works too."""
        kueue = config_map.get(f"{CONFIG_PREFIX}:kueue") or {}
        extension = kueue.get("install") == "aksExtension"
        if extension:
            default = AKS_EXTENSIONS[kueue.get("extensionVersion", DEFAULT_AKS_EXTENSION)].frameworks
        else:
            default = DEFAULT_FRAMEWORKS
        entries = config_map.get(f"{CONFIG_PREFIX}:operators") or {}
        operators = [
            o.key
            for o in needed_operators(list(kueue.get("frameworks", default)))
            if o.chart and (entries.get(o.key) or {}).get("install", "managed") == "managed"
        ]
        keys = self.config(operators)
        if extension:
            del keys[f"{CONFIG_PREFIX}:kueue"]
        merged = dict(config_map)
        for top, value in keys.items():
            merged[top] = _merge(merged.get(top) or {}, value)
        return merged

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a process that reads from the mirror: the Python program
        (REQUESTS_CA_BUNDLE: requests and oras) and Helm, the CLI's and the kubernetes provider's
        (SSL_CERT_FILE: Go's roots; the provider ignores repository_opts.ca_file for OCI charts)."""
        trust = {"REQUESTS_CA_BUNDLE": str(self.bundle), "SSL_CERT_FILE": str(self.bundle)}
        return {**(os.environ if base is None else base), **trust}

    # ------------------------------------------------------------------------------------------
    # Start and stop

    def start(self) -> ChartMirror:
        if self.workdir is not None:
            return self
        started = time.monotonic()
        self.workdir = Path(tempfile.mkdtemp(prefix="kueue-aks-mirror-"))
        try:
            self.ca_file, self.key_file = make_tls(self.workdir / "tls")
            self.bundle = ca_bundle(self.ca_file, self.workdir / "tls" / "bundle.pem")
            self._start_registry()
            self._start_https()
            self.timings["servers up"] = round(time.monotonic() - started, 1)
            self._package()
            self.timings["charts packaged"] = round(time.monotonic() - started, 1)
            self._publish()
            self.timings["charts published"] = round(time.monotonic() - started, 1)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.https_server is not None:
            self.https_server.shutdown()
            self.https_server.server_close()
            self.https_server = None
        process, self.registry_process = self.registry_process, None
        stop_process(process)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> ChartMirror:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start_registry(self) -> None:
        assert self.workdir is not None
        folder = self.workdir / "registry"
        (folder / "storage").mkdir(parents=True)
        config = {
            "version": "0.1",
            "log": {"level": "info", "formatter": "text", "accesslog": {"disabled": True}},
            "storage": {"filesystem": {"rootdirectory": str(folder / "storage")}, "delete": {"enabled": True}},
            # Port 0: the registry picks a free one and logs it ("listening on 127.0.0.1:<port>, tls").
            "http": {"addr": "127.0.0.1:0", "tls": {"certificate": str(self.ca_file), "key": str(self.key_file)}},
        }
        (folder / "config.yml").write_text(yaml.safe_dump(config))
        log = folder / "registry.log"
        with open(log, "wb") as out:
            # OTEL_TRACES_EXPORTER=none: Distribution v3 exports traces by OTLP to localhost:4318 otherwise.
            self.registry_process = subprocess.Popen(
                [str(self.registry_binary), "serve", str(folder / "config.yml")],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "OTEL_TRACES_EXPORTER": "none"},
                start_new_session=True,
            )
        process = self.registry_process

        def listening() -> tuple[bool, str]:
            text = log.read_text(errors="replace")
            if process.poll() is not None:
                raise E2EError(f"the mirror's registry exited with {process.returncode}:\n{text[-3000:]}")
            found = re.search(r"listening on 127\.0\.0\.1:(\d+), tls", text)
            if found:
                self.oci_host = f"127.0.0.1:{found.group(1)}"
            return found is not None, text[-2000:]

        wait_for("the mirror's registry to listen", listening, START_TIMEOUT_SECONDS)
        wait_for(
            "the mirror's registry to answer /v2/",
            lambda: self._answers(f"https://{self.oci_host}/v2/"),
            START_TIMEOUT_SECONDS,
        )

    def _answers(self, url: str) -> tuple[bool, str]:
        try:
            response = requests.get(url, verify=str(self.ca_file), timeout=5)
        except requests.RequestException as err:
            return False, str(err)
        return response.status_code == 200, f"{response.status_code} {response.text[:200]}"

    def _start_https(self) -> None:
        assert self.workdir is not None
        root = self.workdir / "https"
        (root / HTTPS_PATH).mkdir(parents=True)

        class Quiet(SimpleHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca_file, self.key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self.https_server = server
        self.https_host = f"127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, name="chart-mirror-https", daemon=True).start()

    # ------------------------------------------------------------------------------------------
    # The charts

    def helm(
        self, *args: str, trust: bool = True, check: bool = True, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """helm with homes of its own in the mirror's folder (no login or repository of the
        user's). `trust`: SSL_CERT_FILE is the bundle with the mirror's CA, as environ() gives."""
        assert self.workdir is not None
        home = self.workdir / "helm"
        own = {
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
            "HELM_REGISTRY_CONFIG": str(home / "registry.json"),
            "HELM_REPOSITORY_CONFIG": str(home / "repositories.yaml"),
            "HELM_REPOSITORY_CACHE": str(home / "repository-cache"),
        }
        merged = {**os.environ, **own, **(env or {})}
        if trust:
            merged["SSL_CERT_FILE"] = str(self.bundle)
        done = subprocess.run(
            [str(self.helm_binary), *args], env=merged, capture_output=True, text=True, timeout=HELM_TIMEOUT_SECONDS
        )
        if check and done.returncode != 0:
            raise E2EError(
                f"helm {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def _package(self) -> None:
        """Every chart as a .tgz in <workdir>/charts, checked to hold its name and pinned version."""
        assert self.workdir is not None
        out = self.workdir / "charts"
        build = self.workdir / "build"
        out.mkdir()
        build.mkdir()
        kuberay, kueue = self.charts[KUBERAY.chart_name], self.charts[KUEUE_CHART_NAME]
        files = {
            # stacks.KUEUE_CHART_FILE's place, for the mirror's Kueue version.
            KUEUE_CHART_NAME: KUEUE_CHART_FILE.parents[2] / f"v{kueue.version}" / "chart" / kueue.file_name,
            DEVICE_PLUGIN_CHART: DEVICE_PLUGIN_CHART_FILE,
            KUBERAY.chart_name: SHARED / "kuberay-operator" / f"v{kuberay.version}" / "chart" / kuberay.file_name,
        }
        for path in self.more_kueue:
            if (chart_metadata(path).get("name"), path.name) != (KUEUE_CHART_NAME, path.name):
                raise E2EError(f"{path} is not a Kueue chart")
        for name, path in files.items():
            if not path.is_file():
                raise E2EError(
                    f"the chart {name} is not at {path}: recreate ../shared "
                    "(python -m tools.fetch_reference --dest ../shared)"
                )
            shutil.copyfile(path, out / self.charts[name].file_name)
        pins = OPERATOR_PINS[kueue.version]
        jobset = pins[JOBSET.key]
        self._package_jobset(jobset.module, out, build)
        trainer = pins[TRAINER.key]
        source = module_folder(trainer.module, "charts/kubeflow-trainer", build)
        deps = source / "charts"
        deps.mkdir(exist_ok=True)
        declared = {
            d["name"]: str(d["version"]) for d in yaml.safe_load((source / "Chart.yaml").read_text())["dependencies"]
        }
        if declared != {k: m.version.lstrip("v") for k, m in TRAINER_DEPENDENCIES.items()}:
            raise E2EError(f"Trainer {trainer.version} declares {declared}; update TRAINER_DEPENDENCIES in {__file__}")
        self._package_jobset(TRAINER_DEPENDENCIES["jobset"], deps, build / "deps")
        lws = TRAINER_DEPENDENCIES["lws"]
        lws_source = module_folder(lws, "charts/lws", build / "deps")
        _set_values(
            lws_source / "values.yaml",
            ("image", "manager"),
            {"repository": "registry.k8s.io/lws/lws", "tag": lws.version, "pullPolicy": "IfNotPresent"},
        )
        self.helm(
            "package",
            str(lws_source),
            "--version",
            lws.version.lstrip("v"),
            "--app-version",
            lws.version,
            "-d",
            str(deps),
            trust=False,
        )
        # The release's `helm package <folder> --version <Chart.yaml's version>` (no app version).
        self.helm("package", str(source), "--version", trainer.version, "-d", str(out), trust=False)
        for chart in list(self.charts.values()):
            archive = out / chart.file_name
            meta = chart_metadata(archive)
            if (meta.get("name"), str(meta.get("version"))) != (chart.name, chart.version):
                raise E2EError(
                    f"{archive} holds chart {meta.get('name')} {meta.get('version')}, "
                    f"not the {chart.name} {chart.version} the program asks for"
                )
            self.charts[chart.name] = MirroredChart(chart.name, chart.version, chart.config_path, archive)

    def _package_jobset(self, module: Module, out: Path, build: Path) -> None:
        """JobSet's chart as its release packages it (the module's hack/helm-chart-package.sh)."""
        source = module_folder(module, "charts/jobset", build)
        _set_values(
            source / "values.yaml",
            ("image",),
            {"repository": "registry.k8s.io/jobset/jobset", "tag": module.version, "pullPolicy": "IfNotPresent"},
        )
        self.helm(
            "package",
            str(source),
            "--version",
            module.version.lstrip("v"),
            "--app-version",
            module.version,
            "-d",
            str(out),
            trust=False,
        )

    def _publish(self) -> None:
        """Each chart pushed to the registry, then the https repository's files and index."""
        assert self.workdir is not None
        for archive in self.more_kueue:
            self.helm("push", str(archive), self.oci_base, "--ca-file", str(self.ca_file), trust=False)
            shutil.copyfile(archive, self.workdir / "https" / HTTPS_PATH / archive.name)
        for chart in self.charts.values():
            assert chart.archive is not None
            pushed = self.helm("push", str(chart.archive), self.oci_base, "--ca-file", str(self.ca_file), trust=False)
            digest = re.search(r"Digest:\s*(sha256:[0-9a-f]{64})", pushed.stdout + pushed.stderr)
            if not digest:
                raise E2EError(f"helm push {chart.file_name} printed no digest:\n{pushed.stdout}{pushed.stderr}")
            self.digests[chart.name] = digest.group(1)
        repository = self.workdir / "https" / HTTPS_PATH
        for chart in self.charts.values():
            assert chart.archive is not None
            shutil.copyfile(chart.archive, repository / chart.file_name)
        self.helm("repo", "index", str(repository), "--url", self.https_base, trust=False)

    def published(self, name: str) -> bytes:
        archive = self.charts[name].archive
        assert archive is not None
        return archive.read_bytes()

    def sha256(self, name: str) -> str:
        return hashlib.sha256(self.published(name)).hexdigest()


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merge(merged.get(key) or {}, value) if isinstance(value, Mapping) else value
    return merged
