"""The documentation: README.md is the front door, docs/ holds one page per task.

Checks that the README stays short and keeps the exact test command CI runs, that every docs page
is reachable from the README, that every relative link (and its #anchor) resolves, and that the
configuration reference documents every key Pulumi.yaml declares and every key the program accepts.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from components.config.checks import ConfigError
from components.config.names import CONFIG_PREFIX
from components.config.parse import parse_config, raw_from_stack_file
from testbed.cluster import pattern

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIG_PAGE = DOCS / "configuration.md"
TEST_COMMAND = "python -m pytest -q"  # .ci/run runs exactly this line

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), with an optional "title"; not inside code spans.
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+\1")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but '-' and '_'
    removed, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path.read_text()):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[str]:
    """Every link target in the page's prose (code blocks and code spans do not link)."""
    targets = []
    for line in prose_lines(path.read_text()):
        targets += _LINK.findall(_CODE_SPAN.sub("", line))
    return targets


def is_relative(target: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)  # no scheme: http:, mailto:…


def broken_links(path: Path) -> list[str]:
    problems = []
    for target in links(path):
        if not is_relative(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}: ({target})"
        if ROOT not in dest.parents and dest != ROOT:
            problems.append(f"{where} leaves the repository")
        elif not dest.exists():
            problems.append(f"{where} names no file")
        elif anchor:
            if dest.suffix != ".md":
                problems.append(f"{where} has an anchor into a file that is not Markdown")
            elif anchor not in anchors(dest):
                problems.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    return problems


# --- the keys ---------------------------------------------------------------------------------


def declared_keys() -> dict[str, dict]:
    """Pulumi.yaml's `config:` section: key -> its declaration."""
    return yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]


def keys_from_declarations() -> set[str]:
    """`kueue-aks:<key>` for every declared key, and `<key>.<sub>` for every sub-key of an object
    default (e.g. kueue.version, governance.exemptNamespaces)."""
    keys = set()
    for key, decl in declared_keys().items():
        keys.add(f"{CONFIG_PREFIX}:{key}")
        default = decl.get("default") if isinstance(decl, dict) else None
        if isinstance(default, dict):
            keys.update(f"{key}.{sub}" for sub in default)
    return keys


_UNKNOWN = re.compile(r"unknown key.*; allowed keys: (.*)$")


def keys_the_program_accepts() -> set[str]:
    """Every key path the config model accepts, read from its own "unknown key" messages: one
    unknown key at each level, and the model lists what is allowed there. Lists are `[]`."""
    probe = "zzzNotAKey"
    one = {probe: 1}
    raw = {
        probe: 1,
        "cluster": {**one, "systemPool": dict(one), "existing": dict(one)},
        "nodePools": [dict(one)],
        "teams": [dict(one)],
        "priorityClasses": [dict(one)],
        **{key: dict(one) for key in ("kueue", "topology", "governance", "devicePlugin", "monitoring")},
        "operators": {probe: {}},
        "multiKueue": {**one, "role": "worker", "workers": [dict(one)]},
    }
    with pytest.raises(ConfigError) as err:
        parse_config(raw, stack="docs", location="eastus2")
    operators: list[str] = []
    keys = set()
    for problem in err.value.problems:
        m = _UNKNOWN.search(problem.message)
        if not m:
            continue
        parent = re.sub(r"\[\d+\]", "[]", problem.path.removeprefix(f"{CONFIG_PREFIX}:"))
        parent = parent.removesuffix(probe).rstrip(".")
        allowed = [k.strip() for k in m.group(1).split(",")]
        for k in allowed:
            keys.add(f"{CONFIG_PREFIX}:{k}" if not parent else f"{parent}.{k}")
        if parent == "operators":
            operators = allowed
    # Each operator's own keys: the documentation writes them once, as operators.<op>.<key>.
    raw = {"operators": {op: dict(one) for op in operators}}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, stack="docs", location="eastus2")
    for problem in err.value.problems:
        m = _UNKNOWN.search(problem.message)
        if m and problem.path.startswith(f"{CONFIG_PREFIX}:operators."):
            keys.update(f"operators.<op>.{k.strip()}" for k in m.group(1).split(","))
    return keys


def undocumented(keys: set[str], text: str) -> list[str]:
    """Keys not written as code (`key`, or the start of a code span) in the text."""
    spans = {s.strip("`") for s in re.findall(r"`[^`\n]+`", text)}
    return sorted(k for k in keys if not any(s == k or s.startswith(k + " ") or s.startswith(k + ":") for s in spans))


# --- the tests --------------------------------------------------------------------------------


