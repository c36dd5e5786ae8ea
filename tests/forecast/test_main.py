"""`python -m components.forecast trace` (components/forecast/__main__.py): a trace from files of
`kubectl get -o json`, or from a kubeconfig's cluster, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.forecast.__main__ import NAMESPACES_PATH, WORKLOADS_PATH, main
from components.forecast.trace import read_trace
from testbed.harness import ROOT
from testbed.kube_fake import FakeCluster
from testbed.workloads import FINISHED, NAMESPACES, workload

WORKLOADS = {
    "kind": "List",
    "items": [
        workload("a", "research", "2025-03-01T10:00:00Z", FINISHED),
        workload("b", "platform", "2025-03-01T10:00:00Z", FINISHED[:2]),
    ],
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "workloads.json").write_text(json.dumps(WORKLOADS))
    (tmp_path / "namespaces.json").write_text(json.dumps(NAMESPACES))
    return tmp_path / "workloads.json", tmp_path / "namespaces.json"


def test_the_trace_is_written_from_kubectls_json(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads, namespaces = files
    assert main(["trace", "--from", str(workloads), "--namespaces", str(namespaces)]) == 0
    out, err = capsys.readouterr()
    assert [j.name for j in read_trace(out)] == ["research/a"]
    assert err.strip() == "1 Workloads kept; 1 left out: not finished"
    assert (
        main(
            [
                "trace",
                "--from",
                str(workloads),
                "--namespaces",
                str(namespaces),
                "-o",
                str(tmp_path / "traces" / "dev.csv"),
            ]
        )
        == 0
    )
    assert read_trace((tmp_path / "traces" / "dev.csv").read_text()) == read_trace(out)


def test_the_trace_is_read_from_a_kubeconfigs_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster(
        {
            f"{WORKLOADS_PATH}/research-a": WORKLOADS["items"][0],
            **{f"{NAMESPACES_PATH}/{ns['metadata']['name']}": ns for ns in NAMESPACES["items"]},
        }
    )
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    with cluster.serving():
        assert main(["trace", "--kubeconfig", str(tmp_path / "kubeconfig")]) == 0
    assert [j.name for j in read_trace(capsys.readouterr().out)] == ["research/a"]
    assert set(cluster.reads) == {WORKLOADS_PATH, NAMESPACES_PATH}


def test_input_that_cannot_be_read_exits_1(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads, namespaces = files
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["trace", "--from", str(tmp_path / "bad.json"), "--namespaces", str(namespaces)]) == 1
    assert "bad.json: is not the JSON of `kubectl get ... -o json`" in capsys.readouterr().err
    assert main(["trace", "--from", str(tmp_path / "missing.json"), "--namespaces", str(namespaces)]) == 1
    assert "missing.json: cannot be read" in capsys.readouterr().err
    assert main(["trace", "--from", str(workloads), "--namespaces", str(workloads)]) == 1  # no team namespace
    assert "no finished Workload in a team namespace" in capsys.readouterr().err


def test_arguments_that_do_not_go_together_exit_2(files: tuple[Path, Path]) -> None:
    workloads, _ = files
    for argv in (["trace", "--from", str(workloads)], ["trace", "--kubeconfig", "k", "--from", str(workloads)], []):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2


def test_it_runs_as_a_module(files: tuple[Path, Path]) -> None:
    workloads, namespaces = files
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "components.forecast",
            "trace",
            "--from",
            str(workloads),
            "--namespaces",
            str(namespaces),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2] == "submit_s,team,pods,cpu,memory,gpus,duration_s,priority,queue,name"
