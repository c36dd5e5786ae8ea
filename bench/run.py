"""Offline benchmark: program speed, scaling with teams and pools, and the deployment critical path.

    python -m bench.run            # full run, about four minutes on 2 cores
    python -m bench.run --quick    # fewer repetitions, about two and a half minutes

No cloud, no cluster, no Pulumi CLI. Prints the figures as tables, writes them as JSON
(--out, default bench/results/results.json) and exits 1 when a target is missed, naming it.
See the README's Performance section for what each figure means.

The Kueue CRDs: every figure is taken as the program runs by default, KUEUE_CRDS_DIR unset, so
it reads the CRDs of the chart it installs from the user's chart cache. The benchmark gives the
program a cache of its own (a temporary XDG_CACHE_HOME) holding the default chart, copied from
../shared's packaged chart, else from the user's cache, else downloaded once before any timing;
the operators' module cache there links to the user's, so only the chart cache is the benchmark's.
The dev and 200 x 12 stacks are measured again with KUEUE_CRDS_DIR (the override) when CRD files
are found. CI is unset for the program (a chart that cannot be read is then a warning): when the
chart cannot be had at all, the figures are taken without the CRD checks, and say so.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import io
import json
import logging
import math
import os
import platform
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import critical_path
from testbed.paths import ROOT, SHARED
from testbed.stacks import GRID, generated_config, stack_file_config, stack_name, write_stack

from components.facts.kueue_versions import DEFAULT_VERSION
from components.operators.crd_chart import CHARTS_ENV

CRDS_ENV = "KUEUE_CRDS_DIR"
SHARED_KUEUE = SHARED / "kueue" / f"v{DEFAULT_VERSION}"
DEFAULT_CRDS = SHARED_KUEUE / "crds"  # CRD files for the KUEUE_CRDS_DIR figures
SEED_CHART = SHARED_KUEUE / "chart" / f"kueue-{DEFAULT_VERSION}.tgz"  # the published chart, packaged

# Targets (issue "Benchmark: program speed, ..."), checked here and never in the unit tests.
DEV_EVAL_LIMIT_S = 1.5
LARGE_EVAL_LIMIT_S = 15.0
LARGE_STACK = (200, 12)
PLAN_DEV_LIMIT_S = 1.0
# Linear scaling: time grows no faster than the size of what is registered, and the pure parts
# (config, builders, validator) stay linear from 2x to 8x the teams of the largest generated stack.
MAX_SIZE_EXPONENT = 1.15
MAX_PURE_EXPONENT = 1.3
STRESS_TEAMS = (400, 1600)
STRESS_POOLS = 12
# Sensitivity only: `pulumi up --parallel N` with a cap.
CAPPED_PARALLEL = 10


@dataclass(frozen=True)
class Stack:
    label: str
    name: str
    teams: int
    pools: int
    config: dict[str, Any]


def stacks() -> list[Stack]:
    dev = stack_file_config("dev")
    out = [Stack("dev", "dev", len(dev["kueue-aks:teams"]), len(dev["kueue-aks:nodePools"]), dev)]
    out += [Stack(f"{t}x{p}", stack_name(t, p), t, p, generated_config(t, p)) for t, p in GRID]
    return out


# --- measuring ---------------------------------------------------------------------------------


def summary(samples: Sequence[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "runs": len(samples),
        "samples": list(samples),
    }


def timed(fn: Callable[[], Any], runs: int) -> tuple[dict[str, Any], Any]:
    """Median wall time of `runs` calls of fn (after the caller's warm-up), and the last result."""
    samples, result = [], None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return summary(samples), result


# --- where the program gets its Kueue CRDs ------------------------------------------------------


def chart_cache(cache_home: Path, seeds: Sequence[Path] | None = None, fetch: Any = None) -> dict[str, Any]:
    """Make `cache_home` a user cache (XDG_CACHE_HOME) in which the program finds the default Kueue
    chart, as after its first online run; see the module docstring. `seeds`: archives to copy in
    (default: ../shared's packaged chart, then the user's cached one); without one, the chart is
    fetched (`fetch`, as kueue_crds.chart_archive takes it). The archive is checked as the program
    checks it. Returns where the chart came from, or why there is none ("missing")."""
    from components.kueue import crds as kueue_crds
    from components.config.kueue import DEFAULT_KUEUE_CHART
    from components.k8s.cache import user_cache
    from components.operators import sources

    environ = {"XDG_CACHE_HOME": str(cache_home)}
    modules = sources._cache_dir()  # the user's, read before XDG_CACHE_HOME changes
    modules.mkdir(parents=True, exist_ok=True)
    link = user_cache(environ) / modules.name  # where the program, given `environ`, looks for them
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(modules, target_is_directory=True)
    entry = kueue_crds.cache_entry(DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ)
    archive = entry / kueue_crds.archive_name(DEFAULT_VERSION)
    if seeds is None:
        seeds = [SEED_CHART, kueue_crds.cache_entry(DEFAULT_KUEUE_CHART, DEFAULT_VERSION) / archive.name]
    seed = next((s for s in seeds if s.is_file()), None)
    if seed is not None and not archive.is_file():
        entry.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, archive)
    info: dict[str, Any] = {
        "source": DEFAULT_KUEUE_CHART,
        "version": DEFAULT_VERSION,
        "seeded_from": str(seed) if seed else "the network",
    }
    try:
        path, _ = kueue_crds.chart_archive(DEFAULT_KUEUE_CHART, DEFAULT_VERSION, environ=environ, fetch=fetch)
    except kueue_crds.CrdError as err:
        return {**info, "archive": None, "missing": str(err)}
    return {**info, "archive": str(path)}


