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
from components.assembly import stack_parts
from components.k8s import documents
from components.manifests import folders as manifests
from components.access.members import access_objects
from components.kueue.objects import build_objects, queue_set, quota_table
from components.operators.installs import installs, operator_objects
from components.governance.policies import pool_guard
from components.kueue.policies import aggregated_role_guard, priority_class_guard
from components.operators.policies import rayservice_guard
from components.monitoring.scrape import scrape_objects
from components.kueue.validate import validate_objects
from testbed.git import git
from testbed.harness import ROOT
from testbed.stacks import load_stack

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
    assert "| flavor | resource | capacity | research (60%) | platform (40%) | cohort |" in out
    # T4 pool: 3 nodes × 1 GPU; 60 % -> 1, 40 % -> 1, the cohort keeps 1. No team sets `borrowing`,
    # so either can hold the whole pool: no "(≤ n)".
    assert "| gpu | nvidia.com/gpu (GPU) | 3 | 1 | 1 | 1 |" in out
    # D8s_v5: 8000 m - 180 m reserved = 7.82 vCPU per node × 4 nodes.
    assert "| cpu | cpu (vCPU) | 31.28 | 18.77 | 12.51 | 0 |" in out
    assert "| tas | cpu (vCPU) | 7.82 | 4.69 | 3.13 | 0 |" in out  # one fixed D8s_v5 node
    # One row per LocalQueue: `default` for the ordinary pools, `topology` for the topology-aware one.
    assert team_table(out) == [
        "| research | `research/default` | `research` | cpu, gpu | any node of the pool |",
        "| research | `research/topology` | `research-topology` | tas | packed by topology (every job) |",
        "| platform | `platform/default` | `platform` | cpu, gpu | any node of the pool |",
        "| platform | `platform/topology` | `platform-topology` | tas | packed by topology (every job) |",
    ]
    assert "CRD schema and CEL rules not checked" not in out  # the chart is in the (test) user cache


