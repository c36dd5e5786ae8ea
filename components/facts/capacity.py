"""Azure VM size catalog and the AKS allocatable model that Kueue quotas are derived from.

Pure Python: no Pulumi, no cloud calls. Quota must never exceed what the nodes can really run,
so every rounding in this module goes against the workload (reserve up, allocatable down).
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY

# The program sets maxPods=110 on every user pool, so kube-reserved memory below is computed
# from the same number AKS uses when it provisions the node.
MAX_PODS: int = 110
# AKS 1.29+: kubelet hard eviction at memory.available < 100Mi.
# https://learn.microsoft.com/azure/aks/node-resource-reservations
EVICTION_THRESHOLD_MIB: int = 100


@dataclass(frozen=True)
class VmSize:
    """One Azure VM size as Azure lists it (before any Kubernetes reservation)."""

    name: str  # exact Azure name, e.g. "Standard_D16s_v5"
    vcpus: int
    memory_gib: float  # memory as Azure lists it, GiB
    gpus: int = 0  # whole GPUs the NVIDIA device plugin can advertise as nvidia.com/gpu
    gpu_model: str | None = None

    @property
    def memory_mib(self) -> int:
        # Floor: a fractional MiB is never schedulable.
        return math.floor(self.memory_gib * 1024)

    @property
    def is_gpu(self) -> bool:
        return self.gpus > 0


def _ratio_series(pattern: str, vcpu_counts: Iterable[int], gib_per_vcpu: int) -> list[VmSize]:
    """Sizes of a series whose memory is a fixed multiple of its vCPU count."""
    return [VmSize(pattern.format(n), n, float(n * gib_per_vcpu)) for n in vcpu_counts]


def _gpu_series(gpu_model: str, rows: Iterable[tuple[str, int, float, int]]) -> list[VmSize]:
    """Sizes of a GPU series: (name, vCPUs, memory GiB, whole GPUs), one GPU model."""
    return [VmSize(name, vcpus, float(mem), gpus, gpu_model) for name, vcpus, mem, gpus in rows]


_SIZES: list[VmSize] = [
    # Dsv5: 4 GiB per vCPU.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dsv5-series
    *_ratio_series("Standard_D{}s_v5", (2, 4, 8, 16, 32, 48, 64, 96), 4),
    # Ddsv5: same shapes as Dsv5 plus a local temp disk.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/ddsv5-series
    *_ratio_series("Standard_D{}ds_v5", (2, 4, 8, 16, 32, 48, 64, 96), 4),
    # Dasv5 (AMD): 4 GiB per vCPU.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dasv5-series
    *_ratio_series("Standard_D{}as_v5", (2, 4, 8, 16, 32, 48, 64, 96), 4),
    # Esv5: 8 GiB per vCPU up to E64s; E96s and the isolated E104is top out at 672 GiB.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/esv5-series
    *_ratio_series("Standard_E{}s_v5", (2, 4, 8, 16, 20, 32, 48, 64), 8),
    VmSize("Standard_E96s_v5", 96, 672.0),
    VmSize("Standard_E104is_v5", 104, 672.0),
    # Dsv6: 4 GiB per vCPU (Intel, no local disk).
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dsv6-series
    *_ratio_series("Standard_D{}s_v6", (2, 4, 8, 16, 32, 48, 64, 96, 128, 192), 4),
    # Ddsv6: Dsv6 shapes plus local NVMe disks; the page lists no D192ds.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/ddsv6-series
    *_ratio_series("Standard_D{}ds_v6", (2, 4, 8, 16, 32, 48, 64, 96, 128), 4),
    # Dasv6 (AMD): 4 GiB per vCPU.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dasv6-series
    *_ratio_series("Standard_D{}as_v6", (2, 4, 8, 16, 32, 48, 64, 96), 4),
    # Dadsv6 (AMD): Dasv6 shapes plus local NVMe disks.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dadsv6-series
    *_ratio_series("Standard_D{}ads_v6", (2, 4, 8, 16, 32, 48, 64, 96), 4),
    # Esv6: 8 GiB per vCPU up to E128s; the isolated E192is has 1832 GiB.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/esv6-series
    *_ratio_series("Standard_E{}s_v6", (2, 4, 8, 16, 20, 32, 48, 64, 96, 128), 8),
    VmSize("Standard_E192is_v6", 192, 1832.0),
    # Edsv6: Esv6 shapes plus local NVMe disks. The page says E128ds and E192ids come "later in
    # GA", so they are left out until it lists them as available.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/edsv6-series
    *_ratio_series("Standard_E{}ds_v6", (2, 4, 8, 16, 20, 32, 48, 64, 96), 8),
    # Easv6 (AMD): 8 GiB per vCPU up to E64as; E96as has 672 GiB.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/easv6-series
    *_ratio_series("Standard_E{}as_v6", (2, 4, 8, 16, 20, 32, 48, 64), 8),
    VmSize("Standard_E96as_v6", 96, 672.0),
    # Fsv2: 2 GiB per vCPU.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/compute-optimized/fsv2-series
    *_ratio_series("Standard_F{}s_v2", (2, 4, 8, 16, 32, 48, 64, 72), 2),
    # NCasT4_v3: NVIDIA T4 16 GB.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncast4v3-series
    *_gpu_series(
        "NVIDIA T4",
        [
            ("Standard_NC4as_T4_v3", 4, 28, 1),
            ("Standard_NC8as_T4_v3", 8, 56, 1),
            ("Standard_NC16as_T4_v3", 16, 110, 1),
            ("Standard_NC64as_T4_v3", 64, 440, 4),
        ],
    ),
    # NC A100 v4: NVIDIA A100 PCIe, 80 GB each.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series
    *_gpu_series(
        "NVIDIA A100 80GB PCIe",
        [
            ("Standard_NC24ads_A100_v4", 24, 220, 1),
            ("Standard_NC48ads_A100_v4", 48, 440, 2),
            ("Standard_NC96ads_A100_v4", 96, 880, 4),
        ],
    ),
    # NCads H100 v5: NVIDIA H100 NVL, 94 GB each.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncadsh100v5-series
    *_gpu_series(
        "NVIDIA H100 NVL",
        [
            ("Standard_NC40ads_H100_v5", 40, 320, 1),
            ("Standard_NC80adis_H100_v5", 80, 640, 2),
        ],
    ),
    # ND A100 v4: 8 × A100 40 GB SXM (NVLink 3.0). The newer size page labels it
    # "ND96asr_A100_v4"; the name ARM accepts is Standard_ND96asr_v4.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndasra100v4-series
    *_gpu_series("NVIDIA A100 40GB SXM", [("Standard_ND96asr_v4", 96, 900, 8)]),
    # NDm A100 v4: 8 × A100 80 GB SXM.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndma100v4-series
    *_gpu_series("NVIDIA A100 80GB SXM", [("Standard_ND96amsr_A100_v4", 96, 1900, 8)]),
    # ND H100 v5: 8 × H100 80 GB SXM (NVLink 4.0).
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series
    *_gpu_series("NVIDIA H100 80GB SXM", [("Standard_ND96isr_H100_v5", 96, 1900, 8)]),
    # ND H200 v5: 8 × H200 141 GB (1128 GB GPU memory per VM).
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h200-v5-series
    *_gpu_series("NVIDIA H200 141GB SXM", [("Standard_ND96isr_H200_v5", 96, 1850, 8)]),
    # NVadsA10 v5: NVIDIA A10 24 GB.
    # https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nvadsa10v5-series
    *_gpu_series(
        "NVIDIA A10",
        [
            ("Standard_NV36ads_A10_v5", 36, 440, 1),
            ("Standard_NV36adms_A10_v5", 36, 880, 1),
            ("Standard_NV72ads_A10_v5", 72, 880, 2),
        ],
    ),
    # The three smaller NVadsA10 v5 sizes get 1/6, 1/3 and 1/2 of one A10 as a GRID vGPU slice.
    # A slice is not a whole nvidia.com/gpu that the standard device plugin can hand to a pod,
    # so the catalog counts no GPU for them: they are sized (and quota'd) as CPU VMs.
    VmSize("Standard_NV6ads_A10_v5", 6, 55.0),
    VmSize("Standard_NV12ads_A10_v5", 12, 110.0),
    VmSize("Standard_NV18ads_A10_v5", 18, 220.0),
]

CATALOG: Mapping[str, VmSize] = MappingProxyType({vm.name: vm for vm in _SIZES})
_BY_LOWER_NAME: Mapping[str, VmSize] = MappingProxyType({vm.name.lower(): vm for vm in _SIZES})


# Names people write that are not the size they mean; the config error and docs/vm-sizes.md say
# which size is which instead of suggesting the nearest name, which here is the wrong GPU.
NAME_NOTES: Mapping[str, str] = MappingProxyType(
    {
        "Standard_ND96asr_A100_v4": (
            "reads like the 80 GB A100 size but is the NDasrA100_v4 series' label, not a size name: "
            "8 × A100 40 GB is Standard_ND96asr_v4; 8 × A100 80 GB is Standard_ND96amsr_A100_v4 (NDm_A100_v4)"
        ),
    }
)


def lookup_vm_size(name: str) -> VmSize | None:
    """The catalog entry for an Azure VM size name, ignoring case (Azure does too)."""
    return _BY_LOWER_NAME.get(name.lower())


def nearest_sizes(name: str, n: int = 3) -> list[str]:
    """Up to `n` catalog names closest to `name`, closest first, ignoring case."""
    close = difflib.get_close_matches(name.lower(), list(_BY_LOWER_NAME), n=n, cutoff=0.6)
    return [_BY_LOWER_NAME[lower].name for lower in close]


def name_note(name: str) -> str | None:
    """What NAME_NOTES says about a name, ignoring case."""
    return next((note for known, note in NAME_NOTES.items() if known.lower() == name.lower()), None)


def is_gpu_family(name: str) -> bool:
    """Whether the name is of Azure's N family (NC, ND, NV, NG, ...): the sizes that carry GPUs
    (or, for a few, GPU slices, AMD GPUs or FPGAs). Used when the catalog does not know the size."""
    return name.lower().startswith("standard_n")


# AKS kube-reserved CPU, https://learn.microsoft.com/azure/aks/node-resource-reservations,
# documents only 1, 2, 4, 8, 16, 32 and 64 cores: 60, 100, 140, 180, 260, 420, 740 millicores.
# Those seven points are exactly a marginal-rate schedule: 60m for the first core, 40m for the
# second, 20m each for cores 3-4 and 10m for every core after that. Microsoft's Karpenter provider
# for AKS computes kube-reserved CPU with this schedule (reservedCPUTaxVCPU in
# github.com/Azure/karpenter-provider-azure pkg/providers/instancetype/instancetype.go), so it is
# used for every core count: it reproduces the table, interpolates linearly between its points
# (24 cores: 340m) and keeps the 10m-per-core slope above 64 (96 cores: 1060m). Being
# non-decreasing, it never reserves less than the table value of the largest table point at or
# below the core count.
_CPU_RESERVE_BRACKETS: tuple[tuple[float, int], ...] = (
    (1, 60),  # (upper bound in cores, millicores reserved per core in this bracket)
    (2, 40),
    (4, 20),
    (math.inf, 10),
)

# AKS 1.29+ kube-reserved memory: the lesser of 20 MB × maxPods + 50 MB and 25% of the node's
# memory (same page). The page writes MB; reading it as MiB, the larger unit, can only
# over-reserve.
_MEMORY_RESERVE_PER_POD_MIB = 20
_MEMORY_RESERVE_BASE_MIB = 50
_MEMORY_RESERVE_MAX_FRACTION_DENOMINATOR = 4  # 25%


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    """CPU AKS reserves for Kubernetes system daemons on a node with this many vCPUs."""
    if vcpus < 1:
        raise ValueError(f"vcpus must be at least 1, got {vcpus}")
    reserved = 0
    lower = 0
    for upper, rate in _CPU_RESERVE_BRACKETS:
        if vcpus <= lower:
            break
        reserved += int(min(vcpus, upper) - lower) * rate
        lower = int(min(vcpus, upper))
    return reserved


def kube_reserved_memory_mib(memory_mib: int, max_pods: int = MAX_PODS) -> int:
    """Memory AKS (1.29+) reserves for Kubernetes system daemons, eviction threshold excluded."""
    if memory_mib < 1:
        raise ValueError(f"memory_mib must be at least 1, got {memory_mib}")
    if max_pods < 1:
        raise ValueError(f"max_pods must be at least 1, got {max_pods}")
    per_pods = _MEMORY_RESERVE_PER_POD_MIB * max_pods + _MEMORY_RESERVE_BASE_MIB
    # Ceiling division: round the 25% cap up so the reserve is never under AKS's.
    quarter = -(-memory_mib // _MEMORY_RESERVE_MAX_FRACTION_DENOMINATOR)
    return min(per_pods, quarter)


@dataclass(frozen=True)
class NodeResources:
    """Schedulable resources in Kueue's display units: millicores, MiB and whole GPUs."""

    cpu_millicores: int
    memory_mib: int
    gpus: int

    def times(self, count: int) -> NodeResources:
        """These resources on `count` identical nodes."""
        if count < 0:
            raise ValueError(f"node count must not be negative, got {count}")
        return NodeResources(self.cpu_millicores * count, self.memory_mib * count, self.gpus * count)

    def as_dict(self) -> dict[str, int]:
        """All three resources keyed by Kubernetes resource name (zeros included)."""
        return {
            RESOURCE_CPU: self.cpu_millicores,
            RESOURCE_MEMORY: self.memory_mib,
            RESOURCE_GPU: self.gpus,
        }


