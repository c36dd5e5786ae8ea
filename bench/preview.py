"""The program's own time, as `pulumi preview` starts it, against the Pulumi SDK's import floor.

    python -m bench.preview            # 5 fresh processes per figure, about two minutes on 2 cores
    python -m bench.preview --runs 3

Each figure is a fresh Python process, as the language host starts one per preview. The floor
imports the Pulumi SDK's modules that the dev stack's run loads (pulumi, and the resource modules
of pulumi_kubernetes and pulumi_azure_native it uses), and nothing else: what any program that
registers these resources pays before its first resource. Every stack runs the whole program
under Pulumi's mocks (bench/worker.py). Stacks:
the dev stack as committed, the same with `frameworks: [batch/job]` (no job operators), and the
generated 20 teams x 6 pools and 100 teams x 12 pools. Printed: median and spread of each, its ratio
to the floor, and the cost per registered resource above the floor. The chart cache is the
benchmark's own (bench/run.py's chart_cache), so the Kueue CRDs are read as a user's second run reads them.

What the mocks do not show: under the real engine the CLI also marshals, diffs and logs every
property of every resource (docs/performance.md, "Under the real engine"). Exit code 1 when a
target of issue 42 is missed, naming it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.run import chart_cache, run_process, subprocess_env
from testbed.stacks import generated_config, stack_file_config, write_stack

DEV_RATIO_TARGET = 2.0  # the dev stack within 2x the floor
LARGE = (100, 12)
LARGE_TARGET_S = 15.0
# "Linear": the per-resource cost of 100 x 12 within this factor of 20 x 6's.
LINEAR_FACTOR = 1.5


def stacks() -> dict[str, dict[str, Any]]:
    dev = stack_file_config("dev")
    kueue = {**(dev.get("kueue-aks:kueue") or {}), "frameworks": ["batch/job"]}
    return {
        "dev": dev,
        "dev-no-operators": {**dev, "kueue-aks:kueue": kueue},
        "20x6": generated_config(20, 6),
        f"{LARGE[0]}x{LARGE[1]}": generated_config(*LARGE),
    }


def spread(samples: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def figures(floor: Sequence[float], runs: Mapping[str, tuple[Sequence[float], int]]) -> dict[str, Any]:
    """Each stack's seconds (median, spread), ratio to the floor's median and milliseconds per
    registered resource above the floor. `runs`: label -> (seconds of each process, registrations)."""
    base = statistics.median(floor)
    out: dict[str, Any] = {"floor": {**spread(floor), "ratio": 1.0}}
    for label, (samples, registrations) in runs.items():
        median = statistics.median(samples)
        out[label] = {
            **spread(samples),
            "ratio": median / base,
            "registrations": registrations,
            "ms_per_resource": (median - base) / registrations * 1000 if registrations else 0.0,
        }
    return out


def missed(table: Mapping[str, Any]) -> list[str]:
    large = f"{LARGE[0]}x{LARGE[1]}"
    problems = []
    if table["dev"]["ratio"] > DEV_RATIO_TARGET:
        problems.append(f"dev stack at {table['dev']['ratio']:.1f}x the floor (target {DEV_RATIO_TARGET:.0f}x)")
    if table[large]["median"] > LARGE_TARGET_S:
        problems.append(f"{large} at {table[large]['median']:.1f} s (target {LARGE_TARGET_S:.0f} s)")
    if table[large]["ms_per_resource"] > LINEAR_FACTOR * table["20x6"]["ms_per_resource"]:
        problems.append(
            f"{large} costs {table[large]['ms_per_resource']:.1f} ms per resource, over "
            f"{LINEAR_FACTOR}x 20x6's {table['20x6']['ms_per_resource']:.1f} ms (not linear)"
        )
    return problems


def report(table: Mapping[str, Any]) -> str:
    lines = [
        "| run | median s | min-max s | x floor | resources | ms per resource above the floor |",
        "|---|---|---|---|---|---|",
    ]
    for label, row in table.items():
        lines.append(
            f"| {label} | {row['median']:.2f} | {row['min']:.2f}-{row['max']:.2f} | {row['ratio']:.1f} | "
            f"{row.get('registrations', 0)} | {row.get('ms_per_resource', 0.0):.1f} |"
        )
    return "\n".join(lines) + "\n"


def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kueue-aks-preview-bench-") as tmp:
        cache_home = Path(tmp) / "cache"
        crds = chart_cache(cache_home)
        env = subprocess_env(cache_home, None)
        measured: dict[str, tuple[list[float], int]] = {}
        modules: list[str] = []
        for label, config in stacks().items():
            name = f"bench-{label}"
            stack_file = write_stack(Path(tmp), name, config)
            samples, registrations = [], 0
            for _ in range(runs):
                wall, out = run_process(["-m", "bench.worker", str(stack_file), name], env)
                samples.append(wall)
                figures_of_run = json.loads(out.strip().splitlines()[-1])
                registrations = figures_of_run["registrations"]
                modules = modules or figures_of_run["sdk_modules"]  # the dev stack's, the first
            measured[label] = (samples, registrations)
            print(f"{label}: {statistics.median(samples):.2f} s", file=sys.stderr)
        imports = "import " + ", ".join(modules)
        floor = [run_process(["-c", imports], env)[0] for _ in range(runs)]
    return {
        "crds": crds.get("archive") or crds.get("missing"),
        "floor_modules": len(modules),
        "table": figures(floor, measured),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.preview", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per figure (default 5)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    results = measure(args.runs)
    print(report(results["table"]))
    print(f"Floor: {results['floor_modules']} modules of the Pulumi SDKs. Kueue CRDs: {results['crds']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    problems = missed(results["table"])
    for problem in problems:
        print(f"target missed: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
