"""Kueue objects once found valid, remembered by everything the finding depends on, so that a later
preview of the same stack neither validates them again nor loads the validator's libraries
(jsonschema, cel-python and Lark: 0.14 s of every preview, docs/performance.md).

The validator is deterministic. Its verdict on a stack's objects depends on the objects and the
pools' capacity as it gets them, the Kueue CRDs (the digest of the chart's CRD templates), its own
code (every module of components/k8s and components/kueue, by content) and the libraries it runs
(each one's installed files, by size and modification time). The key is one sha256 over all of them:
any change is a new key, and the objects are validated again. Only a pass is kept; objects found
invalid are validated, and their violations reported, every time. A verdict is an empty file in
the user's cache, `verdicts/<key>`; deleting the folder costs only time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .findings import Capacity

# The validator's code: the CRD engine and its helpers, and Kueue's rules.
VALIDATOR_PACKAGES = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "k8s")
VALIDATOR_LIBRARIES = ("jsonschema", "referencing", "celpy", "lark")
FOLDER = "verdicts"


def verdict_key(objects: Sequence[Mapping[str, Any]], capacity: Capacity, crds_digest: str) -> str:
    digest = hashlib.sha256()
    digest.update(crds_digest.encode())
    digest.update(json.dumps([objects, capacity], sort_keys=True, default=str).encode())
    for package in VALIDATOR_PACKAGES:
        for module in sorted(package.glob("*.py")):
            digest.update(f"\0{module.name}\0".encode())
            digest.update(module.read_bytes())
    for library in VALIDATOR_LIBRARIES:
        digest.update(f"\0{library}\0{_installed(library)}".encode())
    return digest.hexdigest()


def _installed(library: str) -> str:
    """Where the library is and the size and time of each of its modules' files: a new version
    rewrites them. Found without importing it (that is the cost this module saves)."""
    spec = importlib.util.find_spec(library)
    if spec is None or spec.origin is None:
        return "missing"
    folder = Path(spec.origin).parent
    stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.py"))]
    return f"{folder}{stats}"


def known_valid(cache: Path, key: str) -> bool:
    return (cache / FOLDER / key).is_file()


def remember_valid(cache: Path, key: str) -> None:
    """Keep a pass; a cache that cannot be written costs only the time."""
    try:
        (cache / FOLDER).mkdir(parents=True, exist_ok=True)
        (cache / FOLDER / key).touch()
    except OSError:
        pass
