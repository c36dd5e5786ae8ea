"""KueueInstallation and NvidiaDevicePlugin under Pulumi mocks, and the webhook-retry decision.

Mocks record what the program registers (inputs, parent, provider, dependencies); resource hooks
do not run under mocks, so the retry predicate, decision and hook body are tested as functions.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pulumi.runtime import rpc

from components.facts.device_plugin import DEVICE_PLUGIN_CHART, DEVICE_PLUGIN_VERSION
from components.gpu import values as device_plugin_values
from components.assembly import KUEUE, stack_parts
from components.kueue import install as kueue
from components.kueue.objects import queue_set
from components.config.names import KUEUE_NAMESPACE
from components.config.stack import StackConfig
from components.config.kueue import DEFAULT_KUEUE_CHART
from components.kueue.values import KUEUE_WEBHOOK_SERVICE, kueue_helm_values
from components.kueue.policies import AGGREGATED_ROLE_GUARD
from testbed.harness import ProgramMocks, ProgramRun, RecordingMonitor, Registration, run_program
from testbed.stacks import load_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
POOL = "azure-native:containerservice:AgentPool"
KUEUE_COMPONENT = "kueue-aks:kueue:KueueInstallation"
PLUGIN_COMPONENT = "kueue-aks:gpu:NvidiaDevicePlugin"
ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
ADMISSION_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


@pytest.fixture(scope="module")
def dev_map() -> dict[str, Any]:
    return yaml.safe_load(open("Pulumi.dev.yaml"))["config"]


@pytest.fixture(scope="module")
def dev_run(dev_map: dict[str, Any]) -> ProgramRun:
    return run_program(dev_map)


@pytest.fixture(scope="module")
def cpu_only_map(dev_map: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(dev_map)
    config["kueue-aks:nodePools"] = [p for p in config["kueue-aks:nodePools"] if p["name"] == "cpu"]
    config["kueue-aks:teams"] = [{"name": "research", "share": 100}]
    return config


def kueue_release(run: ProgramRun) -> Registration:
    return run.one(RELEASE, "kueue-release")


def upstream(run: ProgramRun, reg: Registration) -> set[str]:
    """URNs `reg` waits for, transitively: dependencies, property dependencies, provider, parent."""
    by_urn = {r.urn: r for r in run.registrations}
    seen: set[str] = set()
    todo = [reg]
    while todo:
        current = todo.pop()
        edges: Iterable[str] = [
            *current.dependencies,
            *(u for urns in current.property_dependencies.values() for u in urns),
            *([current.provider.rsplit("::", 1)[0]] if current.provider else []),
            *([current.parent] if current.parent else []),
        ]
        for urn in edges:
            if urn not in seen and urn in by_urn:
                seen.add(urn)
                todo.append(by_urn[urn])
    return seen


# --- the Kueue release ----------------------------------------------------------------------


def test_release_is_the_pinned_official_chart_awaited(dev_run: ProgramRun, dev_map: dict[str, Any]) -> None:
    inputs = kueue_release(dev_run).inputs
    assert inputs["chart"] == DEFAULT_KUEUE_CHART
    assert inputs["version"] == "0.19.2"
    assert inputs["name"] == "kueue"
    assert inputs["namespace"] == KUEUE_NAMESPACE
    assert inputs["skipAwait"] is False
    assert inputs["timeout"] >= 600
    assert inputs["atomic"] is True and inputs["cleanupOnFail"] is True
    assert "createNamespace" not in inputs
    assert inputs["values"] == kueue_helm_values(load_stack(dev_map))


def test_release_version_follows_config(dev_map: dict[str, Any]) -> None:
    config = copy.deepcopy(dev_map)
    config["kueue-aks:kueue"] = {"version": "0.19.2", "replicas": 3}
    run = run_program(config)
    inputs = kueue_release(run).inputs
    assert inputs["version"] == "0.19.2"
    assert inputs["values"]["controllerManager"]["replicas"] == 3
    assert run.exports["kueueVersion"] == "0.19.2"


def test_namespace_is_a_resource_of_the_component(dev_run: ProgramRun) -> None:
    component = dev_run.one(KUEUE_COMPONENT)
    namespace = dev_run.one(NAMESPACE, "kueue-ns")
    release = kueue_release(dev_run)
    assert namespace.inputs["metadata"]["name"] == KUEUE_NAMESPACE
    assert namespace.parent == release.parent == component.urn
    # The release takes its namespace from the Namespace resource: a dependency edge.
    assert release.property_dependencies["namespace"] == [namespace.urn]
    assert dev_run.exports["kueueNamespace"] == KUEUE_NAMESPACE


def test_release_depends_on_the_aggregated_role_guard(dev_run: ProgramRun) -> None:
    # Created before the release and so deleted after it: Helm's uninstall wait needs the guard.
    component = dev_run.one(KUEUE_COMPONENT)
    # By name: with governance on (the dev stack) the PoolGuard registers a policy and binding too.
    policy = dev_run.one(ADMISSION_POLICY, "kueue-role-guard")
    binding = dev_run.one(ADMISSION_BINDING, "kueue-role-guard-binding")
    assert policy.parent == binding.parent == component.urn
    assert policy.urn in binding.dependencies
    assert {policy.urn, binding.urn} <= set(kueue_release(dev_run).dependencies)
    assert policy.inputs["metadata"]["name"] == AGGREGATED_ROLE_GUARD
    assert binding.inputs["spec"]["policyName"] == policy.inputs["metadata"]["name"]
    # The pool guard is not the release's business: Kueue's install neither waits for it nor owns it.
    pool_guard = dev_run.one(ADMISSION_POLICY, "governance-policy")
    assert pool_guard.parent != component.urn
    assert pool_guard.urn not in upstream(dev_run, kueue_release(dev_run))


def test_children_use_the_cluster_provider(dev_run: ProgramRun) -> None:
    provider = dev_run.one("pulumi:providers:kubernetes")
    for reg in (kueue_release(dev_run), dev_run.one(NAMESPACE, "kueue-ns")):
        assert reg.provider.rsplit("::", 1)[0] == provider.urn


def test_release_waits_for_the_cluster_and_only_the_provisioning_pools(dev_run: ProgramRun) -> None:
    waits_for = upstream(dev_run, kueue_release(dev_run))
    pools = {r.name: r.urn for r in dev_run.of_type(POOL)}
    assert len(pools) == 3  # cpu, gpu and the topology-aware tas, all autoscaled
    # Kueue must find the ProvisioningRequest API when it starts, and AKS's autoscaler brings it
    # with the pools that use it (components/autoscaling/component.py); never the plain cpu pool.
    assert waits_for & set(pools.values()) == {pools["kueue-gpu"], pools["kueue-tas"]}
    # Positive control: the cluster is reached only through the provider's kubeconfig, so the
    # walk does follow provider edges transitively.
    assert dev_run.one("azure-native:containerservice:ManagedCluster").urn in waits_for
    assert dev_run.one("pulumi:providers:kubernetes").urn in waits_for


def test_dependency_walk_finds_a_pool_behind_the_provider() -> None:
    def reg(urn: str, deps: tuple[str, ...] = (), provider: str = "") -> Registration:
        return Registration(
            type="t",
            name=urn,
            urn=urn,
            parent="",
            custom=True,
            inputs={},
            dependencies=list(deps),
            property_dependencies={},
            ignore_changes=[],
            provider=provider,
            deleted_with="",
        )

    run = ProgramRun([reg("pool"), reg("provider", ("pool",)), reg("release", provider="provider::id")], {}, set())
    assert upstream(run, run.by_urn("release")) == {"provider", "pool"}


# --- the device plugin ----------------------------------------------------------------------


def test_device_plugin_release_is_pinned_and_runs_on_gpu_pools(dev_run: ProgramRun, dev_map: dict[str, Any]) -> None:
    component = dev_run.one(PLUGIN_COMPONENT)
    release = dev_run.one(RELEASE, "gpu-release")
    namespace = dev_run.one(NAMESPACE, "gpu-ns")
    assert release.parent == namespace.parent == component.urn
    inputs = release.inputs
    assert inputs["chart"] == DEVICE_PLUGIN_CHART == "nvidia-device-plugin"
    assert inputs["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert inputs["version"] == DEVICE_PLUGIN_VERSION
    assert inputs["namespace"] == namespace.inputs["metadata"]["name"] == "nvidia-device-plugin"
    assert release.property_dependencies["namespace"] == [namespace.urn]
    assert inputs["skipAwait"] is False and inputs["timeout"] >= 600
    assert inputs["values"] == device_plugin_values.device_plugin_values(load_stack(dev_map))
    assert not upstream(dev_run, release) & {r.urn for r in dev_run.of_type(POOL)}


def test_no_device_plugin_without_a_gpu_pool(cpu_only_map: dict[str, Any]) -> None:
    run = run_program(cpu_only_map)
    assert run.of_type(PLUGIN_COMPONENT) == []
    # Kueue and the job operators' releases; no device plugin.
    assert [r.name for r in run.of_type(RELEASE) if not r.name.startswith("operators-")] == ["kueue-release"]
    assert "nvidia-device-plugin" not in [r.inputs["metadata"]["name"] for r in run.of_type(NAMESPACE)]


# --- the ready dependency and the webhook-retry binding, on the component directly ----------


class HookRecordingMonitor(RecordingMonitor):
    """Also keeps each resource's on_error hook names and each component's registered outputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.on_error: dict[str, list[str]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self.on_error[request.name] = list(request.hooks.on_error)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        self.outputs[request.urn] = rpc.deserialize_properties(request.outputs)
        return super().RegisterResourceOutputs(request)


def test_kueue_objects_can_wait_for_ready_and_carry_the_retry_hook(dev_map: dict[str, Any]) -> None:
    config: StackConfig = load_stack(dev_map)
    mocks = ProgramMocks()
    monitor = HookRecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="kueue-aks", stack="dev", monitor=monitor)
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        part = next(p for p in stack_parts(config, queue_set(config)) if p.name == KUEUE)
        installation = kueue.KueueInstallation(
            "kueue", part, config=config, opts=pulumi.ResourceOptions(providers={"kubernetes": provider})
        )
        seen["installation"] = installation
        # What the queues component does with each Kueue object.
        flavor = k8s.apiextensions.CustomResource(
            "flavor",
            api_version="kueue.x-k8s.io/v1beta2",
            kind="ResourceFlavor",
            metadata={"name": "cpu"},
            spec={"nodeLabels": {"kubernetes.azure.com/agentpool": "cpu"}},
            opts=pulumi.ResourceOptions(
                provider=provider, depends_on=installation.ready, hooks=installation.webhook_retry
            ),
        )
        return pulumi.Output.all(flavor.urn, *(r.urn for r in installation.ready))

    program()
    installation = seen["installation"]
    assert [type(r) for r in installation.ready] == [k8s.helm.v3.Release]
    binding = installation.webhook_retry
    assert isinstance(binding, pulumi.ResourceHookBinding)
    [hook] = binding.on_error
    assert isinstance(hook, pulumi.ErrorHook) and hook.name == "kueue-webhook-retry"
    assert monitor.on_error["flavor"] == ["kueue-webhook-retry"]
    flavor = next(r for r in monitor.registrations if r.name == "flavor")
    release = next(r for r in monitor.registrations if r.name == "kueue-release")
    assert release.urn in flavor.dependencies
    # A real rejection is answered at once, without retrying (and without sleeping).
    denied = pulumi.ErrorHookArgs(
        "urn",
        "",
        "flavor",
        "t",
        failed_operation="create",
        errors=['admission webhook "vresourceflavor.kb.io" denied the request: bad'],
    )
    assert asyncio.run(hook(denied)) is False
    component = next(r for r in monitor.registrations if r.type == KUEUE_COMPONENT)
    outputs = monitor.outputs[component.urn]
    assert outputs["namespace"] == KUEUE_NAMESPACE and outputs["version"] == "0.19.2"
    assert outputs["releaseStatus"]["status"] == "deployed"


