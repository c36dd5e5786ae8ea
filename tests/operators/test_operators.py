"""The job operators (components/operators): config rules, what is installed, and how it is wired.

Mocks prove the wiring (what is registered, pinned, placed and in which order); the e2e tier
(tests/e2e/operators/test_operators.py) shows the operators running the kinds on the real controllers.
"""

from __future__ import annotations

import copy
import http.server
import json
import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kueue import install as kueue
from components.config.rules import system_pool_problems
from components.config.stack import StackConfig
from components.facts.kueue_versions import DEFAULT_VERSION, RELEASES
from components.kueue.values import SYSTEM_POOL_SELECTOR
from components.operators import sources
from components.facts.operators import OPERATOR_PINS, OPERATORS, Module, needed_operators
from components.operators.crd_chart import CHARTS_ENV, charts_dir, crd_chart, release_name, write_chart
from components.operators.installs import (
    MPIJOB_CRD,
    TRAINER_WEBHOOK_HOST,
    installs,
)
from components.operators.policies import RAYSERVICE_GUARD, rayservice_guard
from testbed.config_errors import refused
from testbed.harness import ProgramRun, run_program
from testbed.paths import SHARED
from testbed.stacks import load_stack, stack_file_config

RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


@pytest.fixture(scope="module")
def dev_map() -> dict[str, Any]:
    return stack_file_config("dev")


@pytest.fixture(scope="module")
def dev(dev_map: dict[str, Any]) -> StackConfig:
    return load_stack(dev_map)


@pytest.fixture(scope="module")
def dev_run(dev_map: dict[str, Any]) -> ProgramRun:
    return run_program(dev_map)


def on_kueue(config_map: dict[str, Any], version: str) -> dict[str, Any]:
    """The stack on a Kueue version; another than the default reads its chart (and CRDs) from the
    packaged file in ../shared, as the unit tests have no registry."""
    if version == DEFAULT_VERSION:
        return config_map
    chart = SHARED / "kueue" / f"v{version}" / "chart" / f"kueue-{version}.tgz"
    return {**config_map, "kueue-aks:kueue": {"version": version, "chart": str(chart)}}


@pytest.fixture(scope="module", params=sorted(OPERATOR_PINS))
def pinned_map(request: pytest.FixtureRequest, dev_map: dict[str, Any]) -> dict[str, Any]:
    """The dev stack on each Kueue version that has operator pins."""
    return on_kueue(dev_map, request.param)


@pytest.fixture(scope="module")
def pinned(pinned_map: dict[str, Any]) -> StackConfig:
    return load_stack(pinned_map)


@pytest.fixture(scope="module")
def pinned_run(pinned_map: dict[str, Any]) -> ProgramRun:
    return run_program(pinned_map)


# --- which operators, and config errors ----------------------------------------------------


def test_the_default_frameworks_need_every_shipped_operator(dev: StackConfig) -> None:
    assert [o.key for o in dev.operators] == ["kuberay", "jobset", "trainer", "mpiOperator", "trainingOperator"]
    assert all(o.install == "managed" for o in dev.operators)


def test_trainjob_alone_brings_jobset_too() -> None:
    assert [o.key for o in needed_operators(["batch/job", "trainer.kubeflow.org/trainjob"])] == ["jobset", "trainer"]
    assert needed_operators(["batch/job", "pod"]) == []


def test_an_operator_entry_without_its_frameworks_is_an_error(dev_map: dict[str, Any]) -> None:
    config = {**dev_map, "kueue-aks:kueue": {"frameworks": ["batch/job"]}, "kueue-aks:operators": {"kuberay": {}}}
    assert refused(load_stack, config).lines == [
        "kueue-aks:operators.kuberay: has no effect: none of its frameworks (ray.io/rayjob, "
        "ray.io/raycluster, ray.io/rayservice) is in kueue-aks:kueue.frameworks; enable one "
        "there or remove this key"
    ]


