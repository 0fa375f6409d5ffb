"""Host overhead, memory and energy per device and batch size."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.report.format import ci, esc, finite, mib, num, share, table, times, workload_column


def _energy_cells(sp: pd.DataFrame, one_reason: bool) -> list[str]:
    return [
        f"{num(j, '{:.1f} J')} ({num(w, '{:.0f} W')})"
        if math.isfinite(j)
        else ("n/a" if one_reason else f"n/a ({reason})")
        for j, w, reason in zip(sp.energy_j_per_epoch, sp.mean_watts, sp.energy_reason)
    ]


def _energy_ratio_cells(sp: pd.DataFrame) -> list[str]:
    return [
        f"{times(e)} {ci(lo, hi, note)}" if math.isfinite(e) else "n/a"
        for e, lo, hi, note in zip(
            sp.energy_ratio, sp.energy_ratio_ci_low, sp.energy_ratio_ci_high, sp.energy_ratio_ci_note
        )
    ]


def render(report) -> list[str]:
    sp = report.tables.speedup
    missing = sp[~sp.energy_j_per_epoch.map(finite)]
    reasons = set(missing.energy_reason.dropna())
    one_reason = len(reasons) == 1 and len(missing) == len(sp)  # then said once, under the table
    rows = pd.DataFrame(
        {
            **workload_column(report, sp),
            "batch size": sp.batch_size,
            "device": sp.device.map(report.names),
            "steps per call": sp.steps_per_call,
            "host share of a one-call step": sp.host_share_of_one_call_step.map(share),
            "host share of the timed epoch": sp.host_share_of_timed_epoch.map(share),
            "peak host RSS": sp.host_peak_rss_bytes.map(mib),
            "peak GPU memory": sp.gpu_peak_bytes.map(mib),
            "energy per epoch": _energy_cells(sp, one_reason),
            "energy ratio (95% CI)": _energy_ratio_cells(sp),
        }
    )
    return [
        "## Host overhead, memory and energy",
        "",
        "Host share: the host's cost of one call of the compiled training function (one-step calls "
        "against a many-step call, measured after the timed epochs) as a share of a one-call step, and "
        "times the calls per epoch as a share of the timed epoch. Energy: NVML (whole GPU board) or RAPL "
        "(the whole CPU package, every process on it, not this process alone), read around each "
        "steady-state epoch; the ratio is baseline energy / device energy, with the same interval as time.",
        "",
        table(rows),
        "",
        *([f"No energy counter on any device: {esc(next(iter(reasons)))}.", ""] if one_reason else []),
    ]
