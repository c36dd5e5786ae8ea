"""A team's Azure identity for its data (kueue-aks:teams[].identity) on the real API server and
Kueue: the team's ServiceAccount as the program makes it (components/access/identity.py, applied
as stack_cluster.py applies it, with a made-up client ID where Azure gives one at `pulumi up`), a
job of the team that runs as it, and members of another team who cannot use it or read it.

The token itself cannot be shown here: AKS's workload identity webhook projects it into the pods
labelled azure.workload.identity/use and sets AZURE_CLIENT_ID and the rest, and only AKS runs that
webhook; what the tier shows is everything up to it (the ServiceAccount, its annotation, who may
run a pod as it, and that Kueue admits such a job and its pod runs as the ServiceAccount).
"""

from __future__ import annotations

from typing import Any

import yaml

from components.access.identity import CLIENT_ID_ANNOTATION, SERVICE_ACCOUNT, USE_LABEL
from testbed.access import forbidden, refused
from testbed.cluster import Kubectl, wait_for
from testbed.control_planes import on_stacks
from testbed.jobs import delete_jobs, events_of, job, wait_admitted, wait_pods_placed
from testbed.samples import IDENTITY_SAMPLES, doc_command
from testbed.stack_cluster import StackCluster
from testbed.stacks import client_id


STACK = "team-subsets"
TEAM, OTHER_TEAM = "data", "web"  # data has an identity (stacks.py), web none
[SAMPLE] = IDENTITY_SAMPLES


def job_as(namespace: str, name: str, account: str) -> dict[str, Any]:
    """A batch Job of the team's queue whose pods run as `account`, labelled for the webhook."""
    doc = job(namespace, name)
    template = doc["spec"]["template"]
    template["metadata"] = {"labels": {USE_LABEL: "true"}}
    template["spec"]["serviceAccountName"] = account
    return doc


def job_pods(kubectl: Kubectl, namespace: str, name: str) -> list[dict[str, Any]]:
    return kubectl.items("pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={name}")


@on_stacks(STACK)
def test_the_teams_service_account_carries_its_identitys_client_id(cluster: StackCluster) -> None:
    """Only the team with an identity has the ServiceAccount; its member reads the client ID with
    docs/batch-users.md's command."""
    account = cluster.kubectl.get("serviceaccount", SERVICE_ACCOUNT, "-n", TEAM)
    assert account["metadata"]["annotations"][CLIENT_ID_ANNOTATION] == client_id(TEAM)
    command = doc_command("kubectl get serviceaccount team-identity -n <team>")
    shown = cluster.member(TEAM).run(*[a.replace("<team>", TEAM) for a in command]).stdout
    assert shown == client_id(TEAM)
    others = [t.name for t in cluster.config.teams if not t.identity]
    assert OTHER_TEAM in others
    for team in others:
        done = cluster.kubectl.run("get", "serviceaccount", SERVICE_ACCOUNT, "-n", team, check=False)
        assert done.returncode != 0 and "NotFound" in done.stderr, (team, done.stderr)


@on_stacks(STACK)
def test_the_sample_is_admitted_and_its_pod_runs_as_the_teams_identity(cluster: StackCluster) -> None:
    """As docs/batch-users.md says, a member applies examples/identity/read-blob.yaml in the team's
    namespace: Kueue admits it in the team's queue, and the Job's pod runs as team-identity with the
    webhook's label (which is where AKS would give it the token)."""
    doc = yaml.safe_load(SAMPLE.read_text())
    name = doc["metadata"]["name"]
    member = cluster.member(TEAM)
    member.run("apply", "-n", TEAM, "-f", str(SAMPLE))
    try:
        workload = wait_admitted(cluster, TEAM, name)
        assert workload["status"]["admission"]["clusterQueue"] == TEAM
        [pod] = wait_pods_placed(cluster, TEAM, name, 1)  # on a node of the admitted flavor's pool
        assert pod["spec"]["serviceAccountName"] == SERVICE_ACCOUNT, pod["spec"]
        assert [p["metadata"]["name"] for p in job_pods(member, TEAM, name)] == [pod["metadata"]["name"]]
        assert pod["metadata"]["labels"][USE_LABEL] == "true"
    finally:
        delete_jobs(cluster, TEAM, name)


@on_stacks(STACK)
def test_another_teams_member_cannot_use_or_read_the_identity(cluster: StackCluster) -> None:
    """A member of web may not run a job, or a pod, in data's namespace, read its ServiceAccount or
    get a token for it; nor may data's own members get a token outside a pod. Each refusal is the
    API server's own."""
    other, user = cluster.member(OTHER_TEAM), cluster.member_user(OTHER_TEAM)
    where = f'in API group "" in the namespace "{TEAM}"'
    stderr = refused(other, "create", "-f", "-", input=yaml.safe_dump(job_as(TEAM, "borrowed", SERVICE_ACCOUNT)))
    assert forbidden(user, "create", "jobs", f'in API group "batch" in the namespace "{TEAM}"') in stderr
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "borrowed", "namespace": TEAM},
        "spec": {"serviceAccountName": SERVICE_ACCOUNT, "containers": [{"name": "c", "image": "busybox:1.37"}]},
    }
    assert forbidden(user, "create", "pods", where) in refused(other, "create", "-f", "-", input=yaml.safe_dump(pod))
    assert forbidden(user, "get", "serviceaccounts", where) in refused(
        other, "get", "serviceaccount", SERVICE_ACCOUNT, "-n", TEAM
    )
    for kubectl, who in ((other, user), (cluster.member(TEAM), cluster.member_user(TEAM))):
        stderr = refused(kubectl, "create", "token", SERVICE_ACCOUNT, "-n", TEAM)
        assert forbidden(who, "create", "serviceaccounts/token", where) in stderr


@on_stacks(STACK)
def test_a_job_naming_the_identity_in_another_teams_namespace_gets_no_pod(cluster: StackCluster) -> None:
    """The ServiceAccount is the team's namespace's: web's member may submit a job naming
    team-identity in web's own namespace, and Kueue admits it, but no pod is ever created, since
    web has no such ServiceAccount (the API server's ServiceAccount admission refuses the pod)."""
    name = "no-identity-here"
    cluster.member(OTHER_TEAM).run("create", "-f", "-", input=yaml.safe_dump(job_as(OTHER_TEAM, name, SERVICE_ACCOUNT)))
    try:
        wait_admitted(cluster, OTHER_TEAM, name)
        failed = wait_for(
            f"the Job controller to fail creating {OTHER_TEAM}/{name}'s pod",
            lambda: (
                bool(
                    found := [e for e in events_of(cluster, OTHER_TEAM, "Job", name) if e["reason"] == "FailedCreate"]
                ),
                found or events_of(cluster, OTHER_TEAM, "Job", name),
            ),
            60,
        )
        assert f'serviceaccount "{SERVICE_ACCOUNT}" not found' in failed[0]["message"], failed
        assert job_pods(cluster.kubectl, OTHER_TEAM, name) == []
    finally:
        delete_jobs(cluster, OTHER_TEAM, name)
