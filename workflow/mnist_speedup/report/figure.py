"""The publication figures.

``speedup``: (a) throughput against batch size, (b) speedup over the
baseline, (c) validation accuracy against cumulative training time.
``timeline``: every run's epoch time against its start, to show drift.
``scaling``: (a) speedup and (b) achieved FLOP/s against the FLOPs of one
training step, one point per workload, one line per device and batch size.

Every number comes from the aggregated tables, with the estimator the
tables use (throughput = samples per epoch / mean epoch time), so that the
panels and the tables can never disagree. One legend, below the panels,
explains every colour, line and band, and covers no data.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from mnist_speedup import atomic  # noqa: E402
from mnist_speedup.analysis import checks, placing  # noqa: E402
from mnist_speedup.spec import schema
from mnist_speedup.words import CI_LEVEL, ci_name, percent

RC = {
    "font.size": 8,
    "axes.labelsize": 8,
    "axes.titlesize": 9,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "pdf.fonttype": 42,  # embed TrueType fonts (journals reject Type 3)
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "text.usetex": False,
}

BATCH_STYLES = ("-", "--", ":", "-.")
DODGE = 0.06  # relative x offset between devices at one batch size (log axis)


def plain(text: str) -> str:
    """Text shown as written: no matplotlib mathtext ($...$)."""
    return str(text).replace("$", r"\$")


def distinct_colours(palette: str, n: int) -> list:
    """``n`` colours, none used twice: the palette's own (colorblind has 10), then evenly spaced hues
    (seaborn's ``n_colors`` past a palette's size starts it again: two devices shared a colour)."""
    own = list(sns.color_palette(palette))
    extra = [c for c in sns.color_palette("husl", max(0, n - len(own)) + len(own)) if c not in own]
    return (own + extra)[: max(n, 3)]


def _setup(summary: pd.DataFrame, baseline: str, opts: dict, labels: dict | None):
    devices = sorted(summary.device.unique(), key=lambda d: (d != baseline, d))
    colours = dict(zip(devices, distinct_colours(opts["palette"], len(devices))))
    names = {d: plain((labels or {}).get(d, d)) for d in devices}
    return devices, colours, names


def _dodged(x, i: int, n: int):
    return np.asarray(x, dtype=float) * (1 + DODGE) ** (i - (n - 1) / 2)


def _log_axis(axis, lo: float, hi: float) -> None:
    """Labelled ticks, written out, each label distinct: 1, 2, 5 x 10^k over wide ranges, 1, 1.5, 2, 2.5, 3, 4,
    5, 7 x 10^k over middling ones (no two labelled ticks more than 1.5 apart), and evenly spaced round values
    over a narrow range (where a decade's ticks would leave the points unlabelled between two of them)."""
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    if decades > 1.0:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    elif decades > 0.4:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0)))
    else:
        axis.set_major_locator(FixedLocator(linear_ticks(lo, hi)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v)))
    axis.set_minor_formatter(NullFormatter())


def linear_ticks(lo: float, hi: float, count: int = 4) -> np.ndarray:
    """About ``count`` round values (1, 2, 2.5 or 5 x 10^k apart) from ``lo`` to ``hi``."""
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return np.arange(math.ceil(lo / step) * step, hi + step * 1e-9, step)


def tick_label(value: float) -> str:
    """``15,000``, ``7``, ``1.5``, ``0.25``: a tick's value with every digit it has (never 1.5 shown as 2)."""
    if value >= 1000 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.6g}"


def _batch_axis(ax, batch_sizes) -> None:
    ax.set_xscale("log")
    ax.set_xticks(batch_sizes, [str(b) for b in batch_sizes])
    ax.minorticks_off()
    lo, hi = min(batch_sizes), max(batch_sizes)
    ax.set_xlim(lo / 1.35, hi * 1.35)


