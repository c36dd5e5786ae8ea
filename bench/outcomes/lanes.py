"""Lanes: independent copies of one set-up's queues on one control plane, one per (seed, load).

The Workload-level tier runs every seed and load of a set-up at once. Each run gets a lane: its
own namespaces, ClusterQueues and Cohorts, named `<lane>-<name>`, so no quota, cohort or queue
ordering is shared between runs; Kueue's scheduler schedules each cohort on its own. What holds no
quota (ResourceFlavors, Topologies, WorkloadPriorityClasses, AdmissionChecks and their configs)
is created once and shared. Pure: plain objects in, plain objects out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

# Kinds that hold no quota and name nothing of a lane: one copy serves every lane.
SHARED_KINDS = ("Topology", "ResourceFlavor", "WorkloadPriorityClass", "AdmissionCheck", "ProvisioningRequestConfig")
LANE_KINDS = ("Namespace", "Cohort", "ClusterQueue", "LocalQueue")


def lane_name(seed: int, load: float) -> str:
    """`s25-l090` for seed 25 at load 0.9: short, and a valid prefix of a DNS label."""
    return f"s{seed}-l{round(load * 100):03d}"


def shared_objects(objects: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(o)) for o in objects if o["kind"] in SHARED_KINDS]


def _renamed_selector(selector: Mapping[str, Any], rename: Mapping[str, str]) -> dict[str, Any]:
    """A namespace selector whose label values that name a namespace of the set-up name the lane's."""
    out = copy.deepcopy(dict(selector))
    out["matchLabels"] = {k: rename.get(v, v) for k, v in (selector.get("matchLabels") or {}).items()}
    if not out["matchLabels"]:
        del out["matchLabels"]
    for expression in out.get("matchExpressions") or []:
        expression["values"] = [rename.get(v, v) for v in expression.get("values") or []]
    return out


def lane_objects(objects: Sequence[Mapping[str, Any]], lane: str) -> list[dict[str, Any]]:
    """The set-up's lane-scoped objects for `lane`, every name and every reference between them
    prefixed; a kind the tier does not know how to copy is an error, not dropped."""
    unknown = sorted({o["kind"] for o in objects} - set(SHARED_KINDS) - set(LANE_KINDS))
    if unknown:
        raise ValueError(f"no lane copy for kinds {unknown}")
    namespaces = {o["metadata"]["name"]: f"{lane}-{o['metadata']['name']}" for o in objects if o["kind"] == "Namespace"}
    queues = {o["metadata"]["name"]: f"{lane}-{o['metadata']['name']}" for o in objects if o["kind"] == "ClusterQueue"}
    cohorts = {o["metadata"]["name"]: f"{lane}-{o['metadata']['name']}" for o in objects if o["kind"] == "Cohort"}
    # A cohort named only by its queues (no Cohort object) is the lane's too.
    cohorts.update(
        {
            o["spec"]["cohortName"]: f"{lane}-{o['spec']['cohortName']}"
            for o in objects
            if o["kind"] == "ClusterQueue" and o["spec"].get("cohortName")
        }
    )
    out = []
    for original in objects:
        if original["kind"] not in LANE_KINDS:
            continue
        obj = copy.deepcopy(dict(original))
        meta, spec = obj["metadata"], obj.get("spec") or {}
        if obj["kind"] == "Namespace":
            meta["name"] = namespaces[meta["name"]]
            meta["labels"] = {k: namespaces.get(v, v) for k, v in (meta.get("labels") or {}).items()}
        elif obj["kind"] == "Cohort":
            meta["name"] = cohorts[meta["name"]]
            if spec.get("parentName"):
                spec["parentName"] = cohorts[spec["parentName"]]
        elif obj["kind"] == "ClusterQueue":
            meta["name"] = queues[meta["name"]]
            if spec.get("cohortName"):
                spec["cohortName"] = cohorts[spec["cohortName"]]
            if "namespaceSelector" in spec:
                spec["namespaceSelector"] = _renamed_selector(spec["namespaceSelector"], namespaces)
        else:  # LocalQueue
            meta["namespace"] = namespaces[meta["namespace"]]
            spec["clusterQueue"] = queues[spec["clusterQueue"]]
        out.append(obj)
    return out


def lanes_objects(objects: Sequence[Mapping[str, Any]], lanes: Sequence[str]) -> list[dict[str, Any]]:
    """What one control plane holds for every lane: the shared objects once, then each lane's."""
    return shared_objects(objects) + [o for lane in lanes for o in lane_objects(objects, lane)]
