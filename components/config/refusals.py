"""What the config refuses beyond each key's own type, bounds and pattern (keys.py), and why: one
entry per rule with an example that is refused at the key it names. docs/config-refusals.md is
generated from these entries and tests/config/test_refusals.py parses every example, so the page
cannot claim a refusal the parser does not make.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The smallest valid stack; each example changes top-level keys of it.
MINIMAL: Mapping[str, Any] = {
    "nodePools": [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2}],
    "teams": [{"name": "research", "share": 100}],
}


@dataclass(frozen=True)
class Refusal:
    path: str  # the key path the refusal names
    rule: str  # what is refused
    why: str  # what would happen otherwise
    example: Mapping[str, Any] = field(default_factory=dict)  # top-level keys replacing MINIMAL's
    other_keys: tuple[str, ...] = ()  # keys in other namespaces


def _team(**fields: Any) -> dict[str, Any]:
    return {"teams": [{"name": "research", "share": 100, **fields}]}


def _pool(**fields: Any) -> dict[str, Any]:
    return {"nodePools": [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, **fields}]}


_ACCOUNT = (
    "/subscriptions/00000000-0000-0000-0000-00000000000a/resourceGroups/data/providers/Microsoft.Storage/"
    "storageAccounts/researchdata"
)


def _roles(*roles: str) -> dict[str, Any]:
    return _team(identity={"roles": [{"role": role, "scope": _ACCOUNT} for role in roles]})


_SUBNET = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/Microsoft.Network/"
    "virtualNetworks/spoke/subnets/aks"
)

REFUSALS: tuple[Refusal, ...] = (
    Refusal(
        "kueue-aks:teams[0].share",
        "a key given with no value (`share:`)",
        "an empty value used to mean 'absent', so the team, pool or class was left out without a word",
        {"teams": [{"name": "research", "share": None}]},
    ),
    Refusal(
        "kueue-aks:teams",
        "a section given with no value (`kueue-aks:teams:`)",
        "the Pulumi CLI hands the program an empty string, the plan read nothing: either way no default applies",
        {"teams": None},
    ),
    Refusal(
        "kueue-aks:teams[0].name",
        "a string ending in a line break (a YAML `|` block keeps it)",
        "the name passes a check that matches only up to the line break, and Kubernetes refuses it at `pulumi up`, "
        "after the AKS cluster exists",
        {"teams": [{"name": "research\n", "share": 100}]},
    ),
    Refusal(
        "kueue-aks:nodePools[0].name",
        "invisible characters: control, zero-width, bidirectional and other format characters",
        "two names that look alike would be two pools, namespaces or queues",
        _pool(name="cpu\u200b"),
    ),
    Refusal(
        "kueue-aks:teams[0].share",
        "a share with more than 10 decimal places, below 0.01 or not a number (.nan, .inf)",
        "a quota is a Kubernetes quantity: finer shares round to nothing",
        _team(share=1e-9),
    ),
    Refusal(
        "kueue-aks:nodePools[0].spot",
        "yes, no, on, off or a quoted word where true or false belongs",
        "the Pulumi CLI reads YAML 1.2, where `yes` is the text 'yes', not a boolean",
        _pool(spot="yes"),
    ),
    Refusal(
        "kueue-aks:cluster.zones[0]",
        "a zone written as a number",
        "AKS takes zones as strings; the message says to quote them",
        {"cluster": {"zones": [1, 2]}},
    ),
    Refusal(
        "kueue-aks:teams[0].name",
        "a team named after a job operator's namespace (kubeflow, kuberay-system, jobset-system, …)",
        "the team's namespace would be the operator's: its labels and members' RoleBindings land there, and "
        "removing the team deletes the operator's namespace",
        {"teams": [{"name": "kubeflow", "share": 100}]},
    ),
    Refusal(
        "kueue-aks:nodePools[0].taints[0]",
        "a pool taint on the governance taint's key (kueue-aks.io/queued) or AKS's spot taint's key with another value",
        "a node cannot carry two taints of one key and effect: Kubernetes refuses the node",
        _pool(taints=["kueue-aks.io/queued=false:NoSchedule"]),
    ),
    Refusal(
        "kueue-aks:nodePools[0].labels.kubernetes.io/role",
        "a node label in the kubernetes.io or k8s.io namespaces other than kubelet's own",
        "kubelet refuses such labels, so the pool's nodes would not join",
        _pool(labels={"kubernetes.io/role": "batch"}),
    ),
    Refusal(
        "kueue-aks:teams[0].members[1]",
        "one Entra ID group listed twice, in any case",
        "Azure compares object IDs without case: the second role assignment for one principal is refused at `up`",
        _team(members=["0a1b2c3d-0000-4000-8000-00000000000a", "0A1B2C3D-0000-4000-8000-00000000000A"]),
    ),
    Refusal(
        "kueue-aks:nodePools[0].capacity.nvidia.com/gpu",
        "GPUs in the capacity of a CPU size the catalog knows",
        "Kueue would admit GPU jobs to nodes that have no GPU",
        _pool(capacity={"nvidia.com/gpu": 1}),
    ),
    Refusal(
        "kueue-aks:nodePools[0].capacity.cpu",
        "per-node capacity beyond any Azure VM (more than 4096 vCPUs or 64 TiB)",
        "teams would get quotas no node can hold",
        _pool(vmSize="Standard_X1", capacity={"cpu": "100000000000000000000", "memory": "64Gi"}),
    ),
    Refusal(
        "kueue-aks:cluster.kubernetesVersion",
        "a Kubernetes version newer than any released",
        "AKS refuses it only after the resource group exists",
        {"cluster": {"kubernetesVersion": "1.99"}},
    ),
    Refusal(
        "kueue-ask:cluster",
        "a key in a namespace that is a near miss of kueue-aks (kueue-ask:, Kueue-aks:, kueue:)",
        "its settings would be ignored: a misspelled `disableLocalAccounts: true` left local accounts on",
        other_keys=("kueue-ask:cluster",),
    ),
    Refusal(
        "kueue-aks:kueue.chart",
        "a chart or image URL with a user name or password in it",
        "the password would be printed by the plan, written to the manifests folder and stored in plain text in "
        "the Pulumi state; give registry credentials as Pulumi secrets instead (docs/registries.md)",
        {"kueue": {"chart": "https://user:token@charts.example.com/kueue"}},
    ),
    Refusal(
        "kueue-aks:cluster.kubeconfig",
        "a kubeconfig with a token, password or client key in plain text",
        "the credential would sit in the repository; set it with pulumi config set --secret, or use a "
        "kubeconfig whose users sign in by exec (kubelogin), which holds none",
        {
            "cluster": {
                "kubeconfig": "clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
                "users: [{name: u, user: {token: not-a-real-token}}]\n"
            }
        },
    ),
    Refusal(
        "kueue-aks:registryCredentials[0].password",
        "a registry password in plain text",
        "it would sit in the repository; set it with pulumi config set --secret --path",
        {
            "kueue": {"chart": "oci://myregistry.azurecr.io/helm/kueue"},
            "registryCredentials": [{"registry": "myregistry.azurecr.io", "username": "ci", "password": "hunter2"}],
        },
    ),
    Refusal(
        "kueue-aks:registryCredentials[0].registry",
        "a registry sign-in for a registry no chart comes from",
        "a misspelt host: the chart would be pulled without the sign-in",
        {
            "registryCredentials": [
                {"registry": "myregistry.azurecr.io", "username": "ci", "password": {"secure": "v1:x"}}
            ]
        },
    ),
    Refusal(
        "kueue-aks:teams[0].identity.roles[0].role",
        "a role name that is not one of the built-in roles the program knows (the message names the nearest)",
        "a misspelt role would reach `pulumi up` and fail there; any other role is given by its definition ID",
        _roles("Storage Blob Data Readr"),
    ),
    Refusal(
        "kueue-aks:teams[0].identity.roles[0].role",
        "Owner, Contributor, User Access Administrator or Role Based Access Control Administrator, by name or ID",
        "every job of the team would hold it: any member could take over the scope, or grant themselves anything",
        _roles("Contributor"),
    ),
    Refusal(
        "kueue-aks:teams[0].identity.roles[1]",
        "one role at one scope listed twice, by name and ID or in another case",
        "Azure refuses a second assignment of a role to one identity at one scope (RoleAssignmentExists) at `up`",
        _roles("Storage Blob Data Reader", "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"),
    ),
    Refusal(
        "kueue-aks:teams[0].identity",
        "a team identity with cluster.kubeconfig",
        "the stack makes nothing in Azure then: there is no OIDC issuer of the cluster's an identity could trust",
        {"cluster": {"kubeconfig": {"secure": "v1:x"}}, **_roles("Storage Blob Data Reader")},
    ),
    Refusal(
        "kueue-aks:teams[0].identity",
        "a team identity on a MultiKueue manager",
        "the manager runs no team jobs; they run on the workers, whose stacks give the team its identity",
        {"multiKueue": {"role": "manager"}, **_roles("Storage Blob Data Reader")},
    ),
    Refusal(
        "kueue-aks:cluster.network.outboundType",
        "userDefinedRouting or userAssignedNATGateway without a subnet; managedNATGateway with one",
        "the egress of the first two is the subnet's route table or NAT gateway; AKS's managed NAT gateway works "
        "only in a VNet AKS makes (learn.microsoft.com/azure/aks/egress-outboundtype, /aks/nat-gateway)",
        {"cluster": {"network": {"outboundType": "userDefinedRouting"}}},
    ),
    Refusal(
        "kueue-aks:cluster.network.dnsServiceIp",
        "a DNS service address outside serviceCidr or on its first address; a service range without one",
        "AKS refuses it (REST spec: dnsServiceIP must be within serviceCidr; .1 is the kubernetes Service's)",
        {"cluster": {"network": {"serviceCidr": "10.1.0.0/16", "dnsServiceIp": "10.0.0.10"}}},
    ),
    Refusal(
        "kueue-aks:cluster.network.serviceCidr",
        "a service range that overlaps the pods' or one AKS reserves (169.254.0.0/16, 172.30.0.0/16, ...)",
        "the cluster's routing breaks or AKS refuses it (learn.microsoft.com/azure/aks/configure-azure-cni)",
        {"cluster": {"network": {"serviceCidr": "10.244.0.0/20", "dnsServiceIp": "10.244.0.10"}}},
    ),
    Refusal(
        "kueue-aks:cluster.apiServer.authorizedIpRanges",
        "authorized IP ranges on a private cluster",
        "AKS cannot combine them (learn.microsoft.com/azure/aks/api-server-authorized-ip-ranges)",
        {"cluster": {"apiServer": {"private": True, "authorizedIpRanges": ["203.0.113.0/24"]}}},
    ),
    Refusal(
        "kueue-aks:nodePools[0].subnetId",
        "a pool's subnet without the cluster's, or in another VNet",
        "a cluster's pools are all in a VNet AKS makes or all in subnets of one VNet of yours",
        {
            "nodePools": [
                {
                    "name": "cpu",
                    "vmSize": "Standard_D16s_v5",
                    "maxCount": 2,
                    "subnetId": _SUBNET,
                }
            ]
        },
    ),
)
