"""Run the whole Pulumi program offline under mocks and record every registration.

Used by the tests and by bench/: no Pulumi CLI, no cloud, no cluster.
"""

from __future__ import annotations

import base64
import json
import runpy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import yaml
from pulumi.runtime import rpc
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockMonitor

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "__main__.py"
SHARED = ROOT.parent / "shared"

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


@dataclass
class ProgramRun:
    registrations: list[Registration]
    exports: dict[str, Any]
    secret_exports: set[str]
    invokes: list[str] = field(default_factory=list)

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        assert len(found) == 1, f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.registrations if r.urn == urn)


class ProgramMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.invokes: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "azure-native:containerservice:ManagedCluster":
            state["name"] = args.inputs.get("resourceName")
            state["oidcIssuerProfile"] = {"enabled": True, "issuerUrl": "https://oidc.example.invalid/issuer/"}
        elif args.typ == "azure-native:resources:ResourceGroup":
            state["name"] = f"{args.name}-rg123"
        elif args.typ == "kubernetes:helm.sh/v3:Release":
            state["status"] = {"name": args.inputs.get("name"), "namespace": args.inputs.get("namespace"),
                               "status": "deployed", "version": args.inputs.get("version")}
        return f"{args.name}_id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.invokes.append(args.token)
        if args.token.endswith(":listManagedClusterAdminCredentials"):
            return {"kubeconfigs": [{"name": "clusterAdmin", "value": base64.b64encode(ADMIN_KUBECONFIG.encode()).decode()}]}
        if args.token.endswith(":listManagedClusterUserCredentials"):
            return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(EXEC_KUBECONFIG.encode()).decode()}]}
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


def stack_file_config(stack: str = "dev") -> dict[str, Any]:
    """The `config:` map of a Pulumi.<stack>.yaml in the repository."""
    return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]


def run_program(config: Mapping[str, Any], *, stack: str = "dev", preview: bool = False) -> ProgramRun:
    """Run __main__.py with `config` (full keys, e.g. "kueue-aks:teams") under mocks."""
    mocks = ProgramMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="kueue-aks", stack=stack, preview=preview, monitor=monitor)
    set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()})
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
    return ProgramRun(monitor.registrations, resolved, secret, mocks.invokes)
