"""A CustomResourceDefinition's validation as the API server runs it on a create, for objects as
plain data: the OpenAPI schema as JSON Schema (unknown fields rejected, int32/int64 bounded, RE2
patterns read by Python), the schema's defaults applied, x-kubernetes-list-type uniqueness, and every
x-kubernetes-validations CEL rule evaluated with cel-python (transition rules, which need the old
object, are kept but not run). Generic: the caller says which group's CRDs to compile and what id
each CEL rule reports (components/kueue/validate.py for Kueue's).

jsonschema, cel-python and Lark are imported when CRDs are compiled, not with this module (0.14 s
together): a preview that reuses a verdict (components/kueue/verdicts.py) never loads them."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import celpy
    from jsonschema.protocols import Validator

Finding = tuple[str, str]  # (rule id, message) before the object's name is attached


class CrdError(RuntimeError):
    """CRDs cannot be found or read."""


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
class SchemaNode:
    """A schema node reduced to what defaulting, list uniqueness and CEL need."""

    type: str | None
    properties: Mapping[str, SchemaNode]
    items: SchemaNode | None
    additional: SchemaNode | None
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
    root: SchemaNode = field(compare=False, repr=False)
    validator: Validator = field(compare=False, repr=False)  # built once per version


@dataclass(frozen=True)
class CrdSchemas:
    source: str
    # (apiVersion, kind) -> schema and CEL rules, for every served version
    versions: Mapping[tuple[str, str], CrdVersion] = field(repr=False)

    @property
    def cel_rules(self) -> tuple[CelRule, ...]:
        return tuple(rule for version in self.versions.values() for rule in version.cel_rules)


_OLD_SELF = re.compile(r"\boldSelf\b")


INT_FORMATS = {"int32": 2**31, "int64": 2**63}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def format_path(parts: Iterable[str | int]) -> str:
    """jsonschema's error path as a field path: spec.resourceGroups[0].flavors[1]."""
    text = ""
    for part in parts:
        text = f"{text}[{part}]" if isinstance(part, int) else _join(text, part)
    return text


def cel_environment(grammar_cache: Path | None = None) -> celpy.Environment:
    """cel-python's Environment, its CEL parser loaded from `grammar_cache` when one is given.

    cel-python builds its grammar's LALR tables the first time a process makes an Environment
    (0.3 s, about a sixth of what a preview spends in the program itself); Lark can keep that
    analysis in a file and load it in 0.03 s, which cel-python does not ask for. The parser is the
    one celpy.celparser.CELParser makes (cel-python 0.5: the same grammar and options), set where
    CELParser keeps it; a cache that cannot be written costs only the time."""
    import celpy
    import lark
    from celpy.celparser import CELParser

    if grammar_cache is not None and CELParser.CEL_PARSER is None:
        grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
        options: dict[str, Any] = {
            "parser": "lalr",
            "start": "expr",
            "debug": True,
            "g_regex_flags": re.M,
            "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
            "propagate_positions": True,
            "maybe_placeholders": False,
            "priority": "invert",
            "tree_class": lark.Tree,
        }
        try:
            grammar_cache.parent.mkdir(parents=True, exist_ok=True)
            CELParser.CEL_PARSER = lark.Lark(grammar, cache=str(grammar_cache), **options)
        except OSError:
            CELParser.CEL_PARSER = None  # celpy builds it as usual
    return celpy.Environment()


