"""What a team member sees of their place in the queue: Kueue's visibility API, served by the real
Kueue through the real API server, read by a member of the team (stacks.member_group, through the
stack's RoleBinding to Kueue's batch-user role) through the API and through `kubectl kueue`.

On the dev stack, research's `default` LocalQueue is made full: a high-priority Job holds all the
CPU its ClusterQueue can use on the cpu flavor (its own quota and what it may borrow in the
cohort) in one pod larger than any node, so it holds the quota without adding a node. Then a
low-priority Job and one without a priority label, both pinned to the cpu pool, pend behind it;
the later one is first in the queue: without a label a job runs at `normal`'s priority, above
`low` (components/config/teams.py DEFAULT_PRIORITY).
"""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from components.config.names import POOL_LABEL
from components.k8s.quantity import parse_quantity

from testbed.cluster import ADMIN_CERT_USER, condition, kubeconfig_entries, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, job, wait_admitted, workload_of
from testbed.kueue_controller import SERVICE_PORT, VISIBILITY_SERVICE
from testbed.stack_cluster import StackCluster

GROUP = "visibility.kueue.x-k8s.io"
TEAM, QUEUE = "research", "default"
PENDING_PATH = f"/apis/{GROUP}/v1beta2/namespaces/{TEAM}/localqueues/{QUEUE}/pendingworkloads"
HOLDER = "visibility-holder"
# In the order they are submitted, and the order Kueue queues them in: by priority first.
SUBMITTED, QUEUED = ("visibility-low", "visibility-unlabelled"), ("visibility-unlabelled", "visibility-low")
PRIORITY = {"visibility-low": "low", "visibility-unlabelled": None}
ON_CPU = {POOL_LABEL: "cpu"}


def cpu_the_queue_can_use(cluster: StackCluster) -> Decimal:
    """The cpu flavor's CPU that the team's ClusterQueue can be admitted to: the nominal quotas of
    every ClusterQueue in its cohort and the cohort's own (none sets a lending limit)."""

    def on_cpu_flavor(spec: dict[str, Any]) -> Decimal:
        return sum(
            (
                parse_quantity(r["nominalQuota"])
                for g in spec.get("resourceGroups", [])
                for f in g["flavors"]
                if f["name"] == "cpu"
                for r in f["resources"]
                if r["name"] == "cpu"
            ),
            Decimal(0),
        )

    cohort = cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", TEAM)["spec"]["cohortName"]
    queues = [
        q["spec"]
        for q in cluster.kubectl.items("clusterqueues.kueue.x-k8s.io")
        if q["spec"].get("cohortName") == cohort
    ]
    return sum(map(on_cpu_flavor, queues), on_cpu_flavor(cluster.kubectl.get("cohort.kueue.x-k8s.io", cohort)["spec"]))


def pending(cluster: StackCluster) -> list[dict[str, Any]]:
    """The LocalQueue's pending workloads, as a member of the team reads them through the API server."""
    return list(json.loads(cluster.member(TEAM).run("get", "--raw", PENDING_PATH).stdout)["items"])


@pytest.fixture
def full_queue(cluster: StackCluster) -> Iterator[dict[str, str]]:
    """The team's queue full, two Jobs pending behind it; yields their Workloads' names by Job name."""
    millicores = int(cpu_the_queue_can_use(cluster) * 1000)
    jobs = [HOLDER, *SUBMITTED]
    member = cluster.member(TEAM)
    try:
        member.apply(
            [
                job(
                    TEAM,
                    HOLDER,
                    requests={"cpu": f"{millicores}m", "memory": "64Mi"},
                    node_selector=ON_CPU,
                    priority="high",
                )
            ]
        )
        wait_admitted(cluster, TEAM, HOLDER, timeout=30)
        for name in SUBMITTED:
            member.apply([job(TEAM, name, node_selector=ON_CPU, priority=PRIORITY[name])])

        def listed() -> tuple[bool, Any]:
            workloads = {name: workload_of(cluster, TEAM, name) for name in SUBMITTED}
            names = {job_name: wl["metadata"]["name"] for job_name, wl in workloads.items() if wl is not None}
            seen = pending(cluster)
            return len(names) == len(SUBMITTED) and {w["metadata"]["name"] for w in seen} == set(names.values()), (
                names,
                seen,
            )

        workloads, _ = wait_for(f"both Jobs to pend in {TEAM}/{QUEUE} behind {HOLDER}", listed, 30)
        yield workloads
    finally:
        delete_jobs(cluster, TEAM, *jobs)


@on_stacks("dev")
def test_visibility_api_is_available(cluster: StackCluster) -> None:
    def available() -> tuple[bool, Any]:
        services = [cluster.kubectl.get("apiservice", f"{version}.{GROUP}") for version in ("v1beta2", "v1beta1")]
        seen = {s["metadata"]["name"]: condition(s, "Available") for s in services}
        return all(c is not None and c.get("status") == "True" for c in seen.values()), seen

    seen = wait_for(f"Kueue's {GROUP} APIServices to be Available", available, 60)
    for name, cond in seen.items():
        assert cond is not None and (cond.get("reason"), cond.get("message")) == ("Passed", "all checks passed"), (
            name,
            cond,
        )


