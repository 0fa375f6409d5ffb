"""Numerics and frameworks: each device's precision and compiler, whether its
hardware does that precision natively, its speedup over its float32 twin
(same hardware and framework) and over its TensorFlow twin (same hardware
and numerics, the other framework), and whether it trains as well as the
baseline (convergence parity)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.report.format import ci, esc, table, times
from mnist_speedup.spec import frameworks


def over_twin(twins: pd.DataFrame, device: str, kind: str, several_workloads: bool) -> str:
    """``2.31× [2.01, 2.60] (batch 500)`` per workload and batch size, from the analysis's twin table
    (analysis/twins.py); "—" without a twin."""
    rows = twins[(twins.device == device) & (twins.kind == kind)]
    out = []
    for r in rows.itertuples():
        where = f"{r.workload}, batch {r.batch_size}" if several_workloads else f"batch {r.batch_size}"
        out.append(
            f"{times(r.speedup)} {ci(r.low, r.high, r.note if isinstance(r.note, str) else None)} ({esc(where)})"
        )
    return "; ".join(out) or "—"


def _native(row) -> str:
    native = row.precision_native if isinstance(row.precision_native, bool) else None
    word = "native" if native else "emulated ⚠" if native is False else "unknown"
    return f"{word}: {esc(row.precision_native_why)}"


def _parity(speedup: pd.DataFrame, device: str, baseline: str) -> str:
    if device == baseline:
        return "baseline"
    if "parity" not in speedup:
        return "n/a"
    rows = speedup[speedup.device == device]
    verdicts = [f"{v} ({esc(r)})" for v, r in zip(rows.parity, rows.parity_reason) if isinstance(v, str) and v]
    return "; ".join(verdicts) or "n/a"


def render(report) -> list[str]:
    s, sp, twins = report.tables.summary, report.tables.speedup, report.tables.twins
    if "precision" not in s:
        return []
    rows = []
    mixed = s.get("framework", pd.Series(dtype=object)).fillna(frameworks.DEFAULT).nunique() > 1
    several = s.workload.nunique() > 1
    for device, runs in s.groupby("device", sort=True):
        row = runs.iloc[0]
        rows.append(
            {
                "device": report.names[device],
                "numerics": esc(row.numerics_words),
                "hardware": _native(row),
                "speedup over its float32 twin": over_twin(twins, device, "precision", several),
                **(
                    {"speedup over its TensorFlow twin": over_twin(twins, device, "framework", several)}
                    if mixed
                    else {}
                ),
                "convergence parity": _parity(sp, device, report.baseline),
            }
        )
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
