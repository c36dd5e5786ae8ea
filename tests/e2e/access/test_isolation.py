"""Scenario 5: Kueue leaves unmanaged namespaces alone, and a team cannot use another's queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.kueue.objects import API_VERSION

from testbed.cluster import conditions, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, job, wait_pods_placed, workload_of
from testbed.stack_cluster import StackCluster


@pytest.fixture
def sandbox(cluster: StackCluster) -> Iterator[str]:
    """A namespace without the managed label, as any user might create."""
    cluster.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sandbox"}}])
    yield "sandbox"
    cluster.kubectl.run("delete", "namespace", "sandbox", "--wait=true", "--timeout=60s", timeout=90)


@on_stacks("dev")
def test_job_outside_team_namespaces_is_not_managed(cluster: StackCluster, sandbox: str) -> None:
    cluster.kubectl.apply([job(sandbox, "unmanaged", queue="default")])
    wait_pods_placed(cluster, sandbox, "unmanaged", 1)
    stored = cluster.kubectl.get("job", "unmanaged", "-n", sandbox)
    assert not stored["spec"].get("suspend"), "Kueue suspended a Job in a namespace it must not manage"
    assert workload_of(cluster, sandbox, "unmanaged") is None


@pytest.fixture
def foreign_queue(cluster: StackCluster) -> Iterator[str]:
    """A LocalQueue in research's namespace that names platform's ClusterQueue."""
    lq = {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": "foreign", "namespace": "research"},
        "spec": {"clusterQueue": "platform"},
    }
    cluster.kubectl.apply([lq])
    yield "foreign"
    delete_jobs(cluster, "research", "trespasser")
    cluster.kubectl.run("delete", "localqueue.kueue.x-k8s.io", "foreign", "-n", "research", "--wait=true")


@on_stacks("dev")
def test_team_cannot_use_another_teams_cluster_queue(cluster: StackCluster, foreign_queue: str) -> None:
    cluster.kubectl.apply([job("research", "trespasser", queue=foreign_queue)])

    def pending_with_reason() -> tuple[bool, object]:
        wl = workload_of(cluster, "research", "trespasser")
        seen = conditions(wl or {})
        messages = " ".join(c.get("message", "") for c in seen)
        return "doesn't match ClusterQueue selector" in messages, seen

    wait_for("the Workload to be refused by platform's namespaceSelector", pending_with_reason, 30)
    wl = workload_of(cluster, "research", "trespasser")
    assert wl is not None
    assert not any(
        c["type"] in ("QuotaReserved", "Admitted") and c["status"] == "True" for c in wl["status"]["conditions"]
    )
