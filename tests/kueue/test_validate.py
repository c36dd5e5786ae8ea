"""components/kueue/validate.py against the pinned Kueue CRDs and upstream examples in ../shared.

The `crds` fixture holds the CRDs of the pinned chart as the program reads them (tests/conftest.py
seeds the user cache from ../shared/kueue/v0.19.2/chart); the KUEUE_CRDS_DIR tests read
../shared/kueue/v0.19.2/crds. Nothing is copied into the project; when ../shared is missing the
tests fail, they do not skip.
"""

from __future__ import annotations

import copy
import re
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from components.k8s.crd_schema import CrdError, CrdSchemas
from components.kueue.findings import KueueValidationError, Violation
from components.kueue.validate import CRDS_ENV, check_objects, crds_from_env, load_crds, validate_objects
from testbed.paths import CRDS_DIR

EXAMPLES_DIR = CRDS_DIR.parent / "examples"
V = "kueue.x-k8s.io/v1beta2"
# Kinds the project creates; their CEL rules must all have rule ids (docs/design-notes.md#kueue-rule-ids) and
# broken-object cases.
OUR_KINDS = {"ClusterQueue", "Cohort", "LocalQueue", "ResourceFlavor", "Topology", "WorkloadPriorityClass"}
# Rules only the CRD's CEL enforces: without CRDs they go unchecked (validate.py docstring).
CEL_ONLY = {"CQ6", "CO2", "RF4", "RF7", "RF10", "TP3", "TP4"}


def rules_of(violations: list[Violation]) -> set[str]:
    return {violation.rule for violation in violations}


# ---------------------------------------------------------------------------------------------
# A valid baseline that uses every feature the rules below break, one at a time.


def baseline() -> list[dict[str, Any]]:
    return copy.deepcopy(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "research", "labels": {"kueue-aks/team": "research"}},
            },
            {
                "apiVersion": V,
                "kind": "Topology",
                "metadata": {"name": "aks"},
                "spec": {
                    "levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kubernetes.io/hostname"}]
                },
            },
            {
                "apiVersion": V,
                "kind": "ResourceFlavor",
                "metadata": {"name": "cpu"},
                # Topology-aware like gpu: a ClusterQueue never mixes the two kinds (TAS-mixed).
                "spec": {"nodeLabels": {"kubernetes.azure.com/agentpool": "cpu"}, "topologyName": "aks"},
            },
            {
                "apiVersion": V,
                "kind": "ResourceFlavor",
                "metadata": {"name": "gpu"},
                "spec": {
                    "nodeLabels": {"kubernetes.azure.com/agentpool": "gpu"},
                    "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                        {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "topologyName": "aks",
                },
            },
            {
                "apiVersion": V,
                "kind": "Cohort",
                "metadata": {"name": "org"},
                "spec": {
                    "parentName": "root",  # an implicit Cohort (CO1): no object needed
                    "fairSharing": {"weight": "1"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "cpu",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "1", "lendingLimit": "1"}
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": V,
                "kind": "ClusterQueue",
                "metadata": {"name": "research", "labels": {"kueue-aks/team": "research"}},
                "spec": {
                    "cohortName": "org",
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "research"},
                        "matchExpressions": [{"key": "kueue-aks/team", "operator": "In", "values": ["research"]}],
                    },
                    "queueingStrategy": "BestEffortFIFO",
                    "preemption": {
                        "reclaimWithinCohort": "Any",
                        "borrowWithinCohort": {"policy": "LowerPriority"},
                        "withinClusterQueue": "LowerPriority",
                    },
                    "flavorFungibility": {
                        "whenCanBorrow": "TryNextFlavor",
                        "whenCanPreempt": "TryNextFlavor",
                        "preference": "BorrowingOverPreemption",
                    },
                    "fairSharing": {"weight": "1"},
                    "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["gpu"]}]},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "cpu",
                                    "resources": [
                                        {
                                            "name": "cpu",
                                            "nominalQuota": "8",
                                            "borrowingLimit": "4",
                                            "lendingLimit": "2",
                                        },
                                        {"name": "memory", "nominalQuota": "32Gi"},
                                    ],
                                }
                            ],
                        },
                        {
                            "coveredResources": ["nvidia.com/gpu"],
                            "flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}],
                        },
                    ],
                },
            },
            {
                "apiVersion": V,
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": "research"},
                "spec": {"clusterQueue": "research", "fairSharing": {"weight": "2"}},
            },
            {
                "apiVersion": V,
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
                "description": "runs first",
            },
        ]
    )


