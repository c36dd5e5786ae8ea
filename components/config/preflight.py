"""`kueue-aks:preflight`: the check of Azure's vCPU quota and VM sizes before any resource, and
what to do when the quota falls short.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checks import Problems, Reader
from .keys import PREFLIGHT


@dataclass(frozen=True)
class Preflight:
    """What to do before any resource: read the subscription's vCPU quota and the region's VM
    sizes from Azure and compare them with the pools at maxCount (components/preflight)."""

    enabled: bool = True
    quota_policy: str = "error"  # error | warn | clamp (Kueue quotas from what the quota allows)


def parse_preflight(problems: Problems, raw: Any) -> Preflight:
    r = Reader(problems, PREFLIGHT.name, raw, PREFLIGHT)
    # With cluster.kubeconfig there is no Azure to read; the keys stay valid (Pulumi.yaml's declared
    # defaults reach every stack) and the program skips the check.
    return Preflight(
        enabled=r.get("enabled", True),
        quota_policy=r.get("quotaPolicy", "error"),
    )
