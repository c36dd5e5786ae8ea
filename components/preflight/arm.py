"""The one client the preflight reads Azure with: Azure Resource Manager's REST API through
azure-core's pipeline.

Why azure-core and not the generated azure-mgmt-compute: four GET calls need no 100 MB SDK, and
azure-core is the pipeline that SDK itself runs on (Microsoft's, kept current): bearer tokens,
retries that honour Retry-After on 429 and 5xx, and timeouts, the parts worth not writing again.
The token is the azure-native provider's own (`authorization.getClientToken`), so the check reads
Azure as the identity that deploys, however that identity logs in (CLI, service principal, OIDC,
managed identity). The plan command, which runs without Pulumi, takes azure-identity's
DefaultAzureCredential instead.

Roles: the deploying identity needs `Microsoft.Compute/locations/usages/read`,
`Microsoft.Compute/skus/read` and `Microsoft.ContainerService/managedClusters/read` on the
subscription, and `Microsoft.KubernetesConfiguration/extensions/read` on the cluster: Reader has
them (docs/preflight.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from azure.core import PipelineClient
from azure.core.credentials import AccessToken, TokenCredential
from azure.core.exceptions import AzureError, ClientAuthenticationError, ServiceRequestError, ServiceResponseError
from azure.core.pipeline.policies import BearerTokenCredentialPolicy, HeadersPolicy, RetryPolicy, UserAgentPolicy
from azure.core.rest import HttpRequest

from ..cluster.deployer import token_claims

# azure-native's `environment` setting -> Resource Manager endpoint (learn.microsoft.com/azure/
# azure-government/compare-azure-government-global-azure; .../china/resources-developer-guide).
ARM_ENDPOINTS = {
    "public": "https://management.azure.com",
    "usgovernment": "https://management.usgovcloudapi.net",
    "china": "https://management.chinacloudapi.cn",
}
# Another endpoint (a proxy, or a test server): the only way to point the check elsewhere.
ENDPOINT_ENV = "KUEUE_AKS_ARM_ENDPOINT"
USAGES_API = "2024-07-01"
SKUS_API = "2021-07-01"
CLUSTERS_API = "2024-09-01"
# Extensions - List (Microsoft.KubernetesConfiguration; Azure/azure-rest-api-specs
# specification/kubernetesconfiguration/…/extensions/stable/2025-03-01/extensions.json).
EXTENSIONS_API = "2025-03-01"
# What each read needs; a 401/403 names the one that was refused (the Reader role has them all).
USAGES_READ = "Microsoft.Compute/locations/usages/read"
SKUS_READ = "Microsoft.Compute/skus/read"
CLUSTERS_READ = "Microsoft.ContainerService/managedClusters/read"
EXTENSIONS_READ = "Microsoft.KubernetesConfiguration/extensions/read"
PERMISSIONS = (USAGES_READ, SKUS_READ, CLUSTERS_READ, EXTENSIONS_READ)
TIMEOUT_SECONDS = 30
RETRIES = 3
SKIP = (
    "set kueue-aks:preflight.enabled: false to skip the check "
    "(pulumi config set --path kueue-aks:preflight.enabled false)"
)


def cli_subscription(environ: Mapping[str, str] = os.environ) -> str | None:
    """The Azure CLI's default subscription after `az login` (`az account show`'s), read from its
    profile: $AZURE_CONFIG_DIR/azureProfile.json, else ~/.azure/azureProfile.json, which the CLI
    writes with a byte order mark. None when there is no such file or default."""
    folder = Path(environ.get("AZURE_CONFIG_DIR") or Path(environ.get("HOME") or Path.home()) / ".azure")
    try:
        profile = json.loads((folder / "azureProfile.json").read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    subscriptions = profile.get("subscriptions") if isinstance(profile, dict) else None
    for entry in subscriptions if isinstance(subscriptions, list) else []:
        if isinstance(entry, dict) and entry.get("isDefault") is True and isinstance(entry.get("id"), str):
            return str(entry["id"])
    return None


class PreflightError(Exception):
    """Azure could not be read; the message says why and how to skip the check."""


class ComputeApi(Protocol):
    """What the preflight reads; ArmClient reads it from Azure."""

    subscription: str

    def usages(self, location: str) -> list[dict[str, Any]]: ...

    def skus(self, location: str) -> list[dict[str, Any]]: ...

    def managed_clusters(self) -> list[dict[str, Any]]: ...

    def managed_cluster(self, resource_group: str, name: str) -> dict[str, Any] | None: ...

    def extensions(self, resource_group: str, cluster: str) -> list[dict[str, Any]]: ...


class ProviderToken:
    """A token that the azure-native provider issued, as an azure-core credential."""

    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(self._token, _expiry(self._token))


def _expiry(token: str) -> int:
    """The JWT's `exp`; tokens that are not JWTs are used for five minutes (the check takes seconds)."""
    try:
        return int((token_claims(token) or {})["exp"])
    except (KeyError, ValueError, TypeError):
        return int(time.time()) + 300


