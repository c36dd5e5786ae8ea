"""A newcomer finds a module's tests by its name: each pure module of components/ (one that imports
no Pulumi) has tests/<package>/test_<module>.py (`__main__`: test_main.py), or is listed below
with the file that tests it and why it has none of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from testbed.paths import ROOT

COMPONENTS = ROOT / "components"

# Module -> (the test file that holds its tests, why it has no file of its own).
TESTED_ELSEWHERE: dict[str, tuple[str, str]] = {
    # The config's sections: each parsed through parse_config, tested with the feature it configures.
    "config.checks": ("tests/config/test_parse.py", "the problem collector and value checks every section uses"),
    "config.cluster": ("tests/cluster/test_modes.py", "the cluster's keys, tested with the cluster modes"),
    "config.device_plugin": (
        "tests/cluster/test_modes.py",
        "the device plugin's chart source, with the other chart sources",
    ),
    "config.multikueue": ("tests/multikueue/test_multikueue.py", "the multiKueue keys, with what they build"),
    "config.network": ("tests/cluster/test_network.py", "the cluster's network keys, with what the cluster sends"),
    "config.operators": ("tests/operators/test_operators.py", "the operators' keys, with what is installed"),
    "config.preflight": ("tests/preflight/test_quota.py", "the preflight's keys, with the check they steer"),
    "config.registries": (
        "tests/config/test_credentials.py",
        "registry sign-ins are credentials, tested with the others",
    ),
    "config.rules": ("tests/config/test_parse.py", "rules across sections, in the contract's rules table"),
    "config.stack": ("tests/config/test_parse.py", "the StackConfig the parse returns: data and lookups"),
    "config.topology": ("tests/config/test_pools.py", "the Topology's levels, with the topology-aware pools"),
    # Facts: tables from upstream, held to their sources where the program uses them.
    "facts.built_in_roles": ("tests/access/test_azure_roles.py", "Azure's role table, with the assignments made of it"),
    "facts.device_plugin": ("tests/kueue/test_install.py", "the plugin's pinned chart, with the releases installed"),
    "facts.kueue_resources": ("tests/kueue/test_values.py", "Kueue's manager resources, with the Helm values"),
    "facts.operator_sizing": ("tests/operators/test_operators.py", "the system pool's fit, with the operators"),
    "facts.operators": ("tests/operators/test_operators.py", "the operators' pins, with what is installed"),
    "gpu.values": ("tests/kueue/test_values.py", "the device plugin's Helm values, beside Kueue's, against its chart"),
    # Shared Kubernetes helpers: small builders, tested through the objects built with them.
    "k8s.admission": ("tests/governance/test_policies.py", "the guards' shape, with the guards"),
    "k8s.charts": ("tests/cluster/test_modes.py", "chart sources, with the registries and modes they serve"),
    "k8s.crd_schema": ("tests/kueue/test_crds.py", "CRD schemas, against Kueue's CRDs"),
    "k8s.helm_records": ("tests/recovery/test_pending.py", "Helm's release records, with the recovery that reads them"),
    "k8s.meta": ("tests/test_assembly.py", "the metadata every object carries, held on every object built"),
    "k8s.names": ("tests/test_samples.py", "DNS names, with the samples and config that use them"),
    "k8s.part": ("tests/test_assembly.py", "a component's part, held to each component"),
    "k8s.resources": ("tests/facts/test_capacity.py", "resource names and units, with the capacity catalog"),
    # The validator: one entry point (kueue/validate.py), its steps tested through it.
    "kueue.findings": ("tests/kueue/test_validate.py", "what the validator reports"),
    "kueue.references": ("tests/kueue/test_validate.py", "the cross-object rules, a step of the validator"),
    "kueue.webhooks": ("tests/kueue/test_validate.py", "Kueue's webhook rules, a step of the validator"),
    "kueue.policies": ("tests/governance/test_policies.py", "the guards, with governance's"),
    "manifests.folders": ("tests/test_plan.py", "the --manifests folders, written by the plan"),
    "monitoring.scrape": ("tests/monitoring/test_monitoring.py", "the scrape objects, with the monitoring they make"),
    "multikueue.manager": ("tests/multikueue/test_multikueue.py", "a manager and its workers are tested together"),
    "multikueue.worker": ("tests/multikueue/test_multikueue.py", "a worker and its manager are tested together"),
    "operators.crd_chart": ("tests/operators/test_operators.py", "the CRD charts, with the installs that use them"),
    "operators.installs": ("tests/operators/test_operators.py", "what is installed, the operators' main test"),
    "operators.policies": ("tests/operators/test_operators.py", "the RayService guard, with the installs"),
    "operators.sources": ("tests/operators/test_operators.py", "the pinned modules, with what is installed from them"),
    "preflight.arm": ("tests/preflight/test_quota.py", "the ARM client, against the loopback Azure"),
    "preflight.check": ("tests/preflight/test_quota.py", "the preflight's run, against the loopback Azure"),
}


def is_pure(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        )
        if any(n == "pulumi" or n.startswith(("pulumi.", "pulumi_")) for n in names):
            return False
    return True


def own_tests(module: str) -> Path:
    *package, name = module.split(".")
    return ROOT.joinpath("tests", *package, f"test_{'main' if name == '__main__' else name}.py")


PURE = sorted(
    ".".join(p.relative_to(COMPONENTS).with_suffix("").parts)
    for p in COMPONENTS.rglob("*.py")
    if p.name != "__init__.py" and is_pure(p)
)


def test_every_pure_module_has_its_tests_by_name_or_says_where_they_are() -> None:
    without = [m for m in PURE if not own_tests(m).is_file()]
    assert sorted(set(without) - set(TESTED_ELSEWHERE)) == [], "add tests/<package>/test_<module>.py, or list it here"


def test_the_list_holds_only_pure_modules_without_a_file_of_their_own() -> None:
    """So the list shrinks as modules get their files, and names only files that exist."""
    assert [m for m in TESTED_ELSEWHERE if m not in PURE or own_tests(m).is_file()] == []
    assert [f for f, _ in TESTED_ELSEWHERE.values() if not (ROOT / f).is_file()] == []


def test_the_check_finds_a_module_and_its_file() -> None:
    assert "config.pools" in PURE and own_tests("config.pools") == ROOT / "tests" / "config" / "test_pools.py"
    assert own_tests("recovery.__main__") == ROOT / "tests" / "recovery" / "test_main.py"
    assert "plan" in PURE and own_tests("plan") == ROOT / "tests" / "test_plan.py"
    assert not is_pure(COMPONENTS / "kueue" / "queues.py")  # a component
