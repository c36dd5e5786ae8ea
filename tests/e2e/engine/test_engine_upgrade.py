"""A Kueue upgrade with jobs running, through the real Pulumi engine (docs/day-2.md#upgrade-kueue).

After test_engine_interrupted.py, on the same control plane: a stack comes up on Kueue 0.18.4 with
jobs admitted and running in both teams and one waiting for quota; then `kueue-aks:kueue.version`
(and the chart) go to 0.19.2 and `pulumi up` runs. What must hold: the preview shows the release
updated in place and nothing replaced or deleted; the CRDs on the API server are then 0.19.2's; the
controller that runs is 0.19.2's (the follower starts the binary of the version the Deployment's
image names, as a kubelet would pull it); the jobs admitted before stay admitted, are never evicted,
and finish; the waiting one is admitted after them; no ClusterQueue or LocalQueue was recreated.
"""

from __future__ import annotations

import json
import time
from typing import Any


from components.k8s import documents
from components.kueue.values import KUEUE_RELEASE_NAME
from components.facts.kueue_versions import DEFAULT_VERSION
from testbed.binaries import ensure_kueue
from testbed.cluster import is_true, wait_for
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject, assert_nothing_left, changed, release_states
from testbed.jobs import job, wait_admitted, workload_of
from testbed.measurements import build_wait, report
from testbed.paths import SHARED
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, engine_jobs_config


UPGRADE_FROM = "0.18.4"
# Long enough to outlive the upgrade (from the jobs' admission to the new controller: its preview
# and `up`, 25 to 40 s here with the other lane running), short enough to finish in the test; the
# test fails, not passes weaker, if a job finished before the upgrade did.
RUN_FOR = "75s"
# (team, job, CPUs): 28 of the cpu flavor's 31.28 vCPUs, one pod on each of the pool's four
# D8s_v5 nodes (7.82 allocatable); the last job fits a node but not the 3.28 vCPUs of quota left,
# so it waits until one of them finishes, then runs on that one's node.
RUNNING = (
    ("research", "before-a", "7"),
    ("research", "before-b", "7"),
    ("platform", "before-c", "7"),
    ("platform", "before-d", "7"),
)
WAITING = ("research", "waits", "7")
CPU_POOL = {"kubernetes.azure.com/agentpool": "cpu"}


def on_version(version: str) -> dict[str, Any]:
    """The engine stack on Kueue `version`; its chart comes from the mirror (the project's rewrite)."""
    config = engine_jobs_config()
    config["kueue-aks:kueue"] = {**config["kueue-aks:kueue"], "version": version}
    return config


def crd_schemas(cluster: StackCluster) -> dict[str, Any]:
    crds = json.loads(cluster.kubectl.run("get", "crds", "-o", "json").stdout)["items"]
    return {
        c["metadata"]["name"]: [v["schema"] for v in c["spec"]["versions"]]
        for c in crds
        if c["spec"]["group"] == "kueue.x-k8s.io"
    }


def shared_schemas(version: str) -> dict[str, Any]:
    found = {}
    for path in (SHARED / "kueue" / f"v{version}" / "crds").glob("*.yaml"):
        crd = documents.load(path.read_text())
        found[crd["metadata"]["name"]] = [v["schema"] for v in crd["spec"]["versions"]]
    return found


def queue_uids(cluster: StackCluster) -> dict[str, str]:
    queues = cluster.kubectl.items("clusterqueues.kueue.x-k8s.io") + cluster.kubectl.items(
        "localqueues.kueue.x-k8s.io", "-A"
    )
    return {
        f"{q['kind']} {q['metadata'].get('namespace', '')}/{q['metadata']['name']}": q["metadata"]["uid"]
        for q in queues
    }


