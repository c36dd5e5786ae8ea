"""components/assembly.py against the program: for every stack the tests know (testbed/stacks.py),
each component registers exactly the Kubernetes objects and Helm releases of its part, and no
component creates cluster objects that no part lists (but the ones the assembly names)."""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from components.access.identity import CLIENT_ID_ANNOTATION, CLIENT_ID_PLACEHOLDER
from components.assembly import HelmRelease, Part
from components.config.keys import GUID
from testbed.harness import Registration
from testbed.stacks import SHAPES, stack_run

RELEASE = "kubernetes:helm.sh/v3:Release"
# Made by the program, listed by no part, on purpose (the assembly's docstring says why).
UNLISTED = {("kueue-aks:multikueue:MultiKueueManager", "Secret")}

Identity = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def identity(obj: dict[str, Any]) -> Identity:
    meta = obj.get("metadata") or {}
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def component_of(registration: Registration, by_urn: dict[str, Registration]) -> Registration:
    """The program's component a resource belongs to: its ancestor just below the stack (a
    component's own components count as it)."""
    current = by_urn[registration.parent]
    while "::pulumi:pulumi:Stack::" not in current.parent:  # the stack itself is not registered
        current = by_urn[current.parent]
    return current


def release_view(release: HelmRelease) -> dict[str, Any]:
    return {
        "name": release.release,
        "namespace": release.namespace,
        "chart": release.chart.chart,
        "version": release.chart.version,
        "repository": release.chart.repository or None,
        "values": release.values,
        "skipCrds": release.skip_crds,
    }


def registered(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per component (type, name): the cluster objects and the releases it registered. A release of
    a chart the program wrote (an operator's CRDs) counts as the objects its files hold."""
    run = stack_run(name).run
    by_urn = {r.urn: r for r in run.registrations}
    found: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"objects": {}, "releases": []})
    for r in run.registrations:
        if not r.type.startswith("kubernetes:") or r.type == "pulumi:providers:kubernetes" or r.read_id:
            continue
        owner = component_of(r, by_urn)
        entry = found[(owner.type, owner.name)]
        if r.type == RELEASE:
            chart = Path(r.inputs["chart"])
            if chart.is_dir():
                for file in sorted((chart / "files").glob("*.json")):
                    crd = json.loads(file.read_text())
                    entry["objects"][identity(crd)] = crd
                continue
            entry["releases"].append(
                {
                    "name": r.inputs["name"],
                    "namespace": r.inputs["namespace"],
                    "chart": r.inputs["chart"],
                    "version": r.inputs["version"],
                    "repository": (r.inputs.get("repositoryOpts") or {}).get("repo"),
                    "values": r.inputs.get("values", {}),
                    "skipCrds": r.inputs.get("skipCrds", False),
                }
            )
        else:
            entry["objects"][identity(r.inputs)] = r.inputs
    return found


def parts_of(name: str) -> tuple[Part, ...]:
    """The parts the program read from the assembly in its run (once: it builds what they list)."""
    (parts,) = stack_run(name).parts
    return parts


@pytest.mark.parametrize("name", SHAPES)
def test_each_component_registers_its_part(name: str) -> None:
    found = registered(name)
    parts = parts_of(name)
    for part in parts:
        got = found.pop((part.type, part.name), {"objects": {}, "releases": []})
        expected = {identity(o): o for o in part.objects}
        # A release's Namespace is the program's own (components/k8s/helm.py).
        for release in part.releases:
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": release.namespace}}
            expected.setdefault(identity(ns), ns)
        missing = sorted(set(expected) - set(got["objects"]))
        extra = sorted(k for k in set(got["objects"]) - set(expected) if (part.type, k[1]) not in UNLISTED)
        assert (missing, extra) == ([], []), (
            f"{part.name}: objects the part lists but the component does not register, and the reverse"
        )
        changed = [k for k in expected if not _same(expected[k], got["objects"][k])]
        assert changed == [], f"{part.name}: registered differently from the part"
        assert sorted(got["releases"], key=lambda r: r["name"]) == sorted(
            map(release_view, part.releases), key=lambda r: r["name"]
        )
    leftover = {
        key: sorted(v["objects"])
        for key, v in found.items()
        if any((key[0], k[1]) not in UNLISTED for k in v["objects"]) or v["releases"]
    }
    assert leftover == {}, "cluster objects of components no part describes"


def _same(expected: dict[str, Any], inputs: dict[str, Any]) -> bool:
    """The object as registered: every field of the part's object, sent as it is (a typed resource
    also fills in apiVersion and kind, which the identity already compared)."""
    return all(_matches(v, inputs.get(k)) for k, v in expected.items())


def _matches(expected: Any, got: Any) -> bool:
    """Equal, but where the part leaves a value to Azure: a team identity's client ID, which the
    mocks give as a GUID."""
    if expected == CLIENT_ID_PLACEHOLDER:
        return isinstance(got, str) and re.fullmatch(GUID, got) is not None
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and expected.keys() == got.keys()
            and all(_matches(v, got[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return isinstance(got, list) and len(expected) == len(got) and all(map(_matches, expected, got))
    return bool(expected == got)


def test_a_component_that_registers_an_object_its_part_does_not_list_is_named() -> None:
    """The check can fail: the dev stack's parts without the pool guard's binding."""
    found, parts = registered("dev"), parts_of("dev")
    guard = next(p for p in parts if p.name == "governance")
    assert [identity(o)[1] for o in guard.objects] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    got = found[(guard.type, guard.name)]["objects"]
    assert set(got) - {identity(o) for o in guard.objects[:1]} == {identity(guard.objects[1])}


def test_a_client_id_that_azure_did_not_give_is_named() -> None:
    """The check can fail: a team identity's ServiceAccount sent with the part's placeholder, or none."""
    [part] = [p for p in parts_of("identities") if p.name == "identities"]
    account = part.objects[0]
    got = registered("identities")[(part.type, part.name)]["objects"][identity(account)]
    assert _same(account, got)
    for wrong in (CLIENT_ID_PLACEHOLDER, None, "not-a-client-id"):
        changed = copy.deepcopy(got)
        changed["metadata"]["annotations"][CLIENT_ID_ANNOTATION] = wrong
        assert not _same(account, changed), wrong
