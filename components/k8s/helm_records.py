"""Helm's own records of a release, as the cluster holds them (pure: the Secrets in, what they say out).

Helm's default storage driver keeps one Secret per revision in the release's namespace, labelled
owner=helm, name=<release>, version=<revision> and status=<status>; its data.release is that
revision's record (JSON, gzipped, base64; and base64 again as Secret data).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Revisions Helm counts as having been deployed: the live one and those an upgrade replaced.
DEPLOYED = ("deployed", "superseded")
# States in which Helm refuses every further operation on the release ("another operation is in
# progress"; helm.sh/helm/v3/pkg/release).
IN_PROGRESS = ("pending-install", "pending-upgrade", "pending-rollback")


def storage_selector(release: str) -> str:
    """The label selector of a release's storage Secrets."""
    return f"owner=helm,name={release}"


def _labels(secret: Mapping[str, Any]) -> Mapping[str, str]:
    return (secret.get("metadata") or {}).get("labels") or {}


def newest_revision(secrets: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The storage Secret of the newest revision; None without any."""
    return max(secrets, key=lambda s: int(_labels(s).get("version", 0)), default=None)


@dataclass(frozen=True)
class ReleaseState:
    """A release's newest revision and the newest one that was deployed (None: never)."""

    status: str
    revision: int
    deployed_revision: int | None

    @property
    def in_progress(self) -> bool:
        return self.status in IN_PROGRESS


def release_state(secrets: Sequence[Mapping[str, Any]]) -> ReleaseState | None:
    newest = newest_revision(secrets)
    if newest is None:
        return None
    deployed = [int(_labels(s).get("version", 0)) for s in secrets if _labels(s).get("status") in DEPLOYED]
    return ReleaseState(
        status=str(_labels(newest).get("status", "")),
        revision=int(_labels(newest).get("version", 0)),
        deployed_revision=max(deployed) if deployed else None,
    )


def decode_release(secret: Mapping[str, Any]) -> dict[str, Any]:
    """The revision's record: chart metadata, values (`config`), `info.status`, `version`."""
    raw = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    record: dict[str, Any] = json.loads(raw)
    return record
