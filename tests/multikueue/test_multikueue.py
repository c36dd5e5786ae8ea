"""MultiKueue without a cluster: the config keys, the worker's access and facts, the manager's checks
and objects, the program's wiring under mocks, and the plan of a manager. What Kueue does with
them (connection, dispatch, re-dispatch, cleanup) is shown in tests/e2e/multikueue/test_multikueue.py."""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components import plan
from components.config.stack import StackConfig
from components.kueue.crds import kueue_crds
from components.kueue.objects import quota_table
from components.kueue.values import manager_config
from components.multikueue.manager import (
    ADMISSION_CHECK,
    MULTIKUEUE_CONTROLLER,
    SECRET_KEY,
    kubeconfig_secret,
    manager_quota_table,
    manager_queue_set,
    worker_problems,
    worker_quotas,
)
from components.multikueue.worker import (
    CLUSTER_ROLE,
    FACTS_OUTPUT,
    KUBECONFIG_OUTPUT,
    SERVICE_ACCOUNT,
    manager_access_objects,
    worker_facts,
    worker_kubeconfig,
    worker_rules,
)
from components.kueue.validate import validate_objects
from testbed.config_errors import refused
from testbed.harness import ROOT, SERVICE_ACCOUNT_TOKEN, ProgramMocks, ProgramRun, run_program
from testbed.stacks import (
    MULTIKUEUE_MANAGER,
    MULTIKUEUE_SWEDEN,
    MULTIKUEUE_WEST,
    load_stack,
    multikueue_example,
    workers_of,
)
from testbed.upstream import CONFIG_FIELDS, unknown_config_fields

SECRET_SIG = "4dabf18193072939515e22adb298388d"  # Pulumi's wire marker of a secret value
EXAMPLES = ROOT / "examples" / "multikueue"


@pytest.fixture(scope="module")
def manager() -> StackConfig:
    return load_stack(multikueue_example(MULTIKUEUE_MANAGER), MULTIKUEUE_MANAGER)


@pytest.fixture(scope="module")
def facts() -> dict[str, dict[str, Any]]:
    return {
        "westus3": worker_facts(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST)),
        "swedencentral": worker_facts(load_stack(multikueue_example(MULTIKUEUE_SWEDEN), MULTIKUEUE_SWEDEN)),
    }


# --- config ------------------------------------------------------------------------------------


def test_a_stack_without_the_key_is_no_part_of_multikueue(dev_config: StackConfig) -> None:
    assert dev_config.multi_kueue.role == "none" and not dev_config.multi_kueue.workers


def test_manager_defaults(manager: StackConfig) -> None:
    mk = manager.multi_kueue
    assert mk.is_manager and [w.name for w in mk.workers] == ["westus3", "swedencentral"]
    assert mk.origin == "kueue-aks-batch-manager" and mk.gc_interval == "1m" and mk.dispatcher == "AllAtOnce"
    assert manager.node_pools == () and [t.name for t in manager.teams] == ["research", "platform"]


