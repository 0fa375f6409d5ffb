"""Achieved FLOP/s against each device's calibrated matrix-multiply rate."""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.report.format import gflops, num, table, workload_column


def render(report) -> list[str]:
    sp = report.tables.speedup
    if not sp.fraction_of_calibrated.notna().any():
        return []
    rows = pd.DataFrame(
        {
            **workload_column(report, sp),
            "batch size": sp.batch_size,
            "device": sp.device.map(report.names),
            "achieved": sp.achieved_flops_per_s.map(gflops),
            "calibrated rate (its own framework)": sp.calibrated_flops_per_s.map(gflops),
            "same shapes through NumPy's BLAS": sp.get("numpy_flops_per_s", pd.Series(math.nan, sp.index)).map(gflops),
            "fraction": [
                num(v * 100, "{:.0f}%") + (" ⚠ above the bound" if v > 1 else "") for v in sp.fraction_of_calibrated
            ],
        }
    )
    return [
        "## Efficiency against each device's own limit",
        "",
        "Achieved training FLOP/s (analytic count per step) against the calibrated rate of the same device in its "
        "own framework and "
        "its own precision (bfloat16 products for a bf16 device), at the workload's own shapes (its matrix "
        "products and convolutions). On float32 CPU "
        "devices the same matrix products (MLPs only) through NumPy's BLAS show whether the framework, not the hardware, is the limit: where "
        "NumPy is much faster, the framework is.",
        "",
        table(rows),
        "",
    ]
