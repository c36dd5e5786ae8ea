"""The offline plan command: the quota table in words and manifests the validator accepts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import plan
from components.access.members import access_objects
from components.kueue.objects import build_objects, queue_set, quota_table
from components.operators.installs import operator_objects
from components.governance.policies import pool_guard
from components.kueue.policies import aggregated_role_guard, priority_class_guard
from components.operators.policies import rayservice_guard
from components.monitoring.scrape import scrape_objects
from components.kueue.validate import validate_objects
from tests.conftest import load_stack
from tests.harness import ROOT

PlanRunner = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_plan(capsys: pytest.CaptureFixture[str]) -> PlanRunner:
    def run(*args: str, root: Path = ROOT) -> tuple[int, str, str]:
        code = plan.main([*args, "--root", str(root)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


TEAM_TABLE_HEADER = "| team | submit to (namespace/LocalQueue) | ClusterQueue | pools | placement |"


def team_table(markdown: str) -> list[str]:
    """The rows of the plan's team table, without header and separator."""
    lines = markdown.splitlines()
    start = lines.index(TEAM_TABLE_HEADER) + 2
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_dev_table_shows_capacity_shares_and_where_to_submit(run_plan: PlanRunner) -> None:
    code, out, _ = run_plan("--stack", "dev")
    assert code == 0
    assert "| flavor | resource | capacity | research (60%) | platform (40%) | cohort | max per team |" in out
    # T4 pool: 3 nodes × 1 GPU; 60 % -> 1, 40 % -> 1, the cohort keeps 1.
    assert "| gpu | nvidia.com/gpu (GPU) | 3 | 1 | 1 | 1 | 3 |" in out
    # D8s_v5: 8000 m - 180 m reserved = 7.82 vCPU per node × 4 nodes.
    assert "| cpu | cpu (vCPU) | 31.28 | 18.77 | 12.51 | 0 | 31.28 |" in out
    assert "| tas | cpu (vCPU) | 7.82 | 4.69 | 3.13 | 0 | 7.82 |" in out  # one fixed D8s_v5 node
    # One row per LocalQueue: `default` for the ordinary pools, `topology` for the topology-aware one.
    assert team_table(out) == [
        "| research | `research/default` | `research` | cpu, gpu | any node of the pool |",
        "| research | `research/topology` | `research-topology` | tas | packed by topology (every job) |",
        "| platform | `platform/default` | `platform` | cpu, gpu | any node of the pool |",
        "| platform | `platform/topology` | `platform-topology` | tas | packed by topology (every job) |",
    ]
    assert "CRD schema and CEL rules not checked" not in out  # the chart is in the (test) user cache


def test_team_table_follows_the_pools_each_team_uses() -> None:
    config = load_stack({
        "azure-native:location": "eastus2",
        "kueue-aks:nodePools": [
            {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
            {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 2},
            {"name": "packed", "vmSize": "Standard_D4s_v5", "minCount": 2, "maxCount": 2, "topology": True},
        ],
        "kueue-aks:teams": [{"name": "web", "share": 40, "pools": ["cpu"]}, {"name": "hpc", "share": 30, "pools": ["packed"]},
                            {"name": "data", "share": 30, "pools": ["gpu", "packed", "cpu"]}],
    })
    assert team_table(plan.quota_markdown(config, quota_table(config))) == [
        "| web | `web/default` | `web` | cpu | any node of the pool |",
        # Only topology-aware pools: both LocalQueues feed the team's one ClusterQueue.
        "| hpc | `hpc/default` | `hpc-topology` | packed | packed by topology (every job) |",
        "| hpc | `hpc/topology` | `hpc-topology` | packed | packed by topology (every job) |",
        "| data | `data/default` | `data` | cpu, gpu | any node of the pool |",  # flavor order, not config order
        "| data | `data/topology` | `data-topology` | packed | packed by topology (every job) |",
    ]


def test_the_plan_says_how_each_pool_gets_its_nodes(run_plan: PlanRunner) -> None:
    code, out, _ = run_plan("--stack", "dev")
    assert code == 0
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if "autoscaled |" in line}
    assert set(rows) == {"cpu", "tas", "gpu"}
    assert "| cpu | 0–4, autoscaled | at once; nodes follow its pending pods | – |" == rows["cpu"]
    assert rows["gpu"].endswith("all or nothing) | `atomic-scale-up-gpu` |") and "| 0–3," in rows["gpu"]
    assert rows["tas"].endswith("| `atomic-scale-up` |")


def test_the_plan_lists_every_operator_with_its_pinned_version(run_plan: PlanRunner) -> None:
    code, out, _ = run_plan("--stack", "dev")
    assert code == 0
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines()
            if line.startswith("| ") and "system pool" in line}
    assert set(rows) == {"KubeRay", "JobSet", "Kubeflow Trainer", "MPI Operator", "Kubeflow Training Operator (v1)"}
    assert "| 2.2.1 | trainer.kubeflow.org/trainjob |" in rows["Kubeflow Trainer"]
    assert "manifests of `github.com/kubeflow/mpi-operator@v0.8.2`" in rows["MPI Operator"]


