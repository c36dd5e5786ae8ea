"""components/config/stackfile.py: the stack file read as the Pulumi CLI (yaml.v3) gives it to the
program. Each rule has a case that fails if the rule is removed; tests/e2e/engine/test_stack_file_cli.py
checks the same against the real CLI."""

from __future__ import annotations

import math
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from components import plan
from components.config.checks import ConfigError
from components.config.stackfile import (
    MAX_BYTES,
    MAX_DEPTH,
    go_json_float,
    go_timestamp,
    read_stack_file,
    resolve_plain,
    written_back,
)
from testbed.config_errors import refused
from testbed.harness import ROOT


def config(text: str, name: str = "t") -> dict[str, Any]:
    doc = read_stack_file(name, text)
    return doc["config"]


def top(value: str) -> Any:
    """What the program receives for `kueue-aks:x: <value>`."""
    return config(f"config:\n  kueue-aks:x: {value}\n")["kueue-aks:x"]


def nested(value: str) -> Any:
    """... and for the same value inside an object and a list."""
    got = config(f"config:\n  kueue-aks:x:\n    k: {value}\n  kueue-aks:y:\n    - {value}\n")
    assert got["kueue-aks:y"] == [got["kueue-aks:x"]["k"]] or _both_nan(got)
    return got["kueue-aks:x"]["k"]


