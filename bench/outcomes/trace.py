"""The benchmark's trace is the forecast's: components/forecast/trace.py holds the one synthetic
generator (Philly's GPUs per job and run times, Poisson arrivals at an offered load) and the job
types; the benchmark's modules and tests read them through this name.
"""

from __future__ import annotations

from components.forecast.trace import (
    PHILLY_GPU_SPLIT,
    PHILLY_MEDIAN_S,
    PHILLY_P90_S,
    Pod,
    TeamLoad,
    TraceJob,
    TraceSpec,
    at_load,
    cap_s,
    describe,
    generate,
    gpus_for,
    mean_duration_s,
    mean_gpus,
    offered_load,
    philly_duration_s,
)

__all__ = [
    "PHILLY_GPU_SPLIT",
    "PHILLY_MEDIAN_S",
    "PHILLY_P90_S",
    "Pod",
    "TeamLoad",
    "TraceJob",
    "TraceSpec",
    "at_load",
    "cap_s",
    "describe",
    "generate",
    "gpus_for",
    "mean_duration_s",
    "mean_gpus",
    "offered_load",
    "philly_duration_s",
]
