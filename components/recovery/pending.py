"""What an interrupted `pulumi up` left behind, and what to run about it (pure).

A CLI that dies mid-`up` (a closed laptop, a cancelled CI job) leaves in the state the operations
it had started: `pending_operations`, each with the resource's URN, type and inputs, and the
stack locked. Pulumi then refuses to go on until a `pulumi refresh` clears them, and a pending
*create* it clears only interactively, because the object may or may not exist. Here that question
is answered from the cluster:
- an object that exists is adopted: its pending create becomes a resource of the state with the
  object's ID (`adopted`, written back with `pulumi stack import`), and `pulumi refresh` then
  reads it, so the next `up` updates it instead of failing on "already exists" (the kubernetes
  provider never adopts an existing object on create: upsertExistingObjects is off by default).
  `pulumi refresh --import-pending-creates`, the CLI's own way, does not do it in pulumi v3.260:
  it marks the operation `importing`, and the refresh that follows drops it from the state
  (tests/e2e/engine/test_engine_interrupted.py showed the next `up` failing on the release's name);
- one that does not is cleared (`--clear-pending-creates`), and the next `up` creates it;
- a Helm release the provider was still installing or upgrading is `pending-install` or
  `pending-upgrade` in Helm's own records, and Helm refuses every operation on it ("another
  operation is in progress"): an install that never finished is uninstalled, an upgrade rolled back
  to the last deployed revision, and then the release is imported or cleared as above. Every
  release of the state is checked so, pending or not (`recorded_releases`).
The kubernetes provider's import IDs are `<namespace>/<name>`, or `<name>` for a cluster-scoped
object; a Release's is `<namespace>/<release name>`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..k8s.helm_records import ReleaseState

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class Pending:
    """One pending operation of the state."""

    urn: str
    type: str
    operation: str  # creating | updating | deleting | reading | importing
    namespace: str | None  # where the object lives (None: cluster-scoped, or not a Kubernetes object)
    name: str | None
    api_version: str | None = None
    kind: str | None = None

    @property
    def import_id(self) -> str | None:
        if self.name is None:
            return None
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def is_release(self) -> bool:
        return self.type == RELEASE_TYPE


def _pending(resource: Mapping[str, Any], operation: str) -> Pending:
    inputs = resource.get("inputs") or {}
    type_ = str(resource.get("type", ""))
    if type_ == RELEASE_TYPE:
        namespace, name = inputs.get("namespace"), inputs.get("name")
    elif type_.startswith("kubernetes:"):
        meta = inputs.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
    else:
        namespace = name = None
    return Pending(
        urn=str(resource.get("urn", "")),
        type=type_,
        operation=operation,
        namespace=namespace or None,
        name=name or None,
        api_version=inputs.get("apiVersion"),
        kind=inputs.get("kind"),
    )


def pending_operations(state: Mapping[str, Any]) -> list[Pending]:
    """The pending operations of `pulumi stack export`'s output."""
    deployment = state.get("deployment") or {}
    return [
        _pending(op.get("resource") or {}, str(op.get("type", ""))) for op in deployment.get("pending_operations") or []
    ]


def recorded_releases(state: Mapping[str, Any]) -> list[Pending]:
    """The Helm releases the state holds. An `up` run after the interruption drops a pending update
    from the state (it only warns of it), but Helm's record of that release stays pending-upgrade,
    and every later `up` fails on it: so every release is checked, pending or not."""
    deployment = state.get("deployment") or {}
    return [_pending(r, "recorded") for r in deployment.get("resources") or [] if r.get("type") == RELEASE_TYPE]


@dataclass(frozen=True)
class Plan:
    """What to run, in order, and why; `unknown` lists what this cannot judge (no Kubernetes object)."""

    helm: tuple[str, ...]
    adopt: tuple[tuple[str, str], ...]  # (URN, ID) of each pending create whose object exists
    refresh: tuple[str, ...]
    reasons: tuple[str, ...]
    unknown: tuple[Pending, ...]


def recovery_plan(
    stack: str,
    pending: Sequence[Pending],
    exists: Mapping[str, bool],
    releases: Mapping[str, ReleaseState | None],
    recorded: Sequence[Pending] = (),
) -> Plan:
    """The commands for `pending` and for the `recorded` releases, given which objects exist (by
    URN) and each Release's Helm state (by URN)."""
    helm: list[str] = []
    imports: list[tuple[str, str]] = []
    reasons: list[str] = []
    unknown: list[Pending] = []
    clear = False
    pending_urns = {op.urn for op in pending}
    stuck = [r for r in recorded if r.urn not in pending_urns and (state := releases.get(r.urn)) and state.in_progress]
    for op in [*pending, *stuck]:
        present = exists.get(op.urn, False)
        if op.is_release:
            release = releases.get(op.urn)
            present = release is not None
            if release is not None and release.in_progress:
                if release.deployed_revision is None:
                    helm.append(f"helm uninstall {op.name} --namespace {op.namespace} --wait")
                    reasons.append(
                        f"{op.urn}: Helm never finished installing it ({release.status}); uninstalled, "
                        "so the next `up` installs it again"
                    )
                    present = False
                else:
                    helm.append(
                        f"helm rollback {op.name} {release.deployed_revision} --namespace {op.namespace} --wait"
                    )
                    reasons.append(
                        f"{op.urn}: Helm was still changing it ({release.status}); rolled back to revision "
                        f"{release.deployed_revision}, the last deployed, which the next `up` upgrades again"
                    )
        if op.operation == "recorded":
            continue
        if op.operation != "creating":
            reasons.append(f"{op.urn}: interrupted while {op.operation}; `pulumi refresh` reads it back")
        elif op.import_id is None:
            unknown.append(op)
        elif present:
            imports.append((op.urn, op.import_id))
            reasons.append(f"{op.urn}: it exists in the cluster ({op.import_id}); adopted into the state with that ID")
        else:
            clear = True
            reasons.append(f"{op.urn}: it does not exist in the cluster; cleared, so the next `up` creates it")
    needed = imports or clear or stuck or any(op.operation != "creating" for op in pending)
    refresh = (f"pulumi refresh --stack {stack} --yes --clear-pending-creates",) if needed else ()
    return Plan(tuple(helm), tuple(imports), refresh, tuple(reasons), tuple(unknown))


def adopted(state: Mapping[str, Any], adopt: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """`pulumi stack export`'s output with each pending create of `adopt` made a resource with its
    ID (its outputs the inputs it was created with, until the refresh reads the object), after
    the resources it depends on, and no pending operation left: what `pulumi stack import` would
    drop anyway, which the plan clears or reads back."""
    out = copy.deepcopy(dict(state))
    deployment = out.setdefault("deployment", {})
    ids = dict(adopt)
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") or {}
        if op.get("type") == "creating" and resource.get("urn") in ids:
            made = {**resource, "id": ids[resource["urn"]], "outputs": copy.deepcopy(resource.get("inputs") or {})}
            deployment.setdefault("resources", []).append(made)
    deployment["pending_operations"] = []
    return out
