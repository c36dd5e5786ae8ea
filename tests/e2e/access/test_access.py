"""Team members on the real API server and Kueue (issue 36): what a member of a team may do, and
everything they may not.

Every stack's teams each have one member group (stacks.member_group); the tests act as a user of a
team's group through impersonation (`--as`, `--as-group`), which the API server authorizes
exactly as it would the user's own Entra ID token on AKS (the token's groups claim carries the
group object IDs). What they are granted is components/access/members.py, applied as the program
applies it (stack_cluster.py). Every refusal is checked by the API server's own Forbidden message.
The samples in examples/ are submitted as docs/batch-users.md says, `kubectl apply -n <team> -f`,
by members of both dev teams and of a team of multi-gpu, whose teams have other names.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cluster.deployer import wait_for_access
from components.config.names import POOL_LABEL, TOPOLOGY_QUEUE_SUFFIX
from components.k8s.reader import ClusterReader, ReadError
from components.kueue.objects import LOCAL_QUEUE_NAME
from testbed.access import forbidden, refused
from testbed.cluster import Kubectl, wait_for
from testbed.control_planes import on_stacks
from testbed.harness import ROOT
from testbed.jobs import PRIORITY_LABEL, QUEUE_LABEL, job, wait_admitted
from testbed.pod_sets import pod_sets
from testbed.samples import doc_command, doc_pod_selectors
from testbed.stack_cluster import StackCluster
from testbed.stacks import OPERATOR_STACKS, config_map


TEAM, OTHER_TEAM = "research", "platform"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads"
SAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.fixture
def member(cluster: StackCluster) -> Kubectl:
    return cluster.member(TEAM)


def _teams(stack: str) -> list[str]:
    return [t["name"] for t in config_map(stack)["kueue-aks:teams"]]


# On the operator stacks, where every kind has its operator running: every sample in a team's
# namespace of the dev stack, research and platform in turn (each sample fits every dev team's queues:
# tests/test_samples.py), and every sample in one team's of a stack whose teams have other names
# (multi-gpu's infra, the smaller share, so it borrows the most). Every sample in both dev teams
# took 77 s here against 40 s, and showed nothing more than the unit tests do.
SUBMISSIONS = [("dev", sample, _teams("dev")[i % len(_teams("dev"))]) for i, sample in enumerate(SAMPLES)] + [
    ("multi-gpu", sample, _teams("multi-gpu")[-1]) for sample in SAMPLES
]
assert {s for s, _, _ in SUBMISSIONS} <= set(OPERATOR_STACKS) and "infra" in {t for _, _, t in SUBMISSIONS}


def _pods_by_the_docs_label(cluster: StackCluster, member: Kubectl, team: str, doc: dict[str, Any]) -> list[str]:
    """The job's pods as docs/batch-users.md finds them, as the member: by its kind's label, valued
    the job's name (a RayJob's, its RayCluster's name from its status)."""
    name = doc["metadata"]["name"]
    if doc["kind"] == "RayJob":
        name = member.run("get", "rayjobs.ray.io", name, "-n", team, "-o", "jsonpath={.status.rayClusterName}").stdout
        if not name:
            return []
    label = doc_pod_selectors()[doc["kind"]]
    return [p["metadata"]["name"] for p in member.items("pods", "-n", team, "-l", f"{label}={name}")]


