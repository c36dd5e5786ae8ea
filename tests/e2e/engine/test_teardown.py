"""Scenario 6: `pulumi destroy` with work in flight finishes promptly and leaves nothing behind.

Replays the program's destroy graph (destroy.py) while Jobs of every batch/v1 sample are admitted
and running in the team namespaces, one of them borrowing. These tests run last on their stack's
control plane (tests/conftest.py sorts this module last within a stack).
"""

from __future__ import annotations

import yaml

from components.config.names import KUEUE_NAMESPACE
from components.monitoring.scrape import scrape_objects
from testbed.cluster import is_true
from testbed.control_planes import on_stacks
from testbed.destroy import destroy, kueue_cluster_objects, object_ref
from testbed.harness import ROOT
from testbed.jobs import RUN_FOR_ANNOTATION, job, wait_admitted
from testbed.kinds import KINDS, keep_running, prepared
from testbed.measurements import report
from testbed.stack_cluster import StackCluster


# What `pulumi destroy` of the dev stack may take here, jobs running: measured about 20 s.
DESTROY_BUDGET_SECONDS = 120
# Each in a team namespace (the samples name none): gpu-job.yaml holds platform's own GPU.
SAMPLES = {"cpu-job.yaml": "research", "gpu-job.yaml": "platform", "tas-job.yaml": "research"}


def _running_samples(cluster: StackCluster) -> list[tuple[str, str]]:
    """Submit every batch/v1 sample, pods kept running, plus a job that borrows; wait for admission."""
    jobs = []
    for sample, team in SAMPLES.items():
        obj = yaml.safe_load((ROOT / "examples" / sample).read_text())
        obj["metadata"]["namespace"] = team
        obj["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[RUN_FOR_ANNOTATION] = "1h"
        jobs.append(obj)
    # One GPU beyond the team's nominal one (gpu-job.yaml's): a borrower that leaves one of the
    # pool's three nodes free, so a node an earlier scenario's request still holds cannot stop it.
    jobs.append(
        job(
            "platform",
            "borrower",
            pods=1,
            requests={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
            run_for="1h",
        )
    )
    cluster.kubectl.apply(jobs)
    for obj in jobs:
        wait_admitted(cluster, obj["metadata"]["namespace"], obj["metadata"]["name"])
    running = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in jobs]
    if cluster.operators.installs:  # and one job of every operator's kind, admitted and running
        for kind, spec in KINDS.items():
            # A TrainJob on the stack's own runtime, kept running by a runtime patch (kinds.py).
            doc = prepared(cluster, kind, spec.load(), keep_running)
            cluster.kubectl.apply([doc])
            wait_admitted(cluster, doc["metadata"]["namespace"], doc["metadata"]["name"], kind=kind)
            running.append((doc["metadata"]["namespace"], doc["metadata"]["name"]))
    return running


@on_stacks("dev")
def test_destroy_with_jobs_running_finishes_and_leaves_nothing(cluster: StackCluster) -> None:
    running = _running_samples(cluster)
    result = destroy(cluster)
    report(
        f"e2e[{cluster.stack}]: destroy with {len(running)} jobs running took {result.seconds:.1f} s; "
        f"finished at (s): {result.took}"
    )
    assert not result.failed, f"destroy did not finish: {result.failed}"
    assert result.seconds <= DESTROY_BUDGET_SECONDS, result.took

    kubectl = cluster.kubectl
    namespaces = kubectl.items("namespaces")
    stuck = [n["metadata"]["name"] for n in namespaces if n["status"].get("phase") == "Terminating"]
    assert not stuck, f"namespaces stuck Terminating: {stuck}"
    left_namespaces = {n["metadata"]["name"] for n in namespaces} & (
        {t.name for t in cluster.config.teams} | {KUEUE_NAMESPACE}
    )
    assert not left_namespaces, left_namespaces
    crds = [c for c in kubectl.run("get", "crds", "-o", "name").stdout.split() if "kueue.x-k8s.io" in c]
    assert not crds, crds
    for what, left_behind in kueue_cluster_objects(kubectl).items():
        assert not left_behind, f"{what} left behind: {left_behind}"
    scraping = [
        " ".join(object_ref(o))
        for o in scrape_objects(cluster.config)
        if kubectl.run("get", *object_ref(o), check=False).returncode == 0
    ]
    assert not scraping, f"monitoring's objects left behind: {scraping}"
    operators = cluster.operators.installs
    left_operator_namespaces = {n["metadata"]["name"] for n in namespaces} & {i.namespace for i in operators}
    assert not left_operator_namespaces, left_operator_namespaces
    operator_crds = {c["metadata"]["name"] for i in operators for c in i.crds}
    left_crds = [
        c for c in kubectl.run("get", "crds", "-o", "name").stdout.split() if c.split("/", 1)[1] in operator_crds
    ]
    assert not left_crds, f"operator CRDs left behind: {left_crds}"
    operator_hooks = [
        w
        for w in kubectl.run(
            "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "name"
        ).stdout.split()
        if any(word in w for word in ("jobset", "trainer", "training-operator", "ray"))
    ]
    assert not operator_hooks, operator_hooks
    assert all(is_true(n, "Ready") for n in kubectl.items("nodes"))
    # The autoscaler ran throughout: Kueue's ProvisioningRequests and their PodTemplates went with
    # the team namespaces, and the API itself, the platform's, stays.
    requests = kubectl.run(
        "get", "provisioningrequests.autoscaling.x-k8s.io,podtemplates", "-A", "-o", "name"
    ).stdout.split()
    assert not requests, f"left behind: {requests}"
    assert kubectl.run("get", "crd", "provisioningrequests.autoscaling.x-k8s.io", check=False).returncode == 0
