"""Intervals over seeds, and comparisons that say "ahead" only when the intervals do. Pure.

A figure of a set-up at one load is its mean over the seeds with a 95 % Student's t interval of
that mean (Student, "The probable error of a mean", Biometrika 6, 1908). Two set-ups are compared
paired by seed: both ran the same trace, so the per-seed difference takes the trace's own
variance out, and one set-up is ahead of the other only when the t interval of the mean
difference lies wholly on its side of 0.

Earlier reports used the percentile bootstrap, which with five seeds is too narrow: an A/A sweep
(the program against itself, `kueue-aks+again`) had five of its eleven comparisons "beyond the
noise" with it, two with t (docs/outcomes.md). A lane is a chaotic system: the same trace and
queues give a different run each time, and five seeds are few, so the t interval is the honest
width. One seed has no interval at all: it is unbounded, so it never puts one set-up ahead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95 % quantiles of Student's t by degrees of freedom (any statistics table); past 30
# the normal's 1.96 is within 4 %.
T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
NORMAL95 = 1.96


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def text(self, digits: int = 1) -> str:
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def t95(df: int) -> float:
    return T95[df - 1] if df <= len(T95) else NORMAL95


def interval(values: Sequence[float]) -> Interval:
    """The mean and its 95 % t interval."""
    if not values:
        raise ValueError("no values")
    n, mean = len(values), statistics.fmean(values)
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1)
    half = t95(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired(mine: Sequence[float], other: Sequence[float]) -> Interval:
    """The interval of the mean per-seed difference mine − other (same seeds, same order)."""
    if len(mine) != len(other):
        raise ValueError(f"paired by seed: {len(mine)} against {len(other)} values")
    return interval([a - b for a, b in zip(mine, other)])


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
