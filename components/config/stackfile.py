"""Read `Pulumi.<stack>.yaml` as the Pulumi CLI hands it to the program, so the offline plan checks
the config `pulumi up` runs with.

The CLI (v3.260.0) reads the stack file with gopkg.in/yaml.v3 v3.0.1 (YAML 1.2 scalars, mostly)
into Go values, writes that back to YAML and reads it again into its config map, then passes the
program each `<namespace>:<key>` as text: a string as it is, anything else as JSON, which the
program decodes with `decode_config_value`. PyYAML's `safe_load` reads YAML 1.1 and would give the
plan another config (`yes` a boolean where the program gets the string "yes", `1:30` 90 where it
gets "1:30", a repeated key kept where the CLI refuses the file). So this module builds the
document itself from PyYAML's event stream (its parser is libyaml's, whose Go port yaml.v3 is) and
types every plain scalar with a port of yaml.v3's resolve.go, then applies what the CLI does to
the `config:` map (sdk/go/common/workspace/loaders.go, resource/config/{map,value,object}.go):

- a key without a namespace gets the project's (`teams:` is `kueue-aks:teams`), and
  `<ns>:config:<name>` is `<ns>:<name>`; any other key with colons is refused;
- a top-level value reaches the program as text: a string as written, null as "", a number or
  boolean as Go's JSON of it (`1e3` is `1000`), a timestamp as Go's `time.Time.String()`
  (`2001-12-14` is "2001-12-14 00:00:00 +0000 UTC"); then `decode_config_value` (so a quoted "10"
  is the integer 10, as in the program);
- a mapping or list reaches it as Go's JSON of it: keys sorted, each number as encoding/json
  prints a float64 or int64 (an integer beyond int64 goes through float64), NaN and infinities
  refused (JSON has none: the CLI fails on them);
- `{secure: <ciphertext>}` is a secret: kept as that mapping, at the top level and nested (the
  config parser treats it as a value it cannot read offline).

Refused, each with its line: what the CLI refuses (a repeated key, NaN or an infinity in the
config, a document that is not a mapping, YAML it cannot parse, `%YAML 1.2`) and, stricter than
the CLI, what the program would receive in a form nobody means or that depends on the machine:
anchors and aliases, merge keys (`<<`), explicit tags (`!!str`), keys that are not strings (`1:`,
`true:`, `~:`), more than one document, a timestamp with a UTC offset (Go renders it in the local
time zone of whoever runs `pulumi`), and files over MAX_BYTES or nested deeper than MAX_DEPTH
(both checked as the events arrive: no alias is ever expanded, nothing recurses).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

from ..k8s.documents import LOADER
from .checks import ConfigError, Problem
from .names import CONFIG_PREFIX
from .parse import decode_config_value

MAX_BYTES = 4 * 1024 * 1024  # a 2,000-team stack is about 200 KB
MAX_DEPTH = 64  # mappings and lists open at once; a real stack file nests about 6 deep
MAX_PROBLEMS = 20  # reported at most; past that the file is not read further

INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


# --- yaml.v3 resolve.go: how a plain scalar is typed into interface{} -------------------------


class _Merge:
    """A plain `<<` as a key: yaml.v3's parser tags it !!merge (a plain `<<` value is the string)."""


MERGE = _Merge()


@dataclass(frozen=True)
class GoTime:
    """A plain scalar yaml.v3 reads as a timestamp (a time.Time); `text` is what the CLI passes on:
    Go's `time.Time.String()` of it. `offset` is set when it was written with a UTC offset."""

    text: str
    offset: bool = False


_RESOLVE_MAP: dict[str, Any] = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}

# resolveTable: the first byte says what a plain scalar may be.
_HINT = {"+": "S", "-": "S", ".": ".", **dict.fromkeys("0123456789", "D"), **dict.fromkeys("yYnNtTfFoO~", "M")}

# yamlStyleFloat (Go's regexp anchors ^...$ at the text's ends: fullmatch).
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# What strconv.ParseFloat accepts of a string that starts with "." (resolve's "." case, which
# keeps the underscores): digits with single underscores between them, an optional exponent.
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+(?:_[0-9]+)*)?")


