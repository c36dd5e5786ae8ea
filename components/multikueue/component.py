"""MultiKueue's Pulumi wiring: the worker's access and outputs, the manager's worker Secrets, and the
StackReferences through which a manager reads its workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi.runtime.sync_await import _sync_await

from ..cluster.component import kubeconfig_server
from ..config.checks import ConfigError
from ..config.stack import StackConfig
from ..k8s.manifest import ObjectResource
from ..k8s.part import Part
from .manager import Worker, secret_object, worker_problems
from .worker import FACTS_OUTPUT, KUBECONFIG_OUTPUT, worker_facts, worker_kubeconfig


def read_workers(config: StackConfig) -> tuple[list[Worker], dict[str, pulumi.Output[Any]]]:
    """A manager's workers with the facts their stacks export, checked against this stack, and
    their kubeconfigs (secret outputs); nothing for any other stack.

    A StackReference only reads. Its outputs are known at preview, so the facts are awaited here,
    before any resource is registered (the SDK's own synchronous invokes wait the same way), and a
    worker that does not fit stops the preview with every problem named.
    """
    if not config.multi_kueue.is_manager:
        return [], {}
    refs = {w.name: pulumi.StackReference(f"worker-{w.name}", stack_name=w.stack) for w in config.multi_kueue.workers}
    workers = []
    for settings in config.multi_kueue.workers:
        details = _sync_await(refs[settings.name].get_output_details(FACTS_OUTPUT))
        facts = details.value if details.value is not None else details.secret_value
        workers.append(Worker(settings.name, settings.stack, facts))
    problems = worker_problems(config, workers)
    if problems:
        raise pulumi.RunError(str(ConfigError(problems)))
    kubeconfigs = {name: pulumi.Output.secret(ref.require_output(KUBECONFIG_OUTPUT)) for name, ref in refs.items()}
    return workers, kubeconfigs


def api_server(config: StackConfig, kubeconfig: pulumi.Output[str] | None) -> pulumi.Input[str]:
    """The URL a manager dials: configured, or the one in the cluster's own kubeconfig."""
    if config.multi_kueue.server:
        return config.multi_kueue.server
    if kubeconfig is None:  # kubeconfig mode: the stack's own config holds it
        assert config.cluster.kubeconfig is not None
        return kubeconfig_server(config.cluster.kubeconfig)
    return kubeconfig.apply(kubeconfig_server)


class MultiKueueWorker(pulumi.ComponentResource):
    """The ServiceAccount a manager's Kueue acts as in this cluster, its rules and token, and the
    facts a manager plans with. `kubeconfig` is a secret; `facts` is plain data. `after`: what
    makes Kueue's namespace, where the token Secret goes."""

    TYPE = "kueue-aks:multikueue:MultiKueueWorker"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives: what a manager reads through its StackReference

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        config: StackConfig,
        server: pulumi.Input[str],
        after: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        *grants, token = part.objects  # components/multikueue/worker.py's manager_access_objects
        created: list[pulumi.Resource] = []
        for obj in grants:
            created.append(
                ObjectResource(
                    f"{name}-{obj['kind'].lower()}",
                    obj,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[*after, *created]),
                )
            )
        # Typed, so its `data` can be read back: the provider waits until the token controller filled it.
        self.token_secret = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=token["metadata"],
            type=token["type"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=created),
        )
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(server, self.token_secret.data).apply(
                lambda parts: worker_kubeconfig(config.cluster.name, parts[0], parts[1])
            )
        )
        self.facts: Mapping[str, Any] = worker_facts(config)
        self.exports = {FACTS_OUTPUT: self.facts, KUBECONFIG_OUTPUT: self.kubeconfig}
        self.register_outputs(self.exports)


class MultiKueueManager(pulumi.ComponentResource):
    """The manager's Secret for each worker's kubeconfig, in Kueue's namespace, where its
    MultiKueueCluster (created with the other Kueue objects) points. A new token on a worker
    reaches the Secret on the manager's next `up`; Kueue watches the Secret and reconnects.

    Its part lists no object: the Secrets are made of the workers' stack outputs (`kubeconfigs`,
    credentials that exist only while the program runs). `after`: what makes Kueue's namespace."""

    TYPE = "kueue-aks:multikueue:MultiKueueManager"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        workers: Sequence[Worker],
        kubeconfigs: Mapping[str, pulumi.Output[str]],
        after: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        secrets = {w.name: secret_object(w.name, kubeconfigs[w.name]) for w in workers}
        self.secrets = [
            k8s.core.v1.Secret(
                f"{name}-{worker}",
                metadata=obj["metadata"],
                type=obj["type"],
                string_data=obj["stringData"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(after)),
            )
            for worker, obj in secrets.items()
        ]
        self.workers = {w.name: w.stack for w in workers}
        self.exports = {"multiKueueWorkers": self.workers}
        self.register_outputs({"workers": self.workers})
