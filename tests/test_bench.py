"""The benchmark's pure parts: stack generator, critical-path model, linear fits, target checks.

The benchmark itself (timings) never runs here; `python -m bench.run` does that.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bench import critical_path as cp
from bench.run import (
    CRDS_ENV,
    MAX_PURE_EXPONENT,
    SEED_CHART,
    bench_env,
    chart_cache,
    check_targets,
    crds_origin,
    exponent,
    fit_counts,
    idle_nodes,
    loglog_slope,
    subprocess_env,
)
from testbed.harness import run_program
from testbed.stacks import (
    GRID,
    all_sizes_in_catalog,
    generated_config,
    load_stack as parse_map,
    pool_specs,
    team_share,
    write_stack,
)
from components.facts.capacity import CATALOG
from components.kueue.objects import provisioning_objects
from components.operators.crd_chart import CHARTS_ENV
from components.operators.installs import installs, trainer_runtimes
from components.plan import load_stack
from components.operators.policies import rayservice_guard

# --- stack generator ---------------------------------------------------------------------------


@pytest.mark.parametrize("teams,pools", [*GRID, (1, 2), (3, 5), (7, 2)])
def test_generated_stacks_are_valid_configs(teams: int, pools: int) -> None:
    config = parse_map(generated_config(teams, pools), stack="bench")
    assert [t.name for t in config.teams] == [f"t{i:03d}" for i in range(teams)]
    assert len(config.node_pools) == pools
    assert all(re.fullmatch(r"[a-z][a-z0-9]{0,11}", p.name) for p in config.node_pools)
    assert config.has_gpu and any(not p.is_gpu for p in config.node_pools)
    assert [p.name for p in config.node_pools if p.topology] == ["cpu00"]
    tas = config.pool("cpu00")
    assert tas.min_count == tas.max_count >= 1  # topology-aware pools are fixed-size
    total = sum(t.share for t in config.teams)
    assert 100 - Decimal("0.01") * teams < total <= 100  # as much as fits, never more


@pytest.mark.parametrize(
    "teams,share", [(1, "100"), (2, "50"), (3, "33.33"), (7, "14.28"), (200, "0.5"), (300, "0.33")]
)
def test_team_share_rounds_down_to_hundredths(teams: int, share: str) -> None:
    assert team_share(teams) == Decimal(share)
    assert team_share(teams) * teams <= 100


def test_pools_use_catalog_sizes_and_a_quarter_are_gpu() -> None:
    assert all_sizes_in_catalog()
    specs = pool_specs(12)
    assert all(s["vmSize"] in CATALOG for s in specs)
    assert sum(CATALOG[s["vmSize"]].is_gpu for s in specs) == 3
    assert any(s.get("spot") for s in specs)
    with pytest.raises(ValueError):
        pool_specs(1)


def test_written_stack_file_is_what_the_plan_command_reads(tmp_path: Path) -> None:
    write_stack(tmp_path, "bench-t3-p4", generated_config(3, 4))
    config = load_stack("bench-t3-p4", tmp_path)
    assert (len(config.teams), len(config.node_pools), config.location) == (3, 4, "eastus2")


# --- critical-path model on hand-made graphs ---------------------------------------------------


@dataclass
class Reg:
    type: str
    name: str
    parent: str = ""
    custom: bool = True
    inputs: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)
    provider: str = ""

    @property
    def urn(self) -> str:
        return f"urn:pulumi:s::p::{self.type}::{self.name}"


RG, AKS, POOL = (
    "azure-native:resources:ResourceGroup",
    "azure-native:containerservice:ManagedCluster",
    "azure-native:containerservice:AgentPool",
)
PROVIDER, NS, RELEASE = "pulumi:providers:kubernetes", "kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v3:Release"
KQ = "kubernetes:kueue.x-k8s.io/v1beta2:"
COMPONENT = "kueue-aks:kueue:KueueInstallation"


def tiny_stack(
    *,
    release_waits_for_pool: bool = False,
    objects_depend_on_component: bool = False,
    component_waits_for_pool: bool = False,
) -> list[Reg]:
    """RG, cluster, two pools, provider, the Kueue release and a five-object Kueue chain."""
    rg = Reg(RG, "rg")
    aks = Reg(AKS, "aks", inputs={"resourceName": "c"}, dependencies=[rg.urn])
    cpu = Reg(POOL, "cpu", inputs={"resourceName": "c"}, dependencies=[aks.urn, rg.urn])
    gpu = Reg(POOL, "gpu", inputs={"resourceName": "c"}, dependencies=[aks.urn, rg.urn])
    prov = Reg(PROVIDER, "k8s", dependencies=[aks.urn])
    ref = f"{prov.urn}::k8s_id"
    component = Reg(COMPONENT, "kueue", custom=False, dependencies=[cpu.urn] if component_waits_for_pool else [])
    ns = Reg(NS, "kueue-ns", parent=component.urn, inputs={"metadata": {"name": "kueue-system"}}, provider=ref)
    team_ns = Reg(NS, "ns-a", inputs={"metadata": {"name": "a"}}, provider=ref)
    release = Reg(
        RELEASE,
        "kueue-release",
        parent=component.urn,
        provider=ref,
        inputs={"chart": "oci://registry.k8s.io/kueue/charts/kueue", "namespace": "kueue-system"},
        dependencies=[ns.urn] + ([cpu.urn] if release_waits_for_pool else []),
    )
    ready = component.urn if objects_depend_on_component else release.urn

    def kueue(kind: str, name: str, spec: dict[str, Any], deps: list[Reg], namespace: str | None = None) -> Reg:
        meta = {"name": name, **({"namespace": namespace} if namespace else {})}
        return Reg(
            KQ + kind,
            f"{kind.lower()}-{name}",
            inputs={"metadata": meta, "spec": spec},
            provider=ref,
            dependencies=[ready, *(d.urn for d in deps)],
        )

    topo = kueue("Topology", "default", {"levels": []}, [])
    flavor = kueue("ResourceFlavor", "cpu", {"topologyName": "default"}, [topo])
    groups = [{"flavors": [{"name": "cpu"}]}]
    cohort = kueue("Cohort", "teams", {"resourceGroups": groups}, [flavor])
    cq = kueue("ClusterQueue", "a", {"cohortName": "teams", "resourceGroups": groups}, [cohort, flavor])
    lq = kueue("LocalQueue", "default", {"clusterQueue": "a"}, [cq, team_ns], namespace="a")
    return [rg, aks, cpu, gpu, prov, component, ns, team_ns, release, topo, flavor, cohort, cq, lq]


# 5 s RG + 480 s cluster, then max(300 s pool, 0 provider + 2 s ns + 90 s release + 5 x 3 s chain)
IDEAL = 5 + 480 + max(300, 2 + 90 + 5 * 3)


def test_longest_path_of_a_tiny_graph() -> None:
    graph = {
        u: cp.Node(u, "t", u, s, frozenset(d))
        for u, s, d in [("a", 1, ()), ("b", 2, ("a",)), ("c", 5, ("a",)), ("d", 1, ("b", "c"))]
    }
    path = cp.longest_path(graph)
    assert (path.seconds, path.chain) == (7, ("a", "c", "d"))
    assert path.finish == {"a": 1, "b": 3, "c": 6, "d": 7}
    assert cp.makespan(graph, parallel=1) == 9  # one at a time: the sum
    assert cp.makespan(graph, parallel=100) == 7  # unbounded: the longest path
    graph["a"] = cp.Node("a", "t", "a", 1, frozenset({"d"}))
    with pytest.raises(ValueError, match="cycle"):
        cp.longest_path(graph)


def test_a_program_that_waits_only_for_what_it_needs_scores_1() -> None:
    analysis = cp.analyse(tiny_stack())
    assert analysis.actual.seconds == analysis.ideal.seconds == IDEAL == 785
    assert analysis.ratio == 1.0
    assert analysis.actual.chain == ("rg", "aks", "cpu")
    assert (analysis.delayed, analysis.unneeded) == ((), ())
    assert analysis.branches["Kueue objects"] == 5 + 480 + 2 + 90 + 15


def test_a_release_that_waits_for_a_pool_is_caught() -> None:
    analysis = cp.analyse(tiny_stack(release_waits_for_pool=True))
    assert analysis.ideal.seconds == IDEAL
    assert analysis.actual.seconds == 5 + 480 + 300 + 90 + 15
    assert math.isclose(analysis.ratio, 890 / 785)
    assert analysis.actual.chain == (
        "rg",
        "aks",
        "cpu",
        "kueue-release",
        "topology-default",
        "resourceflavor-cpu",
        "cohort-teams",
        "clusterqueue-a",
        "localqueue-default",
    )
    assert ("kueue-release", "cpu") in analysis.unneeded
    assert "localqueue-default" in analysis.delayed


def test_children_wait_for_what_their_component_waits_for() -> None:
    # depends_on=[pool] on the KueueInstallation component: the SDK registers its children (the
    # release) only after the component, which waits for the pool.
    analysis = cp.analyse(tiny_stack(component_waits_for_pool=True))
    assert analysis.actual.seconds == 5 + 480 + 300 + 2 + 90 + 15  # namespace, release, chain after the pool
    assert ("kueue-ns", "cpu") in analysis.unneeded and ("kueue-release", "cpu") in analysis.unneeded
    assert analysis.ratio > 1.1


def test_depends_on_a_component_means_its_custom_children_and_parents_are_not_waits() -> None:
    regs = tiny_stack(objects_depend_on_component=True)
    graph = cp.actual_graph(regs)
    topo = next(r for r in regs if r.name == "topology-default")
    names = {graph[d].name for d in graph[topo.urn].deps}
    # the component's children (its namespace and release) and the provider; not the component
    assert names == {"kueue-ns", "kueue-release", "k8s"}
    release = next(r for r in regs if r.name == "kueue-release")
    assert {graph[d].name for d in graph[release.urn].deps} == {"kueue-ns", "k8s"}  # parent is no dependency
    assert cp.analyse(regs).ratio == 1.0


def test_idle_nodes_count_a_fixed_size_pool_by_its_count() -> None:
    cluster = Reg(AKS, "aks", inputs={"agentPoolProfiles": [{"name": "system", "count": 2}]})
    autoscaled = Reg(
        POOL,
        "cpu",
        inputs={"agentPoolName": "cpu", "enableAutoScaling": True, "minCount": 1, "maxCount": 5, "count": 1},
    )
    # Topology-aware pools are fixed-size: no minCount, and all `count` nodes stay up.
    fixed = Reg(POOL, "tas", inputs={"agentPoolName": "tas", "enableAutoScaling": False, "count": 3})
    assert idle_nodes([cluster, autoscaled, fixed]) == {"system": 2, "user": {"cpu": 1, "tas": 3}, "total": 6}


def test_durations_and_provider_references() -> None:
    assert (cp.duration(AKS), cp.duration(POOL), cp.duration(RELEASE)) == (480, 300, 90)
    assert cp.duration(KQ + "ClusterQueue") == cp.KUEUE_OBJECT_SECONDS
    assert cp.duration(PROVIDER) == 0
    with pytest.raises(KeyError):
        cp.duration("aws:ec2:Instance")
    urn = "urn:pulumi:dev::kueue-aks::kueue-aks:cluster:AksCluster$pulumi:providers:kubernetes::kueue-k8s"
    assert cp.provider_urn(f"{urn}::abc-123") == urn


# --- linearity and targets ---------------------------------------------------------------------


def test_linear_fit_is_exact_for_linear_counts_and_not_for_a_product_term() -> None:
    linear = [(t, p, 16 + 3 * t + 2 * p) for t, p in GRID]
    fit = fit_counts(linear)
    assert (fit["fixed"], fit["per_team"], fit["per_pool"], fit["max_residual"]) == pytest.approx((16, 3, 2, 0))
    product = [(t, p, 16 + 3 * t + 2 * p + t * p) for t, p in GRID]
    assert fit_counts(product)["max_residual"] > 100
    assert exponent(1.0, 4.0, 4) == pytest.approx(1.0)
    assert exponent(1.0, 16.0, 4) == pytest.approx(2.0)
    assert loglog_slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)


def test_program_registrations_grow_linearly_with_teams_and_pools() -> None:
    counts = [
        (t, p, len(run_program(generated_config(t, p), stack="bench").registrations))
        for t, p in [(2, 2), (4, 2), (2, 4), (4, 4)]
    ]
    fit = fit_counts(counts)
    assert fit["max_residual"] == 0, counts  # (4, 4) is predicted from the other three: no teams x pools term
    # Every generated team uses ordinary pools and the topology-aware cpu00, so it gets a Namespace,
    # two ClusterQueues (<team>, <team>-topology) and two LocalQueues (default, topology); each pool
    # adds an AgentPool and a ResourceFlavor.
    assert (fit["per_team"], fit["per_pool"]) == (5, 2)
    # 25 fixed: 16 as before, the aggregated-role guard (policy and binding, components/kueue/policies.py)
    # and the PoolGuard component with its policy and binding (governance is on by default), the
    # priority-class guard (policy and binding), the TeamAccess component (no members here), the
    # deploying identity's cluster admin role (cluster.deployerAdmin); and
    # the job operators: their component, each one's namespace, the release of its CRDs, and its
    # release or manifest objects, the torch runtime, and the RayService guard (policy and binding); the
    # autoscaled GPU pools' ProvisioningRequestConfig and AdmissionCheck, and the component that
    # reads the ProvisioningRequest CRD (with that read).
    config = parse_map(generated_config(2, 2))
    operator_resources = 1 + sum(1 + (2 if i.chart else 1 + len(i.objects)) for i in installs(config))
    provisioning = 2 + len(provisioning_objects(config))
    assert fit["fixed"] == (
        25 + operator_resources + len(trainer_runtimes()) + len(rayservice_guard(config)) + provisioning
    )


def test_dev_stack_critical_path_and_idle_nodes(dev_config_map: dict[str, Any]) -> None:
    run = run_program(dev_config_map)
    analysis = cp.analyse(run.registrations)
    assert analysis.ratio == 1.0 and analysis.unneeded == ()
    assert analysis.actual.chain[:2] == ("kueue-rg", "kueue-aks")
    # The Kueue branch waits for the pools that use ProvisioningRequest (Kueue must find that API
    # when it starts), and for nothing else of Azure's.
    chain = analysis.actual.chain
    assert chain[:3] == ("kueue-rg", "kueue-aks", "kueue-gpu") or chain[:3] == ("kueue-rg", "kueue-aks", "kueue-tas")
    assert chain[3:5] == ("autoscaling-provisioningrequest-crd", "kueue-release"), chain
    # Every user pool scales to zero, the topology-aware tas pool too (with ProvisioningRequest).
    assert idle_nodes(run.registrations) == {"system": 1, "user": {"cpu": 0, "gpu": 0, "tas": 0}, "total": 1}


def fake_results(**overrides: float) -> dict[str, Any]:
    values = {"dev": 0.2, "large": 4.0, "plan": 0.4, "ratio": 1.0, "residual": 0.0, "slope": 0.7, "parse": 1.0}
    values.update(overrides)

    def stack(label: str, seconds: float) -> dict[str, Any]:
        return {
            "label": label,
            "eval": {"median": seconds},
            "plan": {"median": values["plan"]},
            "critical_path": {"ratio": values["ratio"], "unneeded_waits": []},
        }

    crds_dir = {
        "stacks": [
            {
                "label": "dev",
                "eval": {"median": values.get("dev_crds", 0.2)},
                "plan": {"median": values.get("plan_crds", 0.8)},
            }
        ]
    }
    return {
        "crds": {
            "source": "oci://registry.k8s.io/kueue/charts/kueue",
            "version": "0.19.2",
            "archive": "/tmp/cache/kueue-0.19.2.tgz",
            "seeded_from": "x",
            "load_s": 0.5,
        },
        "crds_dir": crds_dir,
        "stacks": [stack("dev", values["dev"]), stack("200x12", values["large"])],
        "scaling": {
            "resources_fit": {"max_residual": values["residual"]},
            "time_vs_size_slope": values["slope"],
            "pure_exponents": {"parse": values["parse"], "build": 1.0, "validate": 1.0},
        },
    }


def test_targets_without_a_crds_dir_use_the_chart_figures() -> None:
    results = fake_results(plan_crds=5.0)
    del results["crds_dir"]  # no CRD files found: only the default path (the chart cache) is measured
    targets = check_targets(results)
    assert all(t["passed"] for t in targets)
    plan = next(t for t in targets if t["target"].startswith("plan command"))
    assert plan["shown"] == "0.40 s"


def test_targets_name_the_override_and_a_run_without_crds() -> None:
    plan = next(t for t in check_targets(fake_results()) if t["target"].startswith("plan command"))
    assert plan["shown"] == f"0.40 s (0.80 s with {CRDS_ENV})"
    results = fake_results()
    results["crds"] = {"source": "s", "version": "v", "archive": None, "missing": "offline"}
    plan = next(t for t in check_targets(results) if t["target"].startswith("plan command"))
    assert plan["shown"] == f"0.40 s without CRD checks (0.80 s with {CRDS_ENV})"
    assert crds_origin(results["crds"]).startswith("NONE") and "offline" in crds_origin(results["crds"])
    assert crds_origin(fake_results()["crds"]).startswith("from the chart cache")


@pytest.mark.parametrize(
    "override,missed",
    [
        ({}, None),
        ({"dev": 1.6}, "dev stack evaluation"),
        ({"large": 15.5}, "200 teams x 12 pools"),
        ({"plan": 1.2}, "plan command"),
        ({"plan_crds": 1.1}, "plan command"),  # with KUEUE_CRDS_DIR, the override
        ({"dev_crds": 1.6}, "dev stack evaluation"),
        ({"ratio": 1.14}, "critical path"),
        ({"residual": 2.0}, "resources linear"),
        ({"slope": 1.4}, "evaluation time vs"),
        ({"parse": MAX_PURE_EXPONENT + 0.3}, "pure steps"),
    ],
)
def test_targets_fail_when_a_figure_is_missed(override: dict[str, float], missed: str | None) -> None:
    failed = [t["target"] for t in check_targets(fake_results(**override)) if not t["passed"]]
    assert len(failed) == (0 if missed is None else 1), failed
    if missed:
        assert failed[0].startswith(missed)


# --- where the benchmark's program gets its Kueue CRDs ------------------------------------------


def test_the_benchmark_cache_holds_the_chart_the_program_reads(tmp_path: Path) -> None:
    from components.kueue import crds as kueue_crds
    from components.config.kueue import DEFAULT_KUEUE_CHART
    from components.facts.kueue_versions import DEFAULT_VERSION
    from components.operators import sources

    cache_home = tmp_path / "cache"
    info = chart_cache(cache_home, seeds=[tmp_path / "absent.tgz", SEED_CHART])
    assert info["seeded_from"] == str(SEED_CHART) and "missing" not in info
    assert Path(info["archive"]).read_bytes() == SEED_CHART.read_bytes()
    assert Path(info["archive"]).is_relative_to(cache_home)
    # What the program does with the environment the benchmark gives it: the chart from the cache,
    # no network (the unit tests have none), no override.
    env = bench_env({"CI": "true", CRDS_ENV: "/elsewhere", "HOME": "/home/u"}, cache_home, None)
    assert env == {"HOME": "/home/u", "XDG_CACHE_HOME": str(cache_home), CHARTS_ENV: str(cache_home / "crd-charts")}
    found = kueue_crds.kueue_crds(DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ=env)
    assert found.crds is not None and found.missing is None
    assert info["archive"] in found.origin
    # The operators' modules are still read from the user's cache, not fetched into the benchmark's.
    assert (cache_home / "kueue-aks" / "modules").resolve() == sources._cache_dir().resolve()
    assert chart_cache(cache_home, seeds=[])["archive"] == info["archive"]  # again: already there


def test_without_a_chart_the_benchmark_says_so(tmp_path: Path) -> None:
    # No seed and no network (the unit tests have none): the figures would be without CRDs.
    info = chart_cache(tmp_path / "cache", seeds=[])
    assert info["archive"] is None and info["seeded_from"] == "the network"
    assert "cannot be reached" in info["missing"]
    assert crds_origin(info).startswith("NONE")


def test_a_wrong_seed_is_refused_as_the_program_refuses_it(tmp_path: Path) -> None:
    bad = tmp_path / "kueue.tgz"
    bad.write_bytes(b"not a chart")
    info = chart_cache(tmp_path / "cache", seeds=[bad])
    assert info["archive"] is None and str(bad) == info["seeded_from"]


def test_the_override_is_passed_only_when_measured() -> None:
    env = bench_env({"PATH": "/bin"}, Path("/c"), Path("/crds"))
    assert env == {"PATH": "/bin", "XDG_CACHE_HOME": "/c", CRDS_ENV: "/crds", CHARTS_ENV: "/c/crd-charts"}


def test_a_measured_process_runs_byte_compiled_as_a_users_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program's modules are compiled once, as the SDK's are, even where the shell says not to
    write bytecode (this machine's does), and the bytecode stays in the benchmark's folder."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = subprocess_env(Path("/c"), None)
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PYTHONPYCACHEPREFIX"] == "/c/bytecode"


def test_every_benchmark_stack_installs_the_default_chart() -> None:
    # The chart cache holds the default chart only: a stack with another would not find its CRDs.
    from bench.run import stacks

    assert all(
        "kueue-aks:kueue" not in s.config or not {"chart", "version"} & set(s.config["kueue-aks:kueue"])
        for s in stacks()
    )


# --- bench.preview: the program's own time against the SDK's import floor ------------------------


def preview_table(dev: float, large: float, small: float = 3.0) -> dict[str, Any]:
    from bench import preview

    return preview.figures(
        [1.0, 1.2, 0.9],
        {
            "dev": ([dev, dev + 0.5, dev - 0.1], 90),
            "dev-no-operators": ([2.0], 50),
            "20x6": ([small], 200),
            "100x12": ([large], 1000),
        },
    )


def test_preview_figures_are_ratios_to_the_floor_and_cost_per_resource() -> None:
    table = preview_table(dev=2.0, large=11.0)
    assert table["floor"] == {"median": 1.0, "min": 0.9, "max": 1.2, "ratio": 1.0}
    assert table["dev"]["median"] == 2.0 and table["dev"]["max"] == 2.5 and table["dev"]["ratio"] == 2.0
    assert table["dev"]["ms_per_resource"] == pytest.approx(1000 / 90)
    assert table["100x12"]["ms_per_resource"] == pytest.approx(10.0)
    assert table["20x6"]["ms_per_resource"] == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("dev", "large", "small", "named"),
    [
        (2.0, 11.0, 3.0, None),
        (3.5, 11.0, 3.0, "dev stack at 3.5x the floor"),
        (2.0, 16.0, 4.0, "100x12 at 16.0 s"),
        (2.0, 14.0, 2.0, "not linear"),
    ],
)
def test_preview_targets_name_what_is_missed(dev: float, large: float, small: float, named: str | None) -> None:
    from bench import preview

    problems = preview.missed(preview_table(dev, large, small))
    assert (problems == []) if named is None else any(named in p for p in problems), problems
    assert "| dev | 2.00 |" in preview.report(preview_table(2.0, 11.0))
