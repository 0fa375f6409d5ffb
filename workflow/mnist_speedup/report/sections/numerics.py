"""Numerics: each device's precision and compiler, whether its hardware does
that precision natively, its speedup over its float32 twin, and whether it
trains as well as the baseline (convergence parity)."""

from __future__ import annotations

import pandas as pd

from ... import compare, devices, numerics
from ...run import SETTING
from ..format import ci, esc, table, times

#: what makes two devices twins: the same hardware, other numerics
HARDWARE = ("machine_key", "device_type", "threads", "gpu_index")


def _plain(row) -> bool:
    return row.precision == "float32" and not bool(row.jit_compile)


def twin_of(summary: pd.DataFrame, device: str) -> str | None:
    """The plain float32, no-XLA device on the same hardware, if the config has one."""
    first = summary.drop_duplicates("device").set_index("device")
    me = first.loc[device]
    if _plain(me):
        return None
    for other, row in first.iterrows():
        same = all(pd.isna(row[k]) and pd.isna(me[k]) or row[k] == me[k] for k in HARDWARE if k in first)
        if other != device and same and _plain(row):
            return other
    return None


def over_twin(summary: pd.DataFrame, device: str, twin: str) -> list[str]:
    """``2.31× [2.01, 2.60] (mlp, batch 500)`` per workload and batch size."""
    out = []
    for (workload, bs), at in summary.groupby(SETTING, sort=True):
        r = compare.compare(at[at.device == twin], at[at.device == device], "steady_epoch_mean_s")
        where = f"batch {bs}" if summary.workload.nunique() == 1 else f"{workload}, batch {bs}"
        out.append(f"{times(r.estimate)} {ci(r.low, r.high, r.reason)} ({esc(where)})")
    return out


def _native(device: str, row, env: dict) -> str:
    native, why = devices.of(devices.spec_of_row(row)).native_precision(row.precision, env or {})
    word = "native" if native else "emulated ⚠" if native is False else "unknown"
    return f"{word}: {esc(why)}"


def _parity(speedup: pd.DataFrame, device: str, baseline: str) -> str:
    if device == baseline:
        return "baseline"
    if "parity" not in speedup:
        return "n/a"
    rows = speedup[speedup.device == device]
    verdicts = [f"{v} ({esc(r)})" for v, r in zip(rows.parity, rows.parity_reason) if isinstance(v, str) and v]
    return "; ".join(verdicts) or "n/a"


def render(report) -> list[str]:
    s, sp = report.tables.summary, report.tables.speedup
    if "precision" not in s:
        return []
    rows = []
    for device, runs in s.groupby("device", sort=True):
        row = runs.iloc[0]
        twin = twin_of(s, device)
        rows.append({
            "device": report.names[device],
            "numerics": esc(numerics.words(devices.spec_of_row(row))),
            "hardware": _native(device, row, report.environments.get(device)),
            "speedup over its float32 twin": "; ".join(over_twin(s, device, twin)) if twin else "—",
            "convergence parity": _parity(sp, device, report.baseline),
        })  # fmt: skip
    warned = [r["device"] for r in rows if "emulated" in r["hardware"]]
    return [
        "## Numerics",
        "",
        "Mixed precision: float32 weights and optimizer state, the products in the low precision, softmax and "
        "loss in float32; float16 with dynamic loss scaling. A faster setting counts only if it trains as well: "
        "convergence parity compares epochs to the target (one-sided Welch t-test at 5%; a run that misses "
        "counts as never reaching it) and the final validation accuracy (within "
        f"{report.config.get('parity_margin', 0.005) * 100:.2f} points) with the baseline's.",
        "",
        table(pd.DataFrame(rows)),
        "",
        *[f"- {esc(d)} computes in a precision its hardware emulates: expect it slower." for d in warned],
        "",
    ]
