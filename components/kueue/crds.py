"""The Kueue CRDs the validator checks against, taken from the chart the program installs.

The Helm release installs Kueue's CRDs from its chart (``templates/crd/*.yaml``), so the same chart,
from the same source (``kueue-aks:kueue.chart``) at the same exact version (``kueue.version``),
is the one source of truth for the CRD schemas and CEL rules. Where they come from, first match
wins:

1. ``$KUEUE_CRDS_DIR``: a directory of CRD files (an override, e.g. for a Kueue build of your own).
2. A local ``.tgz`` source: read in place.
3. The user's cache: ``charts/<source key>/<version>/<name>-<version>.tgz`` in the kueue-aks folder of the
   user's cache (components/k8s/cache.py: ``~/.cache/kueue-aks`` on Linux, ``~/Library/Caches/kueue-aks`` on
   macOS, ``$XDG_CACHE_HOME/kueue-aks`` on either when that is an absolute path), written by 4 (or by
   ``helm pull ... -d`` into that directory).
4. The network, once: an ``oci://`` registry (oras, with Helm's registry login and Docker's
   credentials, as the Helm release uses) or an ``https://`` chart repository (its index.yaml).
   The archive goes to a temporary directory, is checked, and is renamed into the cache as a whole:
   a failed or partial download never leaves an entry behind.

Beside the charts, in ``kueue-aks/crd-documents/<digest>-<format>.json``, each chart's CRD documents as
JSON (by the digest of its CRD templates) and in ``kueue-aks/cel-grammar.lark`` the CEL parser's
tables: a later process reads these instead of parsing YAML and analysing CEL's grammar again.
The CRDs are compiled only when the validator asks for them (``KueueCrds.crds``): a preview that
reuses a verdict (components/kueue/verdicts.py) needs only their digest.

Every archive is checked before use: it must be a readable chart named ``kueue`` whose Chart.yaml
holds the pinned version, and for the default source its CRD templates must match the digest
pinned here (``CRD_TEMPLATE_DIGESTS``). The digest of the published OCI archive itself is not
pinned: it cannot be learnt where this table was made (registry.k8s.io unreachable), and a
chart archive's digest changes with any repack (file times, ordering) although its CRDs do not;
the CRD templates are what the validator reads, so they are what is pinned. A mirror (any other
source) may repack the chart, so only its version is checked.

When neither the cache nor the network has the chart, the caller is told why (``KueueCrds.missing``)
and checks without CRD schemas; with ``CI=true`` that is an error instead. A source that answers
but is wrong (401/403/404/5xx, a corrupt archive, another version, a digest mismatch) is always an
error.

Pure apart from files and the network: no Pulumi import.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import requests
import yaml

from ..config.checks import PROJECT_ROOT
from ..config.kueue import DEFAULT_KUEUE_CHART
from ..k8s import documents
from ..k8s.cache import user_cache
from ..k8s.charts import RegistryLogin
from ..k8s.crd_schema import CrdError, CrdSchemas
from .validate import CRDS_ENV, crds_from_documents, load_crds

CHART_NAME = "kueue"

# sha256 over the chart's templates/crd/*.yaml, per Kueue version, as computed by
# crd_templates_digest(). Source: the packaged chart in ../shared/kueue/v<version>/chart/
# (kueue-<version>.tgz, a repack of oci://registry.k8s.io/kueue/charts/kueue:<version> whose CRD
# templates are byte copies of charts/kueue/templates/crd at the release tag; see its SOURCE.md).
# 0.18.4's digest is also that of charts/kueue/templates/crd in the sigs.k8s.io/kueue@v0.18.4
# module zip from proxy.golang.org.
CRD_TEMPLATE_DIGESTS: Mapping[str, str] = {
    "0.18.4": "sha256:296e90333a1ae9315ec4ab0d6f98a1b12a575b8246603946d6e47aa56cc78d68",
    "0.19.2": "sha256:f9cc6aa8d54f67bf5c1cd6e53bbf2208a4c9000e9de340f588ce38180f968e60",
}

# Helm's OCI media types (helm.sh/docs/topics/registries).
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
_MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json",)
# A Kueue chart is ~200 KiB; anything far larger is not one (and must not fill the disk).
MAX_ARCHIVE_BYTES = 32 * 1024 * 1024
_TEMPLATE_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
_TEMPLATE_ACTION = re.compile(r"\{\{.*?\}\}")


Fetch = Callable[[str, str, "Transport"], bytes]  # (source, version, transport) -> archive bytes


class ChartError(CrdError):
    """The chart source answered, but not with a usable chart: always an error."""


class ChartUnavailable(CrdError):
    """Neither the cache nor the network has the chart (offline, DNS, timeout)."""


@dataclass(frozen=True)
class Transport:
    """How the network is used; injectable so tests can shorten the timeout."""

    timeout: float = 20.0  # seconds per connect and per read: a preview must not hang
    max_bytes: int = MAX_ARCHIVE_BYTES
    # kueue-aks:registryCredentials' sign-in for the chart's registry, as the Helm release has it
    # (the program only: the plan cannot decrypt it); without one, Helm's and Docker's logins.
    login: RegistryLogin | None = None


@dataclass(frozen=True)
class ChartCrds:
    """The CRD templates of a checked chart archive."""

    version: str
    templates: Mapping[str, bytes]  # file name in templates/crd/ -> bytes

    @property
    def digest(self) -> str:
        return crd_templates_digest(self.templates)


@dataclass(frozen=True)
class KueueCrds:
    """What the validator gets: the CRDs and where they came from, or why there are none. The
    CRDs are compiled when `crds` is first read (raising CrdError if they cannot be); `digest`
    names a chart's before that."""

    origin: str  # e.g. "KUEUE_CRDS_DIR=/x" or "chart oci://... 0.19.2 (/home/u/.cache/...)"
    missing: str | None = None  # the warning to show when crds is None
    digest: str | None = None  # the digest of the chart's CRD templates; None without a chart
    compile: Callable[[], CrdSchemas | None] = field(default=lambda: None, repr=False, compare=False)

    @functools.cached_property
    def crds(self) -> CrdSchemas | None:
        return self.compile()


