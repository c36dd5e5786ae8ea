"""Azure's REST API specs as strict JSON Schemas, and the ARM request azure-native would send.

The specs are the Swagger 2.0 files in ../shared/azure/rest-api-specs (its SOURCE.md says which
commit each comes from), at the API versions pulumi-azure-native 3.29 uses for the resources the
program registers and the preflight reads. Nothing here reaches the network.

A registered resource's inputs, as the unit tier's mocks record them, are azure-native's SDK
shape: camelCase spec names, the path parameters among them, and every property the spec marks
`x-ms-client-flatten` (the top-level `properties`, mostly) merged into its parent. `ArmSpecs.request`
undoes that the way the provider does (provider/pkg/convert/sdkInputsToRequestBody.go): path
parameters go to the URL, the rest to the body, each flattened property back under its container.
The body is then checked strictly, stricter than Swagger itself: see `_Schemas`.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from pulumi.runtime import rpc

from components.k8s.crd_schema import INT_FORMATS, format_path
from components.preflight.arm import CLUSTERS_API
from testbed.paths import SHARED

SPECS = SHARED / "azure" / "rest-api-specs"

_RM = "specification/{}/resource-manager"
RESOURCES_SPEC = f"{_RM.format('resources')}/Microsoft.Resources/stable/2024-03-01/resources.json"
AKS_SPEC = f"{_RM.format('containerservice')}/Microsoft.ContainerService/aks/stable/2025-09-01/managedClusters.json"
ROLES_SPEC = (
    f"{_RM.format('authorization')}/Microsoft.Authorization/stable/2022-04-01/authorization-RoleAssignmentsCalls.json"
)
WORKSPACE_SPEC = f"{_RM.format('monitor')}/Microsoft.Monitor/stable/2023-04-03/monitoringAccounts_API.json"
_INSIGHTS = f"{_RM.format('monitor')}/Microsoft.Insights/stable/2022-06-01"
ENDPOINT_SPEC = f"{_INSIGHTS}/dataCollectionEndpoints_API.json"
RULE_SPEC = f"{_INSIGHTS}/dataCollectionRules_API.json"
ASSOCIATION_SPEC = f"{_INSIGHTS}/dataCollectionRuleAssociations_API.json"
GRAFANA_SPEC = f"{_RM.format('dashboard')}/Microsoft.Dashboard/stable/2024-10-01/grafana.json"
_EXTENSIONS = f"{_RM.format('kubernetesconfiguration')}/Microsoft.KubernetesConfiguration/extensions/stable"
EXTENSION_SPEC = f"{_EXTENSIONS}/2023-05-01/extensions.json"
EXTENSIONS_LIST_SPEC = f"{_EXTENSIONS}/2025-03-01/extensions.json"
_COMPUTE = f"{_RM.format('compute')}/Microsoft.Compute"
USAGES_SPEC = f"{_COMPUTE}/ComputeRP/stable/2024-07-01/computeRPCommon.json"
SKUS_SPEC = f"{_COMPUTE}/Skus/stable/2021-07-01/skus.json"
MSI_SPEC = f"{_RM.format('msi')}/Microsoft.ManagedIdentity/ManagedIdentity/stable/2023-01-31/ManagedIdentity.json"

_GROUP = "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers"
CLUSTER_PATH = f"{_GROUP}/Microsoft.ContainerService/managedClusters/{{resourceName}}"
AGENT_POOL_PATH = f"{CLUSTER_PATH}/agentPools/{{agentPoolName}}"
WORKSPACE_PATH = f"{_GROUP}/Microsoft.Monitor/accounts/{{azureMonitorWorkspaceName}}"
GRAFANA_PATH = f"{_GROUP}/Microsoft.Dashboard/grafana/{{workspaceName}}"
IDENTITY_PATH = f"{_GROUP}/Microsoft.ManagedIdentity/userAssignedIdentities/{{resourceName}}"
EXTENSIONS_PATH = (
    f"{_GROUP}/{{clusterRp}}/{{clusterResourceName}}/{{clusterName}}/providers/"
    "Microsoft.KubernetesConfiguration/extensions"
)

Direction = Literal["request", "response"]


@dataclass(frozen=True)
class Operation:
    """One operation of a spec file: its `paths` entry and method."""

    spec: str  # the file, relative to SPECS
    method: Literal["get", "put", "post"]
    path: str


# The create-or-update each resource token sends (the API versions of pulumi-azure-native 3.29.0's
# SDK docstrings: "Uses Azure REST API version ...").
RESOURCES: dict[str, Operation] = {
    "azure-native:resources:ResourceGroup": Operation(
        RESOURCES_SPEC, "put", "/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}"
    ),
    "azure-native:containerservice:ManagedCluster": Operation(AKS_SPEC, "put", CLUSTER_PATH),
    "azure-native:containerservice:AgentPool": Operation(AKS_SPEC, "put", AGENT_POOL_PATH),
    "azure-native:authorization:RoleAssignment": Operation(
        ROLES_SPEC, "put", "/{scope}/providers/Microsoft.Authorization/roleAssignments/{roleAssignmentName}"
    ),
    "azure-native:monitor:AzureMonitorWorkspace": Operation(WORKSPACE_SPEC, "put", WORKSPACE_PATH),
    "azure-native:monitor:DataCollectionEndpoint": Operation(
        ENDPOINT_SPEC, "put", f"{_GROUP}/Microsoft.Insights/dataCollectionEndpoints/{{dataCollectionEndpointName}}"
    ),
    "azure-native:monitor:DataCollectionRule": Operation(
        RULE_SPEC, "put", f"{_GROUP}/Microsoft.Insights/dataCollectionRules/{{dataCollectionRuleName}}"
    ),
    "azure-native:monitor:DataCollectionRuleAssociation": Operation(
        ASSOCIATION_SPEC,
        "put",
        "/{resourceUri}/providers/Microsoft.Insights/dataCollectionRuleAssociations/{associationName}",
    ),
    "azure-native:dashboard:Grafana": Operation(GRAFANA_SPEC, "put", GRAFANA_PATH),
    "azure-native:kubernetesconfiguration:Extension": Operation(
        EXTENSION_SPEC, "put", f"{EXTENSIONS_PATH}/{{extensionName}}"
    ),
    "azure-native:managedidentity:UserAssignedIdentity": Operation(MSI_SPEC, "put", IDENTITY_PATH),
    "azure-native:managedidentity:FederatedIdentityCredential": Operation(
        MSI_SPEC, "put", f"{IDENTITY_PATH}/federatedIdentityCredentials/{{federatedIdentityCredentialResourceName}}"
    ),
}

# The ARM call behind each invoke the program makes (the others, getClientConfig and
# getClientToken, ask the provider, not ARM).
INVOKES: dict[str, Operation] = {
    "azure-native:containerservice:getManagedCluster": Operation(AKS_SPEC, "get", CLUSTER_PATH),
    "azure-native:containerservice:getAgentPool": Operation(AKS_SPEC, "get", AGENT_POOL_PATH),
    "azure-native:containerservice:listManagedClusterAdminCredentials": Operation(
        AKS_SPEC, "post", f"{CLUSTER_PATH}/listClusterAdminCredential"
    ),
    "azure-native:containerservice:listManagedClusterUserCredentials": Operation(
        AKS_SPEC, "post", f"{CLUSTER_PATH}/listClusterUserCredential"
    ),
    "azure-native:monitor:getAzureMonitorWorkspace": Operation(WORKSPACE_SPEC, "get", WORKSPACE_PATH),
    "azure-native:dashboard:getGrafana": Operation(GRAFANA_SPEC, "get", GRAFANA_PATH),
}

# What components/preflight/arm.py reads. Its managed-cluster reads use API version 2024-09-01,
# whose spec is not vendored (SOURCE.md): the 2025-09-01 file stands in for their paths and answers.
PREFLIGHT: tuple[Operation, ...] = (
    Operation(
        USAGES_SPEC, "get", "/subscriptions/{subscriptionId}/providers/Microsoft.Compute/locations/{location}/usages"
    ),
    Operation(SKUS_SPEC, "get", "/subscriptions/{subscriptionId}/providers/Microsoft.Compute/skus"),
    Operation(AKS_SPEC, "get", "/subscriptions/{subscriptionId}/providers/Microsoft.ContainerService/managedClusters"),
    Operation(AKS_SPEC, "get", CLUSTER_PATH),
    Operation(EXTENSIONS_LIST_SPEC, "get", EXTENSIONS_PATH),
)
STAND_IN_VERSIONS = {AKS_SPEC: CLUSTERS_API}  # spec file -> the API version the preflight really sends

# Values outside an enum (x-ms-enum modelAsString) that Azure documents elsewhere; each by the
# enum's name, and why. A data flow carries the streams of the rule's data sources, and the same
# file's PrometheusForwarderDataSource declares Microsoft-PrometheusMetrics
# (KnownPrometheusForwarderDataSourceStreams), which KnownDataFlowStreams does not list:
# Microsoft's managed-Prometheus rule (learn.microsoft.com/azure/azure-monitor/containers/
# kubernetes-monitoring-enable, its ARM template at 2022-06-01) routes exactly that stream.
OPEN_ENUM_VALUES: dict[str, tuple[str, ...]] = {"KnownDataFlowStreams": ("Microsoft-PrometheusMetrics",)}

# Filled in by the provider, not by the program: the subscription from its config; the resource's
# own name, when absent, by autonaming (a random suffix, or a GUID for a role assignment).
PROVIDER_PARAMETERS = frozenset({"subscriptionId"})


@dataclass(frozen=True)
class ArmRequest:
    method: str
    url: str  # path and api-version; a parameter the provider fills in stays {name}
    path_parameters: dict[str, Any]  # those the program gave
    body: Any
    autonamed: str | None = None  # the name parameter azure-native fills in


@dataclass
class _Members:
    """An object definition's properties with its allOf parents': name -> (file, node)."""

    properties: dict[str, tuple[str, Any]] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    additional: tuple[str, Any] | bool | None = None  # additionalProperties: a schema, true/false, or absent


class _Specs:
    """The spec files, each read once, and `$ref`s resolved across them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._documents: dict[str, Any] = {}
        self._members: dict[int, _Members] = {}

    def document(self, spec: str) -> Any:
        if spec not in self._documents:
            self._documents[spec] = json.loads((self.root / spec).read_text())
        return self._documents[spec]

    def resolve(self, spec: str, ref: str) -> tuple[str, str, Any]:
        """The file, pointer and node a `$ref` in `spec` names."""
        path, _, pointer = ref.partition("#")
        if path:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(spec), path))
            # extensions/stable/2023-05-01/extensions.json (9bf444bb) climbs to common-types with seven
            # "../", one too many: it lands at the repository root's common-types/, which does not
            # exist (SOURCE.md, "Known dangling ref"). The file meant is specification/common-types/.
            if spec == EXTENSION_SPEC and target.startswith("common-types/"):
                target = f"specification/{target}"
            spec = target
        node = self.document(spec)
        for part in filter(None, pointer.split("/")):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return spec, pointer, node

    def target(self, spec: str, node: Any) -> tuple[str, Any]:
        """`node` with its `$ref`s followed."""
        while isinstance(node, dict) and "$ref" in node:
            spec, _, node = self.resolve(spec, node["$ref"])
        return spec, node

    def members(self, spec: str, node: Mapping[str, Any]) -> _Members:
        key = id(node)  # documents are kept, so a node's id is stable
        if key not in self._members:
            found = _Members()
            for parent in node.get("allOf", ()):  # Swagger's inheritance: the parent's members first
                inherited = self.members(*self.target(spec, parent))
                found.properties |= inherited.properties
                found.required |= inherited.required
                found.additional = inherited.additional if found.additional is None else found.additional
            found.properties |= {name: (spec, prop) for name, prop in node.get("properties", {}).items()}
            found.required |= set(node.get("required", ()))
            if "additionalProperties" in node:
                extra = node["additionalProperties"]
                found.additional = (spec, extra) if isinstance(extra, dict) else bool(extra)
            self._members[key] = found
        return self._members[key]

    def operation(self, operation: Operation) -> Mapping[str, Any]:
        return self.document(operation.spec)["paths"][operation.path][operation.method]

    def parameters(self, operation: Operation) -> list[tuple[str, Mapping[str, Any]]]:
        """The operation's parameters, path-level ones included, each as (file, node)."""
        entry = self.document(operation.spec)["paths"][operation.path]
        found = (*entry.get("parameters", ()), *self.operation(operation)["parameters"])
        return [self.target(operation.spec, p) for p in found]

    def api_version(self, spec: str) -> str:
        return str(self.document(spec)["info"]["version"])


