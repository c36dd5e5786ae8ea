"""The preflight: Azure's vCPU quota and VM sizes against the pools at maxCount.

The program runs under mocks; the preflight's client (azure-core) reads a loopback HTTPS server
that answers with the recorded responses in testbed/fixtures/azure/ (Azure's documented shapes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components import plan
from components.config.checks import ConfigError
from components.config.parse import parse_config, raw_from_stack_file
from components.kueue.objects import build_objects
from components.preflight.arm import ArmClient, PreflightError, ProviderToken, cli_subscription
from components.preflight.check import STACK_TAG, PreflightFailed, decide, read
from components.preflight.quota import assess, capacity_markdown, clamped, parse_skus, parse_usages
from components.kueue.validate import validate_objects
from testbed.azure_fake import SUBSCRIPTION, Failure, FakeArm, managed_cluster, recorded
from testbed.harness import PROVIDER_TOKEN, ROOT, run_program
from testbed.loopback_tls import make_tls
from testbed.stacks import stack_file_config

DEV = stack_file_config("dev")
PROJECT_STACK = "kueue-aks/dev"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_tls(tmp_path_factory.mktemp("azure-tls"))


@pytest.fixture
def azure(tls: tuple[Path, Path]) -> Iterator[FakeArm]:
    """Loopback Azure with the recorded eastus2 subscription; the client points at it."""
    fake = FakeArm(*tls).recorded()
    with fake.serving():
        yield fake
    fake.stop()


def with_keys(base: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**base, **{f"kueue-aks:{k}": v for k, v in keys.items()}}


def parsed(config_map: dict[str, Any], stack: str = "dev") -> Any:
    raw, location = raw_from_stack_file({"config": config_map})
    return parse_config(raw, stack=stack, location=location)


def client() -> ArmClient:
    return ArmClient(ProviderToken(PROVIDER_TOKEN), SUBSCRIPTION, retries=2, timeout=2)


def nominal(run: Any, queue: str, flavor: str, resource: str) -> str:
    cq = next(
        r
        for r in run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
        if r.inputs["metadata"]["name"] == queue
    )
    for group in cq.inputs["spec"]["resourceGroups"]:
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next(r["nominalQuota"] for r in f["resources"] if r["name"] == resource)
    raise AssertionError(f"no {flavor}/{resource} in {queue}")


# --- the program at preview ----------------------------------------------------------------------


def test_preflight_a_gpu_pool_beyond_its_family_quota_fails_at_preview_naming_it(azure: FakeArm) -> None:
    with pytest.raises(pulumi.RunError) as err:
        run_program(DEV, preview=True, azure=azure)
    text = str(err.value)
    assert "kueue-aks:nodePools[1].maxCount" in text
    for fact in (
        "pool gpu",
        "Standard_NC4as_T4_v3",
        "standardNCASv3_T4Family",
        "need",
        "12 vCPUs",
        "8 are free",
        "limit 8",
        "az quota update --resource-name standardNCASv3_T4Family",
        "--limit-object value=12",
        "gpu to 2",
        "quotaPolicy: clamp",
    ):
        assert fact in text, (fact, text)
    # The CPU pools fit (36 of 350 DSv5 vCPUs in use): only the GPU pool is named.
    assert "pool cpu" not in text and "pools cpu" not in text
    # Azure was read with the provider's own token.
    assert azure.requests and all(auth == f"Bearer {PROVIDER_TOKEN}" for _, auth in azure.requests)


def test_preflight_fails_before_any_resource_is_registered(azure: FakeArm) -> None:
    from pulumi.runtime.settings import SETTINGS  # the mock monitor of the last run

    with pytest.raises(pulumi.RunError):
        run_program(DEV, azure=azure)
    assert not [r.type for r in SETTINGS.monitor.registrations]


def test_preflight_clamp_shrinks_the_gpu_quotas_to_what_fits_and_they_still_validate(azure: FakeArm) -> None:
    config_map = with_keys(DEV, preflight={"quotaPolicy": "clamp"})
    run = run_program(config_map, preview=True, azure=azure)
    config = parsed(config_map)
    # 8 free T4-family vCPUs hold 2 of the 3 NC4as_T4_v3 nodes: Kueue counts 2 GPUs, not 3.
    gpu = config.pool("gpu")
    two = clamped(config, {"gpu": 2, "cpu": 4, "tas": 1}).pool("gpu")
    assert two.capacity_nodes == 2 and two.capacity.gpus == 2 * gpu.allocatable.gpus
    cq_gpu = sum(int(nominal(run, team, "gpu", "nvidia.com/gpu")) for team in ("research", "platform"))
    assert cq_gpu <= 2 < gpu.capacity.gpus
    # The pool itself keeps maxCount 3 (the quota may be raised later).
    pool = run.one("azure-native:containerservice:AgentPool", "kueue-gpu")
    assert pool.inputs["maxCount"] == 3
    # The clamped objects pass the same validator.
    validate_objects(build_objects(clamped(config, {"gpu": 2})))


def test_preflight_warn_keeps_the_quotas_and_says_why(azure: FakeArm) -> None:
    config = parsed(with_keys(DEV, preflight={"quotaPolicy": "warn"}))
    built, notes = decide(config, read(config, client(), PROJECT_STACK))
    assert built == config and len(notes) == 1
    assert "pool gpu" in notes[0] and "quotaPolicy: warn" in notes[0]
    run_program(with_keys(DEV, preflight={"quotaPolicy": "warn"}), preview=True, azure=azure)


def test_preflight_a_size_restricted_in_zone_3_fails_naming_pool_size_and_zone(azure: FakeArm) -> None:
    config_map = with_keys(
        DEV,
        cluster={"tier": "Free", "zones": ["1", "3"], "systemPool": {"vmSize": "Standard_D4s_v5", "count": 1}},
        preflight={"quotaPolicy": "clamp"},
    )
    with pytest.raises(pulumi.RunError) as err:
        run_program(config_map, preview=True, azure=azure)
    text = str(err.value)
    assert "kueue-aks:cluster.zones: pool gpu: Standard_NC4as_T4_v3 is restricted there" in text
    assert "zone 3 of eastus2" in text and "NotAvailableForSubscription" in text
    assert "zone 1" not in text  # zone 1 is offered


def test_preflight_a_size_offered_only_in_some_zones_and_not_as_spot(azure: FakeArm) -> None:
    pools = [{"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 1, "spot": True}]
    config = parsed(with_keys(DEV, nodePools=pools, cluster={"zones": ["1", "2"]}))
    found = read(config, client(), PROJECT_STACK)
    messages = [str(p) for p in found.errors]
    assert any("pool a100: Standard_NC24ads_A100_v4 is not offered there: zone 1" in m for m in messages), messages
    assert any(m.startswith("kueue-aks:nodePools[0].spot:") and "cannot run as Spot" in m for m in messages), messages


@pytest.mark.parametrize(
    ("size", "says"),
    [
        ("Standard_ND96isr_H100_v5", "is restricted in eastus2 for this subscription (NotAvailableForSubscription)"),
        ("Standard_NC64as_T4_v3", "is not offered in eastus2"),
    ],
)
def test_preflight_a_size_the_region_does_not_give_is_an_error_whatever_the_policy(
    azure: FakeArm, size: str, says: str
) -> None:
    pools = [{"name": "big", "vmSize": size, "minCount": 0, "maxCount": 1}]
    with pytest.raises(pulumi.RunError) as err:
        run_program(with_keys(DEV, nodePools=pools, preflight={"quotaPolicy": "warn"}), preview=True, azure=azure)
    assert f"kueue-aks:nodePools[0].vmSize: pool big: {size} {says}" in str(err.value)


def test_preflight_a_running_stack_does_not_count_its_own_nodes_twice(azure: FakeArm) -> None:
    # A running stack whose GPU pool already has 2 nodes: usage shows them (8 of 8 in use), yet
    # the stack needs only 4 more vCPUs than it holds... which still do not fit. With the quota
    # raised to 12 and those 8 counted as the stack's own, it fits.
    for usage in azure.usages:
        if usage["name"]["value"] == "standardNCASv3_T4Family":
            usage.update(currentValue=8, limit=12)
    config = parsed(DEV)
    mine = managed_cluster(
        "kueue-rg123",
        "kueue-dev",
        [("system", "Standard_D4s_v5", 1, False), ("gpu", "Standard_NC4as_T4_v3", 2, False)],
        tags={STACK_TAG: PROJECT_STACK},
    )
    other = managed_cluster(
        "other-rg", "kueue-dev", [("gpu", "Standard_NC4as_T4_v3", 2, False)], tags={STACK_TAG: "kueue-aks/prod"}
    )
    azure.clusters = [other]
    assert [str(p) for p in read(config, client(), PROJECT_STACK).shortfalls]  # 8 used by someone else
    azure.clusters = [other, mine]
    found = read(config, client(), PROJECT_STACK)
    assert not found.shortfalls and not found.errors, found
    row = next(r for r in found.rows if r.pool == "gpu")
    assert (row.cores_at_max, row.quota_free, row.fits_nodes) == (12, 12, 3)


def test_preflight_minimum_nodes_that_do_not_fit_are_an_error_even_with_clamp(azure: FakeArm) -> None:
    pools = [{"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "minCount": 3, "maxCount": 3}]
    config = parsed(with_keys(DEV, nodePools=pools, preflight={"quotaPolicy": "clamp"}))
    found = read(config, client(), PROJECT_STACK)
    assert any("even minCount" in p.message for p in found.errors), found.errors
    with pytest.raises(PreflightFailed):
        decide(config, found)


def test_preflight_spot_pools_draw_on_the_low_priority_quota(azure: FakeArm) -> None:
    pools = [{"name": "spot", "vmSize": "Standard_D16s_v5", "minCount": 0, "maxCount": 2, "spot": True}]
    config = parsed(with_keys(DEV, nodePools=pools))
    found = read(config, client(), PROJECT_STACK)
    (shortfall,) = found.shortfalls
    assert "Total Regional Low-priority vCPUs" in shortfall.message and "32 vCPUs" in shortfall.message
    assert (
        "--resource-name lowPriorityCores" in shortfall.message and "--resource-type lowPriority" in shortfall.message
    )
    assert found.fits["spot"] == 1


def test_preflight_the_system_pool_and_user_pools_share_the_regional_quota(azure: FakeArm) -> None:
    for usage in azure.usages:
        if usage["name"]["value"] == "cores":
            usage.update(currentValue=300, limit=350)
    found = read(parsed(DEV), client(), PROJECT_STACK)
    regional = [p for p in found.shortfalls if "Total Regional vCPUs" in p.message]
    assert regional and regional[0].path == "kueue-aks:nodePools"
    assert "pools system, cpu, gpu, tas together" in regional[0].message


def test_preflight_existing_cluster_counts_its_pools_and_not_its_system_pool(azure: FakeArm) -> None:
    config_map = with_keys(
        DEV, cluster={"existing": {"resourceGroup": "their-rg", "name": "their-aks"}}, monitoring={"enabled": False}
    )
    config = parsed(config_map)
    azure.clusters = [
        managed_cluster(
            "their-rg",
            "their-aks",
            [("system", "Standard_D4s_v5", 3, False), ("gpu", "Standard_NC4as_T4_v3", 1, False)],
        )
    ]
    for usage in azure.usages:
        if usage["name"]["value"] == "standardNCASv3_T4Family":
            usage.update(currentValue=4, limit=12)
    found = read(config, client(), PROJECT_STACK)
    assert [r.pool for r in found.rows] == ["cpu", "gpu", "tas"] and not found.shortfalls
    azure.clusters = []
    with pytest.raises(PreflightError, match="cluster.existing their-rg/their-aks is not in subscription"):
        read(config, client(), PROJECT_STACK)


# --- Azure's failures ------------------------------------------------------------------------------


def test_preflight_an_identity_without_read_rights_gets_the_roles_and_the_way_to_skip(azure: FakeArm) -> None:
    azure.fail["usages"] = Failure(
        403,
        1,
        body={
            "error": {
                "code": "AuthorizationFailed",
                "message": "does not have authorization to perform action 'Microsoft.Compute/locations/usages/read'",
            }
        },
    )
    with pytest.raises(pulumi.RunError) as err:
        run_program(DEV, preview=True, azure=azure)
    text = str(err.value)
    assert text.startswith("preflight: the identity that deploys cannot read vCPU usage (eastus2)")
    assert "HTTP 403 AuthorizationFailed" in text and "Microsoft.Compute/locations/usages/read" in text
    assert "Reader" in text and "kueue-aks:preflight.enabled false" in text
    assert PROVIDER_TOKEN not in text


def test_preflight_throttling_is_retried_after_retry_after(azure: FakeArm) -> None:
    azure.fail["skus"] = Failure(429, 1, headers={"Retry-After": "1"})
    found = read(parsed(DEV), client(), PROJECT_STACK)
    assert found.rows and sum("/skus" in path for path, _ in azure.requests) == 2


def test_preflight_throttling_that_does_not_stop_says_so(azure: FakeArm) -> None:
    azure.fail["skus"] = Failure(429, 10, headers={"Retry-After": "1"})
    with pytest.raises(PreflightError) as err:
        read(parsed(DEV), client(), PROJECT_STACK)
    assert "throttled the VM sizes (eastus2) request (HTTP 429)" in str(err.value)
    assert "wait 1 s" in str(err.value) and "preflight.enabled false" in str(err.value)


def test_preflight_a_timeout_is_a_clear_error(azure: FakeArm) -> None:
    azure.delay["managedClusters"] = 4
    with pytest.raises(PreflightError) as err:
        read(parsed(DEV), ArmClient(ProviderToken(PROVIDER_TOKEN), SUBSCRIPTION, retries=0, timeout=1), PROJECT_STACK)
    assert "did not answer the AKS clusters request within 1 s" in str(err.value)
    assert "preflight.enabled false" in str(err.value)


def test_preflight_reads_every_page(azure: FakeArm) -> None:
    azure.page_size = 2
    found = read(parsed(DEV), client(), PROJECT_STACK)
    assert found.shortfalls  # the T4 family is on the last page of the usages
    assert sum("page=" in path for path, _ in azure.requests) >= 4


# --- skipping, modes, config ----------------------------------------------------------------------


def test_preflight_can_be_skipped_and_then_reads_nothing(azure: FakeArm) -> None:
    run_program(with_keys(DEV, preflight={"enabled": False}), preview=True, azure=azure)
    assert azure.requests == []


def test_preflight_a_kubeconfig_cluster_reads_no_azure(azure: FakeArm, tmp_path: Path) -> None:
    kubeconfig = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
    )
    config_map = {
        k: v for k, v in with_keys(DEV, cluster={"kubeconfig": kubeconfig}).items() if k != "azure-native:location"
    }
    config_map.pop("kueue-aks:monitoring", None)
    # Pulumi.yaml's declared default (enabled: true) reaches this stack too: still nothing is read.
    run_program({**config_map, "kueue-aks:preflight": {"enabled": True}}, preview=True, azure=azure)
    assert azure.requests == []


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"quotaPolicy": "shrink"}, "kueue-aks:preflight.quotaPolicy"),
        ({"enabled": "yes"}, "kueue-aks:preflight.enabled"),
        ({"policy": "warn"}, "kueue-aks:preflight.policy"),
    ],
)
def test_preflight_config_mistakes_name_the_key(value: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parsed(with_keys(DEV, preflight=value))
    assert path in [p.path for p in err.value.problems]
    if "quotaPolicy" in value:
        assert "one of: error | warn | clamp" in str(err.value)


def test_preflight_the_cluster_carries_the_tag_a_later_preview_finds_it_by() -> None:
    run = run_program(DEV, preview=True)
    assert run.one("azure-native:containerservice:ManagedCluster").inputs["tags"] == {STACK_TAG: PROJECT_STACK}


# --- pure parts ------------------------------------------------------------------------------------


def test_preflight_parsers_read_azures_shapes() -> None:
    usages = parse_usages(recorded("usages-eastus2.json")["value"])
    assert usages["standardncasv3_t4family"].limit == 8 and usages["lowprioritycores"].name == "lowPriorityCores"
    offers = parse_skus(recorded("skus-eastus2.json")["value"], "EastUS2")
    assert "premium_lrs" not in offers  # a disk, not a VM size
    t4 = offers["standard_nc4as_t4_v3"]
    assert (t4.family, t4.vcpus, t4.zone_restrictions, t4.location_restriction) == (
        "standardNCASv3_T4Family",
        4,
        {"3": "NotAvailableForSubscription"},
        None,
    )
    assert offers["standard_nd96isr_h100_v5"].location_restriction == "NotAvailableForSubscription"
    assert not offers["standard_nc24ads_a100_v4"].low_priority


def test_preflight_clamp_splits_a_shared_quota_fairly() -> None:
    pools = [
        {"name": "a", "vmSize": "Standard_NC4as_T4_v3", "minCount": 0, "maxCount": 4},
        {"name": "b", "vmSize": "Standard_NC4as_T4_v3", "minCount": 1, "maxCount": 4},
    ]
    config = parsed(with_keys(DEV, nodePools=pools, teams=[{"name": "research", "share": 100}]))
    found = assess(
        config,
        parse_usages(recorded("usages-eastus2.json")["value"]),
        parse_skus(recorded("skus-eastus2.json")["value"], "eastus2"),
        (),
        SUBSCRIPTION,
    )
    assert found.fits == {"a": 1, "b": 1}  # 8 vCPUs: b's minimum node, then one each in turn
    (shortfall,) = found.shortfalls
    assert shortfall.path == "kueue-aks:nodePools" and "pools a, b together" in shortfall.message
    table = capacity_markdown(found)
    assert (
        "| a | Standard_NC4as_T4_v3 | standardNCASv3_T4Family | Standard NCASv3_T4 Family vCPUs | 16 | 8 | 1 of 4 |"
        in table
    )


# --- the plan command ------------------------------------------------------------------------------


class _Credential:
    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        assert scopes == ("https://management.azure.com/.default",)
        return AccessToken("plan-token", 2**31)


def test_preflight_the_plan_prints_the_capacity_table(
    azure: FakeArm, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", _Credential)
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(
        yaml.safe_dump({"config": with_keys(DEV, preflight={"quotaPolicy": "clamp"})})
    )
    assert plan.main(["--stack", "dev", "--root", str(tmp_path), "--azure", "--subscription", SUBSCRIPTION]) == 0
    out = capsys.readouterr()
    assert "| pool | VM size | family | quota | vCPUs at maxCount | quota free | nodes that fit |" in out.out
    assert (
        "| gpu | Standard_NC4as_T4_v3 | standardNCASv3_T4Family | Standard NCASv3_T4 Family vCPUs | 12 | 8 | 2 of 3 |"
        in out.out
    )
    assert "Kueue's quotas count 2 of its 3 nodes" in out.err
    assert "| gpu | 0–3, autoscaled; Kueue counts 2 (Azure's vCPU quota, quotaPolicy clamp) |" in out.out
    assert all(auth == "Bearer plan-token" for _, auth in azure.requests)
    # Under the default policy the same shortfall is exit 5.
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": DEV}))
    assert plan.main(["--stack", "dev", "--root", str(tmp_path), "--azure", "--subscription", SUBSCRIPTION]) == 5
    assert "pool gpu" in capsys.readouterr().err
    # Without --azure nothing is read.
    before = len(azure.requests)
    assert plan.main(["--stack", "dev", "--root", str(tmp_path)]) == 0
    assert len(azure.requests) == before and "pass --azure" in capsys.readouterr().out


class _NoLogin:
    """DefaultAzureCredential on a machine with no login: every credential it tries fails."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.exceptions import ClientAuthenticationError

        raise ClientAuthenticationError(
            "DefaultAzureCredential failed to retrieve a token from the included credentials."
            "\nAttempted credentials:\n\tEnvironmentCredential: not configured"
            "\n\tAzureCliCredential: Please run 'az login' to set up an account\n\t..."
        )


