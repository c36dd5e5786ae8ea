"""The job trace (components/forecast/trace.py): the CSV format's reader, writer and refusals, and
the synthetic generator's sizes that fit a pool. The generator's statistics are tested where the
benchmark uses them (tests/test_outcomes*.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.forecast import trace
from components.forecast.trace import Pod, TraceError, TraceJob, read_trace, write_trace

HEADER = "submit_s,team,pods,cpu,memory,gpus,duration_s,priority,queue,name"
TEAMS = {"research": ("default", "topology"), "platform": ("default", "topology")}
PRIORITIES = ("high", "normal", "low")


def problems(text: str, **kwargs) -> list[tuple[int, str, str]]:
    with pytest.raises(TraceError) as raised:
        read_trace(text, teams=TEAMS, priorities=PRIORITIES, **kwargs)
    return [(p.line, p.column, p.message) for p in raised.value.problems]


def test_a_trace_reads_its_quantities_in_kubernetes_units() -> None:
    text = "\n".join(
        [
            "# exported from a cluster",
            "team,submit_s,pods,cpu,memory,gpus,duration_s",  # any column order; optional columns left out
            "research,0,2,500m,16Gi,1,3600",
            "platform,12.5,1,4,1G,0,90.5",
        ]
    )
    jobs = read_trace(text, teams=TEAMS, priorities=PRIORITIES)
    assert jobs == (
        TraceJob("research-3", "research", 0.0, 3600.0, 2, Pod(500, 16384, 1)),
        TraceJob("platform-4", "platform", 12.5, 90.5, 1, Pod(4000, 954, 0)),  # 1G = 953.67 MiB, held as 954
    )
    assert jobs[0].gpus == 2 and jobs[0].queue == "default" and jobs[0].priority is None


def test_jobs_come_out_in_submission_order_and_keep_priority_and_queue() -> None:
    text = "\n".join([HEADER, "30,research,1,1,1Gi,0,5,high,topology,late", "10,research,1,1,1Gi,0,5,,,early"])
    late, early = read_trace(text, teams=TEAMS, priorities=PRIORITIES)[::-1]
    assert [early.name, late.name] == ["early", "late"]
    assert (late.priority, late.queue) == ("high", "topology")
    assert (early.priority, early.queue) == (None, "default")


def test_write_then_read_gives_the_same_jobs() -> None:
    jobs = (
        TraceJob("research/a,1", "research", 0.0, 3600.0, 4, Pod(1955, 7604, 0), "low"),  # a comma in a name is quoted
        TraceJob("b", "platform", 0.1 + 0.2, 12.25, 1, Pod(3860, 26322, 1), None, "topology"),
        TraceJob("c", "platform", 86_400.0, 0.0, 8, Pod(500, 1, 1)),
    )
    text = write_trace(jobs, comment="two lines\nof provenance")
    assert text.startswith("# two lines\n# of provenance\n" + HEADER + "\n")
    assert read_trace(text, teams=TEAMS, priorities=PRIORITIES) == jobs
    assert write_trace(read_trace(text)) == write_trace(jobs)


def test_the_synthetic_trace_writes_and_reads_back(dev_config_map) -> None:
    spec = trace.TraceSpec(
        (trace.TeamLoad("research", 60, 0, 20_000, 0.01, 0.5),), Pod(3860, 26322, 1), Pod(1955, 7604), 4, 3600.0
    )
    jobs = tuple(trace.generate(spec, 3))
    assert jobs and read_trace(write_trace(jobs)) == jobs


def test_bad_cells_are_each_named_by_line_and_column() -> None:
    text = "\n".join(
        [
            HEADER,
            "-1,research,1,1,1Gi,0,5,,,",  # negative time
            "0,research,0,1,1Gi,0,5,,,",  # no pods
            "0,research,1,4x,1Gi,0,5,,,",  # not a quantity
            "0,research,1,1,-1Gi,0,5,,,",  # negative request
            "0,research,1,1,1Gi,1.5,5,,,",  # half a GPU
            "0,ghosts,1,1,1Gi,0,5,,,",  # a team the stack does not have
            "0,research,1,1,1Gi,0,5,urgent,,",  # a priority class the stack does not define
            "0,research,1,1,1Gi,0,5,,batch,",  # a LocalQueue the team does not have
            "0,research,1,2000,1Gi,0,5,,,",  # 2,000 cores a pod
            "0,research,1,1,1Gi,0,1e9,,,",  # runs for 30 years
            "0,research,1,1,1Gi,0,nan,,,",
            "0,research,1,1,1Gi,0",  # too few cells
        ]
    )
    found = problems(text)
    assert [(line, column) for line, column, _ in found] == [
        (2, "submit_s"),
        (3, "pods"),
        (4, "cpu"),
        (5, "memory"),
        (6, "gpus"),
        (7, "team"),
        (8, "priority"),
        (9, "queue"),
        (10, "cpu"),
        (11, "duration_s"),
        (12, "duration_s"),
        (13, ""),
    ]
    messages = dict(((line, column), message) for line, column, message in found)
    assert "not a Kubernetes quantity" in messages[(4, "cpu")]
    assert "research, platform" in messages[(7, "team")]  # what is allowed
    assert "high, normal, low; empty for none" in messages[(8, "priority")]
    assert "at most 1024000 a pod" in messages[(10, "cpu")]
    assert "has 6 cells; the header names 10 columns" in messages[(13, "")]
    # The message names the file, the line and the column.
    with pytest.raises(TraceError, match=r"^traces/dev.csv: line 2, column `submit_s`: '-1' must be"):
        read_trace(text, where="traces/dev.csv", teams=TEAMS, priorities=PRIORITIES)


def test_the_header_is_checked_before_any_job() -> None:
    assert problems("submit_s,team,pods,cpu,gpus,duration_s,colour\n0,a,1,1,0,5,red") == [
        (
            1,
            "colour",
            "is no column of a trace; the columns are submit_s, team, pods, cpu, memory, gpus, duration_s, "
            "priority, queue, name",
        ),
        (1, "memory", "is missing; every trace has submit_s, team, pods, cpu, memory, gpus, duration_s"),
    ]
    assert problems("submit_s,team,team,pods,cpu,memory,gpus,duration_s\n")[0][:2] == (1, "team")
    assert problems("") == [
        (0, "", "is empty: it needs a header line (submit_s,team,pods,cpu,memory,gpus,duration_s) and jobs")
    ]
    assert problems("# only a comment\n\n" + HEADER) == [(0, "", "has a header and no jobs")]


def test_names_are_unique_and_rows_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert problems("\n".join([HEADER, "0,research,1,1,1Gi,0,5,,,a", "1,research,1,1,1Gi,0,5,,,a"])) == [
        (3, "name", "'a' is the name of the job on line 2")
    ]
    monkeypatch.setattr(trace, "MAX_JOBS", 3)
    rows = [f"{i},research,1,1,1Gi,0,5,,," for i in range(4)]
    assert problems("\n".join([HEADER, *rows])) == [(5, "", "is job 4; a trace holds at most 3")]
    assert problems("\n".join([HEADER, "0,research,1,1,1Gi,0,5,,," + "x" * trace.MAX_LINE]))[0][2].startswith("has ")


def test_many_problems_are_counted_past_the_first_twenty() -> None:
    rows = [f"-{i},research,1,1,1Gi,0,5,,," for i in range(1, 31)]
    with pytest.raises(TraceError) as raised:
        read_trace("\n".join([HEADER, *rows]))
    assert len(raised.value.problems) == trace.MAX_PROBLEMS and raised.value.more == 10
    assert str(raised.value).endswith("... and 10 more")


def test_a_file_that_cannot_be_read_is_a_trace_error_too(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot be read"):
        trace.load_trace(tmp_path / "missing.csv")
    (tmp_path / "latin1.csv").write_bytes(HEADER.encode() + b"\n0,caf\xe9,1,1,1Gi,0,5,,,\n")
    with pytest.raises(TraceError, match="is not UTF-8 text"):
        trace.load_trace(tmp_path / "latin1.csv")
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b"\n0,research,1,1,1Gi,0,5,,,\n")
    assert len(trace.load_trace(tmp_path / "bom.csv")) == 1  # a spreadsheet's byte-order mark is fine


def test_sizes_that_fit_keep_philly_s_proportions() -> None:
    assert trace.fitting_split(8) == trace.PHILLY_GPU_SPLIT
    (one, p1), (two, p2) = trace.fitting_split(3)  # 4 and 8 GPUs never fit 3
    assert (one, two) == (1, 2) and (p1, p2) == pytest.approx((0.875, 0.125))
    assert trace.fitting_split(0) == ()
    assert trace.mean_gpus(trace.fitting_split(3)) == pytest.approx(1.125)
    assert [trace.gpus_for(u, trace.fitting_split(3)) for u in (0.0, 0.874, 0.876, 0.999)] == [1, 1, 2, 2]