def test_a_framework_whose_operator_the_stack_does_not_ship_must_be_declared(dev_map: dict[str, Any]) -> None:
    lws = "leaderworkerset.x-k8s.io/leaderworkerset"
    config = {**dev_map, "kueue-aks:kueue": {"frameworks": ["batch/job", lws]}}
    (problem,) = refused(load_stack, config).lines
    assert problem.startswith("kueue-aks:operators.leaderWorkerSet.install: is required")
    assert "install: external" in problem
    declared = load_stack({**config, "kueue-aks:operators": {"leaderWorkerSet": {"install": "external"}}})
    assert [(o.key, o.install) for o in declared.operators] == [("leaderWorkerSet", "external")]
    managed = refused(load_stack, {**config, "kueue-aks:operators": {"leaderWorkerSet": {"install": "managed"}}}).lines
    assert managed == [
        "kueue-aks:operators.leaderWorkerSet.install: managed is not possible: the stack does not ship "
        "the LeaderWorkerSet controller; install it yourself and set install: external"
    ]


def test_external_installs_nothing_and_takes_no_source(dev_map: dict[str, Any], dev: StackConfig) -> None:
    config = {**dev_map, "kueue-aks:operators": {"kuberay": {"install": "external", "chart": "oci://x.io/k"}}}
    assert refused(load_stack, config).lines == [
        "kueue-aks:operators.kuberay.chart: has no effect with install: external "
        "(the stack installs nothing); remove it"
    ]
    external = load_stack({**dev_map, "kueue-aks:operators": {"kuberay": {"install": "external"}}})
    assert "kuberay" not in [i.operator.key for i in installs(external)]
    assert len(installs(external)) == len(installs(dev)) - 1


def test_bad_operator_keys_name_the_key(dev_map: dict[str, Any]) -> None:
    config = {
        **dev_map,
        "kueue-aks:operators": {
            "kuberai": {},
            "jobset": {"install": "yes", "imageRepository": "https://x"},
            "mpiOperator": {"chart": "oci://x.io/mpi"},
        },
    }
    found = refused(load_stack, config).lines
    assert found[0].startswith("kueue-aks:operators.kuberai: unknown key (did you mean 'kuberay'?)")
    assert any(p.startswith("kueue-aks:operators.jobset.install: 'yes' is not allowed") for p in found)
    assert any(p.startswith("kueue-aks:operators.jobset.imageRepository:") for p in found)
    # The MPI Operator ships no chart: its manifests come from its module.
    assert any(p.startswith("kueue-aks:operators.mpiOperator.chart: unknown key") for p in found)


def test_a_system_pool_too_small_for_the_controllers_says_what_to_change(dev_map: dict[str, Any]) -> None:
    small = {**dev_map, "kueue-aks:cluster": {"systemPool": {"vmSize": "Standard_D2s_v5", "count": 1}}}
    (problem,) = refused(load_stack, small).lines
    assert problem.startswith("kueue-aks:cluster.systemPool: 1 × Standard_D2s_v5 has")
    assert "raise cluster.systemPool.count" in problem and "KubeRay 1 × (100m, 512Mi)" in problem
    # Without the operators' frameworks the same pool holds Kueue alone.
    assert load_stack(
        {
            **small,
            "kueue-aks:kueue": {"frameworks": ["batch/job"], "replicas": 1},
            "kueue-aks:monitoring": {"enabled": False},
        }
    )


def test_the_system_pool_check_counts_every_managed_controller(dev: StackConfig) -> None:
    assert system_pool_problems(dev) == []


# --- what is installed -----------------------------------------------------------------------