def node_allocatable(vm: VmSize, max_pods: int = MAX_PODS) -> NodeResources:
    """What the kubelet on one AKS node of this size reports as allocatable.

    vCPUs and memory minus kube-reserved and the eviction threshold; GPUs are not reserved.
    Floored at zero, as the kubelet does.
    """
    cpu = vm.vcpus * 1000 - kube_reserved_cpu_millicores(vm.vcpus)
    memory_reserve = kube_reserved_memory_mib(vm.memory_mib, max_pods)
    memory = vm.memory_mib - memory_reserve - EVICTION_THRESHOLD_MIB
    return NodeResources(cpu_millicores=max(cpu, 0), memory_mib=max(memory, 0), gpus=vm.gpus)


def pool_capacity(vm: VmSize, max_count: int, max_pods: int = MAX_PODS) -> NodeResources:
    """A pool's capacity when scaled out to `max_count` nodes: allocatable × max_count."""
    return node_allocatable(vm, max_pods).times(max_count)


# --- docs/vm-sizes.md -----------------------------------------------------------------------

_PAGE_HEADER = """# Supported VM sizes

<!-- Generated by `python -m components.facts.capacity --markdown > docs/vm-sizes.md` from
components/facts/capacity.py (each series' Microsoft Learn size page is cited there);
tests/facts/test_capacity.py fails when this page and the catalog differ. -->

The sizes the capacity catalog knows, and what one AKS node of each size leaves to pods as the
program computes it: vCPUs and memory as Azure lists them, minus kube-reserved CPU and memory and
the kubelet's {eviction} MiB eviction threshold
([AKS node resource reservations](https://learn.microsoft.com/azure/aks/node-resource-reservations),
{max_pods} pods per node). A pool's capacity, and so every team's quota, is this allocatable × maxCount.
GPUs are whole `nvidia.com/gpu`, which AKS does not reserve.

Any other size needs a `capacity` override in its pool; see `nodePools[].capacity` in
[Configuration](configuration.md). An N-family size (NC, ND, NV, ...) given that way must say how
many GPUs a node has: `nvidia.com/gpu: <count>`.
"""


