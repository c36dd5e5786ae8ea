"""Every ARM request the program makes, checked against Azure's REST API specs (issue 50, item 3).

Each stack the tests know (testbed/stacks.py) is run once under the mocks. Every Azure resource registered is turned into the
request azure-native would send and checked strictly (testbed/arm_specs.py); so are the mocks'
own outputs and invoke results, and the preflight's reads of the loopback Azure.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from pulumi.runtime import MockCallArgs, MockResourceArgs

from testbed.arm_specs import EXTENSION_SPEC, INVOKES, PREFLIGHT, RESOURCES, STAND_IN_VERSIONS, arm_specs
from testbed.azure_fake import extension, recorded
from testbed.harness import ProgramMocks, Registration
from testbed.stacks import SHAPES, stack_run

GOLDEN = Path(__file__).resolve().parent / "golden"
CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
RULE = "azure-native:monitor:DataCollectionRule"
ASSOCIATION = "azure-native:monitor:DataCollectionRuleAssociation"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"


def label(registration: Registration) -> str:
    return f"{registration.type.rsplit(':', 1)[1]} {registration.name}"


def request_problems(registration: Registration, inputs: dict[str, Any] | None = None) -> list[str]:
    problems = arm_specs().request_problems(registration.type, registration.inputs if inputs is None else inputs)
    return [f"{label(registration)}: {p}" for p in problems]


# --- every stack and mode -------------------------------------------------------------------


@pytest.mark.parametrize("name", SHAPES)
def test_every_azure_request_is_one_azure_accepts(name: str) -> None:
    found = stack_run(name).azure()
    assert bool(found) == (SHAPES[name].mode != "kubeconfig"), "Azure resources exist in create and existing modes only"
    assert [p for r in found for p in request_problems(r)] == []


def test_every_resource_type_is_checked_on_some_stack() -> None:
    checked = {r.type for name in SHAPES for r in stack_run(name).azure()}
    assert checked == set(RESOURCES)


@pytest.mark.parametrize("name", SHAPES)
def test_the_mocks_return_only_what_azure_does(name: str) -> None:
    """A resource's state and an invoke's result as the mocks give them: only fields of the
    operation's answer, at their paths (so a test cannot pass on a field Azure never sends)."""
    stack = stack_run(name)
    replay = ProgramMocks(stacks=stack.mocks.stacks)  # the run's mocks again, so that the run's record stays as it was
    replay.config_map = stack.mocks.config_map
    problems = []
    for r in stack.azure():
        _, state = replay.new_resource(MockResourceArgs(r.type, r.name, r.inputs))
        problems += [f"{label(r)}: {p}" for p in mock_state_problems(r.type, state)]
    for token, args in stack.run.invoke_args:
        if token in INVOKES:
            result = replay.call(MockCallArgs(token, args, ""))
            problems += [f"{token}: {p}" for p in arm_specs().output_problems(INVOKES[token], result)]
    assert problems == []


def mock_state_problems(token: str, state: dict[str, Any]) -> list[str]:
    """The state a mock returns for a resource, but for the path parameters (they are inputs of
    the URL, not fields of the answer)."""
    operation = RESOURCES[token]
    path = {p["name"] for _, p in arm_specs().specs.parameters(operation) if p["in"] == "path"}
    return arm_specs().output_problems(operation, {k: v for k, v in state.items() if k not in path})


@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if s.mode != "kubeconfig"])
def test_the_preflight_reads_what_the_specs_describe(name: str) -> None:
    """Each read the preflight made is a GET of the specs at their API version, and the loopback
    Azure answered it in the shape of the spec's answer."""
    specs = arm_specs()
    reads = stack_run(name).preflight
    assert reads, "the preflight read nothing"
    for path, answer in reads:
        route, _, query = path.partition("?")
        operation = specs.preflight_operation(route)
        assert operation, f"{route} is no path of {[o.path for o in PREFLIGHT]}"
        version = STAND_IN_VERSIONS.get(operation.spec, specs.specs.api_version(operation.spec))
        assert f"api-version={version}" in query, (path, version)
        assert specs.response_problems(operation, answer) == [], path


