"""The drift check: did the machine change speed over the run?"""

from __future__ import annotations

import math

import pandas as pd

from mnist_speedup.analysis import checks
from mnist_speedup.report.format import num, table, workload_column


def _change(v, lo, hi, why="needs ≥ 3 runs") -> str:
    return f"n/a ({why})" if not math.isfinite(v) else f"{v:+.1%} [{lo:+.1%}, {hi:+.1%}]"


def _probed(report, d: pd.DataFrame) -> list[bool]:
    """Whether each row's runs probed the device rate (config ``probe_each_run``)."""
    s = report.tables.summary
    return [
        s[(s.workload == w) & (s.batch_size == b) & (s.device == dev)].probe_flops_per_s.notna().any()
        for w, b, dev in zip(d.workload, d.batch_size, d.device)
    ]


def render(report) -> list[str]:
    d = report.tables.drift
    rows = pd.DataFrame(
        {
            **workload_column(report, d),
            "batch size": d.batch_size,
            "device": d.device.map(report.names),
            "runs": d.n,
            "span (min)": (d.span_s / 60).map(lambda v: num(v, "{:.1f}")),
            "epoch-time change over the run (95% CI)": [
                _change(*v) for v in zip(d.epoch_time_drift, d.epoch_time_drift_ci_low, d.epoch_time_drift_ci_high)
            ],
            "device-rate change (95% CI)": [
                _change(*v, why="needs ≥ 3 runs" if probed else "not probed in its runs")
                for *v, probed in zip(
                    d.device_rate_drift, d.device_rate_drift_ci_low, d.device_rate_drift_ci_high, _probed(report, d)
                )
            ],
        }
    )
    return [
        "## Drift check",
        "",
        "Runs are ordered in randomised complete blocks (one block per workload, batch size and seed, every "
        "device once, in a shuffled order). Per device and batch size, the epoch time is regressed on the run's "
        "start time; the change over the run is warned about above the larger of "
        f"{checks.MIN_DRIFT_WARN:.0%} and the seeds' CV. The device rate is the matrix-multiply probe "
        "each run takes before its epochs (none where the config set probe_each_run: false).",
        "",
        table(rows),
        "",
    ]
