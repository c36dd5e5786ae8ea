"""The stack file as the real Pulumi CLI reads it, against components/config/stackfile.py.

For every trap below (and every `*.yaml` under tests/config/traps/, the repository's own stack
files too), `pulumi config --json` (v3.260.0, built by testbed/binaries.py) in a throwaway
project with a local file backend lists what the program would receive; each value, decoded as
the program decodes it (decode_config_value), must equal what read_stack_file returns. A file the
CLI refuses must be refused; a file only read_stack_file refuses must be refused for one of the
reasons docs/configuration.md ("How the stack file is read") lists as stricter than the CLI.
No network: the CLI runs with a proxy that answers nothing, and never updates or fetches a plugin.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.config.checks import ConfigError
from components.config.parse import decode_config_value
from components.config.stackfile import MAX_DEPTH, read_stack_file
from testbed.harness import ROOT

TRAPS_DIR = ROOT / "tests" / "config" / "traps"
STACK = "trap"
PASSPHRASE = "stack-file-traps"  # a throwaway stack's secrets, in the test's folder

# What read_stack_file refuses that the CLI takes (docs/configuration.md, "How the stack file is
# read"), by a phrase of its message. A refusal with none of these where the CLI reads the file
# is a bug in the port.
STRICTER = {
    "anchor &": "anchors",
    "alias *": "aliases",
    "the tag ": "explicit tags",
    "merge key": "merge keys",
    "not a string: quote it": "keys that are not strings (the CLI stringifies them in objects)",
    "as a key is not read here": "mappings or lists as keys",
    "second YAML document": "a second document (the CLI ignores it)",
    "follows the end of the YAML document": "text after the document's end (the CLI ignores it)",
    "UTC offset": "timestamps with a UTC offset (the CLI renders them in the machine's time zone)",
    "byte order mark (U+FEFF) inside": "a byte order mark past the start",
    "holds a ?, which inside": "a ? in a plain scalar inside [...] or {...}",
    "ends in `:`": "a plain scalar ending in : before , ] } inside [...] or {...}",
    "keeps either at random": "the same key written twice, bare and namespaced (the CLI keeps one at random)",
    f"more than {MAX_DEPTH} deep": f"nesting deeper than {MAX_DEPTH}",
    "larger than": "files over 4 MiB",
}

NEST = "config:\n  kueue-aks:x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n"


def stack(body: str) -> str:
    return "config:\n" + "".join(f"  {line}\n" for line in body.splitlines())


# (name, the stack file's text, what is expected: "same" read alike, "refused" by both, "stricter"
# refused only by read_stack_file)
TRAPS: list[tuple[str, str, str]] = [
    (
        "yaml-1.1-booleans",
        stack(
            "kueue-aks:a: yes\nkueue-aks:b: no\nkueue-aks:c: on\nkueue-aks:d: off\n"
            "kueue-aks:e: y\nkueue-aks:f: n\nkueue-aks:g: Yes\nkueue-aks:h: TRUE\n"
            "kueue-aks:i: [yes, no, on, off, y, n, Yes, TRUE, tRue]\nkueue-aks:j: {spot: yes}"
        ),
        "same",
    ),
    ("base-60", stack("kueue-aks:a: 1:30\nkueue-aks:b: [1:30, -1:30:00, 190:20:30.15]"), "same"),
    (
        "integers",
        stack(
            "kueue-aks:a: 0o10\nkueue-aks:b: 010\nkueue-aks:c: 0x1F\nkueue-aks:d: 0b11\n"
            "kueue-aks:e: 1_000\nkueue-aks:f: [0o10, 010, 0x1F, 0b11, 1_000, 08, 09, -0b11, 0x, 1__0, _1]\n"
            "kueue-aks:g: 0777\nkueue-aks:h: +0x10"
        ),
        "same",
    ),
    (
        "floats",
        stack(
            "kueue-aks:a: 1e3\nkueue-aks:b: 1.5e3\nkueue-aks:c: .5\nkueue-aks:d: [1e3, 1.5e3, .5, 1e21, 1e20, "
            "1e-7, 0.1, 1., .5_5, ._5]\nkueue-aks:e: 1e21\nkueue-aks:f: 1e400\nkueue-aks:g: [1e400, 1e-400]"
        ),
        "same",
    ),
    (
        "big-integers",
        stack(
            "kueue-aks:a: 123456789012345678901234567890\nkueue-aks:b: 18446744073709551615\n"
            "kueue-aks:c: [123456789012345678901234567890, 18446744073709551615, 9223372036854775808, "
            "-9223372036854775809]\nkueue-aks:d: 9223372036854775807"
        ),
        "same",
    ),
    ("negative-zero", stack("kueue-aks:a: -0\nkueue-aks:b: -0.0\nkueue-aks:c: [-0, -0.0, +0]"), "same"),
    ("nan", stack("kueue-aks:a: .nan"), "refused"),
    ("inf", stack("kueue-aks:a: .inf"), "refused"),
    ("nested-nan", stack("kueue-aks:a: {b: [1, -.inf]}"), "refused"),
    ("nan-spelled-as-text", stack("kueue-aks:a: NaN\nkueue-aks:b: Infinity\nkueue-aks:c: [NaN, .Nan, inf]"), "same"),
    (
        "nulls",
        stack(
            "kueue-aks:a: null\nkueue-aks:b: ~\nkueue-aks:c:\nkueue-aks:d: NULL\nkueue-aks:e: [null, ~, Null, nULL]\n"
            "kueue-aks:f: {g: ~, h: }\nkueue-aks:g:\n  h:"
        ),
        "same",
    ),
    (
        "timestamps",
        stack(
            "kueue-aks:a: 2001-12-14\nkueue-aks:b: 2001-12-14t21:59:43.10Z\n"
            "kueue-aks:c: 2001-12-14 21:59:43.10\nkueue-aks:d: [2001-12-14, 2001-1-2T3:4:5Z, 2001-02-29, "
            "2000-02-29, 2001-12-14T21:59:43, 2001-12-14T24:00:00Z, 0000-01-01]\n"
            "kueue-aks:e: {since: 2001-12-14}"
        ),
        "same",
    ),
    ("timestamp-with-offset", stack("kueue-aks:a: 2001-12-14T21:59:43.10-05:00"), "stricter"),
    (
        "quoted-numbers",
        stack(
            'kueue-aks:a: "10"\nkueue-aks:b: \'1e3\'\nkueue-aks:c: "010"\nkueue-aks:d: "true"\n'
            'kueue-aks:e: "[1, 2]"\nkueue-aks:f: ["10", \'1e3\']\nkueue-aks:g: \'null\'\nkueue-aks:h: ""'
        ),
        "same",
    ),
    ("duplicate-top-level-key", stack("kueue-aks:a: 1\nkueue-aks:a: 2"), "refused"),
    ("duplicate-nested-key", stack("kueue-aks:a:\n  b: 1\n  b: 2"), "refused"),
    ("duplicate-key-quoted-and-plain", stack('kueue-aks:a: {b: 1, "b": 2}'), "refused"),
    ("duplicate-root-key", "config: {}\nconfig: {}\n", "refused"),
    (
        "multi-line-strings",
        stack(
            "kueue-aks:a: |\n  line one\n    line two\n\n  three\nkueue-aks:b: >-\n  folded\n  text\n\n"
            "  para\nkueue-aks:c: |+\n  keep\n\nkueue-aks:d: \"a\\nb\"\nkueue-aks:e: 'multi\n  line'\n"
            'kueue-aks:f: plain\n  continued\nkueue-aks:g: ["x\\ny"]\nkueue-aks:h: |2\n    indented'
        ),
        "same",
    ),
    (
        "strings-with-a-leading-line-break",
        stack(
            'kueue-aks:a: "\\nabc"\nkueue-aks:b: ["\\n\\nx", "\\n"]\n'
            'kueue-aks:c: "\\u2028\\nx"\nkueue-aks:d: {k: "\\nv"}\n'
            'kueue-aks:e: "x \\ny"\nkueue-aks:f: "\\r\\nx"'
        ),
        "same",
    ),
    ("string-with-a-line-break-starting-with-a-tab", stack('kueue-aks:a: "\\tx\\ny"'), "refused"),
    ("keys-that-come-back-the-same", stack('kueue-aks:a:\n  "\\nb": 1\n  b: 2'), "refused"),
    (
        "tabs-in-values",
        stack("kueue-aks:a: a\tb\nkueue-aks:b:\tc\nkueue-aks:c: \"\\t\"\nkueue-aks:d: [1,\t2]\nkueue-aks:e: 'x\ty'"),
        "same",
    ),
    (
        "tab-indented-comments",
        "config:\n  # a comment\n\t# indented with a tab\n\n  \t# another\n  kueue-aks:a: 1\n",
        "same",
    ),
    (
        "tab-indented-comment-after-a-value",
        "config:\n  kueue-aks:a: 1 # a comment\n\t# indented with a tab\n",
        "refused",
    ),
    ("tab-indentation", "config:\n\tkueue-aks:a: 1\n", "refused"),
    ("tab-blank-line-before-content", "config:\n  # a\n\t\n  kueue-aks:a: 1\n", "refused"),
    ("byte-order-mark", "\ufeffconfig:\n  kueue-aks:a: yes\n", "same"),
    ("byte-order-mark-inside", "config:\n  kueue-aks:a: 1\n\ufeff  kueue-aks:b: 2\n", "stricter"),
    (
        "crlf",
        "config:\r\n  kueue-aks:a: 1\r\n  kueue-aks:b: |\r\n    x\r\n    y\r\n  kueue-aks:c: 'p\r\n    q'\r\n",
        "same",
    ),
    (
        "unicode",
        stack(
            'kueue-aks:é: ü\nkueue-aks:b: "\\u00e9\\U0001F600"\nkueue-aks:c: 日本\nkueue-aks:d: ["\\u2028"]\n'
            'kueue-aks:e: "\\x85"'
        ),
        "same",
    ),
    ("a-key-with-a-dot", stack("kueue-aks:cluster.name: x\nkueue-aks:a: {b.c: 1}"), "same"),
    (
        "top-level-scalars",
        stack(
            'kueue-aks:a: 10\nkueue-aks:b: "10"\nkueue-aks:c: true\nkueue-aks:d: x\n'
            "kueue-aks:e: '{\"k\": 1}'\nkueue-aks:f: 1.5\nazure-native:location: eastus2"
        ),
        "same",
    ),
    ("bare-and-config-keys", stack("teams: 1\nkueue-aks:config:cluster: 2\nother:config:x: 3"), "same"),
    ("bare-and-namespaced-key", stack("teams: 1\nkueue-aks:teams: 2"), "stricter"),
    ("key-with-two-colons", stack("kueue-aks:a:b: 1"), "refused"),
    ("objects-sorted", stack("kueue-aks:a:\n  z: 1\n  a: [3, 2]\n  m: {y: 1, b: 2}"), "same"),
    ("not-secret-secure-keys", stack("kueue-aks:a: {secure: 5}\nkueue-aks:b: {secure: v, other: 1}"), "same"),
    ("merge-value", stack("kueue-aks:a: <<\nkueue-aks:b: [<<]"), "same"),
    ("quoted-merge-key", stack('kueue-aks:b: {"<<": 1}'), "refused"),
    (
        "flow-collections",
        stack(
            "kueue-aks:a: {b: 1, c: [x, y, {d: e}], 'q': \"w\"}\nkueue-aks:b: [ ]\nkueue-aks:c: { }\n"
            "kueue-aks:d: {a:b: c}\nkueue-aks:e: [a:b]"
        ),
        "same",
    ),
    ("flow-question-mark", stack("kueue-aks:a: [what?]"), "refused"),
    ("flow-colon-before-brace", stack("kueue-aks:a: {b: 1, c:}"), "stricter"),
    ("flow-colon-before-comma", stack("kueue-aks:a: {b:, c: 1}"), "stricter"),
    ("anchor-and-alias", stack("kueue-aks:a: &x 1\nkueue-aks:b: *x"), "stricter"),
    ("merge-key", stack("kueue-aks:a: &x {b: 1}\nkueue-aks:c:\n  <<: *x\n  d: 2"), "stricter"),
    ("tag", stack('kueue-aks:a: !!str 1\nkueue-aks:b: !!int "2"'), "stricter"),
    ("integer-key", stack("kueue-aks:a:\n  1: x\n  true: y"), "stricter"),
    ("null-key", stack("kueue-aks:a: {~: x}"), "stricter"),
    ("second-document", "config:\n  kueue-aks:a: 1\n---\nconfig:\n  kueue-aks:b: 2\n", "stricter"),
    ("indented-first-key", "  kueue-aks:a: 1\nconfig:\n  kueue-aks:b: 2\n", "stricter"),
    ("yaml-1.2-directive", "%YAML 1.2\n---\nconfig:\n  kueue-aks:a: 1\n", "refused"),
    ("yaml-1.1-directive", "%YAML 1.1\n---\nconfig:\n  kueue-aks:a: 1\n", "same"),
    ("not-a-mapping", "- a\n- b\n", "refused"),
    ("a-string", "just text\n", "refused"),
    ("config-not-a-mapping", "config: 5\n", "refused"),
    ("config-a-list", "config: [a]\n", "refused"),
    ("empty-file", "", "same"),
    ("only-comments", "# nothing here\n", "same"),
    ("empty-config", "config:\n", "same"),
    (
        "other-top-level-keys",
        "encryptionsalt: v1:abc\nsecretsprovider: passphrase\nfoo: [1, .nan]\nconfig:\n  kueue-aks:a: 1\n",
        "same",
    ),
    ("salt-not-a-string", "encryptionsalt: [a]\nconfig: {}\n", "refused"),
    ("secure-inside-secure", stack("kueue-aks:a:\n  secure:\n    secure: v1:abc"), "same"),
    ("not-yaml", "config: [not, a, mapping\n", "refused"),
    ("deep-nest", NEST, "stricter"),
]


@dataclass
class CliRead:
    ok: bool
    values: dict[str, Any]  # key: (secret, decoded value)
    output: str


@pytest.fixture(scope="module")
def project(pulumi_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project named kueue-aks with stack `trap` on a local file backend, all in a temporary
    folder (HOME and PULUMI_HOME too)."""
    root = tmp_path_factory.mktemp("stack-file-cli")
    folder = root / "project"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text("name: kueue-aks\nruntime: python\n")
    (root / "state").mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root / "home"),
        "PULUMI_HOME": str(root / "pulumi-home"),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        # No network: anything the CLI would fetch meets a closed port.
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
        "TZ": "UTC",
    }
    for args in (("login", f"file://{root / 'state'}"), ("stack", "init", STACK)):
        done = run(pulumi_cli, folder, env, *args)
        assert done.returncode == 0, f"pulumi {' '.join(args)}: {done.stdout}{done.stderr}"
    yield folder, {**env, "PULUMI": str(pulumi_cli)}


