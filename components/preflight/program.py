"""The preflight as the program runs it: at preview and at up, before any resource."""

from __future__ import annotations

import pulumi
from pulumi_azure_native import authorization

from ..cluster.tags import stack_tag
from ..config import StackConfig
from .arm import ArmClient, PreflightError, ProviderToken
from .check import PreflightFailed, decide, read
from .quota import capacity_markdown


def preflight(config: StackConfig) -> StackConfig:
    """The config to build from: as given, or with Kueue's quotas clamped to Azure's vCPU quota.

    Raises one pulumi.RunError when Azure cannot give the pools or cannot be read.
    """
    if config.cluster.mode == "kubeconfig":
        return config  # no Azure: the cluster's nodes are someone else's to count
    if not config.preflight.enabled:
        pulumi.log.warn("preflight skipped (kueue-aks:preflight.enabled is false): nothing checked that the "
                        "subscription's vCPU quota and the region's VM sizes can hold the pools at maxCount")
        return config
    client = authorization.get_client_config()
    # The provider's token for the identity that deploys; it is never logged or exported.
    token = authorization.get_client_token()
    api = ArmClient(ProviderToken(token.token), client.subscription_id, pulumi.Config("azure-native").get("environment"))
    try:
        assessment = read(config, api, stack_tag())
    except PreflightError as err:
        raise pulumi.RunError(f"preflight: {err}") from None
    if assessment.rows:
        pulumi.log.info(capacity_markdown(assessment))
    try:
        built, notes = decide(config, assessment)
    except PreflightFailed as err:
        raise pulumi.RunError(str(err)) from None
    for note in notes:
        pulumi.log.warn(note)
    return built
