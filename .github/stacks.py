"""The stacks CI previews and deploys: the names in .github/stacks.txt, as a job matrix.

    python3 .github/stacks.py      # from the checkout root; appends stacks=[...] to $GITHUB_OUTPUT

Both workflows' "list stacks" job runs it (preview.yml, deploy.yml), before anything is installed,
so it needs only the standard library. It fails, saying why, when the list names no stack, a name
twice, a name Pulumi does not take, or a stack without its Pulumi.<name>.yaml; a stack file that is
not listed gets a notice that CI leaves it alone. Without GITHUB_OUTPUT it prints the line instead.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

LIST = Path(".github/stacks.txt")
NAME = re.compile(r"[A-Za-z0-9_.-]+")  # what `pulumi stack init` accepts in a stack's name


def listed(text: str) -> list[str]:
    """The names, one a line; `#` starts a comment, blank lines are skipped."""
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def problems(stacks: list[str], root: Path) -> list[str]:
    found = [] if stacks else [f"{LIST} lists no stack: CI would preview and deploy nothing"]
    found += [
        f"{LIST}: {name!r} is not a stack name (letters, digits, '_', '.', '-')"
        for name in stacks
        if not NAME.fullmatch(name)
    ]
    found += [f"{LIST}: {name} is listed twice" for name in sorted({n for n in stacks if stacks.count(n) > 1})]
    found += [
        f"{LIST}: {name} is listed but Pulumi.{name}.yaml does not exist"
        for name in stacks
        if NAME.fullmatch(name) and not (root / f"Pulumi.{name}.yaml").is_file()
    ]
    return found


def unlisted(stacks: list[str], root: Path) -> list[str]:
    """The stack files the list leaves out."""
    return sorted(p.name for p in root.glob("Pulumi.*.yaml") if p.name[len("Pulumi.") : -len(".yaml")] not in stacks)


def main(root: Path = Path(".")) -> int:
    if not (root / LIST).is_file():
        print(f"::error::{LIST} not found: it lists the stacks CI previews and deploys")
        return 1
    stacks = listed((root / LIST).read_text())
    errors = problems(stacks, root)
    for error in errors:
        print(f"::error file={LIST}::{error}")
    if errors:
        return 1
    for name in unlisted(stacks, root):
        print(
            f"::notice file={name}::{name} is not in {LIST}, so CI neither previews nor deploys it; "
            "add it there once its backend stack, GitHub environment and OIDC credential exist (docs/ci-cd.md)"
        )
    line = "stacks=" + json.dumps(stacks)
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
            out.write(line + "\n")
    else:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