def compile_crds(
    docs: Iterable[object],
    *,
    group: str,
    rule_id: Callable[[str, str, str], str],
    grammar_cache: Path | None = None,
) -> dict[tuple[str, str], CrdVersion]:
    """Every served version of the CRDs of `group` among `docs` (parsed YAML documents; anything
    else is ignored), compiled, by (apiVersion, kind); each CEL rule's id is rule_id(kind, path,
    message). `grammar_cache`: where the CEL parser's tables are kept (cel_environment)."""
    import jsonschema

    env = cel_environment(grammar_cache)
    versions: dict[tuple[str, str], CrdVersion] = {}
    for doc in docs:
        if not (isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"):
            continue
        spec = doc["spec"]
        if spec.get("group") != group:
            continue
        kind = spec["names"]["kind"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            schema = version["schema"]["openAPIV3Schema"]
            rules: list[CelRule] = []
            root = _compile_node(schema, kind, "", env, rules, rule_id)
            api_version = f"{group}/{version['name']}"
            versions[(api_version, kind)] = CrdVersion(
                api_version=api_version,
                kind=kind,
                schema=schema,
                cel_rules=tuple(rules),
                root=root,
                validator=jsonschema.Draft7Validator(_json_schema(schema)),
            )
    return versions


def _compile_node(
    schema: Mapping[str, Any],
    kind: str,
    path: str,
    env: celpy.Environment,
    rules: list[CelRule],
    rule_id: Callable[[str, str, str], str],
) -> SchemaNode:
    """One schema node and its children, each CEL rule compiled and given rule_id(kind, path, message)."""
    properties = {
        name: _compile_node(sub, kind, _join(path, name), env, rules, rule_id)
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
                rule_id=rule_id(kind, path, message),
                transition=transition,
                # A compile error here means the pinned CRDs use CEL that cel-python cannot read:
                # let it propagate rather than drop the rule.
                program=None if transition else env.program(env.compile(expression)),
            )
        )
    rules.extend(node_rules)
    return SchemaNode(
        type=schema.get("type"),
        properties=properties,
        items=_compile_node(items, kind, f"{path}[*]", env, rules, rule_id) if items else None,
        additional=(
            _compile_node(additional, kind, f"{path}{{*}}", env, rules, rule_id)
            if isinstance(additional, Mapping)
            else None
        ),
        defaults={name: sub["default"] for name, sub in schema.get("properties", {}).items() if "default" in sub},
        list_type=schema.get("x-kubernetes-list-type"),
        map_keys=tuple(schema.get("x-kubernetes-list-map-keys", ())),
        rules=tuple(node_rules),
    )


def _python_pattern(pattern: str) -> str:
    """The API server's Go (RE2) pattern as Python `re` reads it: RE2 allows a flag group such as
    `(?i)` after `^` (AdmissionCheck's parameter names), Python only at the very start."""
    for flags in ("(?i)", "(?s)", "(?m)"):
        if pattern.startswith("^" + flags):
            return flags + "^" + pattern[len(flags) + 1 :]
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
    if schema.get("format") in INT_FORMATS:
        bound = INT_FORMATS[schema["format"]]
        out.setdefault("minimum", -bound)
        out.setdefault("maximum", bound - 1)
    # The API server prunes unknown fields without an error; a generator that writes one has a bug.
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


_PY_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}


def schema_findings(crds: CrdSchemas, obj: dict[str, Any], skip_rules: AbstractSet[str]) -> list[Finding]:
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
    problems: list[Finding] = []
    _walk(version.root, data, "", skip_rules, problems)  # applies defaults first, then CEL
    schema_problems = [
        ("schema", f"{format_path(error.absolute_path) or '<object>'}: {error.message}")
        for error in version.validator.iter_errors(data)
    ]
    return schema_problems + problems


def _walk(node: SchemaNode, value: Any, path: str, skip_rules: AbstractSet[str], out: list[Finding]) -> None:
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
    import celpy  # loaded already: the rule was compiled

    try:
        assert rule.program is not None  # only transition rules have none, and they are skipped
        result: Any = rule.program.evaluate({"self": celpy.json_to_cel(value)})
    except (celpy.CELEvalError, ValueError, TypeError) as error:
        result = error
    if isinstance(result, Exception):
        # The API server also rejects an object on which a rule cannot be evaluated.
        return f"{rule.message} (CEL rule `{rule.expression}` failed to evaluate: {result.args[0]})"
    return None if result else rule.message


def _list_type_problems(node: SchemaNode, items: list[Any], path: str) -> Iterator[Finding]:
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
