"""KueueInstallation: Kueue's namespace and pinned Helm release, and what Kueue objects wait for.

Webhook start-up (kubernetes-sigs/kueue#13036, docs/kueue.md#kueues-webhook-at-start-up): right after the
release is ready, the API server can still fail to call Kueue's webhook (connection refused, EOF, a
certificate from a CA it does not trust yet...), and pulumi-kubernetes does not retry such errors
(pulumi/pulumi-kubernetes provider/pkg/await/await.go@v4.34.2), so the first `pulumi up` would fail
creating the first ResourceFlavor. An `on_error` resource hook retries exactly those creates and updates,
a few seconds apart and a bounded number of times. It classifies by what the API server says, not by the
transport error: "failed calling webhook" with Kueue's webhook Service in the message is the API server
getting no answer from Kueue, whatever the cause; "denied the request" is Kueue's answer and fails at
once, as does a failure of any other service's webhook. Hooks run in the engine only (not under mocks),
so the decision is plain functions, tested offline and on real API-server messages in tests/e2e. Requires
Pulumi CLI and SDK >= 3.244 (the engine forwards every provider error to error hooks from it).

Uninstall: the release is atomic and awaited, so `pulumi destroy` runs `helm uninstall --wait`.
The aggregated-role guard (components/kueue/policies.py) is created before the release and deleted
after it, so that wait ends and no ClusterRole is left behind.

With `kueue.install: aksExtension` there is no release: on AKS the stack creates AKS's managed
Kueue extension (`extension_args`), whose PUT returns once Azure's extension agent installed it; in
kubeconfig mode the cluster's own extension serves, and the preflight has found it and its running
controller (components/preflight/incluster.py). The webhook retry covers the start-up race the same
way in every mode (docs/kueue-install.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pulumi
from pulumi_azure_native import kubernetesconfiguration

from ..config.names import KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..k8s.helm import namespaced_release
from ..k8s.manifest import admission_policy
from ..k8s.part import Part
from .values import KUEUE_WEBHOOK_SERVICE, extension_args

# Measured on the local control plane (docs/kueue.md#kueues-webhook-at-start-up): the webhook answers
# about 3 s after the controller starts, certificate bootstrap included; upstream reports 10-30 s
# of failures after the Deployment is Ready on real clusters (kueue#13036). 10 tries 6 s apart
# cover a minute.
WEBHOOK_RETRY_ATTEMPTS = 10
WEBHOOK_RETRY_DELAY_SECONDS = 6.0
# Kueue's admission webhooks are registered for CREATE and UPDATE only (kubernetes-sigs/kueue
# charts/kueue/templates/webhook/manifests.yaml@v0.19.2).
RETRIED_OPERATIONS = frozenset({"create", "update"})
# How the API server names Kueue's webhook Service in every call it makes to it (admission and
# CRD conversion alike): https://<service>.<namespace>.svc:443/<path>.
KUEUE_WEBHOOK_HOST = f"{KUEUE_WEBHOOK_SERVICE}.{KUEUE_NAMESPACE}.svc"

ErrorHookCallback = Callable[[pulumi.ErrorHookArgs], Awaitable[bool]]

# Azure's first extension install can take many minutes; the provider's default is shorter.
AKS_EXTENSION_CREATE_TIMEOUT = "30m"


def is_webhook_not_ready_error(message: str, hosts: Sequence[str] = (KUEUE_WEBHOOK_HOST,)) -> bool:
    """True when the API server got no answer from Kueue's webhook, or from another of `hosts`
    (an operator's webhook Service host, `<service>.<namespace>.svc`): a transient start-up error.

    The API server says `failed calling webhook "<name>": failed to call webhook: Post
    "https://kueue-webhook-service.kueue-system.svc:443/...": <cause>` for an admission webhook
    it could not get an answer from, and `conversion webhook for <kind> failed: Post "https://..."`
    for a conversion; the cause (refused, EOF, x509, timeout, no endpoints) does not matter. A
    webhook that answered no says `admission webhook "<name>" denied the request` and never
    matches; nor does a webhook of any other service.
    """
    if "denied the request" in message:
        return False
    reached_for = "failed calling webhook" in message or "conversion webhook for" in message
    return reached_for and any(f"https://{host}:" in message for host in hosts)


def should_retry_webhook_error(
    errors: Sequence[str],
    failed_operation: str,
    max_attempts: int = WEBHOOK_RETRY_ATTEMPTS,
    hosts: Sequence[str] = (KUEUE_WEBHOOK_HOST,),
) -> bool:
    """Retry a failed create/update whose newest error is the webhook race, up to max_attempts tries.

    `errors` is newest first and holds one entry per failed try (pulumi ErrorHookArgs.errors).
    """
    return (
        failed_operation in RETRIED_OPERATIONS
        and 0 < len(errors) < max_attempts
        and is_webhook_not_ready_error(errors[0], hosts)
    )


def webhook_retry_callback(
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    delay_seconds: float = WEBHOOK_RETRY_DELAY_SECONDS,
    max_attempts: int = WEBHOOK_RETRY_ATTEMPTS,
    hosts: Sequence[str] = (KUEUE_WEBHOOK_HOST,),
) -> ErrorHookCallback:
    """The on_error hook body. Async, so waiting does not block the program's event loop,
    which also serves the hooks of other Kueue objects failing at the same time."""

    async def retry(args: pulumi.ErrorHookArgs) -> bool:
        if not should_retry_webhook_error(args.errors, args.failed_operation, max_attempts, hosts):
            return False
        pulumi.log.info(
            f"A webhook ({', '.join(hosts)}) is not serving yet; retrying {args.failed_operation} of {args.name} "
            f"in {delay_seconds:g} s (attempt {len(args.errors) + 1} of {max_attempts})"
        )
        await sleep(delay_seconds)
        return True

    return retry


class KueueInstallation(pulumi.ComponentResource):
    """Kueue in its own namespace: the official chart, pinned, or AKS's managed extension.

    Kueue objects must use `depends_on=installation.ready` and
    `hooks=installation.webhook_retry`; what is placed in Kueue's namespace depends on
    `namespace_ready`. The Kubernetes provider comes from `opts.providers={"kubernetes": provider}`
    and reaches the children through `parent`.
    """

    TYPE = "kueue-aks:kueue:KueueInstallation"  # its part's type (components/assembly.py)

    namespace_name: str
    exports: dict[str, Any]  # the stack outputs it gives
    namespace_ready: list[pulumi.Resource]
    ready: list[pulumi.Resource]
    webhook_retry: pulumi.ResourceHookBinding | None

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        config: StackConfig,
        cluster: Any = None,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`part`: the chart's release with the role guard, or nothing with AKS's managed extension.
        `cluster`: the program's cluster component (its `cluster_name` and `resource_group_name`,
        for the extension). `after`: what must exist when Kueue starts: the ProvisioningRequest API,
        which Kueue looks for only at start-up, and the job operators' CRDs, whose controllers Kueue
        otherwise sets up only after a backoff of up to 2 minutes."""
        super().__init__(self.TYPE, name, None, opts)
        self.namespace_name = KUEUE_NAMESPACE
        self.exports = {"kueueNamespace": KUEUE_NAMESPACE, "kueueVersion": config.kueue.running_version}
        outputs: dict[str, Any] = {"namespace": KUEUE_NAMESPACE, "version": config.kueue.running_version}
        if part.releases:  # the chart's release, with the role guard
            self.guard = admission_policy(self, f"{name}-role-guard", *part.objects)
            (kueue,) = part.releases
            # Created after the guard and deleted before it: uninstall needs the guard.
            namespace, release = namespaced_release(self, name, kueue, depends_on=[*self.guard, *after])
            self.namespace_ready, self.ready = [namespace], [release]
            outputs["releaseStatus"] = release.status
        elif config.cluster.mode == "kubeconfig":
            self.namespace_ready, self.ready = [], []  # the cluster's extension, checked by the preflight
        else:
            # API 2023-05-01 (azure-native's only one) has no autoUpgradeMode, the docs' `--auto-upgrade-mode
            # none`: the pin is autoUpgradeMinorVersion false with a version, and the release train, which
            # applies only to minor upgrades, is not sent (the SDK would default it to Stable when None).
            pulumi.log.warn(
                "kueue-aks:kueue.install aksExtension: azure-native creates the extension with API 2023-05-01, which "
                "cannot set its auto-upgrade mode; after the first `pulumi up`, pin it as AKS's docs do: az "
                "k8s-extension update --cluster-type managedClusters --resource-group <group> --cluster-name <cluster> "
                "--name kueue --auto-upgrade-mode none (docs/kueue-install.md)",
                resource=self,
            )
            extension = kubernetesconfiguration.Extension(
                f"{name}-extension",
                cluster_name=cluster.cluster_name,
                resource_group_name=cluster.resource_group_name,
                release_train=pulumi.Output.from_input(None),
                **extension_args(config),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=list(after),
                    custom_timeouts=pulumi.CustomTimeouts(create=AKS_EXTENSION_CREATE_TIMEOUT),
                ),
            )
            self.namespace_ready, self.ready = [extension], [extension]
            outputs["extensionVersion"] = extension.current_version
        self.webhook_retry = pulumi.ResourceHookBinding(
            on_error=[pulumi.ErrorHook(f"{name}-webhook-retry", webhook_retry_callback())]
        )
        self.register_outputs(outputs)
