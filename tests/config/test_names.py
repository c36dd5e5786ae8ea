"""The names a stack may not use (components/config/names.py): AKS's own prefix."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.config_errors import refused
from testbed.stacks import parse_raw, with_changes


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"teams": [{"name": "aks-ml", "share": 50}]}, "kueue-aks:teams[0].name"),
        (
            {"priorityClasses": [{"name": "normal", "value": 0}, {"name": "aks-high-priority", "value": 1000}]},
            "kueue-aks:priorityClasses[1].name",
        ),
    ],
)
def test_names_in_the_aks_prefix_are_refused(changes: dict[str, Any], key: str) -> None:
    """AKS's managed Kueue extension owns every aks-… object (learn.microsoft.com/azure/aks/
    configure-queues-with-automatic-resource-flavors)."""
    problems = refused(parse_raw, with_changes(**changes)).lines
    assert [p for p in problems if p.startswith(key)] and all(
        "'aks-' prefix" in p for p in problems if p.startswith(key)
    ), problems
    assert parse_raw(with_changes(teams=[{"name": "masks", "share": 50}])).teams[0].name == "masks"  # only the prefix


def test_no_object_of_the_dev_stack_is_in_the_aks_prefix() -> None:
    from components.kueue.objects import build_objects

    names = [o["metadata"]["name"] for o in build_objects(parse_raw(with_changes()))]
    assert names and not [n for n in names if n.startswith("aks-")], names
