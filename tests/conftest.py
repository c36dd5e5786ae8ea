"""Shared fixtures: stack configs as the program and the plan command read them."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from components.config import StackConfig, parse_config, raw_from_stack_file
from tests.harness import ROOT, SHARED


def design_example() -> dict[str, Any]:
    """The example config in ../shared/DESIGN.md's stack-config contract, as a config map."""
    text = (SHARED / "DESIGN.md").read_text()
    block = re.search(r"```yaml\n(config:\n.*?)```", text, re.S)
    assert block, "DESIGN.md has no ```yaml config: block"
    return yaml.safe_load(block.group(1))["config"]


def load_stack(config_map: dict[str, Any], stack: str = "dev") -> StackConfig:
    raw, location = raw_from_stack_file({"config": config_map})
    return parse_config(raw, stack=stack, location=location)


@pytest.fixture
def dev_config_map() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


@pytest.fixture
def dev_config(dev_config_map: dict[str, Any]) -> StackConfig:
    return load_stack(dev_config_map)