def _digit_value(c: str) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    lower = c.lower() if c.isascii() else ""
    if "a" <= lower <= "z":
        return ord(lower) - 87
    return 99


def _go_parse_uint(s: str, base: int) -> int | None:
    """strconv.ParseUint(s, base, 64) with base 0 or 2..36; None on any error (underscores are
    already gone: resolve removes them first)."""
    if not s:
        return None
    if base == 0:
        base = 10
        if s[0] == "0":
            prefix = s[1:2].lower() if len(s) >= 3 else ""
            if prefix in ("b", "o", "x") and prefix:
                base, s = {"b": 2, "o": 8, "x": 16}[prefix], s[2:]
            else:
                base, s = 8, s[1:]
    n = 0
    for c in s:
        d = _digit_value(c)
        if d >= base:
            return None
        n = n * base + d
        if n > UINT64_MAX:  # Go stops at the first overflow too (ErrRange)
            return None
    return n


def _go_parse_int(s: str, base: int) -> int | None:
    """strconv.ParseInt(s, base, 64); None on any error."""
    if not s:
        return None
    neg = s[0] == "-"
    if s[0] in "+-":
        s = s[1:]
    un = _go_parse_uint(s, base)
    if un is None:
        return None
    if (not neg and un > INT64_MAX) or (neg and un > INT64_MAX + 1):
        return None
    return -un if neg else un


def _go_parse_float(s: str) -> float | None:
    """strconv.ParseFloat(s, 64) of a string the callers' regexes have checked; None when it
    overflows (ErrRange). Underflow gives 0, as in Go."""
    f = float(s.replace("_", ""))
    return None if math.isinf(f) else f


def resolve_plain(value: str) -> Any:
    """yaml.v3's resolve("", value) for a plain (unquoted, untagged) scalar, as decoded into
    interface{}: None, bool, int, float, GoTime or the string itself."""
    hint = _HINT.get(value[:1], "N" if not value else "")
    if not hint:
        return value
    if value in _RESOLVE_MAP:
        return _RESOLVE_MAP[value]
    if hint == ".":
        if _DOT_FLOAT.fullmatch(value):
            f = _go_parse_float(value)
            if f is not None:
                return f
        return value
    if hint in ("D", "S"):
        stamp = go_timestamp(value)
        if stamp is not None:
            return stamp
        plain = value.replace("_", "")
        for parsed in (_go_parse_int(plain, 0), _go_parse_uint(plain, 0)):
            if parsed is not None:
                return parsed
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            f = _go_parse_float(plain)
            if f is not None:
                return f
        for prefix, base in (("0b", 2), ("0o", 8)):
            if plain.startswith(prefix):
                for parsed in (_go_parse_int(plain[2:], base), _go_parse_uint(plain[2:], base)):
                    if parsed is not None:
                        return parsed
            elif plain.startswith("-" + prefix):
                parsed = _go_parse_int("-" + plain[3:], base)
                if parsed is not None:
                    return parsed
    return value


# --- Go's time.Parse with yaml.v3's four timestamp layouts, and time.Time.String() ------------

_LAYOUTS = (
    ("year", "-", "month", "-", "day", "T", "hour", ":", "minute", ":", "second", "frac9", "tz"),
    ("year", "-", "month", "-", "day", "t", "hour", ":", "minute", ":", "second", "frac9", "tz"),
    ("year", "-", "month", "-", "day", " ", "hour", ":", "minute", ":", "second", "frac9"),
    ("year", "-", "month", "-", "day"),
)
_STD = frozenset({"year", "month", "day", "hour", "minute", "second", "frac9", "tz"})


def _isdigit(s: str, i: int) -> bool:
    return i < len(s) and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not _isdigit(s, 0):
        return None
    if not _isdigit(s, 1):
        return None if fixed else (ord(s[0]) - 48, s[1:])
    return (ord(s[0]) - 48) * 10 + ord(s[1]) - 48, s[2:]


