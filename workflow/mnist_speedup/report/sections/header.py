"""What was run: model, epochs, seeds, batch sizes, machines, the timed loop."""

from __future__ import annotations

import pandas as pd

from mnist_speedup.report.format import esc
from mnist_speedup.spec import frameworks


def _framework_words(name: str) -> str:
    fw = frameworks.declarations().get(name)
    return esc(fw.built_with if fw else name)


def _loops(s: pd.DataFrame) -> list[str]:
    """The loop timed: one sentence where every run timed the same loop, else one line per loop with where it ran."""
    loops = s.groupby("loop", sort=False)
    if loops.ngroups == 1:
        return [f"Loop timed: {esc(s.loop.iloc[0])}.", ""]
    lines = ["Loops timed:", ""]
    for loop, runs in loops:
        cells = ", ".join(
            f"{esc(w)} on {esc(d)} at batch size{'s' if b.nunique() > 1 else ''} "
            f"{', '.join(str(int(x)) for x in sorted(b.unique()))}"
            for (w, d), b in runs.groupby(["workload", "device"], sort=True).batch_size
        )
        lines.append(f"- {esc(loop)} ({cells})")
    return [*lines, ""]


def render(report) -> list[str]:
    s = report.tables.summary
    r = s.iloc[0]
    machines = ", ".join(sorted({f"{esc(h)} ({esc(c)})" for h, c in zip(s.host, s.cpu_model)}))
    kind = "Model" if len(report.workloads) == 1 else "Models"
    used = sorted(set(s.get("framework", pd.Series([frameworks.DEFAULT])).dropna()), key=frameworks.order)
    words = [_framework_words(name) for name in used]
    built = " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"
    nets = "; ".join(f"{esc(words)} (`{esc(label)}`)" for label, words in sorted(report.workloads.items()))
    return [
        f"{kind} ({built}): {nets}; Adam lr "
        f"{esc(report.config.get('learning_rate'))}. **{int(r.epochs)} epochs** ({int(r.warmup_epochs)} warm-up), "
        f"seeds {sorted(int(x) for x in s.seed.unique())}, batch sizes {sorted(int(b) for b in s.batch_size.unique())}, "
        f"{len(s)} run{'s' if len(s) != 1 else ''} on {s.device.nunique()} "
        f"device{'s' if s.device.nunique() != 1 else ''}. Machine: {machines}.",
        "",
        *_loops(s),
        f"Input pipeline: {esc(r.input_pipeline)}. ± is one standard deviation (SD) across seeds everywhere.",
        "",
        *([f"Replication: {esc(report.replication)}.", ""] if report.replication else []),
    ]