def test_readme_is_a_front_door() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; keep it under 200 and move detail into docs/"
    # What it is, what you need, then the commands: a newcomer reaches `pulumi up` within 40 lines.
    first = next(i for i, line in enumerate(lines) if line.startswith("```sh")) + 1
    assert first < 40 and "pulumi up" in "\n".join(lines[first : first + 4]), lines[first : first + 4]
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:4] == [
        "## Before you start",
        "## Deploy",
        "## Get credentials and run the first job",
        "## Write your own stack",
    ], headings


def test_readme_has_the_exact_test_command() -> None:
    # As its own line in a code block, as .ci/run runs it.
    text = README.read_text()
    assert re.search(rf"^{re.escape(TEST_COMMAND)}$", text, re.M), (
        f"README.md must show the test command `{TEST_COMMAND}` on a line of its own"
    )


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README) if is_relative(t)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert DOCS.is_dir() and list(DOCS.glob("*.md"))
    assert not missing, f"docs pages the README does not link: {missing}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert not broken_links(page), "\n".join(broken_links(page))


def test_every_declared_key_is_in_the_reference() -> None:
    keys = keys_from_declarations()
    assert f"{CONFIG_PREFIX}:nodePools" in keys and "kueue.version" in keys  # the parse found them
    missing = undocumented(keys, CONFIG_PAGE.read_text())
    assert not missing, f"keys declared in Pulumi.yaml but not in docs/configuration.md: {missing}"


def test_every_accepted_key_is_in_the_reference() -> None:
    keys = keys_the_program_accepts()
    assert {
        "nodePools[].maxCount",
        "cluster.systemPool.vmSize",
        "operators.kuberay",
        "operators.<op>.install",
    } <= keys  # the probe reached every level
    missing = undocumented(keys, CONFIG_PAGE.read_text())
    assert not missing, f"keys the config model accepts but docs/configuration.md does not document: {missing}"


# --- the checks themselves --------------------------------------------------------------------


def test_slugs_follow_github() -> None:
    assert slug("Monitoring: see the queues") == "monitoring-see-the-queues"
    assert slug("CI/CD") == "cicd"
    assert slug("Kueue's webhook at start-up") == "kueues-webhook-at-start-up"
    assert slug("The `kueue.chart` key") == "the-kueuechart-key"
    assert slug("Job operators: every kind runs") == "job-operators-every-kind-runs"


def test_a_broken_link_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "a.md"
    (tmp_path / "docs" / "b.md").write_text("# B\n\n## Two words\n\n```\n# not a heading\n```\n")
    page.write_text(
        "[ok](b.md#two-words) [gone](c.md) [no anchor](b.md#not-a-heading) "
        "[self](#nowhere) [web](https://example.com/x.md) `[code](x.md)`\n"
    )
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert "(c.md) names no file" in problems[0]
    assert "#not-a-heading" in problems[1] and "#nowhere" in problems[2]


def test_an_undocumented_key_is_found() -> None:
    assert undocumented({"kueue.version", "kueue.chart"}, "| `kueue.version` | string |") == ["kueue.chart"]


def test_ci_runs_the_readme_command_with_an_empty_home() -> None:
    """.ci/run ends with the README's command, run with HOME and XDG_CACHE_HOME at new folders,
    and keeps the caches that outlive a run by their own variables."""
    script = (ROOT / ".ci" / "run").read_text()
    lines = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last = lines[-1]
    assert last.endswith(TEST_COMMAND), last
    prefix = dict(part.split("=", 1) for part in last[: -len(TEST_COMMAND)].split())
    assert set(prefix) == {"HOME", "XDG_CACHE_HOME"}, prefix
    assert all(value.startswith('"$scratch/') for value in prefix.values()), prefix
    assert "scratch=$(mktemp -d)" in script
    for kept in ("KUEUE_AKS_E2E_CACHE", "GOMODCACHE", "GOCACHE"):
        assert re.search(rf"^\s*export .*\b{kept}\b", script, re.M), f".ci/run does not keep {kept}"


# --- the batch user's "why is my job waiting" table -------------------------------------------------

# The e2e tier's modules whose string constants are the messages it waits for or is refused with.
E2E_EXPECTATIONS = ("tests/e2e/queues/test_waiting.py", "testbed/access.py")
PLACEHOLDER = re.compile(r"<[^<>]+>|\{\w+\}")


def e2e_messages() -> list[str]:
    """The messages the e2e tier expects: its modules' string constants, `{placeholders}` kept."""
    out = []
    for name in E2E_EXPECTATIONS:
        tree = ast.parse((ROOT / name).read_text())
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                out.append(node.value.value)
    return out


