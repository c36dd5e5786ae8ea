"""The shape of components/: a package per concern on layers (the Kubernetes helpers at the floor),
imports one way; and around it, the program's tests, their kit (testbed/), the benchmarks and tools,
each importing only what it may.

Read from the modules' own import statements (every `import` and `from … import`, also inside
functions), so an import added anywhere in components/ is checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from testbed.harness import ROOT

COMPONENTS = ROOT / "components"

# Concerns from the floor up: a module may import its own concern's modules and those of lower
# ones. Concerns of one rank do not import each other. The shared Kubernetes helpers are the floor;
# the facts the config reads (VM sizes, regions, Kueue's releases, the operators' pins, the system
# pool's sizing rule) are a concern of their own above them.
RANKS = {
    "k8s": 0,
    "state": 0,  # a stack's Pulumi state, for the command-line tools
    "facts": 1,
    "config": 2,
    "cluster": 3,
    "kueue": 4,
    "gpu": 5,
    "governance": 5,
    "monitoring": 5,
    "operators": 5,
    "autoscaling": 5,
    "preflight": 5,
    "access": 5,
    "recovery": 5,
    "forecast": 5,  # the waiting-time forecast: reads the built Kueue objects, printed by the plan
    "multikueue": 6,
    "manifests": 6,
    "assembly": 7,  # what the stack creates, component by component: read by __main__ and the plan
    "plan": 8,
}
# Every Python package of the repository, for the import-cycle check.
PACKAGES = ("components", "testbed", "tests", "bench", "tools")
# What each package may import of the others: the program nothing of them; the test kit the
# program; the tests and benchmarks the kit (a test may run a benchmark's scenario; a benchmark
# never a test). tools/ is the project's own scripts: the reference data's fetcher, the chart pins.
MAY_IMPORT = {
    "components": set(),
    "testbed": {"components"},
    "tests": {"components", "testbed", "bench", "tools"},
    "bench": {"components", "testbed"},
    "tools": {"components"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(COMPONENTS.rglob("*.py"))}
REPOSITORY = {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imports(name: str, modules: dict[str, Path] = MODULES) -> set[str]:
    """The modules of `modules` that `name` imports (a package's `__init__` counts as the package)."""
    path = modules[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return {m for m in found if m in modules and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def concern(name: str) -> str:
    return name.split(".")[1] if name != "components" else ""


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, as the strongly connected components of more than one module (or one
    that imports itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_repository() -> None:
    """components/, and the tests, benchmarks and tools beside it."""
    assert cycles({name: imports(name, REPOSITORY) for name in REPOSITORY}) == []


def package_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of one package of the repository by another that MAY_IMPORT does not allow."""
    return [
        f"{name} imports {target}"
        for name in sorted(graph)
        for target in sorted(graph[name])
        if target.split(".")[0] != name.split(".")[0] and target.split(".")[0] not in MAY_IMPORT[name.split(".")[0]]
    ]


def test_each_package_imports_only_what_it_may() -> None:
    assert set(MAY_IMPORT) == set(PACKAGES)
    assert package_imports({name: imports(name, REPOSITORY) for name in REPOSITORY}) == []


def test_no_test_module_imports_another() -> None:
    """tests/ holds tests and their conftest fixtures only; what they share is in testbed/, and no
    module of tests/ imports another (pytest hands out the fixtures)."""
    tests = [name for name in REPOSITORY if name.split(".")[0] == "tests"]
    helpers = [
        n
        for n in tests
        if not REPOSITORY[n].name.startswith("test_") and REPOSITORY[n].name not in ("conftest.py", "__init__.py")
    ]
    assert helpers == [], "helper modules belong in testbed/"
    assert [f"{n} imports {t}" for n in tests for t in sorted(imports(n, REPOSITORY)) if t.startswith("tests.")] == []


def test_the_package_rules_catch_a_wrong_import() -> None:
    graph = {
        "components.plan": {"testbed.harness"},
        "bench.run": {"tests.test_plan"},
        "testbed.harness": {"bench.run"},
        "tests.test_plan": {"testbed.harness", "components.plan", "bench.run"},
    }
    assert package_imports(graph) == [
        "bench.run imports tests.test_plan",
        "components.plan imports testbed.harness",
        "testbed.harness imports bench.run",
    ]


def test_components_is_a_package_per_concern() -> None:
    top = sorted(p.name for p in COMPONENTS.glob("*.py"))
    assert len(top) <= 6, top
    packages = sorted(p.name for p in COMPONENTS.iterdir() if (p / "__init__.py").is_file())
    assert set(RANKS) - {"plan", "assembly"} <= set(packages), packages
    assert set(packages) <= set(RANKS), f"a package without a layer: {set(packages) - set(RANKS)}"


@pytest.mark.parametrize("package", sorted(n for n in MODULES if MODULES[n].name == "__init__.py"))
def test_each_package_says_what_it_decides_and_creates(package: str) -> None:
    tree = ast.parse(MODULES[package].read_text())
    assert ast.get_docstring(tree), f"{package}/__init__.py has no docstring"
    assert not [n for n in tree.body if not isinstance(n, ast.Expr)], (
        f"{package}/__init__.py does more than say what the package is: importing one of its modules "
        "must not import the others"
    )


def upward(graph: dict[str, set[str]], name: str) -> list[str]:
    """What `name` imports from another concern of its own rank or above."""
    return [t for t in sorted(graph[name]) if concern(t) != concern(name) and RANKS[concern(t)] >= RANKS[concern(name)]]


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"components"}))
def test_imports_run_down_the_layers(name: str) -> None:
    assert upward(GRAPH, name) == [], f"{name} imports modules of its own rank or above"


def test_the_imports_this_layout_removed_are_caught() -> None:
    """Kueue importing governance and MultiKueue, the config importing a builder, a helper
    importing the config: each is reported."""

    def added(name: str, target: str) -> dict[str, set[str]]:
        return {**GRAPH, name: GRAPH[name] | {target}}

    assert upward(added("components.kueue.install", "components.governance.policies"), "components.kueue.install") == [
        "components.governance.policies"
    ]
    assert upward(added("components.kueue.queues", "components.multikueue.manager"), "components.kueue.queues") == [
        "components.multikueue.manager"
    ]
    assert upward(added("components.config.parse", "components.gpu.values"), "components.config.parse") == [
        "components.gpu.values"
    ]
    assert upward(added("components.k8s.charts", "components.config.names"), "components.k8s.charts") == [
        "components.config.names"
    ]
    assert upward(
        added("components.facts.operator_sizing", "components.config.names"), "components.facts.operator_sizing"
    ) == ["components.config.names"]
