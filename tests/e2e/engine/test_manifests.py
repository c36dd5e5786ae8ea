"""The dev stack's `plan --manifests` folder applied by hand on a real API server, in the order the
plan writes (docs/manifests.md): `kubectl apply --server-side` of the first folder, Kueue's release
with the folder's values, then `kubectl apply --server-side` of the second folder, with Kueue's real
controller answering its webhook.

It runs on the engine stack's control plane once its Pulumi tests are done (the tier sorts them
first), after taking away the Kueue that test_extension.py installed. The operators' releases are
not installed (they are test_engine.py's): a chart's webhook without its controller would refuse
the objects it checks, so Trainer's runtime is checked against its CRD from the first folder only.
The manifest-installed operators (MPI, Training Operator) are in the first folder, Deployments
included, and their real controllers start when those appear, as a kubelet would start them
(the engine project's OperatorFollower). The ServiceMonitor's CRD
is installed as Azure's managed Prometheus would have, as ORDER.md says.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from components.config.names import KUEUE_NAMESPACE
from components.k8s import documents
from components.kueue.policies import AGGREGATED_ROLES, aggregated_role_guard
from components.kueue.values import KUEUE_RELEASE_NAME, kueue_chart
from components.manifests.folders import AFTER_RELEASES, BEFORE_RELEASES, HELM_FOLDER
from testbed.cluster import conditions, is_true, wait_for
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject
from testbed.harness import ROOT
from testbed.measurements import report
from testbed.paths import SHARED
from testbed.scraping import install_crd, service_monitor_crd_for
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE


HELM_WAIT_SECONDS = 180
# Kueue's kinds that hold objects here, most dependent first.
KUEUE_KINDS = (
    "workloads",
    "localqueues",
    "clusterqueues",
    "cohorts",
    "admissionchecks",
    "provisioningrequestconfigs",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
)
KUEUE_CRDS = SHARED / "kueue" / "v0.19.2" / "crds"


@pytest.fixture
def bare(clean: StackCluster, project: PulumiProject) -> Iterator[StackCluster]:
    """The engine's control plane with no stack and no Kueue on it (the `project` fixture's
    follower runs Kueue's controller once a release brings its Deployment)."""
    if getattr(clean, "extension_installed", False):
        without_kueue(clean, guard=True)
        clean.extension_installed = False  # type: ignore[attr-defined]
    yield clean


def without_kueue(cluster: StackCluster, *, guard: bool) -> None:
    """Kueue taken away as the program's destroy does: its aggregated-role guard in place (else
    the aggregation controller re-creates Kueue's aggregated ClusterRoles without Helm's labels and
    the next install refuses them), every Kueue object deleted while the controller still runs to
    clear their finalizers (a flavor in use keeps one), then the release, whose CRDs go with it."""
    if guard:  # else the folder's own guard is there
        cluster.kubectl.apply(aggregated_role_guard())
    kinds = ",".join(f"{k}.kueue.x-k8s.io" for k in KUEUE_KINDS)
    cluster.kubectl.run("delete", kinds, "--all", "--all-namespaces", "--ignore-not-found", "--wait", timeout=120)
    cluster.helm.run("uninstall", KUEUE_RELEASE_NAME, "--namespace", KUEUE_NAMESPACE, timeout=120)
    # Any copy the aggregation controller made before the guard took effect.
    cluster.kubectl.run("delete", "clusterrole", *AGGREGATED_ROLES, "--ignore-not-found", timeout=60)
    if guard:  # the folder brings its own
        cluster.kubectl.run(
            "delete",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": aggregated_role_guard()}),
            timeout=60,
        )

    def gone() -> tuple[bool, object]:
        left = [c for c in cluster.kubectl.items("crds") if c["spec"]["group"] == "kueue.x-k8s.io"]
        return not left, {c["metadata"]["name"]: c["status"].get("conditions", [])[-1:] for c in left}

    wait_for("Kueue's CRDs to be gone", gone, 120)