def run(cli: Path, folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cli), *args, "--non-interactive", "--cwd", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def cli_read(project: tuple[Path, dict[str, str]], file: Path | None, show_secrets: bool = False) -> CliRead:
    folder, env = project
    args = ["config", "--json", "--stack", STACK]
    if file is not None:
        args += ["--config-file", str(file)]
    if show_secrets:
        args.append("--show-secrets")
    done = run(Path(env["PULUMI"]), folder, env, *args)
    output = f"exit {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"
    if done.returncode != 0:
        return CliRead(False, {}, output)
    listed = json.loads(done.stdout)
    values = {
        key: (entry["secret"], decode_config_value(entry["value"]) if "value" in entry else None)
        for key, entry in listed.items()
    }
    return CliRead(True, values, output)


def ours_read(text: str) -> tuple[dict[str, Any] | None, str]:
    try:
        doc = read_stack_file(STACK, text)
    except ConfigError as err:
        return None, str(err)
    return doc.get("config") or {}, ""


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON type (1 is not 1.0 nor True); NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def has_secure(value: Any) -> bool:
    if isinstance(value, dict):
        return (set(value) == {"secure"} and isinstance(value["secure"], str)) or any(map(has_secure, value.values()))
    return isinstance(value, list) and any(map(has_secure, value))


