"""components/kueue/crds.py: the validator's CRDs come from the chart the program installs.

A loopback HTTPS server (self-signed, trusted through REQUESTS_CA_BUNDLE as a private CA would be)
plays both chart sources the program accepts: an OCI registry (the distribution API GETs oras
makes, Helm's media types, optional token login) and an https chart repository (index.yaml and the
archive). It serves the packaged chart in ../shared (the tests' data; the code under test only
sees the URL). Every test starts with an empty cache and KUEUE_CRDS_DIR unset.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import ssl
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.k8s import documents
from components.kueue import crds as kc
from components.config.parse import parse_config
from components import plan
from components.kueue import queues
from components.config.kueue import DEFAULT_KUEUE_CHART
from components.kueue.objects import build_objects, queue_set
from components.k8s.crd_schema import CrdError
from components.kueue import validate
from components.kueue.validate import CRDS_ENV, validate_objects
from components.facts.kueue_versions import DEFAULT_VERSION, RELEASES
from testbed.harness import run_program
from testbed.loopback_tls import make_tls
from testbed.paths import CHART_TGZ, CRDS_DIR, SHARED
from testbed.stacks import load_stack, stack_file_config
from testbed import harness

VERSION = "0.19.2"
CHART = CHART_TGZ.read_bytes()
VERSIONS = sorted(RELEASES)
REPO = "kueue/charts/kueue"  # the repository path in the test registry, as on registry.k8s.io
V = "kueue.x-k8s.io/v1beta2"


def repacked(*, version: str | None = None, crd_edit: bytes | None = None, data: bytes = CHART) -> bytes:
    """The chart with another Chart.yaml version, or one CRD template changed (a repack)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for member in src.getmembers():
            body = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if body is not None and member.name == "kueue/Chart.yaml" and version:
                body = body.replace(f"version: {VERSION}".encode(), f"version: {version}".encode())
            if body is not None and member.name.endswith("templates/crd/kueue.x-k8s.io_topologies.yaml") and crd_edit:
                body += crd_edit
            if body is not None:
                member.size = len(body)
            dst.addfile(member, io.BytesIO(body) if body is not None else None)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# The loopback chart server


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_tls(tmp_path_factory.mktemp("tls"))


Route = tuple[int, dict[str, str], bytes]


