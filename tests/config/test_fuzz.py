"""Fuzzing the config (issue 59: no bad input gets through, and none crashes the plan).

Two generators, each allowed only two outcomes: a StackConfig (whose Kueue objects then build), or
a ConfigError whose every problem names its location (a key path, or the stack file with a line)
in a short message with nothing of Python's in it. Anything else (an exception, a hang, a blown
heap) fails with the input that caused it.

(a) structured configs generated from the config's one description (components/config/keys.py:
    SECTIONS and their Keys), values of the right kind and the wrong one, given to parse_config;
(b) the repository's real stack files with lines deleted, repeated, swapped, re-indented and YAML
    indicators, tabs and byte order marks inserted, given to parse_stack as text.

Reproducible and hermetic: derandomized, no example database. Bounded: a deadline per example, a
wall-clock and a tracemalloc peak check around each call, and max_examples set so the file runs in
a few seconds on two cores.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from components.config.checks import ConfigError
from components.config.keys import SECTIONS, Key
from components.config.kueue import DEFAULT_FRAMEWORKS
from components.config.names import CONFIG_PREFIX
from components.config.parse import parse_config
from components.config.refusals import MINIMAL
from components.config.stack import StackConfig
from components.facts.capacity import CATALOG
from components.k8s.quantity import QUANTITY_PATTERN
from components.plan import parse_stack
from testbed.config_errors import refused
from testbed.harness import ROOT
from testbed.traps import TRAPS_DIR, build, problem_faults

STACK = "t"
SECONDS = 2.0  # per example, parsing and building included
PEAK_BYTES = 256 * 2**20  # per example, as tracemalloc counts Python's allocations

FUZZ = settings(
    derandomize=True,  # the same examples on every run and machine
    database=None,  # nothing written outside the temporary folders
    deadline=timedelta(seconds=SECONDS),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def outcome(call: Callable[[], StackConfig], stack_file: str) -> str:
    """Run one parse under the bounds; 'accepted' or 'refused', or fail the example."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        config = call()
        build(config)
        verdict = "accepted"
    except ConfigError as err:
        faults = problem_faults(err.problems, stack_file)
        assert not faults, faults
        assert err.problems, "a ConfigError that lists no problem"
        verdict = "refused"
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert elapsed < SECONDS, f"took {elapsed:.1f} s"
    assert peak < PEAK_BYTES, f"allocated {peak / 2**20:.0f} MiB at its peak"
    return verdict


# --- (a) structured configs from the key description -------------------------------------------

# Characters that make two strings look alike or break a line, each a trap somewhere.
ODD_CHARACTERS = (
    "\n",
    "\r",
    "\t",
    "\x00",
    "\x1b",
    "\x7f",
    "\u0085",
    "\u00a0",
    "\u00ad",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u202e",
    "\u2028",
    "\u2066",
    "\ufeff",
    "\ud800",
    "\U000e0041",
    "\uffff",
)
ODD_STRINGS = (
    "",
    " ",
    "yes",
    "no",
    "on",
    "off",
    "true",
    "null",
    "~",
    "1:30",
    "0o10",
    "1e3",
    ".nan",
    "-.inf",
    "unlimited",
    "Unlimited",
    "NaN",
    "Infinity",
    "1e-9",
    "33.33333333333",
    "1.99",
    "1.3",
    "0",
    "-0",
    "https://",
    "oci://",
    "https://user:token@charts.example.com/kueue",
    "user:token@mirror.example.com/x",
    "kueue-aks.io/queued=false:NoSchedule",
    "kubernetes.io/role",
    "{00000000-0000-0000-0000-000000000000}",
    "00000000-0000-0000-0000-00000000000A",
    "kubeflow",
    "kube-system",
    "default",
    "kueue-system",
    "system:authenticated",
    "a" * 64,
    "r" * 5000,
    "../../etc/passwd",
    "%s%n{0}",
    "\\u0000",
    "<<",
    "&a",
    "*a",
)
# Numbers Decimal, float and int disagree about, and the ends of every range.
ODD_NUMBERS: tuple[int | float, ...] = (
    0,
    -1,
    1,
    2,
    100,
    101,
    1000,
    1001,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**53 + 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**20,
    10**30,
    10**4000,
    0.0,
    -0.0,
    0.01,
    0.009,
    1e-9,
    1e-300,
    5e-324,
    1e16 + 1,
    0.1 + 0.2,
    1e308,
    33.3333333333,
    33.33333333333,
    99.99999999999999,
    100.00000000000001,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
)