def waiting_table_messages() -> list[str]:
    """Every quoted message in the first column of docs/batch-users.md's "why is my job waiting" table."""
    text = (DOCS / "batch-users.md").read_text()
    section = text.split("## Why is my job waiting", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what you see")]
    quoted = [q for row in rows for q in re.findall(r"`([^`]+)`", row.split(" | ")[0])]
    return [q for q in quoted if " " in q and not q.startswith("kubectl ")]  # messages, not commands or one word


def expected_by_e2e(message: str, expected: list[str]) -> bool:
    """Whether a quoted message (`<…>` where it differs, `…` where it is cut) is one the e2e tier
    expects: a constant's template matches it whole, or a constant holds every fixed part of it."""
    filled = PLACEHOLDER.sub("X", message)
    if any(pattern(template).fullmatch(filled) for template in expected):
        return True
    parts = [p.strip() for p in PLACEHOLDER.sub("…", message).split("…") if len(p.strip()) >= 8]
    return bool(parts) and any(all(part in PLACEHOLDER.sub("…", t) for part in parts) for t in expected)


def test_every_message_of_the_waiting_table_is_one_the_e2e_tier_saw() -> None:
    messages = waiting_table_messages()
    assert len(messages) >= 12, messages
    expected = e2e_messages()
    unseen = [m for m in messages if not expected_by_e2e(m, expected)]
    assert not unseen, f"docs/batch-users.md quotes messages no constant of {E2E_EXPECTATIONS} expects: {unseen}"


def test_the_waiting_table_check_can_fail() -> None:
    expected = ["insufficient unused quota for {resource} in flavor {flavor}, {amount} more needed"]
    assert expected_by_e2e("insufficient unused quota for <resource> in flavor gpu, 1 more needed", expected)
    assert not expected_by_e2e("insufficient quota for <resource> in flavor gpu", expected)
    assert not expected_by_e2e("the job is waiting for a node to be added", expected)


# --- pointers into the docs from code, stack files and workflows -------------------------------------

POINTER_FILES = ("*.py", "*.yaml", "*.yml", "*.sh", "*.md", "run")
_README_SECTION = re.compile(r"""README(?:'s)? ["“]([^"”]+)["”]""")
_DOCS_PAGE = re.compile(r"\bdocs/([a-z0-9-]+\.md)(?:#([a-z0-9_-]+))?")


def pointer_files() -> list[Path]:
    skip = {"venv", ".venv", ".git", "node_modules", "__pycache__", ".hypothesis"}
    found = {
        p
        for pattern in POINTER_FILES
        for p in ROOT.rglob(pattern)
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
    }
    return sorted(found - {Path(__file__).resolve()})  # this file's own examples point nowhere


def broken_pointers(files: list[Path], root: Path) -> list[str]:
    """`README "Section"` that names no README heading, and `docs/page.md#anchor` that names no
    page or no heading, wherever code, a stack file, a workflow or a page says them."""
    readme = anchors(root / "README.md")
    problems = []
    for path in files:
        text = path.read_text(errors="replace")
        where = path.relative_to(root)
        for section in _README_SECTION.findall(text):
            if slug(section) not in readme:
                problems.append(f'{where}: README "{section}" is no section of README.md')
        for page, anchor in _DOCS_PAGE.findall(text):
            dest = root / "docs" / page
            if not dest.exists():
                problems.append(f"{where}: docs/{page} does not exist")
            elif anchor and anchor not in anchors(dest):
                problems.append(f"{where}: docs/{page} has no heading #{anchor}")
    return problems


def test_every_pointer_into_readme_and_docs_resolves() -> None:
    files = pointer_files()
    assert any(p.name == "__main__.py" for p in files) and any(p.suffix == ".yml" for p in files), files[:5]
    problems = broken_pointers(files, ROOT)
    assert not problems, "\n".join(problems)


def test_a_broken_pointer_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# X\n\n## Deploy\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Tear down\n")
    code = tmp_path / "m.py"
    code.write_text('# README "Deploy", README "Monitoring", docs/a.md#tear-down, docs/a.md#gone, docs/b.md\n')
    problems = broken_pointers([code], tmp_path)
    assert problems == [
        'm.py: README "Monitoring" is no section of README.md',
        "m.py: docs/a.md has no heading #gone",
        "m.py: docs/b.md does not exist",
    ], problems


def test_the_readmes_own_stack_is_a_valid_config() -> None:
    """The minimal stack README shows a newcomer parses as it stands, with the program's model."""
    section = README.read_text().split("## Write your own stack", 1)[1]
    block = section.split("```yaml", 1)[1].split("```", 1)[0]
    raw, location = raw_from_stack_file(yaml.safe_load(block))
    parsed = parse_config(raw, stack="ml", location=location)
    assert [p.name for p in parsed.node_pools] == ["cpu", "a100"] and parsed.has_gpu
    assert [t.name for t in parsed.teams] == ["vision", "speech"]