# The operator versions each Kueue release's go.mod names (kubernetes-sigs/kueue go.mod@v0.19.2; v0.18.4: its
# go.mod from proxy.golang.org), and the image tags the pins carry.
GO_MOD_VERSIONS = {
    "0.18.4": {
        "kuberay": "1.6.2",
        "jobset": "0.12.0",
        "trainer": "2.2.1",
        "mpiOperator": "0.8.0",
        "trainingOperator": "1.9.3",
    },
    "0.19.2": {
        "kuberay": "1.6.2",
        "jobset": "0.12.0",
        "trainer": "2.2.1",
        "mpiOperator": "0.8.2",
        "trainingOperator": "1.9.3",
    },
}
IMAGE_TAGS = {
    "0.18.4": {
        "kuberay": "v1.6.2",
        "jobset": "v0.12.0",
        "trainer": "v2.2.1",
        "mpiOperator": "0.8.0",
        "trainingOperator": "v1-d6eb98e",
    },
    "0.19.2": {
        "kuberay": "v1.6.2",
        "jobset": "v0.12.0",
        "trainer": "v2.2.1",
        "mpiOperator": "0.8.2",
        "trainingOperator": "v1-d6eb98e",
    },
}


def test_every_kueue_version_has_operator_pins() -> None:
    assert sorted(OPERATOR_PINS) == sorted(RELEASES) == sorted(GO_MOD_VERSIONS)


def test_every_operator_is_pinned_for_the_kueue_version(pinned: StackConfig) -> None:
    pins = OPERATOR_PINS[pinned.kueue.version]
    assert [i.operator.key for i in installs(pinned)] == list(pins)
    for install in installs(pinned):
        assert install.pin == pins[install.operator.key]
        assert install.pin.module.version == f"v{install.pin.version}"
        if install.chart:
            assert install.chart.version == install.pin.version
    assert {k: p.version for k, p in pins.items()} == GO_MOD_VERSIONS[pinned.kueue.version]
    assert {k: p.image_tag for k, p in pins.items()} == IMAGE_TAGS[pinned.kueue.version]


def test_every_controller_runs_on_the_system_pool_with_requests(pinned: StackConfig) -> None:
    for install in installs(pinned):
        if install.chart:
            scope = {
                "kuberay": install.values,
                "jobset": install.values.get("controller"),
                "trainer": install.values.get("manager"),
            }[install.operator.key]
            assert scope["nodeSelector"] == SYSTEM_POOL_SELECTOR, install.operator.key
            assert scope["resources"]["requests"] == install.operator.resources.as_requests()
        else:
            (deployment,) = [o for o in install.objects if o["kind"] == "Deployment"]
            pod = deployment["spec"]["template"]["spec"]
            assert pod["nodeSelector"] == SYSTEM_POOL_SELECTOR
            (container,) = pod["containers"]
            assert container["resources"]["requests"] == install.operator.resources.as_requests()
            assert container["image"] == f"{install.operator.image}:{install.pin.image_tag}"


def test_trainer_does_not_bring_a_second_jobset(dev: StackConfig) -> None:
    (trainer,) = [i for i in installs(dev) if i.operator.key == "trainer"]
    assert trainer.values["jobset"] == {"install": False}


def test_the_training_operator_leaves_mpijob_to_the_mpi_operator(pinned: StackConfig) -> None:
    by_key = {i.operator.key: i for i in installs(pinned)}
    training, mpi = by_key["trainingOperator"], by_key["mpiOperator"]
    assert MPIJOB_CRD not in [c["metadata"]["name"] for c in training.crds]
    assert [c["metadata"]["name"] for c in mpi.crds] == [MPIJOB_CRD]
    assert [v["name"] for v in mpi.crds[0]["spec"]["versions"]] == ["v2beta1"]
    (deployment,) = [o for o in training.objects if o["kind"] == "Deployment"]
    assert sorted(deployment["spec"]["template"]["spec"]["containers"][0]["args"]) == [
        "--enable-scheme=jaxjob",
        "--enable-scheme=paddlejob",
        "--enable-scheme=pytorchjob",
        "--enable-scheme=tfjob",
        "--enable-scheme=xgboostjob",
    ]  # never mpijob
    (webhooks,) = [o for o in training.objects if o["kind"] == "ValidatingWebhookConfiguration"]
    assert {w["clientConfig"]["service"]["namespace"] for w in webhooks["webhooks"]} == {"kubeflow"}


