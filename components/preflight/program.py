"""The preflight as the program runs it: at preview and at up, before any resource."""

from __future__ import annotations

import pulumi
from pulumi_azure_native import authorization

from ..cluster.tags import stack_tag
from ..config.stack import StackConfig
from ..k8s.reader import ReadError
from . import incluster
from .arm import SKIP, ArmClient, PreflightError, ProviderToken
from .check import PreflightFailed, decide, read
from .quota import capacity_markdown


def preflight(config: StackConfig) -> StackConfig:
    """The config to build from: as given, or with Kueue's quotas clamped to Azure's vCPU quota.

    Raises one pulumi.RunError, listing every problem, when Azure cannot give the pools, when the
    cluster's AKS extensions clash with what the stack installs, or when Azure cannot be read.
    """
    if config.cluster.mode == "kubeconfig":
        # No Azure: the cluster's nodes are someone else's to count, but its Kueue is read.
        _in_cluster(config)
        return config
    if not config.preflight.enabled:
        pulumi.log.warn(
            "preflight skipped (kueue-aks:preflight.enabled is false): nothing checked that the "
            "subscription's vCPU quota and the region's VM sizes can hold the pools at maxCount, nor "
            "that the cluster's AKS extensions (managed Kueue, KubeRay) leave room for what the stack "
            "installs"
        )
        return config
    client = authorization.get_client_config()
    # The provider's token for the identity that deploys; it is never logged or exported.
    token = authorization.get_client_token()
    api = ArmClient(
        ProviderToken(token.token), client.subscription_id, pulumi.Config("azure-native").get("environment")
    )
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


def _in_cluster(config: StackConfig) -> None:
    """Kubeconfig mode: the Kueue the cluster already runs must leave room for the stack's
    (incluster.py); raises one pulumi.RunError otherwise, or when the cluster cannot be read."""
    if not config.preflight.enabled:
        pulumi.log.warn(
            "preflight skipped (kueue-aks:preflight.enabled is false): nothing checked that the cluster "
            "has no Kueue of AKS's managed extension beside the stack's (or, with kueue.install: "
            "aksExtension, that it has one and its controller runs)"
        )
        return
    try:
        found = incluster.check(config)
    except ReadError as err:
        raise pulumi.RunError(f"preflight: {err}; {SKIP}") from None
    if found:
        raise pulumi.RunError(str(PreflightFailed(found)))