def _is_object(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "object" or any(k in node for k in ("properties", "allOf", "additionalProperties"))


class _Schemas:
    """Swagger definitions as JSON Schemas (draft 2020-12) for one direction, in one `$defs` table.

    Stricter than Swagger on purpose (issue 50): an object with declared properties and no
    additionalProperties takes no other key (armClosed); an enum is closed even where
    `x-ms-enum.modelAsString` lets a client pass other strings, since a value outside it is one
    Azure has never documented; `required` holds (armRequired). In a request a read-only property,
    or one whose x-ms-mutability leaves out "create", is an error (armForbidden); in a response, one
    whose x-ms-mutability leaves out "read" (Azure never returns it).
    """

    _COPIED = ("pattern", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems")

    def __init__(self, specs: _Specs, direction: Direction) -> None:
        self.specs, self.direction = specs, direction
        self.defs: dict[str, Any] = {}
        self._names: dict[tuple[str, str], str] = {}

    def root(self, spec: str, node: Mapping[str, Any]) -> dict[str, Any]:
        return {"$defs": self.defs, **self.convert(spec, node)}

    def convert(self, spec: str, node: Mapping[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            return {"$ref": f"#/$defs/{self._define(*self.specs.resolve(spec, node['$ref']))}"}
        if len(node.get("allOf", ())) == 1 and "properties" not in node:  # a wrapper, e.g. {allOf: [$ref]}
            return self.convert(spec, node["allOf"][0])
        if _is_object(node):
            return self._object(spec, node)
        schema: dict[str, Any] = {k: node[k] for k in self._COPIED if k in node}
        if "enum" in node:
            schema["enum"] = [*node["enum"], *OPEN_ENUM_VALUES.get(node.get("x-ms-enum", {}).get("name", ""), ())]
        if "type" in node:
            schema["type"] = [node["type"], "null"] if node.get("x-nullable") else node["type"]
        for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if bound in node:  # Swagger 2's exclusive bounds are flags beside the bound
                schema[exclusive if node.get(exclusive) else bound] = node[bound]
        if node.get("format") == "uuid":
            schema["format"] = "uuid"
        if node.get("format") in INT_FORMATS:
            schema.setdefault("minimum", -INT_FORMATS[node["format"]])
            schema.setdefault("maximum", INT_FORMATS[node["format"]] - 1)
        if "items" in node:
            schema["items"] = self.convert(spec, node["items"])
        return schema

    def _define(self, spec: str, pointer: str, node: Mapping[str, Any]) -> str:
        key = (spec, pointer)
        if key not in self._names:
            base = pointer.rsplit("/", 1)[-1]
            name = base if base not in self.defs else f"{base}.{len(self.defs)}"
            self._names[key] = name
            self.defs[name] = {}  # taken before converting: definitions refer to themselves
            self.defs[name] = self.convert(spec, node)
        return self._names[key]

    def _object(self, spec: str, node: Mapping[str, Any]) -> dict[str, Any]:
        members = self.specs.members(spec, node)
        schema: dict[str, Any] = {"type": ["object", "null"] if node.get("x-nullable") else "object"}
        if members.properties:
            schema["properties"] = {name: self._property(*where) for name, where in members.properties.items()}
        if members.required:
            schema["armRequired"] = sorted(members.required)
        if isinstance(members.additional, tuple):
            schema["additionalProperties"] = self.convert(*members.additional)
        elif members.properties and not members.additional:
            schema["armClosed"] = True
        return schema

    def _property(self, spec: str, node: Mapping[str, Any]) -> dict[str, Any]:
        forbidden = self._forbidden(node) or self._forbidden(self.specs.target(spec, node)[1])
        return {"armForbidden": forbidden} if forbidden else self.convert(spec, node)

    def _forbidden(self, node: Mapping[str, Any]) -> str:
        mutability = node.get("x-ms-mutability")
        if self.direction == "response":
            if mutability and "read" not in mutability:
                return f"is never in Azure's answer (x-ms-mutability {mutability})"
            return ""
        if node.get("readOnly"):
            return "is read-only: Azure sets it, a request must not"
        if mutability and "create" not in mutability:
            return f"cannot be set on create (x-ms-mutability {mutability})"
        return ""


def _closed(validator: Validator, _: bool, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    for key in instance:
        if key not in known:
            hint = "".join(f" (did you mean {m!r}?)" for m in difflib.get_close_matches(key, list(known), 1))
            yield ValidationError(f"is not a property Azure knows here{hint}", path=[key])


def _required(validator: Validator, names: list[str], instance: Any, _: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "object"):
        yield from (ValidationError("is required", path=[name]) for name in names if name not in instance)


def _forbid(_: Validator, message: str, __: Any, ___: Mapping[str, Any]) -> Iterator[ValidationError]:
    yield ValidationError(message)


_Strict = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"armClosed": _closed, "armRequired": _required, "armForbidden": _forbid}
)
# For what a mock returns: a mock may leave out what it does not need, but every field it has must be Azure's.
_Partial = jsonschema.validators.extend(_Strict, {"armRequired": lambda *_: iter(())})
_FORMATS = jsonschema.FormatChecker(["uuid"])


def _problems(validator: Validator, value: Any) -> list[str]:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{format_path(e.absolute_path) or '<body>'}: {e.message}" for e in errors]


def _plain(value: Any) -> Any:
    """Inputs as the provider gets them: secrets unwrapped. Unknowns (a preview's) cannot be checked."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _plain(value["value"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value == rpc.UNKNOWN:
        raise ValueError("an unknown value: check the inputs of a run that is not a preview")
    return value


# Where an SDK name goes in ARM's shape: its path, and the property's file and node.
_Placement = tuple[tuple[str, ...], str, Any]
_Layout = tuple[dict[str, _Placement], list[tuple[str, ...]]]


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class ArmSpecs:
    """The vendored specs, converted on first use."""

    def __init__(self, root: Path = SPECS) -> None:
        self.specs = _Specs(root)
        self._schemas = {d: _Schemas(self.specs, d) for d in ("request", "response")}
        self._validators: dict[tuple[Any, ...], Validator] = {}
        self._layouts: dict[int, _Layout] = {}

    # --- azure-native's SDK shape <-> ARM's -----------------------------------------------------

    def _layout(self, spec: str, node: Mapping[str, Any]) -> _Layout:
        """Where each SDK name of an object goes in ARM's shape (its path, the property's file and
        node), and the flattened containers the object requires (the provider sends them even
        empty). As azure-native's gen/properties.go: a property marked x-ms-client-flatten, unless
        it is a map, is replaced by its own properties, at any depth."""
        if id(node) in self._layouts:
            return self._layouts[id(node)]
        members = self.specs.members(spec, node)
        names: dict[str, _Placement] = {}
        containers: list[tuple[str, ...]] = []
        for name, (prop_spec, prop) in members.properties.items():
            inner_spec, inner = self.specs.target(prop_spec, prop)
            is_map = isinstance(self.specs.members(inner_spec, inner).additional, tuple)
            if prop.get("x-ms-client-flatten") and not is_map:
                inner_names, inner_containers = self._layout(inner_spec, inner)
                names |= {sdk: ((name, *path), s, n) for sdk, (path, s, n) in inner_names.items()}
                containers += [(name, *c) for c in inner_containers] + ([(name,)] if name in members.required else [])
            else:
                names[_lower_first(prop.get("x-ms-client-name", name))] = ((name,), prop_spec, prop)
        self._layouts[id(node)] = (names, containers)
        return names, containers

    def arm_shape(self, spec: str, node: Mapping[str, Any], value: Any) -> Any:
        """`value`, in azure-native's SDK shape for the schema `node`, in ARM's shape. A key the
        schema does not know stays where it is, for the check to name (the provider would drop it
        without a word)."""
        spec, node = self.specs.target(spec, node)
        if isinstance(value, list):
            return [self.arm_shape(spec, node["items"], v) for v in value] if "items" in node else value
        if not isinstance(value, dict) or not _is_object(node):
            return value
        members = self.specs.members(spec, node)
        if not members.properties:
            if isinstance(members.additional, tuple):
                return {k: self.arm_shape(*members.additional, v) for k, v in value.items()}
            return value
        names, containers = self._layout(spec, node)
        shaped: dict[str, Any] = {}
        for key, item in value.items():
            if key not in names:
                shaped[key] = item
                continue
            path, prop_spec, prop = names[key]
            if key == "userAssignedIdentities" and isinstance(item, list):
                # azure-native 2+ takes the identities' IDs as a list and sends ARM's map of each to {}
                # (pulumi-azure-native issue 812).
                item = {identity: {} for identity in item}
            _container(shaped, path[:-1])[path[-1]] = self.arm_shape(prop_spec, prop, item)
        for path in containers:
            _container(shaped, path)
        return shaped

    # --- requests ----------------------------------------------------------------------------

    def request(self, token: str, inputs: Mapping[str, Any]) -> ArmRequest:
        """The create request azure-native sends for a resource of `token` with these inputs."""
        operation = RESOURCES[token]
        values = _plain(dict(inputs))
        url, given, autonamed = operation.path, {}, None
        for parameter in self._path_parameters(operation):
            name = parameter["name"]
            if name in values:
                given[name] = values.pop(name)
                encode = not parameter.get("x-ms-skip-url-encoding")
                text = str(given[name])
                url = url.replace(f"{{{name}}}", quote(text, safe="") if encode else text.lstrip("/"))
            elif name not in PROVIDER_PARAMETERS and operation.path.endswith(f"/{{{name}}}"):
                autonamed = name
        body_spec, body = self._body(operation)
        return ArmRequest(
            operation.method.upper(),
            f"{url}?api-version={self.specs.api_version(operation.spec)}",
            given,
            self.arm_shape(body_spec, body["schema"], values),
            autonamed,
        )

    def request_problems(self, token: str, inputs: Mapping[str, Any]) -> list[str]:
        """What Azure's spec says is wrong with the request for these inputs, each as
        `<path>: <message>`: a body property by its JSON path, a path parameter as {name}."""
        request = self.request(token, inputs)
        operation = RESOURCES[token]
        braced = {f"{{{name}}}": value for name, value in request.path_parameters.items()}
        return [
            *_problems(self._path_validator(operation, request.autonamed), braced),
            *self.body_problems(operation, request.body),
        ]

    def _path_parameters(self, operation: Operation) -> list[Mapping[str, Any]]:
        return [p for _, p in self.specs.parameters(operation) if p["in"] == "path"]

    def _body(self, operation: Operation) -> tuple[str, Mapping[str, Any]]:
        return next((s, p) for s, p in self.specs.parameters(operation) if p["in"] == "body")

    def _path_validator(self, operation: Operation, autonamed: str | None) -> Validator:
        key = ("path", operation, autonamed)
        if key not in self._validators:
            schemas = self._schemas["request"]
            parameters = {p["name"]: p for p in self._path_parameters(operation)}
            # Named {name} in the problems, as in the URL.
            checked = {f"{{{n}}}": p for n, p in parameters.items() if n not in PROVIDER_PARAMETERS and n != autonamed}
            schema = {
                "type": "object",
                "armClosed": True,
                "properties": {n: schemas.convert(operation.spec, p) for n, p in checked.items()},
                "armRequired": sorted(n for n, p in checked.items() if p.get("required")),
            }
            self._validators[key] = _Strict(schema, format_checker=_FORMATS)
        return self._validators[key]

    def body_problems(self, operation: Operation, body: Any) -> list[str]:
        """What is wrong with `body`, in ARM's shape, as the operation's request body."""
        key = ("body", operation)
        if key not in self._validators:
            spec, parameter = self._body(operation)
            schema = self._schemas["request"].root(spec, parameter["schema"])
            self._validators[key] = _Strict(schema, format_checker=_FORMATS)
        return _problems(self._validators[key], body)

    # --- responses ---------------------------------------------------------------------------

    def response_schema(self, operation: Operation) -> tuple[str, Mapping[str, Any]]:
        responses = self.specs.operation(operation)["responses"]
        return operation.spec, next(responses[c]["schema"] for c in ("200", "201") if "schema" in responses.get(c, {}))

    def response_problems(self, operation: Operation, body: Any, *, partial: bool = False) -> list[str]:
        """What is wrong with `body` as the operation's answer (partial: fields may be left out)."""
        key = ("response", operation, partial)
        if key not in self._validators:
            schema = self._schemas["response"].root(*self.response_schema(operation))
            self._validators[key] = (_Partial if partial else _Strict)(schema, format_checker=_FORMATS)
        return _problems(self._validators[key], body)

    def output_problems(self, operation: Operation, outputs: Mapping[str, Any]) -> list[str]:
        """What is wrong with a resource's state or an invoke's result as a mock gives it
        (azure-native's SDK shape, fields left out as a mock may): every field must be one the
        operation's answer has, at that path."""
        shaped = self.arm_shape(*self.response_schema(operation), _plain(dict(outputs)))
        return self.response_problems(operation, shaped, partial=True)

    def preflight_operation(self, path: str) -> Operation | None:
        """The operation of PREFLIGHT whose path template matches a request's path."""
        for operation in PREFLIGHT:
            pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(operation.path))
            if re.fullmatch(pattern, path, flags=re.IGNORECASE):
                return operation
        return None


def _container(parent: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for name in path:
        parent = parent.setdefault(name, {})
    return parent


@cache
def arm_specs() -> ArmSpecs:
    """The specs of ../shared, read once a session."""
    return ArmSpecs()