def verdict(name: str, text: str, cli: CliRead, ours: dict[str, Any] | None, refusal: str) -> tuple[str, str]:
    """("same" | "refused" | "stricter", "") when the two agree as the rules allow, else ("", why)."""
    shown = f"trap {name}:\n--- file ---\n{text[:1500]!r}\n--- CLI ---\n{cli.output}\n--- read_stack_file ---\n"
    shown += refusal if ours is None else repr(ours)[:3000]
    if not cli.ok:
        return ("refused", "") if ours is None else ("", f"the CLI refuses the file, read_stack_file reads it\n{shown}")
    if ours is None:
        reasons = [why for phrase, why in STRICTER.items() if phrase in refusal]
        return (
            ("stricter", "")
            if reasons
            else (
                "",
                f"read_stack_file refuses a file the CLI reads, for no reason docs/configuration.md lists\n{shown}",
            )
        )
    if set(cli.values) != set(ours):
        return "", f"keys differ: CLI {sorted(cli.values)}, ours {sorted(ours)}\n{shown}"
    for key, (secret, value) in cli.values.items():
        if secret:
            if not has_secure(ours[key]):
                return "", f"{key}: a secret to the CLI, not to read_stack_file\n{shown}"
        elif not same(value, ours[key]):
            return "", f"{key}: the CLI gives the program {value!r}, read_stack_file {ours[key]!r}\n{shown}"
    return "same", ""


