"""The Grafana dashboard: the committed JSON is the builder's, every query is scoped to the team's
queues, and the metric-name reader the e2e tier relies on reads PromQL correctly."""

from __future__ import annotations

import json

import pytest

from components.monitoring.dashboard import (
    DASHBOARD_UID,
    dashboard,
    dashboard_json,
    dashboard_metric_names,
    metric_names,
    queries,
)
from testbed.harness import ROOT


def test_committed_dashboard_is_the_builders_output() -> None:
    committed = (ROOT / "dashboards" / "kueue-aks.json").read_text()
    assert committed == dashboard_json(), (
        "regenerate: python -m components.monitoring.dashboard > dashboards/kueue-aks.json"
    )


def test_dashboard_is_importable_json_with_a_team_variable() -> None:
    board = json.loads(dashboard_json())
    assert board["uid"] == DASHBOARD_UID and "id" not in board
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    team = variables["team"]
    assert team["multi"] and team["includeAll"]
    assert team["definition"] == "label_values(kueue_local_queue_status, namespace)"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))


def test_every_panel_query_reads_only_the_selected_teams_queues_from_the_active_replica() -> None:
    panels = [p for p in dashboard()["panels"] if p["type"] != "row"]
    assert len(panels) >= 10
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            # Every selector in the expression names the team and leaves out follower replicas.
            selectors = [part.split("}")[0] for part in expr.split("{")[1:]]
            assert selectors, expr
            for selector in selectors:
                assert "$team" in selector and 'replica_role!="follower"' in selector, (panel["title"], expr)


def test_the_dashboard_covers_what_the_issue_asks_for() -> None:
    names = dashboard_metric_names(dashboard())
    for needed in (
        "kueue_pending_workloads",
        "kueue_local_queue_pending_workloads",
        "kueue_admitted_active_workloads",
        "kueue_local_queue_admitted_active_workloads",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_nominal_quota",
        "kueue_preempted_workloads_total",
        "kueue_admission_wait_time_seconds_bucket",
        "kueue_local_queue_admission_wait_time_seconds_bucket",
    ):
        assert needed in names


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('sum by (cluster_queue, status) (kueue_pending_workloads{cluster_queue=~"a|b"})', {"kueue_pending_workloads"}),
        (
            'histogram_quantile(0.9, sum by (le, name) (rate(x_bucket{namespace=~"$team"}[$__rate_interval])))',
            {"x_bucket"},
        ),
        ('clamp_min(a{q="1"} - on (cq, flavor) b{q="rate(c)"}, 0)', {"a", "b"}),
        ("increase(x_total[5m]) / ignoring (reason) group_left y", {"x_total", "y"}),
        ("sum without (replica_role) (up)", {"up"}),
    ],
)
def test_metric_names_reads_promql(expr: str, expected: set[str]) -> None:
    assert metric_names(expr) == expected


def test_dashboard_metric_names_include_the_team_variables_metric() -> None:
    board = dashboard()
    assert "kueue_local_queue_status" in dashboard_metric_names(board)
    assert "namespace" not in dashboard_metric_names(board)
    assert len(queries(board)) == sum(len(p.get("targets", [])) for p in board["panels"]) + 1
