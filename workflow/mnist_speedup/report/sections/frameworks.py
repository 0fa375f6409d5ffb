"""Frameworks on the same hardware: every pair, with its interval and parity; and each framework's own
speedup over its device on the baseline's hardware: the aggregation's framework_pairs and within_framework
tables (analysis/frameworks.py), rendered."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.report.format import ci, ci_name, table, times
from mnist_speedup.spec import frameworks


def _words(name: str) -> str:
    fw = frameworks.declarations().get(name)
    return fw.words if fw else name


def _table(report, pairs: pd.DataFrame, pair_words) -> str:
    several = pairs.workload.nunique() > 1
    return table(
        pd.DataFrame(
            {
                **({"workload": pairs.workload.map(lambda w: report.workloads.get(w, w))} if several else {}),
                "batch size": pairs.batch_size,
                **pair_words,
                "devices": [f"{report.names[b]} over {report.names[a]}" for a, b in zip(pairs.first, pairs.second)],
                "speedup": pairs.speedup.map(times),
                ci_name(pairs.level): [ci(lo, hi, note) for lo, hi, note in zip(pairs.low, pairs.high, pairs.note)],
                "interval method": pairs.method,
                "parity": [f"{v} ({r})" for v, r in zip(pairs.parity, pairs.parity_reason)],
            }
        )
    )


def render(report) -> list[str]:
    pairs, within = report.tables.pairs, report.tables.within  # analysis/frameworks.py, through the tables
    out = []
    if not within.empty:
        out += [
            "## Speedup within each framework",
            "",
            "Each framework's devices against that framework's own device on the baseline's hardware (a GPU in "
            "one framework against the same machine's CPU in the same framework), with the speedup's own interval "
            "(paired where both ran in the same blocks) and convergence parity: the answer a user of that framework "
            "gets, with no framework difference in it.",
            "",
            _table(report, within, {"framework": within.first_framework.map(_words)}),
            "",
        ]
    if not pairs.empty:
        words = [f"{_words(b)} over {_words(a)}" for a, b in zip(pairs.first_framework, pairs.second_framework)]
        out += [
            "## Frameworks on the same hardware",
            "",
            "Each pair of frameworks that ran on the same hardware at the same precision: how many times as fast the "
            "second trained per epoch as the first, with the speedup's own interval (paired where both ran in the "
            "same blocks), and whether the second trained as well as the first (convergence parity). The difference "
            "is the frameworks' alone: the same network, initialisation, optimizer settings, data and batches.",
            "",
            _table(report, pairs, {"pair": words}),
            "",
        ]
    return out
