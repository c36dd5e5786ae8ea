"""Shared fixtures: stack configs as the program and the plan command read them."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from components.kueue import crds as kueue_crds
from components.config.kueue import DEFAULT_KUEUE_CHART
from components.config.stack import StackConfig
from components.facts.kueue_versions import DEFAULT_VERSION
from components.k8s.crd_schema import CrdSchemas
from components.kueue.validate import CRDS_ENV
from components.operators.crd_chart import CHARTS_ENV
from testbed.harness import ROOT
from testbed.lanes import check_groups_applied
from testbed.measurements import Measurements
from testbed.paths import CHART_TGZ, missing_shared
from testbed.stacks import load_stack
from testbed.tier_times import BUDGETS, TierTimes
from testbed.plain_reports import pytest_runtest_makereport  # noqa: F401  (a hook: failures reported, never INTERNALERROR)

# Hypothesis keeps an example database and caches (unicode data, constants) in .hypothesis/ of the
# working directory; a test writes nothing outside its temporary folders, so: no database, and the
# caches in a temporary folder of this run.
settings.register_profile("hermetic", database=None)
settings.load_profile("hermetic")
_HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="kueue-aks-hypothesis-")
set_hypothesis_home_dir(_HYPOTHESIS_HOME)
atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
E2E_DIR = Path(__file__).resolve().parent / "e2e"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs on a local control plane with the real Kueue controller (tests/e2e)")
    config.pluginmanager.register(TierTimes(), "kueue-aks-tier-times")
    config.pluginmanager.register(Measurements(BUDGETS["e2e"]), "kueue-aks-e2e-measurements")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the e2e tier before `-m` selects on marks; give every test its unit of work for the two
    xdist workers (`xdist_group`, read by `--dist loadgroup`; pyproject.toml): a unit test module
    is one unit, so its module fixtures are built once; the e2e tier is two lanes
    (testbed/lanes.py), each run whole by one worker. The units go out in collection order, so
    both workers share the unit tier first, then each takes a lane.

    Then the order: the slowest unit modules first (testbed/lanes.py), the e2e tier after the unit
    tests, grouped by stack so that each stack's
    control plane is built once, and the teardown module last on each. The stacks that need only
    the control plane's binaries come first, then those that run the job operators, then the
    Pulumi engine's, so that on a cold machine .ci/run's background build finishes the later ones
    meanwhile. Within a stack the modules run by file name, whichever suite folder holds them
    (the order the lanes were measured in), each in its file order: the sort is stable. Here, not
    later: an xdist worker reports its collection to the scheduler once this hook is done, and runs
    tests by their index in that list."""
    from testbed.lanes import UNIT_MODULES_FIRST, lane
    from testbed.multikueue import MULTIKUEUE
    from testbed.stacks import ENGINE, OPERATOR_STACKS

    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group(lane(item.path.name, _stack_of(item))))
        else:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(ROOT).as_posix()))

    def key(item: pytest.Item) -> tuple[bool, int, str, bool, str]:
        if E2E_DIR not in item.path.parents:
            return (False, 0 if item.path.relative_to(ROOT).as_posix() in UNIT_MODULES_FIRST else 1, "", False, "")
        stack = _stack_of(item)
        builds = 2 if stack == ENGINE else 1 if stack in (*OPERATOR_STACKS, MULTIKUEUE) else 0
        return (True, builds, stack, item.path.name == "test_teardown.py", item.path.name)

    items.sort(key=key)


def _stack_of(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    return str(callspec.params.get("stack", "")) if callspec else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    check_groups_applied(session)


@pytest.fixture(scope="session")
def kueue_chart_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user cache (XDG_CACHE_HOME) holding the chart of the default source, seeded from ../shared
    as a first online run would leave it."""
    if not CHART_TGZ.is_file():
        pytest.fail(missing_shared(f"Kueue chart {CHART_TGZ}"))
    cache_home = tmp_path_factory.mktemp("xdg-cache")
    entry = kueue_crds.cache_entry(DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ={"XDG_CACHE_HOME": str(cache_home)})
    entry.mkdir(parents=True)
    shutil.copyfile(CHART_TGZ, entry / kueue_crds.archive_name(DEFAULT_VERSION))

    def offline(source: str, version: str, transport: kueue_crds.Transport) -> bytes:
        raise kueue_crds.ChartUnavailable(f"{source} is not fetched by the tests")

    # Read back as the program reads it: without this, a cache that holds nothing would only make
    # the program warn that it skipped the CRD checks, and the tests would pass unchecked.
    try:
        kueue_crds.chart_archive(
            DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ={"XDG_CACHE_HOME": str(cache_home)}, fetch=offline
        )
    except kueue_crds.CrdError as err:
        pytest.fail(f"the seeded chart cache {cache_home} does not give the program the Kueue chart: {err}")
    return cache_home


@pytest.fixture(scope="module", autouse=True)
def offline_with_chart_cache(request: pytest.FixtureRequest, kueue_chart_cache: Path) -> Iterator[None]:
    """Every unit test, the program's included, validates against the CRDs of the pinned chart,
    read the way users get them: KUEUE_CRDS_DIR unset, and the user cache holding the chart. No
    test reaches a registry on the internet: a fetch from anywhere but loopback finds no network,
    as offline, so a stack with a mirror's chart is checked without CRDs and warns (CI is unset
    for that); the one registry reached is the Go module proxy, for the operators' pinned module
    zips, once a session. Module scope, so that it is in place before any module-scoped fixture that runs
    the program (pytest sets up autouse fixtures first within a scope); a test's own monkeypatch
    changes on top of it are undone after that test. Not for the e2e tier: its binaries have their
    own cache (KUEUE_AKS_E2E_CACHE), and its stacks install the chart from the packaged file."""
    if E2E_DIR in request.path.parents:
        yield
        return
    real_fetch = kueue_crds.fetch_chart

    def loopback_only(source: str, version: str, transport: kueue_crds.Transport) -> bytes:
        host = source.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
        if host not in LOOPBACK:
            raise kueue_crds.ChartUnavailable(f"{source} cannot be reached (the unit tests have no network)")
        return real_fetch(source, version, transport)

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(CRDS_ENV, raising=False)
        patch.delenv("CI", raising=False)  # offline is a warning here; the tests of CI=true set it
        patch.setenv("XDG_CACHE_HOME", str(kueue_chart_cache))
        # The operators' module zips (components/operators/sources.py) are read from Go's module
        # cache when it has them: an empty one, so they come from the module proxy, checked against
        # their pinned checksums, into the session's cache above, whatever this machine holds.
        patch.setenv("GOMODCACHE", str(kueue_chart_cache / "empty-go-mod-cache"))
        # The operators' CRD charts the program writes (components/operators/crd_chart.py), which
        # would otherwise go to .kueue-aks/ under the directory pytest runs in.
        patch.setenv(CHARTS_ENV, str(kueue_chart_cache / "crd-charts"))
        patch.setattr(kueue_crds, "fetch_chart", loopback_only)
        yield


@pytest.fixture(scope="session")
def crds(kueue_chart_cache: Path) -> CrdSchemas:
    """The CRDs of the default chart, as the program reads them."""
    found = kueue_crds.kueue_crds(
        DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ={"XDG_CACHE_HOME": str(kueue_chart_cache)}
    )
    assert found.crds is not None, found.missing
    return found.crds


@pytest.fixture
def dev_config_map() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


@pytest.fixture
def dev_config(dev_config_map: dict[str, Any]) -> StackConfig:
    return load_stack(dev_config_map)