def _throughput(ax, speedup: pd.DataFrame, devices, colours) -> None:
    for i, device in enumerate(devices):
        rows = speedup[speedup.device == device].sort_values("batch_size")
        x = _dodged(rows.batch_size, i, len(devices))
        y = rows.samples_per_s.to_numpy()
        lo = np.where(rows.samples_per_s_ci_low.notna(), rows.samples_per_s_ci_low, y)
        hi = np.where(rows.samples_per_s_ci_high.notna(), rows.samples_per_s_ci_high, y)
        c = colours[device]
        ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="o-", ms=3.5, lw=1.2, color=c, elinewidth=0.8, capsize=2)
        bound = rows.bound_samples_per_s.to_numpy()
        if np.isfinite(bound).any():
            ax.plot(x, bound, ls=(0, (1, 1.5)), marker="_", ms=7, lw=0.9, color=c)
    ax.set_yscale("log")
    _log_axis(ax.yaxis, *ax.get_ylim())
    ax.set(xlabel="Batch size (samples)", ylabel="Training throughput (samples/s)")


def _speedup_top(rows: pd.DataFrame) -> float:
    """The top of a speedup axis: above the highest interval, but never more
    than 3 times the largest estimate (a wild interval is cut, with a mark)."""
    if not len(rows):
        return 2.0
    highs = rows.speedup_ci_high.where(np.isfinite(rows.speedup_ci_high), rows.speedup)
    return min(max(1.2, float(np.nanmax(highs)) * 1.1), max(1.2, 3 * float(np.nanmax(rows.speedup))))


def _speedup(ax, speedup: pd.DataFrame, devices, colours, baseline: str) -> None:
    others = [d for d in devices if d != baseline]
    rows_all = speedup[speedup.device.isin(others)]
    top = _speedup_top(rows_all)
    for i, device in enumerate(others):
        rows = speedup[speedup.device == device].sort_values("batch_size")
        c, x = colours[device], _dodged(rows.batch_size, i, len(others))
        bounded = np.isfinite(rows.speedup_ci_low) & np.isfinite(rows.speedup_ci_high)
        ax.plot(x, rows.speedup, "-", lw=1.2, color=c)
        ax.plot(x[bounded], rows.speedup[bounded], "o", ms=3.5, color=c)
        ax.plot(x[~bounded], rows.speedup[~bounded], "o", ms=3.5, mfc="white", color=c)  # no interval
        if bounded.sum() >= 1:
            hi = np.minimum(rows.speedup_ci_high[bounded], top)
            ax.fill_between(x[bounded], rows.speedup_ci_low[bounded], hi, color=c, alpha=0.2, lw=0)
            ax.errorbar(
                x[bounded],
                rows.speedup[bounded],
                yerr=[rows.speedup[bounded] - rows.speedup_ci_low[bounded], hi - rows.speedup[bounded]],
                fmt="none",
                ecolor=c,
                elinewidth=0.8,
                capsize=2,
            )
            clipped = (rows.speedup_ci_high[bounded] > top).to_numpy()
            if clipped.any():  # an interval cut by the axis: a triangle at the edge
                ax.plot(x[bounded][clipped], [top] * int(clipped.sum()), "^", ms=4, color=c, clip_on=False)
    ax.axhline(1.0, color="0.35", ls="-.", lw=0.8)
    ax.set_ylim(0, top)
    ax.set(xlabel="Batch size (samples)", ylabel=f"Speedup over {plain(baseline)} (×)")
    if not others:
        ax.text(0.5, 0.5, "only the baseline device was run", ha="center", transform=ax.transAxes)