# Flavor cpu: the ClusterQueue's 8 cpu + the Cohort's 2 cpu fill it exactly.
CAPACITY = {"cpu": {"cpu": "10", "memory": "32Gi"}, "gpu": {"nvidia.com/gpu": 2}}


def label(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return "/".join([obj["kind"], *([metadata["namespace"]] if "namespace" in metadata else []), metadata["name"]])


def find(objects: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    return next(obj for obj in objects if label(obj) == wanted)


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
DELETE = object()


def edit(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set, append (index == length) or with DELETE remove the value at a path like spec.levels[0]."""
    keys: list[str | int] = [name if name else int(index) for name, index in _TOKEN.findall(path)]
    parent = obj
    for key in keys[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[keys[-1]]
    elif isinstance(parent, list) and keys[-1] == len(parent):
        parent.append(copy.deepcopy(value))
    else:
        parent[keys[-1]] = copy.deepcopy(value)  # never share a case's value between tests


def test_baseline_is_valid(crds: CrdSchemas) -> None:
    assert validate_objects(baseline(), crds=crds, capacity=CAPACITY) == []
    assert validate_objects(baseline()) == []


# ---------------------------------------------------------------------------------------------
# Hand-broken objects: each case breaks one thing and must report exactly these rule ids.


class Case(NamedTuple):
    id: str
    target: str
    edits: dict[str, Any]
    rules: frozenset[str]


CQ = "ClusterQueue/research"
CO = "Cohort/org"
LQ = "LocalQueue/research/default"
RF = "ResourceFlavor/gpu"
TP = "Topology/aks"
WPC = "WorkloadPriorityClass/high"
CQ_CPU_QUOTAS = "spec.resourceGroups[0].flavors[0].resources"
CO_CPU_QUOTA = "spec.resourceGroups[0].flavors[0].resources[0]"


def groups(count: int, flavors: int, resources: int) -> list[dict[str, Any]]:
    """Resource groups with distinct resource and flavor names (so only the totals are broken)."""
    return [
        {
            "coveredResources": [f"example.com/r{g}-{r}" for r in range(resources)],
            "flavors": [
                {
                    "name": f"f{g}-{f}",
                    "resources": [{"name": f"example.com/r{g}-{r}", "nominalQuota": 1} for r in range(resources)],
                }
                for f in range(flavors)
            ],
        }
        for g in range(count)
    ]


NO_CHECKS = {"spec.admissionChecksStrategy": DELETE}  # so onFlavors (CQ31) may name any flavor
# A ClusterQueue fit for concurrentAdmissionPolicy (CQ33): one resource group, no admission checks.
CONCURRENT = {
    **NO_CHECKS,
    "spec.resourceGroups[1]": DELETE,
    "spec.concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
}


def case(id: str, target: str, edits: dict[str, Any], *rules: str) -> Case:
    return Case(id, target, edits, frozenset(rules))


CASES = [
    # OpenAPI schema (docs/design-notes.md#kueue-rule-ids), reported as "schema"
    case("CQ5-nominalQuota-required", CQ, {f"{CQ_CPU_QUOTAS}[1].nominalQuota": DELETE}, "schema"),
    case(
        "CQ4-flavor-listmap-duplicate",
        CQ,
        {
            "spec.resourceGroups[0].flavors[1]": {
                "name": "cpu",
                "resources": [{"name": "cpu", "nominalQuota": 1}, {"name": "memory", "nominalQuota": 1}],
            }
        },
        "schema",
        "CQ10",
    ),
    case("CQ5-resource-listmap-duplicate", CQ, {f"{CQ_CPU_QUOTAS}[1].name": "cpu"}, "schema", "CQ7"),
    case("CQ14-quantity-pattern", CQ, {f"{CQ_CPU_QUOTAS}[1].nominalQuota": "lots"}, "schema", "CQ14"),
    case("CQ20-queueingStrategy-enum", CQ, {"spec.queueingStrategy": "FIFO"}, "schema"),
    case("CQ21-stopPolicy-enum", CQ, {"spec.stopPolicy": "Pause"}, "schema"),
    case("CQ23-preemption-enum", CQ, {"spec.preemption.withinClusterQueue": "Always"}, "schema"),
    case("CQ25-preference-enum", CQ, {"spec.flavorFungibility.preference": "Sometimes"}, "schema"),
    case("CQ29-admissionMode-required", CQ, {"spec.admissionScope": {}}, "schema"),
    case(
        "CQ30-onFlavors-set-duplicate",
        CQ,
        {"spec.admissionChecksStrategy.admissionChecks[0].onFlavors": ["gpu", "gpu"]},
        "schema",
    ),
    case("unknown-field-v1beta1-cohort", CQ, {"spec.cohort": "org"}, "schema"),
    case("not-served-apiVersion", CQ, {"apiVersion": "kueue.x-k8s.io/v1alpha1"}, "schema"),
    case("LQ3-stopPolicy-enum", LQ, {"spec.stopPolicy": "Pause"}, "schema"),
    case("RF1-nodeLabels-max-8", RF, {"spec.nodeLabels": {f"example.com/l{i}": "x" for i in range(9)}}, "schema"),
    case(
        "RF6-tolerations-max-8",
        RF,
        {
            "spec.tolerations": [
                {"key": f"example.com/t{i}", "operator": "Exists", "effect": "NoSchedule"} for i in range(9)
            ]
        },
        "schema",
    ),
    case("RF9-topologyName-pattern", RF, {"spec.topologyName": "Bad_Name"}, "schema", "REF-topology"),
    case("TP1-levels-min-1", TP, {"spec.levels": []}, "schema"),
    case("TP2-nodeLabel-pattern", TP, {"spec.levels[0].nodeLabel": "not a label"}, "schema"),
    case("WPC1-value-required", WPC, {"value": DELETE}, "schema"),
    case("WPC1-value-int32", WPC, {"value": 2**31}, "schema"),
    case("WPC1-value-top-level", WPC, {"value": DELETE, "spec": {"value": 1000}}, "schema"),
    case("WPC2-description-max-2048", WPC, {"description": "x" * 2049}, "schema"),
    # CEL rules of the CRDs
    case("CQ6-resources-count", CQ, {CQ_CPU_QUOTAS: [{"name": "cpu", "nominalQuota": "8"}]}, "CQ6"),
    case(
        "CQ16-borrowingLimit-needs-cohort",
        CQ,
        {"spec.cohortName": DELETE, f"{CQ_CPU_QUOTAS}[0].lendingLimit": DELETE},
        "CQ16",
    ),
    case("CQ24-borrowWithinCohort-needs-reclaim", CQ, {"spec.preemption.reclaimWithinCohort": DELETE}, "CQ24"),
    case("CQ26-preference-needs-TryNextFlavor", CQ, {"spec.flavorFungibility.whenCanBorrow": DELETE}, "CQ26"),
    case("CO2-resources-count", CO, {"spec.resourceGroups[0].coveredResources": ["cpu", "memory"]}, "CO2"),
    case("RF4-taint-effect", RF, {"spec.nodeTaints[0].effect": "NoAdmit"}, "RF4"),
    case("RF7-no-key-needs-Exists", RF, {"spec.tolerations[0].key": DELETE}, "RF7"),
    case("RF7-tolerationSeconds-needs-NoExecute", RF, {"spec.tolerations[0].tolerationSeconds": 30}, "RF7"),
    case("RF7-operator-enum", RF, {"spec.tolerations[1].operator": "Gte"}, "RF7"),
    case("RF7-Exists-no-value", RF, {"spec.tolerations[1].value": "true"}, "RF7"),
    case("RF7-toleration-effect", RF, {"spec.tolerations[0].effect": "NoAdmit"}, "RF7"),
    case("RF10-topology-needs-nodeLabels", RF, {"spec.nodeLabels": DELETE}, "RF10"),
    case("RF10-topology-needs-nonempty-nodeLabels", RF, {"spec.nodeLabels": {}}, "RF10"),
    case("TP3-levels-unique", TP, {"spec.levels[0].nodeLabel": "kubernetes.io/hostname"}, "TP3"),
    case(
        "TP4-hostname-last",
        TP,
        {"spec.levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "topology.kubernetes.io/zone"}]},
        "TP4",
    ),
    # Kueue webhook rules (kueue v0.19.2 source: pkg/webhooks/)
    case(
        "CQ7-coveredResources-order",
        CQ,
        {CQ_CPU_QUOTAS: [{"name": "memory", "nominalQuota": "32Gi"}, {"name": "cpu", "nominalQuota": "8"}]},
        "CQ7",
    ),
    case(
        "CQ8-resource-qualified-name",
        CQ,
        {
            "spec.resourceGroups[1].coveredResources": ["gpu!"],
            "spec.resourceGroups[1].flavors[0].resources[0].name": "gpu!",
        },
        "CQ8",
    ),
    case(
        "CQ9-resource-in-one-group",
        CQ,
        {
            "spec.resourceGroups[1].coveredResources": ["cpu"],
            "spec.resourceGroups[1].flavors[0].resources[0].name": "cpu",
        },
        "CQ9",
    ),
    case(
        "CQ10-flavor-in-one-group",
        CQ,
        {
            "spec.resourceGroups[1].flavors[0].name": "cpu",
            "spec.admissionChecksStrategy.admissionChecks[0].onFlavors": ["cpu"],
        },
        "CQ10",
    ),
    # The flavors f<g>-<i> of these three have no ResourceFlavor objects, hence REF-flavor.
    case("CQ11-at-most-256-flavors", CQ, {**NO_CHECKS, "spec.resourceGroups": groups(5, 52, 1)}, "CQ11", "REF-flavor"),
    case(
        "CQ12-at-most-256-resources", CQ, {**NO_CHECKS, "spec.resourceGroups": groups(5, 1, 52)}, "CQ12", "REF-flavor"
    ),
    case(
        "CQ13-at-most-512-pairs-per-group",
        CQ,
        {**NO_CHECKS, "spec.resourceGroups": groups(1, 9, 60)},
        "CQ13",
        "REF-flavor",
    ),
    case("CQ15-quota-non-negative", CQ, {f"{CQ_CPU_QUOTAS}[1].nominalQuota": "-1Gi"}, "CQ15"),
    case(
        "CQ17-lendingLimit-needs-cohort",
        CQ,
        {"spec.cohortName": DELETE, f"{CQ_CPU_QUOTAS}[0].borrowingLimit": DELETE},
        "CQ17",
    ),
    case("CQ18-lendingLimit-within-nominalQuota", CQ, {f"{CQ_CPU_QUOTAS}[0].lendingLimit": "9"}, "CQ18"),
    case(
        "CQ22-selector-values-with-Exists",
        CQ,
        {"spec.namespaceSelector.matchExpressions[0].operator": "Exists"},
        "CQ22",
    ),  # Exists takes no values
    case("CQ28-weight-non-negative", CQ, {"spec.fairSharing.weight": "-1"}, "CQ28"),
    case("CQ28-weight-above-1n", CQ, {"spec.fairSharing.weight": "1n"}, "CQ28"),
    case(
        "CQ31-onFlavors-of-this-queue",
        CQ,
        {"spec.admissionChecksStrategy.admissionChecks[0].onFlavors": ["spot"]},
        "CQ31",
    ),
    case(
        "CQ33-concurrent-admission-one-group",
        CQ,
        {"spec.concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}}},
        "CQ33",
    ),
    case(
        "CQ33-concurrent-admission-max-16-flavors",
        CQ,
        {**CONCURRENT, "spec.resourceGroups": groups(1, 17, 1)},
        "CQ33",
        "REF-flavor",
    ),
    case("CQ33-concurrent-admission-no-StrictFIFO", CQ, {**CONCURRENT, "spec.queueingStrategy": "StrictFIFO"}, "CQ33"),
    case(
        "CQ33-constraints-need-TryPreferredFlavors",
        CQ,
        {**CONCURRENT, "spec.concurrentAdmissionPolicy.migration": {"mode": "RetainFirstAdmission", "constraints": {}}},
        "CQ33",
    ),
    case(
        "CQ33-lastAcceptableFlavorName-of-this-queue",
        CQ,
        {**CONCURRENT, "spec.concurrentAdmissionPolicy.migration.constraints": {"lastAcceptableFlavorName": "spot"}},
        "CQ33",
    ),
    case("CO3-coveredResources-order", CO, {f"{CO_CPU_QUOTA}.name": "memory"}, "CO3"),
    case("CO3-quota-non-negative", CO, {f"{CO_CPU_QUOTA}.nominalQuota": "-2"}, "CO3"),
    case("CO4-limits-need-parent", CO, {"spec.parentName": DELETE}, "CO4"),
    case("CO6-weight-non-negative", CO, {"spec.fairSharing.weight": "-1"}, "CO6"),
    case("LQ4-weight-non-negative", LQ, {"spec.fairSharing.weight": "-1"}, "LQ4"),
    case("RF2-nodeLabels-value", RF, {"spec.nodeLabels": {"kubernetes.azure.com/agentpool": "gpu pool"}}, "RF2"),
    case("RF5-taint-key", RF, {"spec.nodeTaints[0].key": "nvidia gpu"}, "RF5"),
    case("RF5-taint-value", RF, {"spec.nodeTaints[0].value": "present!"}, "RF5"),
    case(
        "RF5-taint-unique-key-effect",
        RF,
        {"spec.nodeTaints[1]": {"key": "nvidia.com/gpu", "effect": "NoSchedule"}},
        "RF5",
    ),
    case("RF8-toleration-key", RF, {"spec.tolerations[1].key": "spot/priority/x"}, "RF8"),
    # Names and labels
    case("NAME-dns-subdomain", WPC, {"metadata.name": "High"}, "NAME"),
    case("NAME-wpc-max-63", WPC, {"metadata.name": "p" * 64}, "NAME"),
    case("NAME-lq-max-63", LQ, {"metadata.name": "q" * 64}, "NAME"),
    case("LABEL-metadata-labels", CQ, {"metadata.labels": {"kueue-aks/team": "-research"}}, "LABEL"),
    case("KIND-not-kueue", WPC, {"apiVersion": "scheduling.k8s.io/v1"}, "KIND"),
]


@pytest.mark.parametrize("broken", CASES, ids=[c.id for c in CASES])
def test_broken_object_is_rejected(broken: Case, crds: CrdSchemas) -> None:
    objects = baseline()
    target = find(objects, broken.target)
    for path, value in broken.edits.items():
        edit(target, path, value)

    violations = validate_objects(objects, crds=crds)

    assert rules_of(violations) == broken.rules, "\n".join(map(str, violations))
    assert any(v.object == label(target) and v.rule in broken.rules for v in violations)
    # Webhook, naming and cross-object rules hold without the CRDs too.
    if not broken.rules & (CEL_ONLY | {"schema"}):
        assert rules_of(validate_objects(objects)) == broken.rules


def test_every_cel_rule_of_our_kinds_has_an_id_and_a_case(crds: CrdSchemas) -> None:
    rules = [rule for rule in crds.cel_rules if rule.kind in OUR_KINDS]
    assert all(rule.rule_id != "CEL" for rule in rules), [r for r in rules if r.rule_id == "CEL"]
    evaluated = {rule.rule_id for rule in rules if not rule.transition}
    assert evaluated == CEL_ONLY | {"CQ16", "CQ24", "CQ26"}
    assert evaluated <= {rule for c in CASES for rule in c.rules}
    # Transition rules (oldSelf) only apply to updates; the validator checks creates.
    assert {rule.rule_id for rule in rules if rule.transition} == {"LQ2", "RF11", "TP5"}


def test_messages_name_object_rule_and_field(crds: CrdSchemas) -> None:
    objects = baseline()
    swapped = [{"name": "memory", "nominalQuota": "32Gi"}, {"name": "cpu", "nominalQuota": "8"}]
    edit(find(objects, CQ), CQ_CPU_QUOTAS, swapped)

    first = validate_objects(objects, crds=crds)[0]

    assert str(first) == (
        "ClusterQueue/research: [CQ7] spec.resourceGroups[0].flavors[0].resources[0].name is 'memory' but "
        "coveredResources[0] is 'cpu'; resources must follow coveredResources order"
    )


LABELS = [
    ("kubernetes.azure.com/agentpool", "gpu", True),
    ("agentpool", "", True),  # empty values are allowed
    ("k" * 63, "v" * 63, True),
    ("example.com/" + "k" * 63, "v", True),
    ("k" * 64, "v", False),
    ("example.com/" + "k" * 64, "v", False),
    ("Example.com/pool", "v", False),  # the prefix is a DNS subdomain: lowercase
    ("a/b/c", "v", False),
    ("/pool", "v", False),
    ("pool-", "v", False),
    ("pool", "v" * 64, False),
    ("pool", "-gpu", False),
    ("pool", "gpu pool", False),
]


@pytest.mark.parametrize(("key", "value", "valid"), LABELS, ids=[f"{k[:20]}={v[:20]}" for k, v, _ in LABELS])
def test_label_syntax(key: str, value: str, valid: bool) -> None:
    objects = baseline()
    find(objects, RF)["spec"]["nodeLabels"] = {key: value}

    assert rules_of(validate_objects(objects)) == (set() if valid else {"RF2"})


def test_rule_enforced_by_cel_and_webhook_is_reported_once(crds: CrdSchemas) -> None:
    objects = baseline()
    queue = find(objects, CQ)
    del queue["spec"]["cohortName"]
    del queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"]

    violations = validate_objects(objects, crds=crds)

    assert [v.rule for v in violations] == ["CQ16"]
    assert violations[0].message.startswith(f"{CQ_CPU_QUOTAS}[0].borrowingLimit is set but spec.cohortName is empty")


def test_cel_sees_the_api_server_defaults(crds: CrdSchemas) -> None:
    objects = baseline()
    spec = find(objects, CQ)["spec"]
    # reclaimWithinCohort defaults to Never (CQ24 then holds); whenCanPreempt to TryNextFlavor (CQ26).
    spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    spec["flavorFungibility"] = {"whenCanBorrow": "TryNextFlavor", "preference": "PreemptionOverBorrowing"}

    assert validate_objects(objects, crds=crds) == []


def test_cel_failure_reports_the_data_path(crds: CrdSchemas) -> None:
    objects = baseline()
    edit(find(objects, RF), "spec.tolerations[1].operator", "Gte")

    [violation] = validate_objects(objects, crds=crds)

    assert violation.message.startswith("spec.tolerations: supported toleration values")


def test_schema_failure_reports_the_field_path(crds: CrdSchemas) -> None:
    objects = baseline()
    edit(find(objects, CQ), "spec.queueingStrategy", "FIFO")

    [violation] = validate_objects(objects, crds=crds)

    assert violation.message.startswith("spec.queueingStrategy: 'FIFO' is not one of")


# ---------------------------------------------------------------------------------------------
# Upstream examples


def kueue_docs(path: Path) -> list[dict[str, Any]]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    # Only queue objects: shared-quota-sample-job.yaml is a batch/v1 Job (SOURCE.md).
    return [doc for doc in docs if doc["apiVersion"].startswith("kueue.x-k8s.io/")]


EXAMPLES = sorted(EXAMPLES_DIR.glob("*.yaml"))


def test_examples_are_there() -> None:
    assert len(EXAMPLES) >= 12, f"upstream examples missing in {EXAMPLES_DIR}"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_upstream_examples(path: Path, crds: CrdSchemas) -> None:
    violations = validate_objects(kueue_docs(path), crds=crds)

    if path.name == "minimal-cq.yaml":
        # Kueue's webhook rejects it: onFlavors names default-flavor, which the queue lacks.
        assert [(v.object, v.rule) for v in violations] == [("ClusterQueue/cluster-queue-2", "CQ31")]
        assert "'default-flavor'" in violations[0].message
    else:
        assert violations == [], "\n".join(map(str, violations))


def test_examples_hold_every_kind_we_create() -> None:
    kinds = {doc["kind"] for path in EXAMPLES for doc in kueue_docs(path)}
    assert kinds >= {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Topology"}


# ---------------------------------------------------------------------------------------------
# Cross-object checks


def without(objects: list[dict[str, Any]], wanted: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if label(obj) != wanted]


def test_missing_flavor() -> None:
    violations = validate_objects(without(baseline(), "ResourceFlavor/cpu"))

    assert {(v.object, v.rule) for v in violations} == {(CQ, "REF-flavor"), (CO, "REF-flavor")}
    assert "spec.resourceGroups[0].flavors[0].name 'cpu'" in violations[0].message


def test_missing_topology() -> None:
    violations = validate_objects(without(baseline(), TP))

    assert {(v.object, v.rule) for v in violations} == {(RF, "REF-topology"), ("ResourceFlavor/cpu", "REF-topology")}


def test_cluster_queue_mixing_topology_aware_and_ordinary_flavors() -> None:
    objects = baseline()
    edit(find(objects, "ResourceFlavor/cpu"), "spec.topologyName", DELETE)
    violations = validate_objects(objects)

    assert [(v.object, v.rule) for v in violations] == [(CQ, "TAS-mixed")]
    assert 'Flavor "gpu" supports only TopologyAwareScheduling' in violations[0].message
    assert "(gpu)" in violations[0].message and "(cpu)" in violations[0].message


@pytest.mark.parametrize("value", ["nope", DELETE])
def test_missing_cluster_queue(value: Any) -> None:
    objects = baseline()
    edit(find(objects, LQ), "spec.clusterQueue", value)

    assert [(v.object, v.rule) for v in validate_objects(objects)] == [(LQ, "REF-clusterqueue")]


def test_missing_namespace_when_namespaces_are_given() -> None:
    objects = without(baseline(), "Namespace/research")
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}})

    violations = validate_objects(objects)

    # Without its Namespace object the namespace also lacks the kueue-aks/team label.
    assert {(v.object, v.rule) for v in violations} == {(LQ, "REF-namespace"), (LQ, "LQ5")}


def test_namespaces_are_not_required_when_none_are_given() -> None:
    objects = [obj for obj in baseline() if obj["kind"] != "Namespace"]
    edit(find(objects, CQ), "spec.namespaceSelector", {"matchLabels": {"kubernetes.io/metadata.name": "research"}})

    assert validate_objects(objects) == []


def test_default_namespace_always_exists() -> None:
    objects = baseline()
    queue = find(objects, LQ)
    queue["metadata"]["namespace"] = "default"
    edit(find(objects, CQ), "spec.namespaceSelector", {})

    assert validate_objects(objects) == []


def test_implicit_cohort_is_fine() -> None:
    objects = without(baseline(), CO)
    edit(find(objects, CQ), "spec.cohortName", "nobody-created-this")

    assert validate_objects(objects) == []


SELECTORS = [
    ({}, True),
    (None, False),
    ({"matchLabels": {"kubernetes.io/metadata.name": "research"}}, True),
    ({"matchLabels": {"kubernetes.io/metadata.name": "platform"}}, False),
    ({"matchLabels": {"kueue-aks/team": "research", "tier": "gold"}}, False),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "In", "values": ["a", "research"]}]}, True),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "In", "values": ["a"]}]}, False),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "NotIn", "values": ["a"]}]}, True),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "NotIn", "values": ["research"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}, True),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, True),
    ({"matchExpressions": [{"key": "kueue-aks/team", "operator": "DoesNotExist"}]}, False),
    (
        {
            "matchLabels": {"kubernetes.io/metadata.name": "research"},
            "matchExpressions": [{"key": "tier", "operator": "Exists"}],
        },
        False,
    ),
]


@pytest.mark.parametrize(("selector", "matches"), SELECTORS, ids=[str(s) for s, _ in SELECTORS])
def test_namespace_selector(selector: Any, matches: bool) -> None:
    objects = baseline()
    edit(find(objects, CQ), "spec.namespaceSelector", selector)

    violations = validate_objects(objects)

    assert [(v.object, v.rule) for v in violations] == ([] if matches else [(LQ, "LQ5")])


def test_duplicate_objects() -> None:
    objects = baseline()
    objects.append(copy.deepcopy(find(objects, LQ)))
    twin = copy.deepcopy(find(objects, CQ))
    twin["apiVersion"] = "kueue.x-k8s.io/v1beta1"  # the same object, whichever version writes it
    twin["spec"]["cohort"] = twin["spec"].pop("cohortName")
    objects.append(twin)

    assert [(v.object, v.rule) for v in validate_objects(objects)] == [(LQ, "DUPLICATE"), (CQ, "DUPLICATE")]


def test_same_name_in_other_namespace_is_no_duplicate() -> None:
    objects = baseline()
    other = copy.deepcopy(find(objects, LQ))
    other["metadata"]["namespace"] = "default"
    objects.append(other)

    assert [v.rule for v in validate_objects(objects)] == ["LQ5"]  # only the selector complains


def test_v1beta1_cluster_queue_uses_spec_cohort(crds: CrdSchemas) -> None:
    objects = baseline()
    queue = find(objects, CQ)
    queue["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    queue["spec"]["cohort"] = queue["spec"].pop("cohortName")

    assert validate_objects(objects, crds=crds) == []
    del queue["spec"]["cohort"]
    assert {"CQ16", "CQ17"} <= rules_of(validate_objects(objects, crds=crds))


def test_quota_exactly_at_capacity_passes() -> None:
    assert validate_objects(baseline(), capacity=CAPACITY) == []


@pytest.mark.parametrize("limit", ["9", 9, Decimal("9.999"), "9999m"])
def test_quota_over_capacity(limit: Any) -> None:
    capacity = {**CAPACITY, "cpu": {"cpu": limit, "memory": "32Gi"}}

    violations = validate_objects(baseline(), capacity=capacity)

    assert [(v.object, v.rule) for v in violations] == [("ResourceFlavor/cpu", "CAPACITY")]
    assert "sums to 10 over ClusterQueue/research, Cohort/org" in violations[0].message


def test_capacity_compares_quantities_not_strings() -> None:
    objects = baseline()
    edit(find(objects, CQ), f"{CQ_CPU_QUOTAS}[1].nominalQuota", "32768Mi")

    assert validate_objects(objects, capacity=CAPACITY) == []
    edit(find(objects, CQ), f"{CQ_CPU_QUOTAS}[1].nominalQuota", "32769Mi")
    assert rules_of(validate_objects(objects, capacity=CAPACITY)) == {"CAPACITY"}


@pytest.mark.parametrize("missing", ["memory", "gpu"])
def test_quota_for_unknown_capacity(missing: str) -> None:
    capacity = copy.deepcopy(CAPACITY)
    if missing == "gpu":
        del capacity["gpu"]
    else:
        del capacity["cpu"]["memory"]

    violations = validate_objects(baseline(), capacity=capacity)

    assert [v.rule for v in violations] == ["CAPACITY-missing"]
    assert "ClusterQueue/research" in violations[0].message


# ---------------------------------------------------------------------------------------------
# Interface: errors, CRD loading, scale


def test_check_objects_raises_with_every_violation() -> None:
    objects = baseline()
    edit(find(objects, LQ), "spec.fairSharing.weight", "-1")
    edit(find(objects, WPC), "metadata.name", "High")

    with pytest.raises(KueueValidationError) as raised:
        check_objects(objects)

    assert [v.rule for v in raised.value.violations] == ["LQ4", "NAME"]
    assert str(raised.value).splitlines() == [str(v) for v in raised.value.violations]
    assert str(raised.value).splitlines()[0].startswith("LocalQueue/research/default: [LQ4] spec.fairSharing.weight")


def test_check_objects_passes_silently(crds: CrdSchemas) -> None:
    check_objects(baseline(), crds=crds, capacity=CAPACITY)


def test_non_mapping_object() -> None:
    assert [v.rule for v in validate_objects(["not an object"])] == ["KIND"]  # type: ignore[list-item]


def test_crds_from_env_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CRDS_ENV, raising=False)

    assert crds_from_env(required=False) is None
    with pytest.raises(CrdError, match=CRDS_ENV):
        crds_from_env(required=True)


@pytest.mark.parametrize("required", [True, False])
def test_crds_from_env_missing_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, required: bool) -> None:
    monkeypatch.setenv(CRDS_ENV, str(tmp_path / "nowhere"))

    with pytest.raises(CrdError, match="does not exist"):
        crds_from_env(required=required)


def test_load_crds_without_kueue_crds(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")

    with pytest.raises(CrdError, match="no CustomResourceDefinition of group kueue.x-k8s.io"):
        load_crds(tmp_path)


def test_load_crds_reads_a_release_manifests_yaml(tmp_path: Path) -> None:
    # The README's download: one manifests.yaml with the CRDs among every other install object.
    crd_docs = [path.read_text() for path in sorted(CRDS_DIR.glob("*.yaml"))]
    others = ["apiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n", "---\n"]
    (tmp_path / "manifests.yaml").write_text("\n---\n".join([*others, *crd_docs]))

    loaded = load_crds(tmp_path)

    assert {kind for _, kind in loaded.versions} >= OUR_KINDS
    assert validate_objects(baseline(), crds=loaded) == []


def test_load_crds_keys_every_served_version(crds: CrdSchemas) -> None:
    for kind in OUR_KINDS:
        assert (V, kind) in crds.versions
        assert ("kueue.x-k8s.io/v1beta1", kind) in crds.versions
    assert load_crds(CRDS_DIR) is load_crds(CRDS_DIR)  # loaded once per directory
    # The chart's CRD templates, once their Helm directives are gone, are the release's CRDs.
    assert load_crds(CRDS_DIR).versions == crds.versions


def test_validates_200_teams_by_12_pools_quickly(crds: CrdSchemas) -> None:
    pools = [f"pool{i}" for i in range(12)]
    objects = [obj for obj in baseline() if obj["kind"] in ("Topology", "WorkloadPriorityClass")]
    objects += [
        {
            "apiVersion": V,
            "kind": "ResourceFlavor",
            "metadata": {"name": pool},
            "spec": {"nodeLabels": {"kubernetes.azure.com/agentpool": pool}, "topologyName": "aks"},
        }
        for pool in pools
    ]
    for team in (f"team{i}" for i in range(200)):
        objects += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}},
            {
                "apiVersion": V,
                "kind": "ClusterQueue",
                "metadata": {"name": team},
                "spec": {
                    "cohortName": "all",
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": pool,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "500m"},
                                        {"name": "memory", "nominalQuota": "1Gi"},
                                    ],
                                }
                                for pool in pools
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": V,
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": team},
                "spec": {"clusterQueue": team},
            },
        ]
    capacity = {pool: {"cpu": "100", "memory": "200Gi"} for pool in pools}

    started = time.perf_counter()
    violations = validate_objects(objects, crds=crds, capacity=capacity)
    elapsed = time.perf_counter() - started

    assert violations == []
    assert elapsed < 30, f"{len(objects)} objects took {elapsed:.1f}s"


def test_every_rule_id_the_validator_reports_is_explained() -> None:
    """docs/design-notes.md#kueue-rule-ids names each id the validator's modules report."""
    ids = set()
    for module in ("validate", "webhooks", "references", "findings"):
        source = (Path(__file__).parents[2] / "components" / "kueue" / f"{module}.py").read_text()
        ids |= set(
            re.findall(
                r'"((?:CQ|CO|LQ|RF|TP)\d+|NAME|LABEL|DUPLICATE|REF-[a-z]+|TAS-mixed|CAPACITY(?:-missing)?|schema|CEL)"',
                source,
            )
        )
    notes = (Path(__file__).parents[2] / "docs" / "design-notes.md").read_text()
    table = notes[notes.index("## Kueue rule ids") :]
    explained = set(re.findall(r"`([A-Za-z-]+)`|\b((?:CQ|CO|LQ|RF|TP)\d+)\b", table))
    explained = {a or b for a, b in explained}
    assert len(ids) > 40 and not ids - explained, sorted(ids - explained)
