"""The headline's choice, made once in the analysis: per workload, the setting with the largest speedup
among those that trained as well as the baseline, and the same device at the article's batch size where
that differs; each with its verdict (what the sentence may say) and the numbers its words quote."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.spec.workloads import ARTICLE_BATCH_SIZE

#: the speedup table's columns a headline sentence quotes
QUOTED = (
    "device",
    "batch_size",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "speedup_ci_note",
    "ci_level",
    "n",
    "baseline_n",
    "parity",
    "parity_reason",
)
COLUMNS = ["workload", "role", "settings", "verdict", *QUOTED]


def verdict(r) -> str:
    """What a sentence about speedup row ``r`` may say: ``parity_fail`` (no training speedup is quoted),
    ``no_interval``, ``indistinct`` (the interval holds 1), ``faster`` or ``slower``."""
    if r.get("parity") == "FAIL":
        return "parity_fail"
    low, high = r.speedup_ci_low, r.speedup_ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no_interval"
    if low <= 1 <= high:
        return "indistinct"
    return "faster" if r.speedup > 1 else "slower"


def _best(rows: pd.DataFrame) -> pd.Series:
    """The cell with the largest speedup among those that trained as well as the baseline."""
    fair = rows[rows.get("parity", pd.Series("", rows.index)).fillna("") != "FAIL"]
    pool = fair if not fair.empty else rows
    return pool.loc[pool.speedup.fillna(-math.inf).idxmax()]


def _row(workload, role: str, settings: int, r: pd.Series) -> dict:
    return {"workload": workload, "role": role, "settings": settings, "verdict": verdict(r)} | {
        column: r.get(column) for column in QUOTED
    }


def table(speedup: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per headline sentence, in order: ``largest`` per workload (of ``settings`` settings), then
    ``article`` (the same device at batch size 500) where the largest is at another batch size. Empty when
    only the baseline ran."""
    others = speedup[speedup.device != baseline] if not speedup.empty else speedup
    out = []
    for workload, rows in others.groupby("workload", sort=False):
        best = _best(rows)
        out.append(_row(workload, "largest", len(rows), best))
        article = rows[(rows.batch_size == ARTICLE_BATCH_SIZE) & (rows.device == best.device)]
        if int(best.batch_size) != ARTICLE_BATCH_SIZE and not article.empty:
            out.append(_row(workload, "article", len(rows), article.iloc[0]))
    return pd.DataFrame(out, columns=COLUMNS)
