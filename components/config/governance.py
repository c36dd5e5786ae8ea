"""`kueue-aks:governance`: whether only Kueue-admitted pods reach the user pools, and which
namespaces are exempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..k8s.names import is_dns1123_label
from .checks import INVALID, Checks, Problems, Reader
from .names import NAMESPACE
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
    c = Checks(problems)
    r = Reader(problems, f"{NAMESPACE}:governance", raw, ["enforce", "exemptNamespaces"])
    team_names = {t.name for t in teams}

    def namespaces(p: str, v: Any) -> Any:
        items = c.items(p, v, "namespace names")
        if items is None:
            return INVALID
        for i, name in enumerate(items):
            if not isinstance(name, str) or not is_dns1123_label(name):
                problems.add(f"{p}[{i}]", f"{name!r} is not a namespace name (a DNS-1123 label)")
            elif name in team_names:
                problems.add(
                    f"{p}[{i}]", f"{name!r} is a team namespace; its pods are queued by Kueue and cannot be exempt"
                )
            elif items.index(name) != i:
                problems.add(f"{p}[{i}]", f"{name!r} is listed twice")
        return tuple(items)

    return Governance(
        enforce=r.get("enforce", True, c.boolean), exempt_namespaces=r.get("exemptNamespaces", (), namespaces)
    )