def _both_nan(got: dict[str, Any]) -> bool:
    a, b = got["kueue-aks:x"]["k"], got["kueue-aks:y"][0]
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def same_type(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# --- scalars: yaml.v3's resolve.go, then the CLI's text and decode_config_value -------------------

SCALARS = [
    # (written, at the top level, inside an object)
    ("yes", "yes", "yes"),
    ("no", "no", "no"),
    ("on", "on", "on"),
    ("off", "off", "off"),
    ("y", "y", "y"),
    ("n", "n", "n"),
    ("Yes", "Yes", "Yes"),
    ("YES", "YES", "YES"),
    ("Off", "Off", "Off"),
    ("true", True, True),
    ("True", True, True),
    ("TRUE", True, True),
    ("FALSE", False, False),
    ("tRue", "tRue", "tRue"),
    ("1:30", "1:30", "1:30"),
    ("1:30:00", "1:30:00", "1:30:00"),
    ("0o10", 8, 8),
    ("0O10", 8, 8),
    ("010", 8, 8),
    ("0777", 511, 511),
    ("08", 8, 8),
    ("09", 9, 9),
    ("0x1F", 31, 31),
    ("-0x10", -16, -16),
    ("0b11", 3, 3),
    ("-0b11", -3, -3),
    ("0x", "0x", "0x"),
    ("1_000", 1000, 1000),
    ("1__0", 10, 10),
    ("1_", 1, 1),
    ("_1", "_1", "_1"),
    ("1_000.5", 1000.5, 1000.5),
    ("1e3", 1000, 1000),
    ("1.5e3", 1500, 1500),
    ("1E3", 1000, 1000),
    ("1.", 1, 1),
    (".5", 0.5, 0.5),
    ("+.5", 0.5, 0.5),
    (".5_5", 0.55, 0.55),
    ("._5", "._5", "._5"),
    ("0.1", 0.1, 0.1),
    ("1e20", 10**20, 10**20),
    ("1e21", 1e21, 1e21),
    ("1e-7", 1e-7, 1e-7),
    ("1e400", math.inf, "1e400"),
    ("123456789012345678901234567890", 1.2345678901234568e29, 1.2345678901234568e29),
    ("9223372036854775807", 2**63 - 1, 2**63 - 1),
    ("18446744073709551615", 2**64 - 1, 18446744073709552000),  # inside an object: through float64
    ("-9223372036854775809", -9223372036854776000, -9223372036854776000),  # past int64: a float
    ("-0", 0, 0),
    ("-0.0", 0, 0),
    ("+1", 1, 1),
    ("null", "", None),
    ("Null", "", None),
    ("NULL", "", None),
    ("~", "", None),
    ("", "", None),
    ("nULL", "nULL", "nULL"),
    ("NaN", math.nan, "NaN"),
    ("Infinity", math.inf, "Infinity"),
    ("inf", "inf", "inf"),
    (".Nan", ".Nan", ".Nan"),
    ("2001-12-14", "2001-12-14 00:00:00 +0000 UTC", "2001-12-14 00:00:00 +0000 UTC"),
    ("2001-12-14t21:59:43.10Z", "2001-12-14 21:59:43.1 +0000 UTC", "2001-12-14 21:59:43.1 +0000 UTC"),
    ("2001-12-14 21:59:43.10", "2001-12-14 21:59:43.1 +0000 UTC", "2001-12-14 21:59:43.1 +0000 UTC"),
    ("2001-1-2T3:4:5Z", "2001-01-02 03:04:05 +0000 UTC", "2001-01-02 03:04:05 +0000 UTC"),
    ("2001-12-14T21:59:43", "2001-12-14T21:59:43", "2001-12-14T21:59:43"),  # no zone: not a timestamp
    ("2001-02-29", "2001-02-29", "2001-02-29"),
    ("2000-02-29", "2000-02-29 00:00:00 +0000 UTC", "2000-02-29 00:00:00 +0000 UTC"),
    ('"10"', 10, "10"),
    ("'1e3'", 1000.0, "1e3"),
    ('"true"', True, "true"),
    ('"yes"', "yes", "yes"),
    ('"[1, 2]"', [1, 2], "[1, 2]"),
    ("'null'", None, "null"),
    ('""', "", ""),
    ("<<", "<<", "<<"),
    ("a b", "a b", "a b"),
    ("é", "é", "é"),
]


@pytest.mark.parametrize(("written", "at_top", "inside"), SCALARS, ids=[s[0] or "empty" for s in SCALARS])
def test_each_scalar_reaches_the_program_as_the_cli_gives_it(written: str, at_top: Any, inside: Any) -> None:
    for got, want in ((top(written), at_top), (nested(written), inside)):
        if isinstance(want, float) and math.isnan(want):
            assert isinstance(got, float) and math.isnan(got)
        else:
            assert same_type(got, want), (written, got, want)


def test_the_resolver_types_plain_scalars_as_yaml_v3_does() -> None:
    assert resolve_plain("yes") == "yes" and resolve_plain("1:30") == "1:30"
    assert same_type(resolve_plain("010"), 8) and same_type(resolve_plain("1e3"), 1000.0)
    assert resolve_plain("~") is None and resolve_plain("") is None
    assert math.isnan(resolve_plain(".NaN")) and resolve_plain("-.inf") == -math.inf
    assert resolve_plain("18446744073709551616") == 1.8446744073709552e19  # past uint64: a float
    stamp = go_timestamp("2001-12-14T21:59:43.1-05:00")
    assert stamp is not None and stamp.offset
    assert go_timestamp("2001-12-14 21:59:43,5") is not None  # Go takes a comma before the fraction
    assert go_timestamp("2001-12-14T24:00:00Z") is None and go_timestamp("2001-13-01") is None


def test_floats_are_printed_as_go_encoding_json_prints_them() -> None:
    assert go_json_float(1000.0) == "1000" and go_json_float(1e20) == "100000000000000000000"
    assert go_json_float(1e21) == "1e+21" and go_json_float(2.0**60) == "1152921504606847000"
    assert go_json_float(0.1) == "0.1" and go_json_float(1e-6) == "0.000001" and float(go_json_float(1e-7)) == 1e-7


def test_non_finite_numbers_are_refused_with_their_key() -> None:
    for value in (".nan", ".inf", "-.inf", "+.INF"):
        assert any(
            "line 2, kueue-aks:x" in m and ("NaN" in m or "infinity" in m)
            for m in refused(read_stack_file, "t", f"config:\n  kueue-aks:x: {value}\n").only_at("Pulumi.t.yaml")
        )
    assert any(
        "kueue-aks:x.a.b[1]" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x:\n    a:\n      b: [1, .nan]\n").only_at(
            "Pulumi.t.yaml"
        )
    )
    # Outside the config map nothing is passed on, and the CLI takes it.
    assert math.isnan(read_stack_file("t", "other: .nan\n")["other"])


def test_a_timestamp_with_an_offset_is_refused() -> None:
    assert any(
        "UTC offset" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: 2001-12-14T21:59:43-05:00\n").only_at(
            "Pulumi.t.yaml"
        )
    )
    assert top('"2001-12-14T21:59:43-05:00"') == "2001-12-14T21:59:43-05:00"


# --- the CLI writes the document back to YAML and reads it again ------------------------------------


