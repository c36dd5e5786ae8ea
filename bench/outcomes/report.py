"""The benchmark's table (Markdown, as README shows it), its JSON samples and its one picture."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import Outcome, Sample


def _num(value: float | None, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:g}{unit}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def row_text(o: Outcome) -> str:
    return (
        f"{o.setup}: GPU {o.gpu_utilization:.0%}, CPU {o.cpu_utilization:.0%}, makespan "
        f"{_num(o.makespan_s, ' s')} (bound {o.lower_bound_s} s, {o.unfinished} unfinished), fairness "
        f"{_num(o.fairness)}, unschedulable {o.unschedulable_pod_seconds} pod-s, partial gangs {o.partial_gangs}, "
        f"preemptions {o.preemptions} {dict(o.preemption_causes)}, admission to running p50/p95 {o.start_latency_s} s"
    )


def table(outcomes: Sequence[Outcome], throughput: Mapping[str, Any] | None) -> str:
    teams = sorted({t for o in outcomes for t in o.delay_s})
    head = [
        "set-up",
        "GPU util",
        "CPU util",
        "makespan (s) / bound",
        "unfinished",
        "fairness (Jain)",
        *(f"{t}: wait p50/p95 (s), share kept" for t in teams),
        "admitted but unschedulable (pod-s)",
        "partial gangs",
        "preemptions",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in outcomes:
        cells = [
            o.setup,
            _pct(o.gpu_utilization),
            _pct(o.cpu_utilization),
            f"{_num(o.makespan_s)} / {o.lower_bound_s}",
            str(o.unfinished),
            _num(o.fairness),
        ]
        for t in teams:
            p50, p95 = o.delay_s.get(t, (None, None))
            cells.append(f"{_num(p50)} / {_num(p95)}, {_pct(o.share_kept.get(t))}")
        cells += [_num(o.unschedulable_pod_seconds), str(o.partial_gangs), str(o.preemptions)]
        lines.append("| " + " | ".join(cells) + " |")
    if throughput:
        lines += [
            "",
            "| admission throughput | ClusterQueues | workloads (not admitted) | admitted/s | "
            "time to admission p50 / p95 (s) |",
            "|---|---|---|---|---|",
        ]
        for shape in throughput["shapes"]:
            lines.append(
                f"| {shape['name']} | {shape['queues']} | {shape['workloads']} ({shape['not_admitted']}) | "
                f"{shape['admitted_per_second']} | {shape['time_to_admission_p50_s']} / "
                f"{shape['time_to_admission_p95_s']} |"
            )
    return "\n".join(lines)


def sample_json(s: Sample) -> dict[str, Any]:
    return {
        "t": round(s.t, 2),
        "used": s.used,
        "waiting": {k: [list(w) for w in v] for k, v in s.waiting.items()},
        "unschedulable_pods": s.unschedulable_pods,
        "partial_gangs": sorted(s.partial_gangs),
        "idle_held": dict(s.idle_held),
    }


def picture(outcomes: Sequence[Outcome], path: Path) -> None:
    """GPU utilization over time per set-up (left) and each team's p50/p95 wait per set-up (right)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    for o in outcomes:
        left.step([p[0] for p in o.timeline], [p[1] for p in o.timeline], where="post", label=o.setup, linewidth=1.4)
    left.set(
        title="GPU utilization over time (whole gangs only)",
        xlabel="seconds since the first job",
        ylabel="GPUs working ÷ GPUs",
        ylim=(0, 1.05),
    )
    left.legend(loc="lower right", fontsize=8)
    teams = sorted({t for o in outcomes for t in o.delay_s})
    width = 0.8 / max(1, len(outcomes))
    for i, o in enumerate(outcomes):
        xs = [j + i * width for j in range(len(teams))]
        p50 = [o.delay_s.get(t, (0.0, 0.0))[0] for t in teams]
        p95 = [o.delay_s.get(t, (0.0, 0.0))[1] for t in teams]
        right.bar(xs, p95, width, alpha=0.35, color=f"C{i}")
        right.bar(xs, p50, width, color=f"C{i}", label=o.setup)
    right.set_xticks([j + width * (len(outcomes) - 1) / 2 for j in range(len(teams))], teams)
    right.set(title="queueing delay per team (solid p50, pale p95)", ylabel="seconds")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
