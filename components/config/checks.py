"""How the config reports its mistakes: a Problem (key path and what is allowed), the ConfigError
that lists them all, and the small typed checkers every section parses with (each records a
problem and returns INVALID instead of raising, so one run reports every mistake).
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from .keys import ENTRA_GROUPS, Key, describe

# Relative chart paths start at the project directory (where Pulumi runs the program).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


# Stands for a secret that is still encrypted in the stack file (the offline plan cannot decrypt).
ENCRYPTED = "<encrypted>"


# The cluster's own group names (kubeconfig mode): no system: group, no surrounding blanks.
_GROUP_NAME = Key(
    "[]",
    "string",
    "a group name",
    pattern=r"(?!system:)\S(.*\S)?",
    hint=" (a group name as the cluster's authenticator reports it; not a system: group)",
    max_length=256,
)


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


def suggest(word: str, allowed: Sequence[str], n: int = 1) -> str:
    close = difflib.get_close_matches(word, allowed, n=n, cutoff=0.6)
    if len(close) > 1:
        return f" (did you mean {', '.join(map(repr, close[:-1]))} or {close[-1]!r}?)"
    return f" (did you mean {close[0]!r}?)" if close else ""


def shown(value: Any, limit: int = 80) -> str:
    """A value as messages quote it: its repr, cut short (a 10 MB value is not echoed whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Characters no config string may hold: control characters (a trailing newline among them), and
# the invisible ones that make two names look alike (zero-width, bidirectional overrides, BOM).
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


# Words the Pulumi CLI (YAML 1.2) hands the program as text, which YAML 1.1 read as booleans.
_BOOLEAN_WORDS = {"yes", "no", "on", "off", "y", "n", "true", "false"}


def string_problem(v: str, key: Key) -> str | None:
    """What is wrong with a string's characters or length, or None."""
    for i, ch in enumerate(v):
        if key.multiline and ch in "\n\t\r":
            continue
        if unicodedata.category(ch) in _INVISIBLE:
            if ch == "\n" and i == len(v) - 1:
                return (
                    f"{shown(v)} ends with a line break; remove it (a YAML block scalar `|` keeps the last "
                    "line break: write `|-`, or a quoted string)"
                )
            name = unicodedata.name(ch, "a control character")
            return f"{shown(v)} holds an invisible character, U+{ord(ch):04X} {name}, at position {i}; remove it"
    if len(v) > key.max_length:
        return f"has {len(v)} characters; allowed: at most {key.max_length}"
    return None


class Reader:
    """Typed access to one config object, as its Key in keys.py describes it: unknown keys,
    missing required keys and empty values are reported here, each value's type, bounds and
    pattern by Checks.value, and a parser's own rules by the `then` it passes to `get`."""

    def __init__(self, problems: Problems, path: str, value: Any, spec: Key, exempt: Sequence[str] = ()):
        self.problems, self.path, self.spec = problems, path, spec
        self.value: Mapping[str, Any] = {}
        allowed = spec.names
        if value is None:
            return
        if not isinstance(value, Mapping):
            problems.add(path, f"must be an object with keys {', '.join(allowed)}; got {type_name(value)}")
            return
        self.value = value
        for key in value:
            if key not in allowed:
                problems.add(
                    self.at(str(key)[:80]),
                    f"unknown key{suggest(str(key)[:100], allowed)}; allowed keys: {', '.join(allowed)}",
                )
        for key in spec.keys:
            if key.name in value and value[key.name] is None and not key.nullable:
                # Reported here, not when a parser reads the key: one it never reads is named too.
                problems.add(self.at(key.name), f"is empty; allowed: {describe(key)}")
            if key.required is not None and key.name not in value and key.name not in exempt:
                text = key.required
                problems.add(
                    self.at(key.name), f"is required{text if text.startswith(':') or not text else ' ' + text}"
                )

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def given(self, key: str) -> bool:
        """Whether the key holds a value (an empty one is reported by `get`)."""
        return self.value.get(key) is not None

    def get(self, key: str, default: Any, then: Callable[[str, Any], Any] | None = None) -> Any:
        """The key's value checked as its Key says, then by `then(path, value)`; `default` when
        absent, empty or invalid (an empty or invalid value is a problem recorded)."""
        spec = self.spec.key(key)
        if key not in self.value:
            return default
        value = self.value[key]
        if value is None:  # reported by __init__
            return default
        result = Checks(self.problems).value(self.at(key), value, spec)
        if result is not INVALID and then is not None:
            result = then(self.at(key), result)
        return default if result is INVALID else result


INVALID = object()


class Checks:
    """The small typed checkers, bound to one problem list: each returns the parsed value, or
    records a problem and returns INVALID."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems

    def value(self, path: str, v: Any, key: Key) -> Any:
        """A value checked as its Key describes it: type, characters, length, enum, the whole
        pattern, bounds, items and map values. Objects are left to a Reader."""
        kind = key.kind
        if kind == "string":
            if key.enum:
                return self.enum(path, v, key.enum)
            return self.string(path, v, key)
        if kind == "integer":
            return self.integer(path, v, int(key.minimum or 0), int(key.maximum or 0))
        if kind == "number":
            return self.number(path, v, key)
        if kind == "boolean":
            return self.boolean(path, v)
        if kind == "array":
            return self.array(path, v, key)
        if kind == "map":
            return self.map(path, v, key)
        if kind == "secret":
            return self.secret(path, v, key)
        if kind in ("quantity", "kubeconfig") and isinstance(v, str):
            problem = string_problem(v, key) if kind == "quantity" else None
            if problem:
                self.problems.add(path, problem)
                return INVALID
        return v

    def secret(self, path: str, v: Any, key: Key) -> Any:
        """A credential: ENCRYPTED while the stack file holds it encrypted (the plan), the text once
        the program has it decrypted. Whatever is wrong, the value is never quoted."""
        if isinstance(v, Mapping) and set(v) == {"secure"} and isinstance(v["secure"], str):
            return ENCRYPTED
        if not isinstance(v, str) or not v:
            self.problems.add(path, f"must be {describe(key)}; got {type_name(v)} (not shown)")
            return INVALID
        bad = next((i for i, ch in enumerate(v) if unicodedata.category(ch) in _INVISIBLE), None)
        if bad is not None:
            self.problems.add(path, f"holds an invisible character at position {bad} (not shown); remove it")
            return INVALID
        if len(v) > key.max_length:
            self.problems.add(path, f"has {len(v)} characters; allowed: at most {key.max_length}")
            return INVALID
        return v

    def string(self, path: str, v: Any, key: Key) -> Any:
        if not isinstance(v, str):
            self.problems.add(path, f"must be a string{key.hint}; got {type_name(v)} {shown(v)}")
            return INVALID
        problem = string_problem(v, key)
        if problem:
            self.problems.add(path, problem)
            return INVALID
        pattern = key.compiled
        if pattern is not None and not pattern.fullmatch(v):
            self.problems.add(path, f"{shown(v)} is not allowed{key.hint}")
            return INVALID
        return v

    def enum(self, path: str, v: Any, allowed: Sequence[str]) -> Any:
        if v not in allowed or not isinstance(v, str):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and str(v) in allowed:
                self.problems.add(
                    path,
                    f'{v} is read as a number, and this key takes text: quote it, "{v}" '
                    f"(one of: {' | '.join(allowed)})",
                )
                return INVALID
            self.problems.add(
                path, f"{shown(v)} is not allowed{suggest(str(v)[:100], allowed)}; one of: {' | '.join(allowed)}"
            )
            return INVALID
        return v

    def boolean(self, path: str, v: Any) -> Any:
        if not isinstance(v, bool):
            hint = ""
            if isinstance(v, str) and v.strip().lower() in _BOOLEAN_WORDS:
                hint = (
                    " (the Pulumi CLI reads yes, no, on and off as text, and quoted words are text: "
                    "write true or false, unquoted)"
                )
            self.problems.add(path, f"must be true or false; got {type_name(v)} {shown(v)}{hint}")
            return INVALID
        return v

    def integer(self, path: str, v: Any, lo: int, hi: int) -> Any:
        if isinstance(v, bool) or not isinstance(v, int):
            self.problems.add(path, f"must be an integer from {lo} to {hi}; got {type_name(v)} {shown(v)}")
            return INVALID
        if not lo <= v <= hi:
            self.problems.add(path, f"{shown(v, 40)} is out of range; allowed: {lo} to {hi}")
            return INVALID
        return v

    def number(self, path: str, v: Any, key: Key) -> Any:
        """A Decimal within the key's bounds and decimal places, or one of its words."""
        if isinstance(v, str) and v in key.words:
            return v
        lo, hi = key.minimum, key.maximum
        words = "".join(f" or {w!r}" for w in key.words)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.problems.add(
                path, f"must be a number from {lo} to {hi}{key.hint}{words}; got {type_name(v)} {shown(v)}"
            )
            return INVALID
        if isinstance(v, float) and not math.isfinite(v):
            self.problems.add(path, f"{v} is not a number; allowed: {lo} to {hi}{key.hint}{words}")
            return INVALID
        d = Decimal(v) if isinstance(v, int) else Decimal(repr(v))
        if (lo is not None and d < lo) or (hi is not None and d > hi):
            self.problems.add(path, f"{shown(v, 40)} is out of range; allowed: {lo} to {hi}{key.hint}{words}")
            return INVALID
        places = -int(d.as_tuple().exponent) if d != d.to_integral_value() else 0
        if key.decimals is not None and places > key.decimals:
            self.problems.add(path, f"{v} has {places} decimal places; allowed: at most {key.decimals}")
            return INVALID
        return d

    def array(self, path: str, v: Any, key: Key) -> Any:
        if not isinstance(v, list):
            self.problems.add(path, f"must be a list of {key.what}; got {type_name(v)}")
            return INVALID
        if len(v) < key.min_items:
            self.problems.add(path, f"is an empty list; allowed: {key.min_items} or more {key.what}")
            return INVALID
        if key.max_items is not None and len(v) > key.max_items:
            self.problems.add(path, f"lists {len(v)} items; allowed: at most {key.max_items}")
            return INVALID
        item = key.items
        if item is None or item.kind == "object":
            return v
        out = [
            INVALID if x is None and self._empty(f"{path}[{i}]", item) else self.value(f"{path}[{i}]", x, item)
            for i, x in enumerate(v)
        ]
        if INVALID in out:
            return INVALID
        if key.unique:
            seen: set[Any] = set()
            for i, x in enumerate(out):
                if x in seen:
                    self.problems.add(f"{path}[{i}]", f"{shown(x)} is listed twice; list each once")
                    return INVALID
                seen.add(x)
        return out

    def map(self, path: str, v: Any, key: Key) -> Any:
        if not isinstance(v, Mapping):
            self.problems.add(path, f"must be an object of {key.what}; got {type_name(v)}")
            return INVALID
        ok = True
        for k, x in v.items():
            if not isinstance(k, str):
                self.problems.add(path, f"has the key {shown(k)}, which is not text: quote it")
                ok = False
            elif key.values is not None:
                if x is None:
                    self._empty(f"{path}.{k}", key.values)
                    ok = False
                elif self.value(f"{path}.{k}", x, key.values) is INVALID:
                    ok = False
        return dict(v) if ok else INVALID

    def _empty(self, path: str, key: Key) -> bool:
        self.problems.add(path, f"is empty; allowed: {describe(key)}")
        return True

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
                    f"{shown(name)} is not {unknown}{suggest(str(name)[:100], allowed)}; allowed: {', '.join(allowed)}",
                )
            elif items.index(name) != i:
                self.problems.add(f"{path}[{i}]", f"{shown(name)} is listed twice; names must be unique")
        return tuple(items)


