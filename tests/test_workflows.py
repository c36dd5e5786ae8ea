"""GitHub Actions workflows (.github/workflows/): schema-valid and shaped as docs/ci-cd.md says.

Every workflow file is validated offline against the GitHub workflow JSON schema that
check-jsonschema vendors (SchemaStore's github-workflow.json), then the pieces the CI/CD design
relies on are asserted one by one: triggers, least-privilege permissions, preview on pull
requests and up on main, OIDC login with names from repository variables, the azblob backend and
the Key Vault secrets provider, the fork guard, the deployment environment and its
never-cancelling concurrency, kubelogin only for stacks without local accounts, pinned actions
and no secret in plain text. The two small shell steps (stack list, kubelogin check) are run for
real against stack files: the matrix holds the stacks .github/stacks.txt lists, not every stack
file. The e2e job is checked against what the tier does (where it caches its binaries and what
their keys hash, the port it binds, where it writes measurements and logs), and both workflows
pass actionlint (built from its pinned Go module) with shellcheck.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import shlex
import subprocess
import sys
from glob import glob
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from testbed import actionlint as lint
from testbed import binaries, control_planes, measurements
from testbed.git import git
from testbed.harness import ROOT
from testbed.paths import DEFAULT_SHARED, SHARED_ENV, missing_shared
from components.plan import main as plan_main
from components.kueue import crds as kueue_crds
from components.kueue.validate import CRDS_ENV
from tools.fetch_reference import build_parser

WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.y*ml"))

FORK_GUARD = "github.event.pull_request.head.repo.full_name == github.repository"
ALLOWED_SCOPES = {"contents": "read", "pull-requests": "write", "id-token": "write"}
VAR = r"\$\{\{ vars\.[A-Z][A-Z0-9_]* \}\}"  # a repository variable, the only source of names
CLOUD_URL = re.compile(rf"^azblob://{VAR}\?storage_account={VAR}$")
SECRETS_PROVIDER = re.compile(rf"^azurekeyvault://{VAR}\.vault\.azure\.net/keys/{VAR}$")
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+|[0-9a-f]{40})$")

GUID = re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
# Public identifiers that are the same in every tenant, not credentials.
PUBLIC_GUIDS = {"6dae42f8-4368-4678-94ff-3960e28e3630"}  # Microsoft's AKS Entra ID server app
SECRET_PATTERNS = {
    "a secret other than GITHUB_TOKEN": re.compile(r"secrets\.(?!GITHUB_TOKEN\b)\w+"),
    "a client secret or credentials JSON": re.compile(r"client[-_]secret|^\s*creds\s*:", re.I | re.M),
    "a storage key, SAS token or connection string": re.compile(
        r"STORAGE_KEY|SAS_TOKEN|AccountKey=|[?&]sig=|CONNECTION_STRING", re.I
    ),
    "a passphrase or password": re.compile(r"passphrase|password", re.I),
    "a Pulumi Cloud token": re.compile(r"PULUMI_ACCESS_TOKEN|\bpul-[0-9a-f]{20,}"),
    "a long key-like literal": re.compile(r"[A-Za-z0-9+/]{40,}={0,2}"),
}


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans, as GitHub reads workflows: `on:` is a key, not true."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))


def load(path: Path) -> dict[str, Any]:
    doc = yaml.load(path.read_text(), Loader=_Yaml12Loader)
    assert isinstance(doc, dict), f"{path.name}: not a mapping"
    return doc


def workflow(name: str) -> dict[str, Any]:
    return load(WORKFLOWS / name)


def schema_validator() -> jsonschema.protocols.Validator:
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads((vendor / "github-workflows.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(doc: dict[str, Any]) -> list[str]:
    errors = schema_validator().iter_errors(doc)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def uses(step: dict[str, Any], action: str) -> bool:
    return str(step.get("uses", "")).split("@")[0].lower() == action


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if uses(s, action)]


def pulumi_job(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one job that runs pulumi/actions."""
    found = [(name, job) for name, job in doc["jobs"].items() if steps_using(job, "pulumi/actions")]
    assert len(found) == 1, f"expected exactly one job with pulumi/actions, found {[n for n, _ in found]}"
    return found[0]


def step_index(job: dict[str, Any], step: dict[str, Any]) -> int:
    return next(i for i, s in enumerate(job["steps"]) if s is step)


