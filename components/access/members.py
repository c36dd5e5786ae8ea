"""What a team's members may do, as plain RBAC objects (pure; no Pulumi import).

A member group gets, in its team's namespace only:
- Kueue's own batch-user ClusterRole (`<release>-batch-user-role`, aggregated by Kueue's chart from
  its per-kind editor roles): create, watch and delete every job kind Kueue integrates, read the
  namespace's Workloads and LocalQueues, and list a LocalQueue's pending workloads through the
  visibility API (`localqueues/pendingworkloads`);
- `kueue-aks-team-member`: read the pods the jobs start, their logs and the events that say why
  they wait.
Cluster-wide, read-only, what tells a member about capacity: ClusterQueues (their quotas and
usage), ResourceFlavors, Cohorts, Topologies and WorkloadPriorityClasses; and the pending
workloads of the team's own ClusterQueues (`kueue-aks-pending-workloads-<team>`, by name: every
ClusterQueue holds one team's jobs), which `kubectl kueue list workload` reads for a job's place.

Nothing else: no pods of their own (a pod is created by a job Kueue admitted), no Secrets, no
namespaces, nodes or priority classes, no Kueue or operator configuration, and no other team's
namespace. Kueue's aggregated role is guarded against re-creation (kueue/policies.py), and no
other ClusterRole the stack makes carries its aggregation label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.stack import StackConfig
from ..k8s.meta import object_meta
from ..k8s.resources import human_amount
from ..kueue.objects import QueueSet
from ..kueue.policies import BATCH_USER_ROLE

MEMBER_ROLE = "kueue-aks-team-member"
CAPACITY_VIEWER_ROLE = "kueue-aks-capacity-viewer"
# The RoleBindings in each team namespace and the one ClusterRoleBinding, named for what they grant.
BATCH_USER_BINDING = "kueue-aks-batch-users"
MEMBER_BINDING = "kueue-aks-team-members"
CAPACITY_VIEWER_BINDING = "kueue-aks-capacity-viewers"
PENDING_WORKLOADS_PREFIX = "kueue-aks-pending-workloads-"  # + team: ClusterRole and ClusterRoleBinding
RBAC_API = "rbac.authorization.k8s.io/v1"
READ = ["get", "list", "watch"]


def member_groups(config: StackConfig) -> list[str]:
    """Every member group of every team, once each, sorted: a group in two teams is one subject."""
    return sorted({g for t in config.teams for g in t.members})


def _subjects(groups: list[str] | tuple[str, ...]) -> list[dict[str, str]]:
    return [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g} for g in groups]


def cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": object_meta(name), "rules": rules}


def member_role() -> dict[str, Any]:
    return cluster_role(
        MEMBER_ROLE,
        [
            {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": READ},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": READ},
        ],
    )


def capacity_viewer_role() -> dict[str, Any]:
    return cluster_role(
        CAPACITY_VIEWER_ROLE,
        [
            {
                "apiGroups": ["kueue.x-k8s.io"],
                "resources": ["clusterqueues", "resourceflavors", "cohorts", "topologies", "workloadpriorityclasses"],
                "verbs": READ,
            },
        ],
    )


def binding(
    kind: str, name: str, namespace: str | None, role: str, groups: list[str] | tuple[str, ...]
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": object_meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": _subjects(groups),
    }


def pending_workloads_role(team: str, cluster_queues: list[str]) -> dict[str, Any]:
    """Read the pending workloads of the team's ClusterQueues, and of no other."""
    return cluster_role(
        PENDING_WORKLOADS_PREFIX + team,
        [
            {
                "apiGroups": ["visibility.kueue.x-k8s.io"],
                "resources": ["clusterqueues/pendingworkloads"],
                "resourceNames": cluster_queues,
                "verbs": ["get"],
            }
        ],
    )


def access_objects(
    config: StackConfig, local_queues: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The RBAC objects, in apply order (each role before its bindings); none when no team has
    members. `local_queues`: the QueueSet's team -> LocalQueue -> {"clusterQueue": ...}."""
    groups = member_groups(config)
    if not groups:
        return []
    objects = [
        member_role(),
        capacity_viewer_role(),
        binding("ClusterRoleBinding", CAPACITY_VIEWER_BINDING, None, CAPACITY_VIEWER_ROLE, groups),
    ]
    for team in config.teams:
        if team.members:
            objects.append(binding("RoleBinding", BATCH_USER_BINDING, team.name, BATCH_USER_ROLE, team.members))
            objects.append(binding("RoleBinding", MEMBER_BINDING, team.name, MEMBER_ROLE, team.members))
            queues = sorted({q["clusterQueue"] for q in local_queues.get(team.name, {}).values()})
            objects.append(pending_workloads_role(team.name, queues))
            objects.append(
                binding(
                    "ClusterRoleBinding",
                    PENDING_WORKLOADS_PREFIX + team.name,
                    None,
                    PENDING_WORKLOADS_PREFIX + team.name,
                    team.members,
                )
            )
    return objects


@dataclass(frozen=True)
class TeamSummary:
    """Who can submit where: a team's namespace, its LocalQueues, its quota and its member groups."""

    team: str
    local_queues: tuple[str, ...]
    quota: dict[str, dict[str, str]]  # flavor -> resource -> nominal quota as people read it, "14 vCPU"
    members: tuple[str, ...]

    def as_output(self) -> dict[str, Any]:
        return {
            "namespace": self.team,
            "localQueues": list(self.local_queues),
            "quota": self.quota,
            "members": list(self.members),
        }


def team_access(config: StackConfig, queues: QueueSet) -> list[TeamSummary]:
    """Per team, from the QueueSet the stack applies (a MultiKueue manager's is built from its workers)."""
    out = []
    for team in config.teams:
        quota: dict[str, dict[str, str]] = {}
        for row in queues.rows:
            if team.name in row.teams and row.capacity:  # not "0 GPU" for every CPU pool
                quota.setdefault(row.flavor, {})[row.resource] = human_amount(row.resource, row.teams[team.name])
        out.append(TeamSummary(team.name, tuple(queues.local_queues.get(team.name, {})), quota, team.members))
    return out