def _convergence(ax, curves: pd.DataFrame | None, devices, colours, batch_sizes, target: float | None) -> None:
    if curves is None or curves.empty:
        ax.text(0.5, 0.5, "no per-epoch accuracies", ha="center", transform=ax.transAxes)
        return
    for device in devices:
        for j, bs in enumerate(batch_sizes):
            rows = curves[(curves.device == device) & (curves.batch_size == bs)].sort_values("epoch")
            if rows.empty:
                continue
            style = BATCH_STYLES[j % len(BATCH_STYLES)]
            ax.plot(rows.cumulative_s, rows.val_accuracy * 100, ls=style, lw=1.1, color=colours[device])
            ax.fill_between(
                rows.cumulative_s, rows.ci_low * 100, rows.ci_high * 100, color=colours[device], alpha=0.15, lw=0
            )
    if target is not None:
        ax.axhline(target * 100, color="0.2", lw=0.8, ls=(0, (4, 2)))
    ax.set_xscale("log")
    _log_axis(ax.xaxis, *ax.get_xlim())
    low = float(np.nanpercentile(curves.val_accuracy, 5)) * 100
    ax.set_ylim(max(0.0, min(low, (target or 1) * 100 - 5)), 100)
    ax.set(xlabel="Cumulative timed training (s)", ylabel="Validation accuracy (%)")


def _interval_name(speedup: pd.DataFrame) -> str:
    """``95% CI``, or the level replication widened the speedups' intervals to."""
    level = speedup.get("ci_level", pd.Series(dtype=float)).max()
    return ci_name(level if level == level else CI_LEVEL)


def _legend(fig, devices, colours, names, batch_sizes, target, interval: str) -> None:
    handles = [Line2D([], [], color=colours[d], marker="o", ms=3.5, lw=1.2, label=names[d]) for d in devices]
    handles += [
        Line2D([], [], color="0.4", ls=BATCH_STYLES[j % 4], lw=1.1, label=f"(c) batch {bs}")
        for j, bs in enumerate(batch_sizes)
    ]
    handles += [
        Line2D([], [], color="0.4", ls=(0, (1, 1.5)), lw=0.9, label="(a) calibrated matmul bound"),
        *(
            [Patch(color="0.4", alpha=0.25, label="(b, c) 95% CI")]
            if interval == "95% CI"
            else [Patch(color="0.4", alpha=0.25, label=f"(b) {interval}, (c) 95% CI")]
        ),  # (c): the seeds' accuracy
        Line2D([], [], color="0.4", marker="o", mfc="white", ls="none", ms=3.5, label="(b) no interval"),
        Line2D([], [], color="0.35", ls="-.", lw=0.8, label="(b) 1× = no speedup"),
    ]
    if target is not None:
        handles.append(Line2D([], [], color="0.2", ls=(0, (4, 2)), lw=0.8, label=f"(c) target {percent(target)}"))
    fig.legend(handles=handles, loc="outside lower center", ncol=legend_columns(handles), frameon=False)


