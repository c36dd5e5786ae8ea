"""The Grafana dashboard for Kueue's queues, as plain data (kueue-aks:monitoring; docs/monitoring.md).

One dashboard serves every stack: a `team` variable (the team namespaces, read from Kueue's
LocalQueue series) narrows every panel to that team's LocalQueues and its ClusterQueues `<team>`
and `<team>-topology`. The JSON in dashboards/ is this function's output (a test keeps them
equal); regenerate it with `python -m components.monitoring.dashboard > dashboards/kueue-aks.json`.

Every metric a query names is one Kueue exports (kueue v0.19.2 pkg/metrics/metrics.go); the e2e
tier scrapes the real controller and fails on any name the scrape does not contain. The quota
panels need `metrics.enableClusterQueueResources`, which kueue_values sets when monitoring is on.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from ..config.names import TOPOLOGY_QUEUE_SUFFIX

DASHBOARD_UID = "kueue-aks-queues"
DASHBOARD_TITLE = "Kueue queues (kueue-aks)"
# Grafana dashboard JSON schema version of Grafana 10/11 (what Azure Managed Grafana runs).
SCHEMA_VERSION = 39

# Every Kueue replica serves metrics, each labelled with its role (kueue v0.19.2
# pkg/util/roletracker): only the leader's (or a lone replica's) count, or gauges would double.
ACTIVE_REPLICA = 'replica_role!="follower"'
# A team's queues: its namespace holds its LocalQueues; its ClusterQueues are named after it.
LOCAL_QUEUES = f'namespace=~"$team", {ACTIVE_REPLICA}'
CLUSTER_QUEUES = f'cluster_queue=~"($team)|($team){TOPOLOGY_QUEUE_SUFFIX}", {ACTIVE_REPLICA}'
PREEMPTING_QUEUES = f'preempting_cluster_queue=~"($team)|($team){TOPOLOGY_QUEUE_SUFFIX}", {ACTIVE_REPLICA}'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _panel(
    title: str, description: str, targets: list[tuple[str, str]], *, unit: str = "short", stack: bool = False
) -> dict[str, Any]:
    """A time series panel; `targets` are (PromQL, legend) pairs."""
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {
            "defaults": {"unit": unit, "custom": {"stacking": {"mode": "normal" if stack else "none"}}},
            "overrides": [],
        },
        "options": {
            "legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def _wait_quantile(metric: str, selector: str, by: str) -> str:
    return f"histogram_quantile(0.9, sum by (le, {by}) (rate({metric}_bucket{{{selector}}}[$__rate_interval])))"


def _rows() -> list[tuple[str, list[dict[str, Any]]]]:
    cq, lq = CLUSTER_QUEUES, LOCAL_QUEUES
    cluster_queues = [
        _panel(
            "Pending workloads per ClusterQueue",
            "Workloads waiting for quota. 'inadmissible' ones wait for the cluster to change.",
            [(f"sum by (cluster_queue, status) (kueue_pending_workloads{{{cq}}})", "{{cluster_queue}} {{status}}")],
            stack=True,
        ),
        _panel(
            "Admitted and reserving workloads per ClusterQueue",
            "Workloads holding quota: admitted (running or about to) and reserving (quota held, checks pending).",
            [
                (f"sum by (cluster_queue) (kueue_admitted_active_workloads{{{cq}}})", "{{cluster_queue}} admitted"),
                (f"sum by (cluster_queue) (kueue_reserving_active_workloads{{{cq}}})", "{{cluster_queue}} reserving"),
            ],
        ),
        _panel(
            "Quota used against nominal quota",
            "Per flavor (node pool) and resource: what admitted workloads use, and the team's nominal quota.",
            [
                (
                    f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_usage{{{cq}}})",
                    "{{cluster_queue}} {{flavor}} {{resource}} used",
                ),
                (
                    f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota{{{cq}}})",
                    "{{cluster_queue}} {{flavor}} {{resource}} nominal",
                ),
            ],
        ),
        _panel(
            "Borrowed from the cohort",
            "Usage above nominal quota: idle quota of other teams, given back by preemption when they need it.",
            [
                (
                    f"sum by (cluster_queue, flavor, resource) (clamp_min(kueue_cluster_queue_resource_usage{{{cq}}} "
                    f"- on (cluster_queue, flavor, resource) kueue_cluster_queue_nominal_quota{{{cq}}}, 0))",
                    "{{cluster_queue}} {{flavor}} {{resource}}",
                )
            ],
        ),
        _panel(
            "Preemptions and evictions",
            "Workloads preempted by this team's queues (by reason) and this team's workloads evicted (by reason).",
            [
                (
                    f"sum by (preempting_cluster_queue, reason) "
                    f"(increase(kueue_preempted_workloads_total{{{PREEMPTING_QUEUES}}}[$__rate_interval]))",
                    "preempted by {{preempting_cluster_queue}} ({{reason}})",
                ),
                (
                    "sum by (cluster_queue, reason) "
                    f"(increase(kueue_evicted_workloads_total{{{cq}}}[$__rate_interval]))",
                    "evicted from {{cluster_queue}} ({{reason}})",
                ),
            ],
        ),
        _panel(
            "Admission wait time (p90) per ClusterQueue",
            "Time from creation to admission of the workloads admitted in the interval.",
            [(_wait_quantile("kueue_admission_wait_time_seconds", cq, "cluster_queue"), "{{cluster_queue}}")],
            unit="s",
        ),
    ]
    local_queues = [
        _panel(
            "Pending workloads per LocalQueue",
            "What the team's users wait for, per LocalQueue.",
            [
                (
                    f"sum by (namespace, name, status) (kueue_local_queue_pending_workloads{{{lq}}})",
                    "{{namespace}}/{{name}} {{status}}",
                )
            ],
            stack=True,
        ),
        _panel(
            "Admitted workloads per LocalQueue",
            "Workloads of the LocalQueue that hold quota and run.",
            [
                (
                    f"sum by (namespace, name) (kueue_local_queue_admitted_active_workloads{{{lq}}})",
                    "{{namespace}}/{{name}}",
                )
            ],
        ),
        _panel(
            "Resources in use per LocalQueue",
            "Per flavor (node pool) and resource.",
            [
                (
                    f"sum by (namespace, name, flavor, resource) (kueue_local_queue_resource_usage{{{lq}}})",
                    "{{namespace}}/{{name}} {{flavor}} {{resource}}",
                )
            ],
        ),
        _panel(
            "Evicted workloads per LocalQueue",
            "Preempted or otherwise evicted, by reason.",
            [
                (
                    f"sum by (namespace, name, reason) (increase(kueue_local_queue_evicted_workloads_total{{{lq}}}"
                    "[$__rate_interval]))",
                    "{{namespace}}/{{name}} ({{reason}})",
                )
            ],
        ),
        _panel(
            "Admission wait time (p90) per LocalQueue",
            "Time from creation to admission.",
            [
                (
                    _wait_quantile("kueue_local_queue_admission_wait_time_seconds", lq, "namespace, name"),
                    "{{namespace}}/{{name}}",
                )
            ],
            unit="s",
        ),
    ]
    # Only a MultiKueue manager exports these (kueue v0.19.2 pkg/metrics/metrics.go, subsystem "multikueue"):
    # elsewhere the row stays empty. Each series is per ClusterQueue and worker (`cluster`).
    multikueue = [
        _panel(
            "Workloads dispatched per worker",
            "MultiKueue manager: copies of the team's admitted workloads created in each worker cluster.",
            [
                (
                    f"sum by (cluster_queue, cluster) (increase(multikueue_workloads_dispatched_total{{{cq}}}"
                    "[$__rate_interval]))",
                    "{{cluster_queue}} to {{cluster}}",
                )
            ],
        ),
        _panel(
            "Workloads admitted per worker",
            "MultiKueue manager: where the team's workloads ran, by the worker that admitted them.",
            [
                (
                    f"sum by (cluster_queue, cluster) (increase(multikueue_workloads_admitted_total{{{cq}}}"
                    "[$__rate_interval]))",
                    "{{cluster_queue}} on {{cluster}}",
                )
            ],
        ),
    ]
    return [
        ("ClusterQueues: the team's quota", cluster_queues),
        ("LocalQueues: what the team's users see", local_queues),
        ("MultiKueue: the worker clusters the team's jobs run in", multikueue),
    ]


def dashboard() -> dict[str, Any]:
    """The dashboard as Grafana's import JSON (no `id`, so an import creates or replaces it by uid)."""
    panels: list[dict[str, Any]] = []
    y = 0
    for i, (title, row) in enumerate(_rows()):
        panels.append(
            {
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                "id": 100 * (i + 1),
                "panels": [],
            }
        )
        y += 1
        for j, panel in enumerate(row):
            panels.append(
                {
                    **panel,
                    "id": 100 * (i + 1) + j + 1,
                    "gridPos": {"h": 8, "w": 12, "x": 12 * (j % 2), "y": y + 8 * (j // 2)},
                }
            )
        y += 8 * ((len(row) + 1) // 2)
    return {
        "uid": DASHBOARD_UID,
        "title": DASHBOARD_TITLE,
        "description": "Kueue's ClusterQueues and LocalQueues per team, from the stack's managed Prometheus.",
        "tags": ["kueue", "kueue-aks", "batch"],
        "editable": True,
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                },
                {
                    # Teams are the namespaces holding LocalQueues (every LocalQueue is in a team namespace).
                    "name": "team",
                    "label": "Team",
                    "type": "query",
                    "datasource": DATASOURCE,
                    "query": {"query": "label_values(kueue_local_queue_status, namespace)", "refId": "team"},
                    "definition": "label_values(kueue_local_queue_status, namespace)",
                    "refresh": 2,
                    "includeAll": True,
                    "multi": True,
                    "sort": 1,
                    "current": {},
                    "hide": 0,
                },
            ]
        },
        "panels": panels,
    }


def queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression in the dashboard: panel targets and query variables."""
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in board["templating"]["list"] if v["type"] == "query"]
    return exprs


_PROMQL_WORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (functions, keywords, label names and strings left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings: label values, regexes
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)  # label lists
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word, rest = match.group(), text[match.end() :].lstrip()
        if word in _PROMQL_WORDS or rest.startswith("(") or text[: match.start()].endswith("$"):
            continue
        names.add(word)
    return names


def label_values_metric(definition: str) -> set[str]:
    """The metric a `label_values(metric, label)` variable reads."""
    match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", definition)
    return {match.group(1)} if match else metric_names(definition)


def dashboard_metric_names(board: dict[str, Any]) -> set[str]:
    """Every metric name the dashboard's queries and variables read."""
    return {
        name
        for expr in queries(board)
        for name in (label_values_metric(expr) if expr.startswith("label_values(") else metric_names(expr))
    }


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(dashboard_json())
