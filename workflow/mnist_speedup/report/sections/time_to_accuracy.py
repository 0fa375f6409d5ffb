"""Time to accuracy: the sentence to quote, the table, best against best, cost."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.analysis import checks
from mnist_speedup.report.format import ci, dash_ci, esc, mean_sd, num, table, times, workload_column
from mnist_speedup.words import percent

#: what the best-against-best table cannot say
BEST_CAVEAT = (
    "Each device's best batch size was chosen from these same runs, so this interval is optimistic "
    "(selection is not accounted for)."
)


def _why_different(r, tta: pd.DataFrame, baseline: str, epoch: float) -> str:
    if abs(epoch - r.tta_speedup) <= 0.05 * epoch:
        return "."
    base_epochs = tta.loc[(r.workload, r.batch_size, baseline), "epochs_to_target_mean"]
    if abs(r.epochs_to_target_mean - base_epochs) >= 0.5:
        return (
            f", because the two need different numbers of epochs ({r.epochs_to_target_mean:.1f} "
            f"against {base_epochs:.1f})."
        )
    return (
        ", with the same number of epochs: time to accuracy also counts the warm-up epochs, "
        "which the per-epoch figure leaves out."
    )


def sentences(report) -> list[str]:
    """The quotable sentence: time to accuracy against time per epoch."""
    t, names, baseline, target = report.tables, report.names, report.baseline, report.target
    per_epoch = t.speedup.set_index(["workload", "batch_size", "device"])
    indexed = t.tta.set_index(["workload", "batch_size", "device"])
    out = []
    for _, r in t.tta[t.tta.device != baseline].iterrows():
        who, base = esc(names[r.device]), esc(names[baseline])
        where = esc(checks.at(r, t.tta))
        where = where[0].upper() + where[1:]
        if not math.isfinite(r.tta_speedup):
            out.append(f"{where}, no time-to-accuracy speedup of {who}: {esc(r.tta_note)}.")
            continue
        interval = esc(dash_ci(r.tta_speedup_ci_low, r.tta_speedup_ci_high, r.tta_note))
        epoch = per_epoch.loc[(r.workload, r.batch_size, r.device), "speedup"]
        if r.tta_speedup_ci_low <= 1 <= r.tta_speedup_ci_high:
            head = (
                f"{where}, {who} and {base} cannot be told apart in time to "
                f"{percent(target)} validation accuracy at this number of runs ({r.tta_speedup:.2f}×, 95% CI {interval})"
            )
        else:
            head = (
                f"{where}, {who} reached {percent(target)} validation accuracy "
                f"{r.tta_speedup:.2f}× (95% CI {interval}) as fast as {base}"
            )
        out.append(f"{head}. Measured per epoch it is {epoch:.2f}×{_why_different(r, indexed, baseline, epoch)}")
    return out


def _main_table(d: pd.DataFrame, report) -> str:
    names = report.names
    return table(
        pd.DataFrame(
            {
                **workload_column(report, d),
                "batch size": d.batch_size,
                "device": d.device.map(names) + d.best_batch_size.map(lambda b: " (best)" if b else ""),
                "reached": [f"{int(k)} of {int(n)}" for k, n in zip(d.runs_reached, d.runs)],
                "time to target (s), mean ± SD": mean_sd(d.time_to_target_s_mean, d.time_to_target_s_std, "{:.2f}"),
                "epochs to target": d.epochs_to_target_mean.map(lambda v: num(v, "{:.1f}")),
                "speedup": d.tta_speedup.map(times),
                "95% CI": [ci(*v) for v in zip(d.tta_speedup_ci_low, d.tta_speedup_ci_high, d.tta_note)],
                "parity": d.get("parity", pd.Series("", d.index)).fillna("").map(lambda v: v or "—"),
            }
        )
    )


def best(report) -> list[str]:
    b, names = report.tables.best, report.names
    if b.empty:
        return []
    rows = pd.DataFrame(
        {
            **workload_column(report, b),
            "device (its best batch size)": [f"{names[d]} ({bs})" for d, bs in zip(b.device, b.device_batch_size)],
            f"{names[report.baseline]} at its best": b.baseline_batch_size,
            "speedup": b.tta_speedup.map(times),
            "95% CI": [ci(*v) for v in zip(b.tta_speedup_ci_low, b.tta_speedup_ci_high, b.tta_note)],
        }
    )
    return [
        "Best against best (each device at its own fastest batch size to target):",
        "",
        table(rows),
        "",
        f"Caveat: {BEST_CAVEAT}",
        "",
    ]


def cost(report) -> list[str]:
    d = report.tables.tta
    if not d.cost_ratio.notna().any():
        return []
    c = d.dropna(subset=["cost_ratio"])
    rows = pd.DataFrame(
        {
            **workload_column(report, c),
            "batch size": c.batch_size,
            "device": c.device.map(report.names),
            "cost to target": c.cost_to_target.map(lambda v: num(v, "{:.4g}")),
            "cost ratio": c.cost_ratio.map(times),
            "95% CI": [ci(lo, hi) for lo, hi in zip(c.cost_ratio_ci_low, c.cost_ratio_ci_high)],
        }
    )
    return [
        f"Cost to target ({esc(report.config.get('currency'))}; price per hour from the config) and the cost "
        "ratio (baseline cost / device cost: the time interval times the price ratio):",
        "",
        table(rows),
        "",
    ]


def render(report) -> list[str]:
    return [
        f"## Time to accuracy ({percent(report.target)} validation accuracy)",
        "",
        "Time to target: the sum of the epoch clocks up to the first epoch at or above the target, warm-up "
        "included; evaluation, setup and tracing excluded. No speedup where some run did not reach it.",
        "",
        *[f"- {s}" for s in sentences(report)],
        "",
        _main_table(report.tables.tta, report),
        "",
        *best(report),
        *cost(report),
    ]
