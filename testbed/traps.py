"""The adversarial corpus of stack files (tests/config/traps/): where it is, how a refusal must
read, and what an accepted trap must build."""

from __future__ import annotations

import re
from collections.abc import Iterable

from components.config.checks import Problem
from components.config.stack import StackConfig
from components.kueue.objects import queue_set
from testbed.paths import ROOT

TRAPS_DIR = ROOT / "tests" / "config" / "traps"


# Every trap is read as this stack (tests/e2e/engine/test_stack_file_cli.py's too): the stack file's own
# problems are at Pulumi.trap.yaml.
STACK = "trap"
STACK_FILE = f"Pulumi.{STACK}.yaml"


MAX_MESSAGE = 600  # characters per problem: a 10 MB value is never echoed

# What must never reach a user: a traceback, an exception's class name, an object's repr.
_PYTHON = re.compile(r"Traceback|\b[A-Z]\w*(?:Error|Exception)\b|object at 0x|<class '")
# A key path: `<namespace>:<key>...` (ours, azure-native's, a near miss as written).
_KEY_PATH = re.compile(r"[^:\s][^:]*:")
# Stack-file problems that concern the whole file, where no line applies.
_WHOLE_FILE = ("is not a mapping", "is larger than", "is not UTF-8", "has more than", "config: must be")


def problem_faults(problems: Iterable[Problem], stack_file: str = STACK_FILE) -> list[str]:
    """What is wrong with how problems read: each must name where (a key path, or the stack file
    with its line), be short, and hold nothing of Python's."""
    faults = []
    for p in problems:
        if not isinstance(p.path, str) or not isinstance(p.message, str):
            faults.append(f"not text: {p!r}"[:300])
            continue
        if len(p.message) >= MAX_MESSAGE or len(p.path) > 200:
            faults.append(f"too long ({len(p.path)} + {len(p.message)} characters): {str(p)[:200]}")
        if _PYTHON.search(p.message) or _PYTHON.search(p.path):
            faults.append(f"Python in the message: {str(p)[:300]}")
        if p.path == stack_file:
            if not re.search(r"\bline \d+", p.message) and not p.message.startswith(_WHOLE_FILE):
                faults.append(f"a stack-file problem without its line: {str(p)[:300]}")
        elif not _KEY_PATH.match(p.path):
            faults.append(f"no key path: {str(p)[:300]}")
    return faults


def build(config: StackConfig) -> None:
    """A stack's Kueue objects, as the plan builds them (a MultiKueue manager's need its workers)."""
    if config.multi_kueue.role != "manager":
        objects = queue_set(config).objects
        assert objects, "an accepted stack builds no Kueue object"
