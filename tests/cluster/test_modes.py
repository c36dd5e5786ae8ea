"""Bring your own cluster, and charts and images from your own registry.

The three cluster modes (create | existing | kubeconfig), the chart and image sources of Kueue and
the device plugin: the config rules (pure), chart_ref, the existing-pool check, and the whole
program under mocks in each mode.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.k8s.charts import ChartRef, chart_ref, chart_source_problem, packaged_version
from components.cluster.component import kubeconfig_server, pool_mismatches
from components.config.checks import PROJECT_ROOT, ConfigError
from components.config.cluster import CREATION_KEYS, ExistingCluster
from components.config.device_plugin import DEFAULT_DEVICE_PLUGIN_CHART
from components.config.kueue import DEFAULT_KUEUE_CHART
from components.config.pools import NodePool
from components.config.stack import StackConfig
from components.facts.device_plugin import DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION
from components.gpu.values import device_plugin_chart
from components.kueue.values import KUEUE_CHART_NAME, kueue_chart
from testbed.config_errors import refused
from testbed.harness import (
    K8S_PROVIDER,
    RELEASE,
    ProgramMocks,
    ProgramRun,
    assert_nothing_registered,
    azure_registrations,
    kubernetes_objects,
    matching_agent_pools,
    provider_urn,
    run_program,
)
from testbed.paths import CHART_TGZ, SHARED
from testbed.stacks import (
    EXISTING,
    KUBECONFIG,
    SERVER,
    TOKEN,
    kubeconfig_stack,
    load_stack,
    stack_file_config,
    with_cluster,
)

AKS_CLUSTER = "kueue-aks:cluster:AksCluster"
EXISTING_CLUSTER = "kueue-aks:cluster:ExistingAksCluster"
KUBECONFIG_CLUSTER = "kueue-aks:cluster:KubeconfigCluster"
GET_CLUSTER = "azure-native:containerservice:getManagedCluster"
GET_POOL = "azure-native:containerservice:getAgentPool"
ADMIN_CREDENTIALS = "azure-native:containerservice:listManagedClusterAdminCredentials"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
# Outputs only a cluster in Azure has; a kubeconfig stack leaves them out.
AZURE_EXPORTS = ("clusterName", "resourceGroupName", "oidcIssuerUrl", "kubeconfig")
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"  # how a secret input reaches the mock monitor

PLUGIN_TGZ = (
    SHARED
    / "nvidia-device-plugin"
    / f"v{DEVICE_PLUGIN_VERSION}"
    / "chart"
    / f"nvidia-device-plugin-{DEVICE_PLUGIN_VERSION}.tgz"
)

# Every creation key with a value that is valid in create mode: only the mode makes it an error.
CREATION_VALUES: dict[str, Any] = {
    "name": "mycluster",
    "kubernetesVersion": "1.33",
    "tier": "Standard",
    "zones": ["1"],
    "systemPool": {"count": 1},
    "adminGroupObjectIds": ["11111111-2222-3333-4444-555555555555"],
    "disableLocalAccounts": True,
    "autoUpgradeChannel": "patch",
    "deployerAdmin": False,
    "network": {"podCidr": "192.168.0.0/16"},
    "apiServer": {"authorizedIpRanges": ["203.0.113.0/24"]},
}


def secret_value(value: Any) -> Any:
    """The value of a secret input as the mock monitor got it; fails when it was not secret."""
    assert isinstance(value, dict) and SECRET_SIG in value.values(), f"not a secret: {str(value)[:60]}"
    return value["value"]


# --- config: cluster modes ------------------------------------------------------------------------


def test_each_cluster_mode_parses(dev_config_map: dict[str, Any]) -> None:
    created = load_stack(dev_config_map).cluster
    assert (created.mode, created.existing, created.kubeconfig) == ("create", None, None)
    existing = load_stack(with_cluster(dev_config_map, {"existing": EXISTING})).cluster
    assert (existing.mode, existing.existing, existing.kubeconfig) == ("existing", ExistingCluster("rg", "aks1"), None)
    byo = load_stack(kubeconfig_stack(dev_config_map))
    assert (byo.cluster.mode, byo.cluster.existing, byo.cluster.kubeconfig) == ("kubeconfig", None, KUBECONFIG)
    assert byo.location == ""


@pytest.mark.parametrize("missing", ["resourceGroup", "name"])
def test_existing_needs_resource_group_and_name(dev_config_map: dict[str, Any], missing: str) -> None:
    existing = {k: v for k, v in EXISTING.items() if k != missing}
    found = refused(load_stack, with_cluster(dev_config_map, {"existing": existing})).pairs
    assert (f"kueue-aks:cluster.existing.{missing}", "is required") in found


def test_existing_must_be_an_object_naming_the_cluster(dev_config_map: dict[str, Any]) -> None:
    assert "kueue-aks:cluster.existing" in refused(load_stack, with_cluster(dev_config_map, {"existing": {}})).paths
    assert "kueue-aks:cluster.existing" in refused(load_stack, with_cluster(dev_config_map, {"existing": "aks1"})).paths
    bad_names = refused(
        load_stack, with_cluster(dev_config_map, {"existing": {"resourceGroup": "rg/x", "name": "-aks"}})
    ).paths
    assert {"kueue-aks:cluster.existing.resourceGroup", "kueue-aks:cluster.existing.name"} <= set(bad_names)


def test_creation_values_cover_every_creation_key(dev_config_map: dict[str, Any]) -> None:
    # The test below is only complete if it tries every key; and each value is valid on its own.
    assert set(CREATION_VALUES) == set(CREATION_KEYS)
    load_stack(with_cluster(dev_config_map, CREATION_VALUES))


@pytest.mark.parametrize("mode", ["existing", "kubeconfig"])
@pytest.mark.parametrize("key", CREATION_KEYS)
def test_a_creation_key_is_an_error_with_a_cluster_made_elsewhere(
    dev_config_map: dict[str, Any], mode: str, key: str
) -> None:
    cluster = {mode: EXISTING if mode == "existing" else KUBECONFIG, key: CREATION_VALUES[key]}
    found = refused(load_stack, with_cluster(dev_config_map, cluster)).pairs
    assert [path for path, _ in found] == [f"kueue-aks:cluster.{key}"]
    assert f"cluster.{mode}" in found[0][1]


def test_existing_and_kubeconfig_together_is_an_error(dev_config_map: dict[str, Any]) -> None:
    found = refused(load_stack, with_cluster(dev_config_map, {"existing": EXISTING, "kubeconfig": KUBECONFIG})).pairs
    assert [path for path, _ in found] == ["kueue-aks:cluster.kubeconfig"]
    assert "choose one cluster mode" in found[0][1]


@pytest.mark.parametrize("cluster", [None, {"existing": EXISTING}], ids=["create", "existing"])
def test_only_a_kubeconfig_stack_may_leave_out_the_location(
    dev_config_map: dict[str, Any], cluster: dict[str, Any] | None
) -> None:
    config = with_cluster(dev_config_map, cluster)
    del config["azure-native:location"]
    assert refused(load_stack, config).paths == ["azure-native:location"]
    load_stack(kubeconfig_stack(dev_config_map))  # no problem at all


@pytest.mark.parametrize(
    "value",
    ["s3cr3t-not-a-kubeconfig", "token: s3cr3t-token\nuser: admin", "", {"token": "s3cr3t-in-an-object"}, 42],
    ids=["text", "yaml", "empty", "object", "number"],
)
def test_a_value_that_is_not_a_kubeconfig_is_an_error_that_never_echoes_it(
    dev_config_map: dict[str, Any], value: Any
) -> None:
    config = with_cluster(dev_config_map, {"kubeconfig": value})
    with pytest.raises(ConfigError) as err:
        load_stack(config)
    assert "kueue-aks:cluster.kubeconfig" in [p.path for p in err.value.problems]
    assert "s3cr3t" not in str(err.value)
    # Nor does the program's error, which the CLI prints; and it stops before any resource.
    with pytest.raises(pulumi.RunError) as run_err:
        run_program(config)
    assert "kueue-aks:cluster.kubeconfig" in str(run_err.value) and "s3cr3t" not in str(run_err.value)
    assert_nothing_registered()


@pytest.mark.parametrize(
    "text",
    [
        "clusters: [server: {token: s3cr3t-token",
        "- s3cr3t-token",
        "s3cr3t-token clusters server",
        "clusters: [{name: x, token: s3cr3t-token}]",
    ],
)
def test_kubeconfig_text_that_is_not_yaml_is_a_config_error_that_never_echoes_it(
    dev_config_map: dict[str, Any], text: str
) -> None:
    config = kubeconfig_stack(dev_config_map)
    config["kueue-aks:cluster"] = {"kubeconfig": text}
    with pytest.raises(pulumi.RunError) as err:
        run_program(config)
    assert "kueue-aks:cluster.kubeconfig" in str(err.value) and "s3cr3t" not in str(err.value)
    assert_nothing_registered()


def test_repr_never_shows_the_kubeconfig(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(kubeconfig_stack(dev_config_map))
    for shown in (repr(config.cluster), str(config.cluster), repr(config)):
        assert TOKEN not in shown and SERVER not in shown and "kubeconfig=" not in shown


# --- config: chart and image sources --------------------------------------------------------------


def chart_tgz(directory: Path, name: str, version: str) -> Path:
    """A packaged chart holding only <name>/Chart.yaml, as `helm package` lays it out."""
    path = directory / f"{name}-{version}.tgz"
    chart_yaml = yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version}).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"{name}/Chart.yaml")
        info.size = len(chart_yaml)
        tar.addfile(info, io.BytesIO(chart_yaml))
    return path


def test_the_shared_charts_hold_the_pinned_versions() -> None:
    # The accepted-file cases below rely on these files; a missing one should say so, not fail oddly.
    assert packaged_version(CHART_TGZ) == "0.19.2", CHART_TGZ
    assert packaged_version(PLUGIN_TGZ) == DEVICE_PLUGIN_VERSION, PLUGIN_TGZ


@pytest.mark.parametrize(
    ("key", "name", "own_tgz"), [("kueue", "kueue", CHART_TGZ), ("devicePlugin", "nvidia-device-plugin", PLUGIN_TGZ)]
)
def test_chart_sources(dev_config_map: dict[str, Any], tmp_path: Path, key: str, name: str, own_tgz: Path) -> None:
    path = f"kueue-aks:{key}.chart"

    def chart_problems(source: str) -> list[str]:
        config = with_cluster(dev_config_map, dev_config_map["kueue-aks:cluster"], **{key: {"chart": source}})
        try:
            load_stack(config)
        except ConfigError as err:
            assert {p.path for p in err.problems} == {path}, err
            return [p.message for p in err.problems]
        return []

    # Accepted: a repository URL of either kind, and a packaged chart of the pinned version.
    for ok in (f"oci://myacr.azurecr.io/helm/{name}", "https://charts.example.com/stable/", str(own_tgz)):
        assert chart_problems(ok) == [], ok
    # A relative path starts at the project directory, not where the command runs.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert chart_problems(str(Path("..") / own_tgz.relative_to(PROJECT_ROOT.parent))) == []
    # Refused, each with a reason.
    (tagged,) = chart_problems(f"oci://myacr.azurecr.io/helm/{name}:0.19.2")
    assert "tag or digest" in tagged
    (digest,) = chart_problems(f"oci://myacr.azurecr.io/helm/{name}@sha256:{'0' * 64}")
    assert "tag or digest" in digest
    for scheme in ("http", "s3"):
        (said,) = chart_problems(f"{scheme}://charts.example.com/{name}")
        assert f"scheme {scheme!r}" in said
    missing = str(tmp_path / "absent.tgz")
    (said,) = chart_problems(missing)
    assert "no such file" in said and missing in said
    wrong = chart_tgz(tmp_path, name, "0.1.0")
    (said,) = chart_problems(str(wrong))
    assert "0.1.0" in said and "pinned" in said
    (said,) = chart_problems(str(CHART_TGZ if own_tgz == PLUGIN_TGZ else PLUGIN_TGZ))  # the other chart's file
    assert "pinned" in said
    (said,) = chart_problems(str(tmp_path))  # a directory, not a packaged chart
    assert ".tgz" in said


def test_a_chart_file_without_a_chart_yaml_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "kueue-0.19.2.tgz"
    junk.write_bytes(b"not a tar file")
    assert packaged_version(junk) is None
    assert "holds chart version None" in (chart_source_problem(str(junk), "0.19.2", PROJECT_ROOT) or "")


@pytest.mark.parametrize("key", ["kueue", "devicePlugin"])
@pytest.mark.parametrize(
    ("repository", "hint"),
    [
        ("https://myacr.azurecr.io/kueue/kueue", "without a scheme"),
        ("myacr.azurecr.io/kueue/kueue:v0.19.2", "without a tag or digest"),
        (f"myacr.azurecr.io/kueue/kueue@sha256:{'0' * 64}", "without a tag or digest"),
        ("kueue", "registry/path"),  # no registry: the mirror would be Docker Hub's
        ("MyAcr.azurecr.io/Kueue", "registry/path"),
        ("myacr.azurecr.io/kueue/kueue", None),
        ("myregistry.example.com:5000/mirror/k8s-device-plugin", None),
    ],
)
def test_image_repositories(dev_config_map: dict[str, Any], key: str, repository: str, hint: str | None) -> None:
    config = with_cluster(dev_config_map, dev_config_map["kueue-aks:cluster"], **{key: {"imageRepository": repository}})
    if hint is None:
        load_stack(config)
        return
    ((path, message),) = refused(load_stack, config).pairs
    assert path == f"kueue-aks:{key}.imageRepository" and hint in message


@pytest.mark.parametrize(
    ("cluster", "keys", "expected"),
    [
        ({"existing": EXISTING, "tier": "Standard"}, {}, "kueue-aks:cluster.tier"),
        ({"existing": {"resourceGroup": "rg"}}, {}, "kueue-aks:cluster.existing.name"),
        ({"existing": EXISTING, "kubeconfig": KUBECONFIG}, {}, "kueue-aks:cluster.kubeconfig"),
        ({"kubeconfig": KUBECONFIG, "zones": ["1"]}, {}, "kueue-aks:cluster.zones"),
        (None, {"kueue": {"chart": "oci://x.azurecr.io/helm/kueue:0.19.2"}}, "kueue-aks:kueue.chart"),
        (None, {"kueue": {"chart": "/nowhere/kueue-0.19.2.tgz"}}, "kueue-aks:kueue.chart"),
        (
            None,
            {"kueue": {"imageRepository": "myacr.azurecr.io/kueue/kueue:v0.19.2"}},
            "kueue-aks:kueue.imageRepository",
        ),
        (None, {"devicePlugin": {"chart": "http://charts.example.com"}}, "kueue-aks:devicePlugin.chart"),
        (None, {"devicePlugin": {"imageRepository": "oci://x.azurecr.io/p"}}, "kueue-aks:devicePlugin.imageRepository"),
        (None, {"devicePlugin": {"repository": "x"}}, "kueue-aks:devicePlugin.repository: unknown key"),
    ],
)
def test_mode_and_source_errors_stop_before_any_resource(
    dev_config_map: dict[str, Any], cluster: dict[str, Any] | None, keys: dict[str, Any], expected: str
) -> None:
    config = with_cluster(dev_config_map, cluster or dev_config_map["kueue-aks:cluster"], **keys)
    with pytest.raises(pulumi.RunError) as err:
        run_program(config)
    assert expected in str(err.value)
    assert TOKEN not in str(err.value)
    assert_nothing_registered()


# --- chart_ref ------------------------------------------------------------------------------------


def test_chart_ref_of_each_source() -> None:
    oci = chart_ref("oci://myacr.azurecr.io/helm/kueue", "kueue", "0.19.2")
    assert oci == ChartRef(chart="oci://myacr.azurecr.io/helm/kueue", version="0.19.2", repository=None)
    https = chart_ref("https://nvidia.github.io/k8s-device-plugin/", "nvidia-device-plugin", "0.20.0")
    assert https == ChartRef(
        chart="nvidia-device-plugin", version="0.20.0", repository="https://nvidia.github.io/k8s-device-plugin"
    )
    local = chart_ref(str(CHART_TGZ), "kueue", "0.19.2")
    assert local == ChartRef(chart=str(CHART_TGZ), version="0.19.2", repository=None)


def test_default_charts_are_the_official_ones(dev_config: StackConfig) -> None:
    assert kueue_chart(dev_config) == ChartRef(DEFAULT_KUEUE_CHART, "0.19.2")
    assert device_plugin_chart(dev_config) == ChartRef(
        DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION, DEFAULT_DEVICE_PLUGIN_CHART
    )
    assert KUEUE_CHART_NAME == "kueue"


# --- the program in each mode ---------------------------------------------------------------------


def releases(run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in run.of_type(RELEASE)}


@pytest.fixture(scope="module")
def dev_map() -> dict[str, Any]:
    # Without monitoring, which differs per mode by design (tests/monitoring/test_monitoring.py).
    config = stack_file_config("dev")
    config.pop("kueue-aks:monitoring")
    return config


@pytest.fixture(scope="module")
def create_run(dev_map: dict[str, Any]) -> ProgramRun:
    return run_program(dev_map)


@pytest.fixture(scope="module")
def kubeconfig_run(dev_map: dict[str, Any]) -> ProgramRun:
    return run_program(kubeconfig_stack(dev_map))


@pytest.fixture(scope="module")
def existing_run(dev_map: dict[str, Any]) -> ProgramRun:
    return run_program(with_cluster(dev_map, {"existing": EXISTING}))


def test_create_mode_is_unchanged(create_run: ProgramRun) -> None:
    create_run.one(AKS_CLUSTER)
    assert not create_run.of_type(EXISTING_CLUSTER) and not create_run.of_type(KUBECONFIG_CLUSTER)
    assert GET_CLUSTER not in create_run.invokes and GET_POOL not in create_run.invokes
    kueue, plugin = releases(create_run)["kueue-release"], releases(create_run)["gpu-release"]
    assert (kueue["chart"], kueue["version"]) == (DEFAULT_KUEUE_CHART, "0.19.2")
    assert "repositoryOpts" not in kueue  # an OCI chart names its own registry
    assert (plugin["chart"], plugin["version"]) == ("nvidia-device-plugin", DEVICE_PLUGIN_VERSION)
    assert plugin["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    # No mirror configured: the charts' own images.
    assert "image" not in kueue["values"]["controllerManager"]["manager"] and "image" not in plugin["values"]
    assert set(AZURE_EXPORTS) | {"nodePools"} <= set(create_run.exports)
    assert create_run.exports["oidcIssuerUrl"] == "https://oidc.example.invalid/issuer/"
    assert create_run.secret_exports == {"kubeconfig"}


def test_kubeconfig_mode_touches_no_azure(kubeconfig_run: ProgramRun) -> None:
    assert azure_registrations(kubeconfig_run) == []
    assert not [token for token in kubeconfig_run.invokes if token.startswith("azure-native:")]
    assert not kubeconfig_run.of_type(AKS_CLUSTER) and not kubeconfig_run.of_type(EXISTING_CLUSTER)
    kubeconfig_run.one(KUBECONFIG_CLUSTER)


def test_kubeconfig_mode_provider_holds_the_kubeconfig_as_a_secret(kubeconfig_run: ProgramRun) -> None:
    component = kubeconfig_run.one(KUBECONFIG_CLUSTER)
    provider = kubeconfig_run.one(K8S_PROVIDER)
    assert provider.parent == component.urn
    assert secret_value(provider.inputs["kubeconfig"]) == KUBECONFIG
    # The server address identifies the cluster (it is no credential, so it is plain).
    assert provider.inputs["clusterIdentifier"] == SERVER
    assert provider.inputs["deleteUnreachable"] == "true"
    # The kubeconfig shows up nowhere else: not in the component's outputs, nor any other input.
    for reg in kubeconfig_run.registrations:
        if reg is not provider:
            assert TOKEN not in str(reg.inputs), reg.name


def test_kubeconfig_mode_every_kubernetes_object_uses_its_provider(kubeconfig_run: ProgramRun) -> None:
    provider = kubeconfig_run.one(K8S_PROVIDER)
    objects = [r for r in kubeconfig_run.registrations if r.type.startswith("kubernetes:")]
    assert objects
    for reg in objects:
        assert provider_urn(reg.provider) == provider.urn, reg.name


def test_kubeconfig_mode_exports_only_what_it_has(kubeconfig_run: ProgramRun) -> None:
    for key in AZURE_EXPORTS:
        assert key not in kubeconfig_run.exports, key  # absent, not None or ""
    assert kubeconfig_run.exports["nodePools"] == ["cpu", "gpu", "tas"]
    assert {"kueueNamespace", "kueueVersion", "localQueues", "quotaTable"} <= set(kubeconfig_run.exports)
    assert kubeconfig_run.secret_exports == set()
    assert TOKEN not in str(kubeconfig_run.exports)


@pytest.mark.parametrize("other", ["kubeconfig_run", "existing_run"])
def test_kueue_objects_and_releases_do_not_depend_on_the_mode(
    create_run: ProgramRun, other: str, request: pytest.FixtureRequest
) -> None:
    # The same pools give the same quotas, queues, policies and Helm values on any cluster.
    created, byo = kubernetes_objects(create_run), kubernetes_objects(request.getfixturevalue(other))
    assert set(created) == set(byo)
    for key, inputs in created.items():
        assert byo[key] == inputs, key
    assert any(kind.endswith(":ClusterQueue") for kind, _ in created)


def test_existing_mode_reads_the_cluster_and_creates_nothing_in_azure(existing_run: ProgramRun) -> None:
    assert azure_registrations(existing_run) == []
    assert not existing_run.of_type(AKS_CLUSTER) and not existing_run.of_type(KUBECONFIG_CLUSTER)
    component = existing_run.one(EXISTING_CLUSTER)
    assert existing_run.invokes.count(GET_CLUSTER) == 1
    (cluster_args,) = [a for t, a in existing_run.invoke_args if t == GET_CLUSTER]
    assert (cluster_args["resourceGroupName"], cluster_args["resourceName"]) == ("rg", "aks1")
    pool_args = [a for t, a in existing_run.invoke_args if t == GET_POOL]
    assert sorted(a["agentPoolName"] for a in pool_args) == ["cpu", "gpu", "tas"]  # one per pool, no system pool
    assert all((a["resourceGroupName"], a["resourceName"]) == ("rg", "aks1") for a in pool_args)
    provider = existing_run.one(K8S_PROVIDER)
    assert provider.parent == component.urn
    assert "admin-token-not-real" in secret_value(provider.inputs["kubeconfig"])
    assert provider.inputs["clusterIdentifier"].endswith(
        "/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
    )
    for reg in existing_run.registrations:
        if reg.type.startswith("kubernetes:"):
            assert provider_urn(reg.provider) == provider.urn, reg.name


def test_existing_mode_exports(existing_run: ProgramRun) -> None:
    exports = existing_run.exports
    assert (exports["clusterName"], exports["resourceGroupName"]) == ("aks1", "rg")
    assert exports["oidcIssuerUrl"] == "https://oidc.example.invalid/existing/"
    assert exports["nodePools"] == ["cpu", "gpu", "tas"]
    assert existing_run.secret_exports == {"kubeconfig"}
    assert "admin-token-not-real" in exports["kubeconfig"]


@pytest.mark.parametrize(
    ("local_accounts_off", "used", "unused"),
    [(False, ADMIN_CREDENTIALS, USER_CREDENTIALS), (True, USER_CREDENTIALS, ADMIN_CREDENTIALS)],
)
def test_existing_mode_credentials_follow_the_clusters_local_accounts(
    dev_map: dict[str, Any], local_accounts_off: bool, used: str, unused: str
) -> None:
    mocks = ProgramMocks(managed_cluster={"disableLocalAccounts": local_accounts_off})
    run = run_program(with_cluster(dev_map, {"existing": EXISTING}), mocks=mocks)
    assert run.invokes.count(used) == 1 and unused not in run.invokes
    (args,) = [a for t, a in run.invoke_args if t == used]
    assert (args["resourceGroupName"], args["resourceName"]) == ("rg", "aks1")
    kubeconfig = yaml.safe_load(secret_value(run.one(K8S_PROVIDER).inputs["kubeconfig"]))
    user = kubeconfig["users"][0]["user"]
    if local_accounts_off:  # Entra ID only: kubelogin, non-interactive
        assert user["exec"]["args"][:3] == ["get-token", "--login", "azurecli"]
    else:
        assert user == {"token": "admin-token-not-real"}
    assert "kubeconfig" in run.secret_exports


# --- existing mode: pools that differ from the config ---------------------------------------------

# One of each kind of pool: autoscaled with a label, spot GPU, fixed-size topology-aware.
EXISTING_POOLS = [
    {"name": "cpu", "vmSize": "Standard_D8s_v5", "minCount": 0, "maxCount": 4, "labels": {"example.com/tier": "batch"}},
    {"name": "a100spot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True},
    {"name": "tas", "vmSize": "Standard_D8s_v5", "minCount": 2, "maxCount": 2, "topology": True},
]
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
QUEUED_TAINT = "kueue-aks.io/queued=true:NoSchedule"


@pytest.fixture(scope="module")
def existing_pools_map(dev_map: dict[str, Any]) -> dict[str, Any]:
    return with_cluster(dev_map, {"existing": EXISTING}, nodePools=EXISTING_POOLS)


def test_existing_pools_that_match_pass(existing_pools_map: dict[str, Any]) -> None:
    pools = matching_agent_pools(existing_pools_map)
    pools["cpu"]["count"] = 3  # the autoscaler moves an autoscaled pool's count: not a difference
    pools["cpu"]["nodeLabels"]["kubernetes.azure.com/agentpool"] = "cpu"  # nor are labels AKS adds
    pools["a100spot"]["vmSize"] = "standard_nc24ads_a100_v4"  # Azure may report sizes in any case
    run = run_program(existing_pools_map, mocks=ProgramMocks(agent_pools=pools))
    assert run.exports["nodePools"] == ["cpu", "a100spot", "tas"]
    assert run.invokes.count(GET_POOL) == 3


@pytest.mark.parametrize(
    ("index", "change", "field"),
    [
        (0, {"vmSize": "Standard_D16s_v5"}, "vmSize"),
        (0, {"minCount": 1}, "minCount"),
        (0, {"maxCount": 8}, "maxCount"),
        (0, {"enableAutoScaling": False}, "autoscaling"),
        (2, {"enableAutoScaling": True, "minCount": 2, "maxCount": 2}, "autoscaling"),  # TAS needs a fixed size
        (2, {"count": 3}, "count"),
        (1, {"scaleSetPriority": "Regular"}, "spot"),
        (0, {"scaleSetPriority": "Spot"}, "spot"),
        (1, {"nodeTaints": [SPOT_TAINT, QUEUED_TAINT]}, "taints"),  # the GPU default taint is missing
        (0, {"nodeLabels": {"example.com/tier": "interactive"}}, "labels"),
        (0, {"nodeLabels": {}}, "labels"),
    ],
    ids=[
        "vmSize",
        "minCount",
        "maxCount",
        "not-autoscaled",
        "tas-autoscaled",
        "tas-count",
        "not-spot",
        "spot",
        "missing-taint",
        "label-value",
        "missing-label",
    ],
)
@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_an_existing_pool_that_differs_stops_the_run(
    existing_pools_map: dict[str, Any], index: int, change: dict[str, Any], field: str, preview: bool
) -> None:
    name = EXISTING_POOLS[index]["name"]
    pools = matching_agent_pools(existing_pools_map)
    pools[name] |= change
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing_pools_map, preview=preview, mocks=ProgramMocks(agent_pools=pools))
    text = str(err.value)
    assert f"kueue-aks:nodePools[{index}] ({name})" in text
    listed = [line for line in text.splitlines() if line.startswith("  - ")]
    assert len(listed) == 1 and listed[0].startswith(f"  - {field} is "), text
    # The check gates the provider: no Kubernetes object was sent to the cluster.
    from pulumi.runtime.settings import SETTINGS

    assert not [r.name for r in SETTINGS.monitor.registrations if r.type.startswith("kubernetes:")]


def test_a_pool_without_the_governance_taint_is_told_where_it_comes_from_and_how_to_add_it(
    existing_pools_map: dict[str, Any],
) -> None:
    pools = matching_agent_pools(existing_pools_map)
    pools["cpu"]["nodeTaints"] = []  # a pool made before governance, as the issue reported
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing_pools_map, preview=True, mocks=ProgramMocks(agent_pools=pools))
    text = str(err.value)
    assert "kueue-aks:governance.enforce puts on every user pool" in text, text
    assert (
        f"az aks nodepool update --resource-group rg --cluster-name aks1 --name cpu --node-taints {QUEUED_TAINT}"
    ) in text.splitlines()[-2].strip(), text
    assert text.splitlines()[-1] == "or, to keep the pool as it is, set kueue-aks:governance.enforce to false."
    assert "Change the stack file" not in text  # the taint was the only difference


def test_a_spot_pool_gets_its_whole_taint_list_and_other_differences_are_still_named(
    existing_pools_map: dict[str, Any],
) -> None:
    pools = matching_agent_pools(existing_pools_map)
    pools["a100spot"] |= {"nodeTaints": [SPOT_TAINT], "maxCount": 3}
    with pytest.raises(pulumi.RunError) as err:
        run_program(existing_pools_map, mocks=ProgramMocks(agent_pools=pools))
    text = str(err.value)
    command = next(line.strip() for line in text.splitlines() if "az aks nodepool update" in line)
    assert sorted(command.rsplit(" ", 1)[1].split(",")) == sorted([GPU_TAINT, SPOT_TAINT, QUEUED_TAINT]), text
    assert "Change the stack file or the pool for the other differences." in text


def pool(**kw: Any) -> NodePool:
    config = load_stack(
        with_cluster(
            stack_file_config("dev"), None, nodePools=[{"name": "p", **kw}], teams=[{"name": "a", "share": 50}]
        )
    )
    return config.node_pools[0]


def actual(p: NodePool, **changes: Any) -> dict[str, Any]:
    """getAgentPool's result for `p` as the SDK gives it (snake_case), with changes."""
    fields = {
        "vm_size": p.vm_size,
        "node_taints": [str(t) for t in p.node_taints],
        "node_labels": dict(p.labels),
        "scale_set_priority": "Spot" if p.spot else None,
    }
    if p.topology:
        fields |= {"enable_auto_scaling": False, "count": p.max_count}
    else:
        fields |= {"enable_auto_scaling": True, "min_count": p.min_count, "max_count": p.max_count, "count": 1}
    return fields | changes


