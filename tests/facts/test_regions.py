"""azure-native:location checked offline against Azure's region names (components/facts/regions.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.facts.regions import PUBLIC_REGIONS, REGIONS, region_problem
from components.config.checks import ConfigError
from testbed.stacks import load_stack


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("westeurop", "'westeurop' is not an Azure region; did you mean 'westeurope'"),
        ("West Europe", "'West Europe' is a display name; write the region's programmatic name, 'westeurope'"),
        ("east us 2", "programmatic name, 'eastus2'"),
        ("eastus3", "did you mean 'eastus' or 'westus3' or 'eastus2'"),
    ],
)
def test_a_wrong_region_names_the_key_and_the_nearest_names(
    dev_config_map: dict[str, Any], location: str, says: str
) -> None:
    config = copy.deepcopy(dev_config_map)
    config["azure-native:location"] = location
    with pytest.raises(ConfigError) as err:
        load_stack(config)
    first = err.value.problems[0]
    assert first.path == "azure-native:location" and says in first.message, first.message
    assert "az account list-locations" in first.message


@pytest.mark.parametrize(
    "location",
    [
        "eastus2",
        "westeurope",
        "swedencentral",
        "usgovvirginia",
        "eastus2euap",
        # Not in the list and like none of it: a region newer than the list
        # passes, and the preflight asks Azure.
        "atlantisnorth",
    ],
)
def test_a_known_region_or_one_newer_than_the_list_passes(location: str) -> None:
    assert region_problem(location) is None


def test_every_known_region_is_a_programmatic_name() -> None:
    assert "eastus2" in PUBLIC_REGIONS and len(PUBLIC_REGIONS) >= 50
    assert all(r.isascii() and r.isalnum() and r.islower() for r in REGIONS)