def test_a_string_with_line_breaks_comes_back_as_yaml_v3_writes_it() -> None:
    assert written_back("a\nb") == "a\nb" and written_back("\nabc") == "abc"
    assert top('"\\nabc"') == "abc" and nested('"\\n\\nx"') == "\nx" and top('"\\n"') == ""
    assert top('"\\u2028\\nx"') == "\nx"
    assert top('"x \\ny"') == "x \ny" and top('"\\r\\nx"') == "\r\nx"  # quoted when written back: exact
    assert top("|\n    keep\n") == "keep\n"
    assert any(
        "starts with a tab" in m
        for m in refused(read_stack_file, "t", 'config:\n  kueue-aks:x: "\\tx\\ny"\n').only_at("Pulumi.t.yaml")
    )
    assert top('"\\tx"') == "\tx"  # no line break: quoted, exact


def test_keys_that_come_back_the_same_are_refused() -> None:
    assert config('config:\n  kueue-aks:x:\n    "\\na": 1\n') == {"kueue-aks:x": {"a": 1}}
    assert any(
        "read back by Pulumi as 'a'" in m or "also what Pulumi reads back" in m
        for m in refused(read_stack_file, "t", 'config:\n  kueue-aks:x:\n    "\\na": 1\n    a: 2\n').only_at(
            "Pulumi.t.yaml"
        )
    )


# --- keys and structure -------------------------------------------------------------------------------


def test_duplicate_keys_are_refused_at_every_level_with_both_lines() -> None:
    messages = refused(read_stack_file, "t", "config:\n  kueue-aks:x: 1\n  kueue-aks:x: 2\n").only_at("Pulumi.t.yaml")
    assert any("line 3, kueue-aks:x: is given twice (first at line 2)" in m for m in messages)
    assert any(
        "line 4, kueue-aks:c.a" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:c:\n    a: 1\n    a: 2\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "line 2, config" in m
        for m in refused(read_stack_file, "t", "config: {}\nconfig: {}\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "given twice" in m
        for m in refused(read_stack_file, "t", 'config:\n  kueue-aks:c: {a: 1, "a": 2}\n').only_at("Pulumi.t.yaml")
    )


def test_anchors_aliases_tags_and_merge_keys_are_refused() -> None:
    assert any(
        "anchor &a" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: &a 1\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "alias *a" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: &a 1\n  kueue-aks:y: *a\n").only_at(
            "Pulumi.t.yaml"
        )
    )
    assert any(
        "tag !!str" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: !!str 1\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "tag !foo" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: !foo bar\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "merge key" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x:\n    <<: {a: 1}\n").only_at("Pulumi.t.yaml")
    )
    # Quoted, a string key; but the CLI writes it back plain, a merge key it then refuses.
    assert any(
        "merge key <<, which it then refuses" in m
        for m in refused(read_stack_file, "t", 'config:\n  kueue-aks:x:\n    "<<": 1\n').only_at("Pulumi.t.yaml")
    )


def test_keys_that_are_not_strings_are_refused() -> None:
    for key in ("1", "true", "~", "1.5", "2001-01-01", "0x10"):
        assert any(
            "not a string: quote it" in m
            for m in refused(read_stack_file, "t", f"config:\n  kueue-aks:x:\n    {key}: v\n").only_at("Pulumi.t.yaml")
        ), key
    assert any(
        "as a key" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x:\n    ? [a]\n    : v\n").only_at("Pulumi.t.yaml")
    )
    assert config('config:\n  kueue-aks:x:\n    "1": v\n') == {"kueue-aks:x": {"1": "v"}}


def test_config_keys_are_namespaced_and_parsed_as_the_cli_does() -> None:
    assert list(config("config:\n  teams: 1\n  kueue-aks:config:cluster: 2\n  azure-native:location: x\n")) == [
        "kueue-aks:teams",
        "kueue-aks:cluster",
        "azure-native:location",
    ]
    assert list(read_stack_file("t", "config:\n  teams: 1\n", project="other")["config"]) == ["other:teams"]
    assert any(
        "not a configuration key" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:a:b: 1\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "as is teams at line 2" in m
        for m in refused(read_stack_file, "t", "config:\n  teams: 1\n  kueue-aks:teams: 2\n").only_at("Pulumi.t.yaml")
    )
    assert list(config("config:\n  kueue-aks:cluster.name: x\n")) == ["kueue-aks:cluster.name"]  # a key, not a path