def test_the_plan_without_a_login_says_to_run_az_login_in_one_line(
    azure: FakeArm, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", _NoLogin)
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": DEV}))
    assert plan.main(["--stack", "dev", "--root", str(tmp_path), "--azure", "--subscription", SUBSCRIPTION]) == 5
    err = capsys.readouterr().err
    print(err)
    assert err.startswith("error: preflight: not signed in to Azure: run `az login`")
    assert len(err.strip().splitlines()) == 1 and "Attempted credentials" not in err
    assert not azure.requests


def test_the_plan_finds_the_subscription_az_login_chose(tmp_path: Path) -> None:
    """`az login` alone: the Azure CLI's profile, with the byte order mark the CLI writes."""
    profile = {
        "subscriptions": [
            {"id": "11111111-0000-0000-0000-000000000000", "isDefault": False},
            {"id": "22222222-0000-0000-0000-000000000000", "isDefault": True},
        ]
    }
    (tmp_path / "azureProfile.json").write_text(json.dumps(profile), encoding="utf-8-sig")
    assert cli_subscription({"AZURE_CONFIG_DIR": str(tmp_path)}) == "22222222-0000-0000-0000-000000000000"
    assert cli_subscription({"HOME": str(tmp_path / "nobody")}) is None  # never logged in
    (tmp_path / "azureProfile.json").write_text('{"subscriptions": [{"id": "x", "isDefault": false}]}')
    assert cli_subscription({"AZURE_CONFIG_DIR": str(tmp_path)}) is None  # no default
