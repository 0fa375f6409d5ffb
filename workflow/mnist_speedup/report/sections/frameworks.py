"""Frameworks on the same hardware: every pair, with its interval and parity (analysis/frameworks.py)."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.analysis import frameworks as pairs_of
from mnist_speedup.report.format import ci, ci_name, table, times
from mnist_speedup.spec import frameworks


def _words(name: str) -> str:
    fw = frameworks.declarations().get(name)
    return fw.words if fw else name


def render(report) -> list[str]:
    if "target_reached" not in report.tables.summary:
        return []
    pairs = pairs_of.pairs(report.tables.summary, report.target, report.config.get("parity_margin", 0.005))
    if pairs.empty:
        return []
    several = pairs.workload.nunique() > 1
    rows = pd.DataFrame({
        **({"workload": pairs.workload.map(lambda w: report.workloads.get(w, w))} if several else {}),
        "batch size": pairs.batch_size,
        "pair": [f"{_words(b)} over {_words(a)}" for a, b in zip(pairs.first_framework, pairs.second_framework)],
        "devices": [f"{report.names[b]} over {report.names[a]}" for a, b in zip(pairs.first, pairs.second)],
        "speedup": pairs.speedup.map(times),
        ci_name(pairs.level): [ci(lo, hi, note) for lo, hi, note in zip(pairs.low, pairs.high, pairs.note)],
        "interval method": pairs.method,
        "parity": [f"{v} ({r})" for v, r in zip(pairs.parity, pairs.parity_reason)],
    })  # fmt: skip
    return [
        "## Frameworks on the same hardware",
        "",
        "Each pair of frameworks that ran on the same hardware at the same precision: how many times as fast the "
        "second trained per epoch as the first, with the speedup's own interval (paired where both ran in the same "
        "blocks), and whether the second trained as well as the first (convergence parity). The difference is the "
        "frameworks' alone: the same network, initialisation, optimizer settings, data and batches.",
        "",
        table(rows),
        "",
    ]
