"""Checks across objects that no CRD or webhook can do: DUPLICATE (kind, namespace, name),
REF-flavor, REF-topology, REF-clusterqueue, REF-namespace, REF-admissioncheck, TAS-mixed (a
ClusterQueue whose flavors are partly topology-aware), LQ5 (the ClusterQueue's namespaceSelector
must select the LocalQueue's namespace), and, with the pools' capacity given, CAPACITY and
CAPACITY-missing."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..k8s.quantity import QuantityError, parse_quantity
from .findings import NAMESPACE_NAME_LABEL, Capacity, Violation, as_dict, as_list, flavors_of, listed


def describe(obj: Any) -> str:
    metadata = as_dict(as_dict(obj).get("metadata"))
    parts = [str(as_dict(obj).get("kind") or "<no kind>")]
    if "namespace" in metadata:
        parts.append(str(metadata["namespace"]))
    parts.append(str(metadata.get("name") or "<no name>"))
    return "/".join(parts)


@dataclass(frozen=True)
class ObjectIndex:
    """Objects by kind and name, built once so every reference is an O(1) lookup."""

    by_kind: dict[str, dict[Any, Mapping[str, Any]]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, obj: Mapping[str, Any]) -> bool:
        """False when an object with the same kind, namespace and name was already added."""
        metadata = as_dict(obj.get("metadata"))
        key = (metadata.get("namespace"), metadata.get("name"))
        named = self.by_kind[str(obj.get("kind"))]
        if key in named:
            return False
        named[key] = obj
        return True

    def get(self, kind: str, name: Any) -> Mapping[str, Any] | None:
        """A cluster-scoped object by name."""
        return self.by_kind[kind].get((None, name))

    def of(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return self.by_kind[kind].values()

    def names(self, kind: str) -> set[Any]:
        return {name for _, name in self.by_kind[kind]}


def _selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(selector, Mapping):
        return False  # CQ22: a null or omitted namespaceSelector matches no namespace
    if any(labels.get(key) != value for key, value in as_dict(selector.get("matchLabels")).items()):
        return False
    for expression in as_list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        key, operator = str(expression.get("key")), expression.get("operator")
        values = as_list(expression.get("values"))
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False)  # CQ22 reports an unknown operator
        if not matched:
            return False
    return True


def reference_violations(index: ObjectIndex) -> Iterator[Violation]:
    flavors = index.names("ResourceFlavor")
    for kind in ("ClusterQueue", "Cohort"):
        for obj in index.of(kind):
            for path, flavor in flavors_of(as_dict(obj.get("spec"))):
                if flavor.get("name") not in flavors:
                    yield Violation(
                        describe(obj),
                        "REF-flavor",
                        f"{path}.name {flavor.get('name')!r} names no ResourceFlavor (known: {listed(flavors)}); "
                        "Kueue would keep the queue inactive (CQ35)",
                    )
    for obj in index.of("ResourceFlavor"):
        topology = as_dict(obj.get("spec")).get("topologyName")
        if topology is not None and index.get("Topology", topology) is None:
            yield Violation(
                describe(obj),
                "REF-topology",
                f"spec.topologyName {topology!r} names no Topology (known: {listed(index.names('Topology'))})",
            )
    yield from _mixed_topology_problems(index)
    yield from _local_queue_reference_problems(index)
    yield from _admission_check_problems(index)


_MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


_PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


def _admission_check_problems(index: ObjectIndex) -> Iterator[Violation]:
    """What keeps a ClusterQueue inactive for its admission checks (kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go, inactiveReason): a check that names no AdmissionCheck, more
    than one MultiKueue check, a MultiKueue check per flavor, or MultiKueue with ProvisioningRequest;
    and a MultiKueue check whose MultiKueueConfig or clusters are missing (it stays inactive)."""
    for obj in index.of("ClusterQueue"):
        checks = as_list(as_dict(as_dict(obj.get("spec")).get("admissionChecksStrategy")).get("admissionChecks"))
        controllers: dict[str, list[str]] = defaultdict(list)
        for i, check in enumerate(map(as_dict, checks)):
            found = index.get("AdmissionCheck", check.get("name"))
            if found is None and not index.names("AdmissionCheck"):
                continue  # checked alone: the AdmissionCheck may exist already, as for namespaces
            if found is None:
                yield Violation(
                    describe(obj),
                    "REF-admissioncheck",
                    (
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].name {check.get('name')!r} names no "
                        f"AdmissionCheck (known: {listed(index.names('AdmissionCheck'))}); the queue would stay "
                        "inactive"
                    ),
                )
                continue
            controller = str(as_dict(found.get("spec")).get("controllerName"))
            controllers[controller].append(str(check.get("name")))
            if controller == _MULTIKUEUE_CONTROLLER and check.get("onFlavors"):
                yield Violation(
                    describe(obj),
                    "MK-per-flavor",
                    (
                        f"applies MultiKueue check {check.get('name')!r} per flavor (onFlavors); Kueue keeps such a "
                        "queue inactive: apply it to every flavor"
                    ),
                )
        multikueue = controllers.get(_MULTIKUEUE_CONTROLLER, [])
        if len(multikueue) > 1:
            yield Violation(
                describe(obj),
                "MK-multiple",
                (f"has {len(multikueue)} MultiKueue checks ({', '.join(multikueue)}); Kueue keeps the queue inactive"),
            )
        if multikueue and controllers.get(_PROVISIONING_CONTROLLER):
            yield Violation(
                describe(obj),
                "MK-provisioning",
                (
                    "combines MultiKueue with ProvisioningRequest checks; Kueue keeps the queue inactive (put "
                    "ProvisioningRequest on the workers' queues)"
                ),
            )
    for check in index.of("AdmissionCheck"):
        spec = as_dict(check.get("spec"))
        parameters = as_dict(spec.get("parameters"))
        if spec.get("controllerName") != _MULTIKUEUE_CONTROLLER or parameters.get("kind") != "MultiKueueConfig":
            continue
        config = index.get("MultiKueueConfig", parameters.get("name"))
        if config is None:
            yield Violation(
                describe(check),
                "REF-multikueueconfig",
                (f"spec.parameters names MultiKueueConfig {parameters.get('name')!r}, which is not among the objects"),
            )
            continue
        missing = [
            c for c in as_list(as_dict(config.get("spec")).get("clusters")) if index.get("MultiKueueCluster", c) is None
        ]
        if missing:
            yield Violation(
                describe(config),
                "REF-multikueuecluster",
                (f"spec.clusters names {', '.join(map(str, missing))}, with no MultiKueueCluster among the objects"),
            )


def _mixed_topology_problems(index: ObjectIndex) -> Iterator[Violation]:
    """TAS-mixed: a ClusterQueue whose flavors are partly topology-aware. Kueue places a workload
    that requests no topology only on flavors without topologyName unless every flavor of its
    ClusterQueue is topology-aware (kubernetes-sigs/kueue pkg/scheduler/flavorassigner/tas_flavorassigner.go
    @v0.19.2), so such a queue skips its topology-aware flavors for ordinary jobs."""
    for obj in index.of("ClusterQueue"):
        names = [f.get("name") for _, f in flavors_of(as_dict(obj.get("spec")))]
        flavors = {n: index.get("ResourceFlavor", n) for n in names}
        aware = sorted(
            str(n) for n, rf in flavors.items() if rf is not None and as_dict(rf.get("spec")).get("topologyName")
        )
        plain = sorted(
            str(n) for n, rf in flavors.items() if rf is not None and not as_dict(rf.get("spec")).get("topologyName")
        )
        if aware and plain:
            yield Violation(
                describe(obj),
                "TAS-mixed",
                f"mixes topology-aware flavors ({', '.join(aware)}) with ordinary ones ({', '.join(plain)}): Kueue "
                "admits a job that requests no topology only on the ordinary ones (Kueue's reason: "
                f'Flavor "{aware[0]}" supports only TopologyAwareScheduling); put topology-aware flavors in a '
                "ClusterQueue of their own",
            )


def _local_queue_reference_problems(index: ObjectIndex) -> Iterator[Violation]:
    namespace_labels = {
        as_dict(ns.get("metadata")).get("name"): as_dict(as_dict(ns.get("metadata")).get("labels"))
        for ns in index.of("Namespace")
    }
    for queue in index.of("LocalQueue"):
        namespace = as_dict(queue.get("metadata")).get("namespace")
        # 'default' always exists; other namespaces must be among the objects when any are given.
        if namespace_labels and namespace != "default" and namespace not in namespace_labels:
            yield Violation(
                describe(queue),
                "REF-namespace",
                f"metadata.namespace {namespace!r} is not among the Namespace objects ({listed(namespace_labels)})",
            )
        target = as_dict(queue.get("spec")).get("clusterQueue")
        cluster_queue = index.get("ClusterQueue", target)
        if cluster_queue is None:
            yield Violation(
                describe(queue),
                "REF-clusterqueue",
                f"spec.clusterQueue {target!r} names no ClusterQueue (known: "
                f"{listed(index.names('ClusterQueue'))}); the LocalQueue would stay inactive (LQ1, LQ5)",
            )
            continue
        labels = {**namespace_labels.get(namespace, {}), NAMESPACE_NAME_LABEL: namespace}
        selector = as_dict(cluster_queue.get("spec")).get("namespaceSelector")
        if not _selector_matches(selector, labels):
            yield Violation(
                describe(queue),
                "LQ5",
                f"namespace {namespace!r} (labels {json.dumps(labels, sort_keys=True)}) is not selected by "
                f"ClusterQueue/{target} spec.namespaceSelector {json.dumps(selector, sort_keys=True)} "
                "(null or omitted selects no namespace, {} selects all); its workloads would never be admitted",
            )


def capacity_violations(index: ObjectIndex, capacity: Capacity) -> Iterator[Violation]:
    totals: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    for kind in ("ClusterQueue", "Cohort"):
        for obj in index.of(kind):
            for _, flavor in flavors_of(as_dict(obj.get("spec"))):
                for resource in map(as_dict, as_list(flavor.get("resources"))):
                    try:
                        amount = parse_quantity(resource.get("nominalQuota", ""))
                    except QuantityError:
                        continue  # CQ14 / CO2 / schema report it
                    key = (str(flavor.get("name")), str(resource.get("name")))
                    totals[key] += amount
                    holders[key].append(describe(obj))
    for (flavor_name, resource_name), total in totals.items():
        names = holders[(flavor_name, resource_name)]
        by = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        limit = as_dict(capacity.get(flavor_name)).get(resource_name)
        if limit is None:
            yield Violation(
                f"ResourceFlavor/{flavor_name}",
                "CAPACITY-missing",
                f"{by} set a nominalQuota of {resource_name!r} in flavor {flavor_name!r}, but the capacity has no "
                f"{resource_name!r} for {flavor_name!r} (it has: {listed(as_dict(capacity.get(flavor_name)))})",
            )
        elif total > parse_quantity(limit):
            yield Violation(
                f"ResourceFlavor/{flavor_name}",
                "CAPACITY",
                f"the nominalQuota of {resource_name!r} in flavor {flavor_name!r} sums to {total.normalize():f} over "
                f"{by}; "
                f"it must not exceed the pool's capacity {limit}",
            )
