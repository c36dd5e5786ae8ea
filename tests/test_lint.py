"""Lint, format and types, as pyproject.toml configures them: ruff over the repository (in full
over the program, pyflakes' checks over the tests, test kit, benchmarks and tools), ruff's
formatter over the whole repository, and mypy over components/ and __main__.py. Each runs as the developer would run it,
with its cache in the test's temporary folder."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from testbed.harness import ROOT


def run(tool: str, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env_cache = ["--cache-dir", str(cache)]
    return subprocess.run([sys.executable, "-m", tool, *args, *env_cache], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lints_the_repository(tmp_path: Path) -> None:
    done = run("ruff", "check", "--output-format", "concise", ".", cache=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_repository_is_ruff_formatted(tmp_path: Path) -> None:
    done = run("ruff", "format", "--check", ".", cache=tmp_path)
    assert done.returncode == 0, f"run `ruff format .`:\n{done.stdout}{done.stderr}"


def test_mypy_passes_over_the_program(tmp_path: Path) -> None:
    done = run("mypy", cache=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def sdk_packages(sdk: str) -> set[str]:
    """The SDK's packages the program imports (pulumi_azure_native.containerservice, ...)."""
    found = set()
    for path in [*(ROOT / "components").rglob("*.py"), ROOT / "__main__.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == sdk:
                found |= {f"{sdk}.{a.name}" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{sdk}."):
                found.add(".".join(node.module.split(".")[:2]))
            elif isinstance(node, ast.Import):
                found |= {".".join(a.name.split(".")[:2]) for a in node.names if a.name.startswith(f"{sdk}.")}
    return found


def attribute_packages(sdk: str, alias: str) -> set[str]:
    """Packages reached as attributes of the SDK imported whole (`import pulumi_kubernetes as k8s`, then
    `k8s.core.v1.Namespace`)."""
    found = set()
    for path in [*(ROOT / "components").rglob("*.py"), ROOT / "__main__.py"]:
        tree = ast.parse(path.read_text())
        if not any(
            isinstance(n, ast.Import) and any(a.name == sdk and a.asname == alias for a in n.names)
            for n in ast.walk(tree)
        ):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == alias:
                found.add(f"{sdk}.{node.attr}")
    return found


@pytest.mark.parametrize(("sdk", "alias"), [("pulumi_azure_native", "azure_native"), ("pulumi_kubernetes", "k8s")])
def test_mypy_reads_every_sdk_package_the_program_uses(sdk: str, alias: str) -> None:
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    followed = {m for o in overrides if o.get("follow_imports") == "normal" for m in o["module"]}
    used = {p for p in sdk_packages(sdk) | attribute_packages(sdk, alias) if p.split(".")[1][0].islower()}
    assert used, f"found no use of {sdk}: the scan is broken"
    assert used <= followed, f"add to pyproject.toml's followed modules: {sorted(used - followed)}"