def test_team_table_follows_the_pools_each_team_uses() -> None:
    config = load_stack(
        {
            "azure-native:location": "eastus2",
            "kueue-aks:nodePools": [
                {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
                {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 2},
                {"name": "packed", "vmSize": "Standard_D4s_v5", "minCount": 2, "maxCount": 2, "topology": True},
            ],
            "kueue-aks:teams": [
                {"name": "web", "share": 40, "pools": ["cpu"]},
                {"name": "hpc", "share": 30, "pools": ["packed"]},
                {"name": "data", "share": 30, "pools": ["gpu", "packed", "cpu"]},
            ],
        }
    )
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
    rows = {
        line.split(" | ")[0].lstrip("| "): line
        for line in out.splitlines()
        if line.startswith("| ") and "system pool" in line
    }
    assert set(rows) == {"KubeRay", "JobSet", "Kubeflow Trainer", "MPI Operator", "Kubeflow Training Operator (v1)"}
    assert "| 2.2.1 | trainer.kubeflow.org/trainjob |" in rows["Kubeflow Trainer"]
    assert "manifests of `github.com/kubeflow/mpi-operator@v0.8.2`" in rows["MPI Operator"]


def staged(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The objects of each folder of a plan's --manifests output, in file order."""
    return {
        folder: [documents.load(f.read_text()) for f in sorted((out / folder).glob("*.yaml"))]
        for folder in (manifests.BEFORE_RELEASES, manifests.AFTER_RELEASES)
    }


def test_manifests_are_the_validated_objects_and_helm_values(run_plan: PlanRunner, tmp_path: Path, crds: Any) -> None:
    code, out, _ = run_plan("--stack", "dev", "--manifests", str(tmp_path / "out"))
    assert code == 0 and "Wrote" in out
    assert not list((tmp_path / "out").glob("*.yaml")), "every object is in one of the two folders"
    before, after = staged(tmp_path / "out").values()
    config = plan.load_stack("dev", ROOT)
    # In the program's order (components/assembly.py): the job operators' namespaces, CRDs, manifest
    # objects, Trainer's runtime and the RayService guard; the role guard (before Kueue's chart); the
    # pool guard; monitoring's scrape objects; the priority-class guard and the Kueue objects; the
    # team members' RBAC objects (none: the dev stack lists none).
    parts = stack_parts(config, queue_set(config))
    assert [p.name for p in parts] == ["operators", "kueue", "gpu", "governance", "monitoring", "queues", "access"]
    policies = [*aggregated_role_guard(), *pool_guard(config), *priority_class_guard(config)]
    assert [o["metadata"]["name"] for o in policies] == (
        ["kueue-aks-aggregated-role-guard"] * 2 + ["kueue-aks-pool-guard"] * 2 + ["kueue-aks-priority-class-guard"] * 2
    )
    kueue_objects, scraping = build_objects(config), scrape_objects(config)
    assert [o["kind"] for o in scraping] == ["ServiceAccount", "Secret", "ClusterRoleBinding", "ServiceMonitor"]
    assert access_objects(config, queue_set(config).local_queues) == []
    program = [
        *operator_objects(config),
        *rayservice_guard(config),
        *aggregated_role_guard(),
        *pool_guard(config),
        *scraping,
        *priority_class_guard(config),
        *kueue_objects,
    ]
    assert program == [o for p in parts for o in p.objects]
    # Every object once; the namespaces first, the releases' own among them.
    namespaces = [o for o in before if o["kind"] == "Namespace"]
    assert before[: len(namespaces)] == namespaces
    assert {n["metadata"]["name"] for n in namespaces} >= {
        "kueue-system",
        "nvidia-device-plugin",
        "kuberay-system",
        "jobset-system",
        "kubeflow-system",
        "mpi-operator",
        "kubeflow",
    }
    program_rest = [o for o in program if o["kind"] != "Namespace"]
    assert [o for o in program_rest if o in before] + [o for o in program_rest if o in after] == before[
        len(namespaces) :
    ] + after, "each folder keeps the program's order"
    assert sorted(map(str, program_rest)) == sorted(map(str, before[len(namespaces) :] + after))
    # Before the releases, built-in kinds and CRDs only; after them, every object a CRD serves.
    assert all(manifests.api_group(o) in manifests.BUILT_IN_GROUPS for o in before)
    assert {o["kind"] for o in after} == {
        "Topology",
        "ResourceFlavor",
        "Cohort",
        "ProvisioningRequestConfig",
        "AdmissionCheck",
        "ClusterQueue",
        "LocalQueue",
        "WorkloadPriorityClass",
        "ServiceMonitor",
        "ClusterTrainingRuntime",
    }
    names = sorted(p.name for p in (tmp_path / "out" / manifests.BEFORE_RELEASES).iterdir())
    first_crd = next(i for i, n in enumerate(names) if "-customresourcedefinition-" in n)
    assert first_crd == len(namespaces), "the operators' CRDs first after the namespaces"
    # The validator knows Kueue's kinds and the team namespaces their LocalQueues select.
    assert (
        validate_objects([*namespaces, *(o for o in after if o["apiVersion"].startswith("kueue.x-k8s.io/"))], crds=crds)
        == []
    )
    order = (tmp_path / "out" / "ORDER.md").read_text()
    assert order in out
    steps = [line.split("`")[1] for line in order.splitlines() if line[:1].isdigit()]
    assert steps[0].endswith(manifests.BEFORE_RELEASES) and steps[-1].endswith(manifests.AFTER_RELEASES)
    releases = [s.split()[3] for s in steps[1:-1]]
    # The operators' releases, then Kueue's (after every operator CRD), then the device plugin's.
    assert releases == ["kuberay-operator", "jobset", "kubeflow-trainer", "kueue", "nvidia-device-plugin"], releases
    assert all("--skip-crds" in s for s in steps[1:4]) and "--skip-crds" not in steps[4]
    assert "ServiceMonitor (azmonitoring.coreos.com/v1)" in order  # its CRD comes with the add-on
    helm = sorted(p.name for p in (tmp_path / "out" / "helm").iterdir())
    assert helm == [
        "jobset-values.yaml",
        "kubeflow-trainer-values.yaml",
        "kuberay-operator-values.yaml",
        "kueue-values.yaml",
        "nvidia-device-plugin-values.yaml",
    ]
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


WORKSPACE_ID = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/obs/providers/Microsoft.Monitor/accounts/amw"
)


@pytest.mark.parametrize(
    "cluster",
    [
        # A secret as `pulumi config set --secret --path` leaves it in the stack file: still encrypted.
        {"kubeconfig": {"secure": "v1:c2VjcmV0"}},
        {"existing": {"resourceGroup": "rg-batch", "name": "aks-batch"}},
    ],
)
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
    monitor = yaml.safe_load(
        next((tmp_path / "out" / manifests.AFTER_RELEASES).glob("*-servicemonitor-*.yaml")).read_text()
    )
    assert monitor["apiVersion"] == (
        "monitoring.coreos.com/v1" if "kubeconfig" in cluster else "azmonitoring.coreos.com/v1"
    )
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
    result = subprocess.run(
        [sys.executable, "-m", "components.plan", "--stack", "dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("### kueue-aks plan: stack `dev`")


def test_a_borrowing_limit_shows_the_most_a_team_can_hold(run_plan: PlanRunner, tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-aks:teams"] = [
        {"name": "research", "share": 60, "borrowing": 0.5},
        {"name": "platform", "share": 40},
    ]
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    code, out, _ = run_plan("--stack", "dev", root=tmp_path)
    assert code == 0
    # Half of research's 1 GPU rounds down to 0: it holds its 1 GPU at most; platform, unlimited, all 3.
    assert "| gpu | nvidia.com/gpu (GPU) | 3 | 1 (≤ 1) | 1 | 1 |" in out
    # 18.77 vCPU and half of it again, 28.15 (18.768 + 9.384 cores), less than the pool's 31.28.
    assert "| cpu | cpu (vCPU) | 31.28 | 18.77 (≤ 28.15) | 12.51 | 0 |" in out


def test_a_team_with_0_gpus_of_a_flavor_is_warned_in_the_plan(run_plan: PlanRunner, tmp_path: Path) -> None:
    """20 % of 4 GPUs rounds down to 0 (issue 37): the plan says who, where, and the share that gives one GPU."""
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-aks:nodePools"] = [
        {"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2},
        {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4},
    ]
    doc["config"]["kueue-aks:teams"] = [{"name": "research", "share": 80}, {"name": "platform", "share": 20}]
    (tmp_path / "Pulumi.gpu.yaml").write_text(yaml.safe_dump(doc))
    code, out, _ = run_plan("--stack", "gpu", root=tmp_path)
    assert code == 0
    assert "| a100 | nvidia.com/gpu (GPU) | 4 | 3 | 0 | 1 |" in out
    assert (
        "\n\n**Warning:** team 'platform' (20%) gets a nominal quota of 0 GPUs on flavor 'a100' (its share of "
        "4 GPUs, rounded down): its GPU jobs run there only on GPUs borrowed while other teams leave them idle, "
        "and are preempted when those teams reclaim them; a share of at least 25% gives a team 1 GPU.\n"
    ) in out
    # The dev stack's teams each get a GPU: no warning.
    assert "**Warning:**" not in run_plan("--stack", "dev")[1]


# --- --base: quota changes against another version of the stack ------------------------------


def dev_with(**shares: int) -> str:
    """The dev stack file with other team shares."""
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    for team in doc["config"]["kueue-aks:teams"]:
        team["share"] = shares.get(team["name"], team["share"])
    return yaml.safe_dump(doc)


def test_base_file_with_other_shares_shows_each_team_and_the_gpu_that_moves(
    run_plan: PlanRunner, tmp_path: Path
) -> None:
    (tmp_path / "Pulumi.dev.old.yaml").write_text(dev_with(research=40, platform=60))
    code, out, _ = run_plan("--stack", "dev", "--base", str(tmp_path / "Pulumi.dev.old.yaml"))
    assert code == 0
    lines = out.splitlines()
    # 3 T4 GPUs: 40 % -> 1, 60 % -> 1 before; 60 % -> 1, 40 % -> 1 now: no GPU moves, the vCPUs do.
    assert "**research gains 6.26 vCPU on cpu** (12.51 → 18.77)" in out
    assert "**platform loses 6.26 vCPU on cpu** (18.77 → 12.51)" in out
    assert "| research | cpu | cpu (vCPU) | 12.51 → 18.77 (+6.26) | no limit | no limit | 0.4 → 0.6 (+0.2) |" in lines
    assert "| platform | cpu | cpu (vCPU) | 18.77 → 12.51 (-6.26) | no limit | no limit | 0.6 → 0.4 (-0.2) |" in lines
    assert "GPU on gpu" not in out

    (tmp_path / "Pulumi.dev.old.yaml").write_text(dev_with(research=70, platform=30))
    code, out, _ = run_plan("--stack", "dev", "--base", str(tmp_path / "Pulumi.dev.old.yaml"))
    assert code == 0
    bullets = [line for line in out.splitlines() if line.startswith("- **")]
    # GPUs first: 70 % of 3 -> 2 and 30 % -> 0 before.
    assert bullets[:2] == ["- **research loses 1 GPU on gpu** (2 → 1)", "- **platform gains 1 GPU on gpu** (0 → 1)"]
    assert "| platform | gpu | nvidia.com/gpu (GPU) | 0 → 1 (+1) | no limit | no limit | 0.3 → 0.4 (+0.1) |" in out


def test_base_summary_leads_with_the_gpus_the_spare_and_the_shares(run_plan: PlanRunner, tmp_path: Path) -> None:
    # Issue 51: the dev stack at shares 50/50 with the gpu pool's maxCount 3 -> 2, against the dev stack as committed.
    head = yaml.safe_load(dev_with(research=50, platform=50))
    next(p for p in head["config"]["kueue-aks:nodePools"] if p["name"] == "gpu")["maxCount"] = 2
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(head))
    code, out, _ = run_plan("--stack", "dev", "--base", str(ROOT / "Pulumi.dev.yaml"), root=tmp_path)
    assert code == 0
    assert out.splitlines()[2:7] == [
        "- `gpu` loses 1 of its 3 GPUs (3 → 2): it was the spare GPU, which no team was guaranteed and any team "
        "could borrow; no team's guarantee changes.",
        "- Shares: research 60 % → 50 %, platform 40 % → 50 %.",
        "",
        "#### Details",
        "",
    ]


def test_an_edit_aks_cannot_apply_leads_the_comparison(run_plan: PlanRunner, tmp_path: Path) -> None:
    # Issue 61: a GPU pool's VM size said "No quota change" or spoke of CPU and memory alone.
    head = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    next(p for p in head["config"]["kueue-aks:nodePools"] if p["name"] == "gpu")["vmSize"] = "Standard_NC16as_T4_v3"
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(head))
    code, out, _ = run_plan("--stack", "dev", "--base", str(ROOT / "Pulumi.dev.yaml"), root=tmp_path)
    assert code == 0
    first = out.splitlines()[2]
    assert first.startswith(
        "- **AKS cannot change the VM size of pool `gpu` in place** (Standard_NC4as_T4_v3 → "
        "Standard_NC16as_T4_v3, `kueue-aks:nodePools[1].vmSize`): `up` deletes `gpu` and creates "
        "it anew"
    ), first
    assert "The safe way: add a pool with the new VM size beside it (e.g. `gpu2`)" in first


def test_the_comparison_ends_with_the_waiting_time_forecast(run_plan: PlanRunner, tmp_path: Path) -> None:
    # docs/ci-cd.md's example, 70 / 30 on the base: platform, guaranteed no GPU then, waits less now.
    (tmp_path / "Pulumi.dev.old.yaml").write_text(dev_with(research=70, platform=30))
    code, out, _ = run_plan("--stack", "dev", "--base", str(tmp_path / "Pulumi.dev.old.yaml"))
    assert code == 0
    forecast = out[out.index("#### Waiting-time forecast: stack `dev`, before → after") :]
    assert "Trace: synthetic, seed 1, load 0.8, " in forecast and "(research 70 %, platform 30 %)" in forecast
    assert "| platform | 608 | 6.5 h → 0 s |" in forecast
    assert out.splitlines()[-1].startswith("Fidelity: the e2e tier replays traces through real Kueue")


def test_the_same_stack_as_base_has_no_quota_change(run_plan: PlanRunner) -> None:
    code, out, _ = run_plan("--stack", "dev", "--base", str(ROOT / "Pulumi.dev.yaml"))
    assert code == 0
    assert "No quota change." in out.splitlines() and "|" not in out
    # The forecast follows (components/forecast): the same queues on both sides change nothing.
    assert out.splitlines()[-1] == "The queues are the same on both sides, so the forecast does not change."


def test_base_as_a_git_ref_and_a_stack_new_there(run_plan: PlanRunner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "Pulumi.dev.yaml").write_text(dev_with(research=30, platform=70))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "shares 30/70")
    (repo / "Pulumi.dev.yaml").write_text(dev_with(research=60, platform=40))
    (repo / "Pulumi.lab.yaml").write_text(dev_with())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "shares 60/40, a lab stack")
    (repo / "Pulumi.dev.yaml").write_text(dev_with(research=50, platform=50))  # not committed: read, not compared

    code, out, _ = run_plan("--stack", "dev", "--base", "HEAD~1", root=repo)
    assert code == 0
    assert out.startswith("### Quota changes: stack `dev`, `HEAD~1` → this change")
    assert "- **platform loses 1 GPU on gpu** (2 → 1)" in out and "- **research gains 1 GPU on gpu** (0 → 1)" in out
    code, out, _ = run_plan("--stack", "dev", "--base", "HEAD", root=repo)
    assert "| research | cpu | cpu (vCPU) | 18.77 → 15.64 (-3.13) | no limit | no limit | 0.6 → 0.5 (-0.1) |" in out

    code, out, _ = run_plan("--stack", "lab", "--base", "HEAD~1", root=repo)
    assert code == 0
    assert "Stack `lab` is new: `HEAD~1` has no `Pulumi.lab.yaml`, so everything is added." in out
    assert "- team `research` added" in out and "- pool `gpu` added (Standard_NC4as_T4_v3, 0–3 nodes)" in out

    code, _, err = run_plan("--stack", "dev", "--base", "no-such-branch", root=repo)
    assert code == 2 and "neither a stack file nor a git ref" in err


