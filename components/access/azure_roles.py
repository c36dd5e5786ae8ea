"""The Azure role assignments a stack makes, and what that asks of whoever runs `pulumi up` (pure).

Writing a role assignment needs Microsoft.Authorization/roleAssignments/write, which Owner, User
Access Administrator and Role Based Access Control Administrator have and Contributor does not (its
NotActions hold Microsoft.Authorization/*/Write: learn.microsoft.com/azure/role-based-access-control/
built-in-roles). The plan and README say so; tests/access/test_azure_roles.py keeps this list equal
to the RoleAssignments the program registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.stack import StackConfig
from ..facts.built_in_roles import STACK_ROLES, role_name
from .identity import identity_roles
from .members import member_groups

ASSIGNING_ROLES = ("Owner", "User Access Administrator", "Role Based Access Control Administrator")


@dataclass(frozen=True)
class RoleGrant:
    role: str
    principal: str  # who, in words
    scope: str  # on what, in words
    definition: str = ""  # the role definition's GUID; the stack's own roles' when left out

    @property
    def definition_id(self) -> str:
        return self.definition or STACK_ROLES[self.role]


def role_grants(config: StackConfig) -> list[RoleGrant]:
    """Every role assignment the stack creates, in the program's order."""
    if config.cluster.mode == "kubeconfig":
        return []
    grants: list[RoleGrant] = []
    if config.cluster.mode == "create" and config.cluster.deployer_admin:
        grants.append(RoleGrant("Azure Kubernetes Service RBAC Cluster Admin", "the deploying identity", "the cluster"))
    vnet = config.cluster.network.vnet_id  # only in create mode: elsewhere the keys are refused
    if vnet:
        grants.append(
            RoleGrant(
                "Network Contributor", "the cluster's control-plane identity", f"the VNet {vnet.rsplit('/', 1)[1]}"
            )
        )
    monitoring = config.monitoring
    if monitoring.enabled and not monitoring.grafana_id:
        grants.append(
            RoleGrant("Monitoring Data Reader", "the new Grafana's managed identity", "the Azure Monitor workspace")
        )
        grants += [
            RoleGrant("Grafana Admin", f"group {group}", "the new Grafana")
            for group in monitoring.grafana_admin_group_ids
        ]
        if not monitoring.grafana_admin_group_ids and config.cluster.mode == "create" and config.cluster.deployer_admin:
            grants.append(RoleGrant("Grafana Admin", "the deploying identity", "the new Grafana"))
    grants += [
        RoleGrant("Azure Kubernetes Service Cluster User Role", f"group {group}", "the cluster")
        for group in member_groups(config)
    ]
    grants += [
        RoleGrant(role_name(r.definition), f"team {team}'s identity", f"`{r.scope}`", r.definition)
        for team, r in identity_roles(config)
    ]
    return grants


def assigned_roles(config: StackConfig) -> str:
    """The role definitions the stack assigns, as the condition of a delegated Role Based Access
    Control Administrator takes them (`{guid, guid}`; docs/ci-cd.md's one-time setup): exactly
    what CI's identity must be allowed to assign."""
    return "{" + ", ".join(sorted({g.definition_id for g in role_grants(config)})) + "}"


def data_scopes(config: StackConfig) -> list[str]:
    """Where the team identities hold their roles, each once (IDs compare without case)."""
    scopes = {r.scope.lower(): r.scope for _, r in identity_roles(config)}
    return sorted(scopes.values())


def roles_needed(config: StackConfig) -> str | None:
    """What the deploying identity needs because of the grants, in one paragraph; None without any."""
    grants = role_grants(config)
    if not grants:
        return None
    where = (
        "the subscription (the stack creates its resource group)"
        if config.cluster.mode == "create"
        else "the cluster's and the monitoring resources' resource groups"
    )
    vnet = config.cluster.network.vnet_id  # only in create mode: elsewhere the keys are refused
    if vnet:
        # The VNet is the company's, often in a resource group or subscription of the network team.
        where += f" and the VNet {vnet.rsplit('/', 1)[1]} (resource group {vnet.split('/')[4]})"
    scopes = data_scopes(config)
    if scopes:
        # A team's data is seldom in the stack's resource group (docs/ci-cd.md#one-time-setup).
        where += ", and on each scope of a team identity's roles (" + ", ".join(f"`{s}`" for s in scopes) + ")"
    listed = "; ".join(f"{g.role} for {g.principal} on {g.scope}" for g in grants)
    return (
        f"This stack creates {len(grants)} Azure role assignment{'s' if len(grants) > 1 else ''} ({listed}). "
        f"Whoever runs `pulumi up` needs {', '.join(ASSIGNING_ROLES[:-1])} or {ASSIGNING_ROLES[-1]} on {where}: "
        "Contributor alone cannot write role assignments and stops partway through."
    )
