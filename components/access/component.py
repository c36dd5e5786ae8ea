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
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi_azure_native import authorization

from ..cluster.component import role_definition
from ..config.stack import StackConfig
from ..k8s.manifest import ObjectResource
from ..k8s.part import Part
from ..kueue.objects import QueueSet
from .members import member_groups, team_access

CLUSTER_USER_ROLE = "4abbcc35-e782-43d8-92c5-2d3f1bd2253f"


class TeamAccess(pulumi.ComponentResource):
    """Team members into their own namespace and queues (kueue-aks:teams[].members; docs/batch-users.md).

    `cluster_id` is the AKS cluster's resource ID (create and existing modes), None in kubeconfig
    mode, where only the RoleBindings are made. `after`: the team namespaces and Kueue's release,
    whose batch-user ClusterRole the RoleBindings name.
    """

    def __init__(
        self,
        name: str,
        config: StackConfig,
        queues: QueueSet,
        part: Part,
        *,
        cluster_id: pulumi.Input[str] | None,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kueue-aks:access:TeamAccess", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, depends_on=list(after))
        self.resources: list[pulumi.Resource] = [
            ObjectResource(
                f"{name}-{obj['kind'].lower()}-{obj['metadata'].get('namespace', 'cluster')}-{obj['metadata']['name']}",
                obj,
                in_cluster,
            )
            for obj in part.objects  # the members' RBAC objects (components/access/members.py)
        ]
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
        self.register_outputs({"teams": self.teams})