# ---------------------------------------------------------------------------------------------
# Reading a chart archive


def crd_templates_digest(templates: Mapping[str, bytes]) -> str:
    """One sha256 over the sorted (file name, bytes) of the CRD templates."""
    digest = hashlib.sha256()
    for name in sorted(templates):
        data = templates[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return f"sha256:{digest.hexdigest()}"


def read_chart(data: bytes, *, label: str) -> ChartCrds:
    """Chart.yaml's version and the CRD templates of a packaged chart; ChartError if it is not one.

    The whole archive is read, so a truncated download fails here and not later."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            files = {m.name: m for m in tar.getmembers() if m.isfile()}
            chart_yaml = [n for n in files if n.count("/") == 1 and n.endswith("/Chart.yaml")]
            if len(chart_yaml) != 1:
                raise ChartError(f"{label} is not a packaged Helm chart (no <chart>/Chart.yaml)")
            top = chart_yaml[0].split("/", 1)[0]
            meta = yaml.safe_load(_member(tar, files[chart_yaml[0]]))
            prefix = f"{top}/templates/crd/"
            templates = {
                name[len(prefix) :]: _member(tar, member)
                for name, member in files.items()
                if name.startswith(prefix) and "/" not in name[len(prefix) :] and name.endswith(".yaml")
            }
    except (tarfile.TarError, EOFError, zlib.error, OSError, yaml.YAMLError) as err:
        raise ChartError(f"{label} is not a readable chart archive (truncated or corrupt: {err})") from None
    if not isinstance(meta, dict) or meta.get("name") != CHART_NAME:
        name = meta.get("name") if isinstance(meta, dict) else None
        raise ChartError(f"{label} holds chart {name!r}, not {CHART_NAME!r}")
    if not templates:
        raise ChartError(f"{label} has no templates/crd/*.yaml: not a Kueue chart this program knows")
    return ChartCrds(version=str(meta.get("version")), templates=templates)


def _member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    stream = tar.extractfile(member)
    if stream is None:
        raise tarfile.TarError(f"cannot read {member.name}")
    return stream.read()


def crd_documents(templates: Mapping[str, bytes], *, label: str) -> list[dict[str, Any]]:
    """The CRDs in Helm templates, without rendering Helm.

    The chart's CRD templates are plain YAML plus a few directives: a license comment, an
    `include` of the labels, an `if` around the cert-manager annotation, and the release name in
    the conversion webhook. Lines that are only a directive are dropped and directives inside a
    value become a placeholder; what the validator reads (names, group, versions and their
    openAPIV3Schema) has no directive in it."""
    docs: list[dict[str, Any]] = []
    for name in sorted(templates):
        text = _TEMPLATE_COMMENT.sub("", templates[name].decode("utf-8"))
        lines = [line for line in text.splitlines() if not _only_directive(line)]
        text = _TEMPLATE_ACTION.sub("helm-template", "\n".join(lines))
        try:
            loaded = [d for d in documents.load_all(text) if d]
        except yaml.YAMLError as err:
            raise ChartError(
                f"{label}: templates/crd/{name} does not parse once its Helm directives are removed: {err}"
            ) from None
        docs.extend(d for d in loaded if isinstance(d, dict))
    return docs


def _only_directive(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("{{") and stripped.endswith("}}") and not _TEMPLATE_ACTION.sub("", stripped).strip()


def check_chart(chart: ChartCrds, *, source: str, version: str, label: str) -> None:
    """The pinned version, and for the default source the pinned CRD templates."""
    if chart.version != version:
        raise ChartError(f"{label} holds Kueue chart version {chart.version}, not the pinned {version}")
    if source == DEFAULT_KUEUE_CHART:
        pinned = CRD_TEMPLATE_DIGESTS.get(version)
        if pinned is None:
            raise ChartError(
                f"no CRD digest is pinned for Kueue {version} in components/kueue/crds.py "
                "(CRD_TEMPLATE_DIGESTS): add it with the version"
            )
        if chart.digest != pinned:
            raise ChartError(
                f"{label}: the CRD templates have digest {chart.digest}, not the {pinned} pinned for "
                f"Kueue {version} (components/kueue/crds.py); the chart is not the published one"
            )


# ---------------------------------------------------------------------------------------------
# The cache


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The charts' folder in the user's cache of a process with environment `environ` (components/k8s/cache.py)."""
    return user_cache(environ) / "charts"


def source_key(source: str) -> str:
    """A readable directory name per source, unique by a short hash."""
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", source.rstrip("/"))[:80]
    return f"{readable}-{hashlib.sha256(source.encode()).hexdigest()[:10]}"


def cache_entry(source: str, version: str, environ: Mapping[str, str] = os.environ) -> Path:
    """The directory holding `<name>-<version>.tgz` for this source and version."""
    return cache_root(environ) / source_key(source) / version


def archive_name(version: str) -> str:
    return f"{CHART_NAME}-{version}.tgz"  # the name `helm pull` gives it


def _store(entry: Path, data: bytes, version: str) -> Path:
    """Write the archive to a temporary directory beside the cache and rename it into place whole."""
    entry.parent.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=entry.parent.parent))
    try:
        (partial / archive_name(version)).write_bytes(data)
        entry.parent.mkdir(exist_ok=True)
        try:
            partial.rename(entry)
        except OSError:
            if not (entry / archive_name(version)).is_file():  # not another process that got there first
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return entry / archive_name(version)


