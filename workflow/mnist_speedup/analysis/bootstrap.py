"""A second interval for the speedup that does not lean on normal errors: the BCa bootstrap.

Fieller's interval (analysis/stats.py) assumes normal errors; skewed timings
(a slow outlier run) can mislead it. As Chromium's perf tooling does for a
ratio of timings, this resamples and corrects for bias and skew (BCa:
bias-corrected and accelerated, scipy.stats.bootstrap). Where the two
devices ran in the same blocks, blocks are resampled whole, so the pairing
that cancels shared drift is kept; otherwise each device's runs are
resampled on their own. Its coverage is poor with few blocks (docs/method.md:
simulated, nominal 95% reached about 0.76 at 3 blocks and 0.89 at 10), so it
is given from :data:`MIN_BLOCKS` up, with the reason below that; it is a
second opinion, and Fieller's stays the headline's interval.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from mnist_speedup.analysis import compare
from mnist_speedup.words import CI_LEVEL

#: below this many blocks (or runs a device) the bootstrap's coverage is too poor to show it
MIN_BLOCKS = 10
#: resamples per interval, from a fixed seed: the same records always give the same interval
RESAMPLES = 4000
SEED = 20261207
TOO_FEW = f"too few blocks for a bootstrap (it needs {MIN_BLOCKS})"
#: the two intervals disagree where an end differs by more than this share of the estimate
DISAGREE = 0.10


def _ratio(base, device, axis=-1):
    return np.mean(base, axis=axis) / np.mean(device, axis=axis)


def interval(base: pd.DataFrame, runs: pd.DataFrame, column: str, level: float = CI_LEVEL):
    """(low, high, note) of mean(base[column]) / mean(runs[column]) by BCa; NaNs and the reason where
    there is none."""
    paired = compare.paired_design(base, runs)
    if paired:
        b, d = compare.by_block(base, runs, column)
    else:
        b, d = base[column].to_numpy(float), runs[column].to_numpy(float)
    if min(len(b), len(d)) < MIN_BLOCKS:
        return math.nan, math.nan, TOO_FEW
    if np.ptp(b) == 0 and np.ptp(d) == 0:
        return math.nan, math.nan, "no spread: every run took the same time, and resampling cannot show any"
    found = sps.bootstrap(
        (b, d),
        _ratio,
        paired=paired,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=level,
        method="BCa",
        rng=np.random.default_rng(SEED),
    )
    low, high = found.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan, math.nan, "the bootstrap gave no bounded interval"
    return float(low), float(high), None


def disagree(estimate: float, fieller: tuple[float, float], bootstrap: tuple[float, float]) -> bool:
    """Whether an end of the two intervals differs by more than :data:`DISAGREE` of the estimate."""
    if not all(math.isfinite(v) for v in (estimate, *fieller, *bootstrap)):
        return False
    return max(abs(fieller[0] - bootstrap[0]), abs(fieller[1] - bootstrap[1])) > DISAGREE * estimate