def test_the_request_is_the_one_the_provider_sends() -> None:
    """Path parameters in the URL (a scope as it is), the rest in the body, flattened inputs back
    under `properties`; the name azure-native makes up is left to it."""
    specs, dev = arm_specs(), stack_run("dev").run
    cluster = specs.request(CLUSTER, dev.one(CLUSTER).inputs)
    assert cluster.method == "PUT"
    assert cluster.url == (
        "/subscriptions/{subscriptionId}/resourceGroups/kueue-rg-rg123/providers/"
        "Microsoft.ContainerService/managedClusters/kueue-dev?api-version=2025-09-01"
    )
    assert (cluster.body["location"], cluster.body["properties"]["dnsPrefix"]) == ("eastus2", "kueue-dev")
    assert "resourceName" not in cluster.body and "dnsPrefix" not in cluster.body
    association = specs.request(ASSOCIATION, dev.one(ASSOCIATION).inputs)
    assert association.url == (
        "/kueue-aks_id/providers/Microsoft.Insights/dataCollectionRuleAssociations/"
        "MSProm-eastus2-kueue-dev?api-version=2022-06-01"
    )
    assert association.body == {"properties": {"dataCollectionRuleId": "monitoring-dcr_id", "description": ANY}}
    workspace = specs.request(WORKSPACE, dev.one(WORKSPACE).inputs)
    assert (workspace.autonamed, workspace.body) == ("azureMonitorWorkspaceName", {"location": "eastus2"})


def test_the_2023_05_01_extensions_spec_reaches_common_types() -> None:
    """Its seven-../ references (SOURCE.md's known dangling ref) land on specification/common-types."""
    seven_up = "../../../../../../../common-types/resource-management/v2/types.json#/definitions/ProxyResource"
    spec, _, node = arm_specs().specs.resolve(EXTENSION_SPEC, seven_up)
    assert spec == "specification/common-types/resource-management/v2/types.json" and "allOf" in node


# --- the check can fail, with the property's path ---------------------------------------------


def _changed(inputs: dict[str, Any], path: str, change: Callable[[dict[str, Any], str], None]) -> dict[str, Any]:
    """A copy of `inputs` with `change` made to the key at `path` (dots, [i] for items) of its parent."""
    changed = copy.deepcopy(inputs)
    *parents, key = [int(p) if p.isdigit() else p for p in path.replace("[", ".").replace("]", "").split(".")]
    parent = changed
    for part in parents:
        parent = parent[part]
    change(parent, key)
    return changed


def _set(value: Any) -> Callable[[dict[str, Any], str], None]:
    return lambda parent, key: parent.__setitem__(key, value)


def _rename(new: str) -> Callable[[dict[str, Any], str], None]:
    return lambda parent, key: parent.__setitem__(new, parent.pop(key))