@on_stacks(ENGINE)
def test_engine_kueue_upgrade_with_jobs_running(clean: StackCluster, project: PulumiProject) -> None:
    with build_wait():
        ensure_kueue(UPGRADE_FROM)
    follower = clean.kueue_follower  # type: ignore[attr-defined]
    stack = project.another_stack("upgrade", on_version(UPGRADE_FROM), clean.cluster.kubeconfig.read_text())
    stack.up()
    wait_for(f"the queues to be active on Kueue {UPGRADE_FROM}", clean.queues_active, 60)
    assert follower.version == UPGRADE_FROM, follower.versions_run
    old = shared_schemas(UPGRADE_FROM)
    assert crd_schemas(clean) == {name: schema for name, schema in old.items() if name in crd_schemas(clean)}

    kubectl = clean.kubectl
    kubectl.apply(
        [
            job(team, name, requests={"cpu": cpu, "memory": "1Gi"}, node_selector=CPU_POOL, run_for=RUN_FOR)
            for team, name, cpu in RUNNING
        ]
    )
    admitted = {name: wait_admitted(clean, team, name)["metadata"]["uid"] for team, name, _ in RUNNING}
    team, name, cpu = WAITING
    kubectl.apply([job(team, name, requests={"cpu": cpu, "memory": "1Gi"}, node_selector=CPU_POOL)])
    waiting = wait_for(
        "the last job to wait for quota",
        lambda: (
            (wl := workload_of(clean, team, name)) is not None
            and not is_true(wl, "QuotaReserved")
            and "conditions" in wl.get("status", {}),
            wl,
        ),
        30,
    )
    print("waiting:", waiting["status"]["conditions"])
    queues = queue_uids(clean)

    stack.set_config(on_version(DEFAULT_VERSION))
    steps = stack.preview()
    print("\n".join(changed(s) for s in steps))
    release = [s for s in steps if s.get("urn", "").endswith(f"::{KUEUE_RELEASE_NAME}-release")]
    assert [s["op"] for s in release] == ["update"], [changed(s) for s in steps]
    assert not [s for s in steps if s["op"] in ("replace", "create-replacement", "delete-replaced", "delete")], [
        changed(s) for s in steps
    ]

    started = time.monotonic()
    stack.up()
    took = time.monotonic() - started
    wait_for(
        f"the controller to run Kueue {DEFAULT_VERSION}",
        lambda: (follower.version == DEFAULT_VERSION, follower.versions_run),
        60,
    )
    assert release_states(clean)[-1] == "v2=deployed", release_states(clean)
    new, served = shared_schemas(DEFAULT_VERSION), crd_schemas(clean)
    assert served == {n: s for n, s in new.items() if n in served} and set(served) == set(new), sorted(served)
    assert any(old.get(n) != s for n, s in new.items()), "0.18.4's and 0.19.2's CRDs are alike: the check shows nothing"
    assert queue_uids(clean) == queues, "a queue was recreated"

    for team, name, _ in RUNNING:
        wl = workload_of(clean, team, name)
        assert wl is not None and wl["metadata"]["uid"] == admitted[name] and is_true(wl, "Admitted"), wl
        assert not is_true(wl, "Evicted"), wl["status"]["conditions"]
        assert not is_true(wl, "Finished"), f"{team}/{name} finished before the upgrade did: RUN_FOR is too short"
    for team, name, _ in RUNNING:
        wait_for(
            f"{team}/{name} to finish",
            lambda: ((wl := workload_of(clean, team, name)) is not None and is_true(wl, "Finished"), wl),
            240,
        )
    team, name, _ = WAITING
    wait_admitted(clean, team, name, timeout=60)
    wait_for(
        f"{team}/{name} to run on a node that a finished job left",
        lambda: ((wl := workload_of(clean, team, name)) is not None and is_true(wl, "PodsReady"), wl),
        120,
    )
    report(
        f"e2e[{ENGINE}]: Kueue {UPGRADE_FROM} -> {DEFAULT_VERSION} by `pulumi up` with {len(RUNNING)} jobs "
        f"running took {took:.0f} s; controllers run: {follower.versions_run}"
    )
    assert_nothing_left(clean, stack)
