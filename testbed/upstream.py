"""Kueue's own release data in ../shared, read the way the tests compare the program against it:
the feature-gate lists, the manager configuration's field tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.facts.kueue_versions import DEFAULT_VERSION, Gate
from testbed.paths import SHARED

VERSION = "0.19.2"  # the default release, as the tests know it (tests/facts/test_kueue_versions.py holds it)


def kueue_data(version: str) -> Path:
    return SHARED / "kueue" / f"v{version}"


def minor(version: str) -> tuple[int, int]:
    major, minor_ = version.split(".")[:2]
    return int(major), int(minor_)


def config_fields(version: str) -> Any:
    """The field tree of Kueue's manager configuration in `version` (config-fields.yaml)."""
    return yaml.safe_load((kueue_data(version) / "config-fields.yaml").read_text())


CONFIG_FIELDS = config_fields(DEFAULT_VERSION)

_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "duration": (str,),
    "bool": (bool,),
    "int": (int,),
    "int32": (int,),
    "float32": (int, float),
    "float64": (int, float),
}


def unknown_config_fields(doc: Any, schema: Any, path: str = "") -> list[str]:
    """Fields of a manager config that config-fields.yaml does not list, or of the wrong type."""
    if isinstance(schema, dict):
        if not isinstance(doc, dict):
            return [f"{path}: expected an object"]
        problems: list[str] = []
        for key, value in doc.items():
            at = f"{path}.{key}" if path else str(key)
            sub = schema.get("<key>", schema.get(key))
            if sub is None:
                problems.append(f"{at}: not a field of the v1beta2 Configuration")
            else:
                problems += unknown_config_fields(value, sub, at)
        return problems
    if isinstance(schema, list):
        if not isinstance(doc, list):
            return [f"{path}: expected a list"]
        return [p for i, item in enumerate(doc) for p in unknown_config_fields(item, schema[0], f"{path}[{i}]")]
    if schema == "labelSelector":
        return unknown_config_fields(
            doc,
            {
                "matchLabels": {"<key>": "string"},
                "matchExpressions": [{"key": "string", "operator": "string", "values": ["string"]}],
            },
            path,
        )
    allowed = _SCALARS.get(schema, (str,))  # named Go string types such as SourceKind
    wrong_bool = bool not in allowed and isinstance(doc, bool)
    return [f"{path}: expected {schema}, got {doc!r}"] if wrong_bool or not isinstance(doc, allowed) else []


def upstream_gates(release: str = VERSION, at: str | None = None) -> dict[str, Gate]:
    """Each gate's spec in force at `at` (default: the release itself) in `release`'s list: the
    newest versionedSpec not newer than it."""
    doc = yaml.safe_load((kueue_data(release) / "featuregates" / "versioned_feature_list.yaml").read_text())
    at_minor = minor(at or release)
    gates: dict[str, Gate] = {}
    for entry in doc:
        specs = [s for s in entry["versionedSpecs"] if minor(str(s["version"])) <= at_minor]
        if specs:
            spec = max(specs, key=lambda s: minor(str(s["version"])))
            gates[entry["name"]] = Gate(spec["preRelease"], spec["default"], spec["lockToDefault"])
    return gates


def upstream_removed(release: str = VERSION) -> frozenset[str]:
    doc = yaml.safe_load((kueue_data(release) / "featuregates" / "removed_feature_list.yaml").read_text())
    return frozenset(entry["feature"] for entry in doc)