odd_text = st.one_of(
    st.sampled_from(ODD_STRINGS),
    st.text(max_size=12),
    st.builds(
        lambda a, c, b: a + c + b,
        st.sampled_from(("research", "cpu", "15m", "eastus2", "0d3c9a51-7a6e-4c43-9bd4-3a0f1c0e5a11", "")),
        st.sampled_from(ODD_CHARACTERS),
        st.sampled_from(("", "x", "\n")),
    ),
)
odd_number = st.one_of(st.sampled_from(ODD_NUMBERS), st.integers(), st.floats())
scalar_junk = st.one_of(st.none(), st.booleans(), odd_number, odd_text)
# Lists and objects of junk, a few levels deep: what a mistyped section holds.
junk = st.recursive(
    scalar_junk,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(st.sampled_from(("name", "share", "secure", "")), st.text(max_size=6)), inner, max_size=3
        ),
    ),
    max_leaves=8,
)

GUIDS = st.uuids().map(str) | st.uuids().map(lambda u: str(u).upper())
# Kubernetes quantities as the CRDs' pattern allows them, exponents past decimal's range among them.
QUANTITIES = st.one_of(
    st.from_regex(QUANTITY_PATTERN),
    st.sampled_from(("1e999999", "9E999999", "1e-999999", ".5e99999999", "1e400", "+1Gi", "0", "-1")),
    st.sampled_from((math.nan, math.inf, -math.inf, 1e308, 5e-324, 10**4000)),
)
# Good values where the key's pattern alone does not make one (or would make only odd ones).
GOOD: dict[str, SearchStrategy[Any]] = {
    "cluster.systemPool.vmSize": st.sampled_from(("Standard_D4s_v5", "Standard_D8s_v5", "Standard_NC4as_T4_v3")),
    "cluster.name": st.sampled_from(("batch", "kueue-dev", "a")),
    "nodePools[].name": st.sampled_from(("cpu", "gpu", "tas", "spot")),
    "nodePools[].vmSize": st.sampled_from((*sorted(CATALOG)[::7], "Standard_X1", "standard_d8s_v5")),
    "nodePools[].taints[]": st.sampled_from(
        (
            "dedicated=batch:NoSchedule",
            "nvidia.com/gpu=present:NoSchedule",
            "kueue-aks.io/queued=true:NoSchedule",
            "kueue-aks.io/queued=false:NoSchedule",
            "a=b:Bogus",
            "=:",
            "x:NoExecute",
        )
    ),
    "nodePools[].labels": st.dictionaries(
        st.sampled_from(("workload", "kubernetes.io/role", "example.com/tier", "node.kubernetes.io/x", "")),
        st.sampled_from(("batch", "", "a" * 64, "x y")) | odd_text,
        max_size=2,
    ),
    "nodePools[].capacity.cpu": QUANTITIES | st.sampled_from(("24", "0.5", "100000000000000000000", "Ki", 16, 0)),
    "nodePools[].capacity.memory": QUANTITIES | st.sampled_from(("220Gi", "64Gi", "1Ei", "-1Gi", 68719476736)),
    "kueue.version": st.sampled_from(("0.19.2", "0.13.4", "9.9.9", "0.19.2-rc.0")),
    "kueue.frameworks[]": st.sampled_from(
        (
            *DEFAULT_FRAMEWORKS,
            "bogus/kind",
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "sparkoperator.k8s.io/sparkapplication",
            "pod",
            "deployment",
        )
    ),
    "kueue.featureGates": st.dictionaries(
        st.sampled_from(("TopologyAwareScheduling", "LocalQueueMetrics", "VisibilityOnDemand", "Bogus")),
        st.booleans(),
        max_size=3,
    ),
    "kueue.chart": st.sampled_from(
        (
            "oci://registry.k8s.io/kueue/charts/kueue",
            "https://charts.example.com/kueue",
            "./charts/kueue.tgz",
            "https://user:token@charts.example.com/kueue",
            "https://",
            "ftp://x/y",
        )
    ),
    "teams[].name": st.sampled_from(("research", "platform", "vision", "kubeflow", "default", "Research"))
    | st.from_regex(r"[a-z]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True),
    "teams[].pools[]": st.sampled_from(("cpu", "gpu", "tas", "nope")),
    "teams[].members[]": GUIDS | st.sampled_from(("ml-researchers", "system:masters")),
    "priorityClasses[].name": st.sampled_from(("high", "normal", "low", "urgent", "High")),
    "topology.levels[]": st.sampled_from(("topology.kubernetes.io/zone", "kubernetes.io/hostname", "bad label")),
    "governance.exemptNamespaces[]": st.sampled_from(("monitoring", "research", "kube-system", "Bad")),
    "cluster.adminGroupObjectIds[]": GUIDS,
    "monitoring.grafanaAdminGroupObjectIds[]": GUIDS,
    "multiKueue.workers[].name": st.sampled_from(("westus3", "swedencentral", "West")),
}
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://k.example.com:6443'}\n"
    "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {%s}\n"
)
BY_KIND: dict[str, SearchStrategy[Any]] = {
    "quantity": QUANTITIES,
    "kubeconfig": st.sampled_from(
        (
            KUBECONFIG % "exec: {command: kubelogin, apiVersion: client.authentication.k8s.io/v1beta1}",
            KUBECONFIG % "token: abc",
            "clusters: [",
            "clusters: []",
            {"secure": "v1:AAAA"},
        )
    ),
    "secret": st.sampled_from(({"secure": "v1:AAAA"}, "hunter2")),
}
MAX_ITEMS = 3  # per list: teams, pools, members...


