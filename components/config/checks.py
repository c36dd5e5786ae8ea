"""How the config reports its mistakes: a Problem (key path and what is allowed), the ConfigError
that lists them all, and the small typed checkers every section parses with (each records a
problem and returns INVALID instead of raising, so one run reports every mistake).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Relative chart paths start at the project directory (where Pulumi runs the program).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


# Stands for a secret that is still encrypted in the stack file (the offline plan cannot decrypt).
ENCRYPTED = "<encrypted>"


_GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


_GROUP_NAME = re.compile(r"^(?!system:)\S(.*\S)?$")


INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Problem:
    path: str  # "kueue-aks:nodePools[1].maxCount"
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """Every problem found in the stack config, reported together."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        noun = "problem" if len(self.problems) == 1 else "problems"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"stack config has {len(self.problems)} {noun}:\n{lines}")


class Problems:
    """Collects problems while parsing continues, so one run reports all of them."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(Problem(path, message))


def type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def suggest(word: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Reader:
    """Typed access to one config object that records problems instead of raising."""

    def __init__(self, problems: Problems, path: str, value: Any, allowed: Sequence[str]):
        self.problems, self.path = problems, path
        self.value: Mapping[str, Any] = {}
        if value is None:
            return
        if not isinstance(value, Mapping):
            problems.add(path, f"must be an object with keys {', '.join(allowed)}; got {type_name(value)}")
            return
        self.value = value
        for key in value:
            if key not in allowed:
                problems.add(
                    self.at(str(key)),
                    f"unknown key{suggest(str(key), allowed)}; allowed keys: {', '.join(allowed)}",
                )

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def get(self, key: str, default: Any, check: Callable[[str, Any], Any]) -> Any:
        """The key's value checked by `check(path, value)`, or `default` when absent or invalid."""
        if key not in self.value or self.value[key] is None:
            return default
        result = check(self.at(key), self.value[key])
        return default if result is INVALID else result


INVALID = object()


class Checks:
    """The small typed checkers, bound to one problem list: each returns the parsed value, or
    records a problem and returns INVALID."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems

    def string(self, path: str, v: Any, *, pattern: re.Pattern[str] | None = None, hint: str = "") -> Any:
        if not isinstance(v, str):
            self.problems.add(path, f"must be a string{hint}; got {type_name(v)} {v!r}")
            return INVALID
        if pattern is not None and not pattern.match(v):
            self.problems.add(path, f"{v!r} is not allowed{hint}")
            return INVALID
        return v

    def enum(self, path: str, v: Any, allowed: Sequence[str]) -> Any:
        if v not in allowed or not isinstance(v, str):
            self.problems.add(path, f"{v!r} is not allowed{suggest(str(v), allowed)}; one of: {' | '.join(allowed)}")
            return INVALID
        return v

    def boolean(self, path: str, v: Any) -> Any:
        if not isinstance(v, bool):
            self.problems.add(path, f"must be true or false; got {type_name(v)} {v!r}")
            return INVALID
        return v

    def integer(self, path: str, v: Any, lo: int, hi: int) -> Any:
        if isinstance(v, bool) or not isinstance(v, int):
            self.problems.add(path, f"must be an integer from {lo} to {hi}; got {type_name(v)} {v!r}")
            return INVALID
        if not lo <= v <= hi:
            self.problems.add(path, f"{v} is out of range; allowed: {lo} to {hi}")
            return INVALID
        return v

    def items(self, path: str, v: Any, what: str) -> list[Any] | None:
        if not isinstance(v, list):
            self.problems.add(path, f"must be a list of {what}; got {type_name(v)}")
            return None
        return v

    def choices(self, path: str, v: Any, what: str, allowed: Sequence[str] | None, *, empty: str, unknown: str) -> Any:
        """A non-empty list of distinct names, each in `allowed` (None: any name, e.g. when
        the list it refers to has its own problems)."""
        items = self.items(path, v, what)
        if items is None:
            return INVALID
        if not items:
            self.problems.add(path, f"must list at least one {empty}")
            return INVALID
        for i, name in enumerate(items):
            if allowed is not None and name not in allowed:
                self.problems.add(
                    f"{path}[{i}]",
                    f"{name!r} is not {unknown}{suggest(str(name), allowed)}; allowed: {', '.join(allowed)}",
                )
            elif items.index(name) != i:
                self.problems.add(f"{path}[{i}]", f"{name!r} is listed twice; names must be unique")
        return tuple(items)


def group_ids(problems: Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of Entra ID group object IDs."""
    return _groups(
        problems,
        "Entra ID group object IDs",
        _GUID,
        " (an Entra ID group's object ID, a GUID such as 00000000-0000-0000-0000-000000000000, not "
        "its name; look it up with: az ad group show --group <group name> --query id -o tsv)",
    )


def group_names(problems: Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of the cluster's own group names (kubeconfig mode: whatever its
    authenticator reports). Kubernetes' system: groups are refused: system:authenticated would
    let every user of the cluster in."""
    return _groups(
        problems,
        "group names",
        _GROUP_NAME,
        " (a group name as the cluster's authenticator reports it; not a system: group)",
    )


def _groups(problems: Problems, what: str, pattern: re.Pattern[str], hint: str) -> Callable[[str, Any], Any]:
    c = Checks(problems)

    def check(p: str, v: Any) -> Any:
        items = c.items(p, v, what)
        if items is None:
            return INVALID
        out = [c.string(f"{p}[{i}]", g, pattern=pattern, hint=hint) for i, g in enumerate(items)]
        for i, g in enumerate(items):
            if isinstance(g, str) and g in items[:i]:
                problems.add(f"{p}[{i}]", f"{g!r} is listed twice; list each group once")
                out[i] = INVALID
        return tuple(out) if INVALID not in out else INVALID

    return check


def checked(problems: Problems, problem: Callable[[Any], str | None]) -> Callable[[str, Any], Any]:
    """A checker from a function that says what is wrong with a value, or None."""

    def check(path: str, value: Any) -> Any:
        said = problem(value)
        if said:
            problems.add(path, said)
            return INVALID
        return value

    return check
