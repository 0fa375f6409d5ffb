"""Each figure of the registry (:mod:`.outputs`) drawn from the aggregated
tables: one function per entry, named by the entry's ``draw``."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from mnist_speedup.report import figure, scaling_figure


@dataclass(frozen=True)
class Drawing:
    """What every figure is drawn from (the aggregated tables and the settings)."""

    summary: pd.DataFrame
    speedup: pd.DataFrame
    curves: pd.DataFrame
    baseline: str
    options: dict
    target: float
    labels: dict
    main_workload: str


def speedup(d: Drawing):
    main = d.main_workload  # the speedup figure shows one workload (the first listed)
    return figure.draw(
        d.summary[d.summary.workload == main],
        d.speedup[d.speedup.workload == main],
        d.baseline,
        d.options,
        d.curves[d.curves.workload == main],
        d.target,
        d.labels,
    )


def timeline(d: Drawing):
    return figure.draw_timeline(d.summary, d.baseline, d.options, d.labels)


def scaling(d: Drawing):
    types = {w: json.loads(spec)["type"] for w, spec in zip(d.summary.workload, d.summary.workload_spec)}
    return scaling_figure.draw(d.speedup, d.baseline, types, d.options, d.labels)


def frameworks(d: Drawing):
    from mnist_speedup.report import framework_figure

    return framework_figure.draw(d.summary, d.options, d.labels)


#: the drawing functions by the name a registry entry gives
BY_NAME = {f.__name__: f for f in (speedup, timeline, scaling, frameworks)}


def draw(entry, d: Drawing):
    """The figure of registry entry ``entry``."""
    return BY_NAME[entry.draw](d)
