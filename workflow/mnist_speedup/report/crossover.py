"""Where a device overtakes the baseline as the work per step grows, in words: the sizes (by FLOPs per
step) where the device's interval in the speedup table lies wholly above 1 (faster than the baseline),
wholly below 1 (slower), or holds 1 (cannot be told apart), as one sentence that names the smallest size
from which it is faster and the largest up to which it is slower. It reads the aggregation's intervals
and computes none."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.spec.workloads import flop_words

ABOVE, BELOW, APART, UNKNOWN = "+", "-", "0", "?"


def side(low: float, high: float) -> str:
    """Where a 95% interval lies against 1."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNKNOWN
    return ABOVE if low > 1 else BELOW if high < 1 else APART


def _segments(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Consecutive sizes (by FLOPs per step) whose intervals lie on one side."""
    sides = [side(lo, hi) for lo, hi in zip(rows.speedup_ci_low, rows.speedup_ci_high)]
    out, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or sides[i] != sides[start]:
            out.append((sides[start], rows.iloc[start:i]))
            start = i
    return out


def _span(seg: pd.DataFrame, first: bool, last: bool) -> str:
    lo, hi = flop_words(seg.flops_per_step.iloc[0]), flop_words(seg.flops_per_step.iloc[-1])
    if first and last:
        return f"at all {len(seg)} sizes, {lo} to {hi} per step"
    if last:
        return f"from {lo} per step up"
    if first:
        return f"up to {hi} per step"
    return f"at {lo} per step" if lo == hi else f"from {lo} to {hi} per step"


def _range(seg: pd.DataFrame) -> str:
    lo, hi = seg.speedup.min(), seg.speedup.max()
    return f"{lo:.2f}×" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}×-{hi:.2f}×"


def crossover(rows: pd.DataFrame, who: str, base: str) -> str:
    """One device's sentence over the sizes in ``rows`` (its speedup rows
    at one batch size, any order)."""
    rows = rows.sort_values("flops_per_step")
    segments = _segments(rows)
    if len(segments) == 1 and segments[0][0] in (APART, UNKNOWN):
        lo, hi = flop_words(rows.flops_per_step.iloc[0]), flop_words(rows.flops_per_step.iloc[-1])
        why = "cannot be told apart" if segments[0][0] == APART else "have no interval"
        return f"{who} and {base} {why} at any of these sizes ({lo} to {hi} per step)."
    parts = []
    for i, (kind, seg) in enumerate(segments):
        span = _span(seg, i == 0, i == len(segments) - 1)
        if kind == ABOVE:
            parts.append(f"{who} is faster than {base} {span} ({_range(seg)})")
        elif kind == BELOW:
            parts.append(f"{who} is slower than {base} {span} ({_range(seg)})")
        else:
            verb = "cannot be told apart" if kind == APART else "have no interval"
            parts.append(f"{span} they {verb}" if parts else f"{who} and {base} {verb} {span}")
    return "; ".join(parts) + "."
