"""Where runs stand beside each other, without a statistic: the devices that ran the same hardware, and
each run's start on its machine's clock. The analysis and the figures both read it."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.spec import frameworks

#: what makes two devices the same hardware
HARDWARE = ("machine_key", "device_type", "threads", "gpu_index")


def groups(summary: pd.DataFrame) -> list[list[str]]:
    """The devices of each hardware and precision that ran in two or more frameworks, the article's
    framework first."""
    first = summary.drop_duplicates("device").assign(
        fw=lambda d: d.get("framework", pd.Series(dtype=object)).map(frameworks.named)
    )
    keys = [k for k in (*HARDWARE, "precision") if k in first]
    out = []
    for _, rows in first.groupby(keys, dropna=False, sort=True):
        if rows.fw.nunique() > 1:
            out.append([d for _, d in sorted(zip(rows.fw.map(frameworks.order), rows.device))])
    return out


def start_seconds(summary: pd.DataFrame) -> pd.Series:
    """Seconds of each run's start since the first run of its machine."""
    started = pd.to_datetime(summary.started_at, utc=True, format="ISO8601")
    first = started.groupby(summary.machine_key).transform("min")
    return (started - first).dt.total_seconds()
