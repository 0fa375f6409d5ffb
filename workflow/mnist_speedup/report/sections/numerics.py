"""Numerics and frameworks: each device's precision and compiler, whether its
hardware does that precision natively, its speedup over its float32 twin
(same hardware and framework) and over its TensorFlow twin (same hardware
and numerics, the other framework), and whether it trains as well as the
baseline (convergence parity)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.analysis import compare
from mnist_speedup.report.format import ci, esc, table, times
from mnist_speedup.spec import devices, frameworks, precisions
from mnist_speedup.spec.run import SETTING

#: what makes two devices twins: the same hardware, other numerics
HARDWARE = ("machine_key", "device_type", "threads", "gpu_index")


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
        if other != device and _same(row, me, HARDWARE) and _framework(row) == _framework(me) and _plain(row):
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
        if (other != device and _same(row, me, HARDWARE) and _framework(row) == frameworks.DEFAULT
                and row.precision == me.precision):  # fmt: skip
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
    mixed = s.get("framework", pd.Series(dtype=object)).fillna(frameworks.DEFAULT).nunique() > 1
    for device, runs in s.groupby("device", sort=True):
        row = runs.iloc[0]
        twin, tf_twin = twin_of(s, device), framework_twin_of(s, device)
        rows.append({
            "device": report.names[device],
            "numerics": esc(precisions.words(devices.spec_of_row(row))),
            "hardware": _native(device, row, report.environments.get(device)),
            "speedup over its float32 twin": "; ".join(over_twin(s, device, twin)) if twin else "—",
            **({"speedup over its TensorFlow twin": "; ".join(over_twin(s, device, tf_twin)) if tf_twin else "—"}
               if mixed else {}),
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
        f"{report.config.get('parity_margin', 0.005) * 100:.2f} points) with the baseline's."
        + (
            " The framework is part of the device: a TensorFlow twin is the TensorFlow device on the same hardware "
            "at the same precision, and the speedup over it is the framework's alone."
            if mixed
            else ""
        ),
        "",
        table(pd.DataFrame(rows)),
        "",
        *[f"- {esc(d)} computes in a precision its hardware emulates: expect it slower." for d in warned],
        "",
    ]