# ---------------------------------------------------------------------------------------------
# The network


def helm_registry_config(environ: Mapping[str, str] = os.environ) -> Path:
    """Where `helm registry login` keeps its credentials (Helm's own default per OS)."""
    if environ.get("HELM_REGISTRY_CONFIG"):
        return Path(environ["HELM_REGISTRY_CONFIG"])
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Preferences"
    elif sys.platform == "win32":
        base = Path(environ.get("APPDATA", Path.home()))
    else:
        base = Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "helm" / "registry" / "config.json"


def fetch_chart(source: str, version: str, transport: Transport = Transport()) -> bytes:
    """The packaged chart from an oci:// registry or an https:// chart repository.

    ChartUnavailable when the source cannot be reached, ChartError when it answers wrongly."""
    try:
        if source.startswith("oci://"):
            return _fetch_oci(source, version, transport)
        if source.startswith("https://"):
            return _fetch_repository(source, version, transport)
    except requests.exceptions.SSLError as err:
        raise ChartError(
            f"{source}: TLS failed ({_reason(err)}); a registry with a private CA needs it in "
            "REQUESTS_CA_BUNDLE (and Helm, in SSL_CERT_FILE: docs/registries.md)"
        ) from None
    except requests.Timeout:
        raise ChartUnavailable(f"{source} did not answer within {transport.timeout:g} s") from None
    except requests.ConnectionError as err:
        if "timed out" in str(err):  # a read timeout while the body streams
            raise ChartUnavailable(f"{source} did not answer within {transport.timeout:g} s") from None
        raise ChartUnavailable(f"{source} cannot be reached ({_reason(err)})") from None
    except requests.RequestException as err:
        raise ChartError(f"{source}: {err}") from None
    raise ChartError(f"{source!r} is not an oci:// or https:// chart source")