def test_a_base_that_no_longer_parses_is_reported_not_compared(run_plan: PlanRunner, tmp_path: Path) -> None:
    old = yaml.safe_load(dev_with())
    old["config"]["kueue-aks:teams"][0]["quota"] = 60  # a key this code does not know
    (tmp_path / "Pulumi.dev.old.yaml").write_text(yaml.safe_dump(old))
    code, out, _ = run_plan("--stack", "dev", "--base", str(tmp_path / "Pulumi.dev.old.yaml"))
    assert code == 2  # a config error, as for the stack itself
    assert "Not compared:" in out and "does not parse under this change's code" in out
    assert "`kueue-aks:teams[0].quota`" in out
    (tmp_path / "Pulumi.dev.old.yaml").write_text("config: [not, a, mapping")
    code, out, _ = run_plan("--stack", "dev", "--base", str(tmp_path / "Pulumi.dev.old.yaml"))
    assert code == 2 and "is not YAML" in out


def test_base_leaves_out_the_preflight_and_manifests() -> None:
    with pytest.raises(SystemExit) as exited:
        plan.main(["--stack", "dev", "--root", str(ROOT), "--base", "HEAD", "--azure"])
    assert exited.value.code == 2


def test_an_extension_stack_plans_the_extension_instead_of_the_release(run_plan: PlanRunner, tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["azure-native:location"] = "eastus"
    doc["config"]["kueue-aks:cluster"] = {**(doc["config"].get("kueue-aks:cluster") or {}), "kubernetesVersion": "1.34"}
    doc["config"]["kueue-aks:kueue"] = {"install": "aksExtension"}
    (tmp_path / "Pulumi.ext.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = run_plan("--stack", "ext", "--manifests", str(tmp_path / "out"), root=tmp_path)
    assert code == 0, err
    assert "(Kueue 0.19.6 from AKS's managed extension 0.19.6-aks.0.4.4, cluster" in out
    helm = {p.name for p in (tmp_path / "out" / "helm").iterdir()}
    assert "kueue-values.yaml" not in helm and "kueue-aks-extension.yaml" in helm, helm
    extension = yaml.safe_load((tmp_path / "out" / "helm" / "kueue-aks-extension.yaml").read_text())
    assert (extension["extension_type"], extension["version"], extension["auto_upgrade_minor_version"]) == (
        "microsoft.kueue",
        "0.19.6-aks.0.4.4",
        False,
    )
    assert not list((tmp_path / "out").glob("*/*kueue-aks-aggregated-role-guard*")), "no release, so no uninstall guard"
    order = (tmp_path / "out" / "ORDER.md").read_text()
    assert "helm upgrade --install kueue " not in order and "kueue-aks-extension.yaml" in order, order
    namespaces = {
        o["metadata"]["name"] for o in staged(tmp_path / "out")[manifests.BEFORE_RELEASES] if o["kind"] == "Namespace"
    }
    assert "kueue-system" not in namespaces, "the extension makes Kueue's namespace"


def test_manifests_hold_every_namespace_before_the_objects_in_it(run_plan: PlanRunner, tmp_path: Path) -> None:
    """`kubectl apply -f` of a folder applies its files in name order: every namespace an object
    lives in is made in the first folder, before any object in it (the MPI Operator's and the
    Training Operator's manifests are namespaced; the releases' namespaces are the program's own)."""
    code, _, err = run_plan("--stack", "dev", "--manifests", str(tmp_path / "out"))
    assert code == 0, err
    made: set[str] = set()
    there = {"kube-system", "default"}  # in every cluster
    operator_namespaces = {
        i.namespace for i in installs(load_stack(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]))
    }
    for folder, objects in staged(tmp_path / "out").items():
        for obj in objects:
            if obj["kind"] == "Namespace":
                assert folder == manifests.BEFORE_RELEASES
                made.add(obj["metadata"]["name"])
            namespace = obj["metadata"].get("namespace")
            if namespace and namespace not in there:
                assert namespace in made, (
                    f"{folder}: {obj['kind']} {obj['metadata']['name']} is in namespace {namespace}, not made before it"
                )
    assert operator_namespaces <= made, operator_namespaces - made


def test_assigned_roles_prints_what_ci_may_assign_and_nothing_else(run_plan: PlanRunner) -> None:
    # docs/ci-cd.md's ROLES=$(...): the dev stack assigns the deployer's AKS admin role and, with
    # monitoring on, Monitoring Data Reader and Grafana Admin.
    code, out, _ = run_plan("--stack", "dev", "--assigned-roles")
    assert code == 0
    assert (
        out
        == "{22926164-76b3-42b3-bc55-97df8dab3e41, b0d8363b-8ddd-447d-831f-62ca05bff136, b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b}\n"
    )
