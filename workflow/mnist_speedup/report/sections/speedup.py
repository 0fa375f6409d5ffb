"""The per-epoch speedup table with its intervals."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.report.format import ci, ci_name, dropped_note, esc, mean_sd, num, table, times, without_empty


def _levels(sp: pd.DataFrame):
    return sp.get("ci_level", pd.Series(dtype=float))


def _table(sp: pd.DataFrame, names: dict, baseline: str) -> tuple[str, list[str]]:
    """The table, less the columns that say nothing on any row (returned by name)."""
    intervals = [
        ("—" if d == baseline else ci(*v))
        for d, *v in zip(sp.device, sp.speedup_ci_low, sp.speedup_ci_high, sp.speedup_ci_note)
    ]
    low, high = sp.get("bootstrap_ci_low", pd.Series(dtype=float)), sp.get("bootstrap_ci_high", pd.Series(dtype=float))
    # the BCa bootstrap (analysis/bootstrap.py): a column only where some row has one
    second = {
        f"BCa bootstrap {ci_name(_levels(sp))}": [
            "—" if d == baseline else ci(*v)
            for d, *v in zip(sp.device, low.reindex(sp.index), high.reindex(sp.index), sp.get("bootstrap_note", low))
        ]
    }
    df, dropped = without_empty(
        pd.DataFrame(
            {
                "batch size": sp.batch_size,
                "device": sp.device.map(names),
                "epoch (s), mean ± SD": mean_sd(sp.epoch_s_mean, sp.epoch_s_std),
                "samples/s": sp.samples_per_s.map(lambda v: num(v, "{:,.0f}")),
                "speedup": sp.speedup.map(times),
                ci_name(_levels(sp)): intervals,
                "interval method": sp.ci_method,
                **(second if low.notna().any() else {}),
                "n": sp.n,
                "CV seeds": sp.cv_seeds.map(lambda v: num(v * 100, "{:.1f}%")),
                "seeds for ±5%": sp.seeds_for_5pct_ci.map(lambda v: num(v, "{:.0f}")),
                "parity": sp.get("parity", pd.Series("", sp.index)).fillna("").map(lambda v: v or "—"),
            }
        )
    )
    return table(df), dropped


def _tables(report) -> list[str]:
    """One table per workload, under its name in words where there are several; a note names the
    columns left out because they were empty on every row (an interval, a CV with one seed)."""
    sp, out, dropped = report.tables.speedup, [], {}
    groups = [(None, sp)] if len(report.workloads) == 1 else sp.groupby("workload", sort=False)
    for workload, rows in groups:
        text, empty = _table(rows, report.names, report.baseline)
        if workload is not None:
            out += [f"### {esc(report.workloads[workload])} (`{esc(workload)}`)", ""]
        out += [text, ""]
        dropped.update(dict.fromkeys(empty))
    fewest = int(sp.n.min()) if sp.n.notna().any() else 0
    why = (
        f"With {fewest} run{'s' if fewest != 1 else ''} per device at some setting there is no spread, so no "
        "interval and no CV there: add seeds."
        if fewest < 2
        else ""
    )
    return out + dropped_note(list(dropped), why)


def render(report) -> list[str]:
    sp, names, baseline = report.tables.speedup, report.names, report.baseline
    notes = [
        f"- {esc(r.workload)}, batch size {r.batch_size}, {esc(r.device)}: {esc(r.few_runs_note)}."
        for _, r in sp.iterrows()
        if isinstance(r.few_runs_note, str)
    ]
    level = ci_name(_levels(sp)).removesuffix(" CI")
    return [
        f"## Speedup over {esc(names[baseline])}",
        "",
        f"S = mean(T_{esc(baseline)}) / mean(T_device) of steady-state epoch times. Where both devices ran "
        f"in the same interleaved blocks, the {level} interval is Fieller's for paired means (shared drift "
        "cancels); otherwise Fieller's for independent means. An interval that would be unbounded or "
        "reach 0 is not shown."
        + (
            f" With replication the intervals are at the {level} level, not 95%: stopping when the interval is "
            "tight would otherwise cost a 95% interval its coverage (docs/method.md, Replication)."
            if level != "95%"
            else ""
        ),
        "",
        *_tables(report),
        "",
        *notes,
        "",
    ]
