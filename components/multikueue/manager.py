"""A MultiKueue manager: its workers' facts checked, and its Kueue objects, quotas summed from them. Pure.

The manager's ClusterQueues only account and dispatch: a workload they admit is copied to the
workers, and the first worker whose own queues admit it runs it (kueue concepts doc, "MultiKueue").
So a team's quota on the manager is the sum of its quotas on the workers, never typed by hand, and
its flavors carry no node labels (no pod runs on the manager). Kueue needs the team's namespace
and LocalQueue by the same names on every worker, and the CRD of every framework the manager
enables on every worker (a missing one keeps that worker disconnected: kubernetes-sigs/kueue
pkg/controller/admissionchecks/multikueue/multikueuecluster.go@v0.19.2, kueue#3582); both are checked
here, from the workers' stack outputs, before anything is registered.

Only a team's ordinary queues are mirrored: its `topology` LocalQueue stays a worker's own (Kueue's
topology-aware scheduling through MultiKueue needs topology-aware flavors on the manager as well,
which this program does not build); jobs for it are submitted to that worker directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from ..config.checks import Problem
from ..config.names import CONFIG_PREFIX, KUEUE_NAMESPACE
from ..config.stack import StackConfig
from ..config.teams import Team
from ..k8s.meta import object_meta
from ..k8s.resources import RESOURCE_CPU, RESOURCE_GPU, RESOURCE_MEMORY, format_quantity
from ..kueue.objects import (
    API_VERSION,
    QueueSet,
    QuotaRow,
    cohort,
    local_queue,
    namespace,
    priority_classes,
    resource_group,
    team_cluster_queue,
)
from ..kueue.values import kueue_frameworks
from .worker import FACTS_OUTPUT, FACTS_VERSION, FRAMEWORK_RESOURCES

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = "multikueue"
MULTIKUEUE_CONFIG = "multikueue"
SECRET_KEY = "kubeconfig"  # the key Kueue reads in a MultiKueueCluster's Secret


@dataclass(frozen=True)
class Worker:
    """A worker as the manager sees it: its name, its stack and that stack's FACTS_OUTPUT (None
    when the stack has none: never deployed as a worker, or destroyed)."""

    name: str
    stack: str
    facts: Mapping[str, Any] | None


def kubeconfig_secret(worker: str) -> str:
    """The Secret in Kueue's namespace that holds the worker's kubeconfig."""
    return f"multikueue-{worker}"


def _mirrored(facts: Mapping[str, Any], team: str) -> dict[str, str]:
    """The team's LocalQueues on a worker that the manager mirrors, with their ClusterQueues there:
    those whose queue is not topology-aware."""
    queues = facts["clusterQueues"]
    return {lq: cq for lq, cq in facts["teams"][team]["localQueues"].items() if not queues[cq]["topologyAware"]}


def worker_problems(config: StackConfig, workers: Sequence[Worker]) -> list[Problem]:
    """Every way the workers' facts do not fit this manager, each naming the worker and what differs."""
    problems: list[Problem] = []
    frameworks = kueue_frameworks(config)
    for framework in frameworks:
        if framework not in FRAMEWORK_RESOURCES:
            problems.append(
                Problem(
                    f"{CONFIG_PREFIX}:kueue.frameworks",
                    (
                        f"{framework!r} has no MultiKueue adapter in Kueue {config.kueue.version}: a manager would "
                        "reject "
                        "every such workload; remove it from the manager's frameworks"
                    ),
                )
            )
    queue_names: dict[str, tuple[str, dict[str, str]]] = {}  # team -> (first worker, its mirrored LocalQueues)
    for i, worker in enumerate(workers):
        path = f"{CONFIG_PREFIX}:multiKueue.workers[{i}]"
        facts = worker.facts
        where = f"worker {worker.name!r} (stack {worker.stack})"
        if facts is None:
            problems.append(
                Problem(
                    f"{path}.stack",
                    (
                        f"{where} has no {FACTS_OUTPUT} output: deploy it first (pulumi up on a stack with "
                        "multiKueue.role: "
                        "worker); a worker that was destroyed must be removed from multiKueue.workers"
                    ),
                )
            )
            continue
        if facts.get("factsVersion") != FACTS_VERSION:
            problems.append(
                Problem(
                    f"{path}.stack",
                    (
                        f"{where} was deployed by another kueue-aks version (facts version "
                        f"{facts.get('factsVersion')!r}, "
                        f"this program reads {FACTS_VERSION}); run pulumi up on the worker with this version first"
                    ),
                )
            )
            continue
        if facts["kueueVersion"] != config.kueue.running_version:
            problems.append(
                Problem(
                    f"{path}.stack",
                    (
                        f"{where} runs Kueue {facts['kueueVersion']}, this manager {config.kueue.running_version}: "
                        "manager and "
                        "workers must run the same pinned version (kueue.version); upgrade them together"
                    ),
                )
            )
        missing = [f for f in frameworks if f not in facts["frameworks"]]
        if missing:
            problems.append(
                Problem(
                    f"{path}.stack",
                    (
                        f"{where} does not run {', '.join(missing)}, which this manager enables: Kueue keeps a worker "
                        "without a kind's CRD disconnected; enable them on the worker (kueue.frameworks, and "
                        "governance "
                        "for 'pod') or remove them from the manager's"
                    ),
                )
            )
        for pc in config.priority_classes:
            value = facts["priorityClasses"].get(pc.name)
            if value != pc.value:
                problems.append(
                    Problem(
                        f"{path}.stack",
                        (
                            f"{where} has priority class {pc.name!r} "
                            + ("missing" if value is None else f"= {value}")
                            + f", this manager {pc.value}: jobs that name it are created on the worker with its class; "
                            "give every stack the same priorityClasses"
                        ),
                    )
                )
        for team in config.teams:
            if team.name not in facts["teams"]:
                problems.append(
                    Problem(
                        f"{path}.stack",
                        (
                            f"{where} has no team {team.name!r}: Kueue runs a job on a worker only in the same "
                            "namespace "
                            "and LocalQueue as on the manager; add the team to the worker stack"
                        ),
                    )
                )
                continue
            mirrored = _mirrored(facts, team.name)
            if not mirrored:
                problems.append(
                    Problem(
                        f"{path}.stack",
                        (
                            f"{where}: team {team.name!r} has only topology-aware pools there, which a manager does "
                            "not "
                            "dispatch to; give it an ordinary pool on the worker"
                        ),
                    )
                )
                continue
            first = queue_names.setdefault(team.name, (worker.name, mirrored))
            if sorted(first[1]) != sorted(mirrored):
                problems.append(
                    Problem(
                        f"{path}.stack",
                        (
                            f"{where}: team {team.name!r} has LocalQueues {', '.join(sorted(mirrored))}, worker "
                            f"{first[0]!r} has {', '.join(sorted(first[1]))}: the LocalQueue names must match on "
                            "every worker"
                        ),
                    )
                )
    return problems


