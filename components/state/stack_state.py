"""Export and import a stack's state with the Automation API, secrets left encrypted.

The Automation API runs the `pulumi` on PATH (its version checked), in the project folder, without a
prompt, with the same backend and secrets settings as `pulumi up`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pulumi.automation import CommandError, Deployment, InvalidVersionError, LocalWorkspace


class StateError(RuntimeError):
    """The state could not be exported or imported; the message is the CLI's."""


def export_state(cwd: Path, stack: str) -> tuple[LocalWorkspace, dict[str, Any]]:
    """The project's workspace and the stack's state as `pulumi stack export` writes it.

    Not Workspace.export_stack(): it adds --show-secrets, which needs the stack's secrets provider (its
    passphrase or key) and hands every secret back in plaintext."""
    stderr: list[str] = []  # a CommandError holds the CLI's stderr only inside its text
    try:
        workspace = LocalWorkspace(work_dir=str(cwd))
        done = workspace.pulumi_command.run(
            ["stack", "export", "--stack", stack], workspace.work_dir, workspace.env_vars, on_error=stderr.append
        )
    except (OSError, subprocess.CalledProcessError, InvalidVersionError, CommandError) as err:
        raise StateError("\n".join(stderr).strip() or str(err).strip()) from None
    return workspace, json.loads(done.stdout)


def import_state(workspace: LocalWorkspace, stack: str, state: dict[str, Any]) -> None:
    """`pulumi stack import` of an exported state (edited), as it is: its secrets stay ciphertext."""
    try:
        workspace.import_stack(stack, Deployment(version=state.get("version"), deployment=state["deployment"]))
    except CommandError as err:
        raise StateError(str(err).strip()) from None
