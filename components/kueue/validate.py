"""Check Kueue objects (plain dicts) against the pinned Kueue version before anything is applied.

The checks run in the order the API server and Kueue apply them (rule ids: kueue.md §3):

1. ``schema`` (needs CRDs): the CRD's OpenAPI ``openAPIV3Schema`` for the object's apiVersion,
   checked with jsonschema after dropping the ``x-kubernetes-*`` markers, bounding
   ``format: int32/int64``, and rejecting unknown fields (the API server would prune them
   silently, so a misspelt field is a bug); plus ``x-kubernetes-list-type`` map/set uniqueness
   (CQ4, CQ5, CQ30) and "is this apiVersion/kind served".
2. CEL (needs CRDs): every ``x-kubernetes-validations`` rule of the CRD, evaluated generically with
   cel-python on the object after the schema's defaults are applied (the API server defaults
   before it validates). Each rule gets its kueue.md id from ``_CEL_RULE_IDS`` (``"CEL"`` for a
   rule the table does not know). Transition rules (those using ``oldSelf``: LQ2, RF11, TP5)
   only run on updates and are skipped, since these objects are validated as creates.
3. Webhook rules, re-implemented here because only a running Kueue enforces them (kueue v0.19.2
   source: pkg/webhooks/): CQ7-CQ13, CQ15-CQ18, CQ22, CQ24, CQ26, CQ28, CQ31, CQ33, CO3, CO4, CO6,
   RF2, RF5, RF8; plus LQ4, which nothing upstream checks, object names (``NAME``) and labels
   (``LABEL``). CQ16, CQ24 and CQ26 are enforced by both CEL and the webhook upstream; here the
   webhook version reports them (with the exact field path) and the CEL twin is not repeated.
4. Cross-object checks no CRD can do: ``DUPLICATE`` (kind, namespace, name), ``REF-flavor``,
   ``REF-topology``, ``REF-clusterqueue``, ``REF-namespace``, ``TAS-mixed`` (a ClusterQueue whose
   flavors are partly topology-aware), ``LQ5`` (the ClusterQueue's
   namespaceSelector must select the LocalQueue's namespace), and with ``capacity`` given
   ``CAPACITY`` / ``CAPACITY-missing``.

Without CRDs (``crds=None``) steps 1 and 2 are skipped: the rules only CEL enforces (CQ6, CO2,
RF4, RF7, RF10, TP3, TP4) and the OpenAPI schema are then not checked. Steps 3 and 4 always run.

The CRDs come from the Kueue chart the program installs (components/kueue/crds.py, which hands its
CRD documents to ``crds_from_documents``), or from the directory in ``KUEUE_CRDS_DIR``
(``load_crds``): the ``*.yaml`` files there are read and every ``CustomResourceDefinition`` of group
kueue.x-k8s.io in them is used, so either the files of ``config/components/crd/bases`` at the Kueue
release tag or the release's ``manifests.yaml`` work.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml
from jsonschema.protocols import Validator

from ..k8s.names import is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name
from ..k8s.quantity import QuantityError, parse_quantity

KUEUE_GROUP = "kueue.x-k8s.io"
CRDS_ENV = "KUEUE_CRDS_DIR"

Problem = tuple[str, str]  # (rule id, message) before the object's name is attached
Capacity = Mapping[str, Mapping[str, Decimal | int | str]]  # flavor -> resource -> quantity


@dataclass(frozen=True)
class Violation:
    object: str  # kind/[namespace/]name, e.g. "LocalQueue/research/default"
    rule: str  # kueue.md rule id, "schema", or a cross-object id such as "REF-flavor"
    message: str  # field path, what is wrong, and what is allowed

    def __str__(self) -> str:
        return f"{self.object}: [{self.rule}] {self.message}"


class KueueValidationError(Exception):
    """Generated Kueue objects that the API server or Kueue would reject (or never admit with)."""

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        super().__init__("\n".join(map(str, self.violations)))


class CrdError(RuntimeError):
    """The Kueue CRDs cannot be found or read."""


@dataclass(frozen=True)
class CelRule:
    kind: str
    path: str  # where the rule sits in the schema, e.g. "spec.resourceGroups[*]"
    expression: str
    message: str
    rule_id: str
    transition: bool  # uses oldSelf: the API server runs it on updates only
    program: celpy.Runner | None = field(default=None, compare=False, repr=False)  # None for transitions


@dataclass(frozen=True)
class _Node:
    """A schema node reduced to what defaulting, list uniqueness and CEL need."""

    type: str | None
    properties: Mapping[str, _Node]
    items: _Node | None
    additional: _Node | None
    defaults: Mapping[str, Any]
    list_type: str | None
    map_keys: tuple[str, ...]
    rules: tuple[CelRule, ...]


@dataclass(frozen=True)
class CrdVersion:
    api_version: str
    kind: str
    schema: Mapping[str, Any] = field(repr=False)  # openAPIV3Schema as the CRD has it
    cel_rules: tuple[CelRule, ...] = field(repr=False)
    root: _Node = field(compare=False, repr=False)
    validator: Validator = field(compare=False, repr=False)  # built once per version


@dataclass(frozen=True)
class CrdSchemas:
    source: str
    # (apiVersion, kind) -> schema and CEL rules, for every served version
    versions: Mapping[tuple[str, str], CrdVersion] = field(repr=False)

    @property
    def cel_rules(self) -> tuple[CelRule, ...]:
        return tuple(rule for version in self.versions.values() for rule in version.cel_rules)


# kueue.md §3 ids of the CRDs' CEL rules: (kind, schema path, words in the message, id); first
# match wins. A rule of another Kueue version that matches nothing is reported as "CEL".
_CEL_RULE_IDS: tuple[tuple[str, str, str, str], ...] = (
    ("ClusterQueue", "spec", "borrowingLimit must be nil", "CQ16"),
    ("ClusterQueue", "spec.resourceGroups[*]", "same number of resources", "CQ6"),
    ("ClusterQueue", "spec.preemption", "reclaimWithinCohort=Never", "CQ24"),
    ("ClusterQueue", "spec.flavorFungibility", "preference can only be set", "CQ26"),
    ("Cohort", "spec.resourceGroups[*]", "same number of resources", "CO2"),
    ("LocalQueue", "spec.clusterQueue", "immutable", "LQ2"),
    ("ResourceFlavor", "spec.nodeTaints", "taint effect", "RF4"),
    ("ResourceFlavor", "spec.tolerations", "", "RF7"),  # all five toleration rules are RF7
    ("ResourceFlavor", "spec", "nodeLabel is required", "RF10"),
    ("ResourceFlavor", "spec", "immutable", "RF11"),
    ("Topology", "spec.levels", "immutable", "TP5"),
    ("Topology", "spec.levels", "unique", "TP3"),
    ("Topology", "spec.levels", "kubernetes.io/hostname", "TP4"),
)
# Rules Kueue enforces twice, in the CRD's CEL and in its webhook (kueue.md §3.1).
_WEBHOOK_TWINS = frozenset({"CQ16", "CQ24", "CQ26"})
_OLD_SELF = re.compile(r"\boldSelf\b")
_INT_FORMATS = {"int32": 2**31, "int64": 2**63}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _format_path(parts: Iterable[str | int]) -> str:
    """jsonschema's error path as a field path: spec.resourceGroups[0].flavors[1]."""
    text = ""
    for part in parts:
        text = f"{text}[{part}]" if isinstance(part, int) else _join(text, part)
    return text