# --- the webhook race: predicate, decision, hook body ---------------------------------------

_URL = "https://kueue-webhook-service.kueue-system.svc:443/mutate-kueue-x-k8s-io-v1beta2-clusterqueue?timeout=10s"
NOT_READY = [
    # kubernetes-sigs/kueue#13036, verbatim.
    f'Internal error occurred: failed calling webhook "mclusterqueue.kb.io": failed to call webhook: Post "{_URL}": '
    "proxy error from localhost:9443 while dialing 10.244.0.7:9443, code 502: 502 Bad Gateway",
    f'Internal error occurred: failed calling webhook "mresourceflavor.kb.io": failed to call webhook: Post "{_URL}": '
    "dial tcp 10.0.112.7:443: connect: connection refused",
    f'Internal error occurred: failed calling webhook "vclusterqueue.kb.io": failed to call webhook: Post "{_URL}": '
    'no endpoints available for service "kueue-webhook-service"',
    f'Internal error occurred: failed calling webhook "mclusterqueue.kb.io": failed to call webhook: Post "{_URL}": '
    "tls: failed to verify certificate: x509: certificate signed by unknown authority",
    f"resource cq was not successfully created by the Kubernetes API server: Internal error occurred: failed calling "
    f'webhook "mclusterqueue.kb.io": failed to call webhook: Post "{_URL}": context deadline exceeded',
    # What the first `pulumi up` died of (docs/kueue.md#kueues-webhook-at-start-up); no transport list names it.
    f'Internal error occurred: failed calling webhook "mresourceflavor.kb.io": failed to call webhook: Post "{_URL}": EOF',
    # A v1beta1 read or write converted by Kueue's conversion webhook before it serves.
    "conversion webhook for kueue.x-k8s.io/v1beta2, Kind=ClusterQueue failed: Post "
    '"https://kueue-webhook-service.kueue-system.svc:443/convert?timeout=30s": dial tcp 10.0.1.2:443: connect: connection refused',
]
OTHER = [
    'admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[0].flavors[0].resources[0].name: '
    'Invalid value: "memory": must match the name in coveredResources',
    # Denied, even though the text also mentions the service and a transport word.
    f'admission webhook "vclusterqueue.kb.io" denied the request: {KUEUE_WEBHOOK_SERVICE} said connection refused',
    # Some other product's webhook is down: not Kueue's race.
    'Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: '
    'Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses": connection refused',
    'clusterqueues.kueue.x-k8s.io "research" already exists',
    'no matches for kind "ClusterQueue" in version "kueue.x-k8s.io/v1beta2"',
    "",
]


