"""Statistics of a speedup: a ratio of two means, with its uncertainty.

The speedup of a device over the baseline is S = mean(T_baseline) /
mean(T_device), where T are steady-state epoch times of runs (one per
seed). Its 95% confidence interval comes from Fieller's theorem:
- paired, when both devices ran in the same blocks (one block = one batch
  size and seed, every device once, interleaved): the covariance of the
  two times across blocks enters, with n - 1 degrees of freedom, so that
  drift shared by a block cancels;
- otherwise for independent means with unequal variances, with the
  Welch-Satterthwaite degrees of freedom for T_baseline - S T_device.
Per-seed ratios are never averaged. An interval that is unbounded or would
reach 0 or below is reported as unbounded (no interval), with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mnist_speedup.words import CI_LEVEL, ci_name, percent


def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile. SciPy is imported here, not at the top: the workflow's every parse reads
    this module's names (ci_name), and SciPy's import costs about 1.4 s of each."""
    from scipy import stats

    return stats.t.ppf(q, df)


#: the methods, their level filled in from the Ratio (``Ratio.method_words``)
CI_METHOD = "Fieller {level} CI for a ratio of independent means (Welch-Satterthwaite df)"
PAIRED_METHOD = "Fieller {level} CI for a ratio of paired means (blocks; n - 1 df)"
#: how a method reads when its interval was computed at another level than CI_LEVEL
WIDENED = " (widened for replication's stopping rule)"

FEW_RUNS = "needs ≥ 2 runs per device"
UNBOUNDED = "unbounded: too noisy for an interval at this n"
NO_BASELINE = "baseline has no runs at this batch size"
#: both devices' runs took exactly the same time each: no spread to size an interval with
NO_SPREAD = (
    "no spread in either device's runs (their differences are below the clock's resolution), so no "
    "interval: two identical times do not make a certain ratio; add seeds"
)


@dataclass(frozen=True)
class Ratio:
    estimate: float
    low: float
    high: float
    df: float
    method: str = CI_METHOD
    reason: str | None = None  # why there is no interval
    level: float = CI_LEVEL  # the interval's confidence level

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def ci_name(self) -> str:
        """``95% CI``, ``97% CI``: derived from the level, never parsed from text."""
        return ci_name(self.level)

    @property
    def method_words(self) -> str:
        """The method in words, at this ratio's level (and named as widened off CI_LEVEL)."""
        return self.method.format(level=percent(self.level)) + (WIDENED if self.level != CI_LEVEL else "")

    @classmethod
    def none(cls, reason: str) -> Ratio:
        """No ratio at all, with the reason."""
        return cls(math.nan, math.nan, math.nan, math.nan, CI_METHOD, reason)

    @classmethod
    def identity(cls) -> Ratio:
        """The baseline against itself: exactly 1."""
        return cls(1.0, 1.0, 1.0, math.inf, "the baseline itself")

    def scaled(self, factor: float) -> Ratio:
        """The same ratio times a constant (e.g. a price ratio): the
        interval scales with it, nothing is re-derived."""
        return Ratio(
            self.estimate * factor, self.low * factor, self.high * factor, self.df, self.method, self.reason, self.level
        )


def _roots(a_coef: float, b_coef: float, c_coef: float, s: float, df: float, method: str, level: float):
    """Fieller's interval from the quadratic a R^2 - 2 b R + c = 0; no
    interval where it is unbounded or reaches 0 or below."""
    disc = b_coef**2 - a_coef * c_coef
    if a_coef <= 0 or disc < 0:
        return Ratio(s, math.nan, math.nan, df, method, UNBOUNDED, level)
    root = math.sqrt(disc)
    low, high = (b_coef - root) / a_coef, (b_coef + root) / a_coef
    if low <= 0:
        return Ratio(s, math.nan, math.nan, df, method, UNBOUNDED, level)
    return Ratio(s, low, high, df, method, level=level)


def mean_ci(values, level: float = CI_LEVEL) -> tuple[float, float]:
    """Student-t interval for a mean; (nan, nan) with fewer than 2 values."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    half = _t_quantile(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return (x.mean() - half, x.mean() + half)


def fieller_ratio(numerator, denominator, level: float = CI_LEVEL) -> Ratio:
    """Ratio mean(numerator)/mean(denominator) with Fieller's interval.

    The interval is (nan, nan), with the reason, when either sample has
    fewer than 2 values or the interval is unbounded (the denominator mean
    is not clearly above zero) or would reach zero.
    """
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    ma, mb = a.mean(), b.mean()
    s = ma / mb
    if len(a) < 2 or len(b) < 2:
        return Ratio(s, math.nan, math.nan, math.nan, CI_METHOD, FEW_RUNS, level)
    va = a.var(ddof=1) / len(a)
    vb = b.var(ddof=1) / len(b)
    denom_df = va**2 / (len(a) - 1) + (s**2 * vb) ** 2 / (len(b) - 1)
    if denom_df == 0:  # no spread at all: nothing to size an interval with, never a zero-width one
        return Ratio(s, math.nan, math.nan, math.nan, CI_METHOD, NO_SPREAD, level)
    df = (va + s**2 * vb) ** 2 / denom_df
    t2 = _t_quantile(0.5 + level / 2, df) ** 2
    return _roots(mb**2 - t2 * vb, ma * mb, ma**2 - t2 * va, s, df, CI_METHOD, level)


def paired_fieller_ratio(numerator, denominator, level: float = CI_LEVEL) -> Ratio:
    """Ratio mean(numerator)/mean(denominator) for paired samples (one
    pair per block) with Fieller's interval: the variance of
    mean(a - R b) is (s_aa - 2 R s_ab + R^2 s_bb) / n, with n - 1 df."""
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    if len(a) != len(b):
        raise ValueError("paired samples need one value of each per block")
    n = len(a)
    ma, mb = a.mean(), b.mean()
    s = ma / mb
    if n < 2:
        return Ratio(s, math.nan, math.nan, math.nan, PAIRED_METHOD, FEW_RUNS, level)
    cov = np.cov(a, b, ddof=1)
    saa, sbb, sab = cov[0, 0], cov[1, 1], cov[0, 1]
    if saa == 0 and sbb == 0:
        return Ratio(s, math.nan, math.nan, math.nan, PAIRED_METHOD, NO_SPREAD, level)
    t2 = _t_quantile(0.5 + level / 2, n - 1) ** 2
    return _roots(mb**2 - t2 * sbb / n, ma * mb - t2 * sab / n, ma**2 - t2 * saa / n, s, n - 1, PAIRED_METHOD, level)


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
        t = _t_quantile(0.5 + level / 2, 2 * n - 2)
        if t * math.sqrt(spread / n) <= rel_halfwidth:
            return n
    return math.inf
