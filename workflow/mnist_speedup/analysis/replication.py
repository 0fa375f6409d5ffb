"""Replication: add blocks until every speedup's interval is tight enough.

With ``replication: {ci_half_width: h, max_seeds: m}`` the listed seeds run
first; then, round by round, while the widest 95% interval of any speedup
(every workload, batch size and device) has a half-width above h times its
estimate and fewer than m seeds have run, one more complete block per
workload and batch size is added with the next seed (max(seeds) + 1, ...).

Each round's measurement (:func:`measure`, written by a checkpoint job) is
the widest interval at that round's seeds, and nothing else: it does not
depend on h or m, so a looser target reruns nothing, and the decision
(:func:`decide`) is made when the workflow is planned. Rounds whose runs
exist already are always kept (a looser target never drops records; a
tighter one adds rounds after them).

Stopping on the data biases an interval: the rule stops when the blocks
happen to agree, so the variance is underestimated just then. Simulated
under drift shared within blocks (tests/test_replication.py), the plain 95%
interval covered the truth in only 90.7-94% of experiments where the rule
had to decide (the worst when it stops anywhere from 5 to 12 seeds). So with
replication every speedup interval, the one the rule decides on and the one
reported, is Fieller's at the :data:`INTERVAL_LEVEL` (97%) level: under the
rule it covers the truth in 94.4-96.3% of experiments, a 95% interval in
effect. The report names the level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from mnist_speedup.words import percent

#: the level of every speedup interval under replication (decided on and reported)
INTERVAL_LEVEL = 0.97


def seeds_of_round(listed: list[int], round_: int) -> list[int]:
    """The seeds through round ``round_``: the listed ones, then the next ``round_``."""
    top = max(listed)
    return sorted(listed) + list(range(top + 1, top + 1 + round_))


def relative_half_width(low: float, high: float, estimate: float) -> float:
    """Half the interval's width over the estimate (inf: no interval; a
    measurement file writes it as null)."""
    if not all(math.isfinite(v) for v in (low, high, estimate)) or estimate <= 0:
        return math.inf
    return (high - low) / 2 / estimate


def widest(speedup: pd.DataFrame, baseline: str) -> dict:
    """The speedup row with the widest relative interval (the baseline,
    exactly 1, never counts)."""
    others = speedup[speedup.device != baseline]
    if others.empty:
        return {"half_width": 0.0, "device": None, "workload": None, "batch_size": None}
    widths = [
        relative_half_width(lo, hi, s)
        for lo, hi, s in zip(others.speedup_ci_low, others.speedup_ci_high, others.speedup)
    ]
    i = max(range(len(widths)), key=lambda k: widths[k])
    row = others.iloc[i]
    return {
        "half_width": widths[i] if math.isfinite(widths[i]) else None,
        "device": row.device,
        "workload": row.workload,
        "batch_size": int(row.batch_size),
    }


@dataclass(frozen=True)
class Decision:
    """Where replication stands after the rounds measured so far."""

    rounds: int  # rounds whose runs are used (0: the listed seeds only)
    seeds: list[int]
    stopped: bool  # True: no further round is wanted
    reason: str


def _where(w: dict) -> str:
    return f"{w['device']} at batch size {w['batch_size']} on workload {w['workload']}"


def _half(w: dict) -> float:
    return math.inf if w["half_width"] is None else w["half_width"]


def _pct(x: float | None) -> str:
    return "no interval" if x is None or not math.isfinite(x) else f"±{x:.1%}".replace(".0%", "%")


def _still(w: dict) -> str:
    return f"is still {_pct(w['half_width'])}" if math.isfinite(_half(w)) else "still has no bounded interval"


def reason(measured: dict, target: float, max_seeds: int) -> str:
    """Why replication stopped (or goes on), in words."""
    n, w = len(measured["seeds"]), measured["widest"]
    if _half(w) <= target:
        return f"every interval within ±{percent(target)} at {n} seeds (widest {_pct(w['half_width'])}: {_where(w)})"
    if n > max_seeds:  # max_seeds lowered after more seeds had run: every recorded seed is used
        return (
            f"{n} seeds were already recorded, more than max_seeds {max_seeds} (lowered after they ran), and "
            f"all {n} are used: {_where(w)} {_still(w)}"
        )
    if n == max_seeds:
        return f"stopped at max_seeds {max_seeds}: {_where(w)} {_still(w)}"
    return f"after {n} seeds the widest interval is {_pct(w['half_width'])} ({_where(w)}); adding seed {n + 1}"


def progress(measured: dict) -> str:
    """The console's line for a measured round: the widest interval so far."""
    w = measured["widest"]
    return f"{len(measured['seeds'])} seeds, widest interval {_pct(w['half_width'])} ({_where(w)})"


def wants_more(measured: dict, target: float, max_seeds: int) -> bool:
    return _half(measured["widest"]) > target and len(measured["seeds"]) < max_seeds


def decide(listed: list[int], target: float, max_seeds: int, measurement, exists) -> Decision:
    """Walk the rounds: ``measurement(r)`` is round r's measurement (None:
    not measured yet; the decision then stops there, pending, so that round
    is run and measured first), ``exists(seeds)`` whether every run of those
    seeds is already recorded."""
    r = 0
    while True:
        measured = measurement(r)
        if measured is None:
            return Decision(r, seeds_of_round(listed, r), False, f"round {r} is not measured yet")
        more = wants_more(measured, target, max_seeds)
        if not more and not exists(seeds_of_round(listed, r + 1)):
            return Decision(r, seeds_of_round(listed, r), True, reason(measured, target, max_seeds))
        r += 1


def measure(speedup: pd.DataFrame, baseline: str, seeds: list[int], round_: int) -> dict:
    """A round's measurement: its seeds and its widest interval."""
    return {"round": round_, "seeds": list(seeds), "widest": widest(speedup, baseline), "level": INTERVAL_LEVEL}