@pytest.mark.parametrize("message", NOT_READY)
def test_webhook_not_ready_errors_are_recognised(message: str) -> None:
    assert kueue.is_webhook_not_ready_error(message)


@pytest.mark.parametrize("message", OTHER)
def test_other_errors_are_not(message: str) -> None:
    assert not kueue.is_webhook_not_ready_error(message)


@given(cause=st.text(max_size=80).filter(lambda t: "denied the request" not in t))
def test_any_cause_of_failing_to_call_kueues_webhook_is_retried(cause: str) -> None:
    # The API server's words decide, not the transport error after them (the real ones: tests/e2e).
    assert kueue.is_webhook_not_ready_error(
        f'Internal error occurred: failed calling webhook "vclusterqueue.kb.io": failed to call webhook: '
        f'Post "{_URL}": {cause}'
    )


@given(prefix=st.text(max_size=40), suffix=st.text(max_size=40))
def test_a_denial_is_never_retried_whatever_surrounds_it(prefix: str, suffix: str) -> None:
    assert not kueue.is_webhook_not_ready_error(f"{prefix}{NOT_READY[1]} admission webhook denied the request{suffix}")


@pytest.mark.parametrize(
    ("errors", "operation", "retry"),
    [
        ([NOT_READY[0]], "create", True),
        ([NOT_READY[2], NOT_READY[0]], "update", True),
        ([NOT_READY[1]] * (kueue.WEBHOOK_RETRY_ATTEMPTS - 1), "create", True),  # last retry
        ([NOT_READY[1]] * kueue.WEBHOOK_RETRY_ATTEMPTS, "create", False),  # capped
        ([NOT_READY[0]], "delete", False),  # Kueue's webhooks do not admit deletes
        ([OTHER[0], NOT_READY[0]], "create", False),  # newest error decides
        ([], "create", False),
    ],
)
def test_retry_decision(errors: list[str], operation: str, retry: bool) -> None:
    assert kueue.should_retry_webhook_error(errors, operation) is retry


def test_retry_attempts_and_delay_cover_the_reported_window() -> None:
    # kueue#13036: the webhook serves 10-30 s after the Deployment is Ready.
    assert kueue.WEBHOOK_RETRY_ATTEMPTS <= 10
    assert (kueue.WEBHOOK_RETRY_ATTEMPTS - 1) * kueue.WEBHOOK_RETRY_DELAY_SECONDS >= 30


def _args(errors: list[str], operation: str = "create") -> pulumi.ErrorHookArgs:
    return pulumi.ErrorHookArgs(
        "urn:x", "", "cq", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", failed_operation=operation, errors=errors
    )


def test_hook_body_sleeps_then_retries_and_stops_at_the_cap() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    callback = kueue.webhook_retry_callback(sleep=fake_sleep, delay_seconds=2.5, max_attempts=3)
    assert asyncio.run(callback(_args([NOT_READY[0]]))) is True
    assert asyncio.run(callback(_args([NOT_READY[0]] * 2))) is True
    assert asyncio.run(callback(_args([NOT_READY[0]] * 3))) is False
    assert asyncio.run(callback(_args([OTHER[0]]))) is False
    assert slept == [2.5, 2.5]