def test_manager_mistakes_are_all_named_at_once() -> None:
    bad = copy.deepcopy(multikueue_example(MULTIKUEUE_MANAGER))
    bad["kueue-aks:nodePools"] = [{"name": "cpu", "vmSize": "Standard_D8s_v5", "maxCount": 2}]
    bad["kueue-aks:teams"][0]["share"] = 50
    bad["kueue-aks:multiKueue"]["workers"].append({"name": "westus3", "stack": "org/kueue-aks/other"})
    bad["kueue-aks:multiKueue"]["workerLostTimeout"] = "15 minutes"
    bad["kueue-aks:multiKueue"]["server"] = "https://x.example"
    bad["kueue-aks:multiKueue"]["dispatcher"] = "Incrementl"
    found = refused(load_stack, bad, MULTIKUEUE_MANAGER).lines
    expected = [
        "kueue-aks:nodePools: is for the workers",
        "kueue-aks:teams[0].share: is set on the workers",
        "kueue-aks:multiKueue.workers[2].name: 'westus3' names another worker too",
        "kueue-aks:multiKueue.workerLostTimeout: '15 minutes' is not allowed (a duration",
        "kueue-aks:multiKueue.dispatcher: 'Incrementl' is not allowed (did you mean 'Incremental'?)",
        "kueue-aks:multiKueue.server: is a worker's key",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in found), (start, found)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"role": "leader"}, "kueue-aks:multiKueue.role: 'leader' is not allowed"),
        ({"server": "https://x.example"}, "kueue-aks:multiKueue.role: is required"),
        (
            {"role": "worker", "workers": [{"name": "a", "stack": "o/p/s"}]},
            "kueue-aks:multiKueue.workers: configures a MultiKueue manager; this stack's role is 'worker'",
        ),
        (
            {"role": "worker", "server": "http://plain.example"},
            "kueue-aks:multiKueue.server: 'http://plain.example' is not allowed",
        ),
        ({"role": "manager"}, "kueue-aks:multiKueue.workers: is required for a manager"),
        (
            {"role": "manager", "workers": [{"name": "West_3", "stack": "s"}]},
            "kueue-aks:multiKueue.workers[0].name: 'West_3'",
        ),
        (
            {"role": "manager", "workers": [{"name": "w", "stack": "a b"}]},
            "kueue-aks:multiKueue.workers[0].stack: 'a b'",
        ),
        (
            {"role": "manager", "workers": [{"name": f"w{i}", "stack": f"o/p/w{i}"} for i in range(21)]},
            "kueue-aks:multiKueue.workers: lists 21 workers; a MultiKueueConfig takes 1 to 20",
        ),
        (
            {"role": "manager", "origin": "Not A Label!", "workers": [{"name": "w", "stack": "o/p/w"}]},
            "kueue-aks:multiKueue.origin: 'Not A Label!' must be a label value",
        ),
    ],
)
def test_bad_multikueue_keys(dev_config_map: dict[str, Any], change: dict[str, Any], expected: str) -> None:
    config_map = dict(dev_config_map)
    if change.get("role") == "manager":
        config_map = {k: v for k, v in config_map.items() if k != "kueue-aks:nodePools"}
        config_map["kueue-aks:teams"] = [{"name": "research"}]
    config_map["kueue-aks:multiKueue"] = {k: v for k, v in change.items() if v is not None}
    assert any(p.startswith(expected) for p in refused(load_stack, config_map, "dev").lines), refused(
        load_stack, config_map, "dev"
    ).lines


def test_the_multikueue_gate_must_stay_on(dev_config_map: dict[str, Any]) -> None:
    config_map = {
        **dev_config_map,
        "kueue-aks:multiKueue": {"role": "worker"},
        "kueue-aks:kueue": {"featureGates": {"MultiKueue": False}},
    }
    assert (
        "kueue-aks:kueue.featureGates.MultiKueue: is false, but multiKueue.role is 'worker'; enable the gate or "
        "set role: none" in refused(load_stack, config_map, "dev").lines
    )


# --- the worker ------------------------------------------------------------------------------


def test_worker_rules_cover_its_kinds_and_workloads_and_nothing_else() -> None:
    worker = load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST)
    rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in worker_rules(worker)}
    assert rules == {
        ("batch", "jobs"): ["create", "delete", "get", "list", "watch"],
        ("batch", "jobs/status"): ["get"],
        ("jobset.x-k8s.io", "jobsets"): ["create", "delete", "get", "list", "watch"],
        ("jobset.x-k8s.io", "jobsets/status"): ["get"],
        # governance on: Kueue's pod integration, whose adapter creates the pods of a pod group
        ("", "pods"): ["create", "delete", "get", "list", "watch"],
        ("", "pods/status"): ["get"],
        ("kueue.x-k8s.io", "workloads"): ["create", "delete", "get", "list", "watch", "update", "patch"],
        ("kueue.x-k8s.io", "workloads/status"): ["get", "patch", "update"],
    }
    assert not any("*" in r["verbs"] or "*" in r["resources"] for r in worker_rules(worker))
    ungoverned = load_stack(
        {**multikueue_example(MULTIKUEUE_WEST), "kueue-aks:governance": {"enforce": False}}, MULTIKUEUE_WEST
    )
    assert ("", "pods") not in {(r["apiGroups"][0], r["resources"][0]) for r in worker_rules(ungoverned)}


def test_worker_access_is_bound_to_its_own_service_account() -> None:
    sa, role, binding, token = manager_access_objects(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST))
    assert (sa["kind"], sa["metadata"]["name"], sa["metadata"]["namespace"]) == (
        "ServiceAccount",
        SERVICE_ACCOUNT,
        "kueue-system",
    )
    assert role["kind"] == "ClusterRole" and binding["roleRef"]["name"] == role["metadata"]["name"] == CLUSTER_ROLE
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": "kueue-system"}]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": SERVICE_ACCOUNT}


