"""TeamAccess: the team members' RBAC objects (built by the pure members.py) and, on AKS, the
Azure role that lets each member group fetch the cluster's credentials.

The Azure role is "Azure Kubernetes Service Cluster User Role" (4abbcc35-e782-43d8-92c5-2d3f1bd2253f:
Microsoft.ContainerService/managedClusters/listClusterUserCredential/action and managedClusters/read,
nothing else; MicrosoftDocs azure-docs, role-based-access-control/built-in-roles/containers.md).
It is what `az aks get-credentials` needs, and the narrowest role that gives it: on a cluster with
the AKS-managed Entra ID integration (every cluster this stack creates; checked on existing ones)
the kubeconfig it returns holds no credential, only kubelogin's sign-in, whatever
disableLocalAccounts says (the local admin certificate is listClusterAdminCredential, another
role). What a member may then do is Kubernetes RBAC's RoleBindings, which AKS evaluates beside
Azure RBAC when that is on (learn.microsoft.com/azure/aks/concepts-cluster-authorization). The
namespace-scoped Azure roles ("Azure Kubernetes Service RBAC Writer") are not used: they cannot
fetch credentials, cover Kueue's and the operators' custom resources only through ABAC
conditions, and grant Secrets and Deployments, which members must not have.

TeamIdentities: each team's Azure identity for its data (identity.py says what and why): the
managed identity, its federated credential, its roles and its ServiceAccount.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_azure_native import authorization, managedidentity

from ..cluster.component import role_definition
from ..config.stack import StackConfig
from ..facts.azure_names import federated_credential_name, team_identity_name
from ..facts.built_in_roles import STACK_ROLES
from ..k8s.manifest import ObjectResource
from ..k8s.part import Part
from ..kueue.objects import QueueSet
from .identity import (
    SERVICE_ACCOUNT,
    TOKEN_AUDIENCE,
    aks_cluster_name,
    identity_teams,
    subject,
    with_client_ids,
)
from .members import member_groups, team_access

CLUSTER_USER_ROLE = STACK_ROLES["Azure Kubernetes Service Cluster User Role"]


def object_resources(
    name: str, objects: Sequence[dict[str, Any]], opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """A part's objects as resources, each named by its kind, namespace and name."""
    return [
        ObjectResource(
            f"{name}-{obj['kind'].lower()}-{obj['metadata'].get('namespace', 'cluster')}-{obj['metadata']['name']}",
            obj,
            opts,
        )
        for obj in objects
    ]


class TeamAccess(pulumi.ComponentResource):
    """Team members into their own namespace and queues (kueue-aks:teams[].members; docs/batch-users.md).

    `cluster_id` is the AKS cluster's resource ID (create and existing modes), None in kubeconfig
    mode, where only the RoleBindings are made. `after`: the team namespaces and Kueue's release,
    whose batch-user ClusterRole the RoleBindings name.
    """

    TYPE = "kueue-aks:access:TeamAccess"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        config: StackConfig,
        queues: QueueSet,
        cluster_id: pulumi.Input[str] | None,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, depends_on=list(after))
        # The members' RBAC objects (components/access/members.py).
        self.resources = object_resources(name, part.objects, in_cluster)
        groups = member_groups(config)
        if cluster_id is not None and groups:
            subscription = authorization.get_client_config_output().subscription_id
            for group in groups:
                # The group's ID in the resource name: adding or removing a group touches no other.
                self.resources.append(
                    authorization.RoleAssignment(
                        f"{name}-cluster-user-{group}",
                        scope=cluster_id,
                        principal_id=group,
                        principal_type="Group",
                        role_definition_id=role_definition(subscription, CLUSTER_USER_ROLE),
                        description="kueue-aks: team members fetch the cluster's credentials (az aks get-credentials)",
                        opts=pulumi.ResourceOptions(parent=self),
                    )
                )
        self.teams = {t.team: t.as_output() for t in team_access(config, queues)}
        # Who can submit where: namespace, LocalQueues, quota, member groups.
        self.exports = {"teams": self.teams}
        self.register_outputs({"teams": self.teams})


def _scope_digest(scope: str) -> str:
    """A scope, short, for a resource name: IDs compare without case, so neither does this."""
    return hashlib.sha256(scope.lower().encode()).hexdigest()[:8]


class TeamIdentities(pulumi.ComponentResource):
    """Each team's Azure identity for its data (kueue-aks:teams[].identity; docs/batch-users.md).

    `cluster`: the program's AksCluster or ExistingAksCluster: the identities go to its resource
    group and trust its OIDC issuer (an existing cluster's is read and checked here), once its own
    checks pass (`verified`). `after`: the team namespaces, where the ServiceAccounts go.
    """

    TYPE = "kueue-aks:access:TeamIdentities"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        config: StackConfig,
        cluster: Any,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        existing = config.cluster.existing
        issuer: pulumi.Output[Any] = cluster.oidc_issuer_url
        # On an existing cluster nothing is created in Azure before its checks pass (ExistingAksCluster's:
        # the issuer and workload identity, the pools); a new cluster's identities are made while AKS
        # makes the cluster.
        group: pulumi.Output[Any] = (
            pulumi.Output.all(cluster.resource_group_name, cluster.verified).apply(lambda parts: parts[0])
            if existing
            else cluster.resource_group_name
        )
        cluster_name = aks_cluster_name(config)
        client_ids: dict[str, pulumi.Output[str]] = {}
        self.identities: dict[str, dict[str, Any]] = {}
        for team in identity_teams(config):
            assert team.identity is not None
            identity = managedidentity.UserAssignedIdentity(
                f"{name}-{team.name}",
                resource_name_=team_identity_name(cluster_name, team.name),
                resource_group_name=group,
                location=config.location,
                opts=pulumi.ResourceOptions(parent=self),
            )
            after_identity = pulumi.ResourceOptions(parent=self, depends_on=[identity])
            managedidentity.FederatedIdentityCredential(
                f"{name}-{team.name}-federation",
                resource_name_=team_identity_name(cluster_name, team.name),
                federated_identity_credential_resource_name=federated_credential_name(cluster_name),
                resource_group_name=group,
                issuer=issuer,
                subject=subject(team.name),
                audiences=[TOKEN_AUDIENCE],
                opts=after_identity,
            )
            for role in team.identity.roles:
                # The role and the scope in the name: adding or removing one touches no other.
                authorization.RoleAssignment(
                    f"{name}-{team.name}-{role.definition}-{_scope_digest(role.scope)}",
                    scope=role.scope,
                    principal_id=identity.principal_id,
                    # Stated, so Azure does not look the new identity up in Entra ID, where it may
                    # not have replicated yet (PrincipalNotFound).
                    principal_type="ServicePrincipal",
                    role_definition_id=role_definition(role.subscription, role.definition),
                    description=f"kueue-aks: the jobs of team {team.name} (kueue-aks:teams[].identity)",
                    opts=after_identity,
                )
            client_ids[team.name] = identity.client_id
            self.identities[team.name] = {
                "clientId": identity.client_id,
                "principalId": identity.principal_id,
                "namespace": team.name,
                "serviceAccount": SERVICE_ACCOUNT,
            }
        # The ServiceAccounts with their identity's client ID, and the members' role to read them.
        self.resources = object_resources(
            name, with_client_ids(part.objects, client_ids), pulumi.ResourceOptions(parent=self, depends_on=list(after))
        )
        # What a team's jobs run as in Azure: client ID (no secret), principal, ServiceAccount.
        self.exports = {"teamIdentities": self.identities}
        self.register_outputs({"identities": self.identities})