class ChartServer:
    def __init__(self, cert: Path, key: Path) -> None:
        self.routes: dict[str, Route] = {}
        self.delay = 0.0
        self.login: tuple[str, str] | None = None
        self.seen: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                server.seen.append(path)
                if server.delay:
                    time.sleep(server.delay)
                status, headers, body = server.answer(path, self.headers.get("Authorization", ""))
                try:
                    self.send_response(status)
                    for name, value in {"Content-Length": str(len(body)), **headers}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass  # the client gave up (the timeout tests)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def oci(self) -> str:
        return f"oci://{self.host}/{REPO}"

    @property
    def https(self) -> str:
        return f"https://{self.host}/charts"

    def answer(self, path: str, authorization: str) -> Route:
        if path == "/token" and self.login:
            good = "Basic " + base64.b64encode(":".join(self.login).encode()).decode()
            return (
                (200, {"Content-Type": "application/json"}, b'{"token": "t0ken"}')
                if authorization == good
                else (401, {}, b"")
            )
        if self.login and path.startswith("/charts/"):  # a chart repository behind basic auth
            good = "Basic " + base64.b64encode(":".join(self.login).encode()).decode()
            if authorization != good:
                return 401, {"Www-Authenticate": 'Basic realm="charts"'}, b""
        if self.login and path.startswith("/v2/") and authorization != "Bearer t0ken":
            challenge = f'Bearer realm="https://{self.host}/token",service="{self.host}",scope="repository:{REPO}:pull"'
            return 401, {"Www-Authenticate": challenge}, b'{"errors": [{"code": "UNAUTHORIZED"}]}'
        return self.routes.get(
            path, (404, {"Content-Type": "application/json"}, b'{"errors": [{"code": "NOT_FOUND"}]}')
        )

    def serve_oci(self, data: bytes = CHART, *, tag: str = VERSION, layer_digest: str | None = None) -> None:
        """A Helm chart pushed to an OCI registry: manifest -> config + one chart layer."""
        digest = layer_digest or "sha256:" + hashlib.sha256(data).hexdigest()
        config = b"{}"
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.cncf.helm.config.v1+json",
                "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
                "size": len(config),
            },
            "layers": [{"mediaType": kc.HELM_CHART_LAYER, "digest": digest, "size": len(data)}],
        }
        self.routes["/v2/"] = (200, {"Content-Type": "application/json"}, b"{}")
        self.routes[f"/v2/{REPO}/manifests/{tag}"] = (
            200,
            {"Content-Type": manifest["mediaType"]},
            json.dumps(manifest).encode(),
        )
        self.routes[f"/v2/{REPO}/blobs/{digest}"] = (200, {"Content-Type": "application/octet-stream"}, data)

    def serve_repository(self, data: bytes = CHART, *, version: str = VERSION, digest: bool = True) -> None:
        entry: dict[str, Any] = {"name": "kueue", "version": version, "urls": [f"kueue-{version}.tgz"]}
        if digest:
            entry["digest"] = hashlib.sha256(data).hexdigest()
        index = {"apiVersion": "v1", "entries": {"kueue": [entry]}}
        self.routes["/charts/index.yaml"] = (200, {"Content-Type": "text/yaml"}, yaml.safe_dump(index).encode())
        self.routes[f"/charts/kueue-{version}.tgz"] = (200, {"Content-Type": "application/gzip"}, data)

    def fail(self, status: int) -> None:
        self.routes = {path: (status, {}, b"") for path in self.routes}

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tls: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[ChartServer]:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls[0]))  # the server's CA, as for a private mirror
    chart_server = ChartServer(*tls)
    yield chart_server
    chart_server.stop()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean user: empty cache, no KUEUE_CRDS_DIR, no CI, no registry logins."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HELM_REGISTRY_CONFIG", str(tmp_path / "helm-registry.json"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.delenv(CRDS_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    return tmp_path / "cache" / "kueue-aks" / "charts"


def cache_files(root: Path) -> list[str]:
    """Everything in the cache that is not a directory, and any leftover partial directory."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.name.startswith(".partial"))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cel_only_breakage() -> list[dict[str, Any]]:
    """Objects only the CRDs' CEL rules reject: a taint effect Kubernetes does not know (RF4) and a
    Topology with a level twice (TP3). The webhook and cross-object rules accept both."""
    return [
        {
            "apiVersion": V,
            "kind": "Topology",
            "metadata": {"name": "twice"},
            "spec": {
                "levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "topology.kubernetes.io/zone"}]
            },
        },
        {
            "apiVersion": V,
            "kind": "ResourceFlavor",
            "metadata": {"name": "tainted"},
            "spec": {"nodeLabels": {"pool": "x"}, "nodeTaints": [{"key": "k", "value": "v", "effect": "Sometimes"}]},
        },
    ]


def assert_chart_crds_catch_cel(found: kc.KueueCrds, source: str) -> None:
    assert found.crds is not None, found.missing
    assert found.crds.source == f"chart {source} {VERSION}"  # not KUEUE_CRDS_DIR, not ../shared
    rules = {v.rule for v in validate_objects(cel_only_breakage(), crds=found.crds)}
    assert {"RF4", "TP3"} <= rules
    assert {v.rule for v in validate_objects(cel_only_breakage(), crds=None)} & {"RF4", "TP3"} == set()


# ---------------------------------------------------------------------------------------------
# The chart's CRDs, and the pin


def shared_chart(version: str) -> bytes:
    """The packaged chart of a supported version in ../shared (see its SOURCE.md)."""
    return (SHARED / "kueue" / f"v{version}" / "chart" / f"kueue-{version}.tgz").read_bytes()


def shared_crds(version: str) -> list[Path]:
    return sorted((SHARED / "kueue" / f"v{version}" / "crds").glob("*.yaml"))


def test_every_supported_version_has_a_pinned_digest() -> None:
    assert sorted(kc.CRD_TEMPLATE_DIGESTS) == VERSIONS
    assert shared_chart(VERSION) == CHART and shared_crds(VERSION) == sorted(CRDS_DIR.glob("*.yaml"))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_pinned_digest_is_the_shared_charts_crd_templates(version: str) -> None:
    chart = kc.read_chart(shared_chart(version), label="shared chart")
    assert chart.version == version
    assert sorted(chart.templates) == [p.name for p in shared_crds(version)]
    assert chart.digest == kc.CRD_TEMPLATE_DIGESTS[version]
    assert kc.crd_templates_digest({**chart.templates, "x.yaml": b""}) != chart.digest


def test_each_version_has_its_own_digest() -> None:
    assert len(set(kc.CRD_TEMPLATE_DIGESTS.values())) == len(kc.CRD_TEMPLATE_DIGESTS)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_default_source_takes_each_versions_chart_and_no_other(version: str, cache: Path) -> None:
    other = next(v for v in VERSIONS if v != version)
    with pytest.raises(kc.ChartError, match=f"holds Kueue chart version {other}, not the pinned {version}"):
        kc.kueue_crds(DEFAULT_KUEUE_CHART, version, fetch=lambda *_: shared_chart(other))
    assert cache_files(cache) == []
    found = kc.kueue_crds(DEFAULT_KUEUE_CHART, version, fetch=lambda *_: shared_chart(version))
    assert found.crds is not None and found.crds.source == f"chart {DEFAULT_KUEUE_CHART} {version}"


@pytest.mark.parametrize("version", VERSIONS)
def test_helm_directives_are_gone_and_the_schemas_are_the_release_crds(version: str) -> None:
    docs = kc.crd_documents(kc.read_chart(shared_chart(version), label="c").templates, label="c")
    bases = [documents.load(p.read_text()) for p in shared_crds(version)]
    assert [d["spec"]["versions"] for d in docs] == [b["spec"]["versions"] for b in bases]
    assert [d["spec"]["names"] for d in docs] == [b["spec"]["names"] for b in bases]
    assert "{{" not in json.dumps(docs)


def test_the_crd_documents_are_kept_as_json_and_read_back_by_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = kc.read_chart(shared_chart(DEFAULT_VERSION), label="c")
    kept = tmp_path / "crd-documents" / f"{chart.digest}.json"
    parsed = kc._documents("c", chart.digest, chart.templates, kept)
    assert json.loads(kept.read_text()) == parsed == kc.crd_documents(chart.templates, label="c")
    # The next process reads the file and parses no YAML.
    monkeypatch.setattr(kc, "crd_documents", lambda *_a, **_k: pytest.fail("parsed the YAML again"))
    assert kc._documents("c", chart.digest, chart.templates, kept) == parsed
    # A damaged file is parsed again, not trusted.
    kept.write_text("{not json")
    monkeypatch.undo()
    assert kc._documents("c", chart.digest, chart.templates, kept) == parsed


def test_the_cel_parser_from_its_cache_parses_every_rule_as_cel_pythons_own(tmp_path: Path) -> None:
    from celpy.celparser import CELParser

    from components.k8s.crd_schema import cel_environment

    rules = {
        r.expression
        for r in validate.crds_from_documents(
            kc.crd_documents(kc.read_chart(shared_chart(DEFAULT_VERSION), label="c").templates, label="c"), source="c"
        ).cel_rules
    }
    saved = CELParser.CEL_PARSER
    try:
        CELParser.CEL_PARSER = None
        own = CELParser()
        trees = {e: own.parse(e) for e in rules}
        for _ in range(2):  # the first run writes the cache, the second loads it
            CELParser.CEL_PARSER = None
            cel_environment(tmp_path / "cel-grammar.lark")
            assert (tmp_path / "cel-grammar.lark").is_file()
            assert {e: CELParser().parse(e) for e in rules} == trees
    finally:
        CELParser.CEL_PARSER = saved
    assert len(rules) > 20


# ---------------------------------------------------------------------------------------------
# From the network into the cache, then offline


@pytest.mark.parametrize("kind", ["oci", "https"])
def test_a_clean_setup_validates_with_the_charts_crds_then_offline_from_the_cache(
    kind: str, server: ChartServer, cache: Path
) -> None:
    server.serve_oci() if kind == "oci" else server.serve_repository()
    source = server.oci if kind == "oci" else server.https

    found = kc.kueue_crds(source, VERSION)

    assert_chart_crds_catch_cel(found, source)
    cached = kc.cache_entry(source, VERSION) / "kueue-0.19.2.tgz"
    assert cache_files(cache) == [str(cached.relative_to(cache))]
    assert cached.read_bytes() == CHART
    asked = len(server.seen)

    server.stop()  # offline now: the cache answers
    again = kc.kueue_crds(source, VERSION)

    assert_chart_crds_catch_cel(again, source)
    assert str(cached) in again.origin
    assert len(server.seen) == asked


def test_the_program_validates_with_the_chart_from_its_configured_source(
    server: ChartServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.serve_oci()
    config = load_stack({**stack_file_config("dev"), "kueue-aks:kueue": {"chart": server.oci}})
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))

    assert queues.validated_objects(config, queue_set(config)) == build_objects(config)

    assert warnings == []
    assert (kc.cache_entry(server.oci, VERSION) / "kueue-0.19.2.tgz").is_file()


def test_a_private_mirror_is_read_with_helms_registry_login(server: ChartServer, cache: Path, tmp_path: Path) -> None:
    server.serve_oci()
    server.login = ("puller", "s3cret")
    with pytest.raises(kc.ChartError, match=rf"requires a login .*helm registry login {server.host}"):
        kc.kueue_crds(server.oci, VERSION)
    assert cache_files(cache) == []

    auth = base64.b64encode(b"puller:s3cret").decode()
    (tmp_path / "helm-registry.json").write_text(json.dumps({"auths": {server.host: {"auth": auth}}}))

    assert_chart_crds_catch_cel(kc.kueue_crds(server.oci, VERSION), server.oci)


@pytest.mark.parametrize("kind", ["oci", "https"])
def test_the_program_reads_a_private_mirror_with_the_stacks_registry_sign_in(
    kind: str, server: ChartServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `helm registry login` on this machine: the sign-in of kueue-aks:registryCredentials, which
    the Helm release gets as a secret, is also what the program reads the CRDs with."""
    server.serve_oci() if kind == "oci" else server.serve_repository()
    server.login = ("puller", "s3cret")
    source = server.oci if kind == "oci" else server.https
    login = {"registry": server.host, "username": "puller", "password": "s3cret"}
    stack = {**stack_file_config("dev"), "kueue-aks:kueue": {"chart": source}}
    config = parse_config(
        {
            k.split(":", 1)[1]: v
            for k, v in {**stack, "kueue-aks:registryCredentials": [login]}.items()
            if k.startswith("kueue-aks:")
        },
        stack="dev",
        location="eastus2",
        secret_keys=["kueue-aks:registryCredentials"],
    )
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))

    assert queues.validated_objects(config, queue_set(config)) == build_objects(config)
    assert warnings == [] and (kc.cache_entry(source, VERSION) / "kueue-0.19.2.tgz").is_file()


