"""Recover a stack after an interrupted `pulumi up`: say what its pending operations are and run,
or print, the commands that clear them (docs/day-2.md#an-interrupted-up).

    python -m components.recovery --stack dev [--kubeconfig FILE] [--run]

It reads the state through Pulumi's Automation API, which runs the `pulumi` on PATH (`pulumi stack
export`, secrets left encrypted, in the project in --cwd, with the same backend and secrets settings
as `pulumi up`), and the cluster with the kubeconfig (default $KUBECONFIG, else ~/.kube/config: on
AKS, `az aks get-credentials` writes it). Without --run it only prints.
A stack still locked by the dead CLI needs `pulumi cancel` first; this never takes a lock away,
since it cannot tell a dead update from one still running elsewhere.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from ..k8s.helm_records import ReleaseState, release_state, storage_selector
from ..k8s.reader import ClusterReader, ReadError
from ..state.stack_state import StateError, export_state, import_state
from .pending import Pending, adopted, pending_operations, recorded_releases, recovery_plan


def _exists(reader: ClusterReader, op: Pending) -> bool:
    """Whether the object a pending create was making is in the cluster (discovery maps its kind)."""
    group_version = op.api_version or "v1"
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    listing = reader.get(base) or {}
    resource = next(
        (r for r in listing.get("resources", []) if r.get("kind") == op.kind and "/" not in r["name"]), None
    )
    if resource is None:
        return False  # the kind is not served (its CRD was never made): nor is the object
    where = f"/namespaces/{op.namespace}" if resource.get("namespaced") and op.namespace else ""
    return reader.get(f"{base}{where}/{resource['name']}/{op.name}") is not None


def _release(reader: ClusterReader, op: Pending) -> ReleaseState | None:
    return release_state(
        reader.list(f"/api/v1/namespaces/{op.namespace}/secrets", label_selector=storage_selector(op.name or ""))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.recovery", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--cwd", type=Path, default=Path("."), help="the Pulumi project (default: here)")
    parser.add_argument("--kubeconfig", type=Path, help="default $KUBECONFIG, else ~/.kube/config")
    parser.add_argument("--run", action="store_true", help="run the commands instead of printing them")
    args = parser.parse_args(argv)

    try:
        workspace, state = export_state(args.cwd, args.stack)
    except StateError as err:
        print(f"pulumi stack export failed:\n{err}", file=sys.stderr)
        return 2
    pending, recorded = pending_operations(state), recorded_releases(state)
    kubeconfig = args.kubeconfig or Path(
        os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or Path.home() / ".kube" / "config"
    )
    try:
        with ClusterReader.from_kubeconfig(kubeconfig.read_text()) as reader:
            creates = [op for op in pending if op.operation == "creating" and op.import_id]
            exists = {op.urn: _exists(reader, op) for op in creates if not op.is_release}
            releases = {op.urn: _release(reader, op) for op in [*pending, *recorded] if op.is_release and op.import_id}
    except (OSError, ReadError) as err:
        print(f"cannot read the cluster with {kubeconfig}: {err}", file=sys.stderr)
        return 2
    plan = recovery_plan(args.stack, pending, exists, releases, recorded)
    if not plan.reasons and not plan.unknown:
        print(
            f"stack {args.stack} has no pending operations and no Helm release left mid-change: run `pulumi up` "
            "(after `pulumi cancel` if it says the stack is locked and no other update runs)"
        )
        return 0
    print(f"stack {args.stack}: {len(pending)} pending operation(s); what an interrupted update left:")
    for reason in plan.reasons:
        print(f"  - {reason}")
    for op in plan.unknown:
        print(
            f"  - {op.urn}: interrupted while creating; not a Kubernetes object, so not checked here: if it "
            "exists, `pulumi import` it with its ID, else `pulumi refresh --clear-pending-creates`"
        )
    adopt = [
        f"adopt {urn} as {id_} (pulumi stack export; the create made a resource; pulumi stack import)"
        for urn, id_ in plan.adopt
    ]
    if not args.run:
        steps = [*plan.helm, *adopt, *plan.refresh]
        print("\nrun, in this order (--run does), then `pulumi up`:" if steps else "\nthen `pulumi up`")
        for step in steps:
            print(f"  {step}")
        return 0
    if plan.unknown:
        print("not run: resolve the pending creates above first, they need your judgement", file=sys.stderr)
        return 1
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

    def run(command: str) -> bool:
        print(f"$ {command}", flush=True)
        argv_ = shlex.split(command)
        if argv_[0] == "pulumi":
            argv_ += ["--cwd", str(args.cwd), "--non-interactive"]
        if subprocess.run(argv_, check=False, env=env).returncode != 0:
            print(f"failed: {command}", file=sys.stderr)
            return False
        return True

    if not all(run(command) for command in plan.helm):
        return 1
    if plan.adopt:
        print(f"$ pulumi stack import --stack {args.stack}  # the state with the pending creates adopted", flush=True)
        edited = adopted(state, plan.adopt)
        try:
            import_state(workspace, args.stack, edited)
        except StateError as err:
            print(f"failed: pulumi stack import --stack {args.stack}\n{err}", file=sys.stderr)
            return 1
    if not all(run(command) for command in plan.refresh):
        return 1
    print("done; now `pulumi up`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