def test_worker_kubeconfig_is_static_with_everything_inline() -> None:
    data = {"token": base64.b64encode(b"t0ken").decode(), "ca.crt": base64.b64encode(b"PEM").decode()}
    doc = yaml.safe_load(worker_kubeconfig("west", "https://west.example:443", data))
    cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
    assert cluster == {"server": "https://west.example:443", "certificate-authority-data": data["ca.crt"]}
    # Kueue rejects exec plugins, token files and CA files (multikueuecluster.go, validateKubeconfig).
    assert user == {"token": "t0ken"}
    assert doc["current-context"] == doc["contexts"][0]["name"] == "west"


def test_worker_facts_are_its_own_quota_table(facts: dict[str, dict[str, Any]]) -> None:
    west = load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST)
    rows = {(r.flavor, r.resource): r for r in quota_table(west)}
    got = facts["westus3"]
    for cq, queue in got["clusterQueues"].items():
        for flavor, resources in queue["quota"].items():
            for resource, amount in resources.items():
                assert rows[(flavor, resource)].teams[queue["team"]] == amount
    assert got["cohort"]["gpu"]["nvidia.com/gpu"] == rows[("gpu", "nvidia.com/gpu")].cohort
    assert got["teams"]["research"] == {"share": "60", "localQueues": {"default": "research"}}
    assert got["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "pod"] and got["kueueVersion"] == "0.19.2"
    assert yaml.safe_load(yaml.safe_dump(got)) == got  # plain data, as a stack output carries it


# --- the manager -----------------------------------------------------------------------------


def test_manager_quota_is_the_sum_of_the_workers(manager: StackConfig, facts: dict[str, dict[str, Any]]) -> None:
    workers = workers_of(manager, facts)
    assert worker_problems(manager, workers) == []
    rows = {(q.team, q.flavor, q.resource): q for q in worker_quotas(manager, workers)}
    west, sweden = (load_stack(multikueue_example(s), s) for s in (MULTIKUEUE_WEST, MULTIKUEUE_SWEDEN))
    for team in ("research", "platform"):
        for w in (west, sweden):
            for row in quota_table(w):
                name = "westus3" if w is west else "swedencentral"
                assert rows[(team, row.flavor, row.resource)].workers[name] == row.teams[team]
    gpu = rows[("research", "gpu", "nvidia.com/gpu")]
    assert (gpu.workers, gpu.total) == ({"westus3": 1, "swedencentral": 0}, 1)
    table = {(r.flavor, r.resource): r for r in manager_quota_table(manager, workers)}
    assert table[("gpu", "nvidia.com/gpu")].capacity == 3  # 2 + 1 A100 nodes
    assert table[("gpu", "nvidia.com/gpu")].assigned == 3  # quota + cohort remainder: no more than exists


def test_manager_objects_are_valid_and_dispatch_every_queue(
    manager: StackConfig, facts: dict[str, dict[str, Any]]
) -> None:
    built = manager_queue_set(manager, workers_of(manager, facts))
    objects, capacity = built.objects, built.capacity
    crds = kueue_crds(manager.kueue.chart, manager.kueue.version).crds
    assert crds is not None
    assert validate_objects(objects, crds=crds, capacity=capacity) == []
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    assert all(f["spec"] == {} for f in by_kind["ResourceFlavor"])  # no pod runs on the manager
    assert [c["metadata"]["name"] for c in by_kind["MultiKueueCluster"]] == ["westus3", "swedencentral"]
    assert by_kind["MultiKueueCluster"][0]["spec"] == {
        "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret("westus3")}}
    }
    assert by_kind["MultiKueueConfig"][0]["spec"]["clusters"] == ["westus3", "swedencentral"]  # preference order
    assert by_kind["AdmissionCheck"][0]["spec"]["controllerName"] == MULTIKUEUE_CONTROLLER
    for cq in by_kind["ClusterQueue"]:
        # On every flavor: a per-flavor MultiKueue check keeps a ClusterQueue inactive.
        assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": ADMISSION_CHECK}]}
    assert {
        (q["metadata"]["namespace"], q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in by_kind["LocalQueue"]
    } == {("research", "default", "research"), ("platform", "default", "platform")}


def test_a_manager_team_borrows_up_to_its_own_borrowing(facts: dict[str, dict[str, Any]]) -> None:
    config_map = multikueue_example(MULTIKUEUE_MANAGER)
    config_map["kueue-aks:teams"] = [
        {**t, "borrowing": 1} if t["name"] == "research" else t for t in config_map["kueue-aks:teams"]
    ]
    manager = load_stack(config_map, MULTIKUEUE_MANAGER)
    queues = {
        o["metadata"]["name"]: o
        for o in manager_queue_set(manager, workers_of(manager, facts)).objects
        if o["kind"] == "ClusterQueue"
    }
    resources = {
        q: [r for f in queues[q]["spec"]["resourceGroups"][0]["flavors"] for r in f["resources"]] for q in queues
    }
    # research's quota is the sum of the workers' (1 GPU), and it may borrow as much again; platform has no limit.
    assert {"name": "nvidia.com/gpu", "nominalQuota": "1", "borrowingLimit": "1"} in resources["research"]
    assert all(
        r.get("borrowingLimit") == (r["nominalQuota"] if r["nominalQuota"] != "0" else None)
        for r in resources["research"]
    )
    assert not any("borrowingLimit" in r for r in resources["platform"])


def test_manager_config_sets_multikueue_and_kueue_decodes_it(manager: StackConfig) -> None:
    doc = manager_config(manager)
    assert doc["multiKueue"] == {
        "origin": "kueue-aks-batch-manager",
        "workerLostTimeout": "15m",
        "gcInterval": "1m",
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    }
    assert unknown_config_fields(doc, CONFIG_FIELDS) == []
    assert "multiKueue" not in manager_config(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST))


def _facts_with(facts: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(dict(facts))
    changed.update(changes)
    return changed


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda f: None,
            "worker 'swedencentral' (stack organization/kueue-aks/batch-swedencentral) has no multiKueueWorker "
            "output: deploy it first",
        ),
        (lambda f: _facts_with(f, kueueVersion="0.18.6"), "runs Kueue 0.18.6, this manager 0.19.2"),
        (
            lambda f: _facts_with(f, frameworks=["batch/job", "pod"]),
            "does not run jobset.x-k8s.io/jobset, which this manager enables",
        ),
        (lambda f: _facts_with(f, teams={"research": f["teams"]["research"]}), "has no team 'platform'"),
        (
            lambda f: _facts_with(
                f, teams={**f["teams"], "research": {"share": "60", "localQueues": {"batch": "research"}}}
            ),
            "team 'research' has LocalQueues batch, worker 'westus3' has default",
        ),
        (lambda f: _facts_with(f, priorityClasses={"high": 1000, "normal": 0}), "has priority class 'low' missing"),
        (
            lambda f: _facts_with(
                f,
                clusterQueues={
                    **f["clusterQueues"],
                    "research": {**f["clusterQueues"]["research"], "topologyAware": True},
                },
            ),
            "team 'research' has only topology-aware pools there",
        ),
        (lambda f: _facts_with(f, factsVersion=99), "was deployed by another kueue-aks version"),
    ],
)
def test_a_worker_that_does_not_fit_is_named(
    manager: StackConfig, facts: dict[str, dict[str, Any]], change: Any, expected: str
) -> None:
    workers = workers_of(manager, {**facts, "swedencentral": change(facts["swedencentral"])})
    found = [str(p) for p in worker_problems(manager, workers)]
    assert (
        len(found) == 1 and found[0].startswith("kueue-aks:multiKueue.workers[1].stack: ") and expected in found[0]
    ), found