def bench_env(base: Mapping[str, str], cache_home: Path, crds_dir: Path | None) -> dict[str, str]:
    """`base` as the program gets it here: the benchmark's chart cache (and the operators' CRD
    charts the program writes there, not into the project), KUEUE_CRDS_DIR only when `crds_dir`
    is given, CI unset."""
    env = {k: v for k, v in base.items() if k not in (CRDS_ENV, "CI")}
    env["XDG_CACHE_HOME"] = str(cache_home)
    env[CHARTS_ENV] = str(cache_home / "crd-charts")
    if crds_dir is not None:
        env[CRDS_ENV] = str(crds_dir)
    return env


@contextlib.contextmanager
def program_env(cache_home: Path, crds_dir: Path | None = None):
    """Run in-process evaluations with bench_env's variables; os.environ is restored afterwards."""
    keys = (CRDS_ENV, "CI", "XDG_CACHE_HOME", CHARTS_ENV)
    old = {k: os.environ.get(k) for k in keys}
    wanted = bench_env(os.environ, cache_home, crds_dir)
    try:
        for key in keys:
            if key in wanted:
                os.environ[key] = wanted[key]
            else:
                os.environ.pop(key, None)
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def quiet_program(config: Mapping[str, Any], stack: str) -> Any:
    from testbed.harness import run_program

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return run_program(config, stack=stack)


def subprocess_env(cache_home: Path, crds: Path | None) -> dict[str, str]:
    """bench_env for a new process. Byte-compiled as a user's preview is, whatever this shell says:
    Python keeps each module's bytecode after its first import (here in the benchmark's own folder,
    for the SDK and the program alike), so a PYTHONDONTWRITEBYTECODE in the environment would charge
    every run with compiling the program's modules, and not the SDK's, which pip compiled."""
    env = bench_env(os.environ, cache_home, crds)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache_home / "bytecode")
    return env


