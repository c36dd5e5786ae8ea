"""A MultiKueue worker stack through the real engine, and a manager that reads it.

After test_engine_interrupted.py, on the same control plane, a worker stack (the engine stack with
Jobs only and `multiKueue.role: worker`) comes up; the provider waits for its ServiceAccount token,
and its exported kubeconfig works as that ServiceAccount. A manager stack in the same backend reads
the worker's outputs at preview and stops, naming what does not fit. The worker is then destroyed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from components.config.names import KUEUE_NAMESPACE
from components.config.parse import parse_config, raw_from_stack_file
from components.config.stack import StackConfig
from components.multikueue.worker import FACTS_OUTPUT, KUBECONFIG_OUTPUT, SERVICE_ACCOUNT, worker_facts

from testbed.cluster import Kubectl
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject, assert_nothing_left
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, config_map, engine_jobs_config

WORKER = "engine-worker"


def worker_config() -> dict[str, object]:
    return {**engine_jobs_config(), "kueue-aks:multiKueue": {"role": "worker"}}


def parsed_worker_config() -> StackConfig:
    """The worker stack's config as its program parses it, but in the dev stack's Azure mode (the
    facts do not depend on how the cluster is reached; the region is compared apart)."""
    azure = {k: v for k, v in config_map(ENGINE).items() if k in ("kueue-aks:cluster", "azure-native:location")}
    raw, location = raw_from_stack_file({"config": {**worker_config(), **azure}})
    return parse_config(raw, stack=WORKER, location=location)


@pytest.fixture
def worker(clean: StackCluster, project: PulumiProject) -> Iterator[StackCluster]:
    """The control plane with the worker stack up (made once, destroyed by the last scenario)."""
    if not hasattr(clean, "worker_stack"):
        stack = project.another_stack(WORKER, worker_config(), clean.cluster.kubeconfig.read_text())
        stack.up()
        clean.worker_stack = stack  # type: ignore[attr-defined]
    yield clean


@on_stacks(ENGINE)
def test_engine_worker_exports_a_kubeconfig_that_works(worker: StackCluster, project: PulumiProject) -> None:
    """A MultiKueue worker stack: the provider waited for the token controller, and the
    exported kubeconfig (a secret) reaches this API server as the worker's ServiceAccount, with
    only MultiKueue's rights."""
    stack = worker.worker_stack  # type: ignore[attr-defined]
    assert stack.outputs()[KUBECONFIG_OUTPUT] == "[secret]"
    outputs = stack.outputs(show_secrets=True)
    kubeconfig = yaml.safe_load(outputs[KUBECONFIG_OUTPUT])
    assert kubeconfig["clusters"][0]["cluster"] == {
        "server": worker.cluster.server_url(),
        "certificate-authority-data": worker.cluster.ca_data(),
    }
    assert set(kubeconfig["users"][0]["user"]) == {"token"}
    path = worker.workdir / "worker-kubeconfig"
    path.write_text(outputs[KUBECONFIG_OUTPUT])
    as_worker = Kubectl(worker.kubectl.binary, path)
    assert (
        as_worker.run("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout
        == f"system:serviceaccount:{KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
    )
    for verb, resource, allowed in (("create", "jobs.batch", "yes"), ("get", "secrets", "no")):
        done = as_worker.run("auth", "can-i", verb, resource, "-n", "research", check=False)
        assert done.stdout.strip() == allowed, (verb, resource, done.stdout, done.stderr)
    # The same facts the builders give for the worker's config, but the region: a kubeconfig-mode
    # stack has none.
    assert outputs[FACTS_OUTPUT] == json.loads(json.dumps({**worker_facts(parsed_worker_config()), "location": ""}))


@on_stacks(ENGINE)
def test_engine_manager_preview_names_a_worker_that_does_not_fit(worker: StackCluster, project: PulumiProject) -> None:
    """A manager stack in the same backend reads this worker's outputs through its StackReference
    at preview, and stops before any resource, naming the worker and what differs: here a
    framework it enables that the worker does not run."""
    manager_config = {
        "kueue-aks:kueue": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "kueue-aks:teams": [{"name": t.name} for t in worker.config.teams],
        "kueue-aks:multiKueue": {
            "role": "manager",
            "workers": [{"name": "engine", "stack": f"organization/kueue-aks/{WORKER}"}],
        },
    }
    manager = project.another_stack("engine-manager", manager_config, worker.cluster.kubeconfig.read_text())
    try:
        done = manager.run("preview", check=False)
        text = done.stdout + done.stderr
        assert done.returncode != 0, text[-3000:]
        assert (
            f"kueue-aks:multiKueue.workers[0].stack: worker 'engine' (stack organization/kueue-aks/{WORKER}) "
            "does not run jobset.x-k8s.io/jobset, which this manager enables"
        ) in text, text[-3000:]
    finally:
        manager.run("stack", "rm", "engine-manager", "--yes", "--force", check=False)


@on_stacks(ENGINE)
def test_engine_worker_destroy_leaves_nothing(worker: StackCluster) -> None:
    assert_nothing_left(worker, worker.worker_stack)  # type: ignore[attr-defined]