def plan_folder(out: Path, tmp: Path) -> str:
    """`python -m components.plan --stack dev --manifests out` as a reviewer runs it; the Kueue
    CRDs from ../shared (KUEUE_CRDS_DIR), the chart cache in the test's folder."""
    env = {**os.environ, "KUEUE_CRDS_DIR": str(KUEUE_CRDS), "XDG_CACHE_HOME": str(tmp / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "components.plan", "--stack", "dev", "--manifests", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return (out / "ORDER.md").read_text()


def kubectl_steps(order: str) -> list[list[str]]:
    """ORDER.md's kubectl commands, as words after `kubectl`."""
    commands = [line.split("`")[1] for line in order.splitlines() if line[:1].isdigit() and "`" in line]
    return [shlex.split(c)[1:] for c in commands if c.startswith("kubectl ")]


@on_stacks(ENGINE)
def test_manifests_the_dev_stacks_folder_applies_server_side_in_the_plans_order(
    bare: StackCluster, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    order = plan_folder(out, tmp_path)
    print(order)
    first, last = kubectl_steps(order)
    assert first[-1] == str(out / BEFORE_RELEASES) and last[-1] == str(out / AFTER_RELEASES), order
    kubectl = bare.kubectl

    applied = kubectl.run(*first, timeout=300)
    print(applied.stdout[-3000:])
    assert "serverside-applied" in applied.stdout

    values = yaml.safe_load((out / HELM_FOLDER / "kueue-values.yaml").read_text())
    bare.helm.install(
        KUEUE_RELEASE_NAME,
        kueue_chart(bare.config),
        namespace=KUEUE_NAMESPACE,
        values=values,
        workdir=tmp_path,
        wait_seconds=HELM_WAIT_SECONDS,
    )
    follower = bare.kueue_follower  # type: ignore[attr-defined]
    wait_for("the Kueue follower to start the controller", lambda: (follower.running, follower.describe()), 60)
    bare.kueue.wait_ready()
    monitors = [yaml.safe_load(p.read_text()) for p in (out / AFTER_RELEASES).glob("*-servicemonitor-*.yaml")]
    for monitor in monitors:
        install_crd(kubectl, service_monitor_crd_for(monitor["apiVersion"]))

    try:
        applied = kubectl.run(*last, timeout=300)
        print(applied.stdout[-3000:])
        files = sorted((out / AFTER_RELEASES).glob("*.yaml"))
        assert applied.stdout.count("serverside-applied") == len(files), applied.stdout

        objects = [documents.load(p.read_text()) for p in files]
        queues = {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
            for o in objects
            if o["kind"] in ("ClusterQueue", "LocalQueue")
        }
        assert queues, "the dev stack's folder has its queues"

        def active() -> tuple[bool, object]:
            seen = {
                ("ClusterQueue", "", q["metadata"]["name"]): q for q in kubectl.items("clusterqueues.kueue.x-k8s.io")
            }
            seen |= {
                ("LocalQueue", q["metadata"]["namespace"], q["metadata"]["name"]): q
                for q in kubectl.items("localqueues.kueue.x-k8s.io", "-A")
            }
            waiting = {
                f"{k[0]} {k[1]}/{k[2]}": conditions(seen[k]) if k in seen else "missing"
                for k in queues
                if k not in seen or not is_true(seen[k], "Active")
            }
            return not waiting, waiting

        wait_for("every queue of the folder to be Active", active, 60)
        report(
            f"e2e[{ENGINE}]: the dev stack's plan folder applied server-side in its order: "
            f"{len(list((out / BEFORE_RELEASES).glob('*.yaml')))} + {len(files)} objects, {len(queues)} queues Active"
        )
    finally:
        without_kueue(bare, guard=False)
        kubectl.run("delete", "--ignore-not-found", "-f", str(out / AFTER_RELEASES), check=False, timeout=120)
        kubectl.run(
            "delete", "--ignore-not-found", "--wait=false", "-f", str(out / BEFORE_RELEASES), check=False, timeout=120
        )
