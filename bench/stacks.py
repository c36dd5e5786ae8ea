"""Stack configs for the benchmark: the dev stack and generated stacks of N teams across M pools.

Generated stacks are realistic worst cases for size: every team uses every pool (so each
ClusterQueue lists a quota for every flavor), pools mix CPU and GPU catalog sizes, one CPU pool is
topology-aware (so the Topology object and its dependency chain exist), one GPU pool is spot.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import yaml

from components.facts.capacity import CATALOG

ROOT = Path(__file__).resolve().parents[1]

# Sizes cycled through for generated pools; every name must be in the capacity catalog.
CPU_SIZES = (
    "Standard_D16s_v5",
    "Standard_E16s_v5",
    "Standard_F16s_v2",
    "Standard_D32as_v5",
    "Standard_D8ds_v5",
    "Standard_E32s_v5",
    "Standard_F32s_v2",
    "Standard_D64s_v5",
)
GPU_SIZES = (
    "Standard_NC24ads_A100_v4",
    "Standard_NC4as_T4_v3",
    "Standard_ND96isr_H100_v5",
    "Standard_NV36ads_A10_v5",
)

# (teams, pools) of the generated stacks the benchmark measures.
GRID: tuple[tuple[int, int], ...] = ((10, 4), (50, 4), (200, 4), (10, 12), (50, 12), (200, 12))


def stack_name(teams: int, pools: int) -> str:
    return f"bench-t{teams}-p{pools}"


def team_share(teams: int) -> Decimal:
    """100/teams rounded down to 2 decimals, so the shares never add up to more than 100."""
    if teams < 1:
        raise ValueError("at least one team")
    return (Decimal(100) / teams).quantize(Decimal("0.01"), rounding=ROUND_FLOOR)


def _number(share: Decimal) -> int | float:
    """The share as YAML writes a number: an int when whole, else a float with 2 decimals."""
    return int(share) if share == share.to_integral_value() else float(share)


def pool_specs(pools: int) -> list[dict[str, Any]]:
    """`pools` user pools: a quarter GPU (at least one), the rest CPU; names cpu00.., gpu00.."""
    if pools < 2:
        raise ValueError("at least two pools (one CPU, one GPU)")
    gpu_count = max(1, pools // 4)
    cpu_count = pools - gpu_count
    specs: list[dict[str, Any]] = []
    for i in range(cpu_count):
        spec: dict[str, Any] = {"name": f"cpu{i:02d}", "vmSize": CPU_SIZES[i % len(CPU_SIZES)], "minCount": 0, "maxCount": 10}
        if i == 0:  # topology-aware pools are fixed-size (TAS uses only nodes that exist)
            spec.update(minCount=2, maxCount=2, topology=True)
        specs.append(spec)
    for i in range(gpu_count):
        spec = {"name": f"gpu{i:02d}", "vmSize": GPU_SIZES[i % len(GPU_SIZES)], "minCount": 0, "maxCount": 4}
        if i == 1:
            spec["spot"] = True
        specs.append(spec)
    return specs


def generated_config(teams: int, pools: int) -> dict[str, Any]:
    """The `config:` map (full keys) of a stack with `teams` teams t000.. across `pools` pools."""
    share = _number(team_share(teams))
    return {
        "azure-native:location": "eastus2",
        "kueue-aks:cluster": {"tier": "Standard", "systemPool": {"vmSize": "Standard_D4s_v5", "count": 2}},
        "kueue-aks:nodePools": pool_specs(pools),
        "kueue-aks:teams": [{"name": f"t{i:03d}", "share": share} for i in range(teams)],
    }


def dev_config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


def write_stack(root: Path, name: str, config: dict[str, Any]) -> Path:
    """Write `config` as root/Pulumi.<name>.yaml, as the plan command reads it."""
    path = root / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def all_sizes_in_catalog() -> bool:
    return all(size in CATALOG for size in (*CPU_SIZES, *GPU_SIZES))
