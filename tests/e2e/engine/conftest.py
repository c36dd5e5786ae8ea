"""The engine suite's fixtures: the real Pulumi engine, the loopback chart mirror its stacks
install every chart from, and the engine stack's Pulumi project on its control plane."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from components.facts.kueue_versions import DEFAULT_VERSION, RELEASES
from components.monitoring.scrape import PROMETHEUS_OPERATOR_API_VERSION
from testbed.binaries import Binaries, BuildError, Engine, ensure_cli, ensure_kueue, ensure_registry
from testbed.control_planes import ControlPlanes
from testbed.engine import KueueFollower, OperatorFollower, PulumiProject
from testbed.measurements import build_wait, report
from testbed.mirror import ChartMirror
from testbed.operator_controllers import OperatorController
from testbed.scraping import install_crd, service_monitor_crd_for
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, engine_config


@pytest.fixture(scope="session")
def engine(control_planes: ControlPlanes) -> Engine:
    return control_planes.engine()


@pytest.fixture(scope="session")
def pulumi_cli() -> Path:
    """The Pulumi CLI alone, the engine's (binaries.ensure_cli), for the tests that only ask it how
    it reads a stack file (test_stack_file_cli.py): no control plane, language host or provider."""
    try:
        with build_wait():
            return ensure_cli()
    except BuildError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def mirror(binaries: Binaries) -> Iterator[ChartMirror]:
    """The loopback chart mirror (mirror.py) that the engine's stacks install every chart from,
    with every Kueue version the program supports."""
    with build_wait():
        registry = ensure_registry()
    with ChartMirror(binaries.helm, registry, more_kueue_versions=sorted(set(RELEASES) - {DEFAULT_VERSION})) as up:
        report(f"e2e: chart mirror up: {up.timings}")
        yield up


@pytest.fixture
def project(
    cluster: StackCluster, engine: Engine, mirror: ChartMirror, control_planes: ControlPlanes
) -> Iterator[PulumiProject]:
    """The engine stack's Pulumi project (the test_engine*.py files, test_extension.py), made on
    first use and kept with its control plane, every chart from the mirror. From then until the
    control plane stops, Kueue and each job operator run while the program's release or manifests
    have their Deployments (KueueFollower, OperatorFollower). The platform gives what AKS or the
    cluster's owner would: the ServiceMonitor CRD of the Prometheus Operator."""
    made = getattr(cluster, "pulumi_project", None)
    if made is None:
        install_crd(cluster.kubectl, service_monitor_crd_for(PROMETHEUS_OPERATOR_API_VERSION))
        made = PulumiProject(engine, cluster.workdir / "pulumi", ENGINE, env=mirror.environ({}), rewrite=mirror.apply)
        made.create(engine_config(), cluster.cluster.kubeconfig.read_text())
        follower = KueueFollower(cluster.kueue, cluster.kubectl, binary_for=ensure_kueue).__enter__()
        cluster.stoppers.append(lambda: follower.__exit__(None, None, None))
        binaries = control_planes.operator_binaries()
        operators = OperatorFollower(
            {
                name: OperatorController(
                    name, binary, cluster.kubectl, cluster.workdir / "operators", cluster.forwarder
                )
                for name, binary in binaries.items()
            },
            cluster.kubectl,
        ).__enter__()
        cluster.stoppers.append(lambda: operators.__exit__(None, None, None))
        cluster.pulumi_project, cluster.kueue_follower = made, follower  # type: ignore[attr-defined]
        cluster.operator_follower = operators  # type: ignore[attr-defined]
    yield made


@pytest.fixture
def clean(cluster: StackCluster, project: PulumiProject) -> Iterator[StackCluster]:
    """The control plane with no stack on it (test_engine.py ends with a destroy) but the MultiKueue
    worker its module keeps. A stack another test left (it failed before its destroy) is taken
    down and removed here, so that failure is not repeated by every test after it."""
    if project.created():
        project.destroy()
    worker = getattr(cluster, "worker_stack", None)
    kept = {project.stack, *([worker.stack] if worker is not None else [])}
    for name in sorted(set(project.stacks()) - kept):
        said = PulumiProject(
            project.engine, project.workdir, name, env=project.extra_env, rewrite=project.rewrite
        ).remove(cluster)
        if said is not None:
            report(f"e2e[{ENGINE}]: left by a failed test: {said}")
    yield cluster
