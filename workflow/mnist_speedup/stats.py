"""Statistics of a speedup: a ratio of two means, with its uncertainty.

The speedup of a device over the baseline is S = mean(T_baseline) /
mean(T_device), where T are steady-state epoch times of independent runs
(one per seed). Its 95% confidence interval comes from Fieller's theorem
for a ratio of independent means with unequal variances, with the degrees
of freedom of the Welch-Satterthwaite approximation for the linear form
T_baseline - S T_device. Per-seed ratios are never averaged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

CI_METHOD = "Fieller 95% CI for a ratio of independent means (Welch-Satterthwaite df)"
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Ratio:
    estimate: float
    low: float
    high: float
    df: float

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


def mean_ci(values, level: float = CI_LEVEL) -> tuple[float, float]:
    """Student-t interval for a mean; (nan, nan) with fewer than 2 values."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    half = sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return (x.mean() - half, x.mean() + half)


def fieller_ratio(numerator, denominator, level: float = CI_LEVEL) -> Ratio:
    """Ratio mean(numerator)/mean(denominator) with Fieller's interval.

    The interval is (nan, nan) when either sample has fewer than 2 values,
    and (low, inf) or (nan, nan) when the denominator mean is not
    significantly different from zero (Fieller's unbounded case).
    """
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    ma, mb = a.mean(), b.mean()
    s = ma / mb
    if len(a) < 2 or len(b) < 2:
        return Ratio(s, math.nan, math.nan, math.nan)
    va = a.var(ddof=1) / len(a)
    vb = b.var(ddof=1) / len(b)
    denom_df = va**2 / (len(a) - 1) + (s**2 * vb) ** 2 / (len(b) - 1)
    if denom_df == 0:  # no spread at all: the ratio is exact
        return Ratio(s, s, s, math.inf)
    df = (va + s**2 * vb) ** 2 / denom_df
    t = sps.t.ppf(0.5 + level / 2, df)
    qa = mb**2 - t**2 * vb
    disc = ma**2 * vb + mb**2 * va - t**2 * va * vb
    if qa <= 0 or disc < 0:
        return Ratio(s, math.nan, math.nan, df)
    root = t * math.sqrt(disc)
    return Ratio(s, (ma * mb - root) / qa, (ma * mb + root) / qa, df)


def cv(values) -> float:
    """Coefficient of variation (sample std / mean); nan for < 2 values."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan
    return float(x.std(ddof=1) / x.mean())


def seeds_needed(
    cv_baseline: float, cv_device: float, rel_halfwidth: float = 0.05, level: float = CI_LEVEL, max_n: int = 10_000
) -> float:
    """Runs per device (equal on both sides) for the speedup's interval to
    reach +/- ``rel_halfwidth`` of its value.

    By the delta method the relative standard error of S is
    sqrt((cv_b^2 + cv_d^2) / n); we want t(0.975, 2n - 2) times that to be at
    most ``rel_halfwidth``. Returns nan if a CV is unknown (fewer than 2 runs).
    """
    if not (math.isfinite(cv_baseline) and math.isfinite(cv_device)):
        return math.nan
    spread = cv_baseline**2 + cv_device**2
    for n in range(2, max_n + 1):
        t = sps.t.ppf(0.5 + level / 2, 2 * n - 2)
        if t * math.sqrt(spread / n) <= rel_halfwidth:
            return n
    return math.inf
