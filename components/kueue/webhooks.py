"""Kueue's admission webhook rules, re-implemented because only a running Kueue enforces them
(kueue v0.19.2 source: pkg/webhooks/): per kind, ClusterQueue (CQ7-CQ13, CQ15-CQ18, CQ22, CQ24,
CQ26, CQ28, CQ31, CQ33), Cohort (CO3, CO4, CO6), LocalQueue (LQ4, which nothing upstream checks)
and ResourceFlavor (RF2, RF5, RF8); and for every object its name (NAME) and labels (LABEL).
Each finding is (rule id, message); the rule ids are docs/design-notes.md#kueue-rule-ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..k8s.crd_schema import Finding
from ..k8s.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from ..k8s.quantity import QuantityError, parse_quantity
from .findings import KUEUE_GROUP, as_dict, as_list, flavors_of, listed

_QUANTITY_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


# Kueue's caps on a ClusterQueue's groups (CQ11-CQ13; kueue v0.19.2 source:
# pkg/webhooks/clusterqueue_webhook.go); Cohorts have none (CO5).
_MAX_FLAVORS, _MAX_RESOURCES, _MAX_PAIRS_PER_GROUP = 256, 256, 512


_MAX_CONCURRENT_ADMISSION_FLAVORS = 16  # CQ33


_QUALIFIED_NAME = (
    "must be a qualified name: an optional DNS-subdomain prefix and '/', then at most 63 letters, "
    "digits, '-', '_' or '.', starting and ending with a letter or digit"
)


_LABEL_VALUE = (
    "must be empty or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)


def _dns_name_problem(value: Any, *, max_length: int, label: bool = False) -> str | None:
    if label:
        valid = isinstance(value, str) and is_dns1123_label(value)
        allowed = "DNS-1123 label: lowercase letters, digits and '-'"
    else:
        valid = isinstance(value, str) and is_dns1123_subdomain(value)
        allowed = "DNS-1123 subdomain: lowercase letters, digits, '-' and '.'"
    if valid and len(value) <= max_length:
        return None
    return f"must be a {allowed}, at most {max_length} characters, starting and ending with a letter or digit"


def _qualified_name_problem(value: Any) -> str | None:
    """Label keys, taint keys and resource names (IsQualifiedName)."""
    return None if isinstance(value, str) and is_qualified_name(value) else _QUALIFIED_NAME


def _label_value_problem(value: Any) -> str | None:
    return None if isinstance(value, str) and is_label_value(value) else _LABEL_VALUE


def _labels_problems(labels: Any, path: str) -> Iterator[str]:
    if labels is None:
        return
    if not isinstance(labels, Mapping):
        yield f"{path} must be a map of label keys to values"
        return
    for key, value in labels.items():
        if problem := _qualified_name_problem(key):
            yield f"{path} key {key!r} {problem}"
        if problem := _label_value_problem(value):
            yield f"{path}[{key!r}] value {value!r} {problem}"


@dataclass(frozen=True)
class _GroupRules:
    """Rule ids for the resource-group checks Kueue's webhook shares between ClusterQueue and
    Cohort (kueue v0.19.2 source: pkg/webhooks/clusterqueue_webhook.go validateResourceGroups,
    called from cohort_webhook.go too)."""

    parent_field: str  # "cohortName" / "parentName": limits need a parent to borrow from / lend to
    order: str
    resource_name: str
    duplicate_resource: str
    duplicate_flavor: str
    quantity: str
    negative: str
    borrowing_without_parent: str
    lending_without_parent: str
    # ClusterQueues only (CO5): lendingLimit <= nominalQuota and the 256/256/512 caps.
    lending_over_nominal: str | None
    too_many_flavors: str | None
    too_many_resources: str | None
    too_many_pairs: str | None


_CQ_GROUPS = _GroupRules(
    parent_field="cohortName",
    order="CQ7",
    resource_name="CQ8",
    duplicate_resource="CQ9",
    duplicate_flavor="CQ10",
    quantity="CQ14",
    negative="CQ15",
    borrowing_without_parent="CQ16",
    lending_without_parent="CQ17",
    lending_over_nominal="CQ18",
    too_many_flavors="CQ11",
    too_many_resources="CQ12",
    too_many_pairs="CQ13",
)


_COHORT_GROUPS = _GroupRules(
    parent_field="parentName",
    order="CO3",
    resource_name="CO3",
    duplicate_resource="CO3",
    duplicate_flavor="CO3",
    quantity="CO2",
    negative="CO3",
    borrowing_without_parent="CO4",
    lending_without_parent="CO4",
    lending_over_nominal=None,
    too_many_flavors=None,
    too_many_resources=None,
    too_many_pairs=None,
)


def _resource_group_problems(spec: Mapping[str, Any], rules: _GroupRules, has_parent: bool) -> Iterator[Finding]:
    seen_resources: set[str] = set()
    flavor_count = 0
    seen_flavors: set[str] = set()
    for i, group in enumerate(as_list(spec.get("resourceGroups"))):
        group_path = f"spec.resourceGroups[{i}]"
        covered = as_list(as_dict(group).get("coveredResources"))
        for j, name in enumerate(covered):
            where = f"{group_path}.coveredResources[{j}]"
            if problem := _qualified_name_problem(name):
                yield rules.resource_name, f"{where} {name!r} {problem}"
            elif name in seen_resources:
                yield (
                    rules.duplicate_resource,
                    (f"{where} {name!r} is already covered; a resource may appear in one group only, once"),
                )
            seen_resources.add(str(name))
        flavors = as_list(as_dict(group).get("flavors"))
        flavor_count += len(flavors)
        if rules.too_many_pairs and len(flavors) * len(covered) > _MAX_PAIRS_PER_GROUP:
            yield (
                rules.too_many_pairs,
                (
                    f"{group_path} has {len(flavors)} flavors x {len(covered)} resources; "
                    f"at most {_MAX_PAIRS_PER_GROUP} flavor/resource pairs per group"
                ),
            )
        for j, flavor in enumerate(flavors):
            flavor = as_dict(flavor)
            flavor_path = f"{group_path}.flavors[{j}]"
            name = str(flavor.get("name"))
            if name in seen_flavors:
                yield (
                    rules.duplicate_flavor,
                    (f"{flavor_path}.name {name!r} is already used; a flavor may appear in one group only, once"),
                )
            seen_flavors.add(name)
            for k, (resource, covered_name) in enumerate(zip(as_list(flavor.get("resources")), covered, strict=False)):
                yield from _quota_problems(
                    as_dict(resource), covered_name, k, f"{flavor_path}.resources[{k}]", rules, has_parent
                )
    if rules.too_many_flavors and flavor_count > _MAX_FLAVORS:
        yield rules.too_many_flavors, f"spec.resourceGroups has {flavor_count} flavors; at most {_MAX_FLAVORS}"
    if rules.too_many_resources and len(seen_resources) > _MAX_RESOURCES:
        yield (
            rules.too_many_resources,
            (f"spec.resourceGroups covers {len(seen_resources)} resources; at most {_MAX_RESOURCES}"),
        )


def _quota_problems(
    resource: Mapping[str, Any], covered_name: Any, index: int, path: str, rules: _GroupRules, has_parent: bool
) -> Iterator[Finding]:
    if resource.get("name") != covered_name:
        yield (
            rules.order,
            (
                f"{path}.name is {resource.get('name')!r} but coveredResources[{index}] is {covered_name!r}; "
                "resources must follow coveredResources order"
            ),
        )
    amounts: dict[str, Decimal] = {}
    for name in _QUANTITY_FIELDS:
        if name not in resource:
            continue
        try:
            amounts[name] = parse_quantity(resource[name])
        except QuantityError:
            yield rules.quantity, f"{path}.{name} {resource[name]!r} is not a quantity (e.g. 500m, 4, 16Gi)"
            continue
        if amounts[name] < 0:
            yield rules.negative, f"{path}.{name} is {resource[name]}; quotas must be >= 0"
    if not has_parent:
        for name, rule in (
            ("borrowingLimit", rules.borrowing_without_parent),
            ("lendingLimit", rules.lending_without_parent),
        ):
            if name in resource:
                yield (
                    rule,
                    (
                        f"{path}.{name} is set but spec.{rules.parent_field} is empty; "
                        f"{name} is allowed only with a {rules.parent_field}"
                    ),
                )
    lending, nominal = amounts.get("lendingLimit"), amounts.get("nominalQuota")
    if rules.lending_over_nominal and lending is not None and nominal is not None and lending > nominal:
        yield (
            rules.lending_over_nominal,
            (
                f"{path}.lendingLimit {resource['lendingLimit']} is above nominalQuota "
                f"{resource['nominalQuota']}; it must be <= nominalQuota"
            ),
        )


def _weight_problems(spec: Mapping[str, Any], rule: str, *, reject_tiny: bool) -> Iterator[Finding]:
    fair_sharing = as_dict(spec.get("fairSharing"))
    if "weight" not in fair_sharing:
        return
    raw = fair_sharing["weight"]
    try:
        weight = parse_quantity(raw)
    except QuantityError:
        yield rule, f"spec.fairSharing.weight {raw!r} is not a Kubernetes quantity"
        return
    if weight < 0:
        yield rule, f"spec.fairSharing.weight is {raw}; it must be >= 0"
    # Kueue rejects 0 < weight <= 1n: such weights collapse to 0 in its arithmetic (CQ28, CO6).
    elif reject_tiny and 0 < weight <= Decimal("1e-9"):
        yield rule, f"spec.fairSharing.weight is {raw}; it must be 0 or above 1e-9"


def _selector_problems(selector: Any, path: str) -> Iterator[str]:
    """metav1 validation.ValidateLabelSelector, which Kueue's webhook applies (CQ22)."""
    if selector is None:
        return
    if not isinstance(selector, Mapping):
        yield f"{path} must be a label selector (matchLabels / matchExpressions)"
        return
    yield from _labels_problems(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expression in enumerate(as_list(selector.get("matchExpressions"))):
        expression = as_dict(expression)
        where = f"{path}.matchExpressions[{i}]"
        if problem := _qualified_name_problem(expression.get("key")):
            yield f"{where}.key {expression.get('key')!r} {problem}"
        operator, values = expression.get("operator"), as_list(expression.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                yield f"{where}.values must be non-empty when operator is {operator}"
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                yield f"{where}.values must be empty when operator is {operator}"
        else:
            yield f"{where}.operator {operator!r} is not one of In, NotIn, Exists, DoesNotExist"
        for j, value in enumerate(values):
            if problem := _label_value_problem(value):
                yield f"{where}.values[{j}] {value!r} {problem}"


def _cohort_name(obj: Mapping[str, Any]) -> str:
    # v1beta1 ClusterQueues name their cohort in spec.cohort (kubernetes-sigs/kueue apis/kueue/v1beta1/
    # clusterqueue_types.go@v0.19.2).
    field_name = "cohort" if obj.get("apiVersion") == f"{KUEUE_GROUP}/v1beta1" else "cohortName"
    value = as_dict(obj.get("spec")).get(field_name)
    return value if isinstance(value, str) else ""


def _cluster_queue_problems(obj: Mapping[str, Any]) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    yield from _resource_group_problems(spec, _CQ_GROUPS, has_parent=bool(_cohort_name(obj)))
    for message in _selector_problems(spec.get("namespaceSelector"), "spec.namespaceSelector"):
        yield "CQ22", message
    # CQ24 and CQ26 compare against the API server's defaults (CQ23, CQ25) where a field is unset.
    preemption = as_dict(spec.get("preemption"))
    borrow_policy = as_dict(preemption.get("borrowWithinCohort")).get("policy", "Never")
    if preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow_policy != "Never":
        yield (
            "CQ24",
            (
                f"spec.preemption.borrowWithinCohort.policy is {borrow_policy!r} while reclaimWithinCohort "
                "is Never; borrowWithinCohort needs reclaimWithinCohort LowerPriority or Any"
            ),
        )
    fungibility = as_dict(spec.get("flavorFungibility"))
    if "preference" in fungibility and (
        fungibility.get("whenCanBorrow", "MayStopSearch") != "TryNextFlavor"
        or fungibility.get("whenCanPreempt", "TryNextFlavor") != "TryNextFlavor"
    ):
        yield (
            "CQ26",
            (
                "spec.flavorFungibility.preference is set; it is allowed only when whenCanBorrow and "
                "whenCanPreempt are both TryNextFlavor"
            ),
        )
    yield from _weight_problems(spec, "CQ28", reject_tiny=True)
    flavors = {str(flavor.get("name")) for _, flavor in flavors_of(spec)}
    checks = as_list(as_dict(spec.get("admissionChecksStrategy")).get("admissionChecks"))
    for i, check in enumerate(checks):
        for j, flavor in enumerate(as_list(as_dict(check).get("onFlavors"))):
            if flavor not in flavors:
                yield (
                    "CQ31",
                    (
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}] is {flavor!r}, "
                        f"which is not a flavor of this ClusterQueue's resourceGroups ({listed(flavors)})"
                    ),
                )
    yield from _concurrent_admission_problems(spec, flavors)


