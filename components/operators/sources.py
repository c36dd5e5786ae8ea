"""Where the operators' CRDs and manifests come from: their Go modules, pinned by checksum (pure
apart from one download; no Pulumi import).

Every operator the stack installs publishes its CRDs (and, for the two without a Helm chart, its
install manifests) in the Go module of its controller, at the same tag as the release. A module
zip is immutable and its `h1:` checksum is recorded in Go's public checksum database
(sum.golang.org), so pinning that checksum pins every byte the program reads. The zip is read from
the Go module cache when Go already holds it, else downloaded once from the module proxy (the
first `https://` entry of `GOPROXY`, default https://proxy.golang.org, so a mirror works), checked,
and kept in `modules/` of the kueue-aks folder in the user's cache (components/k8s/cache.py; on Linux
`~/.cache/kueue-aks`, or `$XDG_CACHE_HOME/kueue-aks` when that is an absolute path). Nothing is written until
the checksum matches, and a mismatch is an error naming the module and both checksums.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from ..facts.operators import Module
from ..k8s import documents
from ..k8s.cache import user_cache

DEFAULT_PROXY = "https://proxy.golang.org"
DOWNLOAD_TIMEOUT_SECONDS = 120


class SourceError(RuntimeError):
    """A module could not be read or does not match its pinned checksum."""


def escape(path: str) -> str:
    """The module proxy's case encoding: an upper-case letter becomes '!' and its lower case."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in path)


def dirhash(data: bytes) -> str:
    """Go's h1 checksum of a module zip (golang.org/x/mod/sumdb/dirhash Hash1): SHA-256 over the
    sorted lines '<sha256 of file>  <name>'."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        lines = "".join(f"{hashlib.sha256(zf.read(n)).hexdigest()}  {n}\n" for n in sorted(zf.namelist()))
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def _cache_dir() -> Path:
    return user_cache() / "modules"


def _proxy() -> str:
    for entry in os.environ.get("GOPROXY", DEFAULT_PROXY).replace("|", ",").split(","):
        if entry.startswith("https://"):
            return entry.rstrip("/")
    return DEFAULT_PROXY


def _go_mod_cache_zip(module: Module) -> Path:
    root = os.environ.get("GOMODCACHE") or str(Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod")
    return Path(root) / "cache" / "download" / escape(module.path) / "@v" / f"{module.version}.zip"


def _checked(module: Module, data: bytes, where: str) -> bytes:
    try:
        got = dirhash(data)
    except zipfile.BadZipFile as err:
        raise SourceError(f"{module} from {where} is not a module zip ({err})") from None
    if got != module.sum:
        raise SourceError(
            f"{module} from {where} has checksum {got}, not the pinned {module.sum}; "
            "refusing to use it (a tampered mirror or a wrong pin)"
        )
    return data


def module_zip(module: Module) -> bytes:
    """The module's zip, checked against its pinned checksum (see the module docstring)."""
    cached = _cache_dir() / f"{escape(module.path).replace('/', '_')}@{module.version}.zip"
    for path in (cached, _go_mod_cache_zip(module)):
        if path.is_file():
            try:
                return _checked(module, path.read_bytes(), str(path))
            except SourceError:
                if path != cached:
                    raise
                cached.unlink()  # a bad entry of our own cache: fetch it again
    url = f"{_proxy()}/{escape(module.path)}/@v/{module.version}.zip"
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
            data = _checked(module, response.read(), url)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise SourceError(
            f"downloading {module} from {url} failed: {err}. The operators' CRDs and manifests "
            "come from their Go modules; set GOPROXY to a reachable module proxy"
        ) from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cached.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, cached)  # whole or not at all
    return data


@cache
def _files(module: Module) -> dict[str, bytes]:
    prefix = f"{module}/"
    with zipfile.ZipFile(io.BytesIO(module_zip(module))) as zf:
        return {n[len(prefix) :]: zf.read(n) for n in zf.namelist() if n.startswith(prefix)}


@cache
def _documents(module: Module, path: str) -> tuple[dict[str, Any], ...]:
    """Parsed once per process, and kept as JSON beside the checked zip: the CRDs are large (the
    Training Operator's are 0.6 MB of YAML each) and YAML parsing is slow, JSON is not."""
    parsed = (
        _cache_dir() / f"{escape(module.path).replace('/', '_')}@{module.version}" / (path.replace("/", "_") + ".json")
    )
    if parsed.is_file():
        try:
            return tuple(json.loads(parsed.read_bytes()))
        except ValueError:
            parsed.unlink()
    files = _files(module)
    if path not in files:
        raise SourceError(f"{module} has no file {path}")
    docs = [d for d in documents.load_all(files[path]) if d]
    parsed.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=parsed.parent, prefix=".part-")
    with os.fdopen(fd, "w") as out:
        json.dump(docs, out)
    os.replace(tmp, parsed)
    return tuple(docs)


def module_documents(module: Module, path: str, *, mutable: bool = True) -> list[dict[str, Any]]:
    """The YAML documents of one file of the module (empty documents dropped). With `mutable` a
    fresh copy, which a builder may change; without it the shared parsed documents, read-only
    (copying a large CRD costs more than reading it)."""
    docs = list(_documents(module, path))
    return copy.deepcopy(docs) if mutable else docs