def test_objects_reach_the_program_as_json_with_sorted_keys() -> None:
    got = config("config:\n  kueue-aks:x:\n    b: 1\n    a: [2001-12-14, 1e3, yes]\n")["kueue-aks:x"]
    assert list(got) == ["a", "b"] and got == {"a": ["2001-12-14 00:00:00 +0000 UTC", 1000, "yes"], "b": 1}


def test_secrets_stay_as_the_secure_mapping() -> None:
    got = config(
        "config:\n  kueue-aks:token:\n    secure: v1:abc\n  kueue-aks:obj:\n    inner:\n      secure: v1:def\n"
        "  kueue-aks:list: [{secure: v1:ghi}]\n  kueue-aks:notsecret: {secure: 5}\n"
    )
    assert got == {
        "kueue-aks:token": {"secure": "v1:abc"},
        "kueue-aks:obj": {"inner": {"secure": "v1:def"}},
        "kueue-aks:list": [{"secure": "v1:ghi"}],
        "kueue-aks:notsecret": {"secure": 5},
    }
    # The program gets {secure: <plaintext>}, which its parser takes for a secret it cannot read too.
    assert config("config:\n  kueue-aks:x:\n    secure:\n      secure: v1:a\n") == {
        "kueue-aks:x": {"secure": {"secure": "v1:a"}}
    }


