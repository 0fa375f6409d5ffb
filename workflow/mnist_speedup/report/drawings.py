"""Each figure of the registry (:mod:`.outputs`) drawn from the aggregated tables by its own file in
report/figures/."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pandas as pd


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


#: the figures' files (report/figures/), each with its ``draw`` (mnist_speedup/plugins.py; the figure job's
#: digest covers them)
PLUGINS = "figures/*.py"


def draw(entry, d: Drawing):
    """The figure of registry entry ``entry``, drawn by its file's ``draw``."""
    return importlib.import_module(f"{__package__}.figures.{entry.name}").draw(d)
