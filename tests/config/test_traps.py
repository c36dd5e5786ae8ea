"""The adversarial stack files of tests/config/traps/ (issue 59: no bad input gets through).

Each trap is a whole `Pulumi.<stack>.yaml` whose first comment lines say what the plan must make
of it: `# expect: refused <key path>` (a Problem at that path; several lines, several paths),
`# expect: refused Pulumi.trap.yaml line <n>` (the stack file refused, naming line n) or
`# expect: accepted` (it parses, and its Kueue objects build); then `# why:` names the trap.
Every problem of every trap must read as a message for a person: short, at a location, with no
Python exception in it. tests/e2e/engine/test_stack_file_cli.py hands the same files to the real
Pulumi CLI, so each stays a file the CLI can be given.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.config.checks import ConfigError, Problem
from components.config.parse import parse_config
from components.config.refusals import MINIMAL
from components.plan import parse_stack
from testbed.config_errors import refused
from testbed.traps import MAX_MESSAGE, STACK, STACK_FILE, TRAPS_DIR, build, problem_faults

MAX_TRAP_BYTES = 8 * 1024  # traps stay small; the huge ones are generated below

_EXPECT = re.compile(r"# expect: (?:(accepted)|refused (\S+)(?: line (\d+))?)\s*")


@dataclass(frozen=True)
class Expectation:
    accepted: bool
    refused: tuple[tuple[str, int | None], ...]  # (path, the line its message must name)
    why: str


def expectation(text: str) -> Expectation:
    """The `# expect:` and `# why:` lines a trap starts with (a leading BOM aside)."""
    accepted, refused, why = False, [], ""
    for line in text.lstrip("\ufeff").splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("# why:"):
            why = line.removeprefix("# why:").strip()
            continue
        found = _EXPECT.fullmatch(line)
        if line.startswith("# expect:") and found is None:
            raise AssertionError(f"unreadable expect line: {line!r}")
        if found is not None:
            if found[1]:
                accepted = True
            else:
                refused.append((found[2], int(found[3]) if found[3] else None))
    return Expectation(accepted, tuple(refused), why)


def trap_files() -> list[Path]:
    return sorted(TRAPS_DIR.glob("*.yaml"))


@pytest.mark.parametrize("path", trap_files(), ids=lambda p: p.stem)
def test_each_trap_is_refused_or_accepted_as_it_says(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    want = expectation(text)
    assert want.accepted or want.refused, f"{path.name} has no `# expect:` line"
    assert not (want.accepted and want.refused), f"{path.name} expects both"
    assert want.why, f"{path.name} has no `# why:` line"
    if want.accepted:
        try:
            config = parse_stack(STACK, text)
        except ConfigError as err:
            pytest.fail(f"{path.name} must be accepted ({want.why}); refused:\n{err}")
        build(config)
        return
    with pytest.raises(ConfigError) as err:
        parse_stack(STACK, text)
    problems = err.value.problems
    listed = "\n".join(f"  {p}"[:300] for p in problems)
    for where, line in want.refused:
        at = [p for p in problems if p.path == where]
        assert at, f"{path.name} ({want.why}): no problem at {where}; got:\n{listed}"
        if line is not None:
            assert any(re.search(rf"\bline {line}\b", p.message) for p in at), (
                f"{path.name}: no problem at {where} names line {line}; got:\n{listed}"
            )
    assert not problem_faults(problems), problem_faults(problems)


# The classes of trap issue 59 names, each with the traps that must stay in the corpus: deleting
# one fails here, not silently.
REQUIRED: dict[str, tuple[str, ...]] = {
    "empty values": (
        "share-empty",
        "max-count-empty",
        "team-name-empty",
        "priority-class-value-empty",
        "section-empty-teams",
        "section-empty-governance",
    ),
    "invisible characters": (
        "team-name-trailing-newline",
        "team-name-zero-width-space",
        "team-name-rtl-mark",
        "team-name-nbsp",
        "pool-name-trailing-newline",
        "cluster-name-trailing-newline",
        "member-guid-trailing-newline",
        "image-repository-trailing-newline",
        "taint-value-trailing-newline",
        "duration-trailing-newline",
        "multikueue-server-trailing-newline",
    ),
    "yaml": (
        "spot-yes",
        "spot-on",
        "governance-enforce-no",
        "max-count-sexagesimal",
        "max-count-octal-accepted",
        "max-count-exponent-accepted",
        "max-count-thirty-digits",
        "share-nan",
        "share-inf",
        "duplicate-key-top-level",
        "duplicate-key-in-team",
        "anchor-and-alias",
        "alias-bomb",
        "merge-key",
        "explicit-tag-str",
        "second-document",
        "tab-indentation",
    ),
    "precision and scale": (
        "shares-three-thirds-accepted",
        "share-tiny",
        "share-eleven-decimals",
        "share-over-100",
        "capacity-cpu-ten-to-the-twenty",
        "kubernetes-version-1-99",
    ),
    "reserved names": (
        "team-named-kubeflow",
        "team-named-kuberay-system",
        "team-named-kueue-system",
        "team-named-default",
        "team-named-kube-system",
        "taint-governance-key",
        "node-label-kubernetes-io",
        "node-label-k8s-io",
    ),
    "identity": ("member-guid-twice-case", "member-guid-braces"),
    "impossible": ("gpu-capacity-on-cpu-size",),
    "near-miss namespaces": ("namespace-kueue-ask", "namespace-capital-kueue-aks", "namespace-kueue"),
    "zones": ("zones-unquoted", "realistic-quoted-zones-accepted"),
    "credentials": (
        "kueue-chart-userinfo",
        "operator-chart-userinfo",
        "device-plugin-chart-userinfo",
        "image-repository-userinfo",
        "kueue-chart-bare-https",
        "kubeconfig-plaintext-token",
        "kubeconfig-plaintext-password",
        "kubeconfig-plaintext-client-key",
        "kubeconfig-exec-kubelogin-accepted",
    ),
    "realistic": ("realistic-three-teams-accepted", "realistic-spot-pool-accepted"),
    # Found while writing this corpus: each crashed the plan, hung it, or got through.
    "found": (
        "capacity-cpu-huge-exponent",
        "capacity-memory-huge-exponent",
        "json-text-section-nan",
        "duration-past-go-range",
        "merge-key",
    ),
}


def test_the_corpus_covers_every_class_of_trap() -> None:
    files = {p.stem: p for p in trap_files()}
    missing = [f"{kind}: {name}" for kind, names in REQUIRED.items() for name in names if name not in files]
    assert not missing, f"traps missing from {TRAPS_DIR}: {missing}"
    assert len(files) >= 60, f"only {len(files)} traps"
    accepted = [n for n, p in files.items() if expectation(p.read_text(encoding="utf-8")).accepted]
    # A name says what the file must do: the accepted ones end in -accepted, and only they.
    assert sorted(accepted) == sorted(n for n in files if n.endswith("-accepted"))
    assert len(accepted) >= 5


def test_every_trap_is_a_small_kebab_case_stack_file() -> None:
    for path in trap_files():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", path.stem), path.name
        data = path.read_bytes()
        assert len(data) <= MAX_TRAP_BYTES, f"{path.name}: {len(data)} bytes; generate large inputs in a test"
        text = data.decode("utf-8")
        assert re.search(r"^config:$", text, re.M), f"{path.name} has no top-level config: map"


def test_a_header_without_expect_is_refused_by_the_reader() -> None:
    # The guard above cannot pass a file without `# expect:`: its expectation is empty.
    want = expectation("# why: nothing said\nconfig: {}\n")
    assert not want.accepted and not want.refused
    with pytest.raises(AssertionError):
        expectation("# expect: refsued kueue-aks:teams\n")


def test_the_location_check_flags_what_it_must() -> None:
    # problem_faults itself can fail: each kind of bad problem is caught.
    bad = [
        Problem(STACK_FILE, "is not YAML"),
        Problem("teams[0]", "is empty"),
        Problem("kueue-aks:teams", "x" * MAX_MESSAGE),
        Problem("kueue-aks:teams", "KeyError: 'share'"),
        Problem("kueue-aks:teams.<object object at 0x7f0>", "is given twice"),
    ]
    assert len(problem_faults(bad)) == len(bad)
    assert not problem_faults([Problem(STACK_FILE, "line 3, kueue-aks:teams: is given twice"), Problem("a:b", "ok")])


# --- values too large to keep as files -----------------------------------------------------------


def _stack_with_team_name(name: str) -> str:
    return (
        "config:\n  azure-native:location: eastus2\n  kueue-aks:nodePools:\n    - name: cpu\n"
        "      vmSize: Standard_D8s_v5\n      maxCount: 2\n  kueue-aks:teams:\n"
        f'    - name: "{name}"\n      share: 100\n'
    )


def _refused_quickly(text: str) -> tuple[Problem, ...]:
    started = time.perf_counter()
    problems = refused(parse_stack, STACK, text)
    assert time.perf_counter() - started < 5
    assert not problem_faults(problems), problem_faults(problems)
    return problems


def test_a_ten_megabyte_value_is_refused_with_a_short_message() -> None:
    problems = _refused_quickly(_stack_with_team_name("r" * 10_000_000))
    assert [p.path for p in problems] == [STACK_FILE]
    assert len(str(ConfigError(problems))) < 1000


def test_a_three_megabyte_team_name_is_refused_at_its_key_briefly() -> None:
    # Under the stack file's bound: the key's own check names it, quoting at most 80 characters.
    problems = _refused_quickly(_stack_with_team_name("r" * 3_000_000))
    assert "kueue-aks:teams[0].name" in [p.path for p in problems]
    assert len(str(ConfigError(problems))) < 2000


def test_a_ten_megabyte_value_given_to_the_parser_is_quoted_briefly() -> None:
    # The program's path: Pulumi hands the value over with no file bound in between.
    for field, value in (("name", "r" * 10_000_000), ("share", "9" * 10_000_000)):
        raw = {**MINIMAL, "teams": [{"name": "research", "share": 100, field: value}]}
        with pytest.raises(ConfigError) as err:
            parse_config(raw, stack=STACK, location="eastus2")
        assert f"kueue-aks:teams[0].{field}" in [p.path for p in err.value.problems]
        assert not problem_faults(err.value.problems), problem_faults(err.value.problems)
