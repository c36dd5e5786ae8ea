"""Run the whole Pulumi program offline under mocks and record every registration.

Used by the tests and by bench/: no Pulumi CLI, no cloud, no cluster.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import runpy
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import yaml
from pulumi.runtime import rpc
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockMonitor

from components.config.checks import ConfigError
from components.config.names import CONFIG_PREFIX
from components.config.parse import decode_config_value, parse_config, raw_from_stack_file
from components.config.pools import NodePool
from components.config.stack import StackConfig
from testbed.azure_fake import FakeArm, generous
from testbed.kube_fake import FakeCluster
from testbed.loopback_tls import make_tls
from testbed.paths import ROOT

MAIN = ROOT / "__main__.py"

_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "aks", "cluster": {"server": "https://aks.example.invalid:443"}}],
    "contexts": [{"name": "aks", "context": {"cluster": "aks", "user": "u"}}],
    "current-context": "aks",
}
ADMIN_KUBECONFIG = yaml.safe_dump({**_KUBECONFIG, "users": [{"name": "u", "user": {"token": "admin-token-not-real"}}]})
EXEC_KUBECONFIG = yaml.safe_dump(
    {
        **_KUBECONFIG,
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "kubelogin",
                        "args": ["get-token", "--login", "devicecode", "--server-id", "x"],
                    }
                },
            }
        ],
    }
)


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    ignore_changes: list[str]
    provider: str
    deleted_with: str
    read_id: str = ""  # set for a `.get()`: the ID of the existing object read, never created


@dataclass
class ProgramRun:
    registrations: list[Registration]
    exports: dict[str, Any]
    secret_exports: set[str]
    invokes: list[str] = field(default_factory=list)
    invoke_args: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (token, arguments)

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        assert len(found) == 1, f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.registrations if r.urn == urn)


def agent_pool_result(pool: NodePool) -> dict[str, Any]:
    """What azure-native's getAgentPool returns (wire names) for an AKS pool made as `pool` says:
    written from the pool model, not from components/cluster/component.py, so the check is tested, not copied."""
    result: dict[str, Any] = {
        "name": pool.name,
        "vmSize": pool.vm_size,
        "mode": "User",
        "nodeTaints": [str(t) for t in pool.node_taints],
        "nodeLabels": dict(pool.labels),
    }
    if pool.topology and pool.min_count == pool.max_count:  # fixed-size: TAS without ProvisioningRequest
        result |= {"enableAutoScaling": False, "count": pool.max_count}
    else:  # the autoscaler has moved the count; only the bounds are configured
        result |= {
            "enableAutoScaling": True,
            "minCount": pool.min_count,
            "maxCount": pool.max_count,
            "count": pool.min_count,
        }
    if pool.spot:
        result |= {"scaleSetPriority": "Spot", "scaleSetEvictionPolicy": "Delete", "spotMaxPrice": -1}
    return result


def parsed_config(config: Mapping[str, Any], stack: str = "dev") -> StackConfig | None:
    """The config map as the program parses it; None when it is invalid (the program then stops
    before any invoke)."""
    raw, location = raw_from_stack_file({"config": {k: decode_config_value(v) for k, v in config.items()}})
    try:
        return parse_config(raw, stack=stack, location=location)
    except ConfigError:
        return None


def matching_agent_pools(config: Mapping[str, Any], stack: str = "dev") -> dict[str, dict[str, Any]]:
    """getAgentPool results that match the config map's pools."""
    parsed = parsed_config(config, stack)
    return {pool.name: agent_pool_result(pool) for pool in parsed.node_pools} if parsed else {}


SUBSCRIPTION = "00000000-0000-0000-0000-00000000000a"
DEPLOYER_OBJECT_ID = "00000000-0000-0000-0000-00000000000d"
GRAFANA_PRINCIPAL = "00000000-0000-0000-0000-00000000000f"


def unsigned_token(claims: Mapping[str, Any]) -> str:
    """A JWT-shaped access token with these claims and no signature (nothing here checks one)."""

    def part(doc: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'typ': 'JWT', 'alg': 'none'})}.{part(claims)}.not-signed"