def _concurrent_admission_problems(spec: Mapping[str, Any], flavors: set[str]) -> Iterator[Finding]:
    """CQ33: what Kueue's webhook requires of concurrentAdmissionPolicy (alpha ConcurrentAdmission)."""
    if "concurrentAdmissionPolicy" not in spec:
        return
    migration = as_dict(as_dict(spec["concurrentAdmissionPolicy"]).get("migration"))
    groups = as_list(spec.get("resourceGroups"))
    if len(groups) != 1:
        yield "CQ33", f"spec.concurrentAdmissionPolicy needs exactly 1 resource group (has {len(groups)})"
    elif len(as_list(as_dict(groups[0]).get("flavors"))) > _MAX_CONCURRENT_ADMISSION_FLAVORS:
        yield (
            "CQ33",
            (
                "spec.concurrentAdmissionPolicy allows at most "
                f"{_MAX_CONCURRENT_ADMISSION_FLAVORS} flavors in spec.resourceGroups[0]"
            ),
        )
    if spec.get("queueingStrategy") == "StrictFIFO":
        yield "CQ33", "spec.concurrentAdmissionPolicy cannot be used with queueingStrategy StrictFIFO"
    if "constraints" in migration:
        if migration.get("mode") != "TryPreferredFlavors":
            yield (
                "CQ33",
                ("spec.concurrentAdmissionPolicy.migration.constraints is allowed only with mode TryPreferredFlavors"),
            )
        last = as_dict(migration["constraints"]).get("lastAcceptableFlavorName")
        if last is not None and last not in flavors:
            yield (
                "CQ33",
                (
                    f"spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName {last!r} "
                    f"is not a flavor of this ClusterQueue ({listed(flavors)})"
                ),
            )