def _reason(err: Exception) -> str:
    text = str(err)
    for known in (
        "Name or service not known",
        "nodename nor servname",
        "Connection refused",
        "Network is unreachable",
        "getaddrinfo failed",
        "Temporary failure in name resolution",
    ):
        if known in text:
            return known
    return text[:200]


class _TimeoutAdapter(requests.adapters.HTTPAdapter):
    """Every request of a session gets the timeout, the token requests oras makes included."""

    def __init__(self, timeout: float) -> None:
        super().__init__(max_retries=0)
        self._timeout = timeout

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        return super().send(request, **kwargs)


def _session(session: requests.Session, transport: Transport) -> requests.Session:
    adapter = _TimeoutAdapter(transport.timeout)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def _http_problem(response: requests.Response, source: str, version: str, what: str) -> ChartError | None:
    code = response.status_code
    if code < 400:
        return None
    host = source.split("://", 1)[1].split("/", 1)[0]
    if code in (401, 403):
        hint = (
            f"log Helm in to the registry (`helm registry login {host}`; the same login the Helm release uses)"
            if source.startswith("oci://")
            else "this program reads https chart repositories without credentials; "
            "use an oci:// mirror with `helm registry login`, or a local .tgz"
        )
        return ChartError(f"{source} refused {what} ({code} {response.reason}): {hint}")
    if code == 404:
        return ChartError(
            f"{source} has no {what} ({code} Not Found): check kueue-aks:kueue.chart, and that "
            f"version {version} is there (e.g. `helm push {archive_name(version)} "
            f"{source.rsplit('/', 1)[0] if source.startswith('oci://') else source}`)"
        )
    return ChartError(f"{source} failed to serve {what} ({code} {response.reason}); try again later")


def _read_body(response: requests.Response, transport: Transport, label: str) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_content(chunk_size=65536):
        size += len(chunk)
        if size > transport.max_bytes:
            raise ChartError(f"{label} is larger than {transport.max_bytes} bytes: not a Kueue chart")
        chunks.append(chunk)
    return b"".join(chunks)


def _fetch_oci(source: str, version: str, transport: Transport) -> bytes:
    import oras.container
    import oras.provider

    class Registry(oras.provider.Registry):
        # oras retries failures with sleeps of up to 80 s; a preview fails fast instead, so the
        # request goes through the undecorated method (which still answers auth challenges).
        do_request = oras.provider.Registry.do_request.__wrapped__

    registry = Registry(auth_backend="token")
    _session(registry.session, transport)
    container = oras.container.Container(f"{source[len('oci://') :].rstrip('/')}:{version}")
    configs = [str(p) for p in (helm_registry_config(), _docker_config()) if p.is_file()]
    if transport.login:
        registry.auth.set_basic_auth(transport.login.username, transport.login.password)
    elif configs:
        registry.auth.load_configs(container, configs=configs)
    ref = f"{source}:{version}"
    try:
        response = registry.do_request(
            f"{registry.prefix}://{container.manifest_url()}", "GET", headers={"Accept": ", ".join(_MANIFEST_TYPES)}
        )
    except requests.RequestException:
        raise
    except ValueError:  # oras: a 401 it cannot answer (no credentials for this registry)
        raise ChartError(
            f"{source} requires a login for {ref}: run `helm registry login "
            f"{container.registry}` (the same login the Helm release uses)"
        ) from None
    problem = _http_problem(response, source, version, f"chart {ref}")
    if problem:
        raise problem
    try:
        manifest = response.json()
        layer = next(entry for entry in manifest["layers"] if entry.get("mediaType") == HELM_CHART_LAYER)
        digest = str(layer["digest"])
    except (ValueError, KeyError, TypeError, StopIteration):
        raise ChartError(f"{ref} is not a Helm chart (no {HELM_CHART_LAYER} layer in its manifest)") from None
    with registry.get_blob(container, digest, stream=True) as blob:
        problem = _http_problem(blob, source, version, f"the chart archive of {ref}")
        if problem:
            raise problem
        data = _read_body(blob, transport, ref)
    # Content-addressed: the bytes must hash to the digest the manifest names.
    if digest != f"sha256:{hashlib.sha256(data).hexdigest()}":
        raise ChartError(
            f"{ref}: the archive downloaded does not match its manifest digest {digest} (truncated or altered)"
        )
    return data


