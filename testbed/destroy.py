"""`pulumi destroy` of the program's Kubernetes half, replayed on the local control plane.

The engine deletes a resource once everything that depends on it is deleted, and deletes independent
resources in parallel. The graph below is the program's (components/kueue/queues.py and install.py,
gpu/, k8s/helm.py, governance/, monitoring/): each Kueue object depends on what it names and on the
Kueue release; team namespaces depend on the release, on the ClusterQueues that select them and on
the priority-class guard; the team members' RBAC objects on every Kueue object; the release depends
on its namespace and the aggregated-role guard; the device plugin's release on its namespace. The
Kueue release is uninstalled as pulumi-kubernetes does for an atomic, awaited release: `helm
uninstall --wait` with the release's timeout. The Kueue process stops when its release starts to go,
as its pods would, so anything that still needed it then would hang and fail the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from components.config.names import KUEUE_NAMESPACE
from components.facts.device_plugin import DEVICE_PLUGIN_NAMESPACE, DEVICE_PLUGIN_RELEASE_NAME
from components.k8s.helm import RELEASE_TIMEOUT_SECONDS
from components.kueue.values import KUEUE_RELEASE_NAME
from components.operators.crd_chart import release_name as crd_release_name
from components.operators.installs import trainer_runtimes
from components.governance.policies import pool_guard
from components.access.members import access_objects
from components.kueue.policies import aggregated_role_guard, priority_class_guard
from components.operators.policies import rayservice_guard
from components.kueue.queues import references
from components.monitoring.scrape import SERVICE_ACCOUNT_ANNOTATION, scrape_objects

from .cluster import Kubectl
from .stack_cluster import StackCluster

# Pulumi waits up to 10 minutes for a Kubernetes object to be deleted; a run that needs more
# than this has hung, and the test says which object it was.
DELETE_TIMEOUT_SECONDS = 120


@dataclass
class Step:
    name: str
    delete: Callable[[], tuple[bool, str]]
    needs_gone_first: set[str] = field(default_factory=set)  # the steps that depend on this one


def object_ref(obj: dict[str, Any]) -> list[str]:
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    return [obj["kind"].lower() + (f".{group}" if group else ""), meta["name"]] + (
        ["-n", meta["namespace"]] if "namespace" in meta else []
    )


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta['namespace'] + '/' if 'namespace' in meta else ''}{meta['name']}"


def program_graph(cluster: StackCluster) -> dict[str, Step]:
    kubectl = cluster.kubectl

    def delete_object(obj: dict[str, Any]) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            done = kubectl.run(
                "delete",
                *object_ref(obj),
                "--wait=true",
                f"--timeout={DELETE_TIMEOUT_SECONDS}s",
                check=False,
                timeout=DELETE_TIMEOUT_SECONDS + 30,
            )
            return done.returncode == 0, done.stderr.strip()

        return run

    def uninstall(
        release: str, namespace: str, before: Callable[[], None] = lambda: None
    ) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            before()
            done = cluster.helm.run(
                "uninstall",
                release,
                f"--namespace={namespace}",
                "--wait",
                f"--timeout={RELEASE_TIMEOUT_SECONDS}s",
                check=False,
                timeout=RELEASE_TIMEOUT_SECONDS + 60,
            )
            return done.returncode == 0, (done.stdout + done.stderr).strip()

        return run

    def namespace(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}

    steps: dict[str, Step] = {}
    depends: dict[str, list[str]] = {}
    kueue_release = f"Release/{KUEUE_RELEASE_NAME}"
    for obj in cluster.objects:
        key = _key(obj)
        steps[key] = Step(key, delete_object(obj))
        names = [f"{kind}/{ref}" for kind, ref in references(obj, cluster.objects)]
        depends[key] = names + [kueue_release]
    guard, priority_guard = aggregated_role_guard(), priority_class_guard(cluster.config)
    policies = [guard, priority_guard] + ([pool_guard(cluster.config)] if cluster.config.governance.enforce else [])
    for obj in [o for pair in policies for o in pair] + [namespace(KUEUE_NAMESPACE)]:
        steps[_key(obj)] = Step(_key(obj), delete_object(obj))
    for policy, binding in policies:
        depends[_key(binding)] = [_key(policy)]
    # Team namespaces wait for the priority guard (components/kueue/queues.py); the members' RBAC
    # objects for everything of KueueQueues (components/access/component.py, `after=[queues]`).
    for obj in cluster.objects:
        if obj["kind"] == "Namespace":
            depends[_key(obj)] += [_key(o) for o in priority_guard]
    queue_objects = [_key(o) for o in cluster.objects]
    for obj in access_objects(cluster.config, cluster.queue_set.local_queues):
        steps[_key(obj)] = Step(_key(obj), delete_object(obj))
        depends[_key(obj)] = list(queue_objects)
    steps[kueue_release] = Step(kueue_release, uninstall(KUEUE_RELEASE_NAME, KUEUE_NAMESPACE, cluster.kueue.stop))
    depends[kueue_release] = [_key(o) for o in guard] + [_key(namespace(KUEUE_NAMESPACE))]
    for obj in scrape_objects(cluster.config):  # components/monitoring/component.py: each waits for what it names
        meta = obj["metadata"]
        steps[_key(obj)] = Step(_key(obj), delete_object(obj))
        account = (meta.get("annotations") or {}).get(SERVICE_ACCOUNT_ANNOTATION)
        depends[_key(obj)] = (
            [_key(namespace(KUEUE_NAMESPACE))] if meta.get("namespace") == KUEUE_NAMESPACE else []
        ) + ([f"ServiceAccount/{meta['namespace']}/{account}"] if account else [])
    if cluster.config.has_gpu:
        plugin = f"Release/{DEVICE_PLUGIN_RELEASE_NAME}"
        steps[_key(namespace(DEVICE_PLUGIN_NAMESPACE))] = Step(
            _key(namespace(DEVICE_PLUGIN_NAMESPACE)), delete_object(namespace(DEVICE_PLUGIN_NAMESPACE))
        )
        steps[plugin] = Step(plugin, uninstall(DEVICE_PLUGIN_RELEASE_NAME, DEVICE_PLUGIN_NAMESPACE))
        depends[plugin] = [_key(namespace(DEVICE_PLUGIN_NAMESPACE))]
    _operator_steps(cluster, steps, depends, delete_object, uninstall, namespace)
    for key, names in depends.items():
        for name in names:
            steps[name].needs_gone_first.add(key)
    return steps


def _operator_steps(
    cluster: StackCluster,
    steps: dict[str, Step],
    depends: dict[str, list[str]],
    delete_object: Callable[[dict[str, Any]], Callable[[], tuple[bool, str]]],
    uninstall: Callable[..., Callable[[], tuple[bool, str]]],
    namespace: Callable[[str], dict[str, Any]],
) -> None:
    """The job operators (components/operators/component.py): a controller (release or Deployment)
    depends on its CRDs' release and its namespace, and on the CRDs of the operators it needs; Trainer's
    runtime on Trainer's release; team namespaces on every controller. A controller's process
    stops when its release or Deployment starts to go, as its pods would."""
    operators = cluster.operators
    controllers: list[str] = []
    crds_of: dict[str, list[str]] = {}
    for install in operators.installs:
        key = install.operator.key
        ns = _key(namespace(install.namespace))
        steps[ns] = Step(ns, delete_object(namespace(install.namespace)))
        # Its CRDs: the release of their chart (components/operators/crd_chart.py), in its namespace.
        crds = f"Release/{crd_release_name(key)}"
        steps[crds] = Step(crds, uninstall(crd_release_name(key), install.namespace))
        depends[crds] = [ns]
        crds_of[key] = [crds]
        stop = lambda key=key: operators.stop(key)  # noqa: E731 (bound per operator)
        if key in operators.released:
            controller = f"Release/{install.operator.release_name}"
            steps[controller] = Step(controller, uninstall(install.operator.release_name, install.namespace, stop))
        elif install.chart is not None:  # no local chart (KubeRay): only its controller to stop
            controller = f"Release/{install.operator.release_name}"
            steps[controller] = Step(controller, lambda stop=stop: (stop(), (True, ""))[1])
        else:
            (deployment,) = [o for o in install.objects if o["kind"] == "Deployment"]
            controller = _key(deployment)

            def delete_deployment(
                obj: dict[str, Any] = deployment, stop: Callable[[], None] = stop
            ) -> tuple[bool, str]:
                stop()
                return delete_object(obj)()

            steps[controller] = Step(controller, delete_deployment)
            for obj in install.objects:
                if obj is not deployment:
                    steps[_key(obj)] = Step(_key(obj), delete_object(obj))
                    depends[_key(obj)] = [ns] if "namespace" in obj["metadata"] else []
            depends[controller] = [_key(o) for o in install.controller_needs()]
        depends.setdefault(controller, [])
        depends[controller] += [ns, *crds_of[key], *(c for k in install.operator.needs for c in crds_of.get(k, []))]
        controllers.append(controller)
        if key == "trainer":
            for runtime in trainer_runtimes():
                steps[_key(runtime)] = Step(_key(runtime), delete_object(runtime))
                depends[_key(runtime)] = [controller]
    guard = rayservice_guard(cluster.config) if operators.installs else []
    for obj in guard:
        steps[_key(obj)] = Step(_key(obj), delete_object(obj))
    if guard:
        depends[_key(guard[1])] = [_key(guard[0])]  # the binding goes before its policy
    for obj in cluster.objects:
        if obj["kind"] == "Namespace":
            depends[_key(obj)] += controllers
    # The Kueue release waits for every operator's CRDs on `pulumi up`, so it goes before them.
    depends[f"Release/{KUEUE_RELEASE_NAME}"] += [c for crds in crds_of.values() for c in crds]


@dataclass
class Destroyed:
    took: dict[str, float]  # step -> seconds since the destroy started, when it finished
    failed: dict[str, str]  # step -> what it said
    seconds: float


def destroy(cluster: StackCluster) -> Destroyed:
    """Delete everything in the program's destroy order, in parallel where the graph allows."""
    steps = program_graph(cluster)
    started = time.monotonic()
    gone: set[str] = set()
    took: dict[str, float] = {}
    failed: dict[str, str] = {}
    running: dict[Future[tuple[bool, str]], str] = {}
    with ThreadPoolExecutor(max_workers=16) as pool:
        while True:
            blocked = set(running.values()) | gone | set(failed)
            for step in steps.values():
                if step.name not in blocked and step.needs_gone_first <= gone:
                    running[pool.submit(step.delete)] = step.name
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name = running.pop(future)
                ok, said = future.result()
                took[name] = round(time.monotonic() - started, 1)
                if ok:
                    gone.add(name)
                else:
                    failed[name] = said
    never = {
        name: "never started: " + ", ".join(sorted(steps[name].needs_gone_first - gone))
        for name in steps
        if name not in gone and name not in failed
    }
    return Destroyed(took, {**failed, **never}, round(time.monotonic() - started, 1))


def kueue_cluster_objects(kubectl: Kubectl) -> dict[str, list[str]]:
    """What of Kueue's release and the program's guards lives outside any namespace, by what it is:
    the roles and bindings named kueue-*, the webhooks and API services named kueue, and every
    ValidatingAdmissionPolicy and binding. After a teardown each list must be empty."""

    def names(kinds: str) -> list[str]:
        return kubectl.run("get", kinds, "-o", "name").stdout.split()

    return {
        "roles": [r for r in names("clusterroles,clusterrolebindings") if "/kueue-" in r],
        "webhooks": [
            w
            for w in names("validatingwebhookconfigurations,mutatingwebhookconfigurations,apiservices")
            if "kueue" in w
        ],
        "admission policies": names("validatingadmissionpolicies,validatingadmissionpolicybindings"),
    }