def _skip(value: str, literal: str) -> str | None:
    """time's skip(): a space in the layout matches one or more spaces (or the end)."""
    while literal:
        if literal[0] == " ":
            if value and value[0] != " ":
                return None
            literal, value = literal.lstrip(" "), value.lstrip(" ")
            continue
        if not value or value[0] != literal[0]:
            return None
        literal, value = literal[1:], value[1:]
    return value


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _parse_layout(layout: tuple[str, ...], value: str) -> GoTime | None:
    f = {"month": -1, "day": -1, "hour": 0, "minute": 0, "second": 0, "nsec": 0}
    offset = False
    year = 0
    for chunk in layout:
        if chunk not in _STD:
            rest = _skip(value, chunk)
            if rest is None:
                return None
            value = rest
            continue
        if chunk == "year":
            if len(value) < 4 or not all("0" <= c <= "9" for c in value[:4]):
                return None
            year, value = int(value[:4]), value[4:]
        elif chunk in ("month", "day", "hour", "minute", "second"):
            got = _getnum(value, False)
            if got is None:
                return None
            f[chunk], value = got
            limit = {"month": 12, "day": 99, "hour": 23, "minute": 59, "second": 59}[chunk]
            if f[chunk] > limit or (chunk == "month" and f[chunk] < 1):
                return None
        elif chunk == "frac9":
            if len(value) < 2 or value[0] not in ".," or not _isdigit(value, 1):
                continue
            i = 1
            while _isdigit(value, i):
                i += 1
            digits = value[1 : min(i, 10)]
            f["nsec"] = int(digits) * 10 ** (9 - len(digits))
            value = value[i:]
        else:  # "tz": Z07:00
            if value[:1] == "Z":
                value = value[1:]
                continue
            if len(value) < 6 or value[3] != ":" or value[0] not in "+-":
                return None
            hh, mm = _getnum(value[1:3], True), _getnum(value[4:6], True)
            if hh is None or mm is None or hh[0] > 24 or mm[0] > 60:
                return None
            offset, value = True, value[6:]
    if value:  # extra text
        return None
    if f["day"] < 1 or f["day"] > _days_in(f["month"], year):
        return None
    frac = f".{f['nsec']:09d}".rstrip("0") if f["nsec"] else ""
    return GoTime(
        f"{year:04d}-{f['month']:02d}-{f['day']:02d} {f['hour']:02d}:{f['minute']:02d}:{f['second']:02d}{frac}"
        " +0000 UTC",
        offset,
    )


def go_timestamp(value: str) -> GoTime | None:
    """yaml.v3's parseTimestamp: a GoTime when `value` is one of its timestamp forms."""
    if len(value) < 5 or value[4] != "-" or not all("0" <= c <= "9" for c in value[:4]):
        return None
    for layout in _LAYOUTS:
        parsed = _parse_layout(layout, value)
        if parsed is not None:
            return parsed
    return None


# --- Go's encoding/json of a float64, as Python's json.loads reads it back ----------------------


def go_json_float(f: float) -> str:
    """encoding/json's text of a finite float64: fixed notation with the shortest digits when
    1e-6 <= |f| < 1e21 (so an integral float prints as an integer), else exponent notation."""
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if 1e-6 <= abs(f) < 1e21:
        # repr gives the shortest digits that round-trip, as Go's strconv does.
        return format(Decimal(repr(f)).normalize(), "f")
    return repr(f)


def _nested_number(value: int | float) -> int | float:
    """What the program gets for a number inside an object: the CLI re-reads the object's JSON
    with UseNumber, keeping an integer only if it fits int64 (else a float64), then prints it."""
    if isinstance(value, int) and -INT64_MAX - 1 <= value <= INT64_MAX:
        return value
    loaded: int | float = json.loads(go_json_float(float(value)))
    return loaded


# --- yaml.v3's encoder and emitter: how the CLI writes a string back before reading it again ----

_BREAKS = frozenset("\n\r\x85\u2028\u2029")
TAB_FIRST = object()  # a string the CLI writes back in a form it then cannot read


def _printable(c: str) -> bool:
    """The emitter's is_printable (on the character, not its UTF-8 bytes)."""
    o = ord(c)
    return c == "\n" or 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF or (0xE000 <= o <= 0xFFFD and o != 0xFEFF)