@pytest.mark.parametrize(("stack", "sample", "team"), SUBMISSIONS, ids=[f"{s}-{p.stem}-{t}" for s, p, t in SUBMISSIONS])
def test_member_submits_the_sample_in_their_namespace_and_kueue_admits_it(
    cluster: StackCluster, sample: Path, team: str
) -> None:
    """As docs/batch-users.md says, as a member of the team: `kubectl apply -n <team> -f
    examples/<sample>` (no sample names a namespace); its Workload is admitted in the team's queue
    (the ClusterQueue of the LocalQueue the sample names, `<team>` or `<team>-topology`) with the
    sample's priority, GPU pod sets on a GPU flavor; the member finds its pods by the label the doc
    gives for its kind, and deletes it the same way."""
    doc = yaml.safe_load(sample.read_text())
    meta = doc["metadata"]
    assert "namespace" not in meta, sample.name
    member = cluster.member(team)
    member.run("apply", "-n", team, "-f", str(sample))
    try:
        wl = wait_admitted(cluster, team, meta["name"], kind=doc["kind"])
        queue = meta["labels"][QUEUE_LABEL]
        assert wl["spec"]["queueName"] == queue
        cluster_queue = cluster.kubectl.get("localqueues.kueue.x-k8s.io", queue, "-n", team)["spec"]["clusterQueue"]
        assert wl["status"]["admission"]["clusterQueue"] == cluster_queue in (team, team + TOPOLOGY_QUEUE_SUFFIX), (
            cluster_queue,
            wl["status"]["admission"],
        )
        assigned = {ps["name"]: ps["flavors"] for ps in wl["status"]["admission"]["podSetAssignments"]}
        gpu_pools = {p.name for p in cluster.config.node_pools if p.is_gpu}
        for ps in pod_sets(doc):
            if ps.pod_requests.get("nvidia.com/gpu"):
                assert set(assigned[ps.name].values()) <= gpu_pools, (ps.name, assigned)
        # Its priority is the sample's label, as every sample states one.
        assert (wl["spec"].get("priorityClassRef") or {}).get("name") == meta["labels"][PRIORITY_LABEL], wl["spec"]
        wait_for(
            f"the member to find the pods of {doc['kind']} {team}/{meta['name']}",
            lambda: (bool(found := _pods_by_the_docs_label(cluster, member, team, doc)), found),
            60,
        )
    finally:
        member.run(
            "delete", "-n", team, "-f", str(sample), "--ignore-not-found", "--wait=true", "--timeout=90s", timeout=120
        )
    # Nothing left holding quota for the next sample: no Workload at all in the namespace.
    wait_for(
        f"every Workload in {team} to be gone after {meta['name']}",
        lambda: (
            not (left := cluster.kubectl.items("workloads.kueue.x-k8s.io", "-n", team)),
            [w["metadata"]["name"] for w in left],
        ),
        90,
    )


@on_stacks(*OPERATOR_STACKS)
def test_member_finds_their_namespace_and_queues(cluster: StackCluster) -> None:
    """docs/batch-users.md's "Find your namespace, queues and quota" as each team's member: the
    ClusterQueues list every team's namespace, `kubectl auth can-i` says yes in their own only, and
    their LocalQueues are there."""
    teams = [t.name for t in cluster.config.teams]
    listing = doc_command("kubectl get clusterqueues -o custom-columns=")
    for team in teams:
        member = cluster.member(team)
        rows = [line.split() for line in member.run(*listing).stdout.splitlines()[1:]]
        assert {cq for cq, _ in rows} == {
            q["metadata"]["name"] for q in cluster.kubectl.items("clusterqueues.kueue.x-k8s.io")
        }
        assert {ns for _, ns in rows} == set(teams), rows
        answers = {
            ns: member.run("auth", "can-i", "create", "jobs", "-n", ns, check=False).stdout.strip()
            for ns in sorted({ns for _, ns in rows})
        }
        assert answers == {ns: "yes" if ns == team else "no" for ns in teams}, (team, answers)
        queues = {q["metadata"]["name"] for q in member.items("localqueues.kueue.x-k8s.io", "-n", team)}
        assert LOCAL_QUEUE_NAME in queues, queues