def good(key: Key, path: str) -> SearchStrategy[Any]:
    """A value of the key's kind, mostly within its bounds (its items and keys any value)."""
    if path in GOOD:
        return GOOD[path]
    kind = key.kind
    if kind == "string":
        if key.enum:
            return st.sampled_from(key.enum)
        if key.pattern:
            return st.from_regex(key.pattern, fullmatch=True).filter(lambda s: len(s) <= key.max_length)
        return st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
    if kind == "integer":
        lo, hi = int(key.minimum or 0), int(key.maximum or 0)
        return st.integers(lo, hi) | st.sampled_from((lo, hi))
    if kind == "number":
        lo = float(key.minimum) if key.minimum is not None else None
        hi = float(key.maximum) if key.maximum is not None else None
        decimals = st.decimals(key.minimum, key.maximum, places=key.decimals or 0, allow_nan=False)
        numbers = st.floats(lo, hi) | st.integers(math.ceil(lo or 0), int(hi or 100)) | decimals.map(float)
        return numbers | st.sampled_from(key.words) if key.words else numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        item = key.items
        items = value(item, f"{path}[]") if item is not None else junk
        return st.lists(
            items, min_size=min(key.min_items, MAX_ITEMS), max_size=min(key.max_items or MAX_ITEMS, MAX_ITEMS)
        )
    if kind == "object":
        required = {k.name: value(k, f"{path}.{k.name}") for k in key.keys if k.required is not None}
        optional = {k.name: value(k, f"{path}.{k.name}") for k in key.keys if k.required is None}
        # Now and then an unknown key beside the known ones (a typo such as `shares:`).
        unknown = st.dictionaries(st.sampled_from(("shares", "nam", "Name", "x")), scalar_junk, max_size=1)
        return st.builds(lambda a, b: {**b, **a}, st.fixed_dictionaries(required, optional=optional), unknown)
    if kind == "map":
        values = value(key.values, f"{path}.*") if key.values is not None else junk
        return st.dictionaries(st.text(max_size=12), values, max_size=2)
    return BY_KIND.get(kind, junk)


def value(key: Key, path: str) -> SearchStrategy[Any]:
    """The key's value: usually a good one, sometimes empty, odd or of another kind altogether."""
    return st.deferred(lambda: st.one_of(good(key, path), good(key, path), good(key, path), st.none(), junk))


