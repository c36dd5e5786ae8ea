"""The modelled deployment time of a stack, from the resource graph the program registers.

`pulumi up` creates a resource once everything it depends on exists, and runs independent
operations in parallel (the CLI's --parallel is unbounded by default). So with a duration per
resource type, the time of a first `up` is the longest path through the dependency graph.

Two graphs over the same resources:

- actual: what the program told Pulumi. Each custom resource waits for its `dependencies`
  (property dependencies and depends_on; a component in depends_on stands for its custom-resource
  descendants) and for its provider. A parent link is not a dependency on the parent's children,
  and components take no time; but the Python SDK registers a child only once its parent's URN
  is known (runtime/resource.py prepare_resource), and a component with depends_on registers only
  once those are created, so a child also waits for whatever its parent components wait for
  (and for a custom parent itself).
- ideal: what each resource really needs, written down here from the resource kinds, not read
  from the program. An Azure resource needs its resource group; a node pool needs its cluster; the
  Kubernetes provider needs the cluster's credentials; every Kubernetes object needs the provider
  and its namespace; a Helm release needs its namespace; a Kueue object needs the Kueue release
  (webhook serving) and the objects it names (LocalQueue -> ClusterQueue -> Cohort/ResourceFlavor
  -> Topology; ClusterQueue -> AdmissionCheck -> ProvisioningRequestConfig). The Kueue release also needs the aggregated-role guard (a ValidatingAdmissionPolicy
  and its binding, which must outlive the release for its uninstall to finish), and a team
  namespace needs the Kueue release (so destroy deletes its jobs while Kueue still clears their
  finalizers). The NVIDIA device plugin release needs only the cluster and its namespace: it is a
  DaemonSet, ready with zero pods, and its pods start on GPU nodes whenever they appear. No
  Kubernetes object needs a user node pool (Kueue runs on the system pool, created with the
  cluster), except the ProvisioningRequest API: when the stack reads that CRD (pools with
  ProvisioningRequest), the read needs the autoscaled pools, whose creation brings AKS's
  autoscaler and its CRD, and the Kueue release needs the read (Kueue looks for the API only when
  it starts). The Kueue release also needs the job operators' CRDs, for the same reason (it sets
  up a framework's controller late, after a backoff of up to 2 min, when its kind is not served).
  Without such pools the ideal is: resource group, cluster, then the longest of (each pool),
  (Kueue namespace, release, then its longest object chain) and (device plugin namespace, release).
  With monitoring: the data collection rule needs its endpoint and the workspace, the rule's
  association needs the rule and the cluster, Grafana needs the workspace it links, a role
  assignment needs Grafana and the workspace; a service-account token Secret needs its account.
  A job operator's controller (its Helm release, or the Deployment of a manifest install) needs
  the CRDs (each operator's a release of their own) of the API groups it serves and of the
  operators it builds on (Trainer: JobSet); a Deployment needs the objects of its own install
  (its namespace's ServiceAccount, Secret and Service, the cluster roles and bindings for that
  account, the webhook configuration calling its Service); an object of an operator's group needs its CRD and that operator's controller (its
  webhook); and a team namespace needs every operator controller, for the same reason as Kueue's.

ratio = actual longest path / ideal longest path; 1.00 means nothing waits on what it does not need.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from components.autoscaling.component import PROVISIONING_REQUEST_CRD
from components.config.names import TEAM_LABEL
from components.facts.operators import OPERATORS
from components.operators.crd_chart import RELEASE_SUFFIX as CRD_RELEASE_SUFFIX

SECOND = 1.0
MINUTE = 60.0

# Modelled create durations in seconds. Azure figures are typical for a first create in a
# region with capacity; Kubernetes objects are a round trip plus admission.
DURATIONS: Mapping[str, float] = {
    "azure-native:resources:ResourceGroup": 5 * SECOND,
    "azure-native:containerservice:ManagedCluster": 8 * MINUTE,
    "azure-native:containerservice:AgentPool": 5 * MINUTE,
    "kubernetes:helm.sh/v3:Release": 1.5 * MINUTE,
    "kubernetes:core/v1:Namespace": 2 * SECOND,
    # Monitoring (kueue-aks:monitoring): estimates, not measurements; Managed Grafana provisions
    # its own VMs, so it is the slow one, still shorter than cluster plus pool.
    "azure-native:monitor:AzureMonitorWorkspace": 1 * MINUTE,
    "azure-native:monitor:DataCollectionEndpoint": 10 * SECOND,
    "azure-native:monitor:DataCollectionRule": 10 * SECOND,
    "azure-native:monitor:DataCollectionRuleAssociation": 10 * SECOND,
    "azure-native:dashboard:Grafana": 6 * MINUTE,
    "azure-native:authorization:RoleAssignment": 15 * SECOND,
}
KUEUE_OBJECT_SECONDS = 3 * SECOND  # any kubernetes:kueue.x-k8s.io/<version>:<Kind>
OTHER_KUBERNETES_SECONDS = 5 * SECOND  # any other kubernetes:* type
PROVIDER_SECONDS = 0.0  # pulumi:providers:*

_WORKSPACE, _GRAFANA = "azure-native:monitor:AzureMonitorWorkspace", "azure-native:dashboard:Grafana"
MONITORING_NEEDS: Mapping[str, tuple[str, ...]] = {
    "azure-native:monitor:DataCollectionRule": ("azure-native:monitor:DataCollectionEndpoint", _WORKSPACE),
    "azure-native:monitor:DataCollectionRuleAssociation": (
        "azure-native:monitor:DataCollectionRule",
        "azure-native:containerservice:ManagedCluster",
    ),
    _GRAFANA: (_WORKSPACE,),
}

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_CHART = "kueue"


class Registered(Protocol):
    """What the model reads from a registration (testbed.harness.Registration has all of it)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def parent(self) -> str: ...
    @property
    def custom(self) -> bool: ...
    @property
    def inputs(self) -> dict[str, Any]: ...
    @property
    def read_id(self) -> str: ...  # set when the program reads an existing object (`.get`)
    @property
    def dependencies(self) -> list[str]: ...
    @property
    def provider(self) -> str: ...
    @property
    def property_dependencies(self) -> dict[str, list[str]]: ...


