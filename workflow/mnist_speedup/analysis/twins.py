"""Twins: each device's speedup over its float32 twin (the plain float32 device on the same hardware in
the same framework) and over its TensorFlow twin (the TensorFlow device on the same hardware at the same
precision), per workload and batch size, with the speedup's own interval. Computed here, once, for the
report's numerics section (report/sections/numerics.py renders this table)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.analysis import compare, placing
from mnist_speedup.spec import frameworks
from mnist_speedup.spec.run import SETTING

#: the two kinds of twin, as the table's ``kind`` column names them
#: ``precision``: the float32 twin; ``framework``: the TensorFlow twin
FLOAT32, TENSORFLOW = "precision", "framework"
COLUMNS = ["device", "kind", "twin", *SETTING, "speedup", "low", "high", "note"]


def _framework(row) -> str:
    return frameworks.named(row.get("framework"))


def _plain(row) -> bool:
    """float32, with the framework's own compiler setting (no XLA for TensorFlow; JAX always compiles)."""
    fw = frameworks.declarations().get(_framework(row))
    default_jit = fw.always_compiles if fw else False
    return row.precision == "float32" and bool(row.jit_compile) == default_jit


def _same(row, me, keys) -> bool:
    return all(pd.isna(row[k]) and pd.isna(me[k]) or row[k] == me[k] for k in keys if k in row.index)


def twin_of(summary: pd.DataFrame, device: str) -> str | None:
    """The plain float32 device on the same hardware in the same framework, if the config has one."""
    first = summary.drop_duplicates("device").set_index("device")
    me = first.loc[device]
    if _plain(me):
        return None
    for other, row in first.iterrows():
        if other != device and _same(row, me, placing.HARDWARE) and _framework(row) == _framework(me) and _plain(row):
            return other
    return None


def framework_twin_of(summary: pd.DataFrame, device: str) -> str | None:
    """For a device of another framework than TensorFlow: the TensorFlow device on the same
    hardware at the same precision, if the config has one."""
    first = summary.drop_duplicates("device").set_index("device")
    me = first.loc[device]
    if _framework(me) == frameworks.DEFAULT:
        return None
    for other, row in first.iterrows():
        if (
            other != device
            and _same(row, me, placing.HARDWARE)
            and _framework(row) == frameworks.DEFAULT
            and row.precision == me.precision
        ):
            return other
    return None


def _over(summary: pd.DataFrame, device: str, kind: str, twin: str) -> list[list]:
    rows = []
    for (workload, bs), at in summary.groupby(SETTING, sort=True):
        r = compare.compare(at[at.device == twin], at[at.device == device], "steady_epoch_mean_s")
        rows.append([device, kind, twin, workload, bs, r.estimate, r.low, r.high, r.reason])
    return rows


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per device with a twin, kind of twin, workload and batch size (none without a twin)."""
    if "precision" not in summary:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for device in sorted(summary.device.unique()):
        for kind, find in ((FLOAT32, twin_of), (TENSORFLOW, framework_twin_of)):
            twin = find(summary, device)
            if twin is not None:
                rows += _over(summary, device, kind, twin)
    return pd.DataFrame(rows, columns=COLUMNS)