def _cohort_problems(obj: Mapping[str, Any]) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    yield from _resource_group_problems(spec, _COHORT_GROUPS, has_parent=bool(spec.get("parentName")))
    yield from _weight_problems(spec, "CO6", reject_tiny=True)


def _local_queue_problems(obj: Mapping[str, Any]) -> Iterator[Finding]:
    # LQ4: Kueue accepts a negative LocalQueue weight (it has no LocalQueue webhook); we do not.
    yield from _weight_problems(as_dict(obj.get("spec")), "LQ4", reject_tiny=False)


def _resource_flavor_problems(obj: Mapping[str, Any]) -> Iterator[Finding]:
    """RF2, RF5, RF8: kueue v0.19.2 source pkg/webhooks/resourceflavor_webhook.go."""
    spec = as_dict(obj.get("spec"))
    for message in _labels_problems(spec.get("nodeLabels"), "spec.nodeLabels"):
        yield "RF2", message
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(as_list(spec.get("nodeTaints"))):
        taint = as_dict(taint)
        where = f"spec.nodeTaints[{i}]"
        if problem := _qualified_name_problem(taint.get("key")):
            yield "RF5", f"{where}.key {taint.get('key')!r} {problem}"
        if problem := _label_value_problem(taint.get("value", "")):
            yield "RF5", f"{where}.value {taint.get('value')!r} {problem}"
        identity = (str(taint.get("key")), str(taint.get("effect")))
        if identity in seen:
            yield (
                "RF5",
                (
                    f"{where} repeats key {identity[0]!r} with effect {identity[1]!r}; "
                    "taints must be unique by key and effect"
                ),
            )
        seen.add(identity)
    for i, toleration in enumerate(as_list(spec.get("tolerations"))):
        toleration = as_dict(toleration)
        where = f"spec.tolerations[{i}]"
        if toleration.get("key") and (problem := _qualified_name_problem(toleration["key"])):
            yield "RF8", f"{where}.key {toleration['key']!r} {problem}"
        if toleration.get("operator", "Equal") == "Equal" and (
            problem := _label_value_problem(toleration.get("value", ""))
        ):
            yield "RF8", f"{where}.value {toleration.get('value')!r} {problem}"