def test_only_the_enabled_v1_kinds_get_crds_schemes_and_webhooks(dev_map: dict[str, Any]) -> None:
    config = load_stack({**dev_map, "kueue-aks:kueue": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]}})
    (training,) = installs(config)
    assert [c["spec"]["names"]["kind"] for c in training.crds] == ["PyTorchJob"]
    (webhooks,) = [o for o in training.objects if o["kind"] == "ValidatingWebhookConfiguration"]
    assert [w["name"] for w in webhooks["webhooks"]] == ["validator.pytorchjob.training-operator.kubeflow.org"]


def test_mirrors_replace_the_repository_and_keep_the_pinned_tag(pinned_map: dict[str, Any]) -> None:
    mirror = "mirror.example.com"
    config = load_stack(
        {
            **pinned_map,
            "kueue-aks:operators": {
                key: {"imageRepository": f"{mirror}/{key.lower()}"}
                for key in ("kuberay", "jobset", "trainer", "mpiOperator")
            },
        }
    )
    tags = IMAGE_TAGS[config.kueue.version]
    by_key = {i.operator.key: i for i in installs(config)}
    assert by_key["kuberay"].values["image"] == {"repository": f"{mirror}/kuberay", "tag": tags["kuberay"]}
    assert by_key["jobset"].values["image"] == {"repository": f"{mirror}/jobset", "tag": tags["jobset"]}
    assert by_key["trainer"].values["image"] == {"registry": mirror, "repository": "trainer", "tag": tags["trainer"]}
    (deployment,) = [o for o in by_key["mpiOperator"].objects if o["kind"] == "Deployment"]
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        == f"{mirror}/mpioperator:{tags['mpiOperator']}"
    )


def test_the_rayservice_guard_exists_only_while_kueue_would_take_rayservice_clusters(
    dev: StackConfig, dev_map: dict[str, Any]
) -> None:
    policy, _binding = rayservice_guard(dev)
    assert policy["metadata"]["name"] == RAYSERVICE_GUARD
    assert policy["spec"]["matchConstraints"]["namespaceSelector"] == {"matchLabels": {"kueue-aks.io/managed": "true"}}
    with_service = load_stack(
        {**dev_map, "kueue-aks:kueue": {"frameworks": ["ray.io/raycluster", "ray.io/rayservice"]}}
    )
    assert rayservice_guard(with_service) == []


def test_the_retry_hook_knows_trainers_webhook() -> None:
    message = (
        f'failed calling webhook "validator.clustertrainingruntime.trainer.kubeflow.org": failed to call webhook: '
        f'Post "https://{TRAINER_WEBHOOK_HOST}:443/validate": EOF'
    )
    assert not kueue.is_webhook_not_ready_error(message)
    assert kueue.is_webhook_not_ready_error(message, hosts=(TRAINER_WEBHOOK_HOST,))


# --- wiring under mocks ----------------------------------------------------------------------


def test_the_dev_stack_registers_every_operator_pinned(pinned_run: ProgramRun, pinned: StackConfig) -> None:
    releases = {r.inputs["name"]: r for r in pinned_run.of_type(RELEASE)}
    assert releases["kueue"].inputs["version"] == pinned.kueue.version
    for install in installs(pinned):
        if install.chart:
            release = releases[install.operator.release_name]
            assert release.inputs["version"] == install.pin.version
            assert release.inputs["namespace"] == install.namespace
            assert release.inputs["skipCrds"] is True  # the CRDs are a release of their own
        else:
            deployments = [
                r for r in pinned_run.of_type(DEPLOYMENT) if r.inputs["metadata"]["namespace"] == install.namespace
            ]
            assert len(deployments) == 1
        # Its CRDs: a release of the chart the program wrote, holding each CRD as the module ships it.
        crd_release = releases[release_name(install.operator.key)]
        chart = crd_chart(install.operator.key, install.pin.version, install.crds)
        assert crd_release.inputs["version"] == chart.version
        assert crd_release.inputs["namespace"] == install.namespace
        folder = Path(crd_release.inputs["chart"])
        assert folder.name == chart.dirname and (folder / "templates" / "crds.yaml").is_file()
        assert [json.loads(f.read_text()) for f in sorted((folder / "files").iterdir())] == sorted(
            install.crds, key=lambda c: c["metadata"]["name"]
        )
    # No CRD body travels as a resource's properties (issue 42): only the ProvisioningRequest API is read.
    assert not [r for r in pinned_run.of_type(CRD) if not r.read_id]
    assert pinned_run.exports["operatorVersions"] == {i.operator.key: i.pin.version for i in installs(pinned)}