def _size_row(vm: VmSize) -> list[str]:
    node = node_allocatable(vm)
    kept = kube_reserved_memory_mib(vm.memory_mib) + EVICTION_THRESHOLD_MIB
    return [
        f"`{vm.name}`",
        f"{vm.vcpus}",
        f"{vm.memory_gib:,g}",
        f"{kube_reserved_cpu_millicores(vm.vcpus)}m",
        f"{kept:,} MiB",
        f"{node.cpu_millicores / 1000:,.2f}",
        f"{node.memory_mib / 1024:,.2f}",
    ]


def _table(first: list[str], rows: list[list[str]]) -> list[str]:
    header = [
        *first,
        "vCPUs",
        "memory (GiB)",
        "kube-reserved CPU",
        "kube-reserved memory + eviction",
        "allocatable CPU (vCPU)",
        "allocatable memory (GiB)",
    ]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(first) + "---:|" * 6,
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def sizes_markdown() -> str:
    """docs/vm-sizes.md: every catalog size with its GPUs, vCPUs, memory, reservations and allocatable."""
    gpu = [vm for vm in _SIZES if vm.is_gpu]
    cpu = [vm for vm in _SIZES if not vm.is_gpu]
    sliced = [vm.name for vm in cpu if is_gpu_family(vm.name)]
    lines = [_PAGE_HEADER.format(eviction=EVICTION_THRESHOLD_MIB, max_pods=MAX_PODS), "## GPU sizes", ""]
    lines += _table(
        ["size", "GPUs per node"],
        [[row[0], f"{vm.gpus} × {vm.gpu_model}", *row[1:]] for vm in gpu for row in [_size_row(vm)]],
    )
    lines += ["", "## CPU sizes", ""]
    lines += _table(["size"], [_size_row(vm) for vm in cpu])
    if sliced:
        lines += [
            "",
            "N-family sizes among them (" + ", ".join(f"`{n}`" for n in sliced) + ") carry a slice of "
            "a GPU, not a whole `nvidia.com/gpu` the NVIDIA device plugin can give a pod, so they count "
            "as CPU nodes.",
        ]
    lines += ["", "## Names that mislead", ""]
    lines += [f"- `{name}` {note}." for name, note in NAME_NOTES.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m components.facts.capacity", description="The VM size catalog and the AKS allocatable model."
    )
    parser.add_argument("--markdown", action="store_true", help="print docs/vm-sizes.md")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    sys.stdout.write(sizes_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