KIND_FINDINGS: Mapping[str, Callable[[Mapping[str, Any]], Iterator[Finding]]] = {
    "ClusterQueue": _cluster_queue_problems,
    "Cohort": _cohort_problems,
    "LocalQueue": _local_queue_problems,
    "ResourceFlavor": _resource_flavor_problems,
}


# Name limits: LocalQueue and WorkloadPriorityClass names end up in label values (kueue.x-k8s.io/queue-name,
# kueue.x-k8s.io/priority-class).
_LABEL_VALUE_NAMED = frozenset({"LocalQueue", "WorkloadPriorityClass"})


def metadata_findings(obj: Mapping[str, Any]) -> Iterator[Finding]:
    kind = obj.get("kind")
    metadata = as_dict(obj.get("metadata"))
    name = metadata.get("name")
    if kind == "Namespace":
        problem = _dns_name_problem(name, max_length=63, label=True)
    else:
        problem = _dns_name_problem(name, max_length=63 if kind in _LABEL_VALUE_NAMED else 253)
    if problem:
        yield "NAME", f"metadata.name {name!r} {problem}"
    if kind == "LocalQueue":
        namespace = metadata.get("namespace")
        if problem := _dns_name_problem(namespace, max_length=63, label=True):
            yield "NAME", f"metadata.namespace {namespace!r} {problem} (a LocalQueue lives in a namespace)"
    for message in _labels_problems(metadata.get("labels"), "metadata.labels"):
        yield "LABEL", message
