"""The benchmark's stack and trace: one GPU pool and one CPU pool, three teams with unequal shares.

Both pools are fixed-size, so queue policy, not the autoscaler, decides. Pod shapes are what a
team sizes to its nodes: a GPU pod takes a 1-GPU A100 node's GPU (NC24ads_A100_v4), a CPU pod a
quarter of a D16s_v5 node's allocatable CPU (15.74 cores, components/facts/capacity.py). Quotas summed
from allocatable then hold only pods that fit; quotas typed from the VM sizes' 16 vCPUs do not.

The teams: `research` (20 %) floods the queue from the start, `vision` (50 %) submits steadily,
`speech` (30 %) is idle for the first 20 s and then wants its share.
"""

from __future__ import annotations

from typing import Any

from components.config.parse import parse_config, raw_from_stack_file
from components.config.stack import StackConfig

from .trace import Pod, TeamLoad, TraceSpec

SEED = 25

STACK_NAME = "outcomes"


def stack_config_map(kueue_chart: str, device_plugin_chart: str, *, governed: bool = True) -> dict[str, Any]:
    """The `config:` map; the charts are files (the tier's local copies of the published charts)."""
    return {
        "azure-native:location": "eastus2",
        "kueue-aks:cluster": {"systemPool": {"vmSize": "Standard_D4s_v5", "count": 1}},
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_D16s_v5", "minCount": 8, "maxCount": 8},
            {"name": "gpu", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 24, "maxCount": 24},
        ],
        "kueue-aks:teams": [{"name": t.name, "share": t.share} for t in TRACE.teams],
        "kueue-aks:kueue": {"chart": kueue_chart},
        "kueue-aks:devicePlugin": {"chart": device_plugin_chart},
        "kueue-aks:monitoring": {"enabled": False},
        "kueue-aks:governance": {"enforce": governed},
    }


def stack_config(kueue_chart: str, device_plugin_chart: str, *, governed: bool = True) -> StackConfig:
    raw, location = raw_from_stack_file(
        {"config": stack_config_map(kueue_chart, device_plugin_chart, governed=governed)}
    )
    return parse_config(raw, stack=STACK_NAME, location=location)


TRACE = TraceSpec(
    teams=(
        TeamLoad("vision", 50, start_s=0.0, end_s=50.0, rate_per_s=0.8, gpu_fraction=0.5),
        TeamLoad("speech", 30, start_s=20.0, end_s=50.0, rate_per_s=0.8, gpu_fraction=0.5),
        TeamLoad("research", 20, start_s=0.0, end_s=50.0, rate_per_s=1.6, gpu_fraction=0.5),
    ),
    gpu_pod=Pod(cpu_m=8000, memory_mib=64 * 1024, gpus=1),
    cpu_pod=Pod(cpu_m=3900, memory_mib=8 * 1024),
    cpu_pods_max=3,
    seconds_per_hour=21.0,  # Philly's median 1,186 s becomes 6.9 s; the p95 cap 148 s
)
