"""Where a chart and its image come from: an OCI repository, an https chart repository or a local
`.tgz`, and an image repository that mirrors the upstream one (pure; no Pulumi import).

One function turns a configured source into the (chart, repository, version) a Helm release
takes, so the program, the plan and the e2e tier install a chart the same way.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

import yaml

# An image repository: registry host (with an optional port) and path, no scheme, tag or digest.
_IMAGE_REPOSITORY = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$")


@dataclass(frozen=True)
class ChartRef:
    """What a Helm release is given: `chart` (an OCI URL, a chart name in `repository`, or a
    local file) and the pinned `version`."""

    chart: str
    version: str
    repository: str | None = None


def chart_ref(source: str, name: str, version: str) -> ChartRef:
    """`source` is an `oci://` repository (the chart itself), an `https://` chart repository (the
    chart is `name` in it), or a path to a packaged `.tgz`."""
    if source.startswith("https://"):
        return ChartRef(chart=name, version=version, repository=source.rstrip("/"))
    return ChartRef(chart=source, version=version)


def chart_source_problem(source: object, version: str, root: Path) -> str | None:
    """Why a configured chart source cannot be used, or None. A local file must hold the pinned
    version, so pinning holds whichever way the chart arrives."""
    if not isinstance(source, str) or not source:
        return "must be an oci:// or https:// chart repository, or a path to a .tgz"
    if source.startswith("oci://"):
        last = source.rstrip("/").rsplit("/", 1)[-1]
        if ":" in last or "@" in last:
            return (
                f"{source!r} names a tag or digest; give the repository only (the version comes from the version key)"
            )
        return None
    if source.startswith("https://"):
        return None
    if "://" in source:
        return f"{source!r} has scheme {source.split('://')[0]!r}; allowed: oci://, https://, or a local .tgz path"
    if not source.endswith(".tgz"):
        return f"{source!r} is neither a URL with oci:// or https:// nor a path to a packaged chart (.tgz)"
    path = (root / source) if not Path(source).is_absolute() else Path(source)
    if not path.is_file():
        return f"{source!r}: no such file (relative paths start at the project directory, {root})"
    packaged = packaged_version(path)
    if packaged != version:
        return f"{source!r} holds chart version {packaged}, not the pinned {version}"
    return None


def packaged_version(path: Path) -> str | None:
    """The version in a packaged chart's Chart.yaml."""
    try:
        with tarfile.open(path) as tar:
            member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
            extracted = tar.extractfile(member)
            return None if extracted is None else str(yaml.safe_load(extracted.read()).get("version"))
    except (tarfile.TarError, StopIteration, OSError, yaml.YAMLError):
        return None


def image_repository_problem(value: object) -> str | None:
    if not isinstance(value, str) or not _IMAGE_REPOSITORY.match(value):
        hint = ""
        if isinstance(value, str) and "://" in value:
            hint = " without a scheme"
        elif isinstance(value, str) and ("@" in value or ":" in value.rsplit("/", 1)[-1]):
            hint = " without a tag or digest (the tag follows the chart version)"
        return (
            f"{value!r} is not an image repository; write registry/path{hint}, e.g. myregistry.azurecr.io/kueue/kueue"
        )
    return None