@dataclass(frozen=True)
class WorkerQuota:
    """One team, flavor and resource on the manager: what each worker holds of it (display units)."""

    team: str
    flavor: str
    resource: str
    workers: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.workers.values())


def _flavors(workers: Sequence[Worker]) -> list[Mapping[str, Any]]:
    """The workers' ordinary flavors by name, in the first worker's order, then each next one's new ones."""
    seen: dict[str, Mapping[str, Any]] = {}
    for worker in workers:
        for flavor in (worker.facts or {}).get("flavors", []):
            if not flavor["topologyAware"]:
                seen.setdefault(flavor["name"], flavor)
    return list(seen.values())


def _resources(workers: Sequence[Worker]) -> list[str]:
    gpu = any(f["gpu"] for w in workers for f in (w.facts or {}).get("flavors", []) if not f["topologyAware"])
    return [RESOURCE_CPU, RESOURCE_MEMORY] + ([RESOURCE_GPU] if gpu else [])


def _team_quota(facts: Mapping[str, Any], team: str, flavor: str, resource: str) -> int | None:
    """A team's quota on one worker for a flavor and resource, over its mirrored queues; None when
    the worker has no such team or quota."""
    if team not in facts["teams"]:
        return None
    queues = facts["clusterQueues"]
    amounts = [queues[cq]["quota"].get(flavor, {}).get(resource) for cq in set(_mirrored(facts, team).values())]
    found = [a for a in amounts if a is not None]
    return sum(found) if found else None


def worker_quotas(config: StackConfig, workers: Sequence[Worker]) -> list[WorkerQuota]:
    """Each team's quota per flavor and resource on every worker, in its mirrored queues."""
    rows = []
    for team in config.teams:
        for flavor in _flavors(workers):
            for resource in _resources(workers):
                held = {
                    w.name: amount
                    for w in workers
                    if w.facts is not None
                    and (amount := _team_quota(w.facts, team.name, flavor["name"], resource)) is not None
                }
                if held:
                    rows.append(WorkerQuota(team.name, flavor["name"], resource, held))
    return rows


def _capacity(workers: Sequence[Worker], flavor: str, resource: str) -> int:
    """A flavor's capacity summed over the workers that have it."""
    return sum(
        f["capacity"].get(resource, 0)
        for w in workers
        for f in (w.facts or {}).get("flavors", [])
        if f["name"] == flavor
    )


def _cohort_remainder(workers: Sequence[Worker], flavor: str, resource: str) -> int:
    """What no team holds of a flavor, summed over the workers."""
    return sum((w.facts or {}).get("cohort", {}).get(flavor, {}).get(resource, 0) for w in workers)


