"""The sample workloads of examples/ and what docs/batch-users.md says of them, read as the unit
tier's sample checks and the e2e tier's access and identity tests both need them."""

from __future__ import annotations

import re
import shlex

from testbed.paths import ROOT

EXAMPLES = ROOT / "examples"
# The samples of a team identity's ServiceAccount (docs/batch-users.md#read-your-teams-data): valid
# and admissible like the others; the e2e tier runs them on its stack with a team identity.
IDENTITY_SAMPLES = sorted((EXAMPLES / "identity").glob("*.yaml"))
BATCH_USERS = ROOT / "docs" / "batch-users.md"


def doc_table(heading: str) -> list[list[str]]:
    """The rows of the first table under a docs/batch-users.md heading, cells stripped."""
    section = BATCH_USERS.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # after the head
    return [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in rows]


def doc_kinds(cell: str) -> list[str]:
    return [kind.strip() for kind in cell.split(",")]


def doc_pod_selectors() -> dict[str, str]:
    """docs/batch-users.md "Where is my job": kind -> the label its pods are found by (the first
    `-l <label>=` of its row; the value is the job's name, a RayJob's its RayCluster's)."""
    found = {}
    for row in doc_table("Where is my job"):
        match = re.search(r"-l ([\w./-]+)=", row[1])
        assert match, row
        found.update({kind: match.group(1) for kind in doc_kinds(row[0])})
    return found


def doc_command(prefix: str) -> list[str]:
    """The command of docs/batch-users.md that starts with `prefix`, as arguments after `kubectl`."""
    [line] = [line for line in BATCH_USERS.read_text().splitlines() if line.startswith(prefix)]
    return shlex.split(line.partition("  #")[0])[1:]
