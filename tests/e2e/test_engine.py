"""The real Pulumi engine: `pulumi up`, `preview`, an update and `destroy` of the program itself.

Every other stack in the tier replays what `pulumi up` does with the program's own builders; here
the Pulumi CLI, the Python language host and the kubernetes provider, built from their modules
(binaries.ensure_engine), run the program unchanged in kubeconfig mode against the local control
plane, with Kueue's chart from the packaged file. The scenarios build on each other, in file order,
on one stack: up, an empty preview, a share changed in place, destroy with jobs running.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal

import yaml

from components.config import KUEUE_NAMESPACE
from components.kueue.objects import COHORT_NAME, build_objects, team_queues
from components.multikueue.worker import FACTS_OUTPUT, KUBECONFIG_OUTPUT, SERVICE_ACCOUNT, worker_facts
from components.k8s.quantity import canonical

from .cluster import Kubectl, wait_for
from .conftest import on_stacks, report
from .engine import EngineError, PulumiProject, changed
from .jobs import job, wait_admitted
from .stack_cluster import StackCluster
from .stacks import ENGINE, engine_config

# Measured here on 2 cores: the first up 20 to 27 s, destroy with jobs running 27 s.
UP_BUDGET_SECONDS = 180
DESTROY_BUDGET_SECONDS = 120
CHANGED_TEAM, CHANGED_SHARE = "research", 55


def leftovers(cluster: StackCluster) -> str:
    """What a hung destroy waits for: terminating namespaces, Kueue's objects and their finalizers."""
    kubectl = cluster.kubectl
    lines = [f"namespace {n['metadata']['name']}: {n['status'].get('phase')} {n['status'].get('conditions', '')}"
             for n in kubectl.items("namespaces") if n["status"].get("phase") == "Terminating"]
    kinds = ",".join(f"{k.lower()}s.kueue.x-k8s.io" for k in ("Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor",
                                                            "Cohort", "Topology", "AdmissionCheck"))
    done = kubectl.run("get", kinds, "-A", "-o", "json", check=False)
    for obj in (json.loads(done.stdout).get("items", []) if done.returncode == 0 else []):
        meta = obj["metadata"]
        lines.append(f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}: deleting={bool(meta.get('deletionTimestamp'))} "
                     f"finalizers={meta.get('finalizers')}")
    if done.returncode != 0:
        lines.append(f"kueue kinds: {done.stderr.strip()}")
    pods = kubectl.run("get", "pods", "-A", "-o", "wide", check=False).stdout
    return "\n".join(lines) + "\npods:\n" + pods


@on_stacks(ENGINE)
def test_engine_up_brings_the_stack_up_first_time(cluster: StackCluster, project: PulumiProject) -> None:
    started = time.monotonic()
    try:
        project.up()
    except EngineError as err:
        raise EngineError(f"{err}\n{cluster.kueue_follower.describe()}") from None  # type: ignore[attr-defined]
    took = time.monotonic() - started
    report(f"e2e[{ENGINE}]: first `pulumi up` by the real engine took {took:.0f} s (budget {UP_BUDGET_SECONDS} s)")
    wait_for("every ClusterQueue and LocalQueue the engine made to be Active", cluster.queues_active, 60)
    local_queues = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in cluster.objects if o["kind"] == "LocalQueue"}
    exported = project.outputs()["localQueues"]
    assert {(team, name) for team, queues in exported.items() for name in queues} == local_queues
    # The queues the engine made admit work.
    cluster.kubectl.apply([job("research", "engine-first", run_for="1h")])
    wait_admitted(cluster, "research", "engine-first")
    assert took <= UP_BUDGET_SECONDS


@on_stacks(ENGINE)
def test_engine_preview_after_up_shows_no_changes(cluster: StackCluster, project: PulumiProject) -> None:
    steps = project.preview()
    assert not steps, "a preview right after `up` wants to change:\n" + "\n".join(map(changed, steps))