class ArmClient:
    def __init__(
        self,
        credential: TokenCredential,
        subscription: str,
        environment: str | None = None,
        *,
        retries: int = RETRIES,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        audience = ARM_ENDPOINTS.get((environment or "public").lower(), ARM_ENDPOINTS["public"])
        self.base_url = (os.environ.get(ENDPOINT_ENV) or audience).rstrip("/")
        self.subscription, self.timeout, self.retries = subscription, timeout, retries
        scope = f"{audience}/.default"
        self._client: PipelineClient[Any, Any] = PipelineClient(
            self.base_url,
            policies=[
                HeadersPolicy({"Accept": "application/json"}),
                UserAgentPolicy("kueue-aks-preflight"),
                RetryPolicy(retry_total=retries, retry_backoff_factor=1.0, retry_backoff_max=30, timeout=4 * timeout),
                BearerTokenCredentialPolicy(credential, scope),
            ],
        )

    def _get(self, url: str, params: Mapping[str, str] | None, what: str, permission: str) -> dict[str, Any]:
        try:
            response = self._client.send_request(
                HttpRequest("GET", url, params=dict(params or {})),
                connection_timeout=self.timeout,
                read_timeout=self.timeout,
            )
        except ClientAuthenticationError:
            # No credential could get a token (azure-identity lists every one it tried, a dozen lines
            # that bury the one thing to do); the provider's own token never fails here.
            raise PreflightError(
                "not signed in to Azure: run `az login` (or give a service principal's or workload "
                f"identity's AZURE_CLIENT_ID and AZURE_TENANT_ID); or {SKIP}"
            ) from None
        except (ServiceRequestError, ServiceResponseError) as err:
            raise PreflightError(
                f"Azure did not answer the {what} request within {self.timeout:g} s after "
                f"{self.retries} retries ({type(err).__name__}: {err}); run again later, or {SKIP}"
            ) from err
        except AzureError as err:
            raise PreflightError(f"the {what} request failed: {err}; {SKIP}") from err
        if response.status_code == 404:
            raise _NotFound(f"the {what} request found nothing (404)")
        if response.status_code != 200:
            code, detail = _error(response.text())
            message = _explain(
                response.status_code, response.headers, detail, what, permission, self.subscription, self.retries
            )
            raise (_Unregistered if code == "MissingSubscriptionRegistration" else PreflightError)(message)
        body: dict[str, Any] = response.json()
        return body

    def _pages(self, path: str, params: Mapping[str, str], what: str, permission: str) -> list[dict[str, Any]]:
        """Every item of a list, following nextLink (which carries its own query)."""
        body = self._get(f"{self.base_url}{path}", params, what, permission)
        items: list[dict[str, Any]] = list(body.get("value", []))
        while body.get("nextLink"):
            body = self._get(body["nextLink"], None, what, permission)
            items += body.get("value", [])
        return items

    def usages(self, location: str) -> list[dict[str, Any]]:
        return self._pages(
            f"/subscriptions/{self.subscription}/providers/Microsoft.Compute/locations/{location}/usages",
            {"api-version": USAGES_API},
            f"vCPU usage ({location})",
            USAGES_READ,
        )

    def skus(self, location: str) -> list[dict[str, Any]]:
        return self._pages(
            f"/subscriptions/{self.subscription}/providers/Microsoft.Compute/skus",
            {"api-version": SKUS_API, "$filter": f"location eq '{location}'"},
            f"VM sizes ({location})",
            SKUS_READ,
        )

    def managed_clusters(self) -> list[dict[str, Any]]:
        return self._pages(
            f"/subscriptions/{self.subscription}/providers/Microsoft.ContainerService/managedClusters",
            {"api-version": CLUSTERS_API},
            "AKS clusters",
            CLUSTERS_READ,
        )

    def managed_cluster(self, resource_group: str, name: str) -> dict[str, Any] | None:
        try:
            return self._get(
                f"{self.base_url}/subscriptions/{self.subscription}/resourceGroups/{resource_group}/"
                f"providers/Microsoft.ContainerService/managedClusters/{name}",
                {"api-version": CLUSTERS_API},
                f"AKS cluster {resource_group}/{name}",
                CLUSTERS_READ,
            )
        except _NotFound:
            return None

    def extensions(self, resource_group: str, cluster: str) -> list[dict[str, Any]]:
        """The cluster's extensions (Extensions - List); none when Azure has none to list: a 404,
        or a subscription not registered for Microsoft.KubernetesConfiguration, where no extension
        can exist."""
        try:
            return self._pages(
                f"/subscriptions/{self.subscription}/resourceGroups/{resource_group}/providers/"
                f"Microsoft.ContainerService/managedClusters/{cluster}/providers/"
                "Microsoft.KubernetesConfiguration/extensions",
                {"api-version": EXTENSIONS_API},
                f"extensions of AKS cluster {resource_group}/{cluster}",
                EXTENSIONS_READ,
            )
        except (_NotFound, _Unregistered):
            return []


class _NotFound(PreflightError):
    pass


class _Unregistered(PreflightError):
    """The subscription is not registered for the resource provider read (ARM's MissingSubscriptionRegistration)."""


def _error(text: str) -> tuple[str, str]:
    """ARM's error code and `code: message` (or the body's start when it is not ARM's error JSON)."""
    try:
        error = json.loads(text).get("error", {})
        code = str(error.get("code", ""))
        return code, f"{code}: {error.get('message', '')}".strip(": ")
    except (ValueError, AttributeError):
        return "", text[:200]


def _explain(
    status: int, headers: Mapping[str, str], detail: str, what: str, permission: str, subscription: str, retries: int
) -> str:
    if status in (401, 403):
        others = ", ".join(p for p in PERMISSIONS if p != permission)
        return (
            f"the identity that deploys cannot read {what} in subscription {subscription} (HTTP {status} "
            f"{detail}); this read needs {permission} (the preflight's other reads need {others}; the "
            f"Reader role has them all); grant it, or {SKIP}"
        )
    if status == 429:
        after = headers.get("Retry-After", "?")
        return (
            f"Azure throttled the {what} request (HTTP 429) after {retries} retries; it asks to wait "
            f"{after} s; run again later, or {SKIP}"
        )
    return f"the {what} request failed with HTTP {status} ({detail}); {SKIP}"
