"""The tier's loopback chart mirror (mirror.py): a real OCI registry (CNCF Distribution) and an
https chart repository on 127.0.0.1, each with TLS from a private CA, holding every chart the
stack installs at the version the program pins.

No control plane: the mirror needs only helm (the `binaries` fixture) and the registry's build.
The program's own chart code is what reads it: its config parser and chart sources
(components/k8s/charts.py), the Kueue chart read for the CRDs (components/kueue/crds.py), and the
(chart, version, repository) its Helm releases get, each fetched by Helm as the release fetches it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from components.config.parse import parse_config, raw_from_stack_file
from components.gpu.values import device_plugin_chart
from components.k8s.charts import ChartRef
from components.kueue import crds as kc
from components.kueue.values import kueue_chart
from components.operators.installs import installs

from testbed.binaries import Binaries, BuildError, ensure_registry
from testbed.measurements import report
from testbed.mirror import ChartMirror, chart_metadata
from testbed.stacks import OPERATOR_STACKS, config_map, engine_jobs_config

# Measured on 2 cores with the registry built: about 6 s from nothing to every chart in both.
MIRROR_START_BUDGET_SECONDS = 30.0
# What Go's TLS (helm) says for a server whose CA it does not hold.
UNTRUSTED = ("certificate signed by unknown authority", "failed to verify certificate")


@pytest.fixture(scope="module")
def mirror(binaries: Binaries) -> Iterator[ChartMirror]:
    try:
        registry = ensure_registry()
    except BuildError as err:
        pytest.fail(str(err), pytrace=False)
    started = time.monotonic()
    chart_mirror = ChartMirror(binaries.helm, registry).start()
    took = time.monotonic() - started
    report(
        f"e2e[mirror]: registry and https repository up, {len(chart_mirror.charts)} charts published in "
        f"{took:.1f} s (budget {MIRROR_START_BUDGET_SECONDS:.0f} s); seconds since start: {chart_mirror.timings}"
    )
    try:
        assert took <= MIRROR_START_BUDGET_SECONDS, chart_mirror.timings
        yield chart_mirror
    finally:
        chart_mirror.stop()


@pytest.fixture
def program_env(mirror: ChartMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program's process as a private-registry user runs it: the mirror's CA trusted as
    mirror.environ() says, an empty chart cache, no registry logins, and CI=true, so a chart that
    cannot be read is an error rather than a warning."""
    for name, value in mirror.environ({}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HELM_REGISTRY_CONFIG", str(tmp_path / "helm-registry.json"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv(kc.CRDS_ENV, raising=False)


def helm_fetch(mirror: ChartMirror, ref: ChartRef, into: Path, *ca: str, trust: bool = True) -> bytes:
    """`helm pull` of a release's chart, version and repository (cluster.Helm.install's mapping)."""
    repository = ["--repo", ref.repository] if ref.repository else []
    into.mkdir(parents=True, exist_ok=True)
    mirror.helm("pull", ref.chart, "--version", ref.version, *repository, "-d", str(into), *ca, trust=trust)
    (archive,) = into.glob("*.tgz")
    return archive.read_bytes()


def refs(mirror: ChartMirror, name: str) -> dict[str, ChartRef]:
    version = mirror.charts[name].version
    return {"oci": ChartRef(mirror.oci(name), version), "https": ChartRef(name, version, mirror.https_base)}


def test_every_chart_is_in_both_at_its_pinned_version(mirror: ChartMirror, tmp_path: Path) -> None:
    """helm show chart and helm pull get each chart from the registry and from the repository,
    the bytes published, trusting the CA either by --ca-file or through SSL_CERT_FILE."""
    answer = requests.get(f"https://{mirror.oci_host}/v2/", verify=str(mirror.ca_file), timeout=10)
    assert answer.headers.get("Docker-Distribution-Api-Version") == "registry/2.0", answer.headers
    assert set(mirror.charts) == {"kueue", "nvidia-device-plugin", "kuberay-operator", "jobset", "kubeflow-trainer"}
    for name, chart in mirror.charts.items():
        tags = requests.get(
            f"https://{mirror.oci_host}/v2/helm/{name}/tags/list", verify=str(mirror.ca_file), timeout=10
        )
        assert tags.json() == {"name": f"helm/{name}", "tags": [chart.version]}
        for kind, ref in refs(mirror, name).items():
            repository = ["--repo", ref.repository] if ref.repository else []
            shown = mirror.helm("show", "chart", ref.chart, "--version", ref.version, *repository).stdout
            assert f"name: {name}\n" in shown and f"version: {chart.version}\n" in shown, (kind, shown)
            through_env = helm_fetch(mirror, ref, tmp_path / name / kind / "env")
            through_flag = helm_fetch(
                mirror, ref, tmp_path / name / kind / "flag", "--ca-file", str(mirror.ca_file), trust=False
            )
            assert through_env == through_flag == mirror.published(name), (name, kind)
            meta = chart_metadata(through_env)
            assert (meta["name"], str(meta["version"])) == (name, chart.version)


def test_the_operator_charts_are_packaged_as_their_releases(mirror: ChartMirror, tmp_path: Path) -> None:
    """JobSet's chart names the image its release does; Trainer's carries the subcharts its
    Chart.yaml declares, which the program's values turn off."""
    version = mirror.charts["jobset"].version
    shown = mirror.helm("show", "values", mirror.oci("jobset"), "--version", version).stdout
    assert "repository: registry.k8s.io/jobset/jobset" in shown and f"tag: v{version}" in shown, shown
    trainer = chart_metadata(mirror.published("kubeflow-trainer"))
    assert {d["name"]: d["version"] for d in trainer["dependencies"]} == {"jobset": "0.11.0", "lws": "0.8.0"}
    assert "appVersion" not in trainer  # its release packages with --version only
    assert chart_metadata(mirror.published("jobset"))["appVersion"] == f"v{version}"


def test_the_mirror_is_trusted_only_through_its_ca(mirror: ChartMirror, tmp_path: Path) -> None:
    """Without the CA, Helm and the program refuse both servers: the TLS is real."""
    for kind, ref in refs(mirror, "kueue").items():
        repository = ["--repo", ref.repository] if ref.repository else []
        refused = mirror.helm(
            "show", "chart", ref.chart, "--version", ref.version, *repository, trust=False, check=False
        )
        assert refused.returncode != 0 and any(u in refused.stderr for u in UNTRUSTED), (kind, refused.stderr)
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{mirror.https_base}/index.yaml", timeout=10)


@pytest.mark.parametrize("kind", ["oci", "https"])
def test_the_program_reads_kueues_chart_from_the_mirror(kind: str, mirror: ChartMirror, program_env: None) -> None:
    """components/kueue/crds.py reads the CRDs from the mirror's Kueue chart (oras for the
    registry, the index for the repository), trusting the CA through REQUESTS_CA_BUNDLE, and
    keeps the archive published; its CRD templates are the published chart's."""
    source = mirror.oci("kueue") if kind == "oci" else mirror.https_base
    version = mirror.charts["kueue"].version
    found = kc.kueue_crds(source, version)
    assert found.crds is not None and found.missing is None, found.missing
    assert source in found.origin, found.origin
    cached = kc.cache_entry(source, version) / kc.archive_name(version)
    assert cached.read_bytes() == mirror.published("kueue")
    _, chart = kc.chart_archive(source, version)
    assert chart.digest == kc.CRD_TEMPLATE_DIGESTS[version]


@pytest.mark.parametrize("kind", ["oci", "https"])
def test_without_the_ca_the_program_says_what_to_trust(
    kind: str, mirror: ChartMirror, program_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    source = mirror.oci("kueue") if kind == "oci" else mirror.https_base
    with pytest.raises(kc.ChartError, match="TLS failed.*REQUESTS_CA_BUNDLE"):
        kc.kueue_crds(source, mirror.charts["kueue"].version)


# Not named `stack`: that parameter puts a test on its stack's control plane (conftest.py), and
# these need none.
@pytest.mark.parametrize("stack_file", OPERATOR_STACKS)
def test_a_stack_config_for_the_mirror_gives_the_releases_its_charts(
    stack_file: str, mirror: ChartMirror, tmp_path: Path
) -> None:
    """The keys a private-registry user writes, on a stack with every chart operator, parsed by
    the program: every Helm release's (chart, version, repository) is the mirror's, and Helm
    fetches each, the published bytes."""
    keys = mirror.config()
    assert keys["kueue-aks:operators"]["kuberay"]["chart"] == mirror.https_base  # https for one chart
    assert keys["kueue-aks:kueue"]["chart"] == mirror.oci("kueue")
    raw, location = raw_from_stack_file({"config": mirror.apply(config_map(stack_file))})
    config = parse_config(raw, stack=stack_file, location=location)
    releases = {
        "kueue": kueue_chart(config),
        "nvidia-device-plugin": device_plugin_chart(config),
        **{i.operator.chart_name: i.chart for i in installs(config) if i.chart is not None},
    }
    assert set(releases) == set(mirror.charts)
    for name, ref in releases.items():
        assert ref.version == mirror.charts[name].version
        assert (ref.repository, ref.chart) == (
            (mirror.https_base, name) if name in mirror.https_charts else (None, mirror.oci(name))
        )
        assert helm_fetch(mirror, ref, tmp_path / name) == mirror.published(name), name


def test_a_stack_without_operators_gets_only_kueue_and_the_device_plugin(mirror: ChartMirror) -> None:
    """The engine's Jobs-only stack (its kubeconfig set later): no operator key, which the parser
    would refuse as having no effect."""
    config = mirror.apply(engine_jobs_config())
    assert config["kueue-aks:kueue"]["chart"] == mirror.oci("kueue")
    assert config["kueue-aks:devicePlugin"] == {"chart": mirror.oci("nvidia-device-plugin")}
    assert "kueue-aks:operators" not in config
    assert config["kueue-aks:kueue"]["frameworks"] == engine_jobs_config()["kueue-aks:kueue"]["frameworks"]


def test_stop_leaves_nothing(binaries: Binaries) -> None:
    """A mirror of its own: stopped, its registry process is gone, both ports are closed and its
    temp folder (registry storage, certificates, Helm's homes) is removed."""
    chart_mirror = ChartMirror(binaries.helm, ensure_registry()).start()
    process, workdir = chart_mirror.registry_process, chart_mirror.workdir
    hosts = [chart_mirror.oci_host, chart_mirror.https_host]
    assert process is not None and workdir is not None and workdir.is_dir()
    chart_mirror.stop()
    chart_mirror.stop()  # twice is fine
    assert process.poll() is not None
    assert not workdir.exists()
    for host in hosts:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", int(host.rsplit(":", 1)[1])), timeout=2).close()