def manager_quota_table(config: StackConfig, workers: Sequence[Worker]) -> list[QuotaRow]:
    """The quota table of the manager, in the single cluster's shape: capacity, each team's quota
    and the cohort's remainder, all summed over the workers."""
    quotas = worker_quotas(config, workers)
    rows = []
    for flavor in _flavors(workers):
        for resource in _resources(workers):
            teams = {q.team: q.total for q in quotas if q.flavor == flavor["name"] and q.resource == resource}
            rows.append(
                QuotaRow(
                    flavor["name"],
                    resource,
                    _capacity(workers, flavor["name"], resource),
                    teams,
                    _cohort_remainder(workers, flavor["name"], resource),
                    False,
                )
            )
    return rows


def _first_facts(workers: Sequence[Worker]) -> Mapping[str, Any]:
    """The first worker's facts, which name the teams' LocalQueues and weights on the manager
    (worker_problems has checked that every worker has facts and the same LocalQueues)."""
    return next(w.facts for w in workers if w.facts)


def manager_local_queues(config: StackConfig, workers: Sequence[Worker]) -> dict[str, dict[str, str]]:
    """team -> LocalQueue -> the manager's ClusterQueue (the team's name), as on the first worker."""
    first = _first_facts(workers)
    return {t.name: {lq: t.name for lq in _mirrored(first, t.name)} for t in config.teams}


def manager_teams(config: StackConfig, workers: Sequence[Worker]) -> tuple[Team, ...]:
    """The manager's teams as its ClusterQueues have them: each with its share on the first worker,
    which is its fair-sharing weight on the manager (a manager's own config gives no share)."""
    first = _first_facts(workers)
    return tuple(replace(t, share=Decimal(first["teams"][t.name]["share"])) for t in config.teams)


def _amount_of(team: str) -> Callable[[QuotaRow], int | None]:
    """A row's amount for `team` (None where the team has none)."""
    return lambda row: row.teams.get(team)


def cluster_object(worker: str) -> dict[str, Any]:
    """The MultiKueueCluster of a worker, reading its kubeconfig from the worker's Secret."""
    return {
        "apiVersion": API_VERSION,
        "kind": "MultiKueueCluster",
        "metadata": object_meta(worker),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret(worker)}}},
    }


def manager_objects(config: StackConfig, workers: Sequence[Worker], rows: list[QuotaRow]) -> list[dict[str, Any]]:
    """Every Kueue object of a manager and the team namespaces, in apply order, with the quotas of
    manager_quota_table. Expects worker_problems() to have found nothing."""
    resources = _resources(workers)
    objects: list[dict[str, Any]] = [
        {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": object_meta(f["name"]), "spec": {}}
        for f in _flavors(workers)
    ]
    objects.append(cohort(resources, rows))
    objects += [cluster_object(w.name) for w in workers]
    objects.append(
        {
            "apiVersion": API_VERSION,
            "kind": "MultiKueueConfig",
            "metadata": object_meta(MULTIKUEUE_CONFIG),
            "spec": {"clusters": [w.name for w in workers]},
        }
    )
    objects.append(
        {
            "apiVersion": API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": object_meta(ADMISSION_CHECK),
            "spec": {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": MULTIKUEUE_CONFIG},
            },
        }
    )
    # One check for every flavor: Kueue keeps a ClusterQueue with a per-flavor MultiKueue check inactive.
    objects += [
        team_cluster_queue(
            t.name,
            t.name,
            t.share,
            resource_group(resources, rows, _amount_of(t.name), t.borrowing),
            [{"name": ADMISSION_CHECK}],
        )
        for t in manager_teams(config, workers)
    ]
    objects += [namespace(t) for t in config.teams]
    objects += [
        local_queue(lq, team, cq)
        for team, queues in manager_local_queues(config, workers).items()
        for lq, cq in queues.items()
    ]
    objects += priority_classes(config)
    return objects


def manager_capacity(rows: Sequence[QuotaRow]) -> dict[str, dict[str, Any]]:
    """flavor -> resource -> the workers' summed capacity (from the manager's quota table), for the
    validator's capacity check."""
    capacity: dict[str, dict[str, Any]] = {}
    for row in rows:
        capacity.setdefault(row.flavor, {})[row.resource] = format_quantity(row.resource, row.capacity)
    return capacity


def manager_queue_set(config: StackConfig, workers: Sequence[Worker]) -> QueueSet:
    """A manager's Kueue objects, capacity, quota rows and LocalQueues, all from its workers' facts
    (the quota table computed once)."""
    rows = manager_quota_table(config, workers)
    local_queues = {
        team: {
            lq: {"clusterQueue": cq, "topologyAware": False, "workers": [w.name for w in workers]}
            for lq, cq in queues.items()
        }
        for team, queues in manager_local_queues(config, workers).items()
    }
    return QueueSet(
        manager_objects(config, workers, rows),
        manager_capacity(rows),
        rows,
        local_queues,
        manager_teams(config, workers),
    )


def secret_object(worker: str, kubeconfig: Any) -> dict[str, Any]:
    """The manager's Secret for a worker's kubeconfig (in the program a secret Output)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": object_meta(kubeconfig_secret(worker), KUEUE_NAMESPACE),
        "stringData": {SECRET_KEY: kubeconfig},
    }