def step_process(
    script: str, cwd: Path, env: dict[str, str], output: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a `run:` script as GitHub does (bash -e, pipefail), GITHUB_OUTPUT at `output` (emptied first)."""
    output.write_text("")
    full_env = {
        **os.environ,
        **env,
        "GITHUB_OUTPUT": str(output),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=full_env,
        check=check,
        capture_output=True,
        text=True,
    )


def outputs(output: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.read_text().splitlines() if line)


def run_step_script(script: str, cwd: Path, env: dict[str, str], output: Path) -> dict[str, str]:
    """Run a `run:` script as GitHub does; return what it wrote to GITHUB_OUTPUT."""
    step_process(script, cwd, env, output)
    return outputs(output)


def secret_findings(text: str) -> list[str]:
    findings = [f"GUID literal {g}" for g in GUID.findall(text) if g.lower() not in PUBLIC_GUIDS]
    for what, pattern in SECRET_PATTERNS.items():
        findings += [f"{what}: {m.group(0)!r}" for m in pattern.finditer(text)]
    return findings


# --- every workflow file ------------------------------------------------------------------


def test_both_workflows_exist() -> None:
    assert {"preview.yml", "deploy.yml"} <= {p.name for p in WORKFLOW_FILES}


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_is_valid_against_the_github_schema(path: Path) -> None:
    assert schema_errors(load(path)) == []


def test_the_schema_check_rejects_a_broken_workflow() -> None:
    doc = workflow("preview.yml")
    del doc["jobs"]["test"]["runs-on"]
    doc["on"] = {"pull_request": {"branches": "main", "typo": True}}
    assert schema_errors(doc)


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_top_level_permissions_are_read_only(path: Path) -> None:
    # Without a top-level block the token gets the repository's default, possibly write-all.
    assert load(path).get("permissions") == {"contents": "read"}


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_job_permissions_stay_within_what_is_needed(path: Path) -> None:
    for name, job in load(path)["jobs"].items():
        permissions = job.get("permissions", {})
        assert isinstance(permissions, dict), f"{name}: permissions {permissions!r} (write-all?)"
        extra = set(permissions.items()) - set(ALLOWED_SCOPES.items())
        assert not extra, f"{name}: unexpected permissions {sorted(extra)}"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_actions_are_pinned_to_a_major_version(path: Path) -> None:
    for name, job in load(path)["jobs"].items():
        for step in job.get("steps", []):
            if "uses" in step:
                assert PINNED.match(step["uses"]), f"{name}: {step['uses']} is not pinned"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_no_secret_in_plain_text(path: Path) -> None:
    assert secret_findings(path.read_text()) == []


def test_the_secret_scan_catches_planted_values() -> None:
    planted = {
        "client-id: 1b2c3d4e-1111-2222-3333-444455556666": "GUID literal",
        "password: ${{ secrets.AZURE_CLIENT_SECRET }}": "a secret other than GITHUB_TOKEN",
        "AZURE_STORAGE_KEY: abc": "a storage key",
        "key: Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4==": "a long key-like literal",
        "      creds: x": "a client secret or credentials JSON",
    }
    for text, expected in planted.items():
        assert any(expected in f for f in secret_findings(text)), text
    assert secret_findings("github-token: ${{ secrets.GITHUB_TOKEN }}") == []


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_azure_login_uses_oidc_with_variables(name: str) -> None:
    _, job = pulumi_job(workflow(name))
    [login] = steps_using(job, "azure/login")
    assert login["uses"] == "azure/login@v2"
    assert set(login["with"]) == {"client-id", "tenant-id", "subscription-id"}  # no creds/secret
    assert all(re.fullmatch(VAR, v) for v in login["with"].values()), login["with"]
    assert job["permissions"].get("id-token") == "write"
    [pulumi] = steps_using(job, "pulumi/actions")
    assert step_index(job, login) < step_index(job, pulumi)


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_pulumi_uses_the_azure_backend_and_key_vault(name: str) -> None:
    _, job = pulumi_job(workflow(name))
    [step] = steps_using(job, "pulumi/actions")
    assert re.fullmatch(r"pulumi/actions@v[67]", step["uses"])
    inputs, env = step["with"], {**job.get("env", {}), **step.get("env", {})}
    assert inputs["stack-name"] == "${{ matrix.stack }}"
    assert CLOUD_URL.match(inputs["cloud-url"]), inputs["cloud-url"]
    assert SECRETS_PROVIDER.match(inputs["secrets-provider"]), inputs["secrets-provider"]
    # azure-native reads ARM_*; the backend and Key Vault read AZURE_* and the az login.
    assert env["ARM_USE_OIDC"] == "true"
    for key in ("ARM_CLIENT_ID", "ARM_TENANT_ID", "ARM_SUBSCRIPTION_ID", "AZURE_STORAGE_ACCOUNT"):
        assert re.fullmatch(VAR, env[key]), f"{key}={env.get(key)!r}"
    assert env["AZURE_KEYVAULT_AUTH_VIA_CLI"] == "true"
    assert env["AAD_LOGIN_METHOD"] == "azurecli"  # kubelogin reuses the az login


STACK_LIST = ROOT / ".github" / "stacks.txt"  # the stacks CI previews and deploys, by name
LIST_STACKS = ROOT / ".github" / "stacks.py"  # what both workflows' "list stacks" job runs


def list_script(doc: dict[str, Any]) -> str:
    [script] = [s["run"] for s in doc["jobs"]["stacks"]["steps"] if s.get("id") == "list"]
    return str(script)


def stack_checkout(root: Path, listed: str, files: tuple[str, ...]) -> Path:
    """A checkout with the list's reader, this list and these stack files."""
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "stacks.py").write_text(LIST_STACKS.read_text())
    (root / ".github" / "stacks.txt").write_text(listed)
    (root / "Pulumi.yaml").write_text("name: x\n")
    for stack in files:
        (root / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    return root


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_the_matrix_holds_the_listed_stacks_only(name: str, tmp_path: Path) -> None:
    # A stack file alone must not reach CI: its first preview and deploy would fail without its
    # backend stack, GitHub environment and OIDC credential. It joins once it is listed on purpose.
    doc = workflow(name)
    _, job = pulumi_job(doc)
    assert job["strategy"]["fail-fast"] is False
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert "stacks" in job["needs"]
    script, output = list_script(doc), tmp_path / "github-output"
    checkout = stack_checkout(tmp_path / "repo", "# CI's stacks\ndev\n", ("dev", "new"))
    done = step_process(script, checkout, {}, output)
    assert json.loads(outputs(output)["stacks"]) == ["dev"]
    assert "::notice file=Pulumi.new.yaml::Pulumi.new.yaml is not in .github/stacks.txt" in done.stdout
    (checkout / ".github" / "stacks.txt").write_text("# CI's stacks\ndev\nnew  # added on purpose\n")
    done = step_process(script, checkout, {}, output)
    assert json.loads(outputs(output)["stacks"]) == ["dev", "new"] and "::notice" not in done.stdout
    # The repository's own list: every name has its file, and dev is on it.
    assert "dev" in json.loads(run_step_script(script, ROOT, {}, output)["stacks"])


@pytest.mark.parametrize(
    "listed, error",
    [
        ("dev\ngone\n", ".github/stacks.txt: gone is listed but Pulumi.gone.yaml does not exist"),
        ("# nothing yet\n", ".github/stacks.txt lists no stack"),
        ("dev\ndev\n", ".github/stacks.txt: dev is listed twice"),
        ("dev\n../dev\n", ".github/stacks.txt: '../dev' is not a stack name"),
    ],
)
@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_a_bad_stack_list_fails_the_list_step(name: str, listed: str, error: str, tmp_path: Path) -> None:
    output = tmp_path / "github-output"
    checkout = stack_checkout(tmp_path / "repo", listed, ("dev",))
    done = step_process(list_script(workflow(name)), checkout, {}, output, check=False)
    assert done.returncode != 0 and outputs(output) == {}  # no matrix: the pulumi job does not run
    assert f"::error file=.github/stacks.txt::{error}" in done.stdout, done.stdout


def readme_stack() -> tuple[str, str]:
    """README's "Write your own stack" example: its stack's name (its `# Pulumi.<name>.yaml` line) and file."""
    section = (ROOT / "README.md").read_text().split("\n## Write your own stack\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    named = re.match(r"# Pulumi\.([\w.-]+)\.yaml\n", block)
    assert named, "README's stack example does not start with its file's name"
    return named.group(1), block


def test_the_readmes_own_stack_joins_the_matrix_and_plans_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What README says a platform admin does: the stack file, then its name on the list. The plan
    # the preview posts for it (its plan step's own arguments) must then carry no warning, such as
    # a team whose share of a GPU pool rounds down to 0 GPUs.
    name, text = readme_stack()
    doc = workflow("preview.yml")
    checkout = stack_checkout(tmp_path / "repo", f"dev\n{name}\n", ())
    (checkout / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    (checkout / f"Pulumi.{name}.yaml").write_text(text)
    assert json.loads(run_step_script(list_script(doc), checkout, {}, tmp_path / "github-output")["stacks"]) == [
        "dev",
        name,
    ]
    _, job = pulumi_job(doc)
    [step] = [s for s in job["steps"] if str(s.get("run", "")).strip().startswith("python -m components.plan")]
    command, _, summary = step["run"].partition(">>")
    assert summary.strip() == '"$GITHUB_STEP_SUMMARY"'
    words = shlex.split(command.replace("$STACK", name))
    assert words[:3] == ["python", "-m", "components.plan"]
    monkeypatch.chdir(checkout)
    assert plan_main(words[3:]) == 0
    out, err = capsys.readouterr()
    assert f"### kueue-aks plan: stack `{name}`" in out
    assert "warning" not in (out + err).lower(), out + err
    assert (checkout / "plan-out" / name / "ORDER.md").is_file()


# GitHub runs the unit tier in the test jobs, the e2e tier in preview.yml's e2e job.
UNIT_TESTS = 'python -m pytest -q -m "not e2e"'
E2E_TESTS = "python -m pytest -q -m e2e"


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_tests_gate_the_pulumi_job(name: str) -> None:
    doc = workflow(name)
    _, job = pulumi_job(doc)
    test_jobs = [
        n for n in job["needs"] if any(s.get("run", "").strip() == UNIT_TESTS for s in doc["jobs"][n]["steps"])
    ]
    assert test_jobs, f"{name}: the pulumi job does not need a job that runs `{UNIT_TESTS}`"


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_reference_data_is_fetched_before_the_tests(name: str) -> None:
    # A GitHub checkout has no ../shared: every job that runs the tests must recreate it first,
    # after the dependencies (the tool needs pyyaml) and from the checkout root.
    doc = workflow(name)
    test_jobs = 0
    for job_name, job in doc["jobs"].items():
        steps = job.get("steps", [])
        runs = [str(s.get("run", "")).strip() for s in steps]
        if UNIT_TESTS not in runs:
            continue
        test_jobs += 1
        fetches = [i for i, run in enumerate(runs) if run.startswith("python -m tools.fetch_reference")]
        assert len(fetches) == 1, f"{job_name}: expected one fetch_reference step"
        [fetch] = fetches
        install = next(i for i, run in enumerate(runs) if "pip install -r requirements-dev.txt" in run)
        assert install < fetch < runs.index(UNIT_TESTS), job_name
        args = build_parser().parse_args(shlex.split(runs[fetch])[3:])  # the tool accepts its flags
        assert "working-directory" not in steps[fetch] and "defaults" not in job and "defaults" not in doc
        assert (ROOT / args.dest).resolve() == DEFAULT_SHARED.resolve(), f"{job_name}: fetches to {args.dest}"
    assert test_jobs, f"{name}: no job runs the tests"


def test_a_clone_without_the_reference_data_is_told_the_command_the_workflows_run(tmp_path: Path) -> None:
    # The message names the fetch step's own command, run where the workflows run it (the checkout
    # root), so that it writes ../shared where the tests look; with KUEUE_AKS_SHARED, that folder.
    fetches = {
        str(s["run"]).strip()
        for name in ("preview.yml", "deploy.yml")
        for job in workflow(name)["jobs"].values()
        for s in job.get("steps", [])
        if str(s.get("run", "")).strip().startswith("python -m tools.fetch_reference")
    }
    [fetch] = fetches
    command = re.search(r"`cd (\S+) && (python -m tools\.fetch_reference [^`]+)`", missing_shared("x", DEFAULT_SHARED))
    assert command, missing_shared("x", DEFAULT_SHARED)
    assert Path(command.group(1)) == ROOT and command.group(2) == fetch
    args = build_parser().parse_args(shlex.split(command.group(2))[3:])
    assert (ROOT / args.dest).resolve() == DEFAULT_SHARED.resolve()
    elsewhere = missing_shared("x", tmp_path / "ref")
    assert f"--dest {tmp_path / 'ref'}`" in elsewhere and f"(from {SHARED_ENV})" in elsewhere
    # A run of the tests without the data stops with that message (here KUEUE_AKS_SHARED names an
    # empty folder, as ../shared is missing from a fresh clone).
    empty = tmp_path / "empty"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not e2e",
            f"tests/{Path(__file__).name}::test_both_workflows_exist",
        ],
        cwd=ROOT,
        env={**os.environ, SHARED_ENV: str(empty)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    chart = empty / "kueue" / "v0.19.2" / "chart" / "kueue-0.19.2.tgz"
    assert missing_shared(f"Kueue chart {chart}", empty) in done.stdout, done.stdout[-3000:]


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_kubelogin_only_when_the_stack_disables_local_accounts(name: str, tmp_path: Path) -> None:
    _, job = pulumi_job(workflow(name))
    [install] = steps_using(job, "azure/use-kubelogin")
    assert "steps.kubelogin.outputs.needed == 'true'" in install["if"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", install["with"]["kubelogin-version"])  # not "latest"
    [check] = [s for s in job["steps"] if s.get("id") == "kubelogin"]
    assert step_index(job, check) < step_index(job, install)

    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    entra_only = {
        "config": {
            **dev["config"],
            "kueue-aks:cluster": {**dev["config"].get("kueue-aks:cluster", {}), "disableLocalAccounts": True},
        }
    }
    for stack, doc, needed in (("dev", dev, "false"), ("entra", entra_only, "true")):
        (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc))
        result = run_step_script(check["run"], tmp_path, {"STACK": stack}, tmp_path / "github-output")
        assert result == {"needed": needed}, stack


# --- preview.yml --------------------------------------------------------------------------


def test_preview_runs_on_pull_requests_only() -> None:
    triggers = workflow("preview.yml")["on"]
    assert set(triggers) == {"pull_request"}  # never pull_request_target: it runs fork code with access


def test_preview_job_permissions_are_exactly_the_three_needed() -> None:
    _, job = pulumi_job(workflow("preview.yml"))
    assert job["permissions"] == ALLOWED_SCOPES


def test_preview_comments_on_the_pr_and_edits_the_same_comment() -> None:
    _, job = pulumi_job(workflow("preview.yml"))
    [step] = steps_using(job, "pulumi/actions")
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True
    assert step["with"]["edit-pr-comment"] is True


def test_cloud_steps_skip_fork_pull_requests() -> None:
    # Forks get no OIDC token: the Azure and Pulumi steps must be skipped, not fail.
    _, job = pulumi_job(workflow("preview.yml"))
    cloud = [
        s
        for s in job["steps"]
        if any(uses(s, a) for a in ("azure/login", "azure/use-kubelogin", "pulumi/actions"))
        or str(s.get("run", "")).startswith("az ")
    ]
    assert len(cloud) >= 3
    for step in cloud:
        assert FORK_GUARD in step.get("if", job.get("if", "")), step.get("name", step.get("uses"))


def test_preview_posts_the_plan_to_the_job_summary_before_the_preview() -> None:
    _, job = pulumi_job(workflow("preview.yml"))
    [plan] = [
        s for s in job["steps"] if "python -m components.plan --stack" in s.get("run", "") and "--base" not in s["run"]
    ]
    assert '>> "$GITHUB_STEP_SUMMARY"' in plan["run"]
    assert "if" not in plan  # credential-free, so fork PRs get the quota table too
    [pulumi] = steps_using(job, "pulumi/actions")
    assert step_index(job, plan) < step_index(job, pulumi)


def quota_steps() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The preview job, its quota-changes step and the step that comments them on the PR."""
    _, job = pulumi_job(workflow("preview.yml"))
    [changes] = [s for s in job["steps"] if "--base" in str(s.get("run", ""))]
    [comment] = [s for s in job["steps"] if "gh api" in str(s.get("run", ""))]
    return job, changes, comment


def test_preview_fetches_the_base_branch_and_shows_the_resource_diff() -> None:
    _, job = pulumi_job(workflow("preview.yml"))
    [checkout] = steps_using(job, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0  # every branch: `git show origin/<base>:Pulumi.<stack>.yaml`
    [pulumi] = steps_using(job, "pulumi/actions")
    assert pulumi["with"]["diff"] is True


def test_quota_changes_compare_with_the_base_branch_for_every_pr() -> None:
    job, changes, comment = quota_steps()
    assert changes["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert 'python -m components.plan --stack "$STACK" --base "origin/$BASE_REF"' in changes["run"]
    assert '>> "$GITHUB_STEP_SUMMARY"' in changes["run"]
    assert "if" not in changes  # credential-free: forks get the comparison in the job summary
    # A fork's token cannot comment: the comment step is skipped for forks, as the cloud steps are.
    assert comment["if"] == FORK_GUARD
    assert comment["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert comment["env"]["PR"] == "${{ github.event.pull_request.number }}"
    assert "<!-- kueue-aks quota changes: $STACK -->" in comment["run"]  # hidden, one per stack
    [pulumi] = steps_using(job, "pulumi/actions")
    assert step_index(job, changes) < step_index(job, comment) < step_index(job, pulumi)


def test_the_quota_changes_step_runs_against_origin_of_the_base_branch(tmp_path: Path) -> None:
    """The step's own script in a checkout whose origin/main has other shares, then a base whose
    stack file no longer parses: compared in the first case, said so in the second, neither fails."""
    _, changes, _ = quota_steps()
    repo = tmp_path / "repo"
    repo.mkdir()
    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    base = {
        "config": {
            **dev["config"],
            "kueue-aks:teams": [{"name": "research", "share": 70}, {"name": "platform", "share": 30}],
        }
    }
    (repo / "Pulumi.dev.yaml").write_text(yaml.safe_dump(base))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())  # the PR's change
    env = {
        "STACK": "dev",
        "BASE_REF": "main",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    run_step_script(changes["run"], repo, env, tmp_path / "github-output")
    summary = (tmp_path / "summary.md").read_text()
    assert "- **research loses 1 GPU on gpu** (2 → 1)" in summary
    assert (tmp_path / "quota-changes-dev.md").read_text() == summary  # what the comment step posts

    base["config"]["kueue-aks:teams"][0]["quota"] = 70
    (repo / "Pulumi.dev.yaml").write_text(yaml.safe_dump(base))
    git(repo, "commit", "-q", "-am", "a key this code does not know")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    (tmp_path / "summary.md").write_text("")
    run_step_script(changes["run"], repo, env, tmp_path / "github-output")
    assert "Not compared:" in (tmp_path / "summary.md").read_text()

    with pytest.raises(subprocess.CalledProcessError):  # no such base branch: a failure, not an empty comment
        run_step_script(changes["run"], repo, {**env, "BASE_REF": "nope"}, tmp_path / "github-output")


FAKE_GH = """#!/usr/bin/env bash
# gh as the comment step calls it: logs each call; lists the ids of the PR's comments that start
# with $MARKER (FAKE_COMMENTS: id<TAB>body lines), and keeps the body it is given.
echo "$*" >> "$GH_LOG"
if [[ " $* " == *" --paginate "* ]]; then
  while IFS=$'\t' read -r id body; do [[ $body == "$MARKER"* ]] && echo "$id"; done <<< "$FAKE_COMMENTS"
fi
for arg in "$@"; do [[ $arg == body=@* ]] && cp "${arg#body=@}" "$GH_BODY"; done
exit 0
"""


@pytest.mark.parametrize(
    "comments, call",
    [
        ("", "api --method POST repos/o/r/issues/12/comments -F body=@"),  # the first push
        (
            "5\tLGTM\n7\t<!-- kueue-aks quota changes: dev -->\n9\t<!-- kueue-aks quota changes: dev -->",
            "api --method PATCH repos/o/r/issues/comments/7 -F body=@",
        ),  # every later one edits it
        ("7\t<!-- kueue-aks quota changes: prod -->", "api --method POST repos/o/r/issues/12/comments -F body=@"),
    ],
)
def test_the_comment_step_creates_one_comment_per_stack_then_edits_it(tmp_path: Path, comments: str, call: str) -> None:
    _, _, comment = quota_steps()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    (tmp_path / "quota-changes-dev.md").write_text("### Quota changes: stack `dev`\n\nNo quota change.\n")
    env = {
        "STACK": "dev",
        "PR": "12",
        "GITHUB_REPOSITORY": "o/r",
        "RUNNER_TEMP": str(tmp_path),
        "GH_LOG": str(tmp_path / "gh.log"),
        "GH_BODY": str(tmp_path / "body.md"),
        "GH_TOKEN": "token",
        "FAKE_COMMENTS": comments,
    }
    script = comment["run"].replace("gh api", f"{bin_dir / 'gh'} api")  # run_step_script sets PATH itself
    run_step_script(script, tmp_path, env, tmp_path / "github-output")
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert calls[0].startswith("api --paginate repos/o/r/issues/12/comments --jq ")
    assert "startswith(env.MARKER)" in calls[0]
    assert len(calls) == 2 and calls[1].startswith(call)
    assert (tmp_path / "body.md").read_text() == (
        "<!-- kueue-aks quota changes: dev -->\n### Quota changes: stack `dev`\n\nNo quota change.\n"
    )


# --- deploy.yml ---------------------------------------------------------------------------


def test_deploy_runs_on_push_to_main_and_by_hand() -> None:
    triggers = workflow("deploy.yml")["on"]
    assert set(triggers) == {"push", "workflow_dispatch"}
    assert triggers["push"] == {"branches": ["main"]}


def test_deploy_runs_up_in_an_environment() -> None:
    _, job = pulumi_job(workflow("deploy.yml"))
    [step] = steps_using(job, "pulumi/actions")
    assert step["with"]["command"] == "up"
    assert job["environment"] == "${{ matrix.stack }}"  # protection rules can require approval
    assert job["permissions"] == {"contents": "read", "id-token": "write"}


def test_deploy_never_cancels_a_running_up() -> None:
    doc = workflow("deploy.yml")
    _, job = pulumi_job(doc)
    assert job["concurrency"]["cancel-in-progress"] is False
    assert "${{ matrix.stack }}" in job["concurrency"]["group"]  # one `up` per stack at a time
    assert doc.get("concurrency", {}).get("cancel-in-progress") in (None, False)


def test_deploy_failures_are_not_swallowed() -> None:
    doc = workflow("deploy.yml")
    for name, job in doc["jobs"].items():
        assert "continue-on-error" not in job, name
        for step in job.get("steps", []):
            assert "continue-on-error" not in step, f"{name}: {step.get('name', step.get('uses'))}"
            assert "continue-on-error" not in step.get("with", {}), f"{name}: {step.get('uses')}"


def job_environments(doc: dict[str, Any], job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every env mapping a job's steps run with: the workflow's, the job's, each step's."""
    return [doc.get("env", {}), job.get("env", {}), *(s.get("env", {}) for s in job["steps"])]


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_pulumi_job_validates_against_the_chart_it_installs(name: str) -> None:
    # The plan and the program read the Kueue CRDs from the stack's chart (components/kueue/crds.py),
    # as the Helm release gets it: no KUEUE_CRDS_DIR override, so no ../shared to fetch either
    # (nothing else in the job reads it: the plan, load_stack and the program use the repository,
    # the chart source and the Go module proxy).
    doc = workflow(name)
    job_name, job = pulumi_job(doc)
    runs = [str(s.get("run", "")) for s in job["steps"]]
    for env in job_environments(doc, job):
        assert CRDS_ENV not in env, f"{job_name}: {CRDS_ENV} set"
    assert not any(CRDS_ENV in run for run in runs), f"{job_name}: {CRDS_ENV} set in a script"
    assert not any(run.strip().startswith("python -m tools.fetch_reference") for run in runs), job_name
    assert not any("../shared" in run for run in runs), job_name
    assert any(run.strip().startswith("python -m components.plan") for run in runs), job_name


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_pulumi_job_keeps_ci_true_so_a_missing_chart_fails(name: str) -> None:
    # GitHub sets CI=true on every runner; with it, a chart that cannot be read stops the plan and
    # the program instead of checking without the CRD schemas. Nothing may set CI to anything else.
    doc = workflow(name)
    job_name, job = pulumi_job(doc)
    for env in job_environments(doc, job):
        assert "CI" not in env, f"{job_name}: CI overridden to {env.get('CI')!r}"
    for step in job["steps"]:
        run = str(step.get("run", ""))
        assert not re.search(r"(^|[\s;&|(])(export\s+)?CI=|\bunset\s+CI\b|\benv\s+-u\s*CI\b", run, re.M), run
        assert "GITHUB_ENV" not in run, f"{job_name}: a step changes later steps' environment"
    assert kueue_crds.in_ci({"CI": "true", **{k: str(v) for k, v in job.get("env", {}).items()}})


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_the_plan_step_fails_in_ci_when_the_chart_cannot_be_read(name: str, tmp_path: Path) -> None:
    # The plan step's own script, run as the runner runs it (CI=true, the job's env) with an empty
    # chart cache and the network refused (a proxy on a closed loopback port): it must exit
    # non-zero and say why, not post a plan checked without the CRDs.
    doc = workflow(name)
    _, job = pulumi_job(doc)
    [plan] = [s for s in job["steps"] if str(s.get("run", "")).strip().startswith("python -m components.plan")]
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    env = {k: str(v).replace("${{ matrix.stack }}", "dev") for k, v in job.get("env", {}).items()}
    dead_proxy = "http://127.0.0.1:9"
    env.update(
        {
            "CI": "true",
            "XDG_CACHE_HOME": str(tmp_path / "empty-cache"),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "HTTPS_PROXY": dead_proxy,
            "https_proxy": dead_proxy,
            "NO_PROXY": "",
            "no_proxy": "",
        }
    )
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_step_script(plan["run"], tmp_path, env, tmp_path / "github-output")
    assert "CI=true and the Kueue" in failed.value.stderr
    assert "may not be skipped in CI" in failed.value.stderr


# --- preview.yml: the e2e job -------------------------------------------------------------


def e2e_job() -> dict[str, Any]:
    return workflow("preview.yml")["jobs"]["e2e"]


def e2e_steps() -> list[dict[str, Any]]:
    return e2e_job()["steps"]


def run_index(job: dict[str, Any], prefix: str) -> int:
    [index] = [i for i, s in enumerate(job["steps"]) if str(s.get("run", "")).strip().startswith(prefix)]
    return index


def test_e2e_job_runs_the_tier_with_a_timeout_for_a_cold_build() -> None:
    job = e2e_job()
    assert job["runs-on"] == "ubuntu-latest"
    # Cold, every binary is built first (about 52 min on 2 cores, docs/e2e-tier.md), then the tier
    # (about 25 min, the time it takes with the binaries cached).
    assert 120 <= job["timeout-minutes"] <= 240
    [tier] = [s for s in job["steps"] if str(s.get("run", "")).startswith(E2E_TESTS)]
    assert shlex.split(tier["run"])[:6] == shlex.split(E2E_TESTS)
    assert "needs" not in job and "e2e" not in workflow("preview.yml")["jobs"]["preview"]["needs"]
    assert "if" not in job and "continue-on-error" not in job


def test_e2e_job_sets_up_python_go_and_the_reference_data_first() -> None:
    job = e2e_job()
    [python] = steps_using(job, "actions/setup-python")
    assert python["with"]["python-version"] == "3.11"
    [go] = steps_using(job, "actions/setup-go")
    assert go["with"]["go-version"] == "1.26"  # the Go the tier's go.mod files and docs ask for
    install = run_index(job, "python -m venv venv")
    assert "pip install -r requirements-dev.txt" in job["steps"][install]["run"]
    fetch = run_index(job, "python -m tools.fetch_reference")
    args = build_parser().parse_args(shlex.split(job["steps"][fetch]["run"])[3:])
    assert (ROOT / args.dest).resolve() == DEFAULT_SHARED.resolve()
    tier = run_index(job, E2E_TESTS)
    assert step_index(job, python) < install < fetch < tier
    assert step_index(job, go) < tier


def test_e2e_binaries_are_cached_where_and_as_the_tier_keys_them(monkeypatch: pytest.MonkeyPatch) -> None:
    job = e2e_job()
    [cache] = steps_using(job, "actions/cache")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # as on a runner
    monkeypatch.delenv(binaries.CACHE_ENV, raising=False)
    assert cache["with"]["path"] == "~/" + binaries.cache_root().relative_to(Path.home()).as_posix()
    key = cache["with"]["key"]
    # The Go version, exactly as the tier reads it (`go env GOVERSION`), from a step before.
    [version] = [s for s in job["steps"] if s.get("id") == "go"]
    assert "go env GOVERSION" in version["run"] and "${{ steps.go.outputs.version }}" in key
    assert step_index(job, version) < step_index(job, cache) < run_index(job, E2E_TESTS)
    patterns = re.findall(r"'([^']+)'", re.search(r"hashFiles\(([^)]*)\)", key).group(1))  # type: ignore[union-attr]
    hashed = {Path(f).resolve() for pattern in patterns for f in glob(str(ROOT / pattern), recursive=True)}
    assert all(glob(str(ROOT / pattern), recursive=True) for pattern in patterns), patterns
    # Every file a binary's folder key reads, and the modules that hold the pins they hash.
    tools = binaries.TOOLS_DIR
    read_by_keys = {p.resolve() for n in ("go.mod", "go.sum", "main.go") for p in tools.glob(f"*/{n}")}
    pins = {
        Path(binaries.__file__).resolve(),
        ROOT / "components" / "facts" / "operators.py",
        ROOT / "components" / "facts" / "kueue_versions.py",
    }
    assert read_by_keys | pins <= hashed
    assert cache["with"]["restore-keys"].strip() == key.split("${{ hashFiles")[0]


def test_e2e_tier_may_bind_port_443_without_root() -> None:
    job = e2e_job()
    [sysctl] = [i for i, s in enumerate(job["steps"]) if "ip_unprivileged_port_start" in str(s.get("run", ""))]
    assert job["steps"][sysctl]["run"].strip() == "sudo sysctl -w net.ipv4.ip_unprivileged_port_start=443"
    assert sysctl < run_index(job, E2E_TESTS)
    assert not any("sudo" in str(s.get("run", "")) for s in job["steps"] if s is not job["steps"][sysctl])


def test_e2e_measurements_are_uploaded_and_logs_on_failure() -> None:
    job = e2e_job()
    folder = job["env"][measurements.ARTIFACTS_ENV]
    assert folder == "${{ github.workspace }}/e2e-artifacts"
    uploads = {s["with"]["name"]: s for s in steps_using(job, "actions/upload-artifact")}
    assert set(uploads) == {"e2e-measurements", "e2e-logs"}
    assert uploads["e2e-measurements"]["if"] == "always()"
    assert set(uploads["e2e-measurements"]["with"]["path"].split()) == {
        "e2e-artifacts/measurements.json",
        "e2e-artifacts/measurements.md",
        "e2e-artifacts/junit.xml",
    }
    assert uploads["e2e-logs"]["if"] == "failure()"
    assert uploads["e2e-logs"]["with"]["path"] == "e2e-artifacts/logs"
    tier = job["steps"][run_index(job, E2E_TESTS)]
    assert '--junitxml="$KUEUE_AKS_E2E_ARTIFACTS/junit.xml"' in tier["run"]
    assert all(step_index(job, u) > run_index(job, E2E_TESTS) for u in uploads.values())


def test_the_tier_writes_what_the_job_uploads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(measurements.ARTIFACTS_ENV, str(tmp_path / "out"))
    # Two workers' lanes, as the controller gathers them (measurements.Measurements).
    lanes = [
        measurements.Lane(
            "gw0",
            ["dev up"],
            {
                "dev": {
                    "queues_active_seconds": 21.5,
                    "everything_up_seconds": 80.2,
                    "timings_seconds_since_start": {"queues active": 21.5},
                }
            },
            seconds=1000.0,
        ),
        measurements.Lane(
            "gw1",
            ["engine up"],
            {"engine": {"queues_active_seconds": 9.0, "everything_up_seconds": 9.0, "timings_seconds_since_start": {}}},
            seconds=900.0,
        ),
    ]
    measurements.write_measurements(measurements.artifacts_dir(), lanes, 1100.0)  # type: ignore[arg-type]
    measured = json.loads((tmp_path / "out" / "measurements.json").read_text())
    assert measured["tier_seconds"] == 1000.0 and measured["lanes"] == {"gw0": 1000.0, "gw1": 900.0}
    assert measured["stacks"]["dev"]["queues_active_seconds"] == 21.5 and set(measured["stacks"]) == {"dev", "engine"}
    assert measured["report"] == ["dev up", "engine up"]
    assert "| dev | 21.5 | 80.2 |" in (tmp_path / "out" / "measurements.md").read_text()

    class FakeCluster:
        def logs_dir(self) -> Path:
            return tmp_path / "dev" / "kwok" / "clusters" / "kueue-aks-dev" / "logs"

    class FakeStack:
        stack, workdir, cluster = "dev", tmp_path / "dev", FakeCluster()

    for log in (
        "kueue.log",
        "trainer.log",
        "kwok/clusters/kueue-aks-dev/logs/kube-apiserver.log",
        "kwok/clusters/kueue-aks-dev/logs/audit",
    ):
        (tmp_path / "dev" / log).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "dev" / log).write_text(log)
    (tmp_path / "dev" / "values.yaml").write_text("not a log")
    control_planes.save_logs(FakeStack())  # type: ignore[arg-type]
    saved = {
        p.relative_to(tmp_path / "out" / "logs" / "dev").as_posix()
        for p in (tmp_path / "out").rglob("*")
        if p.is_file() and "logs" in p.parts
    }
    assert saved == {
        "kueue.log",
        "trainer.log",
        "kwok/clusters/kueue-aks-dev/logs/kube-apiserver.log",
        "kwok/clusters/kueue-aks-dev/logs/audit",
    }
    monkeypatch.delenv(measurements.ARTIFACTS_ENV)
    assert measurements.artifacts_dir() is None  # unset: the tier writes nothing


# --- actionlint (the lint itself runs in the tier that builds Go tools: tests/e2e/tier/test_workflow_lint.py) ---


def test_actionlint_is_pinned_and_shellcheck_comes_from_requirements() -> None:
    assert re.fullmatch(r"v\d+\.\d+\.\d+", lint.ACTIONLINT_VERSION)
    requirements = (ROOT / "requirements-dev.txt").read_text().split()
    assert lint.SHELLCHECK_PIN in requirements
    assert lint.shellcheck().is_file()