def _pool(**fields: Any) -> dict[str, Any]:
    return {**MINIMAL, "nodePools": [{"name": "cpu", "vmSize": "Standard_X1", "maxCount": 2, **fields}]}


def _manager(**fields: Any) -> dict[str, Any]:
    workers = [{"name": "westus3", "stack": "organization/kueue-aks/batch-westus3"}]
    return {"teams": [{"name": "research"}], "multiKueue": {"role": "manager", "workers": workers, **fields}}


SHORT = {k.name.split(":", 1)[1]: k for k in SECTIONS}
sections = st.fixed_dictionaries({}, optional={name: value(k, name) for name, k in SHORT.items()})
# Over the smallest valid stack half the time, so the later rules (and the objects) are reached.
raw_configs = st.one_of(
    sections,
    sections.map(lambda s: {**MINIMAL, **s}),
    st.dictionaries(st.sampled_from((*SHORT, "team", "nodepools", "")), junk, max_size=3),
)
locations = st.sampled_from(("eastus2", "westus3", None, "", "eastus2\n", "EastUS2", "mars", 5))
other_keys = st.lists(
    st.sampled_from(("kueue-ask:cluster", "Kueue-aks:teams", "kueue:teams", "azure-native:location", "aws:region"))
    | st.text(max_size=10),
    max_size=2,
)


@settings(FUZZ, max_examples=300)
@given(raw=raw_configs, location=locations, others=other_keys)
@example(raw={**MINIMAL, "teams": [{"name": "research", "share": 10**4000}]}, location="eastus2", others=[])
@example(raw={**MINIMAL, "teams": [{"name": "\ud800", "share": math.nan}]}, location="eastus2", others=[])
# Found by probing (each raised, or ran for a minute): quantities past decimal's range, NaN, a duration
# past Go's, a kubeconfig nested as deep as libyaml allows.
@example(raw=_pool(capacity={"cpu": "1e999999", "memory": "64Gi"}), location="eastus2", others=[])
@example(raw=_pool(capacity={"cpu": "8", "memory": "1e999999"}), location="eastus2", others=[])
@example(raw=_pool(capacity={"cpu": math.nan, "memory": math.inf}), location="eastus2", others=[])
@example(raw=_manager(workerLostTimeout="999999999h"), location="eastus2", others=[])
@example(raw={**MINIMAL, "cluster": {"kubeconfig": "x: " + "[" * 999 + "]" * 999}}, location=None, others=[])
@example(raw={**MINIMAL, "cluster": {"kubeconfig": "clusters: \ud800"}}, location=None, others=[])  # JSON text's \ud800
def test_any_structured_config_is_parsed_or_refused_at_its_keys(
    raw: dict[str, Any], location: Any, others: list[str]
) -> None:
    outcome(lambda: parse_config(raw, stack=STACK, location=location, other_keys=others), f"Pulumi.{STACK}.yaml")


def test_the_structured_fuzz_reaches_both_outcomes() -> None:
    # The generator is worth little if it never gets a config through, or never a wrong one.
    seen: set[str] = set()

    @settings(FUZZ, max_examples=150)
    @given(raw=sections.map(lambda s: {**MINIMAL, **s}))
    def run(raw: dict[str, Any]) -> None:
        seen.add(outcome(lambda: parse_config(raw, stack=STACK, location="eastus2"), f"Pulumi.{STACK}.yaml"))

    run()
    assert seen == {"accepted", "refused"}


# --- (b) mutated stack-file text -------------------------------------------------------------------