def written_back(s: str) -> Any:
    """The string the CLI has after writing `s` back to YAML (yaml.v3's encoder) and reading that
    again, or TAB_FIRST when it cannot read it back.

    The encoder asks for a literal block (`|`) for every string with a "\n" in it; the emitter
    keeps that style unless the string ends in a space, has a space before a line break or holds a
    character it must escape (yaml_emitter_analyze_scalar), and then quotes it, which reads back
    exactly. A literal block's first line break becomes the end of the `|` line: a string that
    starts with a line break loses it. Without a leading space or break the block has no
    indentation indicator, so a first line that starts with a tab is refused on reading
    ("found a tab character where an indentation space is expected")."""
    if "\n" not in s:
        return s
    for i, c in enumerate(s):
        if c == " " and (i + 1 == len(s) or s[i + 1] in _BREAKS):
            return s  # trailing space or space before a break: quoted
        if c != "\t" and not _printable(c):
            return s  # a character the emitter escapes: quoted
    if s[0] in _BREAKS:
        return s[1:]
    if s[0] == "\t":
        return TAB_FIRST
    return s


# --- building the document from the event stream ------------------------------------------------


class _Stop(Exception):
    """Stops the reading: a problem that leaves nothing more to read, or too many problems."""


_SKIP = object()  # the pending key of a mapping entry that was refused: its value is dropped


@dataclass
class _Frame:
    """A mapping or list being built."""

    container: dict[str, Any] | list[Any]
    path: str  # its key path: "", "config", "kueue-aks:teams[0]", ...
    line: int
    # 0: outside the config map, 1: the config map itself, 2: inside a config value
    zone: int
    flow: bool = False  # written [...] or {...}
    key: Any = None  # a mapping's pending key
    has_key: bool = False
    key_lines: dict[str, int] = field(default_factory=dict)  # each key as written: its line
    back_lines: dict[str, int] = field(default_factory=dict)  # each key as the CLI reads it back
    is_key: bool = False  # a mapping or list written as a key (refused)
    skipped: str = ""  # a refused key as written (`<<`): names its value's path in place of _SKIP

    def child_path(self, key: Any = None) -> str:
        if isinstance(self.container, list):
            return f"{self.path}[{len(self.container)}]"
        if key is _SKIP:
            key = self.skipped
        if self.zone == 1 or not self.path:
            return str(key)
        return f"{self.path}.{key}"


@dataclass
class _Reader:
    name: str
    project: str
    problems: list[Problem] = field(default_factory=list)

    def problem(self, line: int | None, path: str, message: str, *, fatal: bool = False) -> None:
        where = ", ".join(w for w in (f"line {line}" if line else "", path) if w)
        self.problems.append(Problem(f"Pulumi.{self.name}.yaml", f"{where}: {message}" if where else message))
        if fatal or len(self.problems) >= MAX_PROBLEMS:
            raise _Stop


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, GoTime):
        return "a timestamp"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _short_tag(tag: str) -> str:
    prefix = "tag:yaml.org,2002:"
    return "!!" + tag[len(prefix) :] if tag.startswith(prefix) else tag