def test_manifests_are_the_validated_objects_and_helm_values(run_plan: PlanRunner, tmp_path: Path, crds: Any) -> None:
    code, out, _ = run_plan("--stack", "dev", "--manifests", str(tmp_path / "out"))
    assert code == 0 and "Wrote" in out
    files = sorted((tmp_path / "out").glob("*.yaml"))
    objects = [yaml.safe_load(f.read_text()) for f in files]
    config = plan.load_stack("dev", ROOT)
    # The admission policies first (the role guard before Kueue's chart, the pool guard and the
    # priority-class guard before any work is submitted), then the Kueue objects; apply order kept
    # by the file numbering.
    policies = [*aggregated_role_guard(), *pool_guard(config), *priority_class_guard(config)]
    assert [o["metadata"]["name"] for o in policies] == (["kueue-aks-aggregated-role-guard"] * 2 + ["kueue-aks-pool-guard"] * 2
                                                         + ["kueue-aks-priority-class-guard"] * 2)
    kueue_objects, scraping = build_objects(config), scrape_objects(config)
    assert [o["kind"] for o in scraping] == ["ServiceAccount", "Secret", "ClusterRoleBinding", "ServiceMonitor"]
    # Then the RayService guard, the job operators' CRDs, manifest objects and Trainer's runtime, and
    # the team members' RBAC objects (none: the dev stack lists no members).
    assert access_objects(config, queue_set(config).local_queues) == []
    assert objects == [*policies, *kueue_objects, *scraping, *rayservice_guard(config), *operator_objects(config)]
    assert files[0].name == "001-validatingadmissionpolicy-kueue-aks-aggregated-role-guard.yaml"
    assert files[2].name == "003-validatingadmissionpolicy-kueue-aks-pool-guard.yaml"
    first = kueue_objects[0]
    assert files[len(policies)].name == f"{len(policies) + 1:03d}-{first['kind'].lower()}-{first['metadata']['name']}.yaml"
    # The validator knows Kueue's kinds only.
    assert validate_objects(objects[len(policies):len(policies) + len(kueue_objects)], crds=crds) == []
    helm = sorted(p.name for p in (tmp_path / "out" / "helm").iterdir())
    assert helm == ["jobset-values.yaml", "kubeflow-trainer-values.yaml", "kuberay-operator-values.yaml",
                    "kueue-values.yaml", "nvidia-device-plugin-values.yaml"]
    values = yaml.safe_load((tmp_path / "out" / "helm" / "kueue-values.yaml").read_text())
    assert "controllerManagerConfigYaml" in values["managerConfig"]


def test_bad_stack_config_exits_2_with_the_key(run_plan: PlanRunner, tmp_path: Path) -> None:
    shutil.copy(ROOT / "Pulumi.dev.yaml", tmp_path / "Pulumi.bad.yaml")
    doc = yaml.safe_load((tmp_path / "Pulumi.bad.yaml").read_text())
    doc["config"]["kueue-aks:teams"][0]["share"] = 90
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump(doc))
    code, _, err = run_plan("--stack", "bad", root=tmp_path)
    assert code == 2
    assert "kueue-aks:teams: shares add up to 130%" in err


WORKSPACE_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Monitor/accounts/amw"


@pytest.mark.parametrize("cluster", [
    # A secret as `pulumi config set --secret --path` leaves it in the stack file: still encrypted.
    {"kubeconfig": {"secure": "v1:c2VjcmV0"}},
    {"existing": {"resourceGroup": "rg-batch", "name": "aks-batch"}},
])
def test_plan_works_in_every_cluster_mode(run_plan: PlanRunner, tmp_path: Path, cluster: dict[str, Any]) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-aks:cluster"] = cluster
    if "kubeconfig" in cluster:
        del doc["config"]["azure-native:location"]  # no Azure at all in this mode
        doc["config"]["kueue-aks:monitoring"]["serviceMonitor"] = True
    else:  # the existing cluster's add-on writes to a workspace the stack names
        doc["config"]["kueue-aks:monitoring"]["azureMonitorWorkspaceId"] = WORKSPACE_ID
    (tmp_path / "Pulumi.mode.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = run_plan("--stack", "mode", "--manifests", str(tmp_path / "out"), root=tmp_path)
    assert code == 0, err
    monitor = yaml.safe_load(next((tmp_path / "out").glob("*-servicemonitor-*.yaml")).read_text())
    assert monitor["apiVersion"] == ("monitoring.coreos.com/v1" if "kubeconfig" in cluster else "azmonitoring.coreos.com/v1")
    dev_code, dev_out, _ = run_plan("--stack", "dev")
    # The same queues as the create-mode dev stack: only the cluster differs.
    assert team_table(out) == team_table(dev_out) and dev_code == 0
    assert "v1:c2VjcmV0" not in out + err


def test_missing_stack_file_exits_2(run_plan: PlanRunner, tmp_path: Path) -> None:
    code, _, err = run_plan("--stack", "nope", root=tmp_path)
    assert code == 2 and "Pulumi.nope.yaml does not exist" in err


def test_invalid_objects_exit_3(run_plan: PlanRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    real = plan.queue_set

    def over_capacity(config: Any) -> Any:
        queues = real(config)
        for obj in queues.objects:
            if obj["kind"] == "ClusterQueue":
                obj["spec"]["resourceGroups"][0]["flavors"][-1]["resources"][-1]["nominalQuota"] = 99
        return queues

    monkeypatch.setattr(plan, "queue_set", over_capacity)
    code, _, err = run_plan("--stack", "dev")
    assert code == 3 and "[CAPACITY]" in err


def test_runs_as_a_module_from_the_project_directory() -> None:
    result = subprocess.run([sys.executable, "-m", "components.plan", "--stack", "dev"], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("### kueue-aks plan: stack `dev`")
