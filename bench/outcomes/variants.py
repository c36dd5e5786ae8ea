"""Variants of the program's set-up for the A/B of issue 40: each changes one thing of its design.

Each is a plain transformation of the program's Setup (its Helm values and Kueue objects), run
beside the program as it is; none is the program's until the sweep says it wins. What each changes,
why it was tried and what the sweeps measured are in docs/outcomes.md#the-variants:
- `split`: a ClusterQueue per team for CPU jobs and one for GPU jobs, LocalQueues `default` and `gpu`;
- `preemptor`: Kueue's PrioritizePreemptorWorkloads gate;
- `strategies`: fair sharing's default pair of preemption strategies instead of the program's first;
- `afs`: Admission Fair Sharing in one ClusterQueue, no preemption;
- `limit`, `limit-2x`, `limit-1.5x`: a borrowing limit of 1, 2 or 1.5 times each team's quota
  (only where the quota is above zero, so `split`'s CPU queues still borrow GPU nodes);
- `classical-limit`: `limit` with fair sharing off (classical preemption);
- `split-preemptor-limit`: the three together;
- `again`: the program unchanged, run after the others like every variant: the A/A control for
  the order the set-ups run in.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import yaml

from components.k8s.quantity import parse_quantity

from .setups import KUEUE_AKS, Setup

GPU_FLAVOR, CPU_FLAVOR = "gpu", "cpu"
GPU_QUEUE = "gpu"
GPU_RESOURCE = "nvidia.com/gpu"
VARIANTS = (
    "split",
    "preemptor",
    "strategies",
    "afs",
    "limit",
    "classical-limit",
    "limit-2x",
    "split-preemptor-limit",
    "limit-1.5x",
    "again",
)


def _manager(values: Mapping[str, Any]) -> dict[str, Any]:
    return dict(yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]))


def _with_manager(values: Mapping[str, Any], manager: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(values))
    out["managerConfig"] = {
        **out["managerConfig"],
        "controllerManagerConfigYaml": yaml.safe_dump(dict(manager), sort_keys=False),
    }
    return out


def preemptor(program: Setup) -> Setup:
    values = copy.deepcopy(dict(program.helm_values or {}))
    gates = [g for g in values["controllerManager"]["featureGates"] if g["name"] != "PrioritizePreemptorWorkloads"]
    values["controllerManager"]["featureGates"] = [*gates, {"name": "PrioritizePreemptorWorkloads", "enabled": True}]
    return replace(program, name=f"{KUEUE_AKS}+preemptor", helm_values=values)


def strategies(program: Setup) -> Setup:
    manager = _manager(program.helm_values or {})
    manager["fairSharing"] = {
        **manager.get("fairSharing", {}),
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
    }
    return replace(
        program, name=f"{KUEUE_AKS}+strategies", helm_values=_with_manager(program.helm_values or {}, manager)
    )


def _flavor(queue: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next(
        (copy.deepcopy(f) for g in queue["spec"]["resourceGroups"] for f in g["flavors"] if f["name"] == name), None
    )


def _zeroed(flavor: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": flavor["name"],
        "resources": [{"name": r["name"], "nominalQuota": "0"} for r in flavor["resources"]],
    }


def split(program: Setup) -> Setup:
    """Two ClusterQueues per team in the cohort: `<team>` for CPU jobs (its CPU flavor's quota, nominal
    0 on the GPU flavor, so CPU jobs there only borrow) and `<team>-gpu` for GPU jobs (the GPU
    flavor's GPUs, CPU and memory), LocalQueues `default` and `gpu`: a GPU gang waiting for a
    reclaim no longer holds the head of the queue the team's CPU jobs wait in."""
    objects: list[dict[str, Any]] = []
    gpu_queues: dict[str, str] = {}
    for obj in program.objects:
        if obj["kind"] == "ClusterQueue":
            gpu, cpu = _flavor(obj, GPU_FLAVOR), _flavor(obj, CPU_FLAVOR)
            if gpu is None or cpu is None:
                raise ValueError(
                    f"ClusterQueue {obj['metadata']['name']}: no {CPU_FLAVOR!r} and {GPU_FLAVOR!r} flavors to split"
                )
            (group,) = obj["spec"]["resourceGroups"]
            cpu_queue = copy.deepcopy(obj)
            cpu_queue["spec"]["resourceGroups"] = [{**group, "flavors": [cpu, _zeroed(gpu)]}]
            gpu_queue = copy.deepcopy(obj)
            gpu_queue["metadata"]["name"] = f"{obj['metadata']['name']}-gpu"
            gpu_queue["spec"]["resourceGroups"] = [{**group, "flavors": [gpu]}]
            objects += [cpu_queue, gpu_queue]
        elif obj["kind"] == "LocalQueue":
            objects.append(copy.deepcopy(obj))
            gpu_local = copy.deepcopy(obj)
            gpu_local["metadata"]["name"] = GPU_QUEUE
            gpu_local["spec"]["clusterQueue"] = f"{obj['spec']['clusterQueue']}-gpu"
            objects.append(gpu_local)
            gpu_queues[obj["metadata"]["namespace"]] = GPU_QUEUE
        else:
            objects.append(copy.deepcopy(obj))
    return replace(program, name=f"{KUEUE_AKS}+split", objects=objects, gpu_queues=gpu_queues)


def _sum_quotas(queues: Sequence[Mapping[str, Any]], flavor: str) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for q in queues:
        for f in (x for g in q["spec"]["resourceGroups"] for x in g["flavors"] if x["name"] == flavor):
            for r in f["resources"]:
                total[r["name"]] = total.get(r["name"], Decimal(0)) + parse_quantity(r["nominalQuota"])
    return total


def afs(program: Setup, half_life_s: int = 30, sampling_s: int = 1) -> Setup:
    """One ClusterQueue holding every team's and the cohort's quota, `admissionScope:
    UsageBasedAdmissionFairSharing`, a LocalQueue per team weighted by its share, usage decaying in
    seconds as the compressed trace needs (docs/outcomes.md#the-variants)."""
    teams = {o["metadata"]["name"]: o for o in program.objects if o["kind"] == "ClusterQueue"}
    holders = [o for o in program.objects if o["kind"] in ("ClusterQueue", "Cohort")]
    first = next(iter(teams.values()))
    (group,) = first["spec"]["resourceGroups"]
    flavors = [
        {
            "name": f["name"],
            "resources": [
                {"name": r, "nominalQuota": str(amount)} for r, amount in _sum_quotas(holders, f["name"]).items()
            ],
        }
        for f in group["flavors"]
    ]
    shared = {
        "apiVersion": first["apiVersion"],
        "kind": "ClusterQueue",
        "metadata": {"name": "shared"},
        "spec": {
            "namespaceSelector": {
                "matchExpressions": [{"key": "kueue-aks.io/team", "operator": "In", "values": sorted(teams)}]
            },
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": first["spec"].get("flavorFungibility", {}),
            "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
            "resourceGroups": [{**group, "flavors": flavors}],
        },
    }
    weights = {name: q["spec"].get("fairSharing", {}).get("weight", "1") for name, q in teams.items()}
    objects: list[dict[str, Any]] = []
    for obj in program.objects:
        if obj["kind"] in ("ClusterQueue", "Cohort"):
            continue
        if obj["kind"] == "LocalQueue":
            local = copy.deepcopy(obj)
            weight = weights[local["spec"]["clusterQueue"]]
            local["spec"] = {"clusterQueue": "shared", "fairSharing": {"weight": weight}}
            objects.append(local)
            continue
        objects.append(copy.deepcopy(obj))
    # The queue after the flavors, before the namespaces and LocalQueues (apply order).
    at = next(i for i, o in enumerate(objects) if o["kind"] == "Namespace")
    objects.insert(at, shared)
    manager = _manager(program.helm_values or {})
    manager["admissionFairSharing"] = {
        "usageHalfLifeTime": f"{half_life_s}s",
        "usageSamplingInterval": f"{sampling_s}s",
    }
    return replace(
        program, name=f"{KUEUE_AKS}+afs", objects=objects, helm_values=_with_manager(program.helm_values or {}, manager)
    )


def _limited(queue: Mapping[str, Any], factor: Decimal) -> dict[str, Any]:
    out = copy.deepcopy(dict(queue))
    for group in out["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                nominal = parse_quantity(resource["nominalQuota"])
                if nominal > 0:  # the quota as typed, or its multiple in plain digits (whole GPUs)
                    scaled = nominal * factor
                    if resource["name"] == GPU_RESOURCE:
                        scaled = scaled.to_integral_value(rounding=ROUND_FLOOR)
                    resource["borrowingLimit"] = resource["nominalQuota"] if factor == 1 else format(scaled, "f")
    return out


def limit(program: Setup, factor: Decimal = Decimal(1), name: str = "limit") -> Setup:
    objects = [_limited(o, factor) if o["kind"] == "ClusterQueue" else copy.deepcopy(dict(o)) for o in program.objects]
    return replace(program, name=f"{program.name}+{name}", objects=objects)


def classical_limit(program: Setup) -> Setup:
    manager = _manager(program.helm_values or {})
    manager.pop("fairSharing", None)  # in v1beta2 the block's presence turns fair sharing on
    return replace(
        limit(program),
        name=f"{KUEUE_AKS}+classical-limit",
        helm_values=_with_manager(program.helm_values or {}, manager),
    )


def split_preemptor_limit(program: Setup) -> Setup:
    return replace(limit(preemptor(split(program))), name=f"{KUEUE_AKS}+split-preemptor-limit")


def variants(program: Setup, names: Sequence[str] = VARIANTS) -> list[Setup]:
    build = {
        "split": split,
        "preemptor": preemptor,
        "strategies": strategies,
        "afs": afs,
        "limit": limit,
        "classical-limit": classical_limit,
        "limit-2x": lambda p: limit(p, Decimal(2), "limit-2x"),
        "limit-1.5x": lambda p: limit(p, Decimal("1.5"), "limit-1.5x"),
        "split-preemptor-limit": split_preemptor_limit,
        "again": lambda p: replace(p, name=f"{KUEUE_AKS}+again"),
    }
    return [build[n](program) for n in names]