def test_controllers_wait_for_their_crds_and_team_namespaces_for_the_controllers(dev_run: ProgramRun) -> None:
    release = next(r for r in dev_run.of_type(RELEASE) if r.inputs["name"] == "kubeflow-trainer")
    deps = {dev_run.by_urn(u).name for u in release.dependencies}
    assert {"operators-trainer-crds-release", "operators-trainer-ns"} <= deps
    assert "operators-jobset-crds-release" in deps  # Trainer watches JobSets
    team = dev_run.one("kubernetes:core/v1:Namespace", "queues-ns-research")
    team_deps = {dev_run.by_urn(u).name for u in team.dependencies}
    assert {
        "operators-kuberay-release",
        "operators-jobset-release",
        "operators-trainer-release",
        "operators-mpiOperator-deployment-mpi-operator",
        "operators-trainingOperator-deployment-training-operator",
    } <= team_deps
    runtime = dev_run.one("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")
    assert "operators-trainer-release" in {dev_run.by_urn(u).name for u in runtime.dependencies}


def test_kueue_starts_after_every_operator_crd(dev_run: ProgramRun, dev: StackConfig) -> None:
    """Kueue sets up a framework's controller at start-up only if its kind is served (else after a
    backoff of up to 2 minutes, seen as MPIJobs with no Workload on the local control plane)."""
    kueue = dev_run.one(RELEASE, "kueue-release")
    crds = {r.urn for r in dev_run.of_type(RELEASE) if r.inputs["name"].endswith("-crds")}
    assert len(crds) == len(installs(dev)) and crds <= set(kueue.dependencies)


def test_an_operator_crd_chart_changes_version_with_any_byte_of_its_crds(dev: StackConfig) -> None:
    install = next(i for i in installs(dev) if i.operator.key == "kuberay")
    chart = crd_chart("kuberay", install.pin.version, install.crds)
    assert chart.name == "kuberay-crds" and release_name("mpiOperator") == "mpi-operator-crds"
    assert chart.version.startswith(f"{install.pin.version}+crds.")
    changed = copy.deepcopy(install.crds)
    changed[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "changed"
    assert crd_chart("kuberay", install.pin.version, changed).version != chart.version
    assert crd_chart("kuberay", install.pin.version, copy.deepcopy(install.crds)) == chart


def test_an_operator_crd_chart_is_written_once_and_whole(dev: StackConfig, tmp_path: Path) -> None:
    install = next(i for i in installs(dev) if i.operator.key == "jobset")
    chart = crd_chart("jobset", install.pin.version, install.crds)
    folder = write_chart(chart, tmp_path / "charts")
    assert folder == tmp_path / "charts" / chart.dirname
    written = {str(f.relative_to(folder)): f.read_text() for f in folder.rglob("*") if f.is_file()}
    assert written == dict(chart.files)
    assert yaml.safe_load(written["Chart.yaml"])["version"] == chart.version
    (folder / "files" / "marker").write_text("kept")  # a second run finds the folder and leaves it
    assert write_chart(chart, tmp_path / "charts") == folder and (folder / "files" / "marker").is_file()
    assert [p.name for p in (tmp_path / "charts").iterdir()] == [chart.dirname]  # no staging folder left
    assert charts_dir({}) == Path(".kueue-aks/charts") and charts_dir({CHARTS_ENV: "/x"}) == Path("/x")


# --- module sources --------------------------------------------------------------------------


def _zip(module: Module, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(f"{module}/{name}", data)
    return buf.getvalue()


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, tuple[int, bytes]]]:
    """A module proxy on loopback: path -> (status, body); the caches point at empty folders."""
    served: dict[str, tuple[int, bytes]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            status, body = served.get(self.path, (404, b"not found"))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "gomod"))
    monkeypatch.setattr(sources, "_proxy", lambda: f"http://127.0.0.1:{server.server_port}")
    yield served
    server.shutdown()


