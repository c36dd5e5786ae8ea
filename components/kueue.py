"""KueueInstallation: Kueue's namespace and pinned Helm release, and what Kueue objects wait for.

Webhook race (kueue.md §8; kubernetes-sigs/kueue#13036): Kueue's webhook can refuse or 502 for
10-30 s after the Deployment is Ready, and pulumi-kubernetes does not retry webhook errors
(pulumi-aks.md §8), so the first `pulumi up` would fail creating the first ResourceFlavor or
ClusterQueue. Chosen fix: an `on_error` resource hook that retries exactly those errors, a few
seconds apart and a bounded number of times. It needs no extra image, Job, RBAC or provider (a
readiness-gate resource would need all of them, in a namespace Kueue does not manage), it also
covers later updates, and a real rejection by Kueue's validating webhook still fails at once.
Hooks run in the engine only (not under mocks), so the retry decision is plain functions tested
offline. Requires Pulumi CLI and SDK >= 3.244 (pulumi-aks.md §1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .config import KUEUE_NAMESPACE, StackConfig
from .helm import namespaced_release
from .kueue_values import KUEUE_CHART, KUEUE_RELEASE_NAME, KUEUE_WEBHOOK_SERVICE, kueue_helm_values

# The webhook is unready for 10-30 s after the Deployment is Ready (kueue#13036, where the
# reporter retries every 5 s for 30 s): 10 attempts 6 s apart cover about a minute.
WEBHOOK_RETRY_ATTEMPTS = 10
WEBHOOK_RETRY_DELAY_SECONDS = 6.0
# Kueue's admission webhooks are registered for CREATE and UPDATE only (kueue.md §3).
RETRIED_OPERATIONS = frozenset({"create", "update"})

# How a call to a webhook that does not serve yet fails (kueue.md §8, kueue#13036):
_NOT_READY_MARKERS = (
    "connection refused",
    "no endpoints available",
    "code 502",
    "502 bad gateway",
    "code 503",
    "service unavailable",
    "context deadline exceeded",
    "i/o timeout",
    "connection reset by peer",
    # The cert controller has not yet patched the caBundle into the webhook configurations (kueue.md §7).
    "x509: certificate signed by unknown authority",
)

ErrorHookCallback = Callable[[pulumi.ErrorHookArgs], Awaitable[bool]]


def is_webhook_not_ready_error(message: str) -> bool:
    """True when the API server could not reach Kueue's webhook yet (a transient install race).

    A message that says the webhook denied the request is Kueue's real answer and never matches;
    nor does an unreachable webhook of any other service.
    """
    text = message.lower()
    if "denied the request" in text:
        return False
    return KUEUE_WEBHOOK_SERVICE in text and any(marker in text for marker in _NOT_READY_MARKERS)


def should_retry_webhook_error(errors: Sequence[str], failed_operation: str,
                               max_attempts: int = WEBHOOK_RETRY_ATTEMPTS) -> bool:
    """Retry a failed create/update whose newest error is the webhook race, up to max_attempts tries.

    `errors` is newest first and holds one entry per failed try (pulumi ErrorHookArgs.errors).
    """
    return (
        failed_operation in RETRIED_OPERATIONS
        and 0 < len(errors) < max_attempts
        and is_webhook_not_ready_error(errors[0])
    )


def webhook_retry_callback(
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    delay_seconds: float = WEBHOOK_RETRY_DELAY_SECONDS,
    max_attempts: int = WEBHOOK_RETRY_ATTEMPTS,
) -> ErrorHookCallback:
    """The on_error hook body. Async, so waiting does not block the program's event loop,
    which also serves the hooks of other Kueue objects failing at the same time."""

    async def retry(args: pulumi.ErrorHookArgs) -> bool:
        if not should_retry_webhook_error(args.errors, args.failed_operation, max_attempts):
            return False
        pulumi.log.info(
            f"Kueue's webhook is not serving yet; retrying {args.failed_operation} of {args.name} "
            f"in {delay_seconds:g} s (attempt {len(args.errors) + 1} of {max_attempts})"
        )
        await sleep(delay_seconds)
        return True

    return retry


class KueueInstallation(pulumi.ComponentResource):
    """Kueue from its official chart, pinned, in its own namespace.

    Kueue objects must use `depends_on=installation.ready` and
    `hooks=installation.webhook_retry`. The Kubernetes provider comes from
    `opts.providers={"kubernetes": provider}` and reaches the children through `parent`.
    """

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    ready: list[pulumi.Resource]
    webhook_retry: pulumi.ResourceHookBinding | None

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kueue-aks:kueue:KueueInstallation", name, None, opts)
        self.namespace, self.release = namespaced_release(
            self,
            name,
            namespace=KUEUE_NAMESPACE,
            release_name=KUEUE_RELEASE_NAME,
            chart=KUEUE_CHART,
            version=config.kueue.version,
            values=kueue_helm_values(config),
        )
        self.ready = [self.release]
        self.webhook_retry = pulumi.ResourceHookBinding(
            on_error=[pulumi.ErrorHook(f"{name}-webhook-retry", webhook_retry_callback())]
        )

        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "releaseStatus": self.release.status,
                "version": config.kueue.version,
            }
        )