def duration(type_: str) -> float:
    """Modelled create time of one resource of this type; KeyError for a type the model lacks."""
    if type_ in DURATIONS:
        return DURATIONS[type_]
    if type_.startswith("pulumi:providers:"):
        return PROVIDER_SECONDS
    if type_.startswith(f"kubernetes:{KUEUE_GROUP}/"):
        return KUEUE_OBJECT_SECONDS
    if type_.startswith("kubernetes:"):
        return OTHER_KUBERNETES_SECONDS
    raise KeyError(f"no modelled duration for resource type {type_!r}; add it to bench/critical_path.py")


def is_kueue_release(r: Registered) -> bool:
    """The Kueue Helm release: its chart is `kueue`, by name or as the last part of an OCI/URL path."""
    chart = str(r.inputs.get("chart") or "")
    return r.type == "kubernetes:helm.sh/v3:Release" and chart.rstrip("/").rsplit("/", 1)[-1] == KUEUE_CHART


def provider_urn(reference: str) -> str:
    """A provider reference is '<urn>::<id>'; the URN is everything before the last '::'."""
    return reference.rsplit("::", 1)[0] if reference else ""


@dataclass(frozen=True)
class Node:
    urn: str
    type: str
    name: str
    seconds: float
    deps: frozenset[str]


@dataclass(frozen=True)
class Path:
    seconds: float
    chain: tuple[str, ...]  # resource names, first created first
    finish: Mapping[str, float] = field(repr=False)  # urn -> earliest finish time


