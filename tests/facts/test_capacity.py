"""Tests for the VM size catalog and the AKS allocatable model (components/facts/capacity.py).

Expected values are worked out by hand from the AKS "node resource reservations" page
(https://learn.microsoft.com/azure/aks/node-resource-reservations) and the Azure size pages,
and written as literals so a change in the formula shows up as a failing number.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.facts.capacity import (
    _SIZES,
    CATALOG,
    EVICTION_THRESHOLD_MIB,
    MAX_PODS,
    NAME_NOTES,
    NodeResources,
    VmSize,
    is_gpu_family,
    kube_reserved_cpu_millicores,
    kube_reserved_memory_mib,
    lookup_vm_size,
    main,
    name_note,
    nearest_sizes,
    node_allocatable,
    pool_capacity,
    sizes_markdown,
)
from components.k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY
from testbed.paths import ROOT

VM_SIZES_PAGE = ROOT / "docs" / "vm-sizes.md"

# The CPU table exactly as the AKS page prints it: cores -> kube-reserved millicores.
AKS_CPU_TABLE = {1: 60, 2: 100, 4: 140, 8: 180, 16: 260, 32: 420, 64: 740}


def test_constants_match_aks_and_contract() -> None:
    assert MAX_PODS == 110
    assert EVICTION_THRESHOLD_MIB == 100
    assert (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_GPU) == ("cpu", "memory", "nvidia.com/gpu")


# --- kube-reserved -----------------------------------------------------------------------


@pytest.mark.parametrize(("cores", "millicores"), sorted(AKS_CPU_TABLE.items()))
def test_cpu_reserve_reproduces_the_aks_table(cores: int, millicores: int) -> None:
    assert kube_reserved_cpu_millicores(cores) == millicores


@pytest.mark.parametrize(
    ("cores", "millicores"),
    [
        (3, 120),  # 60 + 40 + 20
        (24, 340),  # 60 + 40 + 2×20 + 20×10
        (48, 580),  # 60 + 40 + 2×20 + 44×10
        (72, 820),  # 60 + 40 + 2×20 + 68×10
        (96, 1060),  # 60 + 40 + 2×20 + 92×10
        (128, 1380),  # 60 + 40 + 2×20 + 124×10
    ],
)
def test_cpu_reserve_between_and_above_the_table(cores: int, millicores: int) -> None:
    assert kube_reserved_cpu_millicores(cores) == millicores


def test_memory_reserve_matches_the_aks_page_examples() -> None:
    # 8 GB node, 30 pods: 20 × 30 + 50 = 650 (under 25% of 8192 = 2048).
    assert kube_reserved_memory_mib(8192, max_pods=30) == 650
    # 4 GB node, 70 pods: 25% × 4096 = 1024 (under 20 × 70 + 50 = 1450).
    assert kube_reserved_memory_mib(4096, max_pods=70) == 1024


def test_memory_reserve_default_max_pods() -> None:
    # 64 GiB, 110 pods: min(20 × 110 + 50, 65536 / 4) = min(2250, 16384) = 2250.
    assert kube_reserved_memory_mib(65536) == 2250


def test_memory_reserve_rounds_the_quarter_up() -> None:
    # 25% of 4097 MiB = 1024.25, rounded up so the reserve is never under AKS's.
    assert kube_reserved_memory_mib(4097) == 1025


@pytest.mark.parametrize("bad", [0, -1])
def test_reserve_functions_reject_impossible_inputs(bad: int) -> None:
    with pytest.raises(ValueError):
        kube_reserved_cpu_millicores(bad)
    with pytest.raises(ValueError):
        kube_reserved_memory_mib(bad)
    with pytest.raises(ValueError):
        kube_reserved_memory_mib(8192, max_pods=bad)


# --- allocatable and pool capacity, by hand ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # 16 vCPU / 64 GiB: cpu 16000 - 260 = 15740m;
        # memory 65536 - min(2250, 16384) - 100 = 63186 MiB.
        ("Standard_D16s_v5", NodeResources(15740, 63186, 0)),
        # 4 vCPU / 28 GiB / 1 T4: cpu 4000 - 140 = 3860m;
        # memory 28672 - min(2250, 7168) - 100 = 26322 MiB; GPU untouched.
        ("Standard_NC4as_T4_v3", NodeResources(3860, 26322, 1)),
        # 24 vCPU / 220 GiB / 1 A100: cpu 24000 - 340 = 23660m;
        # memory 225280 - min(2250, 56320) - 100 = 222930 MiB.
        ("Standard_NC24ads_A100_v4", NodeResources(23660, 222930, 1)),
        # 2 vCPU / 8 GiB, the 25% cap applies: cpu 2000 - 100 = 1900m;
        # memory 8192 - min(2250, 2048) - 100 = 6044 MiB.
        ("Standard_D2s_v5", NodeResources(1900, 6044, 0)),
        # 2 vCPU / 4 GiB, 25% cap: memory 4096 - min(2250, 1024) - 100 = 2972 MiB.
        ("Standard_F2s_v2", NodeResources(1900, 2972, 0)),
        # 96 vCPU / 1900 GiB / 8 H100: cpu 96000 - 1060 = 94940m;
        # memory 1945600 - 2250 - 100 = 1943250 MiB.
        ("Standard_ND96isr_H100_v5", NodeResources(94940, 1943250, 8)),
    ],
)
def test_node_allocatable_by_hand(name: str, expected: NodeResources) -> None:
    assert node_allocatable(CATALOG[name]) == expected


def test_allocatable_with_other_max_pods() -> None:
    # 16 vCPU / 64 GiB with 30 pods: memory 65536 - (20 × 30 + 50) - 100 = 64786 MiB.
    assert node_allocatable(CATALOG["Standard_D16s_v5"], max_pods=30).memory_mib == 64786


def test_pool_capacity_is_allocatable_times_max_count() -> None:
    # 10 × D16s_v5: 10 × 15740 = 157400m, 10 × 63186 = 631860 MiB.
    assert pool_capacity(CATALOG["Standard_D16s_v5"], 10) == NodeResources(157400, 631860, 0)
    # 4 × NC24ads_A100_v4: 4 × 23660 = 94640m, 4 × 222930 = 891720 MiB, 4 GPUs.
    assert pool_capacity(CATALOG["Standard_NC24ads_A100_v4"], 4) == NodeResources(94640, 891720, 4)


def test_node_resources_times_and_as_dict() -> None:
    node = NodeResources(cpu_millicores=3860, memory_mib=26322, gpus=1)
    assert node.times(3) == NodeResources(11580, 78966, 3)
    assert node.times(0) == NodeResources(0, 0, 0)
    assert node.as_dict() == {"cpu": 3860, "memory": 26322, "nvidia.com/gpu": 1}
    with pytest.raises(ValueError):
        node.times(-1)


# --- catalog ------------------------------------------------------------------------------

REQUIRED_SIZES = [
    *(f"Standard_D{n}s_v5" for n in (2, 4, 8, 16, 32, 48, 64, 96)),
    *(f"Standard_D{n}ds_v5" for n in (2, 4, 8, 16, 32, 48, 64, 96)),
    "Standard_D4as_v5",
    "Standard_D16as_v5",
    *(f"Standard_E{n}s_v5" for n in (2, 4, 8, 16, 20, 32, 48, 64, 96)),
    *(f"Standard_F{n}s_v2" for n in (2, 4, 8, 16, 32, 48, 64, 72)),
    "Standard_NC4as_T4_v3",
    "Standard_NC8as_T4_v3",
    "Standard_NC16as_T4_v3",
    "Standard_NC64as_T4_v3",
    "Standard_NC24ads_A100_v4",
    "Standard_NC48ads_A100_v4",
    "Standard_NC96ads_A100_v4",
    "Standard_NC40ads_H100_v5",
    "Standard_NC80adis_H100_v5",
    "Standard_ND96asr_v4",
    "Standard_ND96amsr_A100_v4",
    "Standard_ND96isr_H100_v5",
    "Standard_ND96isr_H200_v5",
    "Standard_NV6ads_A10_v5",
    "Standard_NV12ads_A10_v5",
    "Standard_NV18ads_A10_v5",
    "Standard_NV36ads_A10_v5",
    "Standard_NV36adms_A10_v5",
    "Standard_NV72ads_A10_v5",
    # The v6 generation (issue 37).
    *(f"Standard_D{n}s_v6" for n in (2, 4, 8, 16, 32, 48, 64, 96, 128, 192)),
    *(f"Standard_D{n}ds_v6" for n in (2, 4, 8, 16, 32, 48, 64, 96, 128)),
    *(f"Standard_D{n}as_v6" for n in (2, 4, 8, 16, 32, 48, 64, 96)),
    *(f"Standard_D{n}ads_v6" for n in (2, 4, 8, 16, 32, 48, 64, 96)),
    *(f"Standard_E{n}s_v6" for n in (2, 4, 8, 16, 20, 32, 48, 64, 96, 128)),
    "Standard_E192is_v6",
    *(f"Standard_E{n}ds_v6" for n in (2, 4, 8, 16, 20, 32, 48, 64, 96)),
    *(f"Standard_E{n}as_v6" for n in (2, 4, 8, 16, 20, 32, 48, 64, 96)),
]


def test_catalog_covers_the_required_sizes() -> None:
    missing = [name for name in REQUIRED_SIZES if name not in CATALOG]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "vcpus", "memory_gib", "gpus"),
    [
        ("Standard_D96s_v5", 96, 384, 0),
        ("Standard_E96s_v5", 96, 672, 0),
        ("Standard_F72s_v2", 72, 144, 0),
        ("Standard_NC64as_T4_v3", 64, 440, 4),
        ("Standard_NC96ads_A100_v4", 96, 880, 4),
        ("Standard_NC80adis_H100_v5", 80, 640, 2),
        ("Standard_ND96asr_v4", 96, 900, 8),
        ("Standard_ND96amsr_A100_v4", 96, 1900, 8),
        ("Standard_ND96isr_H200_v5", 96, 1850, 8),
        ("Standard_NV72ads_A10_v5", 72, 880, 2),
        ("Standard_NC40ads_H100_v5", 40, 320, 1),
        ("Standard_ND96isr_H100_v5", 96, 1900, 8),
        ("Standard_D192s_v6", 192, 768, 0),
        ("Standard_D128ds_v6", 128, 512, 0),
        ("Standard_D96as_v6", 96, 384, 0),
        ("Standard_D96ads_v6", 96, 384, 0),
        ("Standard_E128s_v6", 128, 1024, 0),
        ("Standard_E192is_v6", 192, 1832, 0),
        ("Standard_E96ds_v6", 96, 768, 0),
        ("Standard_E64as_v6", 64, 512, 0),
        ("Standard_E96as_v6", 96, 672, 0),
    ],
)
def test_catalog_spot_checks_against_azure_size_pages(name: str, vcpus: int, memory_gib: int, gpus: int) -> None:
    vm = CATALOG[name]
    assert (vm.vcpus, vm.memory_gib, vm.gpus) == (vcpus, memory_gib, gpus)


@pytest.mark.parametrize("name", ["Standard_NV6ads_A10_v5", "Standard_NV12ads_A10_v5", "Standard_NV18ads_A10_v5"])
def test_partial_a10_sizes_claim_no_whole_gpu(name: str) -> None:
    vm = CATALOG[name]
    assert vm.gpus == 0
    assert not vm.is_gpu
    assert node_allocatable(vm).gpus == 0


@pytest.mark.parametrize("vm", list(CATALOG.values()), ids=lambda vm: vm.name)
def test_every_catalog_entry_is_sane(vm: VmSize) -> None:
    assert CATALOG[vm.name] is vm
    assert vm.name.startswith("Standard_")
    assert vm.vcpus > 0
    assert vm.memory_gib > 0
    assert vm.memory_mib == vm.memory_gib * 1024
    assert vm.gpus >= 0
    assert vm.is_gpu == (vm.gpus > 0)
    # A model exactly when there are whole GPUs to schedule.
    assert (vm.gpu_model is not None) == vm.is_gpu


@pytest.mark.parametrize("vm", list(CATALOG.values()), ids=lambda vm: vm.name)
def test_catalog_allocatable_is_positive_and_below_raw(vm: VmSize) -> None:
    node = node_allocatable(vm)
    assert 0 < node.cpu_millicores < vm.vcpus * 1000
    assert 0 < node.memory_mib < vm.memory_mib
    assert node.gpus == vm.gpus


def test_gpu_and_cpu_sizes_present() -> None:
    assert CATALOG["Standard_NC4as_T4_v3"].gpu_model == "NVIDIA T4"
    assert CATALOG["Standard_NC24ads_A100_v4"].gpu_model == "NVIDIA A100 80GB PCIe"
    assert CATALOG["Standard_NC4as_T4_v3"].memory_mib == 28672
    assert not CATALOG["Standard_D16s_v5"].is_gpu


def test_lookup_ignores_case() -> None:
    assert lookup_vm_size("standard_d16s_v5") is CATALOG["Standard_D16s_v5"]
    assert lookup_vm_size("STANDARD_NC24ADS_A100_V4") is CATALOG["Standard_NC24ads_A100_v4"]
    assert lookup_vm_size("Standard_ND96isr_H100_v5") is CATALOG["Standard_ND96isr_H100_v5"]
    assert lookup_vm_size("Standard_D16s_v9") is None
    assert lookup_vm_size("") is None


def test_catalog_names_are_unique_ignoring_case() -> None:
    # CATALOG is a dict: a name listed twice would silently keep only its last entry.
    names = [vm.name.lower() for vm in _SIZES]
    assert len(names) == len(set(names))


def test_the_40_gb_and_80_gb_a100_nd_sizes_are_kept_apart() -> None:
    """ND96asr_v4 is the 40 GB A100; the 80 GB one is ND96amsr_A100_v4. `Standard_ND96asr_A100_v4`
    reads like the 80 GB size but is the 40 GB series' label: never a catalog entry, never suggested
    as its nearest name, and docs/vm-sizes.md says which is which."""
    forty, eighty = CATALOG["Standard_ND96asr_v4"], CATALOG["Standard_ND96amsr_A100_v4"]
    assert (forty.gpus, forty.memory_gib, forty.gpu_model) == (8, 900, "NVIDIA A100 40GB SXM")
    assert (eighty.gpus, eighty.memory_gib, eighty.gpu_model) == (8, 1900, "NVIDIA A100 80GB SXM")
    assert lookup_vm_size("Standard_ND96asr_A100_v4") is None
    note = name_note("standard_nd96asr_a100_v4")
    assert note is not None and "8 × A100 40 GB is Standard_ND96asr_v4" in note
    assert "8 × A100 80 GB is Standard_ND96amsr_A100_v4" in note
    assert "- `Standard_ND96asr_A100_v4` reads like the 80 GB A100 size" in sizes_markdown()
    reference = (ROOT / "docs" / "configuration.md").read_text()
    assert (
        "`Standard_ND96asr_v4` is the 8 × A100 **40 GB** size and `Standard_ND96amsr_A100_v4` the 8 × A100 "
        "**80 GB** one"
    ) in reference


@pytest.mark.parametrize(
    ("name", "gpu_family"),
    [
        ("Standard_NC24s_v3", True),
        ("Standard_ND96isr_MI300X_v5", True),
        ("standard_nv6ads_a10_v5", True),
        ("Standard_NG32ads_V620_v1", True),
        ("Standard_D16s_v6", False),
        ("Standard_E96as_v6", False),
        ("nope", False),
    ],
)
def test_gpu_family_is_the_n_family(name: str, gpu_family: bool) -> None:
    assert is_gpu_family(name) is gpu_family


def test_nearest_sizes_are_catalog_names_closest_first() -> None:
    assert nearest_sizes("standard_d16s_v7") == ["Standard_D16s_v6", "Standard_D16s_v5", "Standard_D16ds_v6"]
    assert nearest_sizes("xyz") == []
    assert all(name in CATALOG for name in nearest_sizes("Standard_NC24s_v3"))


def test_name_notes_are_never_catalog_names() -> None:
    assert not [name for name in NAME_NOTES if lookup_vm_size(name)]


# --- docs/vm-sizes.md -------------------------------------------------------------------------


def test_vm_sizes_page_is_generated_from_the_catalog() -> None:
    assert VM_SIZES_PAGE.read_text() == sizes_markdown(), (
        "docs/vm-sizes.md is out of date: python -m components.facts.capacity --markdown > docs/vm-sizes.md"
    )


def test_vm_sizes_page_lists_every_size_with_its_allocatable() -> None:
    page = sizes_markdown()
    rows = {line.split(" | ")[0].strip("|` "): line for line in page.splitlines() if line.startswith("| `Standard_")}
    assert set(rows) == set(CATALOG)
    # By hand, as test_node_allocatable_by_hand: 24 vCPU, 220 GiB, 1 A100 -> 23.66 vCPU, 222930 MiB.
    assert rows["Standard_NC24ads_A100_v4"] == (
        "| `Standard_NC24ads_A100_v4` | 1 × NVIDIA A100 80GB PCIe | 24 | 220 | 340m | 2,350 MiB | 23.66 | 217.71 |"
    )
    assert rows["Standard_D16s_v5"] == "| `Standard_D16s_v5` | 16 | 64 | 260m | 2,350 MiB | 15.74 | 61.71 |"
    # 25 % cap: 8 GiB -> 2048 + 100 MiB kept.
    assert rows["Standard_D2s_v6"] == "| `Standard_D2s_v6` | 2 | 8 | 100m | 2,148 MiB | 1.90 | 5.90 |"
    # The GPU slices are CPU nodes, and say so.
    assert "| 1 × " not in rows["Standard_NV6ads_A10_v5"] and "`Standard_NV6ads_A10_v5`) carry a slice" not in page
    assert "`Standard_NV18ads_A10_v5`) carry a slice of a GPU" in page


def test_the_module_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == sizes_markdown()
    assert main([]) == 2


def test_catalog_is_read_only() -> None:
    with pytest.raises(TypeError):
        CATALOG["Standard_X1"] = VmSize("Standard_X1", 1, 1.0)  # type: ignore[index]


# --- properties ---------------------------------------------------------------------------

cores = st.integers(min_value=1, max_value=512)
memory_mib = st.integers(min_value=1, max_value=4 * 1024 * 1024)  # up to 4 TiB
max_pods = st.integers(min_value=1, max_value=250)  # AKS's maxPods ceiling


@given(a=cores, b=cores)
def test_cpu_reserve_and_allocatable_monotone_in_vcpus(a: int, b: int) -> None:
    low, high = sorted((a, b))
    assert kube_reserved_cpu_millicores(low) <= kube_reserved_cpu_millicores(high)
    small, large = VmSize("Standard_T", low, 16.0), VmSize("Standard_T", high, 16.0)
    assert node_allocatable(small).cpu_millicores <= node_allocatable(large).cpu_millicores


@given(n=cores)
def test_cpu_reserve_never_under_the_table(n: int) -> None:
    floor_point = max(k for k in AKS_CPU_TABLE if k <= n)
    assert kube_reserved_cpu_millicores(n) >= AKS_CPU_TABLE[floor_point]
    # Between table points it stays within the bracket, so it does not over-reserve wildly.
    ceiling_points = [k for k in AKS_CPU_TABLE if k >= n]
    if ceiling_points:
        assert kube_reserved_cpu_millicores(n) <= AKS_CPU_TABLE[min(ceiling_points)]


@given(a=memory_mib, b=memory_mib, pods=max_pods)
def test_memory_allocatable_monotone_in_memory(a: int, b: int, pods: int) -> None:
    low, high = sorted((a, b))
    small, large = VmSize("Standard_T", 4, low / 1024), VmSize("Standard_T", 4, high / 1024)
    assert node_allocatable(small, pods).memory_mib <= node_allocatable(large, pods).memory_mib


@given(mem=memory_mib, pods=max_pods)
def test_memory_reserve_is_the_lesser_of_both_rules(mem: int, pods: int) -> None:
    reserve = kube_reserved_memory_mib(mem, pods)
    assert reserve <= 20 * pods + 50
    assert reserve >= min(20 * pods + 50, mem / 4)
    assert reserve * 4 < mem + 4  # at most the 25% cap rounded up


@given(vcpus=cores, mem=memory_mib, gpus=st.integers(min_value=0, max_value=16), pods=max_pods)
def test_allocatable_never_negative_and_below_raw(vcpus: int, mem: int, gpus: int, pods: int) -> None:
    vm = VmSize("Standard_T", vcpus, mem / 1024, gpus, "NVIDIA T" if gpus else None)
    node = node_allocatable(vm, pods)
    assert 0 <= node.cpu_millicores < vcpus * 1000
    assert 0 <= node.memory_mib < vm.memory_mib
    assert node.gpus == gpus


@given(vcpus=cores, mem=memory_mib, count=st.integers(min_value=0, max_value=1000))
def test_pool_capacity_scales_allocatable(vcpus: int, mem: int, count: int) -> None:
    vm = VmSize("Standard_T", vcpus, mem / 1024, 2, "NVIDIA T")
    node = node_allocatable(vm)
    pool = pool_capacity(vm, count)
    assert pool.as_dict() == {key: value * count for key, value in node.as_dict().items()}