def test_a_framework_without_a_multikueue_adapter_is_refused(facts: dict[str, dict[str, Any]]) -> None:
    config_map = copy.deepcopy(multikueue_example(MULTIKUEUE_MANAGER))
    config_map["kueue-aks:kueue"]["frameworks"] = ["batch/job", "deployment"]
    config = load_stack(config_map, MULTIKUEUE_MANAGER)
    found = [str(p) for p in worker_problems(config, workers_of(config, facts))]
    assert any(p.startswith("kueue-aks:kueue.frameworks: 'deployment' has no MultiKueue adapter") for p in found), found


# --- the program under mocks -----------------------------------------------------------------


@pytest.fixture(scope="module")
def worker_runs() -> dict[str, ProgramRun]:
    return {
        stack: run_program(multikueue_example(stack), stack=stack) for stack in (MULTIKUEUE_WEST, MULTIKUEUE_SWEDEN)
    }


def secret_value(value: Any) -> Any:
    """The value inside Pulumi's secret wrapper; fails if the value was sent in plain text."""
    assert isinstance(value, dict) and value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270", value
    return value["value"]


def manager_run(worker_runs: Mapping[str, ProgramRun], **override: Mapping[str, Any]) -> ProgramRun:
    stacks = {f"organization/kueue-aks/{s}": dict(run.exports) for s, run in worker_runs.items()}
    stacks.update(override)
    return run_program(
        multikueue_example(MULTIKUEUE_MANAGER), stack=MULTIKUEUE_MANAGER, mocks=ProgramMocks(stacks=stacks)
    )


