"""components/kueue/verdicts.py: a pass is remembered by everything it depends on, and only a pass."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.kueue import queues as kueue_queues
from components.kueue import verdicts
from components.kueue.objects import QueueSet, queue_set
from testbed.harness import ROOT
from testbed.stacks import load_stack, stack_file_config


@pytest.fixture
def dev() -> tuple[Any, QueueSet]:
    config = load_stack(stack_file_config())
    return config, queue_set(config)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """The program's validation with its verdicts in tmp_path; each run of the validator counted."""
    runs: list[int] = []
    real = kueue_queues.check_objects

    def check(*args: Any, **kwargs: Any) -> None:
        runs.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(kueue_queues, "check_objects", check)
    monkeypatch.setattr(kueue_queues, "user_cache", lambda: tmp_path)
    return runs


def test_a_pass_is_remembered_and_any_change_validates_again(dev: tuple[Any, QueueSet], counted: list[int]) -> None:
    config, queues = dev
    kueue_queues.validated_objects(config, queues)
    kueue_queues.validated_objects(config, queues)
    assert len(counted) == 1, "the second preview of the same objects reuses the first's verdict"
    changed = copy.deepcopy(queues.objects)
    changed[-1]["metadata"]["labels"] = {"team": "other"}
    kueue_queues.validated_objects(config, dataclasses.replace(queues, objects=changed))
    assert len(counted) == 2


def test_a_failure_is_never_remembered(dev: tuple[Any, QueueSet], counted: list[int]) -> None:
    config, queues = dev
    broken = copy.deepcopy(queues.objects)
    queue = next(o for o in broken if o["kind"] == "ClusterQueue")
    queue["spec"]["queueingStrategy"] = "Sometimes"  # not in the CRD's enum
    invalid = dataclasses.replace(queues, objects=broken)
    for _ in range(2):
        with pytest.raises(pulumi.RunError, match="queueingStrategy"):
            kueue_queues.validated_objects(config, invalid)
    assert len(counted) == 2


def test_the_key_covers_objects_capacity_crds_and_the_validators_code(
    dev: tuple[Any, QueueSet], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, queues = dev
    key = verdicts.verdict_key(queues.objects, queues.capacity, "sha256:a")
    assert verdicts.verdict_key(queues.objects, queues.capacity, "sha256:a") == key
    assert verdicts.verdict_key(queues.objects, queues.capacity, "sha256:b") != key
    assert verdicts.verdict_key(queues.objects[:-1], queues.capacity, "sha256:a") != key
    fewer = {flavor: {**held, "cpu": 0} for flavor, held in queues.capacity.items()}
    assert verdicts.verdict_key(queues.objects, fewer, "sha256:a") != key
    # The validator's code: a copy of its packages, then one byte of one rule changed.
    copies = []
    for package in verdicts.VALIDATOR_PACKAGES:
        folder = tmp_path / package.name
        folder.mkdir()
        for module in package.glob("*.py"):
            (folder / module.name).write_bytes(module.read_bytes())
        copies.append(folder)
    monkeypatch.setattr(verdicts, "VALIDATOR_PACKAGES", tuple(copies))
    assert verdicts.verdict_key(queues.objects, queues.capacity, "sha256:a") == key
    webhooks = copies[0] / "webhooks.py"
    webhooks.write_text(webhooks.read_text() + "\n")
    assert verdicts.verdict_key(queues.objects, queues.capacity, "sha256:a") != key


def test_a_preview_that_reuses_a_verdict_loads_no_validator_library(tmp_path: Path, kueue_chart_cache: Path) -> None:
    """Two fresh interpreters, as two previews: the second imports neither jsonschema nor cel-python."""
    shutil.copytree(kueue_chart_cache / "kueue-aks" / "charts", tmp_path / "kueue-aks" / "charts")
    script = (
        "import json, sys\n"
        "from components.kueue import queues\n"
        "from components.kueue.objects import queue_set\n"
        "from testbed.stacks import load_stack, stack_file_config\n"
        "config = load_stack(stack_file_config())\n"
        "queues.validated_objects(config, queue_set(config))\n"
        "print(json.dumps(sorted(m for m in ('jsonschema', 'celpy', 'lark') if m in sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    seen = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert seen == [["celpy", "jsonschema", "lark"], []], seen
    assert len(list((tmp_path / "kueue-aks" / verdicts.FOLDER).iterdir())) == 1
