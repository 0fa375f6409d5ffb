"""The frameworks figure: each framework's throughput side by side, per device hardware and workload.

One panel per hardware group (the devices that ran the same hardware and precision in several
frameworks) and workload; bars by batch size, one colour per framework, each the mean
throughput across seeds with its standard deviation (the tables' estimator: samples per epoch over
the steady epoch time).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter

from mnist_speedup.analysis import placing
from mnist_speedup.report.figure import RC, distinct_colours, plain
from mnist_speedup.spec import frameworks, schema


def draw(summary: pd.DataFrame, options: dict | None = None, labels: dict | None = None):
    opts = {**schema.defaults("figure"), **(options or {})}
    groups = placing.groups(summary) or [sorted(summary.device.unique())]
    workloads = sorted(summary.workload.unique())
    names = sorted(
        {frameworks.named(f) for f in summary.get("framework", pd.Series(dtype=object))}, key=frameworks.order
    )
    words = {n: frameworks.declarations()[n].words if n in frameworks.declarations() else n for n in names}
    colours = dict(zip(names, distinct_colours(opts["palette"], len(names))))
    with sns.axes_style("ticks"), plt.rc_context(RC):
        fig, axes = plt.subplots(
            len(workloads),
            len(groups),
            squeeze=False,
            layout="constrained",
            figsize=(opts["width_in"], max(2.6, opts["height_in"] * 0.75) * len(workloads)),
        )
        for row, workload in enumerate(workloads):
            for col, devices in enumerate(groups):
                ax = axes[row][col]
                runs = summary[(summary.workload == workload) & summary.device.isin(devices)]
                runs = runs.assign(fw=runs.get("framework", pd.Series(dtype=object)).map(frameworks.named))
                sns.barplot(
                    runs,
                    x="batch_size",
                    y="samples_per_s",
                    hue="fw",
                    hue_order=names,
                    palette=colours,
                    errorbar="sd",
                    capsize=0.15,
                    err_kws={"linewidth": 0.8},
                    ax=ax,
                    legend=False,
                )
                hardware = (labels or {}).get(devices[0], devices[0]).split(" (")[-1].split(",")[0].rstrip(")")
                network = runs.workload_words.iloc[0] if "workload_words" in runs and len(runs) else workload
                ax.set_title(plain(f"{network}, {hardware}"), fontsize=8)
                ax.set(xlabel="Batch size", ylabel="Samples/s (mean ± SD)" if col == 0 else "")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[n], label=plain(words[n])) for n in names]
        fig.legend(handles=handles, loc="outside lower center", ncol=len(names), frameon=False)
        if opts.get("title"):
            fig.suptitle(plain(opts["title"]), fontsize=9)
    return fig
