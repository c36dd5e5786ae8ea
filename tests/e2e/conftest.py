"""The e2e tier's shared fixtures: a local control plane per stack, owned from start to stop.

The tier's tests are in suites by concern: access/ (team members, identities, governance,
isolation), queues/ (Kueue's objects, admission, sharing and what a waiting user sees), platform/
(nodes, the autoscaler, the preflight's clamp, monitoring), operators/, multikueue/, engine/ (the
real Pulumi engine; its fixtures in engine/conftest.py) and tier/ (the tier's own contracts and
tools). Tests take a `stack` parameter (testbed.control_planes.on_stacks) and the `cluster`
fixture gives that stack's control plane. Tests run sorted by stack, so each control plane is
built once and stopped before the next starts; each xdist worker has its own session and runs one
lane (testbed/lanes.py), so two stacks' control planes run side by side, one per worker. Every
process the session starts (kwokctl's components, the Kueue controller, the forwarder thread) is
stopped in its finalizer, whatever the tests did.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.facts.kueue_versions import DEFAULT_VERSION

from testbed.binaries import Binaries, BuildError, ensure_binaries
from testbed.control_planes import ControlPlanes
from testbed.jobs import delete_jobs
from testbed.measurements import start_clock
from testbed.stack_cluster import StackCluster


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    """The control plane's binaries. The job operators' controllers and the Pulumi engine are built
    (or waited for, when .ci/run's background build holds their locks) when the first test that
    needs them starts, so only what is collected is built, and the stacks that need neither run
    first (tests/conftest.py) while a background build finishes them."""
    try:
        return ensure_binaries(DEFAULT_VERSION)
    except BuildError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def control_planes(binaries: Binaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlanes]:
    start_clock()
    planes = ControlPlanes(binaries, tmp_path_factory.mktemp("e2e"))
    yield planes
    planes.stop()


@pytest.fixture
def cleanup(cluster: StackCluster) -> Iterator[list[tuple[str, str]]]:
    """(namespace, Job name) pairs a scenario appends to; each Job is deleted when it ends."""
    jobs: list[tuple[str, str]] = []
    yield jobs
    for namespace, name in jobs:
        delete_jobs(cluster, namespace, name)


@pytest.fixture
def cluster(stack: str, control_planes: ControlPlanes) -> StackCluster:
    """The control plane of the test's `stack` parameter."""
    return control_planes.get(stack)