def test_a_module_is_read_only_when_its_checksum_matches(proxy: dict[str, tuple[int, bytes]], tmp_path: Path) -> None:
    good = {"deploy/x.yaml": yaml.safe_dump({"kind": "ConfigMap"}).encode()}
    data = _zip(Module("example.com/Op", "v1.0.0", "h1:x"), good)
    module = Module("example.com/Op", "v1.0.0", sources.dirhash(data))
    proxy["/example.com/!op/@v/v1.0.0.zip"] = (200, data)
    assert sources.module_documents(module, "deploy/x.yaml") == [{"kind": "ConfigMap"}]
    assert len(list((tmp_path / "cache" / "kueue-aks" / "modules").glob("*.zip"))) == 1

    tampered = Module("example.com/Op", "v1.0.1", module.sum)
    proxy["/example.com/!op/@v/v1.0.1.zip"] = (200, _zip(tampered, {"deploy/x.yaml": b"kind: Secret\n"}))
    with pytest.raises(sources.SourceError, match="not the pinned"):
        sources.module_zip(tampered)
    assert not list((tmp_path / "cache" / "kueue-aks" / "modules").glob("*v1.0.1*"))  # nothing half-written


@pytest.mark.parametrize(
    "status, body, match",
    [(404, b"gone", "failed"), (500, b"boom", "failed"), (200, b"not a zip", "is not a module zip")],
)
def test_a_bad_answer_names_the_module_and_leaves_no_cache(
    proxy: dict[str, tuple[int, bytes]], tmp_path: Path, status: int, body: bytes, match: str
) -> None:
    module = Module("example.com/op", "v2.0.0", "h1:AAAA")
    proxy["/example.com/op/@v/v2.0.0.zip"] = (status, body)
    with pytest.raises(sources.SourceError, match=match) as err:
        sources.module_zip(module)
    assert "example.com/op@v2.0.0" in str(err.value)
    assert not (tmp_path / "cache" / "kueue-aks" / "modules").exists() or not any(
        (tmp_path / "cache" / "kueue-aks" / "modules").iterdir()
    )


def test_the_module_proxy_is_the_first_https_entry_of_goproxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOPROXY", "http://plain.example,https://mirror.example/go/|https://proxy.golang.org,direct")
    assert sources._proxy() == "https://mirror.example/go"
    monkeypatch.setenv("GOPROXY", "off")
    assert sources._proxy() == sources.DEFAULT_PROXY


@pytest.mark.parametrize("version", sorted(OPERATOR_PINS))
def test_the_pinned_checksums_match_the_modules(version: str) -> None:
    for pin in OPERATOR_PINS[version].values():
        assert sources.dirhash(sources.module_zip(pin.module)) == pin.module.sum


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_the_catalog_names_only_kueue_frameworks(version: str) -> None:
    for operator in OPERATORS.values():
        assert set(operator.frameworks) <= RELEASES[version].frameworks, operator.key


def test_the_e2e_tier_builds_the_pinned_controllers() -> None:
    """The tier's wrapper modules build exactly the versions the program installs."""
    from testbed.binaries import OPERATOR_BUILDS, TOOLS_DIR
    from testbed.operators import CONTROLLERS

    for key, name in CONTROLLERS.items():
        pin, build = OPERATOR_PINS["0.19.2"][key], OPERATOR_BUILDS[name]
        assert (build.module, build.version) == (pin.module.path, pin.module.version), key
        assert f"{pin.module.path} {pin.module.version}" in (TOOLS_DIR / name / "go.mod").read_text(), key
