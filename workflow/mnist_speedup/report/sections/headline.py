"""The headline: one sentence per workload, naming its largest speedup and the article's setting,
each with its interval; the per-cell detail is in the speedup tables below."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.report.format import ci_name, esc, num
from mnist_speedup.spec.workloads import ARTICLE_BATCH_SIZE


def _runs(r) -> str:
    """``3 seeds each``, ``1 seed each``, ``3 and 2 runs``: the counts behind a speedup, in words."""
    n, base = int(r.n), int(r.baseline_n)
    if n != base:
        return f"{n} and {base} runs"
    return f"{n} seed{'s' if n != 1 else ''} each"


def _sentence(r, who: str, base: str, on: str) -> str:
    if getattr(r, "parity", None) == "FAIL":
        return (
            f"{who} did not train{on} to the same quality as {base} at batch size {r.batch_size} "
            f"({esc(r.parity_reason)}), so no training speedup is quoted for it (per epoch alone it ran "
            f"{num(r.speedup, '{:.2f}')}× as fast)."
        )
    n = _runs(r)
    if not (math.isfinite(r.speedup_ci_low) and math.isfinite(r.speedup_ci_high)):
        note = r.speedup_ci_note if isinstance(r.speedup_ci_note, str) else "no interval"
        return (
            f"{who} ran {num(r.speedup, '{:.2f}')}× as fast as {base} per epoch{on} at batch size {r.batch_size} "
            f"({n}), but with no confidence interval ({esc(note)})."
        )
    ci = f"{ci_name(r.get('ci_level', math.nan))} {r.speedup_ci_low:.2f}-{r.speedup_ci_high:.2f}, {n}"
    if r.speedup_ci_low <= 1 <= r.speedup_ci_high:
        return (
            f"{who} and {base} cannot be told apart at this number of runs{on} at batch size {r.batch_size} "
            f"(speedup {r.speedup:.2f}×, {ci})."
        )
    pace = f"{r.speedup:.2f}× faster than" if r.speedup > 1 else f"at {r.speedup:.2f}× the speed of"
    return f"{who} trained {pace} {base} per epoch{on} at batch size {r.batch_size} ({ci})."


def _best(rows: pd.DataFrame):
    """The cell with the largest speedup among those that trained as well as the baseline."""
    fair = rows[rows.get("parity", pd.Series("", rows.index)).fillna("") != "FAIL"]
    pool = fair if not fair.empty else rows
    return pool.loc[pool.speedup.fillna(-math.inf).idxmax()]


def _workload_sentences(rows: pd.DataFrame, names: dict, baseline: str, workload: str | None) -> list[str]:
    best = _best(rows)
    cells = len(rows)
    largest = f"largest of {cells} settings: " if cells > 1 else ""
    where = (f"{workload}, " if largest else f"{workload}: ") if workload else ""
    prefix = f"{where}{largest}"
    prefix = prefix[:1].upper() + prefix[1:]  # a sentence that opens on a device label keeps the label as written
    out = [prefix + _sentence(best, esc(names[best.device]), esc(names[baseline]), "")]
    article = rows[(rows.batch_size == ARTICLE_BATCH_SIZE) & (rows.device == best.device)]
    if int(best.batch_size) != ARTICLE_BATCH_SIZE and not article.empty:
        r = article.iloc[0]
        out.append("At the article's batch size 500: " + _sentence(r, esc(names[r.device]), esc(names[baseline]), ""))
    return out


def sentences(report) -> list[str]:
    """One headline per workload (its best setting, then the article's batch size where that differs)."""
    sp, names, baseline = report.tables.speedup, report.names, report.baseline
    others = sp[sp.device != baseline]
    if others.empty:
        return [
            f"Only {esc(names[baseline])} was run, so there is no speedup: this report gives its epoch time, "
            "throughput and time to accuracy, which say how fast this one device trains, not how it compares. "
            "Add a second device to `devices` to compare."
        ]
    several = len(report.workloads) > 1
    out = []
    for workload, rows in others.groupby("workload", sort=False):
        out += _workload_sentences(rows, names, baseline, esc(report.workloads[workload]) if several else None)
    return out


def render(report) -> list[str]:
    return [part for line in sentences(report) for part in (f"**{line}**", "")]
