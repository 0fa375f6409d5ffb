"""The publication figure: (a) throughput, (b) speedup over the baseline."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from . import atomic, stats  # noqa: E402

DEFAULTS = {
    "width_in": 7.0,
    "height_in": 3.0,
    "dpi": 300,
    "formats": ["pdf", "png"],
    "palette": "colorblind",
    "title": None,
}

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
}


def draw(
    summary: pd.DataFrame,
    speedup: pd.DataFrame,
    baseline: str,
    options: dict | None = None,
):
    """Return the matplotlib figure."""
    opts = {**DEFAULTS, **(options or {})}
    devices = sorted(summary.device.unique(), key=lambda d: (d != baseline, d))
    colours = dict(zip(devices, sns.color_palette(opts["palette"], n_colors=max(len(devices), 3))))
    batch_sizes = sorted(summary.batch_size.unique())
    with sns.axes_style("ticks"), plt.rc_context(RC):
        fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(opts["width_in"], opts["height_in"]), layout="constrained")
        sns.lineplot(
            data=summary,
            x="batch_size",
            y="samples_per_s",
            hue="device",
            hue_order=devices,
            palette=colours,
            estimator="mean",
            errorbar=stats.mean_ci,
            err_style="bars",
            marker="o",
            markersize=4,
            linewidth=1.2,
            err_kws={"capsize": 2, "linewidth": 0.8},
            ax=ax_a,
        )
        bounds = speedup.dropna(subset=["bound_samples_per_s"]).sort_values("batch_size")
        for device, rows in bounds.groupby("device"):
            ax_a.plot(
                rows.batch_size,
                rows.bound_samples_per_s,
                ls="--",
                lw=0.8,
                color=colours.get(device),
                label=f"{device}, calibrated bound",
            )
        ax_a.set(xscale="log", yscale="log", xlabel="Batch size (samples)", ylabel="Training throughput (samples/s)")
        ax_a.set_xticks(batch_sizes, [str(b) for b in batch_sizes])
        ax_a.minorticks_off()
        # readable numbers on the log axis: 1, 2, 5 x 10^k, written out
        ax_a.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax_a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax_a.legend(title=None, frameon=False)

        others = speedup[speedup.device != baseline].sort_values("batch_size")
        for device, rows in others.groupby("device"):
            c = colours.get(device)
            ax_b.plot(rows.batch_size, rows.speedup, marker="o", ms=4, lw=1.2, color=c, label=device)
            finite = rows[np.isfinite(rows.speedup_ci_low) & np.isfinite(rows.speedup_ci_high)]
            if finite.empty:  # one run per device: no interval to draw
                continue
            ax_b.fill_between(
                finite.batch_size, finite.speedup_ci_low, finite.speedup_ci_high, color=c, alpha=0.25, lw=0
            )
            ax_b.errorbar(
                finite.batch_size,
                finite.speedup,
                yerr=[finite.speedup - finite.speedup_ci_low, finite.speedup_ci_high - finite.speedup],
                fmt="none",
                ecolor=c,
                elinewidth=0.8,
                capsize=2,
            )
        ax_b.axhline(1.0, color="0.3", ls=":", lw=0.8)
        ax_b.set(xscale="log", xlabel="Batch size (samples)", ylabel=f"Speedup over {baseline} (\u00d7)")
        ax_b.set_xticks(batch_sizes, [str(b) for b in batch_sizes])
        ax_b.minorticks_off()
        if others.empty:
            ax_b.text(0.5, 0.5, "only the baseline device was run", ha="center", transform=ax_b.transAxes)
        else:
            ax_b.legend(title="95% CI (Fieller)", frameon=False)
        for ax, letter in ((ax_a, "a"), (ax_b, "b")):
            ax.text(
                -0.02,
                1.02,
                f"({letter})",
                transform=ax.transAxes,
                fontweight="bold",
                ha="right",
                va="bottom",
                fontsize=9,
            )
        if opts.get("title"):
            fig.suptitle(opts["title"], fontsize=9)
    return fig


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
