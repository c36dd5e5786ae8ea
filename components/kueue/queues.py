"""KueueQueues: team namespaces and the starter Kueue objects, created from builder dicts.

Every Kueue object waits for Kueue to be ready and for the objects it names, so `pulumi up`
creates LocalQueue after ClusterQueue after ResourceFlavor/Cohort after Topology, and
`pulumi destroy` deletes them in the reverse order while the Kueue controller still runs to
clear their `kueue.x-k8s.io/resource-in-use` finalizers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..config.stack import StackConfig
from ..k8s.admission import split_guard
from ..k8s.cache import user_cache
from ..k8s.crd_schema import CrdError
from ..k8s.manifest import ObjectResource, admission_policy
from ..k8s.part import Part
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY
from .crds import Transport, kueue_crds
from .findings import KueueValidationError
from .objects import QueueSet, most_held
from .validate import check_objects
from .values import kueue_chart
from .verdicts import known_valid, remember_valid, verdict_key


def validated_objects(config: StackConfig, queues: QueueSet) -> list[dict[str, Any]]:
    """Check every Kueue object of `queues` against the pinned Kueue version and the capacity.

    The CRD schema and CEL rules come from the chart the release installs (components/kueue/crds.py:
    KUEUE_CRDS_DIR, the cache, or the chart source). Without a chart to read, the webhook,
    cross-object and capacity rules still run and one warning says what was skipped; with CI=true,
    or a chart source that answers wrongly, it is an error before any resource is registered.
    Objects found valid against a chart's CRDs before, by this validator, pass again without the
    work (components/kueue/verdicts.py).
    """
    objects, capacity = queues.objects, queues.capacity
    try:
        # With the Helm release's own sign-in, when the stack gives one for the chart's registry.
        found = kueue_crds(
            config.kueue.chart, config.kueue.version, transport=Transport(login=kueue_chart(config).login)
        )
        key = verdict_key(objects, capacity, found.digest) if found.digest else None
        cache = user_cache()
        if key and known_valid(cache, key):
            return objects
        crds = found.crds
    except CrdError as err:
        raise pulumi.RunError(f"the Kueue CRDs to validate against: {err}") from None
    if crds is None:
        pulumi.log.warn(found.missing or "Kueue objects are checked without the CRD schema and CEL rules")
    try:
        check_objects(objects, crds=crds, capacity=capacity)
    except KueueValidationError as err:
        raise pulumi.RunError(f"generated Kueue objects are invalid:\n{err}") from None
    if key:
        remember_valid(cache, key)
    return objects


def references(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]] = ()) -> list[tuple[str, str]]:
    """(kind, name) of the objects this one names or must come after; LocalQueues name their
    namespace too. A team namespace comes after the ClusterQueues (among `objects`) that select it:
    Kueue keeps a ClusterQueue while Workloads in the namespace hold its quota, and Pulumi's destroy
    took the ClusterQueues first and waited on them, with the namespace and its jobs still there
    (shown by the real engine, tests/e2e/engine/test_engine.py). So destroy deletes the namespace, and with
    it the jobs, while the queues and Kueue are still there."""
    spec = obj.get("spec") or {}
    kind = obj["kind"]
    if kind == "Namespace":
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return [
            ("ClusterQueue", o["metadata"]["name"])
            for o in objects
            if o["kind"] == "ClusterQueue" and _selects(o["spec"].get("namespaceSelector"), labels)
        ]
    if kind == "LocalQueue":
        return [("Namespace", obj["metadata"]["namespace"]), ("ClusterQueue", spec["clusterQueue"])]
    if kind == "ClusterQueue":
        flavors = [f["name"] for g in spec.get("resourceGroups", []) for f in g["flavors"]]
        checks = [c["name"] for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks", [])]
        return (
            [("ResourceFlavor", f) for f in flavors]
            + ([("Cohort", spec["cohortName"])] if spec.get("cohortName") else [])
            + [("AdmissionCheck", c) for c in checks]
        )
    if kind == "MultiKueueConfig":
        return [("MultiKueueCluster", name) for name in spec.get("clusters", [])]
    if kind == "AdmissionCheck" and spec.get("parameters"):
        return [(spec["parameters"]["kind"], spec["parameters"]["name"])]
    if kind == "Cohort":
        return [("ResourceFlavor", f["name"]) for g in spec.get("resourceGroups", []) for f in g["flavors"]]
    if kind == "ResourceFlavor" and spec.get("topologyName"):
        return [("Topology", spec["topologyName"])]
    return []


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a label selector with matchLabels only (what the builders write) selects `labels`;
    an empty selector selects every namespace, as Kubernetes has it."""
    if selector is None:
        return False
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def quota_report(queues: QueueSet) -> list[dict[str, Any]]:
    """The capacity/quota table as plain rows for `pulumi stack output` (display units); each row
    says whether its flavor is topology-aware, i.e. in the teams' `<team>-topology` queues (a
    manager's flavors never are), and the most each team can hold there, borrowing included."""
    units = {RESOURCE_CPU: "millicores", RESOURCE_MEMORY: "MiB", RESOURCE_GPU: "GPUs"}
    return [
        {
            "flavor": r.flavor,
            "topologyAware": r.topology,
            "resource": r.resource,
            "unit": units[r.resource],
            "capacity": r.capacity,
            "nominalQuotaTotal": sum(r.teams.values()),
            "cohortShared": r.cohort,
            "teams": dict(r.teams),
            "mostPerTeam": {t.name: most_held(r, t) for t in queues.teams if t.name in r.teams},
        }
        for r in queues.rows
    ]