# case -> (resource, its name in the dev stack, path in the inputs, change, what the problem starts with)
BROKEN = {
    "misspelled": (
        CLUSTER,
        "kueue-aks",
        "agentPoolProfiles[0].vmSize",
        _rename("vmSise"),
        "properties.agentPoolProfiles[0].vmSise: is not a property Azure knows here (did you mean 'vmSize'?)",
    ),
    "read-only": (
        CLUSTER,
        "kueue-aks",
        "fqdn",
        _set("kueue-dev.hcp.eastus2.azmk8s.io"),
        "properties.fqdn: is read-only: Azure sets it, a request must not",
    ),
    "read-only-nested": (
        CLUSTER,
        "kueue-aks",
        "agentPoolProfiles[0].provisioningState",
        _set("Succeeded"),
        "properties.agentPoolProfiles[0].provisioningState: is read-only",
    ),
    "bad-enum": (
        CLUSTER,
        "kueue-aks",
        "networkProfile.networkPlugin",
        _set("calico"),
        "properties.networkProfile.networkPlugin: 'calico' is not one of ['azure', 'kubenet', 'none']",
    ),
    "required": (
        CLUSTER,
        "kueue-aks",
        "agentPoolProfiles[0].name",
        lambda parent, key: parent.pop(key),
        "properties.agentPoolProfiles[0].name: is required",
    ),
    "pattern": (
        CLUSTER,
        "kueue-aks",
        "agentPoolProfiles[0].name",
        _set("System_1"),
        "properties.agentPoolProfiles[0].name: 'System_1' does not match '^[a-z][a-z0-9]{0,11}$'",
    ),
    "range": (
        POOL,
        "kueue-cpu",
        "osDiskSizeGB",
        _set(4096),
        "properties.osDiskSizeGB: 4096 is greater than the maximum of 2048",
    ),
    "int32": (
        POOL,
        "kueue-cpu",
        "maxCount",
        _set(2**31),
        "properties.maxCount: 2147483648 is greater than the maximum of 2147483647",
    ),
    # Only the one documented value is let into the open enum (specs.OPEN_ENUM_VALUES).
    "open-enum": (
        RULE,
        "monitoring-dcr",
        "dataFlows[0].streams[0]",
        _set("Microsoft-PrometheusMetric"),
        "properties.dataFlows[0].streams[0]: 'Microsoft-PrometheusMetric' is not one of",
    ),
    "type": (
        RULE,
        "monitoring-dcr",
        "dataFlows[0].streams",
        _set("Microsoft-PrometheusMetrics"),
        "properties.dataFlows[0].streams: 'Microsoft-PrometheusMetrics' is not of type 'array'",
    ),
    "path-parameter": (
        POOL,
        "kueue-cpu",
        "agentPoolName",
        _set("CPU_pool"),
        "{agentPoolName}: 'CPU_pool' does not match '^[a-z][a-z0-9]{0,11}$'",
    ),
    "missing-path-parameter": (
        POOL,
        "kueue-cpu",
        "resourceName",
        lambda parent, key: parent.pop(key),
        "{resourceName}: is required",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_body_fails_with_the_propertys_path(case: str) -> None:
    token, name, path, change, expected = BROKEN[case]
    registration = stack_run("dev").run.one(token, name)
    assert request_problems(registration) == []
    problems = request_problems(registration, _changed(registration.inputs, path, change))
    assert len(problems) == 1 and problems[0].startswith(f"{label(registration)}: {expected}"), problems


def test_a_misspelled_mock_field_fails() -> None:
    """The mock's issuerURL as issuerUrl (azure-native's getter reads issuerURL: the SDK would see nothing)."""
    state = {"oidcIssuerProfile": {"enabled": True, "issuerUrl": "https://oidc.example.invalid/issuer/"}}
    assert mock_state_problems(CLUSTER, state) == [
        "properties.oidcIssuerProfile.issuerUrl: is not a property Azure knows here (did you mean 'issuerURL'?)"
    ]
    result = {"properties": {"endpoint": "https://g.example.invalid"}, "identity": {"principalID": "x"}}
    assert arm_specs().output_problems(INVOKES["azure-native:dashboard:getGrafana"], result) == [
        "identity.principalID: is not a property Azure knows here (did you mean 'principalId'?)"
    ]


# --- golden cases: the specs' own examples --------------------------------------------------

GOLDEN_CASES = sorted(GOLDEN.glob("*.json"))


def golden(path: Path) -> tuple[str, Any]:
    """A golden body and the token of its resource: the file is named <Resource>.<example>.json."""
    kind = path.name.split(".", 1)[0]
    return next(t for t in RESOURCES if t.endswith(f":{kind}")), json.loads(path.read_text())


@pytest.mark.parametrize("path", GOLDEN_CASES, ids=[p.stem for p in GOLDEN_CASES])
def test_the_specs_own_examples_pass_and_fail_when_broken(path: Path) -> None:
    token, body = golden(path)
    operation = RESOURCES[token]
    assert arm_specs().body_problems(operation, body) == []
    first = next(iter(body))
    broken = {f"{first}x" if key == first else key: value for key, value in body.items()}
    # Named where it is (a required key so misspelled is missing as well).
    expected = f"{first}x: is not a property Azure knows here (did you mean {first!r}?)"
    assert expected in arm_specs().body_problems(operation, broken)


def test_every_resource_type_has_a_golden_case_but_the_resource_group() -> None:
    assert {golden(p)[0] for p in GOLDEN_CASES} == set(RESOURCES) - {"azure-native:resources:ResourceGroup"}


# --- the preflight's recorded answers -------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "answer"),
    [
        (PREFLIGHT[0], recorded("usages-eastus2.json")),
        (PREFLIGHT[1], recorded("skus-eastus2.json")),
        (
            PREFLIGHT[4],
            {
                "value": [
                    extension(
                        "rg",
                        "aks1",
                        "kueue",
                        "microsoft.kueue",
                        version="0.19.6-aks.0.4.4",
                        current_version="0.19.6-aks.0.4.4",
                        namespace="kueue-system",
                    )
                ]
            },
        ),
    ],
    ids=["usages", "skus", "extensions"],
)
def test_the_loopback_azures_recorded_answers_are_azures_shape(operation: Any, answer: Any) -> None:
    assert arm_specs().response_problems(operation, answer) == []
