"""actionlint (with shellcheck) on the workflows. Here, in the tier that builds Go tools, because
actionlint is built from its Go module (testbed/binaries.py: ensure_actionlint); the unit tier
needs no Go."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed import actionlint as lint
from testbed.binaries import BuildError
from testbed.harness import ROOT


WORKFLOW_FILES = sorted(lint.WORKFLOWS.glob("*.y*ml"))


def actionlint_findings(paths: list[Path], cwd: Path = ROOT) -> list[str]:
    try:
        return lint.actionlint(paths, cwd)
    except BuildError as err:  # no Go, no proxy, no shellcheck: a failure, never a skip
        pytest.fail(f"actionlint could not run: {err}", pytrace=False)


def test_workflows_pass_actionlint_with_shellcheck() -> None:
    findings = actionlint_findings(WORKFLOW_FILES)
    assert findings == [], "actionlint " + lint.ACTIONLINT_VERSION + " findings:\n" + "\n".join(findings)


def test_actionlint_finds_a_broken_expression_and_a_shell_problem(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "preview.yml"
    broken.parent.mkdir(parents=True)
    text = (lint.WORKFLOWS / "preview.yml").read_text()
    text = text.replace("${{ matrix.stack }}", "${{ matrix.stak }}", 1)
    text = text.replace(
        'cat "$KUEUE_AKS_E2E_ARTIFACTS/measurements.md"', "cat $KUEUE_AKS_E2E_ARTIFACTS/measurements.md"
    )
    broken.write_text(text)
    findings = actionlint_findings([broken], tmp_path)
    assert any('property "stak" is not defined' in f for f in findings), findings
    assert any("SC2086" in f and "[shellcheck]" in f for f in findings), findings


def test_actionlint_without_go_fails_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match="Go is not on PATH"):
        actionlint_findings(WORKFLOW_FILES)