class KueueQueues(pulumi.ComponentResource):
    """Team namespaces, Topology, ResourceFlavors, Cohort, ClusterQueues, LocalQueues, priorities:
    the objects of `part`, the priority-class guard first. `queues` gives the LocalQueue and quota
    reports (its objects are the part's). `after`: what every object waits for (Kueue ready, a
    manager's worker Secrets); `namespaces_after`: what the team namespaces wait for too."""

    TYPE = "kueue-aks:queues:KueueQueues"  # its part's type (components/assembly.py)

    exports: dict[str, Any]  # the stack outputs it gives

    def __init__(
        self,
        name: str,
        part: Part,
        *,
        queues: QueueSet,
        after: Sequence[pulumi.Resource],
        hooks: pulumi.ResourceHookBinding | None = None,
        namespaces_after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        guard, objects = split_guard(part.objects)
        # Before any team namespace exists, so no job with a mistyped priority is ever accepted.
        self.priority_guard = admission_policy(self, f"{name}-priority-guard", *guard)
        created: dict[tuple[str, str], pulumi.Resource] = {}
        for obj in objects:  # builders return objects in dependency order
            kind, meta = obj["kind"], obj["metadata"]
            depends_on = [created[ref] for ref in references(obj, objects)]
            if kind == "Namespace":
                # A plain namespace, outside the Kueue release: replacing Kueue never deletes a
                # namespace with running jobs in it. It depends on the release so that `pulumi
                # destroy` deletes it, with its jobs and their Workloads, while Kueue still runs
                # to clear their finalizers; otherwise it could stay Terminating for ever. The
                # same holds for the job operators (`namespaces_after`) and their kinds.
                resource: pulumi.Resource = k8s.core.v1.Namespace(
                    f"{name}-ns-{meta['name']}",
                    metadata=meta,
                    opts=pulumi.ResourceOptions(
                        parent=self, depends_on=[*after, *namespaces_after, *depends_on, *self.priority_guard]
                    ),
                )
            else:
                label = f"{meta['namespace']}-{meta['name']}" if "namespace" in meta else meta["name"]
                resource = ObjectResource(
                    f"{name}-{kind.lower()}-{label}",
                    obj,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[*after, *depends_on], hooks=hooks),
                )
            created[(kind, f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"])] = resource
        self.resources = created

        self.local_queues = queues.local_queues
        self.quota_table = quota_report(queues)
        self.exports = {"localQueues": self.local_queues, "quotaTable": self.quota_table}
        self.register_outputs({"localQueues": self.local_queues, "quotaTable": self.quota_table})
