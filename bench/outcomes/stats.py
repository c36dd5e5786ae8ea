"""Intervals over seeds, and comparisons that say "ahead" only when the intervals do. Pure.

A figure of a set-up at one load is its mean over the seeds with a 95 % percentile-bootstrap
interval of that mean (Efron and Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13).
Two set-ups are compared paired by seed: both ran the same trace, so the per-seed difference
takes the trace's own variance out, and one set-up is ahead of the other only when the interval
of the mean difference lies wholly on its side of 0 (outcomes-review.md §3.2). With five seeds
the interval is wide; it says so rather than a single run's number. The resampling is seeded, so
a report is reproducible from its samples.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def text(self, digits: int = 1) -> str:
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def interval(values: Sequence[float], resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
             seed: int = 0) -> Interval:
    """The mean and its percentile-bootstrap interval."""
    if not values:
        raise ValueError("no values")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = means[int(tail * (resamples - 1))]
    high = means[int(round((1 - tail) * (resamples - 1)))]
    return Interval(statistics.fmean(values), low, high, n)


def paired(mine: Sequence[float], other: Sequence[float], **kwargs: float) -> Interval:
    """The interval of the mean per-seed difference mine − other (same seeds, same order)."""
    if len(mine) != len(other):
        raise ValueError(f"paired by seed: {len(mine)} against {len(other)} values")
    return interval([a - b for a, b in zip(mine, other)], **kwargs)  # type: ignore[arg-type]


def ahead(mine: Sequence[float], other: Sequence[float], lower_is_better: bool = True) -> bool:
    """Whether `mine` is ahead of `other` beyond the noise: the paired interval excludes 0 on
    mine's side."""
    diff = paired(mine, other)
    return diff.high < 0 if lower_is_better else diff.low > 0


def not_behind(mine: Sequence[float], other: Sequence[float], lower_is_better: bool = True) -> bool:
    """Whether `mine` is within `other`'s reach or better: the paired interval does not lie wholly
    on other's side of 0."""
    diff = paired(mine, other)
    return diff.low <= 0 if lower_is_better else diff.high >= 0
