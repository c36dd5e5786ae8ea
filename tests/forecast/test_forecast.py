"""Each team's forecast and the Markdown the plan prints (components/forecast/forecast.py): the
trace it runs, before → after a change, and what it says when it cannot forecast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.forecast import forecast as fc
from components.forecast.forecast import (
    Fidelity,
    Forecast,
    duration_text,
    forecast,
    forecast_markdown,
    percentile,
    stack_queues,
    synthetic_spec,
    synthetic_trace,
)
from components.forecast.trace import Pod, TraceJob, mean_duration_s, offered_load, write_trace
from components.kueue.objects import queue_set
from components.multikueue.manager import manager_queue_set
from components.multikueue.worker import worker_facts
from testbed.harness import ROOT
from testbed.stacks import (
    MULTIKUEUE_MANAGER,
    MULTIKUEUE_SWEDEN,
    MULTIKUEUE_WEST,
    load_stack,
    multikueue_example,
    with_shares,
    workers_of,
)


def side(config_map: dict[str, Any]) -> tuple[Any, Any]:
    config = load_stack(config_map)
    return config, queue_set(config)


def rows(markdown: str) -> dict[str, list[str]]:
    """team -> the cells of its row in the forecast table."""
    lines = markdown.splitlines()
    start = lines.index(fc.HEADER) + 2
    found = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        found[cells[0]] = cells[1:]
    return found


def test_the_same_queues_on_both_sides_forecast_no_change(dev_config_map: dict[str, Any]) -> None:
    config, built = side(dev_config_map)
    trace = synthetic_trace(config, jobs=400)
    assert trace is not None
    one, other = forecast(stack_queues(config, built), trace), forecast(stack_queues(*side(dev_config_map)), trace)
    assert isinstance(one, Forecast) and one == other
    text = forecast_markdown(side(dev_config_map), side(dev_config_map), Path("/nonexistent"))
    assert text == (
        "\n#### Waiting-time forecast: stack `dev`, before → after\n\n"
        "The queues are the same on both sides, so the forecast does not change.\n"
    )


def test_cutting_a_busy_teams_share_raises_its_wait(dev_config_map: dict[str, Any]) -> None:
    # The dev stack: research 60 %, platform 40 %, 3 T4 GPUs. The trace is the base's (research submits
    # 60 % of the work); at 30 / 70 research keeps its 1 GPU but loses vCPUs and fair-sharing weight.
    base, head = side(dev_config_map), side(with_shares(dev_config_map, research=30, platform=70))
    trace = synthetic_trace(base[0], side="the base")
    assert trace is not None
    before, after = (forecast(stack_queues(*s), trace) for s in (base, head))
    assert isinstance(before, Forecast) and isinstance(after, Forecast)
    r0, r1 = before.teams["research"], after.teams["research"]
    assert r1.median_wait_s is not None and r0.median_wait_s is not None and r1.median_wait_s > 2 * r0.median_wait_s
    assert r1.p95_wait_s is not None and r0.p95_wait_s is not None and r1.p95_wait_s > r0.p95_wait_s
    assert after.teams["platform"].median_wait_s <= before.teams["platform"].median_wait_s  # type: ignore[operator]
    table = rows(forecast_markdown(base, head, Path("/nonexistent")))
    jobs, median, p95, gpu_hours, finished, preempted = table["research"]
    assert jobs == f"{r0.jobs:,}"  # the same jobs on both sides: one number
    assert median == f"{duration_text(r0.median_wait_s)} → {duration_text(r1.median_wait_s)}"
    assert " → " in finished and " → " in preempted


def test_the_plain_plans_forecast_names_its_trace_and_what_it_leaves_out(dev_config_map: dict[str, Any]) -> None:
    text = forecast_markdown(None, side(dev_config_map), Path("/nonexistent"))
    lines = text.splitlines()
    assert lines[:3] == ["", "#### Waiting-time forecast: stack `dev`", ""]
    assert lines[3].startswith("Trace: synthetic, seed 1, load 0.8, ")
    assert "jobs over " in lines[3] and "(research 60 %, platform 40 %)" in lines[3]
    assert set(rows(text)) == {"research", "platform"} and all(" → " not in c for c in rows(text)["research"])
    assert any(
        line.startswith("Not modelled: the simulator admits on quota alone") and "ProvisioningRequest" in line
        for line in lines
    )
    assert lines[-1].startswith("Fidelity: the e2e tier replays traces through real Kueue")


def test_a_measured_error_is_stated(dev_config_map: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fc, "MEASURED_ERROR", Fidelity(0.3, 0.15, 0.9, (0.5, 1.25), "traces/dev.csv, seeds 1-5"))
    text = forecast_markdown(None, side(dev_config_map), Path("/nonexistent"))
    assert text.splitlines()[-1] == (
        "Fidelity: the e2e tier replays traces through real Kueue and holds the simulator to each team's p95 wait "
        "within 15 and its median within 30 percentile points of Kueue's, at least 90% of the waiting jobs admitted "
        "in Kueue's order, and 0.5 to 1.25 times Kueue's preemptions (traces/dev.csv, seeds 1-5; "
        "docs/forecast.md#fidelity)."
    )


def test_the_stacks_own_trace_serves_both_sides(dev_config_map: dict[str, Any], tmp_path: Path) -> None:
    gpu = Pod(1000, 1024, 1)
    jobs = [
        TraceJob("a", "research", 0.0, 3600.0, 1, gpu),
        TraceJob("b", "research", 0.0, 3600.0, 1, gpu),
        TraceJob("c", "research", 0.0, 3600.0, 1, gpu),
        TraceJob("d", "platform", 60.0, 3600.0, 1, gpu, "high"),
    ]
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "dev.csv").write_text(write_trace(jobs))
    base, head = side(dev_config_map), side(with_shares(dev_config_map, research=70, platform=30))
    text = forecast_markdown(base, head, tmp_path)
    assert "Trace: `traces/dev.csv`, 4 jobs over 1.0 h." in text
    # 3 GPUs: research's three jobs take them all at 0; platform's job reclaims its GPU at 60 s on the
    # base (40 % of 3: 1 GPU); at 30 % it has none and waits for the first of research's to end.
    table = rows(text)
    assert table["platform"][1] == "0 s → 59 min"
    assert table["research"][5] == "1 → 0"  # the preemption the base has and the change does not


def test_a_trace_that_does_not_read_is_said_instead_of_a_table(dev_config_map: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "dev.csv").write_text(
        "submit_s,team,pods,cpu,memory,gpus,duration_s\n0,ghosts,1,1,1Gi,0,5\n"
    )
    text = forecast_markdown(None, side(dev_config_map), tmp_path)
    assert fc.HEADER not in text
    assert "Not forecast: traces/dev.csv: line 2, column `team`: 'ghosts' is not a team of the stack" in text


def test_what_the_simulator_cannot_model_is_said_instead_of_a_table(dev_config_map: dict[str, Any]) -> None:
    extension = {
        **dev_config_map,
        "azure-native:location": "eastus",
        "kueue-aks:kueue": {"install": "aksExtension"},
        "kueue-aks:cluster": {**dev_config_map["kueue-aks:cluster"], "kubernetesVersion": "1.34"},
    }
    text = forecast_markdown(side(dev_config_map), side(extension), Path("/nonexistent"))
    assert fc.HEADER not in text
    assert (
        "Not forecast: the simulator does not model this change's queues: Kueue's manager configuration is not "
        "the stack's to read (AKS's managed extension sets its own)."
    ) in text


def test_a_team_the_base_does_not_have_is_said(dev_config_map: dict[str, Any], tmp_path: Path) -> None:
    three = dict(dev_config_map)
    three["kueue-aks:teams"] = [
        *dev_config_map["kueue-aks:teams"][:1],
        {"name": "platform", "share": 20},
        {"name": "vision", "share": 20},
    ]
    (tmp_path / "traces").mkdir()
    jobs = [
        TraceJob("v", "vision", 0.0, 60.0, 1, Pod(1000, 1024)),
        TraceJob("r", "research", 0.0, 60.0, 1, Pod(1000, 1024)),
    ]
    (tmp_path / "traces" / "dev.csv").write_text(write_trace(jobs))
    text = forecast_markdown(side(dev_config_map), side(three), tmp_path)
    assert "On the base, 1 jobs of `vision` have no queue (the team or its LocalQueue is not there)." in text
    assert rows(text)["vision"][0] == "– → 1"


def test_the_synthetic_trace_is_scaled_to_the_pools_at_the_stated_load(dev_config_map: dict[str, Any]) -> None:
    config = load_stack(dev_config_map)
    spec = synthetic_spec(config, load=0.8, jobs=2_000)
    assert spec is not None
    # A GPU pod is a T4 node's share per GPU (3.86 vCPU, 25.7 GiB of 3 nodes' capacity ÷ 3 GPUs); a CPU
    # pod a quarter of a D8s_v5 node; gangs of 4 and 8 never fit the 3 GPUs.
    assert spec.gpu_pod == Pod(3860, 26322, 1) and spec.cpu_pod == Pod(1955, 7604)
    assert [g for g, _ in spec.gpu_split] == [1, 2]
    assert offered_load(spec, 3) == pytest.approx(0.8)
    # The CPU work is the same fraction of the CPU pool (4 × 7.82 vCPU): 1..4 pods, 2.5 on average.
    research, platform = spec.teams
    cpu_work = sum(t.rate_per_s * (1 - t.gpu_fraction) for t in spec.teams) * 2.5 * 1955 * mean_duration_s(spec)
    assert cpu_work / 31_280 == pytest.approx(0.8)
    assert research.rate_per_s / platform.rate_per_s == pytest.approx(60 / 40)
    assert research.end_s * (research.rate_per_s + platform.rate_per_s) == pytest.approx(2_000)


def test_percentiles_and_durations_read_as_people_read_them() -> None:
    assert percentile([], 50) is None
    assert [percentile([5.0, 1.0, 3.0, 2.0], p) for p in (50, 95, 100)] == [2.0, 5.0, 5.0]
    assert [duration_text(s) for s in (0, 59.4, 600, 5400, 200_000)] == ["0 s", "59 s", "10 min", "1.5 h", "2.3 days"]


def test_the_example_in_the_docs_is_what_the_forecast_prints(dev_config_map: dict[str, Any]) -> None:
    """docs/forecast.md shows the forecast of its example: the dev stack against research 70 / platform 30."""
    page = (ROOT / "docs" / "forecast.md").read_text()
    shown = page.split("````markdown\n", 1)[1].split("````", 1)[0]
    text = forecast_markdown(
        side(with_shares(dev_config_map, research=70, platform=30)), side(dev_config_map), Path("/nonexistent")
    )
    assert text.lstrip("\n") == shown, "update docs/forecast.md's example to what the forecast now prints"


def test_a_multikueue_manager_is_not_forecast() -> None:
    manager = load_stack(multikueue_example(MULTIKUEUE_MANAGER), MULTIKUEUE_MANAGER)
    facts = {
        "westus3": worker_facts(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST)),
        "swedencentral": worker_facts(load_stack(multikueue_example(MULTIKUEUE_SWEDEN), MULTIKUEUE_SWEDEN)),
    }
    text = forecast_markdown(
        None, (manager, manager_queue_set(manager, workers_of(manager, facts))), Path("/nonexistent")
    )
    assert text.splitlines()[3] == (
        "Not forecast: the simulator does not model the stack's queues: a MultiKueue "
        "manager dispatches its jobs to its workers, which are not simulated."
    )
