"""MultiKueue on three local control planes with the real Kueue controller in each: the example
manager (examples/multikueue/Pulumi.batch-manager.yaml) dispatching to its two workers.

The workers differ in one way the scenarios use: westus3 has two A100 nodes and swedencentral one,
so a two-GPU job can run only in westus3, and once it does, a one-GPU job only in swedencentral.
The last scenario stops a worker's control plane, so it comes last; the tests run in file order.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from components.config.names import KUEUE_NAMESPACE
from components.multikueue.manager import (
    ADMISSION_CHECK,
    cluster_object,
    kubeconfig_secret,
    manager_queue_set,
    secret_object,
)
from components.multikueue.worker import CLUSTER_ROLE, SERVICE_ACCOUNT, manager_access_objects, worker_rules
from components.monitoring.scrape import service_monitor

from testbed.cluster import condition, conditions, is_true, status, wait_for
from testbed.control_planes import MULTIKUEUE_UP_BUDGET_SECONDS, ControlPlanes, on_stacks
from testbed.jobs import job, workload_of
from testbed.kinds import KINDS, prepared
from testbed.measurements import report
from testbed.multikueue import MULTIKUEUE, MultiKueueClusters, kubeconfig_with
from testbed.scraping import samples, scrape_as
from testbed.stacks import WORKER_LOST_TIMEOUT_SECONDS

ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"  # an annotation in 0.19 (pkg/controller/constants)
GPU = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}


@pytest.fixture
def mk(stack: str, control_planes: ControlPlanes) -> MultiKueueClusters:
    return control_planes.multikueue()


@pytest.fixture
def jobs(mk: MultiKueueClusters) -> Iterator[list[tuple[str, str]]]:
    """(namespace, Job name) pairs a scenario submits on the manager; deleted when it ends."""
    made: list[tuple[str, str]] = []
    yield made
    for namespace, name in made:
        mk.m.kubectl.run(
            "delete", "job", "-n", namespace, name, "--ignore-not-found", "--wait=true", "--timeout=60s", timeout=90
        )


def finished(mk: MultiKueueClusters, namespace: str, name: str, timeout: float = 90) -> dict[str, Any]:
    """The manager's Job once its status, synced from the worker, says Complete."""

    def probe() -> tuple[bool, Any]:
        found = mk.m.kubectl.get("job", "-n", namespace, name)
        return is_true(found, "Complete"), found if is_true(found, "Complete") else status(found)

    return wait_for(f"Job {namespace}/{name} on the manager to be Complete", probe, timeout)  # type: ignore[no-any-return]


def gone(mk: MultiKueueClusters, worker: str, resource: str, namespace: str, name: str, timeout: float = 60) -> None:
    wait_for(
        f"{resource} {namespace}/{name} to be deleted from worker {worker}",
        lambda: (mk.remote(worker, resource, namespace, name) is None, mk.remote(worker, resource, namespace, name)),
        timeout,
    )


@on_stacks(MULTIKUEUE)
def test_multikueue_workers_connected_and_queues_active(mk: MultiKueueClusters) -> None:
    manager = mk.m.kubectl
    clusters = manager.items("multikueueclusters.kueue.x-k8s.io")
    assert sorted(c["metadata"]["name"] for c in clusters) == sorted(mk.workers), clusters
    for cluster in clusters:
        assert is_true(cluster, "Active"), (cluster["metadata"]["name"], conditions(cluster))
    check = manager.get("admissionchecks.kueue.x-k8s.io", ADMISSION_CHECK)
    assert is_true(check, "Active"), conditions(check)
    for queue in manager.items("clusterqueues.kueue.x-k8s.io"):
        assert is_true(queue, "Active"), (queue["metadata"]["name"], conditions(queue))
    # The worker's credential is the program's: a token for its own ServiceAccount with the
    # program's rules, nothing more (it may not read Secrets or touch Deployments).
    for name, worker in mk.workers.items():
        role = worker.kubectl.get("clusterrole", CLUSTER_ROLE)
        assert role["rules"] == worker_rules(worker.config), name
        subject = f"--as=system:serviceaccount:{KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
        for verb, resource, allowed in (
            ("create", "jobs.batch", "yes"),
            ("patch", "workloads.kueue.x-k8s.io/status", "yes"),
            ("get", "secrets", "no"),
            ("create", "deployments.apps", "no"),
        ):
            done = worker.kubectl.run("auth", "can-i", verb, resource, "-n", "research", subject, check=False)
            assert done.stdout.strip() == allowed, (name, verb, resource, done.stdout, done.stderr)
    assert mk.up_seconds <= MULTIKUEUE_UP_BUDGET_SECONDS, (
        f"two workers and the manager took {mk.up_seconds:.1f} s (budget {MULTIKUEUE_UP_BUDGET_SECONDS:g} s): {mk.timings}"
    )


