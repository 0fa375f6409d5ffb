"""PyTorch's modes on the same hardware: each device in another mode than eager against its eager twin (same
hardware, framework and precision), per workload and batch size: the speedup with its interval (paired where
the runs share blocks) and whether it trains as well as eager (analysis/twins.py computes it all)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.report.format import ci, table, times


def render(report) -> list[str]:
    twins = report.tables.twins
    if twins.empty or "kind" not in twins:
        return []
    rows = twins[twins.kind == "mode"]  # analysis/twins.py's MODE: the eager twin
    if rows.empty:
        return []
    modes = report.tables.summary.drop_duplicates("device").set_index("device")["mode"]
    shown = [
        {
            "device": report.names[r.device],
            "mode": str(modes.get(r.device)),
            "over": report.names[r.twin],
            "workload": r.workload,
            "batch size": r.batch_size,
            "speedup": f"{times(r.speedup)} {ci(r.low, r.high, r.note if isinstance(r.note, str) else None)}",
            "parity": f"{r.parity} ({r.parity_reason})" if isinstance(r.parity, str) and r.parity else "n/a",
        }
        for r in rows.itertuples()
    ]
    method = next((m for m in rows.method if isinstance(m, str) and m), "")
    return [
        "## PyTorch modes on the same hardware",
        "",
        "The mode is part of a PyTorch device, like its precision: each device in another mode than eager is "
        "compared with its eager twin (the same hardware, framework and precision), so the speedup is the "
        f"mode's alone ({method}), and parity says whether it trains as well as eager.",
        "",
        table(pd.DataFrame(shown)),
        "",
    ]
