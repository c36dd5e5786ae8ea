"""The config's one description (components/config/keys.py): the generated schema and pages are
current, the schema takes every stack the repository ships, and no key it declares can be given
empty or left out (when required) without the parser naming it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config import keys
from components.config.checks import ConfigError
from components.config.keys import BY_NAME, SECTIONS, Key
from components.config.parse import parse_config
from components.config.refusals import MINIMAL
from testbed.harness import ROOT


def test_generated_files_are_current() -> None:
    for path, text in keys.generated().items():
        assert path.read_text() == text, f"{path.name} is stale: run python -m components.config.keys --write"


def stack_files() -> list[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "examples").rglob("Pulumi.*.yaml"))


@pytest.mark.parametrize("path", stack_files(), ids=lambda p: p.name)
def test_the_schema_takes_every_stack_file_shipped(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text()), keys.stack_schema())


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({"kueue-aks:teamz": []}, "unknown key of ours"),
        ({"kueue-aks:nodePools": [{"name": "Cpu", "vmSize": "Standard_D8s_v5", "maxCount": 1}]}, "pattern in full"),
        ({"kueue-aks:nodePools": [{"name": "cpu", "vmSize": "Standard_D8s_v5"}]}, "required key"),
        ({"kueue-aks:cluster": {"tier": "free"}}, "enum"),
        ({"kueue-aks:teams": [{"name": "a", "share": 100, "borrowing": "none"}]}, "number or word"),
        ({"kueue-aks:cluster": {"deployerAdmin": "yes"}}, "boolean"),
    ],
)
def test_the_schema_underlines_what_the_parser_refuses(config: dict[str, Any], why: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"config": config}, keys.stack_schema())


def test_pulumi_yaml_declares_every_section_with_its_type() -> None:
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert set(declared) == set(BY_NAME)
    for name, key in BY_NAME.items():
        assert declared[name]["type"] == ("array" if key.kind == "array" else "object"), name
        if key.kind == "array":
            # The Pulumi CLI refuses the project otherwise: "declares an array but does not specify
            # the underlying type via the 'items' attribute" (seen on `pulumi stack init`).
            assert declared[name].get("items", {}).get("type") == "object", name


def leaves(key: Key, path: list[Any]) -> list[tuple[list[Any], Key]]:
    """Every key under `key` with the path that reaches it (an int steps into an array's first item)."""
    out: list[tuple[list[Any], Key]] = []
    children = key.keys if key.kind == "object" else key.items.keys if key.items is not None else ()
    step = [0] if key.kind == "array" else []
    for child in children:
        out.append(([*path, *step, child.name], child))
        out += leaves(child, [*path, *step, child.name])
    return out


def every_key() -> list[tuple[list[Any], Key]]:
    return [
        (p, k) for s in SECTIONS for p, k in [([s.name.split(":", 1)[1]], s), *leaves(s, [s.name.split(":", 1)[1]])]
    ]


def set_at(raw: dict[str, Any], path: list[Any], value: Any, *, delete: bool = False) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    node: Any = raw
    for step, following in zip(path, path[1:]):
        if isinstance(step, int):
            while len(node) <= step:
                node.append({})
            node = node[step]
        else:
            if not isinstance(node.get(step), (dict, list)):
                node[step] = [] if isinstance(following, int) else {}
            node = node[step]
    if delete:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return raw


def shown(path: list[Any]) -> str:
    return "kueue-aks:" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)[1:]


@pytest.mark.parametrize(("path", "key"), every_key(), ids=lambda v: shown(v) if isinstance(v, list) else "")
def test_no_key_can_be_given_empty_unnoticed(path: list[Any], key: Key) -> None:
    raw = set_at(dict(MINIMAL), path, None)
    with pytest.raises(ConfigError) as err:
        parse_config(raw, stack="test", location="eastus2")
    named = shown(path)
    assert any(p.path.startswith(named) for p in err.value.problems), (named, [str(p) for p in err.value.problems])


REQUIRED = [(p, k) for p, k in every_key() if k.required is not None]


def test_the_description_has_required_keys() -> None:
    assert {shown(p) for p, _ in REQUIRED} >= {
        "kueue-aks:nodePools",
        "kueue-aks:teams[0].share",
        "kueue-aks:nodePools[0].maxCount",
    }


@pytest.mark.parametrize(("path", "key"), REQUIRED, ids=lambda v: shown(v) if isinstance(v, list) else "")
def test_every_required_key_left_out_is_named(path: list[Any], key: Key) -> None:
    base = set_at(dict(MINIMAL), path, "placeholder")  # makes the parents (e.g. cluster.existing) exist
    raw = set_at(base, path, None, delete=True)
    with pytest.raises(ConfigError) as err:
        parse_config(raw, stack="test", location="eastus2")
    named = shown(path)
    assert any(p.path == named and p.message.startswith("is required") for p in err.value.problems), (
        named,
        [str(p) for p in err.value.problems],
    )