STACK_FILES = tuple(
    p.read_text(encoding="utf-8")
    for p in (ROOT / "Pulumi.dev.yaml", *sorted((ROOT / "examples").rglob("Pulumi.*.yaml")))
)
# The real stack files first (the @examples name them by index), then every trap.
SEEDS = STACK_FILES + tuple(p.read_text(encoding="utf-8") for p in sorted(TRAPS_DIR.glob("*.yaml")))
TOKENS = (
    "&a ",
    "*a",
    "<<: *a",
    "<<: ",
    "!!str ",
    "!!binary ",
    "!custom ",
    "? ",
    ": ",
    "- ",
    "[",
    "{",
    "]",
    "}",
    ",",
    "%YAML 1.1",
    "%TAG ! tag:x,2000:",
    "---",
    "...",
    "|",
    "|-",
    ">",
    "#",
    '"',
    "'",
    "\\",
    "\t",
    "\ufeff",
    "\u200b",
    "\x00",
    "\r",
    "\x85",
    "\u2028",
    "~",
    "null",
    ".nan",
    ".inf",
    "1e400",
    "0x",
    "0o",
    "1:30",
    "@",
    "`",
    "!",
    "&a [*a, *a]",
    "yes",
    "2001-12-14 21:59:43.10 -5",
    "kueue-aks:",
    "config:",
    "secure: v1:x",
    "  ",
    "\n",
)
OPS = ("delete", "duplicate", "swap", "insert", "tab", "indent", "dedent", "bom", "join", "cut", "text")


def mutate(text: str, ops: list[tuple[str, int, int, str]]) -> str:
    """The text with each operation applied, positions taken modulo its current size."""
    lines = text.split("\n")
    for op, a, b, token in ops:
        i, j = a % len(lines), b % len(lines)
        line = lines[i]
        at = b % (len(line) + 1)
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            lines[i] = line[:at] + token + line[at:]
        elif op == "tab":
            lines[i] = line[:at] + "\t" + line[at:]
        elif op == "indent":
            lines[i] = " " * (b % 5 + 1) + line
        elif op == "dedent":
            lines[i] = line[min(b % 5 + 1, len(line) - len(line.lstrip(" "))) :]
        elif op == "bom":
            lines[i] = "\ufeff" + line
        elif op == "join" and i + 1 < len(lines):
            lines[i : i + 2] = [line + lines[i + 1]]
        elif op == "cut":
            lines[i] = line[:at]
        elif op == "text":
            lines[i] = line[:at] + token + line[at:]
    return "\n".join(lines)


operations = st.lists(
    st.tuples(
        st.sampled_from(OPS),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.sampled_from(TOKENS) | st.text(max_size=4),
    ),
    min_size=1,
    max_size=6,
)


@settings(FUZZ, max_examples=500)
@given(seed=st.integers(0, len(SEEDS) - 1), ops=operations)
@example(seed=0, ops=[("insert", 16, 4, "&a "), ("insert", 17, 4, "<<: *a")])  # a merge key's value's path
@example(seed=0, ops=[("insert", 30, 6, "? [a]\n      : "), ("duplicate", 31, 0, "")])  # a list as a key
def test_any_mutated_stack_file_is_parsed_or_refused_at_a_line(seed: int, ops: list[tuple[str, int, int, str]]) -> None:
    text = mutate(SEEDS[seed], ops)
    outcome(lambda: parse_stack(STACK, text), f"Pulumi.{STACK}.yaml")


def test_the_seeds_parse_unmutated() -> None:
    # Else every mutation is refused for a reason the fuzz never sees.
    assert len(STACK_FILES) >= 3
    for text in STACK_FILES:
        assert outcome(lambda: parse_stack(STACK, text), f"Pulumi.{STACK}.yaml") == "accepted"


# --- what the fuzz found, kept as cases ----------------------------------------------------------


def test_a_merged_value_is_named_by_its_key_not_an_object_repr() -> None:
    # stackfile._Frame.child_path named the value of a refused `<<` key by the repr of a sentinel.
    got = refused(parse_stack, STACK, "config:\n  kueue-aks:x:\n    - &t\n      a: 1\n    - <<: *t\n      b: 2\n").lines
    assert any(f"line 5, {CONFIG_PREFIX}:x[1].<<: the alias *t" in p for p in got), got
    assert not any("object at 0x" in p for p in got), got


def test_a_list_as_a_key_leaves_its_value_paired_with_it() -> None:
    # A refused `? [a]` key used to be taken for a value, so its value became the next key and the
    # rest of the mapping was read one off (`share` a value, `1` a key that is "not a string").
    got = refused(parse_stack, STACK, "config:\n  kueue-aks:x:\n    ? [a]\n    : share\n    share: 1\n").lines
    assert len(got) == 1 and "a mapping or a list as a key" in got[0], got