def run_process(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=dict(env), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def plan_times(stack: Stack, root: Path, runs: int, cache_home: Path, crds: Path | None = None) -> dict[str, Any]:
    env = subprocess_env(cache_home, crds)
    samples = [
        run_process(["-m", "components.plan", "--stack", stack.name, "--root", str(root)], env)[0] for _ in range(runs)
    ]
    return summary(samples)


def process_runs(
    stack_file: Path, stack: Stack, runs: int, cache_home: Path, crds: Path | None = None
) -> dict[str, Any]:
    env = subprocess_env(cache_home, crds)
    walls, reports = [], []
    for _ in range(runs):
        wall, out = run_process(["-m", "bench.worker", str(stack_file), stack.name], env)
        walls.append(wall)
        reports.append(json.loads(out.strip().splitlines()[-1]))
    pick = lambda key: statistics.median(r[key] for r in reports)
    return {
        "wall": summary(walls),
        "import_s": pick("import_s"),
        "import_libraries_s": pick("import_libraries_s"),
        "import_program_s": pick("import_program_s"),
        "first_eval_s": pick("eval_s"),
        # interpreter start and exit (Pulumi's gRPC and executor threads shut down)
        "start_exit_s": statistics.median(w - r["in_process_s"] for w, r in zip(walls, reports)),
        "maxrss_mib": max(r["maxrss_mib"] for r in reports),
    }


def graph_figures(registrations: Sequence[Any]) -> dict[str, Any]:
    custom = [r for r in registrations if r.custom]
    graph = critical_path.actual_graph(registrations)
    size = sum(len(json.dumps(r.inputs, default=str, sort_keys=True)) for r in registrations)
    by_kind: dict[str, int] = {}
    for r in custom:
        kind = r.type.rsplit(":", 1)[-1]
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return {
        "registrations": len(registrations),
        "custom": len(custom),
        "components": len(registrations) - len(custom),
        "edges": sum(len(n.deps) for n in graph.values()),
        "input_bytes": size,
        "by_kind": dict(sorted(by_kind.items())),
    }


def _idle_pool_nodes(inputs: Mapping[str, Any]) -> int:
    # The autoscaler shrinks an autoscaled pool to minCount; a fixed-size pool keeps its count.
    if inputs.get("enableAutoScaling", False):
        return int(inputs.get("minCount", 0))
    return int(inputs.get("count", 0))


def idle_nodes(registrations: Sequence[Any]) -> dict[str, Any]:
    """Nodes that run with no jobs: the system pool's count plus each user pool's minCount, or its
    count when the pool is fixed-size (topology-aware pools are not autoscaled)."""
    system = sum(
        int(p.get("count", 0))
        for r in registrations
        if r.type.endswith(":ManagedCluster")
        for p in r.inputs.get("agentPoolProfiles", [])
    )
    pools = dict(
        sorted(
            (r.inputs["agentPoolName"], _idle_pool_nodes(r.inputs))
            for r in registrations
            if r.type.endswith(":AgentPool")
        )
    )
    return {"system": system, "user": pools, "total": system + sum(pools.values())}


def critical_figures(registrations: Sequence[Any]) -> dict[str, Any]:
    analysis = critical_path.analyse(registrations)
    return {
        "actual_s": analysis.actual.seconds,
        "ideal_s": analysis.ideal.seconds,
        "ratio": analysis.ratio,
        "chain": list(analysis.actual.chain),
        "ideal_chain": list(analysis.ideal.chain),
        "delayed": list(analysis.delayed),
        "unneeded_waits": [list(p) for p in analysis.unneeded],
        "branches_s": dict(analysis.branches),
        f"parallel_{CAPPED_PARALLEL}_s": critical_path.makespan(
            critical_path.actual_graph(registrations), CAPPED_PARALLEL
        ),
    }


def pure_phases(config_map: Mapping[str, Any], stack: str, runs: int, crds: Any) -> dict[str, Any]:
    """Time of the program's own pure steps: config model, object builders, validator."""
    from components.config.parse import parse_config, raw_from_stack_file
    from components.kueue.objects import build_objects, flavor_capacity
    from components.kueue.validate import validate_objects

    raw, location = raw_from_stack_file({"config": config_map})
    config = parse_config(raw, stack=stack, location=location)
    objects = build_objects(config)
    capacity = flavor_capacity(config)
    out = {
        "objects": len(objects),
        "parse_s": timed(lambda: parse_config(raw, stack=stack, location=location), runs)[0]["median"],
        "build_s": timed(lambda: build_objects(config), runs)[0]["median"],
        "validate_s": timed(lambda: validate_objects(objects, capacity=capacity), runs)[0]["median"],
    }
    if crds is not None:
        stats, violations = timed(lambda: validate_objects(objects, crds=crds, capacity=capacity), max(1, runs // 2))
        out["validate_crds_s"] = stats["median"]
        out["violations_with_crds"] = len(violations)
    return out


def exponent(small: float, large: float, ratio: float) -> float:
    """k in large/small = ratio**k: 1 linear, 2 quadratic."""
    return math.log(large / small) / math.log(ratio)


def fit_counts(rows: Sequence[tuple[int, int, int]]) -> dict[str, Any]:
    """Exact linear model count = a + b*teams + c*pools from the first three points that determine it,
    and its largest error over all points (0 when the count is linear in teams and pools)."""
    import itertools

    for p1, p2, p3 in itertools.combinations(rows, 3):
        m = [[1, p1[0], p1[1]], [1, p2[0], p2[1]], [1, p3[0], p3[1]]]
        det = _det3(m)
        if det == 0:
            continue
        ys = [p1[2], p2[2], p3[2]]
        coef = []
        for col in range(3):
            mc = [row[:] for row in m]
            for i in range(3):
                mc[i][col] = ys[i]
            coef.append(_det3(mc) / det)
        a, b, c = coef
        residual = max(abs(a + b * t + c * p - y) for t, p, y in rows)
        return {"fixed": a, "per_team": b, "per_pool": c, "max_residual": residual}
    raise ValueError("need three points that are not collinear in (teams, pools)")


def _det3(m: Sequence[Sequence[float]]) -> float:
    return (
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    )


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) over log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


@contextlib.contextmanager
def without_type_aliases(minimum: int = 20):
    """Drop the long alias lists provider SDKs attach to every resource (pulumi-azure-native declares
    one per old API version: ~110 on an AgentPool), to show what resolving them costs. Experiment
    only: aliases matter for state migration, the program keeps them."""
    import pulumi

    real = pulumi.ResourceOptions.merge

    def merge(opts1: Any, opts2: Any) -> Any:
        if opts2 is not None and opts2.aliases and len(opts2.aliases) >= minimum:
            opts2 = pulumi.ResourceOptions()
        return real(opts1, opts2)

    pulumi.ResourceOptions.merge = staticmethod(merge)  # type: ignore[method-assign]
    try:
        yield
    finally:
        pulumi.ResourceOptions.merge = staticmethod(real)  # type: ignore[method-assign]


def alias_experiment(all_stacks: Sequence[Stack], labels: Sequence[str], runs: int) -> list[dict[str, Any]]:
    rows = []
    for s in all_stacks:
        if s.label not in labels:
            continue
        quiet_program(s.config, s.name)  # warm-up
        with_aliases, _ = timed(functools.partial(quiet_program, s.config, s.name), runs)
        with without_type_aliases():
            quiet_program(s.config, s.name)
            without, _ = timed(functools.partial(quiet_program, s.config, s.name), runs)
        rows.append({"label": s.label, "with_aliases": with_aliases, "without_aliases": without})
    return rows


# --- reporting ---------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = lambda r: (
        "| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"
    )
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells)])


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def check_targets(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each timing target holds with the CRDs from the chart cache (the default) and, when CRD files
    were found, with KUEUE_CRDS_DIR. Figures taken without any CRDs (the chart could not be read)
    still count, and say so."""
    by = {s["label"]: s for s in results["stacks"]}
    crd = {r["label"]: r for r in (results.get("crds_dir") or {}).get("stacks", [])}
    without = "" if (results.get("crds") or {}).get("archive", True) else " without CRD checks"
    large_label = f"{LARGE_STACK[0]}x{LARGE_STACK[1]}"
    scaling = results["scaling"]
    ratios = {s["label"]: s["critical_path"]["ratio"] for s in results["stacks"]}
    unneeded = {s["label"]: len(s["critical_path"]["unneeded_waits"]) for s in results["stacks"]}
    worst_pure = max(scaling["pure_exponents"].items(), key=lambda kv: kv[1])

    def timing(label: str, figure: str, limit: float) -> tuple[float, bool, str]:
        values = [by[label][figure]["median"]] + ([crd[label][figure]["median"]] if label in crd else [])
        shown = f"{values[0]:.2f} s{without}" + (f" ({values[1]:.2f} s with {CRDS_ENV})" if len(values) > 1 else "")
        return max(values), max(values) < limit, shown

    dev_eval = timing("dev", "eval", DEV_EVAL_LIMIT_S)
    large_eval = timing(large_label, "eval", LARGE_EVAL_LIMIT_S)
    dev_plan = timing("dev", "plan", PLAN_DEV_LIMIT_S)
    targets = [
        ("dev stack evaluation (median, in process)", dev_eval[0], f"< {DEV_EVAL_LIMIT_S} s", dev_eval[1], dev_eval[2]),
        (
            "200 teams x 12 pools evaluation (median)",
            large_eval[0],
            f"< {LARGE_EVAL_LIMIT_S:g} s",
            large_eval[1],
            large_eval[2],
        ),
        ("plan command, dev stack (median, process)", dev_plan[0], f"< {PLAN_DEV_LIMIT_S} s", dev_plan[1], dev_plan[2]),
        (
            "critical path / ideal, every stack",
            max(ratios.values()),
            "= 1.00 and no unneeded waits",
            all(abs(r - 1.0) < 1e-9 for r in ratios.values()) and not any(unneeded.values()),
            f"{max(ratios.values()):.2f}, {sum(unneeded.values())} unneeded waits",
        ),
        (
            "resources linear in teams and pools",
            scaling["resources_fit"]["max_residual"],
            "exact fit",
            scaling["resources_fit"]["max_residual"] < 1e-6,
            f"residual {scaling['resources_fit']['max_residual']:g}",
        ),
        (
            "evaluation time vs registered size (log-log slope)",
            scaling["time_vs_size_slope"],
            f"<= {MAX_SIZE_EXPONENT}",
            scaling["time_vs_size_slope"] <= MAX_SIZE_EXPONENT,
            f"{scaling['time_vs_size_slope']:.2f}",
        ),
        (
            f"pure steps at {STRESS_TEAMS[0]}->{STRESS_TEAMS[1]} teams (worst exponent)",
            worst_pure[1],
            f"<= {MAX_PURE_EXPONENT}",
            worst_pure[1] <= MAX_PURE_EXPONENT,
            f"{worst_pure[1]:.2f} ({worst_pure[0]})",
        ),
    ]
    return [
        {"target": name, "value": value, "limit": limit, "passed": ok, "shown": shown}
        for name, value, limit, ok, shown in targets
    ]


def crds_origin(crds: Mapping[str, Any]) -> str:
    """Where the main figures' CRDs came from, for the report's header."""
    if crds.get("archive"):
        return (
            f"from the chart cache, as the program reads them by default ({CRDS_ENV} unset): {crds['source']} "
            f"{crds['version']}, seeded from {crds['seeded_from']}; loaded in {crds['load_s']:.2f} s once per "
            "process (included in process and plan)"
        )
    return (
        f"NONE, every figure is without the CRD schema and CEL checks: the chart {crds.get('source')} "
        f"{crds.get('version')} could not be read ({crds.get('missing')})"
    )


def report(results: Mapping[str, Any]) -> str:
    out: list[str] = []
    m = results["machine"]
    out.append(
        f"kueue-aks benchmark: {m['cpus']} CPUs, load {m['loadavg_start']:.2f} -> {m['loadavg_end']:.2f}, "
        f"Python {m['python']}, pulumi {m['pulumi']}, azure-native {m['pulumi-azure-native']}, "
        f"kubernetes {m['pulumi-kubernetes']}; medians of {results['runs']} runs "
        f"(process: {results['process_runs']})"
    )
    out.append(f"Kueue CRDs: {crds_origin(results.get('crds') or {})}")
    out.append("\nProgram speed")
    rows = []
    for s in results["stacks"]:
        g, p = s["graph"], s["process"]
        rows.append(
            [
                s["label"],
                s["teams"],
                s["pools"],
                g["registrations"],
                g["edges"],
                f"{g['input_bytes'] / 1024:.0f}",
                f"{s['eval']['median']:.2f}",
                f"{s['eval']['median'] / g['registrations'] * 1000:.1f}",
                f"{p['wall']['median']:.2f}",
                f"{p['import_s']:.2f}",
                f"{p['first_eval_s']:.2f}",
                f"{p['start_exit_s']:.2f}",
                f"{p['maxrss_mib']:.0f}",
                f"{s['plan']['median']:.2f}",
            ]
        )
    out.append(
        table(
            [
                "stack",
                "teams",
                "pools",
                "resources",
                "deps",
                "inputs KiB",
                "eval s",
                "ms/res",
                "process s",
                "imports s",
                "1st eval s",
                "start+exit s",
                "peak MiB",
                "plan s",
            ],
            rows,
        )
    )
    out.append(
        "  eval: in process after a warm-up; process: one fresh `python` = imports + 1st eval + start/exit;"
        " plan: `python -m components.plan` wall time"
    )

    out.append("\nWhere the time goes (pure steps, medians; the rest of `eval` is Pulumi registering resources)")
    rows = []
    for s in results["stacks"]:
        ph = s["phases"]
        pure = ph["parse_s"] + ph["build_s"] + ph["validate_s"]
        rows.append(
            [
                s["label"],
                ph["objects"],
                f"{ph['parse_s'] * 1000:.1f}",
                f"{ph['build_s'] * 1000:.1f}",
                f"{ph['validate_s'] * 1000:.1f}",
                f"{pure / s['eval']['median'] * 100:.0f}%",
                f"{ph['validate_crds_s'] * 1000:.0f}" if "validate_crds_s" in ph else "n/a",
            ]
        )
    out.append(
        table(
            ["stack", "Kueue objects", "config ms", "build ms", "validate ms", "share of eval", "validate+CRDs ms"],
            rows,
        )
    )
    out.append(
        "  validate: without CRDs; validate+CRDs: with the CRD schema and CEL rules of "
        + ("the chart" if (results.get("crds") or {}).get("archive") else f"{CRDS_ENV}")
    )

    crd = results.get("crds_dir")
    if crd:
        by_label = {e["label"]: e for e in results["stacks"]}
        out.append(
            f"\nWith {CRDS_ENV}={crd['dir']}, the override (CRDs read from files instead of the chart; they "
            f"load once per process, {crd['load_s']:.2f} s, included in process and plan):"
        )
        out.append(
            table(
                ["stack", "eval s", "(chart)", "process s", "(chart)", "peak MiB", "plan s", "(chart)"],
                [
                    [
                        r["label"],
                        f"{r['eval']['median']:.2f}",
                        f"{by_label[r['label']]['eval']['median']:.2f}",
                        f"{r['process']['wall']['median']:.2f}",
                        f"{by_label[r['label']]['process']['wall']['median']:.2f}",
                        f"{r['process']['maxrss_mib']:.0f}",
                        f"{r['plan']['median']:.2f}",
                        f"{by_label[r['label']]['plan']['median']:.2f}",
                    ]
                    for r in crd["stacks"]
                ],
            )
        )
    else:
        out.append(f"\n{CRDS_ENV} not measured: no Kueue CRD files at {DEFAULT_CRDS} and {CRDS_ENV} unset.")

    sc = results["scaling"]
    fit = sc["resources_fit"]
    out.append("\nScaling")
    out.append(
        f"  registrations = {fit['fixed']:g} + {fit['per_team']:g} x teams + {fit['per_pool']:g} x pools "
        f"(largest error {fit['max_residual']:g}); inputs grow with teams x pools (each ClusterQueue "
        "lists a quota per flavor and resource)"
    )
    for key, value in sc["time_ratios"].items():
        out.append(
            f"  {key}: {value['time']:.2f}x time for {value['size']:.2f}x inputs, {value['resources']:.2f}x resources"
        )
    out.append("  marginal evaluation cost: " + ", ".join(f"{k} {v:.0f} ms" for k, v in sc["marginal_ms"].items()))
    out.append(
        f"  evaluation time vs input size, log-log slope over the grid: {sc['time_vs_size_slope']:.2f} (1 = linear)"
    )
    out.append(
        f"  pure steps, {STRESS_TEAMS[0]} -> {STRESS_TEAMS[1]} teams x {STRESS_POOLS} pools, exponent: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sc["pure_exponents"].items())
        + " ("
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in sc["pure_at_max"].items())
        + f" at {STRESS_TEAMS[1]})"
    )

    out.append(
        "\nModelled first `pulumi up` (durations: "
        + ", ".join(f"{k.rsplit(':', 1)[-1]} {v:g} s" for k, v in critical_path.DURATIONS.items())
        + f", Kueue objects {critical_path.KUEUE_OBJECT_SECONDS:g} s, "
        "provider 0 s; unlimited parallelism, the CLI default)"
    )
    rows = []
    for s in results["stacks"]:
        cp = s["critical_path"]
        b = cp["branches_s"]
        rows.append(
            [
                s["label"],
                minutes(cp["actual_s"]),
                minutes(cp["ideal_s"]),
                f"{cp['ratio']:.2f}",
                len(cp["delayed"]),
                len(cp["unneeded_waits"]),
                minutes(b["Kueue objects"]),
                minutes(b["device plugin"]) if b["device plugin"] else "-",
                minutes(cp[f"parallel_{CAPPED_PARALLEL}_s"]),
                s["idle"]["total"],
            ]
        )
    out.append(
        table(
            [
                "stack",
                "critical min",
                "ideal min",
                "ratio",
                "delayed",
                "unneeded",
                "queues ready min",
                "GPU plugin min",
                f"--parallel {CAPPED_PARALLEL} min",
                "idle nodes",
            ],
            rows,
        )
    )
    dev = next(s for s in results["stacks"] if s["label"] == "dev")
    out.append("  dev critical chain: " + " -> ".join(dev["critical_path"]["chain"]))
    out.append(
        "  dev idle: system "
        + str(dev["idle"]["system"])
        + ", "
        + ", ".join(f"{k} {v}" for k, v in dev["idle"]["user"].items())
        + f" = {dev['idle']['total']} nodes"
    )

    if results.get("alias_experiment"):
        out.append(
            "\nExperiment: the same evaluation with pulumi-azure-native's type aliases stripped "
            "(the Pulumi SDK turns each alias into a URN at registration; ~110 per AgentPool)"
        )
        out.append(
            table(
                ["stack", "eval s", "without aliases s"],
                [
                    [r["label"], f"{r['with_aliases']['median']:.2f}", f"{r['without_aliases']['median']:.2f}"]
                    for r in results["alias_experiment"]
                ],
            )
        )

    out.append("\nTargets")
    out.append(
        table(
            ["target", "limit", "measured", "result"],
            [[t["target"], t["limit"], t["shown"], "PASS" if t["passed"] else "FAIL"] for t in results["targets"]],
        )
    )
    return "\n".join(out)


# --- main --------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    runs = args.runs or (3 if args.quick else 5)
    process_count = 1 if args.quick else 3
    crds_dir = (
        Path(os.environ[CRDS_ENV]) if os.environ.get(CRDS_ENV) else (DEFAULT_CRDS if DEFAULT_CRDS.is_dir() else None)
    )
    logging.getLogger().addHandler(logging.NullHandler())  # the mock engine logs warnings to the root logger

    from importlib.metadata import version

    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "pulumi": version("pulumi"),
            "pulumi-azure-native": version("pulumi-azure-native"),
            "pulumi-kubernetes": version("pulumi-kubernetes"),
            "loadavg_start": os.getloadavg()[0],
        },
        "runs": runs,
        "process_runs": process_count,
        "stacks": [],
    }
    all_stacks = stacks()
    with tempfile.TemporaryDirectory(prefix="kueue-aks-bench-") as tmp:
        root = Path(tmp) / "stacks"
        root.mkdir()
        cache_home = Path(tmp) / "cache"
        log("Kueue chart into the benchmark's cache")
        results["crds"] = chart_cache(cache_home)
        chart_crds = None
        if results["crds"]["archive"]:
            from components.kueue import crds as kueue_crds

            start = time.perf_counter()
            found = kueue_crds.kueue_crds(
                results["crds"]["source"], DEFAULT_VERSION, environ=bench_env(os.environ, cache_home, None)
            )
            results["crds"]["load_s"] = time.perf_counter() - start
            chart_crds = found.crds
        else:
            log(f"no CRDs: {results['crds']['missing']}")
        files = {s.name: write_stack(root, s.name, s.config) for s in all_stacks}
        with program_env(cache_home):
            for s in all_stacks:
                log(f"{s.label}: program under mocks")
                warm = quiet_program(s.config, s.name)  # warm-up, and the registrations analysed below
                stats, _ = timed(functools.partial(quiet_program, s.config, s.name), runs)
                log(f"{s.label}: {stats['median']:.2f} s; process and plan")
                entry = {
                    "label": s.label,
                    "name": s.name,
                    "teams": s.teams,
                    "pools": s.pools,
                    "eval": stats,
                    "graph": graph_figures(warm.registrations),
                    "critical_path": critical_figures(warm.registrations),
                    "idle": idle_nodes(warm.registrations),
                    "process": process_runs(files[s.name], s, process_count, cache_home),
                    "plan": plan_times(s, root, runs, cache_home),
                }
                results["stacks"].append(entry)

        crds = chart_crds
        if crds_dir is not None:
            from components.kueue.validate import load_crds

            start = time.perf_counter()
            dir_crds = load_crds(crds_dir)
            load_s = time.perf_counter() - start
            crds = crds or dir_crds  # the pure steps' CRD figures: the chart's, else these
            crd_rows = []
            with program_env(cache_home, crds_dir):
                for s in all_stacks:
                    if s.label not in ("dev", f"{LARGE_STACK[0]}x{LARGE_STACK[1]}"):
                        continue
                    log(f"{s.label}: with {CRDS_ENV}")
                    quiet_program(s.config, s.name)
                    stats, _ = timed(functools.partial(quiet_program, s.config, s.name), runs)
                    crd_rows.append(
                        {
                            "label": s.label,
                            "eval": stats,
                            "plan": plan_times(s, root, runs, cache_home, crds_dir),
                            "process": process_runs(files[s.name], s, process_count, cache_home, crds_dir),
                        }
                    )
            results["crds_dir"] = {"dir": str(crds_dir), "load_s": load_s, "stacks": crd_rows}

        log("pure steps")
        for entry, s in zip(results["stacks"], all_stacks):
            entry["phases"] = pure_phases(s.config, s.name, runs, crds)

        if args.alias_experiment:
            log("alias experiment")
            with program_env(cache_home):
                results["alias_experiment"] = alias_experiment(all_stacks, ("dev", "10x12", "200x12"), runs)

    log("scaling")
    by = {e["label"]: e for e in results["stacks"]}
    grid = [e for e in results["stacks"] if e["label"] != "dev"]
    pure_small = pure_phases(generated_config(STRESS_TEAMS[0], STRESS_POOLS), "stress", runs, None)
    pure_large = pure_phases(generated_config(STRESS_TEAMS[1], STRESS_POOLS), "stress", runs, None)
    ratio = STRESS_TEAMS[1] / STRESS_TEAMS[0]

    def growth(a: str, b: str) -> dict[str, float]:
        return {
            "time": by[b]["eval"]["median"] / by[a]["eval"]["median"],
            "size": by[b]["graph"]["input_bytes"] / by[a]["graph"]["input_bytes"],
            "resources": by[b]["graph"]["registrations"] / by[a]["graph"]["registrations"],
        }

    results["scaling"] = {
        "resources_fit": fit_counts([(e["teams"], e["pools"], e["graph"]["registrations"]) for e in grid]),
        "custom_fit": fit_counts([(e["teams"], e["pools"], e["graph"]["custom"]) for e in grid]),
        "time_ratios": {
            "teams 50 -> 200 at 12 pools": growth("50x12", "200x12"),
            "teams 50 -> 200 at 4 pools": growth("50x4", "200x4"),
            "pools 4 -> 12 at 200 teams": growth("200x4", "200x12"),
        },
        "marginal_ms": {
            "per team at 4 pools (50 -> 200)": (by["200x4"]["eval"]["median"] - by["50x4"]["eval"]["median"])
            / 150
            * 1000,
            "per team at 12 pools (50 -> 200)": (by["200x12"]["eval"]["median"] - by["50x12"]["eval"]["median"])
            / 150
            * 1000,
            "per pool at 10 teams (4 -> 12)": (by["10x12"]["eval"]["median"] - by["10x4"]["eval"]["median"]) / 8 * 1000,
            "per pool at 200 teams (4 -> 12)": (by["200x12"]["eval"]["median"] - by["200x4"]["eval"]["median"])
            / 8
            * 1000,
        },
        "time_vs_size_slope": loglog_slope(
            [e["graph"]["input_bytes"] for e in grid], [e["eval"]["median"] for e in grid]
        ),
        "pure_exponents": {
            k: exponent(pure_small[f"{k}_s"], pure_large[f"{k}_s"], ratio) for k in ("parse", "build", "validate")
        },
        "pure_at_max": {k: pure_large[f"{k}_s"] for k in ("parse", "build", "validate")},
        "pure_stress": {str(STRESS_TEAMS[0]): pure_small, str(STRESS_TEAMS[1]): pure_large},
    }
    results["machine"]["loadavg_end"] = os.getloadavg()[0]
    results["machine"]["bench_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["targets"] = check_targets(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per figure and one process run (default 5 and 3)")
    parser.add_argument("--runs", type=int, help="runs per in-process and plan figure (overrides --quick)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "results.json", help="JSON output file"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print progress to stderr")
    parser.add_argument(
        "--alias-experiment",
        action="store_true",
        help="also time dev, 10x12 and 200x12 with the provider SDKs' type aliases stripped (not a target)",
    )
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")

    log = (lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True)) if args.verbose else (lambda msg: None)
    started = time.perf_counter()
    results = measure(args, log)
    results["bench_seconds"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(report(results))
    print(f"\nWrote {args.out} ({results['bench_seconds']:.0f} s)")
    failed = [t["target"] for t in results["targets"] if not t["passed"]]
    if failed:
        print("\nMISSED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
