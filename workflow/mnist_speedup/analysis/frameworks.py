"""Frameworks side by side: every pair of frameworks that ran on the same hardware at the same
precision, compared per workload and batch size with the speedup's own interval (paired where the
two ran in the same blocks), and the convergence parity of the second against the first."""

from __future__ import annotations

import itertools

import pandas as pd

from mnist_speedup.analysis import compare, parity, placing
from mnist_speedup.spec import frameworks
from mnist_speedup.spec.run import SETTING

COLUMNS = [
    *SETTING,
    "first",
    "second",
    "first_framework",
    "second_framework",
    "speedup",
    "low",
    "high",
    "level",
    "method",
    "note",
    "parity",
    "parity_reason",
]


def _framework_of(summary: pd.DataFrame) -> dict[str, str]:
    return dict(zip(summary.device, summary.get("framework", pd.Series(dtype=object)).map(frameworks.named)))


def _rows(summary: pd.DataFrame, a: str, b: str, fw: dict, target: float, margin: float) -> list[list]:
    """Device ``b`` against device ``a`` at each workload and batch size both ran."""
    rows = []
    for (workload, bs), at in summary.groupby(SETTING, sort=True):
        first, second = at[at.device == a], at[at.device == b]
        if first.empty or second.empty:
            continue
        r = compare.compare(first, second, "steady_epoch_mean_s")
        verdict, why = parity.verdict(first, second, target, margin)
        rows.append(
            [
                workload,
                bs,
                a,
                b,
                fw[a],
                fw[b],
                r.estimate,
                r.low,
                r.high,
                r.level,
                r.method_words,
                r.reason,
                verdict,
                why,
            ]
        )
    return rows


def pairs(summary: pd.DataFrame, target: float, margin: float) -> pd.DataFrame:
    """One row per pair of devices in a group, workload and batch size: how many times as fast the second
    trained as the first per epoch (mean(T_first) / mean(T_second)), its interval, and parity."""
    rows, fw = [], _framework_of(summary)
    for devices in placing.groups(summary):
        for a, b in itertools.combinations(devices, 2):
            if fw[a] != fw[b]:
                rows += _rows(summary, a, b, fw, target, margin)
    return pd.DataFrame(rows, columns=COLUMNS)


def _hardware(row: pd.Series, keys: list[str]) -> tuple:
    return tuple(None if pd.isna(row[k]) else row[k] for k in keys)


def within(summary: pd.DataFrame, baseline: str, target: float, margin: float) -> pd.DataFrame:
    """Each framework's own speedup: every other device of a framework against that framework's device
    on the baseline's hardware at the baseline's precision, where it has one (a GPU in JAX against the
    same host's CPU in JAX, and in PyTorch against its CPU in PyTorch). Same columns as :func:`pairs`;
    empty where no framework but the baseline's has such a device (the speedup table says it all then)."""
    first = summary.drop_duplicates("device").set_index("device")
    keys = [k for k in (*placing.HARDWARE, "precision") if k in first]
    fw = _framework_of(summary)
    home = _hardware(first.loc[baseline], keys)
    rows = []
    for name in sorted(set(fw.values()), key=frameworks.order):
        own = [d for d in first.index if fw[d] == name]
        bases = [d for d in own if _hardware(first.loc[d], keys) == home]
        for device in own if bases else ():
            if device != bases[0]:
                rows += _rows(summary, bases[0], device, fw, target, margin)
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table if (table.first_framework != fw[baseline]).any() else table.iloc[:0]
