"""An interrupted `pulumi up`, and the recovery docs/day-2.md gives, on the real engine.

After test_engine.py's destroy, on the same control plane. The CLI and everything it started (the
language host and the provider plugins, which run in process groups of their own) are killed at
once, as a closed laptop or a cancelled CI job does, while Helm is installing (a first `up`) or
upgrading (an update) Kueue's release. Then what the user meets is checked, in order: the stack is
locked (`pulumi cancel`); `pulumi up` refuses the pending operations; `python -m
components.recovery --run` puts Helm and the state right; `pulumi up` completes. Finally `pulumi
destroy` leaves nothing: nothing the interrupted `up` made was lost from the state (orphaned) or
made twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from components.facts.device_plugin import DEVICE_PLUGIN_NAMESPACE

from testbed.cluster import wait_for
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject, assert_nothing_left, release_states
from testbed.measurements import report
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, engine_jobs_config

# An explicit gate at its default value: new controller arguments, so a rolling update that Helm
# waits for, and no change in what Kueue does.
UPDATED_GATES = {"TopologyAwareScheduling": True, "LocalQueueMetrics": True, "VisibilityOnDemand": True}


def session_processes(sid: int) -> list[int]:
    """The processes of a session (field 6 of /proc/<pid>/stat, after the command's parentheses)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid:
            found.append(int(stat.parent.name))
    return found


def kill_everything(up: subprocess.Popen[str]) -> None:
    """SIGKILL the CLI and every process it started, at once."""
    for pid in session_processes(up.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    up.wait()
    wait_for(
        "every process of the interrupted CLI to be gone",
        lambda: (not session_processes(up.pid), session_processes(up.pid)),
        30,
    )


def interrupt_when(cluster: StackCluster, stack: PulumiProject, status: str) -> list[str]:
    """Start `pulumi up` and kill it all while Kueue's release is in Helm state `status`."""
    up = stack.start("up", "--yes", "--skip-preview")
    try:
        seen = wait_for(
            f"Kueue's release to be {status}",
            lambda: (any(s.endswith(status) for s in release_states(cluster)), release_states(cluster)),
            120,
        )
    finally:
        kill_everything(up)
    return seen


def recover(cluster: StackCluster, stack: PulumiProject, *, locked: bool = True) -> str:
    """What the user runs after the interruption, as docs/day-2.md says, and what they see
    (`locked`: the CLI died holding the stack's lock)."""
    if locked:
        up = stack.run("up", "--yes", "--skip-preview", check=False)
        assert up.returncode != 0 and "the stack is currently locked" in up.stderr + up.stdout, up.stdout
        stack.run("cancel", "--yes")
    refused = stack.run("up", "--yes", "--skip-preview", check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "pending operations from previous deployment" in said, said[-3000:]
    done = stack.recover(cluster)
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@on_stacks(ENGINE)
def test_engine_interrupted_first_up_recovers(clean: StackCluster, project: PulumiProject) -> None:
    stack = project.another_stack("interrupted", engine_jobs_config(), clean.cluster.kubeconfig.read_text())
    print("killed while", interrupt_when(clean, stack, "pending-install"))
    said = recover(clean, stack)
    assert "kueue-release" in said, said

    stack.up()
    wait_for("the recovered stack's queues to be active", clean.queues_active, 60)
    assert release_states(clean)[-1].endswith("=deployed"), release_states(clean)
    assert not stack.preview(), "the recovered stack still differs from its program"
    ran = "; ".join(line[2:] for line in said.splitlines() if line.startswith("$ "))
    report(f"e2e[{ENGINE}]: a first `up` killed mid-install recovered with: {ran}")
    assert_nothing_left(clean, stack)


@on_stacks(ENGINE)
def test_engine_interrupted_update_recovers(clean: StackCluster, project: PulumiProject) -> None:
    stack = project.another_stack("interrupted-update", engine_jobs_config(), clean.cluster.kubeconfig.read_text())
    stack.up()
    before = release_states(clean)
    config = engine_jobs_config()
    config["kueue-aks:kueue"] = {**config["kueue-aks:kueue"], "featureGates": UPDATED_GATES}
    stack.set_config(config)
    print("killed while", interrupt_when(clean, stack, "pending-upgrade"), "after", before)
    said = recover(clean, stack)
    assert "rolled back" in said, said

    stack.up()
    states = release_states(clean)
    assert states[-1].endswith("=deployed") and sum(s.endswith("=deployed") for s in states) == 1, states
    assert not stack.preview(), "the recovered stack still differs from its program"
    report(f"e2e[{ENGINE}]: an update killed mid-upgrade recovered: Helm {before} -> {states}")
    assert_nothing_left(clean, stack)


def helm_records(cluster: StackCluster) -> list[dict[str, Any]]:
    """The device plugin's release in Helm's records, one Secret per revision."""
    return cluster.kubectl.items("secrets", "-n", DEVICE_PLUGIN_NAMESPACE, "-l", "owner=helm")


def leave_pending(stack: PulumiProject, picks: list[str]) -> list[dict[str, Any]]:
    """Make the stack's state what a CLI killed between a create's start and its end writes: for
    each of `picks`, the first resource whose URN has it and that nothing else names (a leaf), out
    of the resources and into the pending operations as `creating`, with its inputs and no ID or
    outputs. Written into the file backend's checkpoint itself, as the CLI writes it: `pulumi
    stack import` would drop pending operations."""
    (path,) = (stack.workdir / "state" / ".pulumi" / "stacks").glob(f"*/{stack.stack}.json")
    checkpoint = json.loads(path.read_text())
    deployment = checkpoint["checkpoint"]["latest"]
    named = {
        u
        for r in deployment["resources"]
        for u in [
            r.get("parent"),
            *r.get("dependencies", []),
            *(d for ds in (r.get("propertyDependencies") or {}).values() for d in ds),
        ]
        if u
    }
    moved = []
    for pick in picks:
        found = next(r for r in deployment["resources"] if pick in r["urn"] and r["urn"] not in named)
        deployment["resources"].remove(found)
        moved.append({k: v for k, v in found.items() if k not in ("id", "outputs", "created", "modified")})
    deployment["pending_operations"] = [{"resource": r, "type": "creating"} for r in moved]
    path.write_text(json.dumps(checkpoint))
    assert [op["resource"]["urn"] for op in stack.pending()] == [r["urn"] for r in moved], stack.pending()
    return moved


@on_stacks(ENGINE)
def test_engine_a_create_left_pending_whose_object_exists_is_imported(
    clean: StackCluster, project: PulumiProject
) -> None:
    """The case a kill's timing decides: Helm (or the API server) had finished making the object
    when the CLI died, so the create is pending in the state but the object is in the cluster. The
    recovery adopts it into the state; the next `up` completes and makes nothing twice."""
    stack = project.another_stack("pending-create", engine_jobs_config(), clean.cluster.kubeconfig.read_text())
    stack.up()
    moved = leave_pending(stack, ["helm.sh/v3:Release::gpu-release", ":RoleBinding::"])
    revisions = {s["metadata"]["uid"] for s in helm_records(clean)}
    binding = moved[1]["inputs"]["metadata"]  # a team's RoleBinding: LocalQueues have dependents
    binding_uid = clean.kubectl.get("rolebinding", binding["name"], "-n", binding["namespace"])["metadata"]["uid"]

    said = recover(clean, stack, locked=False)
    for resource in moved:
        assert f"{resource['urn']}: it exists in the cluster" in said, said

    stack.up()
    assert not stack.preview(), "the recovered stack still differs from its program"
    # The same release, never uninstalled or installed again: its first revision's record is
    # still there. The refresh reads the chart's name back where the program gives its mirror
    # reference, so the `up` upgrades it once in place to the same chart and values.
    after = helm_records(clean)
    assert revisions <= {s["metadata"]["uid"] for s in after}, "the device plugin's release was installed again"
    assert [s["metadata"]["labels"]["status"] for s in after].count("deployed") == 1, after
    assert (
        clean.kubectl.get("rolebinding", binding["name"], "-n", binding["namespace"])["metadata"]["uid"] == binding_uid
    )
    held = stack.created()
    assert all(r["urn"] in held for r in moved), held
    assert_nothing_left(clean, stack)
