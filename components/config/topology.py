"""`kueue-aks:topology`: the node label keys of Kueue's Topology, coarsest first."""

from __future__ import annotations

from typing import Any

from ..k8s.names import is_qualified_name
from .checks import INVALID, Checks, Problems, Reader
from .names import HOSTNAME_LABEL, NAMESPACE

DEFAULT_TOPOLOGY_LEVELS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname")


def parse_topology(problems: Problems, raw: Any) -> tuple[str, ...]:
    c = Checks(problems)
    r = Reader(problems, f"{NAMESPACE}:topology", raw, ["levels"])

    def levels(p: str, v: Any) -> Any:
        items = c.items(p, v, "node label keys, coarsest first")
        if items is None:
            return INVALID
        if not 1 <= len(items) <= 16:
            problems.add(p, f"has {len(items)} levels; Kueue allows 1 to 16")
            return INVALID
        for i, level in enumerate(items):
            if not isinstance(level, str) or not is_qualified_name(level):
                problems.add(f"{p}[{i}]", f"{level!r} is not a node label key")
            elif items.index(level) != i:
                problems.add(f"{p}[{i}]", f"{level!r} is listed twice; levels must be unique")
            elif level == HOSTNAME_LABEL and i != len(items) - 1:
                problems.add(f"{p}[{i}]", f"{HOSTNAME_LABEL} may only be the last (finest) level")
        return tuple(items)

    return r.get("levels", DEFAULT_TOPOLOGY_LEVELS, levels)