@on_stacks("dev")
def test_visibility_api_lists_a_full_queues_pending_workloads_in_order(
    cluster: StackCluster, full_queue: dict[str, str]
) -> None:
    items = sorted(pending(cluster), key=lambda w: int(w["positionInLocalQueue"]))
    assert [(w["metadata"]["name"], w["positionInLocalQueue"], w["localQueueName"]) for w in items] == [
        (full_queue[name], position, QUEUE) for position, name in enumerate(QUEUED)
    ], items
    # The unlabelled job's priority is a number alone, and that number is normal's.
    normal = next(pc.value for pc in cluster.config.priority_classes if pc.name == "normal")
    unlabelled = workload_of(cluster, TEAM, "visibility-unlabelled")
    assert unlabelled is not None and unlabelled["spec"]["priority"] == normal, unlabelled
    assert "priorityClassRef" not in unlabelled["spec"], unlabelled["spec"]


@on_stacks("dev")
def test_visibility_kubectl_kueue_lists_pending_workloads_with_their_position(
    cluster: StackCluster, full_queue: dict[str, str]
) -> None:
    table = cluster.member(TEAM).kueue("list", "workload", "-n", TEAM).stdout
    rows = {row["NAME"]: row for row in columns(table)}
    positions = {name: rows[full_queue[name]]["POSITION IN QUEUE"] for name in QUEUED if full_queue[name] in rows}
    assert positions == {name: str(position) for position, name in enumerate(QUEUED)}, table
    assert {rows[full_queue[name]]["STATUS"] for name in QUEUED} == {"PENDING"}, table
    holder = workload_of(cluster, TEAM, HOLDER)
    assert holder is not None and rows[holder["metadata"]["name"]]["POSITION IN QUEUE"] == "", table


def columns(table: str) -> list[dict[str, str]]:
    """A kubectl table's rows by column name; the columns start where their headers do (tabwriter
    pads every cell to its column's width), so an empty cell reads as ""."""
    header, *lines = table.splitlines()
    names = [n.strip() for n in header.split("  ") if n.strip()]
    starts: list[int] = []
    for name in names:  # left to right: "NAME" is also the end of "JOB NAME"
        starts.append(header.index(name, starts[-1] + 1 if starts else 0))
    bounds = list(zip(starts, [*starts[1:], None]))
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, bounds)} for line in lines if line.strip()]


@on_stacks("dev")
def test_visibility_refuses_a_user_of_no_team(cluster: StackCluster) -> None:
    refused = cluster.kubectl.impersonating("nobody", ["e2e-nobodies"]).run("get", "--raw", PENDING_PATH, check=False)
    assert refused.returncode != 0
    assert (
        f'Error from server (Forbidden): localqueues.{GROUP} "{QUEUE}" is forbidden: User "nobody" cannot get '
        f'resource "localqueues/pendingworkloads" in API group "{GROUP}" in the namespace "{TEAM}"' in refused.stderr
    ), refused.stderr
    member = cluster.member(TEAM)
    wait_for(
        f"a member of {TEAM} to read {PENDING_PATH}",
        lambda: _answered(member.run("get", "--raw", PENDING_PATH, check=False)),
        20,
    )


def _answered(done: subprocess.CompletedProcess[str]) -> tuple[bool, str]:
    return done.returncode == 0 and json.loads(done.stdout)["kind"] == "PendingWorkloadsSummary", done.stderr.strip()


@on_stacks("dev")
def test_visibility_server_authorizes_the_user_the_api_server_names(cluster: StackCluster) -> None:
    """Kueue trusts the X-Remote-User header of a caller with the API server's proxy client
    certificate (--requestheader-*, KwokCluster._config): asked as the API server asks it, for a
    user without RBAC, Kueue itself refuses; for the admin's group it answers."""

    def ask(user: str, group: str) -> tuple[int, dict[str, Any]]:
        _, admin = kubeconfig_entries(cluster.kubectl.kubeconfig)
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed, as the APIService allows
        context.load_cert_chain(admin["client-certificate"], admin["client-key"])
        connection = http.client.HTTPSConnection(
            cluster.kueue.service_ips[VISIBILITY_SERVICE], SERVICE_PORT, context=context, timeout=10
        )
        try:
            connection.request("GET", PENDING_PATH, headers={"X-Remote-User": user, "X-Remote-Group": group})
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    status, body = ask("nobody", "system:authenticated")
    assert status == 403, (status, body)
    assert 'User "nobody" cannot get resource "localqueues/pendingworkloads"' in body["message"], body
    status, body = ask(ADMIN_CERT_USER, "system:masters")
    assert (status, body.get("kind")) == (200, "PendingWorkloadsSummary"), (status, body)