def trap_files() -> list[tuple[str, Path]]:
    files = sorted(TRAPS_DIR.glob("*.yaml")) if TRAPS_DIR.is_dir() else []
    repository = [ROOT / "Pulumi.dev.yaml", *sorted((ROOT / "examples").rglob("Pulumi.*.yaml"))]
    return [(f"traps/{p.name}", p) for p in files] + [(str(p.relative_to(ROOT)), p) for p in repository]


def test_every_trap_is_read_as_the_cli_reads_it(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    names = [name for name, _, _ in TRAPS]
    assert len(names) == len(set(names))
    failures, counts = [], {"same": 0, "refused": 0, "stricter": 0}
    for index, (name, text, expected) in enumerate(TRAPS):
        file = tmp_path / f"{index:02d}-{name}.yaml"
        file.write_bytes(text.encode())
        ours, refusal = ours_read(file.read_bytes().decode())
        got, why = verdict(name, text, cli_read(project, file), ours, refusal)
        if why:
            failures.append(why)
        elif got != expected:
            failures.append(
                f"trap {name}: expected {expected}, both sides agree on {got}; CLI: "
                f"{cli_read(project, file).output}\nours: {refusal or ours}"
            )
        else:
            counts[got] += 1
    for name, path in trap_files():
        ours, refusal = ours_read(path.read_bytes().decode())
        got, why = verdict(name, path.read_text()[:1500], cli_read(project, path), ours, refusal)
        if why:
            failures.append(why)
        else:
            counts[got] += 1
    assert not failures, f"{len(failures)} traps read differently:\n\n" + "\n\n".join(failures)
    print(f"stack file traps: {counts}")


def test_secrets_stay_secure_mappings_the_cli_decrypts(project: tuple[Path, dict[str, str]]) -> None:
    """Secrets the CLI itself encrypted (a top-level one and nested ones): read_stack_file keeps
    each as {secure: <ciphertext>}; the CLI, decrypting, gives the plaintext in its place."""
    folder, env = project
    cli = Path(env["PULUMI"])
    plaintexts = {"kueue-aks:token": "s3cret", "kueue-aks:obj.inner": "v", "kueue-aks:obj.list[0]": "w"}
    for key, value in plaintexts.items():
        done = run(cli, folder, env, "config", "set", "--stack", STACK, "--secret", "--path", key, value)
        assert done.returncode == 0, done.stderr
    done = run(cli, folder, env, "config", "set", "--stack", STACK, "--path", "kueue-aks:obj.plain", "yes")
    assert done.returncode == 0, done.stderr
    text = (folder / f"Pulumi.{STACK}.yaml").read_text()
    ours, refusal = ours_read(text)
    assert ours is not None, refusal
    listed = cli_read(project, None, show_secrets=True)
    assert listed.ok, listed.output

    assert ours["kueue-aks:token"].keys() == {"secure"} and ours["kueue-aks:token"]["secure"].startswith("v1:")
    assert ours["kueue-aks:obj"]["inner"].keys() == {"secure"} and ours["kueue-aks:obj"]["list"][0].keys() == {"secure"}
    assert ours["kueue-aks:obj"]["plain"] == "yes"
    assert listed.values["kueue-aks:token"] == (True, "s3cret")
    assert listed.values["kueue-aks:obj"] == (True, {"inner": "v", "list": ["w"], "plain": "yes"})
    # Each secure mapping stands where the CLI has a plaintext, and nothing else differs.
    assert same({**ours["kueue-aks:obj"], "inner": "v", "list": ["w"]}, listed.values["kueue-aks:obj"][1])
    assert set(ours) == set(listed.values) == {"kueue-aks:token", "kueue-aks:obj"}
