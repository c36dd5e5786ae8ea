"""Shared fixtures: stack configs as the program and the plan command read them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import StackConfig, parse_config, raw_from_stack_file
from components.validate import CRDS_ENV, CrdSchemas, crds_from_env
from tests.harness import ROOT, SHARED

CRDS_DIR = SHARED / "kueue" / "v0.19.2" / "crds"
E2E_DIR = Path(__file__).resolve().parent / "e2e"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs on a local control plane with the real Kueue controller (tests/e2e)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the e2e tier before `-m` selects on marks."""
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Run the e2e tier after the unit tests, grouped by stack so that each stack's control plane
    is built once, and the teardown module last on each; the sort is stable, so file order holds
    otherwise."""

    def key(item: pytest.Item) -> tuple[bool, str, bool]:
        if E2E_DIR not in item.path.parents:
            return (False, "", False)
        callspec = getattr(item, "callspec", None)
        return (True, str(callspec.params.get("stack", "")) if callspec else "", item.path.name == "test_teardown.py")

    session.items.sort(key=key)


@pytest.fixture(scope="session", autouse=True)
def kueue_crds_dir() -> Iterator[Path]:
    """Every test, the program's included, validates against the pinned CRDs; missing CRDs fail the run."""
    if not CRDS_DIR.is_dir():
        pytest.fail(f"Kueue CRDs not found at {CRDS_DIR}: the tests need ../shared/kueue/v0.19.2/crds")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CRDS_ENV, str(CRDS_DIR))
        yield CRDS_DIR


@pytest.fixture(scope="session")
def crds(kueue_crds_dir: Path) -> CrdSchemas:
    loaded = crds_from_env(required=True)
    assert loaded is not None
    return loaded


DESIGN_EXAMPLE = ROOT / "tests" / "fixtures" / "design-example.yaml"


def design_example() -> dict[str, Any]:
    """The example config of the stack-config contract in ../shared/DESIGN.md, as a config map."""
    return yaml.safe_load(DESIGN_EXAMPLE.read_text())["config"]


def design_md_example() -> dict[str, Any] | None:
    """The same example read from ../shared/DESIGN.md itself, where that file exists."""
    path = SHARED / "DESIGN.md"
    if not path.exists():
        return None
    block = re.search(r"```yaml\n(config:\n.*?)```", path.read_text(), re.S)
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
