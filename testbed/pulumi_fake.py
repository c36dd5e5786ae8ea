"""A stand-in for the `pulumi` CLI, for the commands that read and write a stack's state through Pulumi's
Automation API (components/recovery, components/operators/migrate.py).

Put first on PATH, it answers what the Automation API runs: `pulumi version` (its version check), `stack
export` from state.json (refusing --show-secrets: the state must stay encrypted), `stack import --file F`
by keeping F as imported.json, and `refresh` (the recovery's last command). `fail(...)` makes a command exit
255 with a message on stderr, as the CLI does. Every call is a line `pulumi <args>` of calls.log (beside
what a kubectl stand-in may write there) and, with the folder it ran in, a record of `calls()`. The real CLI
runs these commands in the e2e tier: tests/e2e/engine/test_engine_interrupted.py and test_engine_crds.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

VERSION = "3.260.0"  # the CLI the e2e tier builds (testbed/binaries.py)

SCRIPT = """#!{python}
import json, os, shutil, sys
from pathlib import Path

here = Path({folder!r})
args = sys.argv[1:]
with open(here / "calls.log", "a") as log:
    log.write(" ".join(["pulumi", *args]) + "\\n")
with open(here / "pulumi-calls.jsonl", "a") as log:
    log.write(json.dumps({{"cwd": os.getcwd(), "args": args}}) + "\\n")
if args == ["version"]:
    print("v{version}")
    sys.exit(0)
rest = [a for a in args if a != "--non-interactive"]
failure = here / ("fail-" + "-".join(rest[:2]))
if failure.exists():
    sys.stderr.write(failure.read_text())
    sys.exit(255)
if rest[:2] == ["stack", "export"] and "--show-secrets" not in rest:
    sys.stdout.write((here / "state.json").read_text())
elif rest[:2] == ["stack", "import"]:
    shutil.copy(rest[rest.index("--file") + 1], here / "imported.json")
elif rest[:1] != ["refresh"]:
    sys.stderr.write(f"error: the fake pulumi does not answer {{args}}\\n")
    sys.exit(1)
"""


@dataclass(frozen=True)
class Call:
    cwd: Path
    args: list[str]

    @property
    def command(self) -> list[str]:
        """The arguments without --non-interactive, which the Automation API adds to every command."""
        return [a for a in self.args if a != "--non-interactive"]


@dataclass(frozen=True)
class FakePulumi:
    folder: Path

    def serve(self, state: dict[str, Any]) -> None:
        """What `pulumi stack export` prints."""
        (self.folder / "state.json").write_text(json.dumps(state))

    def fail(self, command: str, stderr: str) -> None:
        """`command` (e.g. "stack export") exits 255 with `stderr`."""
        (self.folder / f"fail-{command.replace(' ', '-')}").write_text(stderr)

    def calls(self) -> list[Call]:
        log = self.folder / "pulumi-calls.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        return [Call(Path(c["cwd"]), c["args"]) for c in map(json.loads, lines)]

    def imported(self) -> dict[str, Any] | None:
        path = self.folder / "imported.json"
        return json.loads(path.read_text()) if path.exists() else None


def install(folder: Path, monkeypatch: pytest.MonkeyPatch) -> FakePulumi:
    """The stand-in as `pulumi` first on PATH, keeping its files in `folder`."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "pulumi"
    script.write_text(SCRIPT.format(python=sys.executable, folder=str(folder), version=VERSION))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", raising=False)  # the check runs, as for users
    return FakePulumi(folder)