# What a user's `az login` token carries (learn.microsoft.com/entra/identity-platform/access-token-claims-reference):
# a delegated token has scp; an app-only one (a service principal, a managed identity) has none.
USER_CLAIMS = {"oid": DEPLOYER_OBJECT_ID, "idtyp": "user", "scp": "user_impersonation"}
# The azure-native provider's token as getClientToken returns it; the preflight sends it to Azure.
PROVIDER_TOKEN = unsigned_token(USER_CLAIMS)
SERVICE_ACCOUNT_TOKEN = "service-account-token-not-real"
_AZURE: list[FakeArm] = []


def generous_azure(config: Mapping[str, Any], stack: str) -> FakeArm:
    """The session's loopback Azure, answering so that every pool of `config` fits (the preflight's
    own tests give it recorded answers instead)."""
    if not _AZURE:
        _AZURE.append(FakeArm(*make_tls(Path(tempfile.mkdtemp(prefix="kueue-aks-azure-")))))
    fake = _AZURE[0]
    parsed = parsed_config(config, stack)
    fake.usages, fake.skus, fake.clusters = generous(parsed) if parsed else ([], [], [])
    fake.fail, fake.delay, fake.page_size = {}, {}, 0
    return fake


class ProgramMocks(pulumi.runtime.Mocks):
    """Mocked resources and invokes. For an existing cluster (kueue-aks:cluster.existing):
    `managed_cluster` overrides fields of the getManagedCluster result (e.g. disableLocalAccounts),
    and `agent_pools` is getAgentPool's result by pool name (None: pools matching the config; a
    name not in it fails the invoke, as Azure's 404 would)."""

    def __init__(
        self,
        *,
        managed_cluster: Mapping[str, Any] | None = None,
        agent_pools: Mapping[str, Mapping[str, Any]] | None = None,
        stacks: Mapping[str, Mapping[str, Any]] | None = None,
        token: str = PROVIDER_TOKEN,
    ) -> None:
        self.token = token  # getClientToken's: its claims say whether the deployer is a user or an app
        self.invokes: list[str] = []
        self.invoke_args: list[tuple[str, dict[str, Any]]] = []
        self.managed_cluster = dict(managed_cluster or {})
        self.agent_pools = None if agent_pools is None else {k: dict(v) for k, v in agent_pools.items()}
        # Other stacks' outputs by fully qualified name, for StackReferences (a MultiKueue manager's
        # workers); every output whose name ends in "Kubeconfig" is a secret, as a worker exports it.
        self.stacks = {k: dict(v) for k, v in (stacks or {}).items()}
        # Set by run_program; parsed only when a pool is read, so create-mode runs (bench/) pay nothing.
        self.config_map: tuple[Mapping[str, Any], str] | None = None

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "azure-native:containerservice:ManagedCluster":
            state["name"] = args.inputs.get("resourceName")
            # Azure's wire name is issuerURL (the SDK's getter); "issuerUrl" would leave issuer_url unset.
            state["oidcIssuerProfile"] = {"enabled": True, "issuerURL": "https://oidc.example.invalid/issuer/"}
            identity = args.inputs.get("identity") or {}
            if identity.get("userAssignedIdentities"):
                # The SDK takes a list of IDs; ARM answers with a map of each to its principal.
                state["identity"] = {
                    **identity,
                    "userAssignedIdentities": {
                        i: {
                            "principalId": "00000000-0000-0000-0000-0000000000c1",
                            "clientId": "00000000-0000-0000-0000-0000000000c2",
                        }
                        for i in identity["userAssignedIdentities"]
                    },
                }
        elif args.typ == "azure-native:resources:ResourceGroup":
            state["name"] = f"{args.name}-rg123"
        elif args.typ == "azure-native:managedidentity:UserAssignedIdentity":
            # What Azure fills in: the identity's Entra ID object (principal) and client IDs, one per name.
            state["principalId"], state["clientId"] = identity_ids(args.name)
            state["tenantId"] = "00000000-0000-0000-0000-00000000cafe"
        elif args.typ == "azure-native:monitor:AzureMonitorWorkspace":
            state["metrics"] = {
                "prometheusQueryEndpoint": "https://amw.eastus2.prometheus.monitor.azure.com",
                "internalId": "mac_0000",
            }
        elif args.typ == "azure-native:dashboard:Grafana":
            state["name"] = f"{args.name}0a1b2c3d"
            state["identity"] = {**args.inputs.get("identity", {}), "principalId": GRAFANA_PRINCIPAL}
            state["properties"] = {**args.inputs.get("properties", {}), "endpoint": "https://grafana.example.invalid"}
        elif args.typ == "pulumi:pulumi:StackReference":
            outputs = self.stacks.get(args.inputs["name"], {})
            state["outputs"] = outputs
            state["secretOutputNames"] = [k for k in outputs if k.endswith("Kubeconfig")]
        elif (
            args.typ == "kubernetes:core/v1:Secret" and args.inputs.get("type") == "kubernetes.io/service-account-token"
        ):
            # What the token controller writes into the Secret, and the provider waits for.
            state["data"] = {
                "token": base64.b64encode(SERVICE_ACCOUNT_TOKEN.encode()).decode(),
                "ca.crt": base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnot-real\n").decode(),
            }
        elif args.typ == "kubernetes:helm.sh/v3:Release":
            state["status"] = {
                "name": args.inputs.get("name"),
                "namespace": args.inputs.get("namespace"),
                "status": "deployed",
                "version": args.inputs.get("version"),
            }
        return f"{args.name}_id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.invokes.append(args.token)
        self.invoke_args.append((args.token, dict(args.args)))
        if args.token == "azure-native:containerservice:getManagedCluster":
            group, name = args.args["resourceGroupName"], args.args["resourceName"]
            return {
                "id": f"/subscriptions/0000/resourceGroups/{group}/providers/Microsoft.ContainerService/managedClusters/{name}",
                "name": name,
                "location": "eastus2",
                "disableLocalAccounts": False,
                "oidcIssuerProfile": {"enabled": True, "issuerURL": "https://oidc.example.invalid/existing/"},
                "securityProfile": {"workloadIdentity": {"enabled": True}},
                "azureMonitorProfile": {"metrics": {"enabled": True}},
                **self.managed_cluster,
            }
        if args.token == "azure-native:containerservice:getAgentPool":
            pool = args.args["agentPoolName"]
            if self.agent_pools is None and self.config_map is not None:
                self.agent_pools = matching_agent_pools(*self.config_map)
            if pool not in (self.agent_pools or {}):
                raise Exception(f"mock: agent pool {pool!r} not found (ResourceNotFound)")
            return dict((self.agent_pools or {})[pool])
        if args.token == "azure-native:authorization:getClientToken":
            return {"token": self.token}
        if args.token == "azure-native:authorization:getClientConfig":
            return {
                "subscriptionId": SUBSCRIPTION,
                "objectId": DEPLOYER_OBJECT_ID,
                "tenantId": "tenant",
                "clientId": "client",
            }
        if args.token == "azure-native:monitor:getAzureMonitorWorkspace":
            return {
                "id": "/subscriptions/.../accounts/" + args.args["azureMonitorWorkspaceName"],
                "location": "westeurope",
                "metrics": {"prometheusQueryEndpoint": "https://existing.westeurope.prometheus.monitor.azure.com"},
            }
        if args.token == "azure-native:dashboard:getGrafana":
            return {
                "name": args.args["workspaceName"],
                "location": "westeurope",
                "properties": {"endpoint": "https://existing-grafana.example.invalid"},
            }
        if args.token.endswith(":listManagedClusterAdminCredentials"):
            return {
                "kubeconfigs": [{"name": "clusterAdmin", "value": base64.b64encode(ADMIN_KUBECONFIG.encode()).decode()}]
            }
        if args.token.endswith(":listManagedClusterUserCredentials"):
            return {
                "kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(EXEC_KUBECONFIG.encode()).decode()}]
            }
        return {}