def _children(registrations: Sequence[Registered]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in registrations:
        out.setdefault(r.parent, []).append(r.urn)
    return out


def actual_graph(registrations: Sequence[Registered]) -> dict[str, Node]:
    """Custom resources and what each waits for: its dependencies (components expanded) and provider."""
    custom = {r.urn for r in registrations if r.custom}
    children = _children(registrations)

    def expand(urn: str, seen: set[str]) -> set[str]:
        if urn in custom:
            return {urn}
        if urn in seen:
            return set()
        seen.add(urn)
        out: set[str] = set()
        for child in children.get(urn, ()):
            out |= expand(child, seen)
        return out

    by_urn = {r.urn: r for r in registrations}

    def own_waits(r: Registered) -> set[str]:
        deps: set[str] = set()
        for dep in r.dependencies:
            deps |= expand(dep, set())
        provider = provider_urn(r.provider)
        if provider in custom:
            deps.add(provider)
        return deps

    parent_memo: dict[str, set[str]] = {}

    def parent_waits(urn: str) -> set[str]:
        """What registering a child of `urn` waits for: a custom parent itself; a component's own
        waits and its parent's, up to the stack (registered at once)."""
        if urn not in by_urn:
            return set()
        if urn not in parent_memo:
            parent = by_urn[urn]
            parent_memo[urn] = {urn} if parent.custom else own_waits(parent) | parent_waits(parent.parent)
        return parent_memo[urn]

    graph: dict[str, Node] = {}
    for r in registrations:
        if not r.custom:
            continue
        deps = own_waits(r) | parent_waits(r.parent)
        deps.discard(r.urn)
        graph[r.urn] = Node(r.urn, r.type, r.name, duration(r.type), frozenset(deps))
    return graph


def _kueue_references(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of the Kueue objects a Kueue object names in its spec."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    refs: list[tuple[str, str]] = []
    if kind == "LocalQueue" and spec.get("clusterQueue"):
        refs.append(("ClusterQueue", spec["clusterQueue"]))
    if kind in ("ClusterQueue", "Cohort"):
        for group in spec.get("resourceGroups") or []:
            refs += [("ResourceFlavor", f["name"]) for f in group.get("flavors") or []]
        for key in ("cohortName", "cohort", "parentName"):  # v1beta2 cohortName; older spellings
            if spec.get(key):
                refs.append(("Cohort", spec[key]))
    if kind == "ResourceFlavor" and spec.get("topologyName"):
        refs.append(("Topology", spec["topologyName"]))
    if kind == "ClusterQueue":
        refs += [
            ("AdmissionCheck", c["name"])
            for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks", [])
        ]
    if kind == "AdmissionCheck" and spec.get("parameters"):
        refs.append((spec["parameters"]["kind"], spec["parameters"]["name"]))
    return refs


def _operator_groups(key: str) -> set[str]:
    """The API groups whose CRDs an operator's controller needs: its frameworks' and its needs'."""
    operator = OPERATORS[key]
    return {f.split("/")[0] for k in (key, *operator.needs) for f in OPERATORS[k].frameworks}


def _served_groups(namespace: str) -> set[str]:
    """The API groups of the frameworks of the operators in `namespace`: what their CRD release serves."""
    return {f.split("/")[0] for o in OPERATORS.values() if o.namespace == namespace for f in o.frameworks}


def is_crd_release(r: Registered) -> bool:
    return r.type == "kubernetes:helm.sh/v3:Release" and str(r.inputs.get("name", "")).endswith(CRD_RELEASE_SUFFIX)


def _own_group(namespace: str) -> str | None:
    """The one API group an operator's own objects (a Trainer runtime) belong to, when it has one."""
    groups = _served_groups(namespace)
    return groups.pop() if len(groups) == 1 else None


def _install_objects(custom: Sequence[Registered], namespace: str) -> set[str]:
    """What an operator's Deployment needs of its manifest install: namespaced objects there, and
    the cluster roles, bindings and webhook configurations that name that namespace."""
    needs: set[str] = set()
    bound_roles: set[str] = set()
    for r in custom:
        kind = r.type.rsplit(":", 1)[1]
        meta = r.inputs.get("metadata") or {}
        if kind in ("ServiceAccount", "Secret", "Service") and meta.get("namespace") == namespace:
            needs.add(r.urn)
        if kind == "ClusterRoleBinding" and any(
            s.get("namespace") == namespace for s in r.inputs.get("subjects") or []
        ):
            needs.add(r.urn)
            bound_roles.add(str((r.inputs.get("roleRef") or {}).get("name")))
        if kind == "ValidatingWebhookConfiguration" and any(
            ((w.get("clientConfig") or {}).get("service") or {}).get("namespace") == namespace
            for w in r.inputs.get("webhooks") or []
        ):
            needs.add(r.urn)
    needs |= {
        r.urn
        for r in custom
        if r.type.endswith(":ClusterRole") and (r.inputs.get("metadata") or {}).get("name") in bound_roles
    }
    return needs


def ideal_graph(registrations: Sequence[Registered]) -> dict[str, Node]:
    """The same resources, each waiting only for what it needs (see the module docstring)."""
    custom = [r for r in registrations if r.custom]
    by_type: dict[str, list[Registered]] = {}
    for r in custom:
        by_type.setdefault(r.type, []).append(r)
    groups = {r.urn for r in by_type.get("azure-native:resources:ResourceGroup", [])}
    clusters = by_type.get("azure-native:containerservice:ManagedCluster", [])
    namespaces = {
        (r.inputs.get("metadata") or {}).get("name"): r.urn for r in by_type.get("kubernetes:core/v1:Namespace", [])
    }
    releases = by_type.get("kubernetes:helm.sh/v3:Release", [])
    kueue_releases = {r.urn for r in releases if is_kueue_release(r)}
    kueue_objects: dict[tuple[str, str], str] = {}
    for r in custom:
        if r.type.startswith(f"kubernetes:{KUEUE_GROUP}/"):
            meta = r.inputs.get("metadata") or {}
            kueue_objects[(r.type.rsplit(":", 1)[1], str(meta.get("name")))] = r.urn

    policies = {r.urn for r in by_type.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", [])}
    bindings = {
        r.urn for r in by_type.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", [])
    }

    operator_groups = {o.namespace: _operator_groups(o.key) for o in OPERATORS.values() if o.managed}
    # The operators' CRDs: one release per operator (components/operators/crd_chart.py), serving its frameworks' groups.
    crds = {r.urn: _served_groups(str(r.inputs.get("namespace"))) for r in releases if is_crd_release(r)}
    provisioning_api = {
        r.urn
        for r in by_type.get("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", [])
        if r.read_id == PROVISIONING_REQUEST_CRD
    }
    autoscaled_pools = {
        r.urn for r in by_type.get("azure-native:containerservice:AgentPool", []) if r.inputs.get("enableAutoScaling")
    }
    controllers: dict[str, set[str]] = {}  # operator namespace -> its release or Deployment
    for r in [r for r in releases if not is_crd_release(r)] + by_type.get("kubernetes:apps/v1:Deployment", []):
        namespace = (
            r.inputs.get("namespace")
            if r.type.startswith("kubernetes:helm.sh/")
            else (r.inputs.get("metadata") or {}).get("namespace")
        )
        if namespace in operator_groups:
            controllers.setdefault(str(namespace), set()).add(r.urn)

    graph: dict[str, Node] = {}
    for r in custom:
        needs: set[str] = set()
        meta = r.inputs.get("metadata") or {}
        for namespace, urns in controllers.items():
            if r.urn in urns:
                needs |= {urn for urn, served in crds.items() if served & operator_groups[namespace]}
                if r.type == "kubernetes:apps/v1:Deployment":
                    needs |= _install_objects(custom, namespace)
        group = r.type.split(":")[1].rsplit("/", 1)[0]
        for namespace, served in operator_groups.items():
            if r.urn not in crds and group in served and group == _own_group(namespace):
                needs |= controllers.get(namespace, set()) | {u for u, served in crds.items() if group in served}
        if r.type == "kubernetes:core/v1:Namespace" and TEAM_LABEL in (meta.get("labels") or {}):
            needs |= {u for urns in controllers.values() for u in urns}
        if r.urn in kueue_releases:
            needs |= policies | bindings | provisioning_api | set(crds)
        if r.urn in provisioning_api:
            needs |= autoscaled_pools
        if r.urn in bindings:
            needs |= policies
        if r.type == "kubernetes:core/v1:Namespace" and TEAM_LABEL in (
            (r.inputs.get("metadata") or {}).get("labels") or {}
        ):
            needs |= kueue_releases
            # Destroy must take a team's namespace, with its jobs, before the ClusterQueues whose
            # quota their Workloads hold: Kueue keeps such a queue until they are gone.
            labels = (r.inputs.get("metadata") or {}).get("labels") or {}
            needs |= {
                q.urn
                for t, queues in by_type.items()
                if t.endswith(":ClusterQueue")
                for q in queues
                if all(
                    labels.get(k) == v
                    for k, v in (
                        ((q.inputs.get("spec") or {}).get("namespaceSelector") or {}).get("matchLabels") or {}
                    ).items()
                )
            }
        if r.type.startswith("azure-native:") and r.type != "azure-native:resources:ResourceGroup":
            needs |= groups
        if r.type == "azure-native:containerservice:AgentPool":
            own = [c.urn for c in clusters if c.inputs.get("resourceName") == r.inputs.get("resourceName")]
            needs |= set(own or (c.urn for c in clusters))
        for kind, needed in MONITORING_NEEDS.items():
            if r.type == kind:
                needs |= {n.urn for t in needed for n in by_type.get(t, [])}
        if r.type == "azure-native:authorization:RoleAssignment":
            # What it is scoped to and the identity it names (a cluster, a workspace, a Grafana), nothing else.
            needs |= {u for key in ("scope", "principalId") for u in r.property_dependencies.get(key, [])}
        if r.type == "kubernetes:core/v1:Secret":
            account = ((r.inputs.get("metadata") or {}).get("annotations") or {}).get(
                "kubernetes.io/service-account.name"
            )
            needs |= {
                a.urn
                for a in by_type.get("kubernetes:core/v1:ServiceAccount", [])
                if (a.inputs.get("metadata") or {}).get("name") == account
            }
        if r.type == "pulumi:providers:kubernetes":
            needs |= {c.urn for c in clusters}
        if r.type.startswith("kubernetes:"):
            needs.add(provider_urn(r.provider))
            meta = r.inputs.get("metadata") or {}
            namespace = (
                r.inputs.get("namespace") if r.type == "kubernetes:helm.sh/v3:Release" else meta.get("namespace")
            )
            if namespace in namespaces:
                needs.add(namespaces[namespace])
        if r.type.startswith(f"kubernetes:{KUEUE_GROUP}/"):
            needs |= kueue_releases
            obj = {"kind": r.type.rsplit(":", 1)[1], **r.inputs}
            needs |= {kueue_objects[ref] for ref in _kueue_references(obj) if ref in kueue_objects}
        needs.discard("")
        needs.discard(r.urn)
        graph[r.urn] = Node(r.urn, r.type, r.name, duration(r.type), frozenset(needs))
    return graph


def topological_order(graph: Mapping[str, Node]) -> list[str]:
    """Dependencies first; ValueError on a cycle or a dependency outside the graph."""
    for node in graph.values():
        missing = node.deps - graph.keys()
        if missing:
            raise ValueError(f"{node.name} depends on resources not in the graph: {sorted(missing)}")
    indegree = {urn: len(node.deps) for urn, node in graph.items()}
    dependents: dict[str, list[str]] = {urn: [] for urn in graph}
    for urn, node in graph.items():
        for dep in node.deps:
            dependents[dep].append(urn)
    ready = sorted(urn for urn, n in indegree.items() if n == 0)
    order: list[str] = []
    while ready:
        urn = ready.pop()
        order.append(urn)
        for nxt in dependents[urn]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    if len(order) != len(graph):
        raise ValueError("the dependency graph has a cycle")
    return order


def longest_path(graph: Mapping[str, Node]) -> Path:
    """Earliest finish of every resource with unlimited parallelism, and the critical chain."""
    finish: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for urn in topological_order(graph):
        node = graph[urn]
        # Ties go to the name that sorts first, so the printed chain is stable.
        before = max(sorted(node.deps, key=lambda d: graph[d].name), key=lambda d: finish[d], default=None)
        finish[urn] = node.seconds + (finish[before] if before else 0.0)
        via[urn] = before
    if not finish:
        return Path(0.0, (), {})
    end = max(sorted(finish, key=lambda u: graph[u].name), key=lambda u: finish[u])
    chain: list[str] = []
    cursor: str | None = end
    while cursor is not None:
        chain.append(graph[cursor].name)
        cursor = via[cursor]
    return Path(finish[end], tuple(reversed(chain)), finish)


def transitive_needs(graph: Mapping[str, Node]) -> dict[str, frozenset[str]]:
    """Every resource each one needs, directly or not."""
    closure: dict[str, frozenset[str]] = {}
    for urn in topological_order(graph):
        deps = graph[urn].deps
        closure[urn] = frozenset(deps).union(*(closure[d] for d in deps))
    return closure


def unneeded_waits(actual: Mapping[str, Node], ideal: Mapping[str, Node]) -> list[tuple[str, str]]:
    """(resource, what it waits for) pairs the program adds that the ideal does not imply."""
    needs = transitive_needs(ideal)
    return sorted(
        (node.name, actual[dep].name)
        for urn, node in actual.items()
        for dep in node.deps
        if dep not in needs.get(urn, frozenset())
    )


def makespan(graph: Mapping[str, Node], parallel: int) -> float:
    """Finish time with at most `parallel` operations in flight (greedy list scheduling; among
    ready resources the one with the longest remaining path starts first). An estimate for
    `pulumi up --parallel N`; Pulumi itself does not prioritise, so it can only be slower."""
    if parallel < 1:
        raise ValueError("parallel must be at least 1")
    order = topological_order(graph)
    dependents: dict[str, list[str]] = {urn: [] for urn in graph}
    for urn, node in graph.items():
        for dep in node.deps:
            dependents[dep].append(urn)
    tail: dict[str, float] = {}
    for urn in reversed(order):
        tail[urn] = graph[urn].seconds + max((tail[d] for d in dependents[urn]), default=0.0)
    waiting = {urn: len(node.deps) for urn, node in graph.items()}
    ready = [(-tail[u], graph[u].name, u) for u in graph if waiting[u] == 0]
    heapq.heapify(ready)
    running: list[tuple[float, str]] = []
    now = 0.0
    done = 0
    while done < len(graph):
        while ready and len(running) < parallel:
            _, _, urn = heapq.heappop(ready)
            heapq.heappush(running, (now + graph[urn].seconds, urn))
        now, urn = heapq.heappop(running)
        done += 1
        for nxt in dependents[urn]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (-tail[nxt], graph[nxt].name, nxt))
    return now


@dataclass(frozen=True)
class Analysis:
    actual: Path
    ideal: Path
    delayed: tuple[str, ...]  # resources that finish later than they could
    unneeded: tuple[tuple[str, str], ...]
    branches: Mapping[str, float]  # ideal finish of each branch after the cluster

    @property
    def ratio(self) -> float:
        return self.actual.seconds / self.ideal.seconds if self.ideal.seconds else 1.0


def _branch_finish(graph: Mapping[str, Node], path: Path, pick: Iterable[str]) -> float:
    return max((path.finish[u] for u in pick), default=0.0)


def analyse(registrations: Sequence[Registered]) -> Analysis:
    actual_g, ideal_g = actual_graph(registrations), ideal_graph(registrations)
    actual, ideal = longest_path(actual_g), longest_path(ideal_g)
    delayed = tuple(sorted(actual_g[u].name for u in actual_g if actual.finish[u] > ideal.finish[u] + 1e-9))
    releases = [u for u, n in ideal_g.items() if n.type == "kubernetes:helm.sh/v3:Release"]
    kueue_rel = [u for u in releases if u in {r.urn for r in registrations if is_kueue_release(r)}]
    branches = {
        "cluster": _branch_finish(
            ideal_g, ideal, (u for u, n in ideal_g.items() if n.type.endswith(":ManagedCluster"))
        ),
        "node pools": _branch_finish(ideal_g, ideal, (u for u, n in ideal_g.items() if n.type.endswith(":AgentPool"))),
        "Kueue release": _branch_finish(ideal_g, ideal, kueue_rel),
        "Kueue objects": _branch_finish(
            ideal_g, ideal, (u for u, n in ideal_g.items() if n.type.startswith(f"kubernetes:{KUEUE_GROUP}/"))
        ),
        "device plugin": _branch_finish(ideal_g, ideal, (u for u in releases if u not in kueue_rel)),
    }
    return Analysis(actual, ideal, delayed, tuple(unneeded_waits(actual_g, ideal_g)), branches)
