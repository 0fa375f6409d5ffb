"""Test accuracy per device and batch size."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.analysis import checks
from mnist_speedup.report.format import table, workload_column


def render(report) -> list[str]:
    s = report.tables.summary
    acc = s.groupby(["workload", "device", "batch_size"]).test_accuracy.agg(["mean", "min", "max", "count"])
    acc = acc.reset_index()
    rows = pd.DataFrame(
        {
            **workload_column(report, acc),
            "device": acc.device.map(report.names),
            "batch size": acc.batch_size,
            "test accuracy (mean)": acc["mean"].map(lambda v: f"{v:.2%}"),
            "min": acc["min"].map(lambda v: f"{v:.2%}"),
            "max": acc["max"].map(lambda v: f"{v:.2%}"),
            "n": acc["count"],
        }
    )
    return [
        "## Test accuracy",
        "",
        "The same model should reach the same accuracy on every device "
        f"(differences above {checks.ACCURACY_TOLERANCE:.0%} per seed are flagged under Warnings).",
        "",
        table(rows),
        "",
    ]