class RecordingMonitor(MockMonitor):
    """A mock monitor that also keeps each request's parent, dependencies and options."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent=request.parent,
                    custom=request.custom,
                    inputs=rpc.deserialize_properties(request.object),
                    dependencies=list(request.dependencies),
                    property_dependencies={k: list(v.urns) for k, v in request.propertyDependencies.items()},
                    ignore_changes=list(request.ignoreChanges),
                    provider=request.provider,
                    deleted_with=request.deletedWith,
                )
            )
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self.registrations.append(
            Registration(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                custom=True,
                inputs=rpc.deserialize_properties(request.properties),
                dependencies=list(request.dependencies),
                property_dependencies={},
                ignore_changes=[],
                provider=request.provider,
                deleted_with="",
                read_id=request.id,
            )
        )
        return response


def identity_ids(name: str) -> tuple[str, str]:
    """The principal and client IDs the mocks give the user-assigned identity of this resource name."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return str(uuid.UUID(digest[:32])), str(uuid.UUID(digest[32:]))


def run_program(
    config: Mapping[str, Any],
    *,
    stack: str = "dev",
    preview: bool = False,
    mocks: ProgramMocks | None = None,
    azure: FakeArm | None = None,
    cluster: FakeCluster | None = None,
    secret_keys: Iterable[str] | None = None,
) -> ProgramRun:
    """Run __main__.py with `config` (full keys, e.g. "kueue-aks:teams") under mocks, the
    preflight reading `azure` (default: a loopback Azure where every pool fits) and, for a
    kubeconfig stack, `cluster` (default: one with no Kueue yet). `secret_keys`: the keys the
    engine marks secret; by default `kueue-aks:cluster` when it holds a kubeconfig, as
    `pulumi config set --secret --path kueue-aks:cluster.kubeconfig` leaves it."""
    if secret_keys is None:
        cluster_config = config.get(f"{CONFIG_PREFIX}:cluster")
        secret_keys = (
            [f"{CONFIG_PREFIX}:cluster"]
            if isinstance(cluster_config, Mapping) and "kubeconfig" in cluster_config
            else []
        )
    azure = azure or generous_azure(config, stack)
    with azure.serving(), (cluster or FakeCluster()).serving():
        return _run_program(config, stack=stack, preview=preview, mocks=mocks, secret_keys=list(secret_keys))