@on_stacks("dev")
def test_member_reads_pods_events_and_capacity(cluster: StackCluster, member: Kubectl) -> None:
    for args in (
        ("get", "pods", "-n", TEAM),
        ("get", "events", "-n", TEAM),
        ("get", "workloads.kueue.x-k8s.io", "-n", TEAM),
        ("get", "localqueues.kueue.x-k8s.io", "-n", TEAM),
        ("get", "clusterqueues.kueue.x-k8s.io"),
        ("get", "resourceflavors.kueue.x-k8s.io"),
        ("get", "cohorts.kueue.x-k8s.io"),
        ("get", "workloadpriorityclasses.kueue.x-k8s.io"),
    ):
        member.run(*args)
    for verb, resource in (
        ("get", "pods/log"),
        ("create", "rayjobs.ray.io"),
        ("delete", "pytorchjobs.kubeflow.org"),
        ("watch", "jobsets.jobset.x-k8s.io"),
        ("create", "trainjobs.trainer.kubeflow.org"),
    ):
        assert member.run("auth", "can-i", verb, resource, "-n", TEAM).stdout.strip() == "yes", (verb, resource)


REFUSALS = {
    # (kubectl arguments, the refusal: verb, resource, where)
    "another-teams-namespace": (
        ("create", "-f", "-"),
        ("create", "jobs", 'in API group "batch" in the namespace "platform"'),
        job(OTHER_TEAM, "trespass"),
    ),
    "another-teams-workloads": (
        ("get", "workloads.kueue.x-k8s.io", "-n", OTHER_TEAM),
        ("list", "workloads", 'in API group "kueue.x-k8s.io" in the namespace "platform"'),
        None,
    ),
    "clusterqueue-edit": (
        ("patch", "clusterqueue.kueue.x-k8s.io", TEAM, "--type=merge", "-p", '{"spec":{"cohortName":"mine"}}'),
        ("patch", "clusterqueues", 'in API group "kueue.x-k8s.io" at the cluster scope'),
        None,
    ),
    "own-localqueue": (
        ("create", "-f", "-"),
        ("create", "localqueues", f'in API group "kueue.x-k8s.io" in the namespace "{TEAM}"'),
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "mine", "namespace": TEAM},
            "spec": {"clusterQueue": OTHER_TEAM},
        },
    ),
    # A PUT straight away: kubectl's label and patch first read the namespace, which is refused too.
    "namespace-label": (
        ("replace", "--raw", f"/api/v1/namespaces/{TEAM}", "-f", "-"),
        ("update", "namespaces", f'in API group "" in the namespace "{TEAM}"'),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM, "labels": {}}},
    ),
    "pod-on-a-user-pool": (
        ("create", "-f", "-"),
        ("create", "pods", f'in API group "" in the namespace "{TEAM}"'),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "direct", "namespace": TEAM},
            "spec": {"nodeSelector": {POOL_LABEL: "gpu"}, "containers": [{"name": "c", "image": "busybox:1.37"}]},
        },
    ),
    "deployment": (
        ("create", "deployment", "web", "--image=busybox:1.37", "-n", TEAM),
        ("create", "deployments", f'in API group "apps" in the namespace "{TEAM}"'),
        None,
    ),
    "kueue-secret": (
        ("get", "secrets", "-n", "kueue-system"),
        ("list", "secrets", 'in API group "" in the namespace "kueue-system"'),
        None,
    ),
    "own-secrets": (
        ("get", "secrets", "-n", TEAM),
        ("list", "secrets", f'in API group "" in the namespace "{TEAM}"'),
        None,
    ),
    "nodes": (("get", "nodes"), ("list", "nodes", 'in API group "" at the cluster scope'), None),
    "priority-class": (
        ("create", "priorityclass", "mine", "--value=1000000"),
        ("create", "priorityclasses", 'in API group "scheduling.k8s.io" at the cluster scope'),
        None,
    ),
    "kueue-config": (
        ("get", "configmaps", "-n", "kueue-system"),
        ("list", "configmaps", 'in API group "" in the namespace "kueue-system"'),
        None,
    ),
}


@on_stacks("dev")
@pytest.mark.parametrize("case", list(REFUSALS))
def test_member_is_refused(cluster: StackCluster, member: Kubectl, case: str) -> None:
    args, (verb, resource, where), doc = REFUSALS[case]
    stderr = refused(member, *args, input=None if doc is None else yaml.safe_dump(doc))
    assert forbidden(cluster.member_user(TEAM), verb, resource, where) in stderr, stderr