def test_the_document_and_its_config_must_be_mappings() -> None:
    assert read_stack_file("t", "") == {} and read_stack_file("t", "# only a comment\n") == {}
    assert read_stack_file("t", "~\n") == {} and read_stack_file("t", "config:\n") == {"config": None}
    assert refused(read_stack_file, "t", "- a\n").only_at("Pulumi.t.yaml") == ["is not a mapping"] and refused(
        read_stack_file, "t", "''\n"
    ).only_at("Pulumi.t.yaml") == ["is not a mapping"]
    assert any(
        "config: must be a map" in m for m in refused(read_stack_file, "t", "config: 5\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "config: must be a map" in m for m in refused(read_stack_file, "t", "config: [a]\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "encryptionsalt: must be a string" in m
        for m in refused(read_stack_file, "t", "encryptionsalt: [a]\n").only_at("Pulumi.t.yaml")
    )


def test_yaml_errors_keep_the_plan_s_wording() -> None:
    assert any(
        m.startswith("is not YAML:")
        for m in refused(read_stack_file, "t", "config: [not, a, mapping\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "%YAML 1.2" in m for m in refused(read_stack_file, "t", "%YAML 1.2\n---\nconfig: {}\n").only_at("Pulumi.t.yaml")
    )
    assert read_stack_file("t", "%YAML 1.1\n---\nconfig: {}\n") == {"config": {}}


def test_what_pulumi_would_ignore_after_the_document_is_refused() -> None:
    assert any(
        "second YAML document" in m
        for m in refused(read_stack_file, "t", "config: {}\n---\nconfig: {kueue-aks:x: 1}\n").only_at("Pulumi.t.yaml")
    )
    # An indented first key ends the document at the first line that is not: Pulumi ignores the rest.
    assert any(
        "follows the end of the YAML document (line" in m
        for m in refused(read_stack_file, "t", "  kueue-aks:x: 1\nconfig:\n  kueue-aks:y: 2\n").only_at("Pulumi.t.yaml")
    )


def test_flow_scalars_that_yaml_v3_ends_differently_are_refused() -> None:
    assert any(
        "holds a ?" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: [what?]\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "ends in `:`" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: {a:, b: 1}\n").only_at("Pulumi.t.yaml")
    )
    assert config("config:\n  kueue-aks:x: {a:b: c}\n") == {"kueue-aks:x": {"a:b": "c"}}


def test_byte_order_marks_crlf_tabs_and_unicode() -> None:
    assert config("\ufeffconfig:\n  kueue-aks:x: 1\n") == {"kueue-aks:x": 1}
    assert any(
        "byte order mark" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: 1\n\ufeff  kueue-aks:y: 2\n").only_at(
            "Pulumi.t.yaml"
        )
    )
    assert config("config:\r\n  kueue-aks:x: |\r\n    a\r\n    b\r\n") == {"kueue-aks:x": "a\nb\n"}
    assert config("config:\n  kueue-aks:x: a\tb\n  kueue-aks:y:\tc\n") == {"kueue-aks:x": "a\tb", "kueue-aks:y": "c"}
    assert config("config:\n  kueue-aks:é: ü\n") == {"kueue-aks:é": "ü"}
    # A comment line indented with a tab is a comment to yaml.v3 when it follows a whole-line comment...
    assert config("config:\n  # a\n\t\n\t# b\n  kueue-aks:x: 1\n") == {"kueue-aks:x": 1}
    # ... and refused, by both readers, anywhere else (a tab-blank line is swallowed only on the way to a comment).
    assert any(
        "is not YAML" in m
        for m in refused(read_stack_file, "t", "config:\n  # a\n\t# b\n\t\n  kueue-aks:x: 1\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "is not YAML" in m
        for m in refused(read_stack_file, "t", "config:\n  kueue-aks:x: 1 # a\n\t# b\n").only_at("Pulumi.t.yaml")
    )
    assert any(
        "is not YAML" in m
        for m in refused(read_stack_file, "t", "config:\n\tkueue-aks:x: 1\n").only_at("Pulumi.t.yaml")
    )


def test_every_problem_is_reported_with_its_line() -> None:
    messages = refused(
        read_stack_file,
        "t",
        "config:\n  kueue-aks:a: &x 1\n  kueue-aks:b: !!int 2\n  kueue-aks:c:\n    1: x\n  kueue-aks:d: .nan\n",
    ).only_at("Pulumi.t.yaml")
    assert [m.split(":")[0] for m in messages] == [
        "line 2, kueue-aks",
        "line 3, kueue-aks",
        "line 5, kueue-aks",
        "line 6, kueue-aks",
    ]


# --- bounds: refused at once, whatever the file holds ------------------------------------------------


def bounded(text: str, expect: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        messages = refused(read_stack_file, "t", text).only_at("Pulumi.t.yaml")
    finally:
        took = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert any(expect in m for m in messages), messages
    assert took < 1.5, f"{took:.2f} s"
    assert peak < 64 * 2**20 + 4 * len(text), f"{peak / 2**20:.0f} MiB"


def test_an_alias_bomb_is_refused_at_once() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
    )
    bounded("config:\n  kueue-aks:x:\n" + "".join("    " + line + "\n" for line in bomb.splitlines()), "anchor &a")


def test_a_ten_thousand_deep_nest_is_refused_at_once() -> None:
    bounded("config:\n  kueue-aks:x: " + "[" * 10_000 + "]" * 10_000 + "\n", f"more than {MAX_DEPTH} deep")
    bounded("config:\n  kueue-aks:x:\n    " + "- " * 10_000 + "x\n", f"more than {MAX_DEPTH} deep")  # block lists
    bounded("config:\n  kueue-aks:x: " + "{a: " * 10_000 + "}" * 10_000 + "\n", f"more than {MAX_DEPTH} deep")


def test_a_huge_file_is_refused_at_once() -> None:
    bounded("config:\n" + "  # padding\n" * (MAX_BYTES // 12 + 1), "larger than")
    assert any(
        "larger than" in m for m in refused(read_stack_file, "t", "é" * (MAX_BYTES // 2 + 1)).only_at("Pulumi.t.yaml")
    )  # counted in UTF-8 bytes


def test_a_large_real_stack_reads_quickly() -> None:
    teams = "".join(f"    - name: team{i}\n      share: 0.05\n      pools: [cpu, gpu]\n" for i in range(2000))
    started = time.perf_counter()
    got = config("config:\n  kueue-aks:teams:\n" + teams)
    assert len(got["kueue-aks:teams"]) == 2000 and time.perf_counter() - started < 2


# --- the plan reads stack files through it ------------------------------------------------------------


def test_the_plan_reads_stack_files_as_the_cli_does(tmp_path: Path) -> None:
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    assert plan.parse_stack("dev", dev).stack == "dev"
    with pytest.raises(ConfigError) as err:
        plan.parse_stack("dev", dev.replace("      minCount: 0\n", "      minCount: 0\n      minCount: 1\n", 1))
    assert [p.path for p in err.value.problems] == ["Pulumi.dev.yaml"] and "given twice" in str(err.value)
    with pytest.raises(ConfigError) as err:
        plan.parse_stack("dev", dev.replace("topology: true", "topology: yes"))
    assert "kueue-aks:nodePools[2].topology" in str(err.value)  # the string "yes", as `pulumi up` sees it
    with pytest.raises(ConfigError) as err:
        plan.parse_stack("dev", "config: [not, a, mapping\n")
    assert "is not YAML" in str(err.value)
