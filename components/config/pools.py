"""`kueue-aks:nodePools`: the user node pools, their VM sizes (or per-node hardware overrides),
taints, labels, topology and ProvisioningRequest settings; their defaults and parser.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from ..facts import capacity
from ..facts.capacity import NodeResources, VmSize
from ..k8s.names import TAINT_EFFECTS, is_label_value, is_qualified_name
from ..k8s.quantity import QuantityError, cpu_millicores, memory_mib, parse_quantity
from ..k8s.resources import RESOURCE_GPU
from .checks import INVALID, Checks, Problems, Reader, shown, type_name
from .keys import NODE_POOLS, POOL
from .names import (
    DEFAULT_GPU_TAINT,
    QUEUED_TAINT,
    RESERVED_LABEL_PREFIXES,
    SPOT_TAINT,
    SYSTEM_POOL_NAME,
    reserved_node_label,
)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def toleration(self) -> dict[str, str]:
        """The toleration that matches exactly this taint."""
        if self.value:
            return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


@dataclass(frozen=True)
class NodePool:
    name: str
    vm_size: str
    node: VmSize  # the node's hardware: the catalog entry with any `capacity` override applied
    min_count: int
    max_count: int
    spot: bool = False
    taints: tuple[Taint, ...] = ()  # as configured, or the GPU default
    labels: Mapping[str, str] = field(default_factory=dict)
    topology: bool = False
    governed: bool = False  # carries QUEUED_TAINT (kueue-aks:governance.enforce)
    # Kueue admits a workload on this pool's flavor only after the autoscaler provisioned nodes
    # for all of its pods (ProvisioningRequest, best-effort-atomic-scale-up: all or nothing).
    provisioning_request: bool = False
    # Set by the preflight's `clamp` policy: the nodes the subscription's vCPU quota lets Azure
    # create. Kueue's quotas count min(maxCount, this); the pool itself keeps maxCount.
    quota_nodes: int | None = None
    subnet_id: str | None = None  # its own subnet; None: the cluster's (cluster.network.subnetId)

    @property
    def capacity_nodes(self) -> int:
        """The nodes Kueue's quotas count: maxCount, or fewer when Azure's quota allows fewer."""
        return self.max_count if self.quota_nodes is None else min(self.max_count, self.quota_nodes)

    @property
    def autoscaled(self) -> bool:
        return self.min_count < self.max_count

    @property
    def is_gpu(self) -> bool:
        return self.node.is_gpu

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        """Every taint the pool's nodes carry: the configured ones, AKS's spot taint, and the
        governance taint that keeps pods Kueue did not admit off the pool."""
        extra = [parse_taint(SPOT_TAINT)] if self.spot else []
        extra += [parse_taint(QUEUED_TAINT)] if self.governed else []
        return self.taints + tuple(t for t in extra if t not in self.taints)

    @property
    def allocatable(self) -> NodeResources:
        return capacity.node_allocatable(self.node)

    @property
    def capacity(self) -> NodeResources:
        return capacity.pool_capacity(self.node, self.capacity_nodes)


def parse_taint(text: str) -> Taint:
    spec, _, effect = text.rpartition(":")
    key, _, value = spec.partition("=")
    return Taint(key, value, effect)


def taint_problem(text: str) -> str | None:
    if ":" not in text:
        return f"{text!r} is not a taint; write key=value:Effect with Effect one of {', '.join(TAINT_EFFECTS)}"
    t = parse_taint(text)
    if t.effect not in TAINT_EFFECTS:
        return f"{text!r} has effect {t.effect!r}; allowed: {', '.join(TAINT_EFFECTS)}"
    if not is_qualified_name(t.key):
        return f"{text!r} has key {t.key!r}, which is not a valid label key"
    if not is_label_value(t.value):
        return f"{text!r} has value {t.value!r}, which is not a valid label value (≤ 63 alphanumerics, '-', '_', '.')"
    return None


def vm_size_checker(problems: Problems, *, gpu_allowed: bool, has_override: bool = False) -> Callable[[str, Any], Any]:
    def check(path: str, v: Any) -> Any:
        if not v:
            problems.add(path, f"must be an Azure VM size such as Standard_D16s_v5; got {type_name(v)}")
            return INVALID
        vm = capacity.lookup_vm_size(v)
        if vm is None and not has_override:
            # Only user pools take a `capacity` override (gpu_allowed is false for the system pool).
            problems.add(path, _unknown_size(v, overridable=gpu_allowed))
            return INVALID
        if vm is not None and vm.is_gpu and not gpu_allowed:
            problems.add(path, f"{v} is a GPU size; the system pool runs only system pods, use a CPU size")
            return INVALID
        return v

    return check


def _unknown_size(name: str, *, overridable: bool) -> str:
    """What to write instead of a size the catalog lacks: a catalog size, or the override."""
    note = capacity.name_note(name)
    near = capacity.nearest_sizes(name)
    found = f"; {name} {note}" if note else f"; nearest catalog sizes: {', '.join(near)}" if near else ""
    message = f"{name!r} is not in the capacity catalog{found}; use a catalog size (docs/vm-sizes.md)"
    if not overridable:
        return message
    gpus = f", {RESOURCE_GPU}: <GPUs per node>" if capacity.is_gpu_family(name) else ""
    hardware = f'capacity: {{cpu: "<vCPUs>", memory: "<GiB>Gi"{gpus}}}'
    return message + f", or give the pool its per-node hardware as Azure lists it: {hardware}"


def _gpu_override_problem(
    vm_size: str, vm: VmSize | None, override: Mapping[str, Any], max_count: int
) -> tuple[str, str] | None:
    """(key under the pool, message) when a `capacity` override would drop the pool's GPUs without
    saying so: the pool would become a CPU flavor and no team could get GPU quota on it."""
    gpus = override["gpus"]
    if vm is not None and vm.is_gpu:
        have = (
            f"{vm_size} has {vm.gpus} × {vm.gpu_model} per node (catalog), {max_count * vm.gpus} GPUs "
            f"at maxCount {max_count}"
        )
        if gpus is None:
            return "capacity", (
                f"overrides a GPU size without {RESOURCE_GPU}: {have}; add {RESOURCE_GPU}: {vm.gpus} "
                "so the override states the GPUs the pool's quotas count"
            )
        if gpus == 0:
            return f"capacity.{RESOURCE_GPU}", (
                f"is 0, but {have}: they would count as none, the nodes as expensive CPU nodes, and no team "
                f"would get GPU quota on them; write {RESOURCE_GPU}: {vm.gpus}, or choose a CPU size"
            )
    elif vm is not None and gpus:
        return f"capacity.{RESOURCE_GPU}", (
            f"is {gpus}, but {vm_size} has no NVIDIA GPU (catalog): Kueue would admit GPU jobs to nodes that "
            f"cannot run them; remove {RESOURCE_GPU}, or choose a GPU size (docs/vm-sizes.md)"
        )
    elif vm is None and gpus is None and capacity.is_gpu_family(vm_size):
        # The catalog cannot tell; only the config can say that an N-family size has no whole GPU.
        return "capacity", (
            f"{vm_size} is an N-family (GPU) size the catalog does not know, and capacity does not say how many GPUs "
            f"a node has, so the pool would count none; add {RESOURCE_GPU}: <GPUs per node> (whole NVIDIA GPUs, "
            f"from the size's Microsoft Learn page), or {RESOURCE_GPU}: 0 only for a size with no whole NVIDIA GPU "
            "(a vGPU slice, an AMD GPU, an FPGA), whose nodes then count as CPU nodes"
        )
    return None


MAX_NODE_VCPUS = 4096


MAX_NODE_MEMORY_GIB = 65536


def _parse_override(problems: Problems, path: str, raw: Any) -> dict[str, Any] | None:
    """A per-node hardware override: {cpu, memory, nvidia.com/gpu}, as Azure lists the VM size."""
    r = Reader(problems, path, raw, POOL.key("capacity"))

    def quantity(
        parse: Callable[[Any], int], example: str, shown_limit: str, most: Decimal
    ) -> Callable[[str, Any], Any]:
        """`most`: the limit in the quantity's base units (cores, bytes), checked before `parse` makes
        an integer of it: "1e999999" overflows decimal's range, or takes a minute to convert."""

        def check(p: str, v: Any) -> Any:
            if isinstance(v, float) and math.isnan(v):  # json.loads reads NaN in a JSON-text value
                problems.add(p, f"{shown(v)} is not a number; allowed: a positive quantity such as {example}")
                return INVALID
            try:
                size = parse_quantity(v) if not isinstance(v, bool) else Decimal(-1)
            except QuantityError:
                size = Decimal(-1)
            if size > most:  # an infinity too
                problems.add(p, f"{shown(v)} is more than any Azure VM has per node; allowed: at most {shown_limit}")
                return INVALID
            amount = parse(v) if size > 0 else -1
            if amount <= 0:
                problems.add(p, f"{shown(v)} must be a positive quantity such as {example}")
                return INVALID
            return amount

        return check

    # Bounds well above Azure's largest sizes (896 vCPUs and 32 TiB on the M-series): past them a
    # value is a typo, and would give teams quotas no node can hold.
    cpus = quantity(cpu_millicores, '"24" (vCPUs)', f"{MAX_NODE_VCPUS} vCPUs", Decimal(MAX_NODE_VCPUS))
    memory = quantity(memory_mib, '"220Gi"', f"{MAX_NODE_MEMORY_GIB}Gi", Decimal(MAX_NODE_MEMORY_GIB * 2**30))
    cpu = r.get("cpu", None, cpus)
    mem = r.get("memory", None, memory)
    gpus = r.get(RESOURCE_GPU, None)
    if cpu is not None and cpu % 1000:
        problems.add(r.at("cpu"), "must be a whole number of vCPUs, as Azure sizes have")
        cpu = None
    return {"cpu": cpu, "memory": mem, "gpus": gpus} if r.value else None


