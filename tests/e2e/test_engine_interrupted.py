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

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT

from .cluster import wait_for
from .conftest import on_stacks, report
from .engine import PulumiProject, assert_nothing_left, release_states
from .stack_cluster import StackCluster
from .stacks import ENGINE, engine_jobs_config

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
    wait_for("every process of the interrupted CLI to be gone",
             lambda: (not session_processes(up.pid), session_processes(up.pid)), 30)


def interrupt_when(cluster: StackCluster, stack: PulumiProject, status: str) -> list[str]:
    """Start `pulumi up` and kill it all while Kueue's release is in Helm state `status`."""
    up = stack.start("up", "--yes", "--skip-preview")
    try:
        seen = wait_for(f"Kueue's release to be {status}",
                        lambda: (any(s.endswith(status) for s in release_states(cluster)), release_states(cluster)), 120)
    finally:
        kill_everything(up)
    return seen


def recover(cluster: StackCluster, stack: PulumiProject) -> str:
    """What the user runs after the interruption, as docs/day-2.md says, and what they see."""
    locked = stack.run("up", "--yes", "--skip-preview", check=False)
    assert locked.returncode != 0 and "the stack is currently locked" in locked.stderr + locked.stdout, locked.stdout
    stack.run("cancel", "--yes")
    refused = stack.run("up", "--yes", "--skip-preview", check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "pending operations from previous deployment" in said, said[-3000:]
    env = {**stack.env, "PATH": os.pathsep.join([str(cluster.helm.binary.parent), stack.env["PATH"]]),
           **{k: v for k, v in cluster.helm.env.items() if k.startswith("HELM_")}}
    done = subprocess.run([sys.executable, "-m", "components.recovery", "--stack", stack.stack, "--cwd",
                           str(stack.project), "--kubeconfig", str(cluster.cluster.kubeconfig), "--run"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
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
