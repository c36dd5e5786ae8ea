"""The Azure names derived from the cluster's name: each valid by Azure's rules for every cluster name
the config accepts, and a name that was already valid kept as it is (changing the DNS prefix or a
data collection name replaces the resource)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.facts.azure_names import (
    ASSOCIATION_NAME_LIMIT,
    ENDPOINT_NAME_LIMIT,
    RULE_NAME_LIMIT,
    association_name,
    dns_prefix,
    endpoint_name,
    grafana_name,
    node_resource_group_length,
    rule_name,
)
from components.config.keys import CLUSTER_NAME

# aka.ms/aks-naming-rules: 1-54 characters, letters, digits and '-', starting and ending alphanumeric.
DNS_PREFIX = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,52}[A-Za-z0-9])?$")
GRAFANA_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,21}[A-Za-z0-9]$")
ENDPOINT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]$")
RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*[A-Za-z0-9]$")
# Every name kueue-aks:cluster.name accepts. Built now, not at the first draw: hypothesis imports its
# regex module lazily, and on CPython 3.11 that import (rewritten by pytest) can hit "AST constructor
# recursion depth mismatch" when it happens right after another test's failure report.
CLUSTER_NAMES = st.from_regex(CLUSTER_NAME, fullmatch=True)
CLUSTER_NAMES.validate()
REGIONS = st.sampled_from(["eastus2", "westeurope", "germanywestcentral", "East US 2", "australiasoutheast"])


@settings(max_examples=300)
@given(CLUSTER_NAMES, REGIONS)
def test_every_derived_name_is_valid_for_every_cluster_name(cluster: str, region: str) -> None:
    prefix = dns_prefix(cluster)
    assert DNS_PREFIX.match(prefix), prefix
    name = grafana_name(cluster)
    assert GRAFANA_NAME.match(name), name
    endpoint, rule, association = (
        endpoint_name(region, cluster),
        rule_name(region, cluster),
        association_name(region, cluster),
    )
    assert ENDPOINT.match(endpoint) and len(endpoint) <= ENDPOINT_NAME_LIMIT, endpoint
    assert RULE.match(rule) and len(rule) <= RULE_NAME_LIMIT, rule
    assert RULE.match(association) and len(association) <= ASSOCIATION_NAME_LIMIT, association
    # A name that is already valid is kept as it is: an existing stack's resources keep their names.
    if DNS_PREFIX.match(cluster):
        assert prefix == cluster
    if GRAFANA_NAME.match(cluster):
        assert name == cluster


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("kueue-dev", "kueue-dev"),
        ("kueue_dev", "kueue-dev"),  # '_' is not allowed in a DNS prefix
        ("a" * 63, "a" * 54),
        ("a" * 53 + "_b", "a" * 53),  # cut at 54, then no trailing '-'
        ("_" * 0 + "1x", "1x"),
    ],
)
def test_dns_prefix_examples(cluster: str, expected: str) -> None:
    assert dns_prefix(cluster) == expected


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("kueue-dev", "kueue-dev"),
        ("kueue_dev", "kueue-dev"),  # '_' is not allowed in a Grafana name
        ("1cluster", "g-1cluster"),  # nor a leading digit
        ("a", "a0"),  # at least two characters
        ("A" * 63, "A" * 23),
        ("a" * 22 + "-b", "a" * 22),  # cut at 23, then no trailing '-'
        ("a" + "_" * 30 + "b", "a0"),  # only '-' left after the first letter
    ],
)
def test_grafana_name_examples(cluster: str, expected: str) -> None:
    assert grafana_name(cluster) == expected


def test_prometheus_names_and_their_limits() -> None:
    assert endpoint_name("eastus2", "kueue-dev") == rule_name("eastus2", "kueue-dev") == "MSProm-eastus2-kueue-dev"
    assert association_name("West Europe", "kueue-dev") == "MSProm-westeurope-kueue-dev"
    long_name = "c" * 63
    assert endpoint_name("westeurope", long_name) == f"MSProm-westeurope-{long_name}"[:44]
    assert (
        rule_name("westeurope", long_name)
        == association_name("westeurope", long_name)
        == f"MSProm-westeurope-{long_name}"[:64]
    )
    # The endpoint drops '_' (Azure refuses it there); the rule and association keep it; none ends in either.
    assert endpoint_name("eastus2", "my_cluster") == "MSProm-eastus2-mycluster"
    assert rule_name("eastus2", "my_cluster") == "MSProm-eastus2-my_cluster"
    assert endpoint_name("eastus2", "a" * 28 + "-b") == "MSProm-eastus2-" + "a" * 28


def test_node_resource_group_length() -> None:
    # MC_ + kueue-rg and 8 random characters + _ + name + _ + region
    assert node_resource_group_length("kueue-dev", "eastus2") == 3 + 16 + 1 + 9 + 1 + 7
    assert node_resource_group_length("kueue-dev", "East US 2") == node_resource_group_length("kueue-dev", "eastus2")
