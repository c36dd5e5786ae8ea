"""Hand a stack's operator CRDs from their own Pulumi resources to the releases that own them now,
without deleting them.

    python -m components.operators.migrate --stack dev [--kubeconfig FILE] [--run]

Run once, before the first `pulumi up` of this version, on a stack that was brought up before it
(one whose state holds `kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition` resources under
`kueue-aks:operators:JobOperators`). Without it, that `up` would install the CRD releases and then
delete the old resources, and with them the CRDs and every job of their kinds: Pulumi deletes a
resource the program no longer registers, and only the state can say otherwise.

What it does, in this order, so a failure leaves the stack as it was:
1. marks each such CRD on the cluster as its operator's CRD release's (Helm's label and two
   annotations, `kubectl label` and `kubectl annotate`), so that `up` adopts it rather than
   refusing to install over it (Helm 3.2 and later adopt an object that carries them);
2. exports the stack's state, drops those resources (and every reference to them) and imports it
   again (`pulumi stack export` / `import`, through Pulumi's Automation API; secrets stay encrypted
   as they are).
The CRDs stay on the cluster throughout; the next `up` installs one release per operator that
takes them over, and `pulumi preview` before it shows those releases as creates and no delete.
It reads the state from the project in --cwd, with the `pulumi` and `kubectl` on PATH and the same
backend and secrets settings as `pulumi up`; without --run it only prints. A stack with nothing to
hand over is left alone (exit 0), so running it twice is safe.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..facts.operators import OPERATORS
from ..state.stack_state import StateError, export_state, import_state
from .crd_chart import MANAGED_BY, RELEASE_NAME_ANNOTATION, RELEASE_NAMESPACE_ANNOTATION, release_name

CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
COMPONENT_TYPE = "kueue-aks:operators:JobOperators"
_MARKER = (
    "-customresourcedefinition-"  # the old resources' names: <component>-<operator key>-customresourcedefinition-<CRD>
)


class MigrationError(RuntimeError):
    """The state cannot be handed over as it is; the message says why and what to do."""


@dataclass(frozen=True)
class OldCrd:
    urn: str
    name: str  # the CRD's metadata.name
    operator: str  # its operator's key in the catalog

    @property
    def release(self) -> str:
        return release_name(self.operator)

    @property
    def namespace(self) -> str:
        return OPERATORS[self.operator].namespace


def _resource_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def old_crds(deployment: dict[str, Any]) -> list[OldCrd]:
    """The operator CRDs the state holds as resources of their own (not reads)."""
    resources = deployment.get("resources") or []
    components = {r["urn"] for r in resources if r.get("type") == COMPONENT_TYPE}
    found = []
    for r in resources:
        if r.get("type") != CRD_TYPE or r.get("external") or r.get("parent") not in components:
            continue
        prefix = _resource_name(r["parent"]) + "-"
        name = _resource_name(r["urn"])
        key = name[len(prefix) :].split(_MARKER, 1)[0] if name.startswith(prefix) and _MARKER in name else ""
        if key not in OPERATORS:
            raise MigrationError(f"{r['urn']}: not named as kueue-aks names an operator's CRD; hand it over yourself")
        found.append(OldCrd(r["urn"], str(((r.get("inputs") or {}).get("metadata") or {}).get("name")), key))
    return found


def without(deployment: dict[str, Any], urns: set[str]) -> dict[str, Any]:
    """The deployment with the resources of `urns` gone, and every other resource's references to
    them (dependencies, property dependencies, deletedWith) with them."""
    if any(op.get("resource", {}).get("urn") in urns for op in deployment.get("pending_operations") or []):
        raise MigrationError(
            "an operation on one of these CRDs is pending from an interrupted update; "
            "run `pulumi refresh` (or `pulumi cancel`) first"
        )
    kept = []
    for r in deployment.get("resources") or []:
        if r["urn"] in urns:
            continue
        r = dict(r)
        if r.get("dependencies"):
            r["dependencies"] = [u for u in r["dependencies"] if u not in urns]
        if r.get("propertyDependencies"):
            r["propertyDependencies"] = {
                k: [u for u in v if u not in urns] for k, v in r["propertyDependencies"].items()
            }
        if r.get("deletedWith") in urns:
            del r["deletedWith"]
        kept.append(r)
    return {**deployment, "resources": kept}


def ownership_commands(crds: Sequence[OldCrd], kubectl: Sequence[str]) -> list[list[str]]:
    """The kubectl commands that mark each CRD as its operator's CRD release's."""
    commands = []
    for crd in crds:
        commands.append([*kubectl, "label", "--overwrite", "crd", crd.name, "=".join(MANAGED_BY)])
        commands.append(
            [
                *kubectl,
                "annotate",
                "--overwrite",
                "crd",
                crd.name,
                f"{RELEASE_NAME_ANNOTATION}={crd.release}",
                f"{RELEASE_NAMESPACE_ANNOTATION}={crd.namespace}",
            ]
        )
    return commands


def _run(command: Sequence[str]) -> str:
    print(f"$ {shlex.join(command)}", flush=True)
    done = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise MigrationError(f"`{shlex.join(command)}` failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m components.operators.migrate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--stack", required=True)
    parser.add_argument("--cwd", type=Path, default=Path("."), help="the Pulumi project (default: here)")
    parser.add_argument(
        "--kubeconfig", type=Path, help="for kubectl (default: kubectl's own, $KUBECONFIG or ~/.kube/config)"
    )
    parser.add_argument("--run", action="store_true", help="run the commands instead of printing them")
    args = parser.parse_args(argv)
    kubectl = ["kubectl", *(["--kubeconfig", str(args.kubeconfig)] if args.kubeconfig else [])]
    try:
        workspace, state = export_state(args.cwd, args.stack)
    except StateError as err:
        print(f"pulumi stack export failed:\n{err}", file=sys.stderr)
        return 2
    try:
        crds = old_crds(state["deployment"])
        migrated = {**state, "deployment": without(state["deployment"], {c.urn for c in crds})}
    except MigrationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not crds:
        print(f"stack {args.stack}: no operator CRD is a resource of its own; nothing to hand over")
        return 0
    print(f"stack {args.stack}: {len(crds)} operator CRDs are resources of their own; each goes to its release:")
    for crd in crds:
        print(f"  - {crd.name}: {crd.namespace}/{crd.release}")
    commands = ownership_commands(crds, kubectl)
    if not args.run:
        print("\nrun, in this order (--run does), then `pulumi up`:")
        for command in commands:
            print(f"  {shlex.join(command)}")
        print(
            f"  pulumi stack export --stack {args.stack}, drop those {len(crds)} resources and every reference to "
            "them, "
            f"pulumi stack import --stack {args.stack}"
        )
        return 0
    try:
        for command in commands:
            _run(command)
        print(f"$ pulumi stack import --stack {args.stack}  # the state without those resources", flush=True)
        try:
            import_state(workspace, args.stack, migrated)
        except StateError as err:
            raise MigrationError(f"`pulumi stack import --stack {args.stack}` failed: {err}") from None
    except MigrationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"done: {len(crds)} CRDs handed over; now `pulumi up`, which installs their releases and adopts them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