@on_stacks(MULTIKUEUE)
def test_multikueue_a_cut_rule_disconnects_the_worker(mk: MultiKueueClusters) -> None:
    """Each rule the manager watches with is needed: a kubeconfig for a ServiceAccount that lacks
    one of them (here, for westus3) leaves its MultiKueueCluster disconnected. Not in the
    MultiKueueConfig, so no job is ever sent there."""
    worker = mk.workers["westus3"]
    watched = [r for r in worker_rules(worker.config) if "/" not in r["resources"][0]]
    cut_names = []
    try:
        for rule in watched:
            cut = f"cut-{rule['resources'][0]}"
            objects = copy.deepcopy(manager_access_objects(worker.config))
            for obj in objects:
                obj["metadata"]["name"] = f"{cut}-{obj['metadata']['name'].replace(':', '-')}"
            sa, role, binding, token = objects
            role["rules"] = [r for r in role["rules"] if r != rule]
            binding["roleRef"]["name"] = role["metadata"]["name"]
            binding["subjects"][0]["name"] = sa["metadata"]["name"]
            token["metadata"]["annotations"]["kubernetes.io/service-account.name"] = sa["metadata"]["name"]
            worker.kubectl.apply(objects)
            kubeconfig = kubeconfig_with(worker, token["metadata"]["name"])
            mk.m.kubectl.apply([secret_object(cut, kubeconfig), cluster_object(cut)])
            cut_names.append((cut, rule["resources"][0]))

        def all_refused() -> tuple[bool, Any]:
            seen = {
                cut: condition(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", cut), "Active")
                for cut, _ in cut_names
            }
            # Until Kueue has the Secret in its cache a cluster may first read BadKubeConfig
            # ("Secret … not found", seen under load); what matters is where it settles.
            refused = all(
                c is not None and c.get("status") == "False" and c.get("reason") == "ClientConnectionFailed"
                for c in seen.values()
            )
            return refused, seen

        seen = wait_for("every MultiKueueCluster with a cut rule to be disconnected", all_refused, 60)
        for (cut, resource), cond in zip(cut_names, seen.values()):
            assert cond["reason"] == "ClientConnectionFailed", (cut, cond)
            assert "forbidden" in cond["message"].lower() and resource.split("/")[0] in cond["message"], (cut, cond)
        # The program's own rules connect (test above): the difference is the rule alone.
        assert is_true(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", "westus3"), "Active")
    finally:
        for cut, _ in cut_names:
            mk.m.kubectl.run("delete", "multikueuecluster.kueue.x-k8s.io", cut, "--ignore-not-found", check=False)
            mk.m.kubectl.run(
                "delete", "secret", "-n", KUEUE_NAMESPACE, kubeconfig_secret(cut), "--ignore-not-found", check=False
            )


@on_stacks(MULTIKUEUE)
def test_multikueue_job_runs_on_a_worker_and_reports_back(mk: MultiKueueClusters, jobs: list[tuple[str, str]]) -> None:
    mk.m.kubectl.apply([job("research", "mk-hello")])
    jobs.append(("research", "mk-hello"))
    local = mk.m.kubectl.get("job", "-n", "research", "mk-hello")
    # Kueue's webhook hands the Job to MultiKueue: the manager's Job controller leaves it alone.
    assert local["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue", local["spec"]
    workload, where = mk.dispatched("research", "mk-hello")
    remote = mk.remote(where, "job", "research", "mk-hello")
    assert remote is not None, f"no copy of the Job in worker {where}"
    meta = remote["metadata"]
    # Kueue 0.19 marks the copy with the manager's origin and the Workload it belongs to.
    assert meta["labels"].get(ORIGIN_LABEL) == mk.m.config.multi_kueue.origin, meta
    assert (meta.get("annotations") or {}).get(PREBUILT) == workload["metadata"]["name"], meta
    done = finished(mk, "research", "mk-hello")
    assert status(done).get("succeeded") == 1, status(done)
    assert not mk.m.kubectl.items("pods", "-n", "research"), "a pod ran on the manager"
    # Only the chosen worker kept a copy (AllAtOnce copies to every worker, then keeps the admitting one).
    other = next(n for n in mk.workers if n != where)
    assert mk.remote(other, "job", "research", "mk-hello") is None
    report(f"e2e[{MULTIKUEUE}]: a Job submitted on the manager ran in worker {where}, its status came back")


@on_stacks(MULTIKUEUE)
def test_multikueue_jobset_runs_on_a_worker_and_reports_back(mk: MultiKueueClusters) -> None:
    kind = KINDS["JobSet"]
    doc = prepared(mk.m, "JobSet", kind.load())
    name, namespace = doc["metadata"]["name"], doc["metadata"]["namespace"]
    mk.m.kubectl.apply([doc])
    try:
        _, where = mk.dispatched(namespace, name, kind="JobSet")
        assert mk.remote(where, kind.resource, namespace, name) is not None

        def completed() -> tuple[bool, Any]:
            found = mk.m.kubectl.get(kind.resource, "-n", namespace, name)
            return is_true(found, "Completed"), status(found)

        wait_for(f"JobSet {namespace}/{name} on the manager to be Completed", completed, 120)
        assert not mk.m.kubectl.items("pods", "-n", namespace), "a pod ran on the manager"
        report(f"e2e[{MULTIKUEUE}]: a JobSet submitted on the manager ran in worker {where}, its status came back")
    finally:
        mk.m.kubectl.run(
            "delete",
            kind.resource,
            "-n",
            namespace,
            name,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=60s",
            timeout=90,
        )


@on_stacks(MULTIKUEUE)
def test_multikueue_full_worker_sends_the_next_job_to_the_other(
    mk: MultiKueueClusters, jobs: list[tuple[str, str]]
) -> None:
    # Two GPUs fit only westus3 (two A100 nodes; swedencentral has one).
    mk.m.kubectl.apply([job("research", "mk-two-gpus", pods=2, requests=GPU, run_for="10m")])
    jobs.append(("research", "mk-two-gpus"))
    _, first = mk.dispatched("research", "mk-two-gpus")
    assert first == "westus3", first
    # westus3's GPUs are all taken now: a one-GPU job can only be admitted by swedencentral.
    mk.m.kubectl.apply([job("research", "mk-one-gpu", requests=GPU, run_for="10m")])
    jobs.append(("research", "mk-one-gpu"))
    _, second = mk.dispatched("research", "mk-one-gpu")
    assert second == "swedencentral", second
    report(f"e2e[{MULTIKUEUE}]: with westus3's GPUs taken, the next GPU job went to {second}")


@on_stacks(MULTIKUEUE)
def test_multikueue_deleting_a_job_on_the_manager_deletes_its_copy(mk: MultiKueueClusters) -> None:
    mk.m.kubectl.apply([job("platform", "mk-delete-me", run_for="10m")])
    _, where = mk.dispatched("platform", "mk-delete-me")
    assert mk.remote(where, "job", "platform", "mk-delete-me") is not None
    mk.m.kubectl.run("delete", "job", "-n", "platform", "mk-delete-me", "--wait=true", "--timeout=60s", timeout=90)
    gone(mk, where, "job", "platform", "mk-delete-me")
    wait_for(
        f"the remote Workload in {where} to be deleted",
        lambda: (
            not mk.workers[where].kubectl.items("workloads.kueue.x-k8s.io", "-n", "platform"),
            [
                w["metadata"]["name"]
                for w in mk.workers[where].kubectl.items("workloads.kueue.x-k8s.io", "-n", "platform")
            ],
        ),
        60,
    )


@on_stacks(MULTIKUEUE)
def test_multikueue_metrics_show_where_jobs_went(mk: MultiKueueClusters) -> None:
    monitor = service_monitor(mk.m.config)
    assert monitor is not None, "the example manager turns monitoring on"
    code, body = scrape_as(mk.m.kubectl, monitor)
    assert code == 200, body[:300]
    dispatched = {
        labels.get("cluster")
        for name, labels, _ in samples(body)
        if name == "multikueue_workloads_dispatched_total" and labels.get("cluster_queue") == "research"
    }
    admitted = {
        labels.get("cluster")
        for name, labels, _ in samples(body)
        if name == "multikueue_workloads_admitted_total" and labels.get("cluster_queue") == "research"
    }
    # The scenarios above ran research jobs in both workers (the GPU ones).
    assert dispatched == admitted == set(mk.workers), (dispatched, admitted)


@on_stacks(MULTIKUEUE)
def test_multikueue_removing_and_adding_a_worker_is_one_config_change(
    mk: MultiKueueClusters, jobs: list[tuple[str, str]]
) -> None:
    """The manager's objects rebuilt from a config without swedencentral, applied as `pulumi up`
    applies them (changed objects updated, the worker's MultiKueueCluster and Secret deleted): the
    queues shrink to westus3's quota and every job goes there; put back, it connects again."""
    config = mk.m.config
    kept = tuple(w for w in mk.m.workers if w.name == "westus3")
    smaller = replace(
        config,
        multi_kueue=replace(
            config.multi_kueue, workers=tuple(w for w in config.multi_kueue.workers if w.name == "westus3")
        ),
    )
    mk.m.kubectl.apply(manager_queue_set(smaller, kept).objects)
    mk.m.kubectl.run("delete", "multikueuecluster.kueue.x-k8s.io", "swedencentral", "--wait=true", "--timeout=60s")
    mk.m.kubectl.run("delete", "secret", "-n", KUEUE_NAMESPACE, kubeconfig_secret("swedencentral"))
    try:
        research = mk.m.kubectl.get("clusterqueue.kueue.x-k8s.io", "research")
        expected = next(
            o
            for o in manager_queue_set(smaller, kept).objects
            if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "research"
        )
        assert research["spec"]["resourceGroups"] == expected["spec"]["resourceGroups"]  # westus3's quota alone
        wait_for(
            "the AdmissionCheck to stay Active with one worker",
            lambda: (
                is_true(mk.m.kubectl.get("admissionchecks.kueue.x-k8s.io", ADMISSION_CHECK), "Active"),
                conditions(mk.m.kubectl.get("admissionchecks.kueue.x-k8s.io", ADMISSION_CHECK)),
            ),
            30,
        )
        mk.m.kubectl.apply([job("platform", "mk-one-worker")])
        jobs.append(("platform", "mk-one-worker"))
        _, where = mk.dispatched("platform", "mk-one-worker")
        assert where == "westus3", where
    finally:
        mk.m.kubectl.apply([secret_object(name, kubeconfig) for name, kubeconfig in mk.kubeconfigs.items()])
        mk.m.kubectl.apply(mk.m.objects)
    wait_for(
        "swedencentral to connect again once it is back in the config",
        lambda: (
            is_true(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", "swedencentral"), "Active"),
            conditions(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", "swedencentral")),
        ),
        60,
    )


@on_stacks(MULTIKUEUE)
def test_multikueue_lost_worker_jobs_run_again_elsewhere(mk: MultiKueueClusters, jobs: list[tuple[str, str]]) -> None:
    """A worker whose control plane stops: after workerLostTimeout the manager dispatches its job
    again, it runs once in the other worker, and when the lost worker comes back the manager
    deletes the copy it left there."""
    mk.m.kubectl.apply([job("platform", "mk-survivor", run_for="20s")])
    jobs.append(("platform", "mk-survivor"))
    workload, lost = mk.dispatched("platform", "mk-survivor")
    other = next(n for n in mk.workers if n != lost)
    mk.workers[lost].stop_control_plane()
    try:

        def moved() -> tuple[bool, Any]:
            wl = workload_of(mk.m, "platform", "mk-survivor")
            where = status(wl).get("clusterName") if wl else None
            return where == other, {
                "clusterName": where,
                "admissionChecks": status(wl).get("admissionChecks") if wl else None,
            }

        wait_for(f"the job to be dispatched to {other} after {lost} was lost", moved, WORKER_LOST_TIMEOUT_SECONDS + 90)
        done = finished(mk, "platform", "mk-survivor")
        assert status(done).get("succeeded") == 1, status(done)  # once, not once per worker
        remote = mk.remote(other, "job", "platform", "mk-survivor")
        assert remote is None or status(remote).get("succeeded") == 1, remote
    finally:
        mk.workers[lost].start_control_plane()
    # Back, the lost worker still holds its copy; the manager's garbage collector removes it.
    wait_for(
        f"worker {lost}'s MultiKueueCluster to connect again",
        lambda: (
            is_true(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", lost), "Active"),
            conditions(mk.m.kubectl.get("multikueueclusters.kueue.x-k8s.io", lost)),
        ),
        120,
    )
    gone(mk, lost, "job", "platform", "mk-survivor", timeout=90)
    report(
        f"e2e[{MULTIKUEUE}]: with {lost} lost, its job ran again in {other} after workerLostTimeout "
        f"({WORKER_LOST_TIMEOUT_SECONDS} s); the copy left in {lost} was deleted when it came back"
    )