def test_worker_exports_a_secret_kubeconfig_and_plain_facts(worker_runs: dict[str, ProgramRun]) -> None:
    run = worker_runs[MULTIKUEUE_WEST]
    assert KUBECONFIG_OUTPUT in run.secret_exports and FACTS_OUTPUT not in run.secret_exports
    kubeconfig = yaml.safe_load(run.exports[KUBECONFIG_OUTPUT])
    assert kubeconfig["users"][0]["user"] == {"token": SERVICE_ACCOUNT_TOKEN}
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://aks.example.invalid:443"  # the cluster's own
    assert run.exports[FACTS_OUTPUT] == yaml.safe_load(
        yaml.safe_dump(worker_facts(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST)))
    )
    role = run.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "multikueue-clusterrole")
    assert role.inputs["rules"] == worker_rules(load_stack(multikueue_example(MULTIKUEUE_WEST), MULTIKUEUE_WEST))
    token = run.one("kubernetes:core/v1:Secret", "multikueue-token")
    assert token.inputs["type"] == "kubernetes.io/service-account-token"
    component = run.one("kueue-aks:multikueue:MultiKueueWorker")
    assert role.parent == token.parent == component.urn
    assert "multiKueueWorkers" not in run.exports


def test_worker_server_can_be_set(worker_runs: dict[str, ProgramRun]) -> None:
    config_map = copy.deepcopy(multikueue_example(MULTIKUEUE_WEST))
    config_map["kueue-aks:multiKueue"]["server"] = "https://westus3-private.example:443"
    run = run_program(config_map, stack=MULTIKUEUE_WEST)
    assert (
        yaml.safe_load(run.exports[KUBECONFIG_OUTPUT])["clusters"][0]["cluster"]["server"]
        == "https://westus3-private.example:443"
    )


def test_manager_stores_each_worker_kubeconfig_as_a_secret(worker_runs: dict[str, ProgramRun]) -> None:
    run = manager_run(worker_runs)
    refs = run.of_type("pulumi:pulumi:StackReference")
    assert sorted(r.inputs["name"] for r in refs) == [
        "organization/kueue-aks/batch-swedencentral",
        "organization/kueue-aks/batch-westus3",
    ]
    assert all(r.read_id for r in refs)  # read, never created
    secrets = {r.inputs["metadata"]["name"]: r for r in run.of_type("kubernetes:core/v1:Secret")}
    west = secrets[kubeconfig_secret("westus3")]
    assert west.inputs["metadata"]["namespace"] == "kueue-system"
    assert secret_value(west.inputs["stringData"]) == {
        SECRET_KEY: worker_runs[MULTIKUEUE_WEST].exports[KUBECONFIG_OUTPUT]
    }
    # Every Kueue object waits for the Secrets, so a MultiKueueCluster never starts without its kubeconfig.
    cluster = run.one("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster", "queues-multikueuecluster-westus3")
    assert west.urn in cluster.dependencies
    assert run.exports["multiKueueWorkers"] == {
        "westus3": "organization/kueue-aks/batch-westus3",
        "swedencentral": "organization/kueue-aks/batch-swedencentral",
    }
    assert {row["flavor"] for row in run.exports["quotaTable"]} == {"cpu", "gpu"}
    assert run.exports["localQueues"]["research"]["default"]["workers"] == ["westus3", "swedencentral"]
    assert not run.of_type("azure-native:containerservice:AgentPool")  # no user pools on a manager


def test_a_rotated_worker_token_reaches_the_manager_secret(worker_runs: dict[str, ProgramRun]) -> None:
    rotated = dict(worker_runs[MULTIKUEUE_WEST].exports)
    rotated[KUBECONFIG_OUTPUT] = rotated[KUBECONFIG_OUTPUT].replace(SERVICE_ACCOUNT_TOKEN, "a-new-token")
    run = manager_run(worker_runs, **{f"organization/kueue-aks/{MULTIKUEUE_WEST}": rotated})
    secret = next(
        r
        for r in run.of_type("kubernetes:core/v1:Secret")
        if r.inputs["metadata"]["name"] == kubeconfig_secret("westus3")
    )
    assert "a-new-token" in secret_value(secret.inputs["stringData"])[SECRET_KEY]