def _docker_config() -> Path:
    # Helm falls back to Docker's credentials too.
    return Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"


def _fetch_repository(source: str, version: str, transport: Transport) -> bytes:
    base = source.rstrip("/") + "/"
    with _session(requests.Session(), transport) as session:
        if transport.login:
            session.auth = (transport.login.username, transport.login.password)
        response = session.get(urljoin(base, "index.yaml"))
        problem = _http_problem(response, source, version, "index.yaml")
        if problem:
            raise problem
        try:
            index = yaml.safe_load(response.content)
            entry = next(e for e in index["entries"][CHART_NAME] if str(e.get("version")) == version)
            url = urljoin(base, str(entry["urls"][0]))
        except (yaml.YAMLError, KeyError, TypeError, IndexError):
            raise ChartError(f"{source}/index.yaml is not a chart repository index with chart {CHART_NAME!r}") from None
        except StopIteration:
            raise ChartError(f"{source} has no {CHART_NAME} chart version {version} in its index.yaml") from None
        with session.get(url, stream=True) as archive:
            problem = _http_problem(archive, source, version, f"{CHART_NAME} {version} ({url})")
            if problem:
                raise problem
            data = _read_body(archive, transport, url)
    # The index's digest (when given) is the repository's own pin of the archive.
    if entry.get("digest") and entry["digest"] != hashlib.sha256(data).hexdigest():
        raise ChartError(f"{url} does not match the digest in {source}/index.yaml (truncated or altered)")
    return data


# ---------------------------------------------------------------------------------------------
# Putting it together


def chart_archive(
    source: str,
    version: str,
    *,
    root: Path = PROJECT_ROOT,
    environ: Mapping[str, str] = os.environ,
    transport: Transport = Transport(),
    fetch: Fetch | None = None,
) -> tuple[Path, ChartCrds]:
    """The checked chart archive for this source and version: a local file, the cache, or the
    network (then cached). Raises ChartError or ChartUnavailable."""
    if "://" not in source:
        path = Path(source) if Path(source).is_absolute() else root / source
        try:
            data = path.read_bytes()
        except OSError as err:
            raise ChartError(f"kueue-aks:kueue.chart {source!r}: {err.strerror}") from None
        chart = read_chart(data, label=str(path))
        check_chart(chart, source=source, version=version, label=str(path))
        return path, chart
    entry = cache_entry(source, version, environ)
    cached = entry / archive_name(version)
    if cached.is_file():
        hint = f"; delete {entry} to fetch it again"
        try:
            chart = read_chart(cached.read_bytes(), label=f"the cached chart {cached}")
            check_chart(chart, source=source, version=version, label=f"the cached chart {cached}")
        except ChartError as err:
            raise ChartError(f"{err}{hint}") from None
        return cached, chart
    try:
        data = (fetch or fetch_chart)(source, version, transport)
    except ChartUnavailable as err:
        raise ChartUnavailable(f"{err}, and the chart is not in the cache ({cached})") from None
    label = f"the chart {source} {version} as downloaded"
    chart = read_chart(data, label=label)
    check_chart(chart, source=source, version=version, label=label)  # before it enters the cache
    return _store(entry, data, version), chart


