"""Scenario 6: `pulumi destroy` with work in flight finishes promptly and leaves nothing behind.

Replays the program's destroy graph (destroy.py) while Jobs of every batch/v1 sample are admitted
and running in the team namespaces, one of them borrowing. These tests run last on their stack's
control plane (tests/conftest.py sorts this module last within a stack).
"""

from __future__ import annotations

import yaml

from components.config import KUEUE_NAMESPACE
from components.scrape import scrape_objects
from tests.harness import ROOT

from .cluster import is_true
from .conftest import on_stacks, report
from .destroy import destroy, object_ref
from .jobs import RUN_FOR_ANNOTATION, job, wait_admitted
from .stack_cluster import StackCluster

# What `pulumi destroy` of the dev stack may take here, jobs running: measured about 20 s.
DESTROY_BUDGET_SECONDS = 120
SAMPLES = ("cpu-job.yaml", "gpu-job.yaml", "tas-job.yaml")


def _running_samples(cluster: StackCluster) -> list[tuple[str, str]]:
    """Submit every batch/v1 sample, pods kept running, plus a job that borrows; wait for admission."""
    jobs = []
    for sample in SAMPLES:
        obj = yaml.safe_load((ROOT / "examples" / sample).read_text())
        obj["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[RUN_FOR_ANNOTATION] = "1h"
        jobs.append(obj)
    jobs.append(job("platform", "borrower", pods=2, requests={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
                    run_for="1h"))
    cluster.kubectl.apply(jobs)
    for obj in jobs:
        wait_admitted(cluster, obj["metadata"]["namespace"], obj["metadata"]["name"])
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in jobs]


@on_stacks("dev")
def test_destroy_with_jobs_running_finishes_and_leaves_nothing(cluster: StackCluster) -> None:
    running = _running_samples(cluster)
    result = destroy(cluster)
    report(f"e2e[{cluster.stack}]: destroy with {len(running)} jobs running took {result.seconds:.1f} s; "
           f"finished at (s): {result.took}")
    assert not result.failed, f"destroy did not finish: {result.failed}"
    assert result.seconds <= DESTROY_BUDGET_SECONDS, result.took

    kubectl = cluster.kubectl
    namespaces = kubectl.items("namespaces")
    stuck = [n["metadata"]["name"] for n in namespaces if n["status"].get("phase") == "Terminating"]
    assert not stuck, f"namespaces stuck Terminating: {stuck}"
    left_namespaces = {n["metadata"]["name"] for n in namespaces} & (
        {t.name for t in cluster.config.teams} | {KUEUE_NAMESPACE})
    assert not left_namespaces, left_namespaces
    crds = [c for c in kubectl.run("get", "crds", "-o", "name").stdout.split() if "kueue.x-k8s.io" in c]
    assert not crds, crds
    left_roles = [r for r in kubectl.run("get", "clusterroles,clusterrolebindings", "-o", "name").stdout.split()
                  if "/kueue-" in r]
    assert not left_roles, f"left behind: {left_roles}"
    webhooks = [w for w in kubectl.run("get", "validatingwebhookconfigurations,mutatingwebhookconfigurations,"
                                       "apiservices", "-o", "name").stdout.split() if "kueue" in w]
    assert not webhooks, webhooks
    guards = kubectl.run("get", "validatingadmissionpolicies,validatingadmissionpolicybindings", "-o", "name").stdout.split()
    assert not guards, guards
    scraping = [" ".join(object_ref(o)) for o in scrape_objects(cluster.config)
                if kubectl.run("get", *object_ref(o), check=False).returncode == 0]
    assert not scraping, f"monitoring's objects left behind: {scraping}"
    assert all(is_true(n, "Ready") for n in kubectl.items("nodes"))
