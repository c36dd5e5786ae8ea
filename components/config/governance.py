"""`kueue-aks:governance`: whether only Kueue-admitted pods reach the user pools, and which
namespaces are exempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..k8s.names import is_dns1123_label
from .checks import Problems, Reader, shown
from .keys import GOVERNANCE
from .teams import Team

# Namespaces whose pods may always reach pool nodes: Kubernetes' and AKS's own DaemonSets and
# the device plugin's. Kueue's own pods run on the system pool and need no exemption.
SYSTEM_EXEMPT_NAMESPACES = ("kube-system", "nvidia-device-plugin")


@dataclass(frozen=True)
class Governance:
    enforce: bool = True
    exempt_namespaces: tuple[str, ...] = ()  # in addition to SYSTEM_EXEMPT_NAMESPACES

    @property
    def exempt(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(SYSTEM_EXEMPT_NAMESPACES + self.exempt_namespaces))


def parse_governance(problems: Problems, raw: Any, teams: tuple[Team, ...]) -> Governance:
    r = Reader(problems, GOVERNANCE.name, raw, GOVERNANCE)
    team_names = {t.name for t in teams}

    def namespaces(p: str, items: list[str]) -> Any:
        for i, name in enumerate(items):
            if not is_dns1123_label(name):
                problems.add(f"{p}[{i}]", f"{shown(name)} is not a namespace name (a DNS-1123 label)")
            elif name in team_names:
                problems.add(
                    f"{p}[{i}]", f"{name!r} is a team namespace; its pods are queued by Kueue and cannot be exempt"
                )
            elif items.index(name) != i:
                problems.add(f"{p}[{i}]", f"{name!r} is listed twice")
        return tuple(items)

    return Governance(enforce=r.get("enforce", True), exempt_namespaces=r.get("exemptNamespaces", (), namespaces))