def test_a_local_tgz_is_read_in_place(cache: Path) -> None:
    found = kc.kueue_crds(str(CHART_TGZ), VERSION)
    assert_chart_crds_catch_cel(found, str(CHART_TGZ))
    assert cache_files(cache) == []


def test_kueue_crds_dir_comes_first(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CRDS_ENV, str(CRDS_DIR))
    found = kc.kueue_crds(f"oci://127.0.0.1:{closed_port()}/{REPO}", VERSION)
    assert found.origin == f"{CRDS_ENV}={CRDS_DIR}" and found.crds is not None
    assert cache_files(cache) == []


# ---------------------------------------------------------------------------------------------
# Neither cache nor network


def test_no_chart_anywhere_says_how_to_get_it_and_is_an_error_in_ci(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = f"oci://127.0.0.1:{closed_port()}/{REPO}"

    found = kc.kueue_crds(source, VERSION)

    assert found.crds is None and found.missing
    entry = kc.cache_entry(source, VERSION)
    for words in (
        source,
        "Connection refused",
        str(entry),
        f"helm pull {source} --version {VERSION} -d {entry}`",
        CRDS_ENV,
        "WITHOUT the CRD schema and CEL rules",
        "network access",
    ):
        assert words in found.missing
    assert cache_files(cache) == []

    monkeypatch.setenv("CI", "true")
    with pytest.raises(kc.ChartUnavailable, match=r"CI=true .*Connection refused.* may not be skipped in CI. To check"):
        kc.kueue_crds(source, VERSION)


def test_the_program_warns_once_and_fails_in_ci_before_registering(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {**stack_file_config("dev"), "kueue-aks:kueue": {"chart": f"oci://127.0.0.1:{closed_port()}/{REPO}"}}
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))

    # __main__ validates through validated_objects, once, before it builds any component.
    stack = load_stack(config)
    objects = queues.validated_objects(stack, queue_set(stack))

    assert objects and len(warnings) == 1 and "WITHOUT the CRD schema and CEL rules" in warnings[0]

    monkeypatch.setenv("CI", "true")
    monitors: list[harness.RecordingMonitor] = []
    real_monitor = harness.RecordingMonitor
    monkeypatch.setattr(harness, "RecordingMonitor", lambda mocks: monitors.append(real_monitor(mocks)) or monitors[-1])
    with pytest.raises(pulumi.RunError, match="CI=true"):
        run_program(config)
    assert [r.type for r in monitors[0].registrations] == []


