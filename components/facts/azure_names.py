"""The Azure names the stack derives from the cluster's name, each valid by Azure's rules (pure facts).

AKS takes cluster names of 1-63 letters, digits, '-' and '_'. The names made from one follow
stricter rules, so each is derived here, once, for the program and for the config's checks
(docs/azure-rules.md lists the rules with their sources):
- the DNS prefix: 1-54 letters, digits and '-', starting and ending with a letter or digit
  (aka.ms/aks-naming-rules); it cannot change after creation, so a name that is already valid is
  kept exactly;
- the managed Prometheus data collection endpoint, rule and association: "MSProm-<region>-<cluster>",
  cut to 44, 64 and 64 characters and ending in a letter or digit, the endpoint without '_'
  (azure-cli's azuremonitormetrics/dc/defaults.py, which the add-on's templates follow);
- the Managed Grafana: 2-23 letters, digits and '-', starting with a letter and ending with a
  letter or digit (Managed Grafana's troubleshooting page; the API's own pattern allows 30);
- AKS's node resource group, MC_<group>_<cluster>_<region>, which AKS refuses beyond 80 characters
  (aka.ms/aks-naming-rules) and never shortens;
- a team's user-assigned managed identity, `<cluster>-<team>`: 3-128 letters, digits, '-' and '_',
  starting with a letter or digit (learn.microsoft.com/azure/azure-resource-manager/management/
  resource-name-rules, Microsoft.ManagedIdentity), which a cluster name (at most 63) and a team
  name (a DNS-1123 label, at most 63) always make; its federated identity credential,
  `aks-<cluster>`: the spec's ^[a-zA-Z0-9][a-zA-Z0-9-_]{2,119}$ (ManagedIdentity 2023-01-31).
"""

from __future__ import annotations

import re

DNS_PREFIX_LIMIT = 54
ENDPOINT_NAME_LIMIT, RULE_NAME_LIMIT, ASSOCIATION_NAME_LIMIT = 44, 64, 64
GRAFANA_NAME_LIMIT = 23
NODE_RESOURCE_GROUP_LIMIT = 80
# The stack's resource group is "<resource name>" plus azure-native's 8 random characters (its autonaming).
STACK_RESOURCE_GROUP = "kueue-rg"
AUTONAME_SUFFIX = 8


def short_region(location: str) -> str:
    """ARM takes a region by its display name too ("East US 2"); names hold its short form ("eastus2")."""
    return location.replace(" ", "").lower()


def dns_prefix(cluster_name: str) -> str:
    """The cluster's DNS prefix: its name where valid, else the name with each other character as '-'."""
    prefix = re.sub(r"[^A-Za-z0-9-]", "-", cluster_name)[:DNS_PREFIX_LIMIT]
    return prefix.strip("-") or "kueue"


def prometheus_name(location: str, cluster: str, limit: int, *, underscores: bool = True) -> str:
    """The add-on's name for its data collection endpoint, rule or association."""
    name = f"MSProm-{short_region(location)}-{cluster}"
    if not underscores:
        name = re.sub(r"[^A-Za-z0-9-]", "", name)
    return re.sub(r"[^A-Za-z0-9]+$", "", name[:limit])


def endpoint_name(location: str, cluster: str) -> str:
    return prometheus_name(location, cluster, ENDPOINT_NAME_LIMIT, underscores=False)


def rule_name(location: str, cluster: str) -> str:
    return prometheus_name(location, cluster, RULE_NAME_LIMIT)


def association_name(location: str, cluster: str) -> str:
    return prometheus_name(location, cluster, ASSOCIATION_NAME_LIMIT)


def grafana_name(cluster_name: str) -> str:
    """A Managed Grafana name from the cluster's (see the module's rules)."""
    name = re.sub(r"[^A-Za-z0-9-]", "-", cluster_name)
    name = name if name[:1].isalpha() else f"g-{name}"
    return name[:GRAFANA_NAME_LIMIT].rstrip("-").ljust(2, "0")


def node_resource_group_length(cluster_name: str, location: str) -> int:
    """The length of AKS's default node resource group name for the stack's cluster."""
    group = len(STACK_RESOURCE_GROUP) + AUTONAME_SUFFIX
    return len(f"MC_{'g' * group}_{cluster_name}_{short_region(location)}")


def team_identity_name(cluster_name: str, team: str) -> str:
    """The managed identity a team's jobs run as: one per cluster and team, found by both names."""
    return f"{cluster_name}-{team}"


def federated_credential_name(cluster_name: str) -> str:
    """The identity's trust of one cluster's OIDC issuer, named after the cluster."""
    return f"aks-{cluster_name}"
