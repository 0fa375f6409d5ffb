"""The one comparison: a per-run quantity of a device against the baseline's.

At one batch size, S = mean(baseline) / mean(device) of any per-run
quantity (epoch time, time to target, energy per epoch), with Fieller's
95% interval:
- paired, when both devices ran in the same complete blocks on one
  machine: each device's run is paired with the baseline's run of the same
  block (the same seed), so that drift shared by a block cancels;
- unpaired otherwise.
A comparison that cannot be made (no baseline runs, a run that missed the
target, no energy counter) gives a ratio with no estimate and the reason.
Cost is the time ratio scaled by the constant price ratio.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from mnist_speedup.analysis import stats

#: the key that identifies a block at one batch size
BLOCK = "seed"


def paired_design(base: pd.DataFrame, runs: pd.DataFrame) -> bool:
    """Both devices ran in the same complete blocks: the same machine,
    the same seeds at this batch size, interleaved in one workflow."""
    if base.empty or len(base) < 2:
        return False
    same_machine = set(base.machine_key) == set(runs.machine_key) and base.machine_key.nunique() == 1
    same_origin = base.origin.nunique() == 1 and set(base.origin) == set(runs.origin)
    return same_machine and same_origin and sorted(base[BLOCK]) == sorted(runs[BLOCK])


def by_block(base: pd.DataFrame, runs: pd.DataFrame, column: str):
    """The two devices' values of ``column``, block by block."""
    pairs = base[[BLOCK, column]].merge(runs[[BLOCK, column]], on=BLOCK, suffixes=("_base", "_device"))
    pairs = pairs.sort_values(BLOCK)
    return pairs[f"{column}_base"].to_numpy(), pairs[f"{column}_device"].to_numpy()


def compare(
    base: pd.DataFrame,
    runs: pd.DataFrame,
    column: str,
    *,
    baseline_itself: bool = False,
    refuse: Callable[[pd.DataFrame, pd.DataFrame], str | None] | None = None,
    paired: bool | None = None,
    level: float = stats.CI_LEVEL,
) -> stats.Ratio:
    """mean(base[column]) / mean(runs[column]) with its 95% interval.

    ``refuse(base, runs)`` may name a reason why the two cannot be compared;
    the baseline compared with itself is exactly 1. ``paired``: None decides
    by the design (:func:`paired_design`); False for runs that were not in
    the same blocks (e.g. at different batch sizes). ``level``: the
    interval's confidence level (wider under replication's stopping rule)."""
    reason = refuse(base, runs) if refuse else None
    if reason is None and base.empty:
        reason = stats.NO_BASELINE
    if reason is not None:
        return stats.Ratio.none(reason)
    if baseline_itself:
        return stats.Ratio.identity()
    if paired is None:
        paired = paired_design(base, runs)
    if paired:
        r = stats.paired_fieller_ratio(*by_block(base, runs, column), level)
    else:
        r = stats.fieller_ratio(base[column].to_numpy(), runs[column].to_numpy(), level)
    return r


def cost(seconds: float, r: stats.Ratio, price: float | None, base_price: float | None, name: str) -> dict:
    """``name`` (the cost of ``seconds`` at ``price`` per hour) and the cost
    ratio (baseline cost / device cost): the time ratio's interval times the
    constant price ratio, not re-derived. NaN where a price is missing."""
    if price is None or base_price is None:
        return {name: math.nan, "cost_ratio": math.nan, "cost_ratio_ci_low": math.nan, "cost_ratio_ci_high": math.nan}
    c = r.scaled(base_price / price)
    return {
        name: seconds / 3600 * price,
        "cost_ratio": c.estimate,
        "cost_ratio_ci_low": c.low,
        "cost_ratio_ci_high": c.high,
    }


def columns(prefix: str, r: stats.Ratio) -> dict:
    """A ratio as table columns: estimate, interval, method (at its level) and reason."""
    return {
        prefix: r.estimate,
        f"{prefix}_ci_low": r.low,
        f"{prefix}_ci_high": r.high,
        f"{prefix}_ci_method": r.method_words,
        f"{prefix}_ci_note": r.reason,
    }