def group_ids(problems: Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of Entra ID group object IDs, kept in lower case: Azure compares
    object IDs without case, so the same group spelled twice is one principal listed twice."""
    return _groups(problems, "Entra ID group object IDs", ENTRA_GROUPS, fold=True)


def group_names(problems: Problems) -> Callable[[str, Any], Any]:
    """A checker for a list of the cluster's own group names (kubeconfig mode: whatever its
    authenticator reports). Kubernetes' system: groups are refused: system:authenticated would
    let every user of the cluster in. Kubernetes compares group names exactly, so case is kept."""
    return _groups(problems, "group names", _GROUP_NAME, fold=False)


def _groups(problems: Problems, what: str, item: Key, *, fold: bool) -> Callable[[str, Any], Any]:
    c = Checks(problems)

    def check(p: str, v: Any) -> Any:
        items = c.items(p, v, what)
        if items is None:
            return INVALID
        out: list[Any] = [c.value(f"{p}[{i}]", g, item) if g is not None else INVALID for i, g in enumerate(items)]
        seen: dict[str, int] = {}
        for i, g in enumerate(out):
            if items[i] is None:
                problems.add(f"{p}[{i}]", f"is empty; allowed: {describe(item)}")
                continue
            if not isinstance(g, str):
                continue
            out[i] = g = g.lower() if fold else g
            if g in seen:
                same = (
                    ""
                    if items[i] == items[seen[g]]
                    else f" (as {items[seen[g]]!r} at [{seen[g]}]; IDs compare without case)"
                )
                problems.add(f"{p}[{i}]", f"{items[i]!r} is listed twice{same}; list each group once")
                out[i] = INVALID
            else:
                seen[g] = i
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
