"""A team's Azure identity for its data (kueue-aks:teams[].identity), as plain data (pure; no
Pulumi import).

Azure workload identity (learn.microsoft.com/azure/aks/workload-identity-overview) needs, per team:
- a user-assigned managed identity, `<cluster>-<team>` (facts/azure_names.py), holding each role of
  the config at its scope;
- a federated identity credential on it that trusts the cluster's OIDC issuer for the tokens of
  one ServiceAccount only: subject `system:serviceaccount:<team>:team-identity`, audience
  `api://AzureADTokenExchange`;
- that ServiceAccount in the team's namespace, annotated `azure.workload.identity/client-id` with
  the identity's client ID. A pod that runs as it and is labelled `azure.workload.identity/use:
  "true"` gets its projected token and AZURE_CLIENT_ID, AZURE_TENANT_ID,
  AZURE_FEDERATED_TOKEN_FILE and AZURE_AUTHORITY_HOST from AKS's webhook.

Who runs as it: whoever may create jobs in the namespace, the team's members (Kueue's batch-user
role, members.py) and the cluster's admins. Members of other teams have no rights in the namespace,
and no role the stack makes grants `serviceaccounts/token` or `impersonate`, so nobody mints its
token outside a pod. The team's members may read the ServiceAccount (to see its client ID), and
no other ServiceAccount.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..config.stack import StackConfig
from ..config.teams import Team, TeamRole
from ..facts.built_in_roles import role_name
from ..k8s.meta import object_meta
from .members import binding, cluster_role

SERVICE_ACCOUNT = "team-identity"
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
USE_LABEL = "azure.workload.identity/use"  # on the pods, "true"
TOKEN_AUDIENCE = "api://AzureADTokenExchange"
# What the plan's manifests show for the client ID, which Azure gives the identity at `pulumi up`.
CLIENT_ID_PLACEHOLDER = "<the client ID of the team's managed identity, set by pulumi up>"
READER_ROLE = "kueue-aks-team-identity-reader"  # a ClusterRole, bound in each team's namespace


def identity_teams(config: StackConfig) -> list[Team]:
    return [t for t in config.teams if t.identity]


def identity_roles(config: StackConfig) -> list[tuple[str, TeamRole]]:
    """Every role of every team identity with its team's name, in the config's order."""
    return [(t.name, r) for t in config.teams if t.identity for r in t.identity.roles]


def aks_cluster_name(config: StackConfig) -> str:
    """The AKS cluster's name: the one the stack creates, or the existing one."""
    existing = config.cluster.existing
    return existing.name if existing else config.cluster.name


def subject(team: str) -> str:
    """The subject of the ServiceAccount's tokens, which the federated credential trusts."""
    return f"system:serviceaccount:{team}:{SERVICE_ACCOUNT}"


def service_account(team: str, client_id: Any = CLIENT_ID_PLACEHOLDER) -> dict[str, Any]:
    meta = object_meta(SERVICE_ACCOUNT, team)
    meta["annotations"] = {CLIENT_ID_ANNOTATION: client_id}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def with_client_ids(objects: Sequence[dict[str, Any]], client_ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The objects with each team's ServiceAccount annotated with its identity's client ID (by
    team), which Azure gives at `pulumi up`; the other objects as they are."""
    filled = []
    for obj in objects:
        if obj["kind"] == "ServiceAccount":
            obj = copy.deepcopy(obj)
            obj["metadata"]["annotations"][CLIENT_ID_ANNOTATION] = client_ids[obj["metadata"]["namespace"]]
        filled.append(obj)
    return filled


def reader_role() -> dict[str, Any]:
    """Read the team's ServiceAccount (its client ID), by name: no other ServiceAccount, no token."""
    return cluster_role(
        READER_ROLE,
        [{"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": [SERVICE_ACCOUNT], "verbs": ["get"]}],
    )


def identity_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Each team identity's ServiceAccount, and the role that lets the team's members read it, in
    apply order (the role before its bindings); none when no team has an identity."""
    teams = identity_teams(config)
    objects = [service_account(t.name) for t in teams]
    readers = [t for t in teams if t.members]
    if readers:
        objects.append(reader_role())
        objects += [binding("RoleBinding", READER_ROLE, t.name, READER_ROLE, t.members) for t in readers]
    return objects


def role_text(role: TeamRole) -> str:
    return f"{role_name(role.definition)} on `{role.scope}`"


def _held(team: Team | None) -> dict[tuple[str, str], TeamRole]:
    """A team's roles by what Azure tells apart: the role and the scope, without case."""
    roles = team.identity.roles if team and team.identity else ()
    return {(r.definition, r.scope.lower()): r for r in roles}


def role_changes(before: StackConfig | None, after: StackConfig) -> list[str]:
    """What a reviewer must see of the team identities, a line each: an identity added or
    removed, and each role a team's jobs gain or lose at a scope."""
    was = {t.name: t for t in (before.teams if before else ())}
    now = {t.name: t for t in after.teams}
    lines = []
    for name in [*now, *(n for n in was if n not in now)]:
        old, new = was.get(name), now.get(name)
        if new and new.identity and not (old and old.identity):
            lines.append(f"**Team `{name}` gets an Azure identity** for its jobs (ServiceAccount `{SERVICE_ACCOUNT}`)")
        elif old and old.identity and not (new and new.identity):
            lines.append(f"**Team `{name}`'s Azure identity is removed**: jobs that run as it lose its roles")
        held, had = _held(new), _held(old)
        lines += [f"**{name} gains {role_text(r)}**" for key, r in held.items() if key not in had]
        lines += [f"**{name} loses {role_text(r)}**" for key, r in had.items() if key not in held]
    return lines