@on_stacks(ENGINE)
def test_engine_worker_exports_a_kubeconfig_that_works(cluster: StackCluster, project: PulumiProject) -> None:
    """The stack is a MultiKueue worker: the provider waited for the token controller, and the
    exported kubeconfig (a secret) reaches this API server as the worker's ServiceAccount, with
    only MultiKueue's rights."""
    assert project.outputs()[KUBECONFIG_OUTPUT] == "[secret]"
    outputs = project.outputs(show_secrets=True)
    kubeconfig = yaml.safe_load(outputs[KUBECONFIG_OUTPUT])
    assert kubeconfig["clusters"][0]["cluster"] == {"server": cluster.cluster.server_url(),
                                                    "certificate-authority-data": cluster.cluster.ca_data()}
    assert set(kubeconfig["users"][0]["user"]) == {"token"}
    path = cluster.workdir / "worker-kubeconfig"
    path.write_text(outputs[KUBECONFIG_OUTPUT])
    as_worker = Kubectl(cluster.kubectl.binary, path)
    assert as_worker.run("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout == \
        f"system:serviceaccount:{KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
    for verb, resource, allowed in (("create", "jobs.batch", "yes"), ("get", "secrets", "no")):
        done = as_worker.run("auth", "can-i", verb, resource, "-n", "research", check=False)
        assert done.stdout.strip() == allowed, (verb, resource, done.stdout, done.stderr)
    # The same facts the builders give, but the region: a kubeconfig-mode stack has none.
    assert outputs[FACTS_OUTPUT] == json.loads(json.dumps({**worker_facts(cluster.config), "location": ""}))


@on_stacks(ENGINE)
def test_engine_manager_preview_names_a_worker_that_does_not_fit(cluster: StackCluster, project: PulumiProject) -> None:
    """A manager stack in the same backend reads this worker's outputs through its StackReference
    at preview, and stops before any resource, naming the worker and what differs: here a
    framework it enables that the worker does not run."""
    manager_config = {
        "kueue-aks:kueue": {**engine_config()["kueue-aks:kueue"], "frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "kueue-aks:teams": [{"name": t.name} for t in cluster.config.teams],
        "kueue-aks:multiKueue": {"role": "manager", "workers": [{"name": "engine", "stack": f"organization/kueue-aks/{ENGINE}"}]},
    }
    manager = project.another_stack("engine-manager", manager_config, cluster.cluster.kubeconfig.read_text())
    try:
        done = manager.run("preview", check=False)
        text = done.stdout + done.stderr
        assert done.returncode != 0, text[-3000:]
        assert (f"kueue-aks:multiKueue.workers[0].stack: worker 'engine' (stack organization/kueue-aks/{ENGINE}) "
                "does not run jobset.x-k8s.io/jobset, which this manager enables") in text, text[-3000:]
    finally:
        manager.run("stack", "rm", "engine-manager", "--yes", "--force", check=False)


@on_stacks(ENGINE)
def test_engine_share_change_updates_in_place(cluster: StackCluster, project: PulumiProject) -> None:
    """A team's share moves the quota and weight of its ClusterQueues (the ordinary and the
    topology-aware one) and the Cohort's remainder with them: each updated in place, nothing
    replaced, created or deleted, and the team's running job keeps running."""
    team = next(t for t in cluster.config.teams if t.name == CHANGED_TEAM)
    queues = [q.name for q in team_queues(cluster.config, team)]
    project.set_config(engine_config({CHANGED_TEAM: CHANGED_SHARE}))
    steps = project.preview()
    summary = sorted(changed(s) for s in steps)
    assert {s["op"] for s in steps} == {"update"}, summary
    assert sorted(str(s["urn"]).rsplit("::", 1)[-1] for s in steps) == sorted(
        [f"queues-clusterqueue-{q}" for q in queues] + [f"queues-cohort-{COHORT_NAME}"]), summary
    project.up()
    for queue in queues:
        cq = cluster.kubectl.get("clusterqueue.kueue.x-k8s.io", queue)
        assert cq["spec"]["fairSharing"]["weight"] == canonical(Decimal(CHANGED_SHARE) / 100), queue
    assert not project.preview(), "the update left a difference behind"
    wl_running = cluster.kubectl.get("job", "engine-first", "-n", "research")
    assert not wl_running["spec"].get("suspend"), "the update suspended a running job"


@on_stacks(ENGINE)
def test_engine_destroy_with_jobs_running_leaves_nothing(cluster: StackCluster, project: PulumiProject) -> None:
    cluster.kubectl.apply([job("platform", "engine-running", pods=2, run_for="1h")])
    wait_admitted(cluster, "platform", "engine-running")
    started = time.monotonic()
    try:
        project.destroy()
    except EngineError as err:
        raise EngineError(f"{err}\nleft in the cluster:\n{leftovers(cluster)}\n"
                          f"{cluster.kueue_follower.describe()}") from None  # type: ignore[attr-defined]
    took = time.monotonic() - started
    report(f"e2e[{ENGINE}]: `pulumi destroy` by the real engine with 2 jobs running took {took:.0f} s "
           f"(budget {DESTROY_BUDGET_SECONDS} s)")

    kubectl = cluster.kubectl
    left = project.created()
    assert not left, f"the stack still has resources: {left}"
    namespaces = {n["metadata"]["name"] for n in kubectl.items("namespaces")}
    teams = {o["metadata"]["name"] for o in build_objects(cluster.config) if o["kind"] == "Namespace"}
    assert not namespaces & (teams | {KUEUE_NAMESPACE}), namespaces
    crds = [c for c in kubectl.run("get", "crds", "-o", "name").stdout.split() if "kueue.x-k8s.io" in c]
    assert not crds, crds
    roles = [r for r in kubectl.run("get", "clusterroles,clusterrolebindings", "-o", "name").stdout.split() if "/kueue-" in r]
    assert not roles, roles
    hooks = [w for w in kubectl.run("get", "validatingwebhookconfigurations,mutatingwebhookconfigurations,apiservices",
                                    "-o", "name").stdout.split() if "kueue" in w]
    assert not hooks, hooks
    guards = kubectl.run("get", "validatingadmissionpolicies,validatingadmissionpolicybindings", "-o", "name").stdout.split()
    assert not guards, guards
    assert not kubectl.run("get", "jobs", "-A", "-o", "name").stdout.split(), "jobs outlived their namespaces"
    assert took <= DESTROY_BUDGET_SECONDS