AUTOSCALED = {"vmSize": "Standard_D8s_v5", "minCount": 1, "maxCount": 4, "labels": {"example.com/tier": "batch"}}
SPOT_GPU = {"vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True}
FIXED = {"vmSize": "Standard_D8s_v5", "minCount": 3, "maxCount": 3, "topology": True}


@pytest.mark.parametrize("kind", [AUTOSCALED, SPOT_GPU, FIXED], ids=["autoscaled", "spot-gpu", "fixed"])
def test_pool_mismatches_a_matching_pool_is_empty(kind: dict[str, Any]) -> None:
    p = pool(**kind)
    assert pool_mismatches(p, actual(p)) == []
    # Reported in another case, or with labels AKS adds, it still matches.
    more_labels = dict(p.labels) | {"kubernetes.azure.com/agentpool": "p"}
    assert pool_mismatches(p, actual(p, vm_size=p.vm_size.upper(), node_labels=more_labels)) == []


@pytest.mark.parametrize(
    ("kind", "changes", "field"),
    [
        (AUTOSCALED, {"vm_size": "Standard_D4s_v5"}, "vmSize"),
        (AUTOSCALED, {"vm_size": None}, "vmSize"),
        (AUTOSCALED, {"min_count": 0}, "minCount"),
        (AUTOSCALED, {"max_count": 5}, "maxCount"),
        (AUTOSCALED, {"enable_auto_scaling": False}, "autoscaling"),
        (AUTOSCALED, {"enable_auto_scaling": None}, "autoscaling"),
        (AUTOSCALED, {"scale_set_priority": "Spot"}, "spot"),
        (AUTOSCALED, {"node_taints": []}, "taints"),  # the governance taint is missing
        (AUTOSCALED, {"node_labels": {"example.com/tier": "other"}}, "labels"),
        (AUTOSCALED, {"node_labels": None}, "labels"),
        (SPOT_GPU, {"scale_set_priority": "Regular"}, "spot"),
        (SPOT_GPU, {"node_taints": [GPU_TAINT]}, "taints"),  # no spot or governance taint
        (FIXED, {"enable_auto_scaling": True}, "autoscaling"),
        (FIXED, {"count": 2}, "count"),
        (FIXED, {"count": None}, "count"),
    ],
)
def test_pool_mismatches_names_the_field(kind: dict[str, Any], changes: dict[str, Any], field: str) -> None:
    p = pool(**kind)
    (said,) = pool_mismatches(p, actual(p, **changes))
    assert said.startswith(f"{field} is ") and "in Azure but" in said and "in the config" in said


def test_pool_mismatches_lists_every_difference() -> None:
    p = pool(**AUTOSCALED)
    said = pool_mismatches(p, actual(p, vm_size="Standard_D4s_v5", max_count=9, node_labels={}))
    assert [s.split(" ", 1)[0] for s in said] == ["vmSize", "maxCount", "labels"]


# --- charts and images from your own registry, in the program -------------------------------------


def test_image_mirrors_set_only_the_repository(dev_map: dict[str, Any]) -> None:
    config = with_cluster(
        dev_map,
        dev_map["kueue-aks:cluster"],
        kueue={"imageRepository": "myacr.azurecr.io/kueue/kueue"},
        devicePlugin={"imageRepository": "myacr.azurecr.io/nvidia/k8s-device-plugin"},
    )
    found = releases(run_program(config))
    # Only the repository: the tag stays the chart's, so the image follows the pinned version.
    assert found["kueue-release"]["values"]["controllerManager"]["manager"]["image"] == {
        "repository": "myacr.azurecr.io/kueue/kueue"
    }
    assert found["gpu-release"]["values"]["image"] == {"repository": "myacr.azurecr.io/nvidia/k8s-device-plugin"}
    # The charts themselves still come from upstream.
    assert found["kueue-release"]["chart"] == DEFAULT_KUEUE_CHART
    assert found["gpu-release"]["repositoryOpts"] == {"repo": DEFAULT_DEVICE_PLUGIN_CHART}


def test_charts_from_a_local_file_and_an_oci_mirror(dev_map: dict[str, Any]) -> None:
    config = with_cluster(
        dev_map,
        dev_map["kueue-aks:cluster"],
        kueue={"chart": str(CHART_TGZ)},
        devicePlugin={"chart": "oci://myacr.azurecr.io/helm/nvidia-device-plugin"},
    )
    found = releases(run_program(config))
    kueue, plugin = found["kueue-release"], found["gpu-release"]
    assert (kueue["chart"], kueue["version"]) == (str(CHART_TGZ), "0.19.2")  # still pinned
    assert "repositoryOpts" not in kueue
    assert (plugin["chart"], plugin["version"]) == (
        "oci://myacr.azurecr.io/helm/nvidia-device-plugin",
        DEVICE_PLUGIN_VERSION,
    )
    assert "repositoryOpts" not in plugin


def test_kueue_chart_from_an_https_mirror(dev_map: dict[str, Any]) -> None:
    config = with_cluster(dev_map, dev_map["kueue-aks:cluster"], kueue={"chart": "https://charts.example.com/kueue/"})
    kueue = releases(run_program(config))["kueue-release"]
    assert (kueue["chart"], kueue["version"]) == ("kueue", "0.19.2")
    assert kueue["repositoryOpts"] == {"repo": "https://charts.example.com/kueue"}


# --- kubeconfig_server ----------------------------------------------------------------------------


def test_kubeconfig_server_follows_the_current_context() -> None:
    doc = {
        "clusters": [
            {"name": "one", "cluster": {"server": "https://one.invalid"}},
            {"name": "two", "cluster": {"server": "https://two.invalid:6443"}},
        ],
        "contexts": [
            {"name": "a", "context": {"cluster": "one", "user": "u"}},
            {"name": "b", "context": {"cluster": "two", "user": "u"}},
        ],
        "current-context": "b",
    }
    assert kubeconfig_server(yaml.safe_dump(doc)) == "https://two.invalid:6443"
    assert kubeconfig_server(yaml.safe_dump(doc | {"current-context": "a"})) == "https://one.invalid"
    # Without a current context: the first cluster.
    assert (
        kubeconfig_server(yaml.safe_dump({k: v for k, v in doc.items() if k != "current-context"}))
        == "https://one.invalid"
    )
    assert kubeconfig_server(KUBECONFIG) == SERVER