def _is_secure(value: Any) -> bool:
    """config's isSecureValue: a mapping whose one key is `secure`, holding a string."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def read_stack_file(name: str, text: str, *, project: str = CONFIG_PREFIX) -> dict[str, Any]:
    """The document of `Pulumi.<name>.yaml` (its text), each `config:` value as the program
    receives it from the Pulumi CLI, keyed `<namespace>:<name>` (a bare key in `project`'s
    namespace); the rest as yaml.v3 types it. An empty file is {}.

    Raises ConfigError, each Problem at `Pulumi.<name>.yaml`, naming the line, the key path and
    what to write instead (see the module's doc for what is refused)."""
    reader = _Reader(name, project)
    doc: dict[str, Any] = {}
    try:
        doc = _read(reader, text)
    except _Stop:
        pass
    if reader.problems:
        raise ConfigError(reader.problems)
    return doc


class _TabbedComment(Exception):
    """libyaml stopped at a tab in lines first..last (0-based), which yaml.v3 reads as a comment."""

    def __init__(self, first: int, last: int) -> None:
        super().__init__(first, last)
        self.first, self.last = first, last


MAX_TABBED_RUNS = 50
_TOO_BIG = f"is larger than {MAX_BYTES // 2**20} MiB: no stack file is that large; is it the right file?"


def _read(r: _Reader, text: str) -> dict[str, Any]:
    if text.startswith("\ufeff"):  # the CLI strips a UTF-8 byte order mark
        text = text[1:]
    if len(text) > MAX_BYTES:
        r.problem(None, "", _TOO_BIG, fatal=True)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        r.problem(None, "", "is not UTF-8 text: save it as UTF-8", fatal=True)
    if size > MAX_BYTES:
        r.problem(None, "", _TOO_BIG, fatal=True)
    bom = text.find("\ufeff")
    if bom >= 0:
        r.problem(
            text.count("\n", 0, bom) + 1,
            "",
            "holds a byte order mark (U+FEFF) inside the file, which Pulumi's "
            "YAML reader takes differently from line to line: remove it",
            fatal=True,
        )
    for _ in range(MAX_TABBED_RUNS):
        try:
            return _build(r, text)
        except _TabbedComment as tabbed:
            r.problems.clear()
            text = _untab(text.split("\n"), tabbed.first, tabbed.last)
    r.problem(
        None,
        "",
        f"has more than {MAX_TABBED_RUNS} runs of comment lines indented with tabs: indent them with spaces",
        fatal=True,
    )
    return {}


_COMMENT_LINE = re.compile(r"[ \t]*#")
_BLANK_LINE = re.compile(r"[ \t]*\r?")


def _swallowed_run(lines: list[str], index: int) -> tuple[int, int] | None:
    """Where yaml.v3 reads lines[index], a blank or comment line whose indentation holds a tab,
    as part of a comment: (c1, c2), the comment lines around it, when its scanner, having read
    the whole-line comment lines[c1], goes on through the following blank and comment lines
    whatever their blanks (yaml_parser_scan_comments) and finds the `#` of lines[c2] within 512
    bytes. Anywhere else a tab cannot start a line, in yaml.v3 as in libyaml. None otherwise."""
    c2 = index
    while not _COMMENT_LINE.match(lines[c2]):
        c2 += 1
        if c2 == len(lines) or not (_COMMENT_LINE.match(lines[c2]) or _BLANK_LINE.fullmatch(lines[c2])):
            return None
    gap = len(lines[c2][: lines[c2].index("#")].encode()) + 1  # the blanks before "#", the line break above
    for c1 in range(c2 - 1, -1, -1):
        if _COMMENT_LINE.match(lines[c1]):
            return (c1, c2) if c1 < index and gap < 512 else None
        if not _BLANK_LINE.fullmatch(lines[c1]):
            return None
        gap += len(lines[c1].encode()) + 1
    return None


def _untab(lines: list[str], first: int, last: int) -> str:
    """The text with lines[first..last] (blank and comment lines) indented with spaces instead of
    tabs: what yaml.v3 reads there (a comment), given to libyaml."""
    for i in range(first, last + 1):
        head, sharp, tail = lines[i].partition("#")
        lines[i] = head.replace("\t", " ") + sharp + tail
    return "\n".join(lines)


def _build(r: _Reader, text: str) -> dict[str, Any]:
    root: list[Any] = []
    stack: list[_Frame] = []
    documents = 0
    ended = 0  # the line where the first document ended
    try:
        event: Any
        for event in yaml.parse(text, Loader=LOADER):
            kind = type(event)
            line = event.start_mark.line + 1
            if kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    r.problem(
                        line,
                        "",
                        "starts a second YAML document, which Pulumi ignores without a word (it "
                        "reads only the first): remove it, or move its keys into the first",
                        fatal=True,
                    )
                version = getattr(event, "version", None)
                if version is not None and tuple(version) != (1, 1):
                    r.problem(
                        line,
                        "",
                        f"%YAML {version[0]}.{version[1]}: Pulumi's YAML reader (yaml.v3) refuses "
                        "every version directive but %YAML 1.1; remove the line",
                        fatal=True,
                    )
                continue
            if kind is yaml.DocumentEndEvent:
                ended = line
                continue
            if kind is yaml.StreamStartEvent or kind is yaml.StreamEndEvent:
                continue
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                done = stack.pop()
                if done.is_key:  # refused when it started; its parent still waits for the value
                    continue
                value: Any = _config_map(r, done) if done.zone == 1 else done.container
                _attach(stack[-1] if stack else None, root, value)
                continue
            parent = stack[-1] if stack else None
            as_key = parent is not None and isinstance(parent.container, dict) and not parent.has_key
            if parent is None:
                path = ""
            elif as_key:
                path = parent.path if parent.zone != 1 else ""
            else:
                path = parent.child_path(parent.key)
            anchor, tag = getattr(event, "anchor", None), getattr(event, "tag", None)
            if kind is yaml.AliasEvent:
                r.problem(line, path, f"the alias *{anchor} is not read here: write the value out in full")
            elif anchor is not None:
                r.problem(
                    line,
                    path,
                    f"the anchor &{anchor} is not read here: write the value out in full where its aliases are",
                )
            if tag is not None:
                r.problem(
                    line,
                    path,
                    f"the tag {_short_tag(tag)} is not read here: remove it (quote a value to make it a string)",
                )
            if kind is yaml.ScalarEvent or kind is yaml.AliasEvent:
                written: str = getattr(event, "value", "")
                plain = kind is yaml.ScalarEvent and getattr(event, "style", None) in (None, "") and tag is None
                value = None if kind is yaml.AliasEvent else resolve_plain(written) if plain else written
                if as_key and plain and written == "<<":
                    value = MERGE
                if plain and parent is not None and parent.flow and "?" in written:
                    # libyaml reads on past a "?"; yaml.v3 takes it for a key indicator and refuses the file.
                    r.problem(
                        line,
                        path,
                        f"the plain scalar {written!r} holds a ?, which inside [...] or {{...}} "
                        "Pulumi's YAML reader (yaml.v3) takes for a key indicator: quote it",
                    )
                if isinstance(value, str) and not as_key:
                    value = _back(r, value, line, path)
                if as_key:
                    assert parent is not None
                    _take_key(r, parent, value, written, line, skip=kind is yaml.AliasEvent)
                    continue
                if parent is not None and parent.zone:
                    value = _config_scalar(r, value, line, path)
                _attach(parent, root, value)
                continue
            # A mapping or a list starts.
            if len(stack) >= MAX_DEPTH:
                r.problem(
                    line,
                    path,
                    f"nests mappings and lists more than {MAX_DEPTH} deep: no stack file does; is it the right file?",
                    fatal=True,
                )
            container: dict[str, Any] | list[Any] = {} if kind is yaml.MappingStartEvent else []
            if as_key:
                assert parent is not None
                r.problem(line, path, "a mapping or a list as a key is not read here: write a string key")
                parent.key, parent.has_key, parent.skipped = _SKIP, True, "?"
                zone = 0
            elif parent is None:
                zone = 0
            elif parent.zone:
                zone = 2
            else:
                zone = 1 if len(stack) == 1 and parent.key == "config" and isinstance(container, dict) else 0
            flow = bool(getattr(event, "flow_style", False))
            stack.append(_Frame(container, path, line, zone, flow=flow, is_key=as_key))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        if mark is not None and "cannot start any token" in str(getattr(err, "problem", "")):
            lines = text.split("\n")
            at = lines[mark.line] if mark.line < len(lines) else ""
            run = None
            blanks = _COMMENT_LINE.match(at) or _BLANK_LINE.fullmatch(at)
            if mark.column < len(at) and at[mark.column] == "\t" and blanks:
                run = _swallowed_run(lines, mark.line)
            if run is not None:
                raise _TabbedComment(run[0] + 1, run[1]) from None
        if ended:
            # yaml.v3 parses the first document only: what follows its end is never read.
            r.problem(
                mark.line + 1 if mark else None,
                "",
                f"follows the end of the YAML document (line {ended}), "
                "which Pulumi ignores without a word: indent it as part of the document (the first key "
                "sets the indentation), or remove it",
                fatal=True,
            )
        if "exceeded maximum nesting depth" in str(err):  # libyaml's own bound (1,000), met while scanning ahead
            r.problem(
                mark.line + 1 if mark else None,
                "",
                f"nests mappings and lists more than {MAX_DEPTH} deep: no stack file does; is it the right file?",
                fatal=True,
            )
        if isinstance(err, yaml.reader.ReaderError) and isinstance(err.character, int):
            # The reader names a character it refuses by its offset (libyaml's in bytes): a line is
            # what a person can find.
            if LOADER is yaml.SafeLoader:
                line = text.count("\n", 0, err.position) + 1
            else:
                line = text.encode().count(b"\n", 0, err.position) + 1
            name = unicodedata.name(chr(err.character), "a control character")
            r.problem(
                line,
                "",
                f"holds the character U+{err.character:04X} ({name}), which YAML does not allow in a file: "
                f"remove it, or write it as \\u{err.character:04X} inside a double-quoted string",
                fatal=True,
            )
        hint = ""
        if "found unexpected ':'" in str(err):
            hint = (
                " (inside [...] or {...} Pulumi's YAML reader takes a plain scalar that ends in `:` before `,`, "
                "`]` or `}` as a string, where this reader stops: quote it)"
            )
        r.problem(None, "", f"is not YAML: {err}{hint}", fatal=True)
    doc = root[0] if root else None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        r.problem(None, "", "is not a mapping", fatal=True)
    config = doc.get("config")
    if config is not None and not isinstance(config, dict):
        r.problem(None, "config", f"must be a map of key: value; got {_kind(config)}")
    for key in ("secretsprovider", "encryptedkey", "encryptionsalt"):
        if isinstance(doc.get(key), (dict, list)):
            r.problem(None, key, f"must be a string; got {_kind(doc[key])}")
    return doc


def _back(r: _Reader, value: str, line: int, path: str) -> str:
    back = written_back(value)
    if back is TAB_FIRST:
        r.problem(
            line,
            path,
            "is a string with a line break that starts with a tab: Pulumi writes it back as a "
            "literal block it then cannot read (a tab where it expects indentation) and refuses the file; "
            "start it with another character",
        )
        return value
    assert isinstance(back, str)
    return back


def _take_key(r: _Reader, frame: _Frame, value: Any, written: str, line: int, *, skip: bool) -> None:
    frame.has_key = True
    frame.key = _SKIP
    frame.skipped = written[:80] or "?"
    where = frame.path if frame.zone != 1 else ""
    if skip:
        return
    if value is MERGE:
        r.problem(line, where, "the merge key << is not read here: write the merged keys out")
        return
    if not isinstance(value, str):
        shown = f"the key {written}" if written else "the empty key"
        r.problem(
            line,
            where,
            f"{shown} is {_kind(value)} to Pulumi, not a string: quote it" + (f' ("{written}")' if written else ""),
        )
        return
    first = frame.key_lines.get(value)
    if first is not None:
        r.problem(
            line, frame.child_path(value), f"is given twice (first at line {first}), which Pulumi refuses: keep one"
        )
        return
    frame.key_lines[value] = line
    if frame.zone == 1:  # namespaced before it is written back (_config_map)
        frame.key = value
        return
    if value == "<<":
        # Written back plain, where yaml.v3 reads it as a merge key (and refuses what it holds).
        r.problem(
            line,
            frame.child_path(value),
            "is written back by Pulumi as the merge key <<, which it then refuses: rename the key",
        )
        return
    back = _back(r, value, line, frame.child_path(value))
    if back != value:
        other = frame.back_lines.get(back)
        if other is not None or back in frame.key_lines:
            r.problem(
                line,
                frame.child_path(value),
                f"is read back by Pulumi as {back!r} (it drops the line break a "
                f"string starts with), the key at line {other or frame.key_lines[back]}, and refused as given "
                "twice: remove the leading line break",
            )
            return
    elif back in frame.back_lines:
        r.problem(
            line,
            frame.child_path(value),
            f"is also what Pulumi reads back the key at line "
            f"{frame.back_lines[back]} as (it drops the line break a string starts with), and refused as given "
            "twice: remove that leading line break",
        )
        return
    frame.back_lines[back] = line
    frame.key = back


def _config_scalar(r: _Reader, value: Any, line: int, path: str) -> Any:
    """A scalar in the config map: a timestamp becomes the text the CLI passes on; NaN, an
    infinity and a timestamp with an offset are refused."""
    if isinstance(value, float) and not math.isfinite(value):
        r.problem(
            line,
            path,
            f"{'NaN' if math.isnan(value) else 'an infinity'} cannot reach the program: Pulumi "
            "passes config as JSON, which has neither, and refuses it; write a number, or quote it for a string",
        )
        return None
    if isinstance(value, GoTime):
        if value.offset:
            r.problem(
                line,
                path,
                "a timestamp with a UTC offset reaches the program rewritten in the time zone of "
                'the machine that runs pulumi (e.g. "2001-12-14 21:59:43 -0500 EST"): quote it to keep it '
                "as written",
            )
            return None
        return value.text
    return value


def _attach(parent: _Frame | None, root: list[Any], value: Any) -> None:
    if (parent is None or parent.zone == 0) and isinstance(value, GoTime):
        value = value.text  # outside the config map nothing reaches the program: kept as Go prints it
    if parent is None:
        root.append(value)
    elif isinstance(parent.container, list):
        parent.container.append(value)
    else:
        if parent.key is not _SKIP:
            parent.container[parent.key] = value
        parent.key, parent.has_key = None, False


# --- the config map ----------------------------------------------------------------------------


def _config_key(r: _Reader, key: str, line: int) -> str | None:
    """The key as the CLI reads it: a bare key in the project's namespace (loaders.go), written
    back and read again, then config.ParseKey (`<ns>:<name>`, or `<ns>:config:<name>`)."""
    if ":" not in key:
        key = f"{r.project}:{key}"
    back = written_back(key)
    if back is TAB_FIRST:
        _back(r, key, line, key)
        return None
    colons = back.count(":")
    if colons == 1:
        return str(back)
    if colons == 2:
        namespace, module, name = back.split(":")
        if module == "config":
            return f"{namespace}:{name}"
    r.problem(
        line,
        key,
        "is not a configuration key, which Pulumi refuses: write <namespace>:<name>, with "
        f"no other colon (e.g. {r.project}:{key.rsplit(':', 1)[-1]})",
    )
    return None


def _config_map(r: _Reader, frame: _Frame) -> dict[str, Any]:
    assert isinstance(frame.container, dict)
    out: dict[str, Any] = {}
    seen: dict[str, tuple[str, int]] = {}
    for key, value in frame.container.items():
        line = frame.key_lines.get(key, frame.line)
        full = _config_key(r, key, line)
        if full is None:
            continue
        if full in seen:
            other, other_line = seen[full]
            r.problem(
                line,
                key,
                f"is {full} to Pulumi, as is {other} at line {other_line}, and Pulumi keeps either "
                "at random or refuses the file: keep one",
            )
            continue
        seen[full] = (key, line)
        out[full] = _program_value(r, value, full, line)
    return out


def _program_value(r: _Reader, value: Any, key: str, line: int) -> Any:
    """A config value as the program receives it: the CLI's text of it, decoded as
    components.config.parse.decode_config_value decodes it (a secret stays {"secure": ...})."""
    if _is_secure(value):
        return {"secure": value["secure"]}
    if value is None:
        text = ""  # the CLI passes a key with no value as ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = go_json_float(value)
    else:
        text = json.dumps(_object_value(value), sort_keys=True, ensure_ascii=False, allow_nan=False)
    return decode_config_value(text)


def _object_value(value: dict[str, Any] | list[Any]) -> Any:
    """An object value as the program's json.loads gives it back (keys sorted as Go sorts them;
    numbers as the CLI prints them), built without recursion."""
    out: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    todo: list[tuple[dict[str, Any] | list[Any], dict[str, Any] | list[Any]]] = [(value, out)]
    while todo:
        source, target = todo.pop()
        items: Iterable[tuple[Any, Any]] = source.items() if isinstance(source, dict) else enumerate(source)
        for k, v in items:
            child: Any
            if _is_secure(v):
                child = {"secure": v["secure"]}
            elif isinstance(v, (dict, list)):
                child = {} if isinstance(v, dict) else []
                todo.append((v, child))
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                child = _nested_number(v)
            else:
                child = v
            if isinstance(target, dict):
                target[k] = child
            else:
                target.append(child)
    return out
