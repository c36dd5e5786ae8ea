"""What the Kueue validator reports, and what its steps share: a Violation (the object, the rule
id, the message), the error that lists them, Kueue's API group, the capacity the quotas must fit,
and plain-data accessors that tolerate a wrong type (the schema step reports it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

KUEUE_GROUP = "kueue.x-k8s.io"


Capacity = Mapping[str, Mapping[str, Decimal | int | str]]  # flavor -> resource -> quantity


@dataclass(frozen=True)
class Violation:
    object: str  # kind/[namespace/]name, e.g. "LocalQueue/research/default"
    rule: str  # a rule id (docs/design-notes.md#kueue-rule-ids): "CQ16", "schema", "REF-flavor"…
    message: str  # field path, what is wrong, and what is allowed

    def __str__(self) -> str:
        return f"{self.object}: [{self.rule}] {self.message}"


class KueueValidationError(Exception):
    """Generated Kueue objects that the API server or Kueue would reject (or never admit with)."""

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        super().__init__("\n".join(map(str, self.violations)))


def as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every Namespace


def listed(names: Iterable[Any]) -> str:
    """Names as a message lists them: sorted, comma-separated, or "none"."""
    ordered = sorted(str(name) for name in names)
    return ", ".join(ordered) if ordered else "none"


def flavors_of(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(field path, entry) for every flavors[] entry of every resource group."""
    for i, group in enumerate(as_list(spec.get("resourceGroups"))):
        for j, flavor in enumerate(as_list(as_dict(group).get("flavors"))):
            yield f"spec.resourceGroups[{i}].flavors[{j}]", as_dict(flavor)