def test_a_missing_worker_stops_the_manager_before_anything_is_created(worker_runs: dict[str, ProgramRun]) -> None:
    gone = {
        k: v for k, v in worker_runs[MULTIKUEUE_SWEDEN].exports.items() if k not in (FACTS_OUTPUT, KUBECONFIG_OUTPUT)
    }
    with pytest.raises(pulumi.RunError) as err:
        manager_run(worker_runs, **{f"organization/kueue-aks/{MULTIKUEUE_SWEDEN}": gone})
    assert "kueue-aks:multiKueue.workers[1].stack: worker 'swedencentral'" in str(err.value)
    assert "must be removed from multiKueue.workers" in str(err.value)
    from pulumi.runtime.settings import SETTINGS

    registered = SETTINGS.monitor.registrations
    assert registered and all(r.type == "pulumi:pulumi:StackReference" and r.read_id for r in registered)


# --- the plan --------------------------------------------------------------------------------


def test_plan_of_a_manager_shows_each_team_per_worker_and_in_total(capsys: pytest.CaptureFixture[str]) -> None:
    assert plan.main(["--stack", MULTIKUEUE_MANAGER, "--root", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    header = "| team | flavor | resource | westus3 (batch-westus3) | swedencentral (batch-swedencentral) | total |"
    assert header in out
    assert "| research | gpu | nvidia.com/gpu (GPU) | 1 | 0 | 1 |" in out
    assert "| research | `research/default` | `research` | westus3, swedencentral (AllAtOnce) |" in out


def test_plan_of_a_manager_names_a_missing_worker_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / f"Pulumi.{MULTIKUEUE_MANAGER}.yaml").write_text(
        (EXAMPLES / f"Pulumi.{MULTIKUEUE_MANAGER}.yaml").read_text()
    )
    (tmp_path / f"Pulumi.{MULTIKUEUE_WEST}.yaml").write_text((EXAMPLES / f"Pulumi.{MULTIKUEUE_WEST}.yaml").read_text())
    assert plan.main(["--stack", MULTIKUEUE_MANAGER, "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "kueue-aks:multiKueue.workers[1].stack: the plan reads worker 'swedencentral' from" in err


# --- the validator's cross-object rules for admission checks ----------------------------------


def _by(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _second_check(objects: list[dict[str, Any]], controller: str) -> None:
    extra = copy.deepcopy(_by(objects, "AdmissionCheck", ADMISSION_CHECK))
    extra["metadata"]["name"] = "second"
    extra["spec"]["controllerName"] = controller
    objects.append(extra)
    _by(objects, "ClusterQueue", "research")["spec"]["admissionChecksStrategy"]["admissionChecks"].append(
        {"name": "second"}
    )


@pytest.mark.parametrize(
    ("break_it", "rule"),
    [
        (
            lambda objs: _by(objs, "ClusterQueue", "research")["spec"]["admissionChecksStrategy"]["admissionChecks"][
                0
            ].update(onFlavors=["gpu"]),
            "MK-per-flavor",
        ),
        (lambda objs: _second_check(objs, MULTIKUEUE_CONTROLLER), "MK-multiple"),
        (lambda objs: _second_check(objs, "kueue.x-k8s.io/provisioning-request"), "MK-provisioning"),
        (
            lambda objs: _by(objs, "ClusterQueue", "research")["spec"]["admissionChecksStrategy"]["admissionChecks"][
                0
            ].update(name="nothing"),
            "REF-admissioncheck",
        ),
        (
            lambda objs: _by(objs, "MultiKueueConfig", "multikueue")["spec"]["clusters"].append("eastus"),
            "REF-multikueuecluster",
        ),
        (
            lambda objs: _by(objs, "AdmissionCheck", ADMISSION_CHECK)["spec"]["parameters"].update(name="other"),
            "REF-multikueueconfig",
        ),
    ],
)
def test_validator_finds_what_keeps_a_manager_queue_inactive(
    manager: StackConfig, facts: dict[str, dict[str, Any]], break_it: Any, rule: str
) -> None:
    built = manager_queue_set(manager, workers_of(manager, facts))
    objects, capacity = built.objects, built.capacity
    break_it(objects)
    assert rule in {v.rule for v in validate_objects(objects, capacity=capacity)}
