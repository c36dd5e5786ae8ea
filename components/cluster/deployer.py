"""The deploying identity as the cluster's admin (kueue-aks:cluster.deployerAdmin), pure.

A cluster this stack creates uses managed Entra ID with Azure RBAC for Kubernetes authorization.
There, Owner and Contributor carry no data actions, so whoever ran `pulumi up` cannot use the
cluster until an Azure role says so (learn.microsoft.com/azure/aks/manage-azure-rbac; the error:
Azure/AKS issue 2803). The stack therefore gives the deploying identity "Azure Kubernetes Service
RBAC Cluster Admin" on the cluster, as EKS gives a cluster's creator admin and Azure's
AKS-Construction templates assign this role to the current user.

Azure refuses a role assignment whose principalType is not the principal's own, and the SDK calls
a principal without one a User. The type comes from the provider's access token: a delegated
token (a person's `az login`) carries `scp`, an app-only token (a service principal, CI's OIDC
login, a managed identity, all "ServicePrincipal" to Azure RBAC) does not, and `idtyp` says it
outright when present (learn.microsoft.com/entra/identity-platform/access-token-claims-reference).

Role assignments take up to five minutes to reach the API server (the AKS docs' own warning). With
local accounts off, the program itself comes in as the deploying identity, so the Kubernetes
provider's kubeconfig waits in `wait_for_access` until the API server lets it read, with a deadline.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..facts.built_in_roles import STACK_ROLES
from ..k8s.reader import ClusterReader, ReadError

# "Azure Kubernetes Service RBAC Cluster Admin": every data action in the cluster.
CLUSTER_ADMIN_ROLE = STACK_ROLES["Azure Kubernetes Service RBAC Cluster Admin"]
# Up to five minutes to propagate, per the AKS docs; twice that before the program gives up.
ACCESS_DEADLINE = 600.0
ACCESS_POLL = 10.0
# Every cluster has it, and reading it needs a cluster-scope grant: allowed only once a role holds.
ACCESS_PROBE = "/api/v1/namespaces/kube-system"
# Other failures (a network blip, kubelogin's token endpoint) are tried again this many times in a row.
_OTHER_FAILURES = 3


class DeployerError(Exception):
    """The deploying identity's type cannot be told, or it cannot reach the cluster in time."""


def token_claims(token: str) -> dict[str, Any] | None:
    """The claims of a JWT access token (its signature is Azure's business, not checked), or None."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        return None
    return claims if isinstance(claims, dict) else None


def principal_type(token: str) -> str:
    """User or ServicePrincipal, from the claims of the provider's access token (never logged)."""
    claims = token_claims(token)
    if claims is None:
        raise DeployerError(
            "kueue-aks:cluster.deployerAdmin: the provider's Azure access token is not a JWT, so the program cannot "
            "tell whether the deploying identity is a user or a service principal; set cluster.deployerAdmin: false "
            "and grant yourself 'Azure Kubernetes Service RBAC Cluster Admin' on the cluster, or list your group in "
            "cluster.adminGroupObjectIds"
        )
    kind = claims.get("idtyp")
    if kind in ("user", "app"):
        return "User" if kind == "user" else "ServicePrincipal"
    return "User" if claims.get("scp") else "ServicePrincipal"


class _Reader(Protocol):
    def get(self, path: str) -> dict[str, Any] | None: ...
    def close(self) -> None: ...


def wait_for_access(
    kubeconfig: str,
    *,
    what_to_check: str,
    deadline: float = ACCESS_DEADLINE,
    poll: float = ACCESS_POLL,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    connect: Callable[[str], _Reader] | None = None,
) -> str:
    """Return `kubeconfig` once its user may read the cluster; raise DeployerError at the deadline.

    A 401 or 403 means the role has not reached the API server yet: wait. Anything else is tried
    again a few times, then reported (a missing kubelogin does not wait ten minutes).
    """
    start = clock()
    other_failures = 0
    reader = (connect or ClusterReader.from_kubeconfig)(kubeconfig)
    try:
        while True:
            try:
                reader.get(ACCESS_PROBE)
                return kubeconfig
            except ReadError as err:
                last = str(err)
                if err.status in (401, 403):
                    other_failures = 0
                else:
                    other_failures += 1
                    if other_failures >= _OTHER_FAILURES:
                        raise DeployerError(
                            f"the program cannot reach the cluster as the deploying identity: {last}. {what_to_check}"
                        ) from None
            waited = clock() - start
            if waited >= deadline:
                raise DeployerError(
                    f"the deploying identity still may not read the cluster after {waited / 60:.0f} "
                    f"minutes (last answer: {last}). {what_to_check}"
                )
            sleep(min(poll, max(deadline - waited, 0.0)))
    finally:
        reader.close()