def _apply_override(vm: VmSize | None, vm_size: str, override: Mapping[str, Any] | None) -> VmSize | None:
    if not override:
        return vm
    base = vm or VmSize(name=vm_size, vcpus=0, memory_gib=0.0)
    changes: dict[str, Any] = {}
    if override["cpu"] is not None:
        changes["vcpus"] = override["cpu"] // 1000
    if override["memory"] is not None:
        changes["memory_gib"] = override["memory"] / 1024
    if override["gpus"] is not None:
        changes["gpus"] = override["gpus"]
        if override["gpus"] and not base.gpu_model:
            changes["gpu_model"] = "NVIDIA GPU (from capacity override)"
    node = replace(base, **changes)
    return node if node.vcpus > 0 and node.memory_gib > 0 else None


def _parse_pool(problems: Problems, path: str, raw: Any) -> NodePool | None:
    r = Reader(problems, path, raw, POOL)
    if not r.value:
        if raw is None or isinstance(raw, Mapping):
            problems.add(path, "must be an object with at least name, vmSize and maxCount")
        return None

    def pool_name(p: str, v: str) -> Any:
        if v == SYSTEM_POOL_NAME:
            problems.add(p, f"{SYSTEM_POOL_NAME!r} is the system pool's name; choose another")
            return INVALID
        return v

    name = r.get("name", None, pool_name)
    override = r.get("capacity", None, lambda p, v: _parse_override(problems, p, v))
    vm_size = r.get("vmSize", None, vm_size_checker(problems, gpu_allowed=True, has_override=bool(override)))
    min_count = r.get("minCount", 0)
    max_count = r.get("maxCount", None)
    if max_count is not None and max_count < min_count:
        problems.add(r.at("maxCount"), f"{max_count} is below minCount {min_count}; must be >= max(1, minCount)")
        max_count = None
    spot = r.get("spot", False)
    topology = r.get("topology", False)
    provisioning = r.get("provisioningRequest", None)
    min_count_valid = "minCount" not in r.value or min_count == r.value["minCount"]
    fixed_size = max_count is not None and min_count_valid and min_count == max_count
    if provisioning and fixed_size:
        problems.add(
            r.at("provisioningRequest"),
            f"is true, but the pool is fixed-size (minCount == maxCount == "
            f"{max_count}): there are no nodes to provision; remove it or let the pool autoscale "
            "(minCount < maxCount)",
        )

    def taints(p: str, items: list[str]) -> Any:
        parsed: list[tuple[int, Taint]] = []
        for i, text in enumerate(items):
            problem = taint_problem(text)
            if problem:
                problems.add(f"{p}[{i}]", problem)
            else:
                parsed.append((i, parse_taint(text)))
        out = [t for _, t in parsed]
        if len({(t.key, t.effect) for t in out}) != len(out):
            problems.add(p, "lists the same key and effect twice")
        queued, spot_taint = parse_taint(QUEUED_TAINT), parse_taint(SPOT_TAINT)
        for i, t in parsed:
            if t.key == queued.key and str(t) != QUEUED_TAINT:
                problems.add(
                    f"{p}[{i}]",
                    f"{str(t)!r} uses the key of the stack's governance taint ({QUEUED_TAINT}, which "
                    "governance.enforce puts on every user pool); a node cannot carry two taints of one key and "
                    "effect: remove it (governance.enforce: false removes the stack's)",
                )
            elif t.key == spot_taint.key and str(t) != SPOT_TAINT:
                problems.add(
                    f"{p}[{i}]",
                    f"{str(t)!r} uses the key of AKS's spot taint ({SPOT_TAINT}, which AKS puts on Spot "
                    "nodes itself; spot: true declares it); remove it",
                )
        return tuple(out)

    def labels(p: str, v: Mapping[str, str]) -> Any:
        for k, val in v.items():
            reserved = reserved_node_label(k)
            if not is_qualified_name(k):
                problems.add(f"{p}.{shown(k, 60)}", "is not a valid label key")
            elif k.startswith(RESERVED_LABEL_PREFIXES):
                problems.add(f"{p}.{k}", f"AKS reserves the {RESERVED_LABEL_PREFIXES[0]} prefix; use your own prefix")
            elif reserved:
                problems.add(f"{p}.{k}", reserved)
            if not is_label_value(val):
                problems.add(
                    f"{p}.{shown(k, 60)}",
                    f"value {shown(val)} must be a string label value (≤ 63 alphanumerics, '-', '_', '.'); quote "
                    "numbers and booleans",
                )
        return dict(v)

    configured_taints = r.get("taints", None, taints)
    pool_labels = r.get("labels", {}, labels)
    if name is None or vm_size is None or max_count is None:
        return None
    catalog_vm = capacity.lookup_vm_size(vm_size)
    gpu_problem = _gpu_override_problem(vm_size, catalog_vm, override, max_count) if override else None
    if gpu_problem:
        problems.add(r.at(gpu_problem[0]), gpu_problem[1])
        return None
    node = _apply_override(catalog_vm, vm_size, override)
    if node is None:
        problems.add(r.at("capacity"), f"{vm_size} is not in the catalog, so capacity needs both cpu and memory")
        return None
    if configured_taints is None:
        configured_taints = (parse_taint(DEFAULT_GPU_TAINT),) if node.is_gpu else ()
    if provisioning is None:
        # A partial start is what hurts on GPU pools (pods holding GPUs while the rest wait);
        # CPU pools start pod by pod, as jobs there usually can.
        provisioning = node.is_gpu and min_count < max_count
    if topology and max_count is not None and min_count_valid and not fixed_size and not provisioning:
        problems.add(
            r.at("minCount"),
            f"{min_count} is below maxCount ({max_count}) on a topology-aware pool without provisioningRequest: "
            "topology-aware scheduling places pods only on nodes that exist, so an autoscaled topology pool needs "
            "provisioningRequest: true (the autoscaler adds all of a job's nodes before Kueue assigns the "
            "topology); add it, or make the pool fixed-size (minCount == maxCount >= 1)",
        )
        return None
    return NodePool(
        name=name,
        vm_size=vm_size,
        node=node,
        min_count=min_count,
        max_count=max_count,
        spot=spot,
        taints=configured_taints,
        labels=pool_labels,
        topology=topology,
        provisioning_request=provisioning,
        subnet_id=r.get("subnetId", None),
    )


def parse_pools(problems: Problems, raw: Any) -> tuple[NodePool, ...]:
    path = NODE_POOLS.name
    if raw is None:
        problems.add(path, f"is required{NODE_POOLS.required}")
        return ()
    if Checks(problems).value(path, raw, NODE_POOLS) is INVALID:
        return ()
    pools = [_parse_pool(problems, f"{path}[{i}]", p) for i, p in enumerate(raw)]
    seen: set[str] = set()
    for i, p in enumerate(pools):
        if p is not None and p.name in seen:
            problems.add(f"{path}[{i}].name", f"{p.name!r} is used by another pool; pool names must be unique")
        if p is not None:
            seen.add(p.name)
    return tuple(p for p in pools if p is not None)