@functools.cache
def _compiled(label: str, digest: str, templates: tuple[tuple[str, bytes], ...], cache: Path) -> CrdSchemas:
    # Compiling the schemas and CEL rules is the slow part: once per chart content and process.
    # Across processes (a preview is a new one), the CRD documents are kept as JSON by the digest
    # of their templates and the CEL parser's tables beside them: what YAML parsing and cel-python's
    # grammar analysis cost every preview otherwise (docs/performance.md).
    return crds_from_documents(
        _documents(label, digest, dict(templates), cache / "crd-documents" / f"{digest}-{_DOCUMENTS_FORMAT}.json"),
        source=label,
        where=f"{label}: templates/crd/*.yaml",
        grammar_cache=cache / "cel-grammar.lark",
    )


# Part of the kept documents' name: a change to what crd_documents makes of the same templates
# must count this up, or a later process would read what the earlier code made.
_DOCUMENTS_FORMAT = 1


def _documents(label: str, digest: str, templates: Mapping[str, bytes], kept: Path) -> list[dict[str, Any]]:
    """The chart's CRD documents, from `kept` when an earlier process wrote them there."""
    try:
        docs: list[dict[str, Any]] = json.loads(kept.read_text())
        return docs
    except (OSError, ValueError):
        pass
    docs = crd_documents(templates, label=label)
    try:
        text = json.dumps(docs)
    except (TypeError, ValueError):
        return docs  # YAML gave something JSON cannot hold (a date, say): not kept
    if json.loads(text) != docs:
        return docs
    staged = kept.with_name(f".{kept.name}.{os.getpid()}")
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        staged.write_text(text)
        staged.replace(kept)  # whole or not at all, for a process reading it meanwhile
    except OSError:
        staged.unlink(missing_ok=True)  # a cache that cannot be written costs only the time
    return docs


def chart_crds(source: str, version: str, **kwargs: Any) -> KueueCrds:
    """The CRDs of the Kueue chart `source` at `version` (keywords: chart_archive), compiled when
    first read."""
    path, chart = chart_archive(source, version, **kwargs)
    cache = user_cache(kwargs.get("environ", os.environ))  # beside the charts, not among them
    templates = tuple(sorted(chart.templates.items()))
    label = f"chart {source} {version}"
    return KueueCrds(
        f"{label} ({path})",
        digest=chart.digest,
        compile=lambda: _compiled(label, chart.digest, templates, cache),
    )


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def kueue_crds(
    source: str,
    version: str,
    *,
    root: Path = PROJECT_ROOT,
    environ: Mapping[str, str] = os.environ,
    transport: Transport = Transport(),
    fetch: Fetch | None = None,
) -> KueueCrds:
    """The CRDs to validate against, by the precedence in the module docstring.

    Raises CrdError (ChartError) when a source is wrong, and ChartUnavailable when there is no
    chart to read and CI is set; otherwise KueueCrds.missing says why the CRD checks are skipped."""
    override = environ.get(CRDS_ENV, "").strip()
    if override:
        crds = load_crds(override)
        return KueueCrds(f"{CRDS_ENV}={override}", compile=lambda: crds)
    try:
        return chart_crds(source, version, root=root, environ=environ, transport=transport, fetch=fetch)
    except ChartUnavailable as err:
        if in_ci(environ):
            raise ChartUnavailable(
                f"CI=true and the Kueue {version} chart could not be read ({err}): the CRD schema and CEL "
                f"checks may not be skipped in CI. {how_to_get(source, version, environ)}"
            ) from None
        return KueueCrds(
            "none",
            missing=(
                f"Kueue objects are checked WITHOUT the CRD schema and CEL rules: the Kueue {version} chart could "
                f"not be read ({err}). {how_to_get(source, version, environ)}"
            ),
        )


def how_to_get(source: str, version: str, environ: Mapping[str, str] = os.environ) -> str:
    entry = cache_entry(source, version, environ)
    pull = (
        f"helm pull {source} --version {version}"
        if source.startswith("oci://")
        else f"helm pull {CHART_NAME} --repo {source} --version {version}"
    )
    return (
        f"To check them, run once with network access (the chart is then cached), or "
        f"`mkdir -p {entry} && {pull} -d {entry}`, or set {CRDS_ENV} to a directory with the Kueue "
        f"{version} CRDs."
    )
