"""Twins: each device's speedup over its float32 twin (the plain float32 device on the same hardware in
the same framework and mode), over its TensorFlow twin (the TensorFlow device on the same hardware at the same
precision) and over its mode twin (a PyTorch device in another mode than eager: the eager device on the same
hardware at the same precision), per workload and batch size, with the speedup's own interval (paired where the
runs share blocks) and the convergence parity of the device against its twin. Computed here, once, for the
report's numerics and modes sections (report/sections/numerics.py and modes.py render this table)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.analysis import compare, parity, placing
from mnist_speedup.spec import frameworks
from mnist_speedup.spec.run import SETTING

#: the kinds of twin, as the table's ``kind`` column names them
#: ``precision``: the float32 twin; ``framework``: the TensorFlow twin; ``mode``: the eager twin
FLOAT32, TENSORFLOW, MODE = "precision", "framework", "mode"
COLUMNS = ["device", "kind", "twin", *SETTING, "speedup", "low", "high", "method", "note", "parity", "parity_reason"]


def _framework(row) -> str:
    return frameworks.named(row.get("framework"))


def _plain(row) -> bool:
    """float32, with the framework's own compiler setting (no XLA for TensorFlow; JAX always compiles)."""
    fw = frameworks.declarations().get(_framework(row))
    default_jit = fw.always_compiles if fw else False
    return row.precision == "float32" and bool(row.jit_compile) == default_jit


def _mode(row):
    """The device's mode, or None (a framework without modes, or a table from before modes)."""
    mode = row.get("mode")
    return None if mode is None or pd.isna(mode) else mode


def _same(row, me, keys) -> bool:
    return all(pd.isna(row[k]) and pd.isna(me[k]) or row[k] == me[k] for k in keys if k in row.index)


def twin_of(summary: pd.DataFrame, device: str) -> str | None:
    """The plain float32 device on the same hardware in the same framework, if the config has one."""
    first = summary.drop_duplicates("device").set_index("device")
    me = first.loc[device]
    if _plain(me):
        return None
    for other, row in first.iterrows():
        if (
            other != device
            and _same(row, me, placing.HARDWARE)
            and _framework(row) == _framework(me)
            and _mode(row) == _mode(me)
            and _plain(row)
        ):
            return other
    return None


def mode_twin_of(summary: pd.DataFrame, device: str) -> str | None:
    """For a device in another mode than its framework's first (PyTorch: eager): the device in that first mode
    on the same hardware at the same precision, if the config has one."""
    first = summary.drop_duplicates("device").set_index("device")
    me = first.loc[device]
    declared = frameworks.declarations().get(_framework(me))
    eager = declared.default_mode if declared else None
    if eager is None or _mode(me) in (None, eager):
        return None
    for other, row in first.iterrows():
        if (
            other != device
            and _same(row, me, (*placing.HARDWARE, "precision"))
            and _framework(row) == _framework(me)
            and _mode(row) == eager
        ):
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


def _over(summary: pd.DataFrame, device: str, kind: str, twin: str, target: float, margin: float) -> list[list]:
    rows = []
    for (workload, bs), at in summary.groupby(SETTING, sort=True):
        base, runs = at[at.device == twin], at[at.device == device]
        r = compare.compare(base, runs, "steady_epoch_mean_s")
        verdict = parity.verdict(base, runs, target, margin) if len(base) else ("", "")
        rows.append([device, kind, twin, workload, bs, r.estimate, r.low, r.high, r.method_words, r.reason, *verdict])
    return rows


def table(summary: pd.DataFrame, target: float, margin: float) -> pd.DataFrame:
    """One row per device with a twin, kind of twin, workload and batch size (none without a twin), with the
    device's convergence parity against its twin at ``target`` within ``margin``."""
    if "precision" not in summary:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for device in sorted(summary.device.unique()):
        for kind, find in ((FLOAT32, twin_of), (TENSORFLOW, framework_twin_of), (MODE, mode_twin_of)):
            twin = find(summary, device)
            if twin is not None:
                rows += _over(summary, device, kind, twin, target, margin)
    return pd.DataFrame(rows, columns=COLUMNS)
