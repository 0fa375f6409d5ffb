"""The speedup figure, of the first workload listed: (a) throughput against batch size, (b) the speedup over
the baseline with its interval, (c) validation accuracy against timed training time."""

from __future__ import annotations

from mnist_speedup.report import figure

FIGURE = {"order": 1, "caption": "figure", "alt": "speedup figure"}


def draw(d):
    main = d.main_workload
    return figure.draw(
        d.summary[d.summary.workload == main],
        d.speedup[d.speedup.workload == main],
        d.baseline,
        d.options,
        d.curves[d.curves.workload == main],
        d.target,
        d.labels,
    )
