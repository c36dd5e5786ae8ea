"""YAML documents read and written by libyaml where PyYAML was built with it (the wheels are): the
CRDs, charts and manifests the stack reads and writes run to megabytes, which the pure-Python
reader and writer take seconds each to go through. Both are PyYAML's safe ones: plain data only."""

from __future__ import annotations

from typing import IO, Any

import yaml

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str | bytes | IO[str]) -> Any:
    return yaml.load(text, Loader=LOADER)


def load_all(text: str | bytes | IO[str]) -> list[Any]:
    """Every document, empty ones (None) too."""
    return list(yaml.load_all(text, Loader=LOADER))


def dump(obj: Any) -> str:
    """One document in the object's own key order."""
    return yaml.dump(obj, Dumper=DUMPER, sort_keys=False)


def dump_all(objs: list[Any]) -> str:
    """Documents separated by `---`, each in its own key order."""
    return yaml.dump_all(objs, Dumper=DUMPER, sort_keys=False)
