"""Where a chart and its image come from: an OCI repository, an https chart repository or a local
`.tgz`, and an image repository that mirrors the upstream one (pure; no Pulumi import).

One function turns a configured source into the (chart, repository, version) a Helm release
takes, so the program, the plan and the e2e tier install a chart the same way.
"""

from __future__ import annotations

import re
import reprlib
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

# An image repository: registry host (with an optional port) and path, no scheme, tag or digest.
_IMAGE_REPOSITORY = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+")
# A registry as a chart URL or image repository names it: a DNS name or IP, an optional port.
REGISTRY = r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?"
_REGISTRY = re.compile(REGISTRY)
_DIGEST = re.compile(r"@sha[0-9]{3}:")

# Messages quote a value at most this long: a 10 MB value is not echoed whole.
_QUOTED = reprlib.Repr()
_QUOTED.maxstring = 256  # a real URL or path fits; a 10 MB value does not
_CREDENTIAL_WAY = (
    "the URL is printed by the plan, written into ORDER.md and kept in Pulumi's state in plain text; "
    "give it without the credential and the credential as kueue-aks:registryCredentials, a Pulumi "
    "secret (docs/registries.md)"
)


@dataclass(frozen=True)
class RegistryLogin:
    """A user and password for one registry (host[:port]) that Helm signs in to for a chart. The
    password never reaches a repr, a plan or a path: the program hands it to Helm as a secret."""

    registry: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ChartRef:
    """What a Helm release is given: `chart` (an OCI URL, a chart name in `repository`, or a
    local file), the pinned `version`, and the sign-in for its registry when one is configured."""

    chart: str
    version: str
    repository: str | None = None
    login: RegistryLogin | None = None

    @property
    def registry(self) -> str | None:
        """The registry host[:port] the chart is pulled from; None for a local file."""
        return registry_of(self.repository or self.chart)


def registry_of(source: str) -> str | None:
    """The host[:port] of an oci:// or https:// chart source, lower-cased; None for anything else."""
    if not source.startswith(("oci://", "https://")):
        return None
    return urlsplit(source).netloc.lower() or None


def chart_ref(source: str, name: str, version: str, logins: Iterable[RegistryLogin] = ()) -> ChartRef:
    """`source` is an `oci://` repository (the chart itself), an `https://` chart repository (the
    chart is `name` in it), or a path to a packaged `.tgz`; `logins` are the configured sign-ins,
    of which the one for the source's registry goes with it."""
    host = registry_of(source)
    login = next((entry for entry in logins if host and entry.registry.lower() == host), None)
    if source.startswith("https://"):
        return ChartRef(chart=name, version=version, repository=source.rstrip("/"), login=login)
    return ChartRef(chart=source, version=version, login=login)


def _has_userinfo(text: str) -> bool:
    """An "@" that is not a digest's (`@sha256:`): a user name or password, where a password may
    hold "/" or ":" too."""
    return "@" in text and not _DIGEST.search(text)


def _without_credential(source: str) -> str:
    """The URL quoted with whatever stands before its last "@" and any query replaced by ***."""
    scheme, _, rest = source.partition("://")
    if _has_userinfo(rest):
        rest = "***@" + rest.rsplit("@", 1)[1]
    rest = rest.split("?", 1)[0] + ("?***" if "?" in rest else "")
    return _QUOTED.repr(f"{scheme}://{rest}")


def _url_problem(source: str) -> str | None:
    """What an oci:// or https:// chart URL may not hold: a credential (user info, a query such as
    a SAS token), an empty or malformed host, a fragment. Never quotes the credential."""
    scheme, _, rest = source.partition("://")
    host = rest.split("/", 1)[0]
    if _has_userinfo(rest) or "?" in rest:
        where = "a user name or password" if _has_userinfo(rest) else "a query (e.g. a SAS token)"
        return f"{_without_credential(source)} holds {where}: {_CREDENTIAL_WAY}"
    if not host:
        return f"{_QUOTED.repr(source)} names no registry: write {scheme}://<host>/<path>"
    if not _REGISTRY.fullmatch(host):
        return f"{_QUOTED.repr(source)}: {_QUOTED.repr(host)} is not a host name with an optional :port"
    if "#" in rest or any(c.isspace() for c in rest):
        return f"{_QUOTED.repr(source)} holds a fragment or a blank: give the repository URL alone"
    return None


def chart_source_problem(source: object, version: str, root: Path) -> str | None:
    """Why a configured chart source cannot be used, or None. A local file must hold the pinned
    version, so pinning holds whichever way the chart arrives."""
    if not isinstance(source, str) or not source:
        return "must be an oci:// or https:// chart repository, or a path to a .tgz"
    if source.startswith(("oci://", "https://")):
        problem = _url_problem(source)
        if problem:
            return problem
    if source.startswith("oci://"):
        last = source.rstrip("/").rsplit("/", 1)[-1]
        if ":" in last or "@" in last:
            return (
                f"{_QUOTED.repr(source)} names a tag or digest; give the repository only (the version comes "
                "from the version key)"
            )
        return None
    if source.startswith("https://"):
        return None
    if "://" in source:
        scheme = _QUOTED.repr(source.split("://")[0])
        return f"{_QUOTED.repr(source)} has scheme {scheme}; allowed: oci://, https://, or a local .tgz path"
    if not source.endswith(".tgz"):
        return f"{_QUOTED.repr(source)} is neither a URL with oci:// or https:// nor a path to a packaged chart (.tgz)"
    path = (root / source) if not Path(source).is_absolute() else Path(source)
    if not path.is_file():
        return f"{_QUOTED.repr(source)}: no such file (relative paths start at the project directory, {root})"
    packaged = packaged_version(path)
    if packaged != version:
        return f"{_QUOTED.repr(source)} holds chart version {packaged}, not the pinned {version}"
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
    if isinstance(value, str) and _has_userinfo(value):
        # user:password@registry/...: no container runtime reads a credential there.
        masked = _QUOTED.repr("***@" + value.rsplit("@", 1)[1])
        return (
            f"{masked} holds a user name or password, which no container runtime "
            "reads there and which would sit in the plan and Pulumi's state in plain text; write registry/path and "
            "let the nodes pull with their identity (AKS: attach the registry, docs/registries.md)"
        )
    if not isinstance(value, str) or not _IMAGE_REPOSITORY.fullmatch(value):
        hint = ""
        if isinstance(value, str) and "://" in value:
            hint = " without a scheme"
        elif isinstance(value, str) and ("@" in value or ":" in value.rsplit("/", 1)[-1]):
            hint = " without a tag or digest (the tag follows the chart version)"
        return (
            f"{_QUOTED.repr(value)} is not an image repository; write registry/path{hint}, "
            "e.g. myregistry.azurecr.io/kueue/kueue"
        )
    return None
