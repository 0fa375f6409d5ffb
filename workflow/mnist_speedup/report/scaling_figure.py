"""The scaling figure: (a) the speedup with its band against the FLOPs per training step (log axis), one
line per device and batch size; (b) the achieved FLOP/s against the same axis, with each device's
calibrated bound. One marker per workload, shaped by its network type (spec/workloads.py)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from mnist_speedup.report.figure import (
    BATCH_STYLES,
    RC,
    _interval_name,
    _letter,
    _log_axis,
    _setup,
    _speedup_top,
    legend_columns,
    plain,
)
from mnist_speedup.spec import schema, workloads


def _scaling_speedup(ax, speedup: pd.DataFrame, devices, colours, styles, baseline: str) -> None:
    others = speedup[speedup.device != baseline]
    top = _speedup_top(others)
    for device in devices:
        for bs, rows in others[others.device == device].groupby("batch_size"):
            rows, c = rows.sort_values("flops_per_step"), colours[device]
            x, y = rows.flops_per_step.to_numpy(), rows.speedup.to_numpy()
            bounded = (np.isfinite(rows.speedup_ci_low) & np.isfinite(rows.speedup_ci_high)).to_numpy()
            ax.plot(x, y, color=c, ls=styles[bs], lw=1.2)
            _points(ax, rows, y, c, bounded)
            low, high = rows.speedup_ci_low.to_numpy(), np.minimum(rows.speedup_ci_high.to_numpy(), top)
            ax.fill_between(x, low, high, where=bounded, color=c, alpha=0.2, lw=0)  # a band between neighbours
            # and a bar at every bounded point: a lone one between unbounded neighbours has no band
            ax.vlines(x[bounded], low[bounded], high[bounded], color=c, alpha=0.6, lw=1.0)
    ax.axhline(1, color="0.35", ls="-.", lw=0.8, zorder=0)
    _flops_axis(ax, speedup)
    ax.set(ylabel=f"Speedup over {plain(baseline)} (×)")
    ax.set_ylim(0, top)


def _points(ax, rows: pd.DataFrame, y, colour, bounded=None) -> None:
    """One marker per workload, shaped by its network type (workloads.types()); hollow where there is no interval."""
    bounded = np.ones(len(rows), bool) if bounded is None else bounded
    for kind in rows.workload_type.unique():
        mine, marker = (rows.workload_type == kind).to_numpy(), workloads.types()[kind].marker
        x = rows.flops_per_step.to_numpy()
        ax.plot(x[mine & bounded], y[mine & bounded], marker, ms=3.8, color=colour, ls="none")
        ax.plot(x[mine & ~bounded], y[mine & ~bounded], marker, ms=3.8, mfc="white", color=colour, ls="none")


def _flops_axis(ax, speedup: pd.DataFrame) -> None:
    """A log axis of FLOPs per step, one labelled tick per decade (10M, 100M, 1G)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _flops_tick(v)))
    lo, hi = speedup.flops_per_step.min(), speedup.flops_per_step.max()
    ax.set_xlim(lo / 1.6, hi * 1.6)
    ax.set_xlabel("Work per training step (FLOP)")


def _scaling_rate(ax, speedup: pd.DataFrame, devices, colours, styles) -> None:
    for device in devices:
        for bs, rows in speedup[speedup.device == device].groupby("batch_size"):
            rows = rows.sort_values("flops_per_step")
            c, achieved = colours[device], rows.achieved_flops_per_s.to_numpy() / 1e9
            ax.plot(rows.flops_per_step, achieved, color=c, ls=styles[bs], lw=1.2)
            _points(ax, rows, achieved, c)
            ax.plot(rows.flops_per_step, rows.calibrated_flops_per_s / 1e9, color=c, ls=(0, (1, 1.5)), lw=0.9)
    ax.set_yscale("log")
    _flops_axis(ax, speedup)
    rates = pd.concat([speedup.achieved_flops_per_s, speedup.calibrated_flops_per_s]).dropna() / 1e9
    _log_axis(ax.yaxis, rates.min(), rates.max())
    ax.set(ylabel="Achieved GFLOP/s")


def _flops_tick(v: float) -> str:
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def draw(speedup: pd.DataFrame, baseline: str, types: dict, options: dict | None = None, labels: dict | None = None):
    """Speedup (with its interval's band) and achieved FLOP/s (with each
    device's calibrated bound, dotted) against the FLOPs of one training
    step; ``types`` gives each workload's network type (its marker)."""
    speedup = speedup.assign(workload_type=speedup.workload.map(types))
    opts = {**schema.defaults("figure"), **(options or {})}
    devices, colours, names = _setup(speedup, baseline, opts, labels)
    batch_sizes = sorted(speedup.batch_size.unique())
    styles = {bs: BATCH_STYLES[j % len(BATCH_STYLES)] for j, bs in enumerate(batch_sizes)}
    with sns.axes_style("ticks"), plt.rc_context(RC):
        fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(opts["width_in"], opts["height_in"]), layout="constrained")
        _scaling_speedup(ax_a, speedup, devices, colours, styles, baseline)
        _scaling_rate(ax_b, speedup, devices, colours, styles)
        for ax, letter in zip((ax_a, ax_b), "ab"):
            _letter(ax, letter)
        handles = [Line2D([], [], color=colours[d], marker="o", ms=3.5, lw=1.2, label=names[d]) for d in devices]
        handles += [Line2D([], [], color="0.4", ls=styles[b], lw=1.1, label=f"batch {b}") for b in batch_sizes]
        kinds = [workloads.types()[k] for k in sorted(speedup.workload_type.unique())]
        handles += [Line2D([], [], color="0.4", marker=k.marker, ls="none", ms=3.8, label=k.family) for k in kinds]
        handles += [
            Patch(color="0.4", alpha=0.25, label=f"(a) {_interval_name(speedup)}"),
            Line2D([], [], color="0.4", marker="o", mfc="white", ls="none", ms=3.5, label="(a) no interval"),
            Line2D([], [], color="0.35", ls="-.", lw=0.8, label="(a) 1× = no speedup"),
            Line2D([], [], color="0.4", ls=(0, (1, 1.5)), lw=0.9, label="(b) calibrated bound"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncol=legend_columns(handles), frameon=False)
        if opts.get("title"):
            fig.suptitle(plain(opts["title"]), fontsize=9)
    return fig
