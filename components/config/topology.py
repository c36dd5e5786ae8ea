"""`kueue-aks:topology`: the node label keys of Kueue's Topology, coarsest first."""

from __future__ import annotations

from typing import Any

from ..k8s.names import is_qualified_name
from .checks import Problems, Reader, shown
from .keys import TOPOLOGY
from .names import HOSTNAME_LABEL

DEFAULT_TOPOLOGY_LEVELS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname")


def parse_topology(problems: Problems, raw: Any) -> tuple[str, ...]:
    r = Reader(problems, TOPOLOGY.name, raw, TOPOLOGY)

    def levels(p: str, items: list[str]) -> Any:
        for i, level in enumerate(items):
            if not is_qualified_name(level):
                problems.add(f"{p}[{i}]", f"{shown(level)} is not a node label key")
            elif items.index(level) != i:
                problems.add(f"{p}[{i}]", f"{level!r} is listed twice; levels must be unique")
            elif level == HOSTNAME_LABEL and i != len(items) - 1:
                problems.add(f"{p}[{i}]", f"{HOSTNAME_LABEL} may only be the last (finest) level")
        return tuple(items)

    return tuple(r.get("levels", DEFAULT_TOPOLOGY_LEVELS, levels))
