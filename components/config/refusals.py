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
)
