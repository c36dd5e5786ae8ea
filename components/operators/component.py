"""JobOperators: every operator the enabled frameworks need, pinned, on the system pool.

Order on `pulumi up`: each operator's namespace, its CRDs (a Helm release of a chart the program
writes, crd_chart.py, awaited until Established), then its release (or its manifests' objects),
which is awaited until the controller is Ready; Trainer after JobSet's CRDs (its controller
watches JobSets from the start); the torch runtime after Trainer, retried while Trainer's webhook
is still starting. `pulumi destroy` runs the other way: team namespaces depend on `ready`
(components/kueue/queues.py), so every job in them is deleted while its operator still runs to
clear finalizers; then the operators; their CRDs last, when no object of theirs is left.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..k8s.admission import split_guard
from ..k8s.charts import ChartRef
from ..k8s.helm import chart_namespace, release
from ..k8s.manifest import ObjectResource, admission_policy
from ..kueue.install import webhook_retry_callback
from .crd_chart import charts_dir, crd_chart, write_chart
from .installs import TRAINER_WEBHOOK_HOST, TRAINING_RUNTIME_KIND, Install, OperatorsPart


def _label(obj: dict[str, object]) -> str:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return f"{str(obj['kind']).lower()}-{meta['name']}"


class JobOperators(pulumi.ComponentResource):
    """The managed operators of the stack: the installs of `part`, its RayService guard and
    Trainer's runtimes; `ready` is what must outlive team namespaces."""

    TYPE = "kueue-aks:operators:JobOperators"  # its part's type (components/assembly.py)

    releases: dict[str, pulumi.Resource]
    ready: list[pulumi.Resource]
    # The releases of every kind's CRD. Kueue v0.19.2 sets up a framework's controller at start-up only if its kind
    # is served; otherwise it polls with a backoff of up to 2 min (pkg/controller/jobframework/
    # setup.go), and jobs of that kind wait unmanaged meanwhile. So the Kueue release waits for them.
    apis: list[pulumi.Resource]
    crds: dict[str, pulumi.Resource]  # operator key -> the release of its CRDs
    versions: dict[str, str]

    def __init__(self, name: str, part: OperatorsPart, *, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        self.releases, self.crds, self.versions = {}, {}, {}
        for install in part.installs:
            key = install.operator.key
            ns = chart_namespace(self, f"{name}-{key}", install.namespace)
            chart = crd_chart(key, install.pin.version, install.crds)
            # Written before the release registers: the provider reads the folder when it checks the release.
            path = write_chart(chart, charts_dir())
            self.crds[key] = release(
                self,
                f"{name}-{key}-crds",
                namespace=ns,
                release_name=chart.name,
                chart=ChartRef(chart=str(path), version=chart.version),
                values={},
            )
            # What it cannot start without is the other operator's CRDs (Trainer watches JobSets), not its controller.
            needs = [self.crds[k] for k in install.operator.needs if k in self.crds]
            self.releases[key] = self._install(f"{name}-{key}", install, ns, [self.crds[key], *needs])
            self.versions[key] = install.pin.version
        self.ready = list(self.releases.values())
        self.apis = list(self.crds.values())
        guard, objects = split_guard(part.objects)
        self.guards = admission_policy(self, f"{name}-rayservice-guard", *guard) if guard else []

        self.runtimes: list[pulumi.Resource] = []
        if "trainer" in self.releases:
            retry = pulumi.ResourceHookBinding(
                on_error=[
                    pulumi.ErrorHook(
                        f"{name}-trainer-webhook-retry", webhook_retry_callback(hosts=(TRAINER_WEBHOOK_HOST,))
                    )
                ]
            )
            self.runtimes = [
                ObjectResource(
                    f"{name}-trainer-{_label(obj)}",
                    obj,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.releases["trainer"]], hooks=retry),
                )
                for obj in objects
                if obj["kind"] == TRAINING_RUNTIME_KIND
            ]
        self.exports = {"operatorVersions": self.versions}
        self.register_outputs({"versions": self.versions})

    def _install(
        self, name: str, install: Install, ns: k8s.core.v1.Namespace, depends_on: list[pulumi.Resource]
    ) -> pulumi.Resource:
        """The operator's release, or for a manifest install its Deployment (awaited until Ready)."""
        if install.chart is not None:
            return release(
                self,
                name,
                namespace=ns,
                release_name=install.operator.release_name,
                chart=install.chart,
                values=install.values,
                depends_on=depends_on,
                skip_crds=True,
            )
        # RBAC, Service, webhook configuration, Secret: each needs only its namespace (if it has one).
        created = {
            _label(obj): ObjectResource(
                f"{name}-{_label(obj)}",
                obj,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[ns] if "namespace" in obj["metadata"] else []),
            )
            for obj in install.objects
            if obj["kind"] != "Deployment"
        }
        (deployment,) = [obj for obj in install.objects if obj["kind"] == "Deployment"]
        needed = [created[_label(obj)] for obj in install.controller_needs()]
        return ObjectResource(
            f"{name}-{_label(deployment)}",
            deployment,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, *depends_on, *needed]),
        )