def _cel_rule_id(kind: str, path: str, message: str) -> str:
    for rule_kind, rule_path, words, rule_id in _CEL_RULE_IDS:
        if (rule_kind, rule_path) == (kind, path) and words in message:
            return rule_id
    return "CEL"


# ---------------------------------------------------------------------------------------------
# Loading the CRDs


def load_crds(crds_dir: str | os.PathLike[str]) -> CrdSchemas:
    """Read every Kueue CRD in ``crds_dir`` (``*.yaml``); loaded once per directory."""
    path = Path(crds_dir).expanduser().resolve()
    if not path.is_dir():
        raise CrdError(
            f"Kueue CRD directory {str(crds_dir)!r} does not exist; put the CRDs of your Kueue "
            f"version there (config/components/crd/bases at the release tag) and set {CRDS_ENV}"
        )
    return _load_crds(str(path))


@functools.cache
def _load_crds(path: str) -> CrdSchemas:
    docs: list[object] = []
    for file in sorted(Path(path).glob("*.yaml")):
        with file.open(encoding="utf-8") as stream:
            docs.extend(yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    return crds_from_documents(docs, source=path, where=f"{path}/*.yaml")


def crds_from_documents(docs: Iterable[object], *, source: str, where: str | None = None) -> CrdSchemas:
    """The Kueue CRDs among ``docs`` (parsed YAML documents; anything else is ignored), compiled.

    ``source`` names where they came from (a directory, or a chart and its version)."""
    env = celpy.Environment()
    versions: dict[tuple[str, str], CrdVersion] = {}
    for doc in docs:
        if not (isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"):
            continue
        spec = doc["spec"]
        if spec.get("group") != KUEUE_GROUP:
            continue
        kind = spec["names"]["kind"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            schema = version["schema"]["openAPIV3Schema"]
            rules: list[CelRule] = []
            root = _compile_node(schema, kind, "", env, rules)
            api_version = f"{KUEUE_GROUP}/{version['name']}"
            versions[(api_version, kind)] = CrdVersion(
                api_version=api_version,
                kind=kind,
                schema=schema,
                cel_rules=tuple(rules),
                root=root,
                validator=jsonschema.Draft7Validator(_json_schema(schema)),
            )
    if not versions:
        raise CrdError(f"no CustomResourceDefinition of group {KUEUE_GROUP} in {where or source}")
    return CrdSchemas(source=source, versions=versions)


def crds_from_env(*, required: bool) -> CrdSchemas | None:
    """The CRDs in ``$KUEUE_CRDS_DIR``; when it is unset, an error if ``required``, else None."""
    value = os.environ.get(CRDS_ENV, "").strip()
    if not value:
        if required:
            raise CrdError(
                f"{CRDS_ENV} is not set: point it at a directory holding the Kueue CRDs of the "
                "pinned version (config/components/crd/bases at the Kueue release tag)"
            )
        return None
    return load_crds(value)


def _compile_node(
    schema: Mapping[str, Any], kind: str, path: str, env: celpy.Environment, rules: list[CelRule]
) -> _Node:
    properties = {
        name: _compile_node(sub, kind, _join(path, name), env, rules)
        for name, sub in schema.get("properties", {}).items()
    }
    items = schema.get("items")
    additional = schema.get("additionalProperties")
    node_rules = []
    for entry in schema.get("x-kubernetes-validations", ()):
        expression = entry["rule"]
        message = entry.get("message") or f"failed rule: {expression}"
        transition = bool(_OLD_SELF.search(expression))
        node_rules.append(
            CelRule(
                kind=kind,
                path=path,
                expression=expression,
                message=message,
                rule_id=_cel_rule_id(kind, path, message),
                transition=transition,
                # A compile error here means the pinned CRDs use CEL that cel-python cannot read:
                # let it propagate rather than drop the rule.
                program=None if transition else env.program(env.compile(expression)),
            )
        )
    rules.extend(node_rules)
    return _Node(
        type=schema.get("type"),
        properties=properties,
        items=_compile_node(items, kind, f"{path}[*]", env, rules) if items else None,
        additional=(
            _compile_node(additional, kind, f"{path}{{*}}", env, rules)
            if isinstance(additional, Mapping)
            else None
        ),
        defaults={
            name: sub["default"] for name, sub in schema.get("properties", {}).items() if "default" in sub
        },
        list_type=schema.get("x-kubernetes-list-type"),
        map_keys=tuple(schema.get("x-kubernetes-list-map-keys", ())),
        rules=tuple(node_rules),
    )


def _python_pattern(pattern: str) -> str:
    """The API server's Go (RE2) pattern as Python `re` reads it: RE2 allows a flag group such as
    `(?i)` after `^` (AdmissionCheck's parameter names), Python only at the very start."""
    for flags in ("(?i)", "(?s)", "(?m)"):
        if pattern.startswith("^" + flags):
            return flags + "^" + pattern[len(flags) + 1:]
    return pattern


def _json_schema(schema: Any) -> Any:
    """openAPIV3Schema -> JSON Schema (Draft 7).

    controller-gen writes ``anyOf: [integer, string]`` beside every ``x-kubernetes-int-or-string``,
    so dropping the ``x-kubernetes-*`` markers keeps their meaning; list-type uniqueness is
    checked by ``_walk``.
    """
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: _json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _json_schema(value)
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [_json_schema(sub) for sub in value]
        elif key == "pattern":
            out[key] = _python_pattern(value)
        else:
            out[key] = value
    if schema.get("format") in _INT_FORMATS:
        bound = _INT_FORMATS[schema["format"]]
        out.setdefault("minimum", -bound)
        out.setdefault("maximum", bound - 1)
    # The API server prunes unknown fields without an error; a generator that writes one has a bug.
    if "properties" in schema and "additionalProperties" not in schema and not schema.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        out["additionalProperties"] = False
    return out


# ---------------------------------------------------------------------------------------------
# Steps 1 and 2: schema and CEL

_PY_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}


def _crd_problems(crds: CrdSchemas, obj: dict[str, Any], skip_rules: AbstractSet[str]) -> list[Problem]:
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    version = crds.versions.get(key)
    if version is None:
        served = sorted(api for api, kind in crds.versions if kind == key[1])
        return [
            (
                "schema",
                f"apiVersion {key[0]!r} kind {key[1]!r} is not served by the CRDs in {crds.source}"
                + (f"; served apiVersions: {', '.join(served)}" if served else ""),
            )
        ]
    data = copy.deepcopy(obj)
    problems: list[Problem] = []
    _walk(version.root, data, "", skip_rules, problems)  # applies defaults first, then CEL
    schema_problems = [
        ("schema", f"{_format_path(error.absolute_path) or '<object>'}: {error.message}")
        for error in version.validator.iter_errors(data)
    ]
    return schema_problems + problems


def _walk(node: _Node, value: Any, path: str, skip_rules: AbstractSet[str], out: list[Problem]) -> None:
    expected = _PY_TYPES.get(node.type or "")
    if expected is not None and not isinstance(value, expected):
        return  # the schema step reports the wrong type; CEL would only add noise
    if isinstance(value, dict):
        for name, default in node.defaults.items():
            value.setdefault(name, copy.deepcopy(default))
        for name, child in node.properties.items():
            if name in value:
                _walk(child, value[name], _join(path, name), skip_rules, out)
        if node.additional is not None:
            for name, item in value.items():
                _walk(node.additional, item, f"{path}[{name!r}]", skip_rules, out)
    elif isinstance(value, list):
        out.extend(_list_type_problems(node, value, path))
        if node.items is not None:
            for index, item in enumerate(value):
                _walk(node.items, item, f"{path}[{index}]", skip_rules, out)
    for rule in node.rules:
        if not rule.transition and rule.rule_id not in skip_rules:
            failure = _cel_failure(rule, value)
            if failure:
                out.append((rule.rule_id, f"{path or '<object>'}: {failure}"))


def _cel_failure(rule: CelRule, value: Any) -> str | None:
    try:
        assert rule.program is not None  # only transition rules have none, and they are skipped
        result: Any = rule.program.evaluate({"self": celpy.json_to_cel(value)})
    except (celpy.CELEvalError, ValueError, TypeError) as error:
        result = error
    if isinstance(result, Exception):
        # The API server also rejects an object on which a rule cannot be evaluated.
        return f"{rule.message} (CEL rule `{rule.expression}` failed to evaluate: {result.args[0]})"
    return None if result else rule.message


def _list_type_problems(node: _Node, items: list[Any], path: str) -> Iterator[Problem]:
    if node.list_type not in ("map", "set"):
        return
    seen: set[str] = set()
    for index, item in enumerate(items):
        if node.list_type == "map":
            identity = {key: item.get(key) for key in node.map_keys} if isinstance(item, dict) else item
        else:
            identity = item
        fingerprint = json.dumps(identity, sort_keys=True, default=str)
        if fingerprint in seen:
            described = (
                f"keyed by {', '.join(node.map_keys)} (x-kubernetes-list-type: map)"
                if node.list_type == "map"
                else "of unique items (x-kubernetes-list-type: set)"
            )
            yield "schema", f"{path}[{index}]: duplicate entry {fingerprint} in a list {described}"
        seen.add(fingerprint)


# ---------------------------------------------------------------------------------------------
# Step 3: webhook rules

_NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every Namespace
_QUANTITY_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")
# Kueue's caps on a ClusterQueue's groups (CQ11-CQ13; kueue v0.19.2 source:
# pkg/webhooks/clusterqueue_webhook.go); Cohorts have none (CO5).
_MAX_FLAVORS, _MAX_RESOURCES, _MAX_PAIRS_PER_GROUP = 256, 256, 512
_MAX_CONCURRENT_ADMISSION_FLAVORS = 16  # CQ33
_QUALIFIED_NAME = (
    "must be a qualified name: an optional DNS-subdomain prefix and '/', then at most 63 letters, "
    "digits, '-', '_' or '.', starting and ending with a letter or digit"
)
_LABEL_VALUE = (
    "must be empty or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)


def _dns_name_problem(value: Any, *, max_length: int, label: bool = False) -> str | None:
    if label:
        valid = isinstance(value, str) and is_dns1123_label(value)
        allowed = "DNS-1123 label: lowercase letters, digits and '-'"
    else:
        valid = isinstance(value, str) and is_dns1123_subdomain(value)
        allowed = "DNS-1123 subdomain: lowercase letters, digits, '-' and '.'"
    if valid and len(value) <= max_length:
        return None
    return f"must be a {allowed}, at most {max_length} characters, starting and ending with a letter or digit"


def _qualified_name_problem(value: Any) -> str | None:
    """Label keys, taint keys and resource names (IsQualifiedName)."""
    return None if isinstance(value, str) and is_qualified_name(value) else _QUALIFIED_NAME


def _label_value_problem(value: Any) -> str | None:
    return None if isinstance(value, str) and is_label_value(value) else _LABEL_VALUE


def _labels_problems(labels: Any, path: str) -> Iterator[str]:
    if labels is None:
        return
    if not isinstance(labels, Mapping):
        yield f"{path} must be a map of label keys to values"
        return
    for key, value in labels.items():
        if problem := _qualified_name_problem(key):
            yield f"{path} key {key!r} {problem}"
        if problem := _label_value_problem(value):
            yield f"{path}[{key!r}] value {value!r} {problem}"


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class _GroupRules:
    """Rule ids for the resource-group checks Kueue's webhook shares between ClusterQueue and
    Cohort (kueue v0.19.2 source: pkg/webhooks/clusterqueue_webhook.go validateResourceGroups,
    called from cohort_webhook.go too)."""

    parent_field: str  # "cohortName" / "parentName": limits need a parent to borrow from / lend to
    order: str
    resource_name: str
    duplicate_resource: str
    duplicate_flavor: str
    quantity: str
    negative: str
    borrowing_without_parent: str
    lending_without_parent: str
    # ClusterQueues only (CO5): lendingLimit <= nominalQuota and the 256/256/512 caps.
    lending_over_nominal: str | None
    too_many_flavors: str | None
    too_many_resources: str | None
    too_many_pairs: str | None


_CQ_GROUPS = _GroupRules(
    parent_field="cohortName",
    order="CQ7",
    resource_name="CQ8",
    duplicate_resource="CQ9",
    duplicate_flavor="CQ10",
    quantity="CQ14",
    negative="CQ15",
    borrowing_without_parent="CQ16",
    lending_without_parent="CQ17",
    lending_over_nominal="CQ18",
    too_many_flavors="CQ11",
    too_many_resources="CQ12",
    too_many_pairs="CQ13",
)
_COHORT_GROUPS = _GroupRules(
    parent_field="parentName",
    order="CO3",
    resource_name="CO3",
    duplicate_resource="CO3",
    duplicate_flavor="CO3",
    quantity="CO2",
    negative="CO3",
    borrowing_without_parent="CO4",
    lending_without_parent="CO4",
    lending_over_nominal=None,
    too_many_flavors=None,
    too_many_resources=None,
    too_many_pairs=None,
)


def _resource_group_problems(spec: Mapping[str, Any], rules: _GroupRules, has_parent: bool) -> Iterator[Problem]:
    seen_resources: set[str] = set()
    flavor_count = 0
    seen_flavors: set[str] = set()
    for i, group in enumerate(_list(spec.get("resourceGroups"))):
        group_path = f"spec.resourceGroups[{i}]"
        covered = _list(_dict(group).get("coveredResources"))
        for j, name in enumerate(covered):
            where = f"{group_path}.coveredResources[{j}]"
            if problem := _qualified_name_problem(name):
                yield rules.resource_name, f"{where} {name!r} {problem}"
            elif name in seen_resources:
                yield rules.duplicate_resource, (
                    f"{where} {name!r} is already covered; a resource may appear in one group only, once"
                )
            seen_resources.add(str(name))
        flavors = _list(_dict(group).get("flavors"))
        flavor_count += len(flavors)
        if rules.too_many_pairs and len(flavors) * len(covered) > _MAX_PAIRS_PER_GROUP:
            yield rules.too_many_pairs, (
                f"{group_path} has {len(flavors)} flavors x {len(covered)} resources; "
                f"at most {_MAX_PAIRS_PER_GROUP} flavor/resource pairs per group"
            )
        for j, flavor in enumerate(flavors):
            flavor = _dict(flavor)
            flavor_path = f"{group_path}.flavors[{j}]"
            name = str(flavor.get("name"))
            if name in seen_flavors:
                yield rules.duplicate_flavor, (
                    f"{flavor_path}.name {name!r} is already used; a flavor may appear in one group only, once"
                )
            seen_flavors.add(name)
            for k, (resource, covered_name) in enumerate(zip(_list(flavor.get("resources")), covered)):
                yield from _quota_problems(
                    _dict(resource), covered_name, k, f"{flavor_path}.resources[{k}]", rules, has_parent
                )
    if rules.too_many_flavors and flavor_count > _MAX_FLAVORS:
        yield rules.too_many_flavors, f"spec.resourceGroups has {flavor_count} flavors; at most {_MAX_FLAVORS}"
    if rules.too_many_resources and len(seen_resources) > _MAX_RESOURCES:
        yield rules.too_many_resources, (
            f"spec.resourceGroups covers {len(seen_resources)} resources; at most {_MAX_RESOURCES}"
        )


def _quota_problems(
    resource: Mapping[str, Any], covered_name: Any, index: int, path: str, rules: _GroupRules, has_parent: bool
) -> Iterator[Problem]:
    if resource.get("name") != covered_name:
        yield rules.order, (
            f"{path}.name is {resource.get('name')!r} but coveredResources[{index}] is {covered_name!r}; "
            "resources must follow coveredResources order"
        )
    amounts: dict[str, Decimal] = {}
    for name in _QUANTITY_FIELDS:
        if name not in resource:
            continue
        try:
            amounts[name] = parse_quantity(resource[name])
        except QuantityError:
            yield rules.quantity, f"{path}.{name} {resource[name]!r} is not a quantity (e.g. 500m, 4, 16Gi)"
            continue
        if amounts[name] < 0:
            yield rules.negative, f"{path}.{name} is {resource[name]}; quotas must be >= 0"
    if not has_parent:
        for name, rule in (
            ("borrowingLimit", rules.borrowing_without_parent),
            ("lendingLimit", rules.lending_without_parent),
        ):
            if name in resource:
                yield rule, (
                    f"{path}.{name} is set but spec.{rules.parent_field} is empty; "
                    f"{name} is allowed only with a {rules.parent_field}"
                )
    lending, nominal = amounts.get("lendingLimit"), amounts.get("nominalQuota")
    if rules.lending_over_nominal and lending is not None and nominal is not None and lending > nominal:
        yield rules.lending_over_nominal, (
            f"{path}.lendingLimit {resource['lendingLimit']} is above nominalQuota "
            f"{resource['nominalQuota']}; it must be <= nominalQuota"
        )


def _weight_problems(spec: Mapping[str, Any], rule: str, *, reject_tiny: bool) -> Iterator[Problem]:
    fair_sharing = _dict(spec.get("fairSharing"))
    if "weight" not in fair_sharing:
        return
    raw = fair_sharing["weight"]
    try:
        weight = parse_quantity(raw)
    except QuantityError:
        yield rule, f"spec.fairSharing.weight {raw!r} is not a Kubernetes quantity"
        return
    if weight < 0:
        yield rule, f"spec.fairSharing.weight is {raw}; it must be >= 0"
    # Kueue rejects 0 < weight <= 1n: such weights collapse to 0 in its arithmetic (CQ28, CO6).
    elif reject_tiny and 0 < weight <= Decimal("1e-9"):
        yield rule, f"spec.fairSharing.weight is {raw}; it must be 0 or above 1e-9"


def _selector_problems(selector: Any, path: str) -> Iterator[str]:
    """metav1 validation.ValidateLabelSelector, which Kueue's webhook applies (CQ22)."""
    if selector is None:
        return
    if not isinstance(selector, Mapping):
        yield f"{path} must be a label selector (matchLabels / matchExpressions)"
        return
    yield from _labels_problems(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expression in enumerate(_list(selector.get("matchExpressions"))):
        expression = _dict(expression)
        where = f"{path}.matchExpressions[{i}]"
        if problem := _qualified_name_problem(expression.get("key")):
            yield f"{where}.key {expression.get('key')!r} {problem}"
        operator, values = expression.get("operator"), _list(expression.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                yield f"{where}.values must be non-empty when operator is {operator}"
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                yield f"{where}.values must be empty when operator is {operator}"
        else:
            yield f"{where}.operator {operator!r} is not one of In, NotIn, Exists, DoesNotExist"
        for j, value in enumerate(values):
            if problem := _label_value_problem(value):
                yield f"{where}.values[{j}] {value!r} {problem}"


def _cohort_name(obj: Mapping[str, Any]) -> str:
    # v1beta1 ClusterQueues name their cohort in spec.cohort (kueue.md §2).
    field_name = "cohort" if obj.get("apiVersion") == f"{KUEUE_GROUP}/v1beta1" else "cohortName"
    value = _dict(obj.get("spec")).get(field_name)
    return value if isinstance(value, str) else ""


def _flavors(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(field path, entry) for every flavors[] entry of every resource group."""
    for i, group in enumerate(_list(spec.get("resourceGroups"))):
        for j, flavor in enumerate(_list(_dict(group).get("flavors"))):
            yield f"spec.resourceGroups[{i}].flavors[{j}]", _dict(flavor)


def _cluster_queue_problems(obj: Mapping[str, Any]) -> Iterator[Problem]:
    spec = _dict(obj.get("spec"))
    yield from _resource_group_problems(spec, _CQ_GROUPS, has_parent=bool(_cohort_name(obj)))
    for message in _selector_problems(spec.get("namespaceSelector"), "spec.namespaceSelector"):
        yield "CQ22", message
    # CQ24 and CQ26 compare against the API server's defaults (CQ23, CQ25) where a field is unset.
    preemption = _dict(spec.get("preemption"))
    borrow_policy = _dict(preemption.get("borrowWithinCohort")).get("policy", "Never")
    if preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow_policy != "Never":
        yield "CQ24", (
            f"spec.preemption.borrowWithinCohort.policy is {borrow_policy!r} while reclaimWithinCohort "
            "is Never; borrowWithinCohort needs reclaimWithinCohort LowerPriority or Any"
        )
    fungibility = _dict(spec.get("flavorFungibility"))
    if "preference" in fungibility and (
        fungibility.get("whenCanBorrow", "MayStopSearch") != "TryNextFlavor"
        or fungibility.get("whenCanPreempt", "TryNextFlavor") != "TryNextFlavor"
    ):
        yield "CQ26", (
            "spec.flavorFungibility.preference is set; it is allowed only when whenCanBorrow and "
            "whenCanPreempt are both TryNextFlavor"
        )
    yield from _weight_problems(spec, "CQ28", reject_tiny=True)
    flavors = {str(flavor.get("name")) for _, flavor in _flavors(spec)}
    checks = _list(_dict(spec.get("admissionChecksStrategy")).get("admissionChecks"))
    for i, check in enumerate(checks):
        for j, flavor in enumerate(_list(_dict(check).get("onFlavors"))):
            if flavor not in flavors:
                yield "CQ31", (
                    f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}] is {flavor!r}, "
                    f"which is not a flavor of this ClusterQueue's resourceGroups ({_names(flavors)})"
                )
    yield from _concurrent_admission_problems(spec, flavors)


def _concurrent_admission_problems(spec: Mapping[str, Any], flavors: set[str]) -> Iterator[Problem]:
    """CQ33: what Kueue's webhook requires of concurrentAdmissionPolicy (alpha ConcurrentAdmission)."""
    if "concurrentAdmissionPolicy" not in spec:
        return
    migration = _dict(_dict(spec["concurrentAdmissionPolicy"]).get("migration"))
    groups = _list(spec.get("resourceGroups"))
    if len(groups) != 1:
        yield "CQ33", f"spec.concurrentAdmissionPolicy needs exactly 1 resource group (has {len(groups)})"
    elif len(_list(_dict(groups[0]).get("flavors"))) > _MAX_CONCURRENT_ADMISSION_FLAVORS:
        yield "CQ33", (
            "spec.concurrentAdmissionPolicy allows at most "
            f"{_MAX_CONCURRENT_ADMISSION_FLAVORS} flavors in spec.resourceGroups[0]"
        )
    if spec.get("queueingStrategy") == "StrictFIFO":
        yield "CQ33", "spec.concurrentAdmissionPolicy cannot be used with queueingStrategy StrictFIFO"
    if "constraints" in migration:
        if migration.get("mode") != "TryPreferredFlavors":
            yield "CQ33", (
                "spec.concurrentAdmissionPolicy.migration.constraints is allowed only with mode TryPreferredFlavors"
            )
        last = _dict(migration["constraints"]).get("lastAcceptableFlavorName")
        if last is not None and last not in flavors:
            yield "CQ33", (
                f"spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName {last!r} "
                f"is not a flavor of this ClusterQueue ({_names(flavors)})"
            )


def _cohort_problems(obj: Mapping[str, Any]) -> Iterator[Problem]:
    spec = _dict(obj.get("spec"))
    yield from _resource_group_problems(spec, _COHORT_GROUPS, has_parent=bool(spec.get("parentName")))
    yield from _weight_problems(spec, "CO6", reject_tiny=True)


def _local_queue_problems(obj: Mapping[str, Any]) -> Iterator[Problem]:
    # LQ4: Kueue accepts a negative LocalQueue weight (it has no LocalQueue webhook); we do not.
    yield from _weight_problems(_dict(obj.get("spec")), "LQ4", reject_tiny=False)


def _resource_flavor_problems(obj: Mapping[str, Any]) -> Iterator[Problem]:
    """RF2, RF5, RF8: kueue v0.19.2 source pkg/webhooks/resourceflavor_webhook.go."""
    spec = _dict(obj.get("spec"))
    for message in _labels_problems(spec.get("nodeLabels"), "spec.nodeLabels"):
        yield "RF2", message
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(_list(spec.get("nodeTaints"))):
        taint = _dict(taint)
        where = f"spec.nodeTaints[{i}]"
        if problem := _qualified_name_problem(taint.get("key")):
            yield "RF5", f"{where}.key {taint.get('key')!r} {problem}"
        if problem := _label_value_problem(taint.get("value", "")):
            yield "RF5", f"{where}.value {taint.get('value')!r} {problem}"
        identity = (str(taint.get("key")), str(taint.get("effect")))
        if identity in seen:
            yield "RF5", (
                f"{where} repeats key {identity[0]!r} with effect {identity[1]!r}; "
                "taints must be unique by key and effect"
            )
        seen.add(identity)
    for i, toleration in enumerate(_list(spec.get("tolerations"))):
        toleration = _dict(toleration)
        where = f"spec.tolerations[{i}]"
        if toleration.get("key") and (problem := _qualified_name_problem(toleration["key"])):
            yield "RF8", f"{where}.key {toleration['key']!r} {problem}"
        if toleration.get("operator", "Equal") == "Equal" and (
            problem := _label_value_problem(toleration.get("value", ""))
        ):
            yield "RF8", f"{where}.value {toleration.get('value')!r} {problem}"


_KIND_PROBLEMS: Mapping[str, Callable[[Mapping[str, Any]], Iterator[Problem]]] = {
    "ClusterQueue": _cluster_queue_problems,
    "Cohort": _cohort_problems,
    "LocalQueue": _local_queue_problems,
    "ResourceFlavor": _resource_flavor_problems,
}
# Name limits (kueue.md §3.0): LocalQueue and WorkloadPriorityClass names end up in label values.
_LABEL_VALUE_NAMED = frozenset({"LocalQueue", "WorkloadPriorityClass"})


def _metadata_problems(obj: Mapping[str, Any]) -> Iterator[Problem]:
    kind = obj.get("kind")
    metadata = _dict(obj.get("metadata"))
    name = metadata.get("name")
    if kind == "Namespace":
        problem = _dns_name_problem(name, max_length=63, label=True)
    else:
        problem = _dns_name_problem(name, max_length=63 if kind in _LABEL_VALUE_NAMED else 253)
    if problem:
        yield "NAME", f"metadata.name {name!r} {problem}"
    if kind == "LocalQueue":
        namespace = metadata.get("namespace")
        if problem := _dns_name_problem(namespace, max_length=63, label=True):
            yield "NAME", f"metadata.namespace {namespace!r} {problem} (a LocalQueue lives in a namespace)"
    for message in _labels_problems(metadata.get("labels"), "metadata.labels"):
        yield "LABEL", message


# ---------------------------------------------------------------------------------------------
# Step 4: cross-object checks


def _describe(obj: Any) -> str:
    metadata = _dict(_dict(obj).get("metadata"))
    parts = [str(_dict(obj).get("kind") or "<no kind>")]
    if "namespace" in metadata:
        parts.append(str(metadata["namespace"]))
    parts.append(str(metadata.get("name") or "<no name>"))
    return "/".join(parts)


def _names(names: Iterable[Any]) -> str:
    listed = sorted(str(name) for name in names)
    return ", ".join(listed) if listed else "none"


@dataclass(frozen=True)
class _Index:
    """Objects by kind and name, built once so every reference is an O(1) lookup."""

    by_kind: dict[str, dict[Any, Mapping[str, Any]]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, obj: Mapping[str, Any]) -> bool:
        """False when an object with the same kind, namespace and name was already added."""
        metadata = _dict(obj.get("metadata"))
        key = (metadata.get("namespace"), metadata.get("name"))
        named = self.by_kind[str(obj.get("kind"))]
        if key in named:
            return False
        named[key] = obj
        return True

    def get(self, kind: str, name: Any) -> Mapping[str, Any] | None:
        """A cluster-scoped object by name."""
        return self.by_kind[kind].get((None, name))

    def of(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return self.by_kind[kind].values()

    def names(self, kind: str) -> set[Any]:
        return {name for _, name in self.by_kind[kind]}


def _selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(selector, Mapping):
        return False  # CQ22: a null or omitted namespaceSelector matches no namespace
    if any(labels.get(key) != value for key, value in _dict(selector.get("matchLabels")).items()):
        return False
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
        key, operator = str(expression.get("key")), expression.get("operator")
        values = _list(expression.get("values"))
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False)  # CQ22 reports an unknown operator
        if not matched:
            return False
    return True


def _reference_problems(index: _Index) -> Iterator[Violation]:
    flavors = index.names("ResourceFlavor")
    for kind in ("ClusterQueue", "Cohort"):
        for obj in index.of(kind):
            for path, flavor in _flavors(_dict(obj.get("spec"))):
                if flavor.get("name") not in flavors:
                    yield Violation(
                        _describe(obj),
                        "REF-flavor",
                        f"{path}.name {flavor.get('name')!r} names no ResourceFlavor (known: {_names(flavors)}); "
                        "Kueue would keep the queue inactive (CQ35)",
                    )
    for obj in index.of("ResourceFlavor"):
        topology = _dict(obj.get("spec")).get("topologyName")
        if topology is not None and index.get("Topology", topology) is None:
            yield Violation(
                _describe(obj),
                "REF-topology",
                f"spec.topologyName {topology!r} names no Topology (known: {_names(index.names('Topology'))})",
            )
    yield from _mixed_topology_problems(index)
    yield from _local_queue_reference_problems(index)
    yield from _admission_check_problems(index)


_MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
_PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


def _admission_check_problems(index: _Index) -> Iterator[Violation]:
    """What keeps a ClusterQueue inactive for its admission checks (kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go, inactiveReason): a check that names no AdmissionCheck, more
    than one MultiKueue check, a MultiKueue check per flavor, or MultiKueue with ProvisioningRequest;
    and a MultiKueue check whose MultiKueueConfig or clusters are missing (it stays inactive)."""
    for obj in index.of("ClusterQueue"):
        checks = _list(_dict(_dict(obj.get("spec")).get("admissionChecksStrategy")).get("admissionChecks"))
        controllers: dict[str, list[str]] = defaultdict(list)
        for i, check in enumerate(map(_dict, checks)):
            found = index.get("AdmissionCheck", check.get("name"))
            if found is None and not index.names("AdmissionCheck"):
                continue  # checked alone: the AdmissionCheck may exist already, as for namespaces
            if found is None:
                yield Violation(_describe(obj), "REF-admissioncheck", (
                    f"spec.admissionChecksStrategy.admissionChecks[{i}].name {check.get('name')!r} names no "
                    f"AdmissionCheck (known: {_names(index.names('AdmissionCheck'))}); the queue would stay inactive"))
                continue
            controller = str(_dict(found.get("spec")).get("controllerName"))
            controllers[controller].append(str(check.get("name")))
            if controller == _MULTIKUEUE_CONTROLLER and check.get("onFlavors"):
                yield Violation(_describe(obj), "MK-per-flavor", (
                    f"applies MultiKueue check {check.get('name')!r} per flavor (onFlavors); Kueue keeps such a "
                    "queue inactive: apply it to every flavor"))
        multikueue = controllers.get(_MULTIKUEUE_CONTROLLER, [])
        if len(multikueue) > 1:
            yield Violation(_describe(obj), "MK-multiple", (
                f"has {len(multikueue)} MultiKueue checks ({', '.join(multikueue)}); Kueue keeps the queue inactive"))
        if multikueue and controllers.get(_PROVISIONING_CONTROLLER):
            yield Violation(_describe(obj), "MK-provisioning", (
                "combines MultiKueue with ProvisioningRequest checks; Kueue keeps the queue inactive (put "
                "ProvisioningRequest on the workers' queues)"))
    for check in index.of("AdmissionCheck"):
        spec = _dict(check.get("spec"))
        parameters = _dict(spec.get("parameters"))
        if spec.get("controllerName") != _MULTIKUEUE_CONTROLLER or parameters.get("kind") != "MultiKueueConfig":
            continue
        config = index.get("MultiKueueConfig", parameters.get("name"))
        if config is None:
            yield Violation(_describe(check), "REF-multikueueconfig", (
                f"spec.parameters names MultiKueueConfig {parameters.get('name')!r}, which is not among the objects"))
            continue
        missing = [c for c in _list(_dict(config.get("spec")).get("clusters")) if index.get("MultiKueueCluster", c) is None]
        if missing:
            yield Violation(_describe(config), "REF-multikueuecluster", (
                f"spec.clusters names {', '.join(map(str, missing))}, with no MultiKueueCluster among the objects"))


def _mixed_topology_problems(index: _Index) -> Iterator[Violation]:
    """TAS-mixed: a ClusterQueue whose flavors are partly topology-aware. Kueue places a workload
    that requests no topology only on flavors without topologyName unless every flavor of its
    ClusterQueue is topology-aware (kueue v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go;
    kueue.md §15), so such a queue skips its topology-aware flavors for ordinary jobs."""
    for obj in index.of("ClusterQueue"):
        names = [f.get("name") for _, f in _flavors(_dict(obj.get("spec")))]
        flavors = {n: index.get("ResourceFlavor", n) for n in names}
        aware = sorted(str(n) for n, rf in flavors.items() if rf is not None and _dict(rf.get("spec")).get("topologyName"))
        plain = sorted(str(n) for n, rf in flavors.items() if rf is not None and not _dict(rf.get("spec")).get("topologyName"))
        if aware and plain:
            yield Violation(
                _describe(obj),
                "TAS-mixed",
                f"mixes topology-aware flavors ({', '.join(aware)}) with ordinary ones ({', '.join(plain)}): Kueue "
                "admits a job that requests no topology only on the ordinary ones (Kueue's reason: "
                f'Flavor "{aware[0]}" supports only TopologyAwareScheduling); put topology-aware flavors in a '
                "ClusterQueue of their own",
            )


def _local_queue_reference_problems(index: _Index) -> Iterator[Violation]:
    namespace_labels = {
        _dict(ns.get("metadata")).get("name"): _dict(_dict(ns.get("metadata")).get("labels"))
        for ns in index.of("Namespace")
    }
    for queue in index.of("LocalQueue"):
        namespace = _dict(queue.get("metadata")).get("namespace")
        # 'default' always exists; other namespaces must be among the objects when any are given.
        if namespace_labels and namespace != "default" and namespace not in namespace_labels:
            yield Violation(
                _describe(queue),
                "REF-namespace",
                f"metadata.namespace {namespace!r} is not among the Namespace objects ({_names(namespace_labels)})",
            )
        target = _dict(queue.get("spec")).get("clusterQueue")
        cluster_queue = index.get("ClusterQueue", target)
        if cluster_queue is None:
            yield Violation(
                _describe(queue),
                "REF-clusterqueue",
                f"spec.clusterQueue {target!r} names no ClusterQueue (known: "
                f"{_names(index.names('ClusterQueue'))}); the LocalQueue would stay inactive (LQ1, LQ5)",
            )
            continue
        labels = {**namespace_labels.get(namespace, {}), _NAMESPACE_NAME_LABEL: namespace}
        selector = _dict(cluster_queue.get("spec")).get("namespaceSelector")
        if not _selector_matches(selector, labels):
            yield Violation(
                _describe(queue),
                "LQ5",
                f"namespace {namespace!r} (labels {json.dumps(labels, sort_keys=True)}) is not selected by "
                f"ClusterQueue/{target} spec.namespaceSelector {json.dumps(selector, sort_keys=True)} "
                "(null or omitted selects no namespace, {} selects all); its workloads would never be admitted",
            )


def _capacity_problems(index: _Index, capacity: Capacity) -> Iterator[Violation]:
    totals: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    for kind in ("ClusterQueue", "Cohort"):
        for obj in index.of(kind):
            for _, flavor in _flavors(_dict(obj.get("spec"))):
                for resource in map(_dict, _list(flavor.get("resources"))):
                    try:
                        amount = parse_quantity(resource.get("nominalQuota", ""))
                    except QuantityError:
                        continue  # CQ14 / CO2 / schema report it
                    key = (str(flavor.get("name")), str(resource.get("name")))
                    totals[key] += amount
                    holders[key].append(_describe(obj))
    for (flavor_name, resource_name), total in totals.items():
        names = holders[(flavor_name, resource_name)]
        by = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        limit = _dict(capacity.get(flavor_name)).get(resource_name)
        if limit is None:
            yield Violation(
                f"ResourceFlavor/{flavor_name}",
                "CAPACITY-missing",
                f"{by} set a nominalQuota of {resource_name!r} in flavor {flavor_name!r}, but the capacity has no "
                f"{resource_name!r} for {flavor_name!r} (it has: {_names(_dict(capacity.get(flavor_name)))})",
            )
        elif total > parse_quantity(limit):
            yield Violation(
                f"ResourceFlavor/{flavor_name}",
                "CAPACITY",
                f"the nominalQuota of {resource_name!r} in flavor {flavor_name!r} sums to {total.normalize():f} over {by}; "
                f"it must not exceed the pool's capacity {limit}",
            )


# ---------------------------------------------------------------------------------------------
# Entry points


def _plain(value: Any) -> Any:
    """A private copy with Mappings as dicts and tuples as lists, as YAML/JSON would carry them."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _is_supported(obj: Mapping[str, Any]) -> bool:
    api_version = str(obj.get("apiVersion", ""))
    if obj.get("kind") == "Namespace":
        return api_version == "v1"
    return api_version.split("/")[0] == KUEUE_GROUP


def validate_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    crds: CrdSchemas | None = None,
    capacity: Capacity | None = None,
) -> list[Violation]:
    """Every violation in ``objects`` (Kueue objects of any served apiVersion and v1 Namespaces).

    ``crds`` None skips the OpenAPI-schema and CEL steps (see the module docstring for the rules
    that then go unchecked). ``capacity`` maps flavor -> resource -> quantity: the nominalQuota
    of all ClusterQueues and Cohorts per flavor and resource must fit in it, and a quota for a
    flavor or resource it lacks is reported.
    """
    violations: list[Violation] = []
    index = _Index()
    for position, raw in enumerate(objects):
        if not isinstance(raw, Mapping):
            violations.append(Violation(f"<object #{position}>", "KIND", "is not a mapping"))
            continue
        obj = _plain(raw)
        label = _describe(obj)
        if not _is_supported(obj):
            violations.append(
                Violation(
                    label,
                    "KIND",
                    f"apiVersion {obj.get('apiVersion')!r} kind {obj.get('kind')!r} is neither a "
                    f"{KUEUE_GROUP} object nor a v1 Namespace",
                )
            )
            continue
        if not index.add(obj):
            violations.append(
                Violation(label, "DUPLICATE", "appears more than once; kind, namespace and name must be unique")
            )
        problems = list(_metadata_problems(obj))
        kind_problems = _KIND_PROBLEMS.get(str(obj.get("kind")))
        if kind_problems is not None:
            problems += kind_problems(obj)
        if crds is not None and obj.get("kind") != "Namespace":
            # A rule both CEL and the webhook enforce is reported once, by the webhook step.
            problems += _crd_problems(crds, obj, _WEBHOOK_TWINS & {rule for rule, _ in problems})
        violations.extend(Violation(label, rule, message) for rule, message in problems)
    violations.extend(_reference_problems(index))
    if capacity is not None:
        violations.extend(_capacity_problems(index, capacity))
    return violations


def check_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    crds: CrdSchemas | None = None,
    capacity: Capacity | None = None,
) -> None:
    """Raise KueueValidationError listing every violation, if there is any."""
    violations = validate_objects(objects, crds=crds, capacity=capacity)
    if violations:
        raise KueueValidationError(violations)
