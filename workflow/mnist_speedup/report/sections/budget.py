"""The runs a time budget cut (config ``time_budget_s``): which cells lack seeds, and why."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.measure.budget import SAFETY
from mnist_speedup.report.format import esc, num, table


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def render(report) -> list[str]:
    cut = report.tables.cut
    if cut.empty:
        return []
    budget = cut.budget_s.iloc[0]
    cells = cut.groupby(["workload", "batch_size", "device"], sort=True).seed
    rows = pd.DataFrame(
        [
            {
                "workload": w,
                "batch size": b,
                "device": d,
                "seeds cut": ", ".join(str(s) for s in sorted(seeds)),
                "estimated run (s)": num(
                    cut[(cut.workload == w) & (cut.batch_size == b) & (cut.device == d)].estimate_s.max(), "{:.0f}"
                ),
            }
            for (w, b, d), seeds in cells
        ]
    )
    bases = sorted(set(cut.basis))
    return [
        "## Cut by the time budget",
        "",
        f"The time budget of {num(budget, '{:g}')} s cut {_runs(len(cut))} in {len(rows)} "
        f"{'cell' if len(rows) == 1 else 'cells'}: none of them started, because the time left was shorter than "
        "the run's estimated duration. The tables below hold only the runs that finished, so these cells have "
        "fewer seeds than the configuration asks for, or none. The next invocation runs them. "
        f"What the estimates came from: {'; '.join(esc(b) for b in bases)} (each longest run times {SAFETY:g}).",
        "",
        table(rows),
        "",
    ]