def write_stack(root: Path, chart: str) -> None:
    config = {**stack_file_config("dev"), "kueue-aks:kueue": {"chart": chart}}
    (root / "Pulumi.offline.yaml").write_text(yaml.safe_dump({"config": config}))


def test_the_plan_command_takes_the_same_path(
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: ChartServer,
) -> None:
    write_stack(tmp_path, f"oci://127.0.0.1:{closed_port()}/{REPO}")

    assert plan.main(["--stack", "offline", "--root", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err.count("WITHOUT the CRD schema and CEL rules") == 1
    assert "_CRD schema and CEL rules not checked" in out

    monkeypatch.setenv("CI", "true")
    assert plan.main(["--stack", "offline", "--root", str(tmp_path)]) == 4
    out, err = capsys.readouterr()
    assert "CI=true" in err and out == ""

    server.serve_oci()
    write_stack(tmp_path, server.oci)
    assert plan.main(["--stack", "offline", "--root", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "not checked" not in out
    assert (kc.cache_entry(server.oci, VERSION) / "kueue-0.19.2.tgz").is_file()


# ---------------------------------------------------------------------------------------------
# A source that answers wrongly: a clear error naming it, and no cache entry


Setup = Callable[[ChartServer], str]


def oci(data: bytes = CHART, **kw: Any) -> Setup:
    return lambda s: (s.serve_oci(data, **kw), s.oci)[1]


def repo(data: bytes = CHART, **kw: Any) -> Setup:
    return lambda s: (s.serve_repository(data, **kw), s.https)[1]


def failing(setup: Setup, status: int) -> Setup:
    return lambda s: (setup(s), s.fail(status))[0]


TRUNCATED = CHART[: len(CHART) // 2]
FAILURES: dict[str, tuple[Setup, type[CrdError], str]] = {
    # The registry's bytes do not hash to the manifest's digest.
    "oci-truncated-blob": (
        oci(TRUNCATED, layer_digest="sha256:" + hashlib.sha256(CHART).hexdigest()),
        kc.ChartError,
        "does not match its manifest digest",
    ),
    # A truncated archive pushed as such: the archive itself is unreadable.
    "oci-truncated-archive": (oci(TRUNCATED), kc.ChartError, "not a readable chart archive .truncated or corrupt"),
    "https-truncated-archive": (
        repo(TRUNCATED, digest=False),
        kc.ChartError,
        "not a readable chart archive .truncated or corrupt",
    ),
    "https-digest-mismatch": (
        lambda s: (s.serve_repository(), s.routes.update({"/charts/kueue-0.19.2.tgz": (200, {}, TRUNCATED)}), s.https)[
            2
        ],
        kc.ChartError,
        "does not match the digest in",
    ),
    "oci-wrong-version": (
        oci(repacked(version="0.19.1")),
        kc.ChartError,
        "holds Kueue chart version 0.19.1, not the pinned 0.19.2",
    ),
    "https-wrong-version": (
        repo(repacked(version="0.19.1")),
        kc.ChartError,
        "holds Kueue chart version 0.19.1, not the pinned 0.19.2",
    ),
    "oci-401": (failing(oci(), 401), kc.ChartError, "requires a login"),
    "https-401": (failing(repo(), 401), kc.ChartError, r"refused index.yaml \(401"),
    "oci-404": (
        oci(tag="0.19.1"),
        kc.ChartError,
        r"has no chart .*0.19.2 \(404 Not Found\): check kueue-aks:kueue.chart",
    ),
    "https-404": (failing(repo(), 404), kc.ChartError, r"has no index.yaml \(404"),
    "https-no-such-version": (
        repo(version="0.19.1"),
        kc.ChartError,
        "has no kueue chart version 0.19.2 in its index.yaml",
    ),
    "oci-500": (failing(oci(), 500), kc.ChartError, r"failed to serve chart .* \(500"),
    "https-500": (failing(repo(), 500), kc.ChartError, r"failed to serve index.yaml \(500"),
}


@pytest.mark.parametrize("case", FAILURES)
def test_a_wrong_answer_is_a_clear_error_and_leaves_no_cache_entry(case: str, server: ChartServer, cache: Path) -> None:
    setup, error, words = FAILURES[case]
    source = setup(server)

    with pytest.raises(error, match=words) as raised:
        kc.kueue_crds(source, VERSION)

    assert source in str(raised.value) or server.host in str(raised.value)
    assert cache_files(cache) == []


@pytest.mark.parametrize("kind", ["oci", "https"])
def test_a_timeout_names_the_source_and_leaves_no_cache_entry(
    kind: str, server: ChartServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = oci()(server) if kind == "oci" else repo()(server)
    server.delay = 1.5
    started = time.monotonic()

    with pytest.raises(
        kc.ChartUnavailable, match=rf"{source} did not answer within 0.3 s, and the chart is not in the cache"
    ):
        kc.chart_archive(source, VERSION, transport=kc.Transport(timeout=0.3))

    assert time.monotonic() - started < 1.4  # no retries with sleeps
    assert cache_files(cache) == []
    monkeypatch.setenv("CI", "true")
    with pytest.raises(kc.ChartUnavailable, match="did not answer"):
        kc.kueue_crds(source, VERSION, transport=kc.Transport(timeout=0.3))


# ---------------------------------------------------------------------------------------------
# The pin of the default source; mirrors; the cache


def test_the_default_source_must_have_the_pinned_crds(cache: Path) -> None:
    altered = repacked(crd_edit=b"\n# a comment: the bytes differ\n")
    with pytest.raises(kc.ChartError, match="not the .* pinned for Kueue 0.19.2 .*not the published one"):
        kc.kueue_crds(DEFAULT_KUEUE_CHART, VERSION, fetch=lambda *_: altered)
    with pytest.raises(kc.ChartError, match="holds Kueue chart version 0.19.1"):
        kc.kueue_crds(DEFAULT_KUEUE_CHART, VERSION, fetch=lambda *_: repacked(version="0.19.1"))
    assert cache_files(cache) == []

    # A mirror may repack the chart: only the version is checked.
    mirror = "oci://myregistry.azurecr.io/helm/kueue"
    assert kc.kueue_crds(mirror, VERSION, fetch=lambda *_: altered).crds is not None
    assert cache_files(cache) == [f"{kc.source_key(mirror)}/{VERSION}/kueue-0.19.2.tgz"]


def test_the_default_source_is_fetched_once_and_its_archive_digest_is_not_pinned(cache: Path) -> None:
    calls: list[str] = []
    repack = repacked()  # other archive bytes, same CRD templates
    assert repack != CHART

    def fetch(source: str, version: str, transport: kc.Transport) -> bytes:
        calls.append(source)
        return repack

    for _ in range(2):
        assert kc.kueue_crds(DEFAULT_KUEUE_CHART, VERSION, fetch=fetch).crds is not None
    assert calls == [DEFAULT_KUEUE_CHART]


def test_a_bad_cache_entry_is_an_error_that_says_what_to_delete(cache: Path) -> None:
    entry = kc.cache_entry(DEFAULT_KUEUE_CHART, VERSION)
    entry.mkdir(parents=True)
    (entry / "kueue-0.19.2.tgz").write_bytes(TRUNCATED)  # e.g. an interrupted `helm pull -d`

    with pytest.raises(kc.ChartError, match=rf"truncated or corrupt.*delete {entry} to fetch it again"):
        kc.kueue_crds(DEFAULT_KUEUE_CHART, VERSION, fetch=lambda *_: CHART)


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG rule of Linux (components/k8s/cache.py)")
@pytest.mark.parametrize("xdg", [None, "", "  ", "relative"])
def test_the_cache_lives_in_the_users_cache_dir(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME")
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)  # not an absolute path: ignored, as the XDG specification says
    assert kc.cache_root() == tmp_path / ".cache" / "kueue-aks" / "charts"
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    entry = kc.cache_entry(DEFAULT_KUEUE_CHART, VERSION)
    assert entry.parent.parent == Path("/xdg/kueue-aks/charts")
    # A child process's cache, from its environment: what tests/conftest.py and bench/ give the program.
    child = kc.cache_entry(DEFAULT_KUEUE_CHART, VERSION, {"XDG_CACHE_HOME": str(tmp_path / "child")})
    assert child == tmp_path / "child" / "kueue-aks" / "charts" / entry.parent.name / VERSION
    assert entry.name == VERSION and entry.parent.name.startswith("oci_registry.k8s.io_kueue_charts_kueue-")
    assert kc.source_key("oci://a/b") != kc.source_key("oci://a_b")