def legend_columns(handles, width_chars: int = 120) -> int:
    """As many legend columns as fit the figure's width with the longest
    entry (device labels with their numerics are long), at most 5."""
    longest = max(len(h.get_label()) for h in handles) + 6  # the line sample and the gap
    return max(1, min(len(handles), 5, width_chars // longest))


def _letter(ax, letter: str) -> None:
    ax.text(-0.02, 1.03, f"({letter})", transform=ax.transAxes, fontweight="bold", ha="right", va="bottom", fontsize=9)


def draw(
    summary: pd.DataFrame,
    speedup: pd.DataFrame,
    baseline: str,
    options: dict | None = None,
    curves: pd.DataFrame | None = None,
    target: float | None = None,
    labels: dict | None = None,
):
    """The three-panel figure. ``curves`` are the mean convergence curves
    (``tta.mean_curves``); ``labels`` map a device to its legend text."""
    opts = {**schema.defaults("figure"), **(options or {})}
    devices, colours, names = _setup(summary, baseline, opts, labels)
    batch_sizes = sorted(summary.batch_size.unique())
    with sns.axes_style("ticks"), plt.rc_context(RC):
        fig, (ax_a, ax_b, ax_c) = plt.subplots(
            1, 3, figsize=(opts["width_in"], opts["height_in"]), layout="constrained"
        )
        _throughput(ax_a, speedup, devices, colours)
        _speedup(ax_b, speedup, devices, colours, baseline)
        _convergence(ax_c, curves, devices, colours, batch_sizes, target)
        for ax in (ax_a, ax_b):
            _batch_axis(ax, batch_sizes)
        for ax, letter in zip((ax_a, ax_b, ax_c), "abc"):
            _letter(ax, letter)
        _legend(fig, devices, colours, names, batch_sizes, target, _interval_name(speedup))
        if opts.get("title"):
            fig.suptitle(plain(opts["title"]), fontsize=9)
    return fig


def draw_timeline(summary: pd.DataFrame, baseline: str, options: dict | None = None, labels: dict | None = None):
    """Every run's steady-state epoch time against its start in the
    workflow run (minutes), by device and batch size; calibrations shaded."""

    opts = {**schema.defaults("figure"), **(options or {})}
    devices, colours, names = _setup(summary, baseline, opts, labels)
    df = summary.assign(start_min=placing.start_seconds(summary) / 60)
    several = df.workload.nunique() > 1
    settings = sorted(set(zip(df.workload, df.batch_size)))  # one marker per workload and batch size
    markers = {k: "osD^vP*Xdph"[i % 11] for i, k in enumerate(settings)}
    with sns.axes_style("ticks"), plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(opts["width_in"], opts["height_in"] * 0.9), layout="constrained")
        _calibration_spans(ax, df)
        for device in devices:
            for (workload, bs), rows in df[df.device == device].groupby(["workload", "batch_size"]):
                rows = rows.sort_values("start_min")
                ax.plot(
                    rows.start_min,
                    rows.steady_epoch_mean_s,
                    marker=markers[(workload, bs)],
                    ms=4,
                    lw=0.6,
                    color=colours[device],
                )
        ax.set_yscale("log")
        _log_axis(ax.yaxis, *ax.get_ylim())
        ax.set(xlabel="Start of the run (minutes since the first run)", ylabel="Steady-state epoch time (s)")
        handles = [Line2D([], [], color=colours[d], lw=1.2, label=names[d]) for d in devices]
        handles += [
            Line2D(
                [],
                [],
                color="0.4",
                marker=markers[k],
                ls="none",
                label=plain(f"{k[0]}, batch {k[1]}" if several else f"batch {k[1]}"),
            )
            for k in settings
        ]
        handles.append(Patch(color="0.85", label="calibration"))
        hit = checks.disturbed(df)
        if not hit.empty:  # runs that other processes disturbed: ringed in red
            ax.plot(hit.start_min, hit.steady_epoch_mean_s, "o", ms=9, mfc="none", mec="#d62728", mew=1.0, ls="none")
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    ms=7,
                    mfc="none",
                    mec="#d62728",
                    ls="none",
                    label=f"other processes > {checks.INTERFERENCE_WARN:.0%} of a core",
                )
            )
        fig.legend(handles=handles, loc="outside right upper", frameon=False)
        if opts.get("title"):
            fig.suptitle(plain(opts["title"]), fontsize=9)
    return fig


def _calibration_spans(ax, df: pd.DataFrame) -> None:
    if "calibration_started_at" not in df or df.calibration_started_at.isna().all():
        return
    first = pd.to_datetime(df.started_at, utc=True, format="ISO8601").min()
    spans = df.dropna(subset=["calibration_started_at"]).drop_duplicates(["machine_key", "device", "workload"])
    for _, r in spans.iterrows():
        start = (pd.Timestamp(r.calibration_started_at) - first).total_seconds() / 60
        end = (pd.Timestamp(r.calibration_finished_at) - first).total_seconds() / 60
        if math.isfinite(start) and math.isfinite(end):
            ax.axvspan(start, max(end, start + 0.05), color="0.85", lw=0, zorder=0)


def save(fig, stem, formats, dpi: int) -> list[Path]:
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_suffix("." + fmt)
        with atomic.replacing(path) as tmp, plt.rc_context(RC):  # fonts are embedded when saving
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=None if fmt != "pdf" else {"CreationDate": None})
        paths.append(path)
    plt.close(fig)
    return paths