@on_stacks("dev")
def test_a_user_of_no_team_can_do_nothing_in_team_namespaces(cluster: StackCluster) -> None:
    stranger = cluster.kubectl.impersonating("stranger@example.com", ["00000000-0000-0000-0000-00000000beef"])
    for team in (t.name for t in cluster.config.teams):
        stderr = refused(stranger, "create", "-f", "-", input=yaml.safe_dump(job(team, "stranger")))
        assert (
            forbidden("stranger@example.com", "create", "jobs", f'in API group "batch" in the namespace "{team}"')
            in stderr
        )
        stderr = refused(stranger, "get", "workloads.kueue.x-k8s.io", "-n", team)
        assert (
            forbidden(
                "stranger@example.com", "list", "workloads", f'in API group "kueue.x-k8s.io" in the namespace "{team}"'
            )
            in stderr
        )
        stderr = refused(stranger, "get", "--raw", VISIBILITY.format(ns=team, lq="default"))
        assert "forbidden" in stderr.lower() and "pendingworkloads" in stderr, stderr
    stderr = refused(stranger, "get", "clusterqueues.kueue.x-k8s.io")
    assert (
        forbidden("stranger@example.com", "list", "clusterqueues", 'in API group "kueue.x-k8s.io" at the cluster scope')
        in stderr
    )


@on_stacks("dev")
def test_the_deploying_identity_waits_until_rbac_lets_it_in(cluster: StackCluster) -> None:
    """cluster.disableLocalAccounts: the program's wait for its own role (components/cluster/deployer.py)
    against the real API server's RBAC. A ServiceAccount stands for the deploying identity: its token
    is refused until a binding grants it a role, as an Azure role that has not yet reached AKS's
    authorizer is; the wait goes on through the 403s and returns once the binding holds."""
    name = "kueue-aks-deployer-probe"
    kubectl = cluster.kubectl
    kubectl.run("create", "serviceaccount", name, "-n", "default")
    try:
        token = kubectl.run("create", "token", name, "-n", "default", "--duration", "10m").stdout.strip()
        kubeconfig = yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "deployer",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": cluster.cluster.server_url(),
                            "certificate-authority-data": cluster.cluster.ca_data(),
                        },
                    }
                ],
                "contexts": [{"name": "deployer", "context": {"cluster": "c", "user": "deployer"}}],
                "users": [{"name": "deployer", "user": {"token": token}}],
            }
        )
        seen: list[str] = []

        class Recording:
            """The real reader, keeping what each probe got."""

            def __init__(self, text: str) -> None:
                self.reader = ClusterReader.from_kubeconfig(text)

            def get(self, path: str) -> dict[str, Any] | None:
                try:
                    found = self.reader.get(path)
                except ReadError as err:
                    seen.append(f"HTTP {err.status}")
                    raise
                seen.append("allowed")
                return found

            def close(self) -> None:
                self.reader.close()

        result: list[str | BaseException] = []

        def waiting() -> None:
            try:
                result.append(
                    wait_for_access(kubeconfig, what_to_check="(e2e)", poll=0.2, deadline=120, connect=Recording)
                )
            except BaseException as err:  # reported below
                result.append(err)

        thread = threading.Thread(target=waiting, daemon=True)
        thread.start()
        wait_for("the API server to refuse the identity twice", lambda: (seen.count("HTTP 403") >= 2, seen), 30)
        assert thread.is_alive() and not result, (seen, result)
        kubectl.run("create", "clusterrolebinding", name, "--clusterrole", "view", f"--serviceaccount=default:{name}")
        thread.join(60)
        print(f"probes: {seen}")
        assert result == [kubeconfig], (seen, result)
        assert seen[-1] == "allowed" and set(seen[:-1]) == {"HTTP 403"}, seen
    finally:
        kubectl.run("delete", "clusterrolebinding", name, "--ignore-not-found")
        kubectl.run("delete", "serviceaccount", name, "-n", "default", "--ignore-not-found")