def _unretrieved_run_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A program that stops with a pulumi.RunError leaves it in every Output that depended on the
    failed one; asyncio logs each as never retrieved, with its traceback, when it is collected (tens
    of thousands of lines in a run of refused stacks, which took 46 of test_modes.py's 74 s). The
    error itself reaches the test as the run's; anything else is logged as asyncio would."""
    if isinstance(context.get("exception"), pulumi.RunError) and "never retrieved" in context.get("message", ""):
        return
    loop.default_exception_handler(context)


def _run_program(
    config: Mapping[str, Any], *, stack: str, preview: bool, mocks: ProgramMocks | None, secret_keys: list[str]
) -> ProgramRun:
    # Pulumi's mocks run the program on this thread's event loop, made when there is none
    # (pulumi.runtime.sync_await), so it is made here first.
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # a thread other than the main one
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    loop.set_exception_handler(_unretrieved_run_errors)
    mocks = mocks or ProgramMocks()
    mocks.config_map = (config, stack)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="kueue-aks", stack=stack, preview=preview, monitor=monitor)
    set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}, secret_keys)
    exports: dict[str, Any] = {}
    resolved: dict[str, Any] = {}
    secret: set[str] = set()

    def capture(name: str, value: Any) -> None:
        exports[name] = value

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(MAIN), run_name="__main__")

        async def settle(name: str, value: Any) -> None:
            out = pulumi.Output.from_input(value)
            resolved[name] = await out.future()
            if await out.is_secret():
                secret.add(name)

        async def settle_all() -> None:
            for name, value in exports.items():
                await settle(name, value)

        return pulumi.Output.from_input(settle_all())

    with mock.patch.object(pulumi, "export", capture):
        program()
    return ProgramRun(monitor.registrations, resolved, secret, mocks.invokes, mocks.invoke_args)


# --- reading a run --------------------------------------------------------------------------------

RELEASE = "kubernetes:helm.sh/v3:Release"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def assert_nothing_registered() -> None:
    from pulumi.runtime.settings import SETTINGS  # the mock monitor of the last run

    assert not [r.type for r in SETTINGS.monitor.registrations]


def provider_urn(reference: str) -> str:
    return reference.rsplit("::", 1)[0]  # a provider reference is "<urn>::<id>"


def kubernetes_objects(run: ProgramRun) -> dict[tuple[str, str], Any]:
    return {(r.type, r.name): r.inputs for r in run.registrations if r.type.startswith("kubernetes:")}


def azure_registrations(run: ProgramRun) -> list[str]:
    return [r.type for r in run.registrations if r.type.startswith(("azure-native:", "pulumi:providers:azure-native"))]
