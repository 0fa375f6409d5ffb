"""The headline: one sentence per device and batch size, with its interval."""

from __future__ import annotations

import math

from mnist_speedup.report.format import ci_name, esc, num


def _sentence(r, who: str, base: str, on: str) -> str:
    if getattr(r, "parity", None) == "FAIL":
        return (f"{who} did not train{on} to the same quality as {base} at batch size {r.batch_size} "
                f"({esc(r.parity_reason)}), so no training speedup is quoted for it (per epoch alone it ran "
                f"{num(r.speedup, '{:.2f}')}× as fast).")  # fmt: skip
    n = f"{int(r.n)} and {int(r.baseline_n)} runs" if r.n != r.baseline_n else f"{int(r.n)} seeds each"
    if not (math.isfinite(r.speedup_ci_low) and math.isfinite(r.speedup_ci_high)):
        note = r.speedup_ci_note if isinstance(r.speedup_ci_note, str) else "no interval"
        return (f"{who} ran {num(r.speedup, '{:.2f}')}× as fast as {base} per epoch{on} at batch size {r.batch_size} "
                f"({n}), but with no confidence interval ({esc(note)}).")  # fmt: skip
    ci = f"{ci_name(r.get('ci_level', math.nan))} {r.speedup_ci_low:.2f}-{r.speedup_ci_high:.2f}, {n}"
    if r.speedup_ci_low <= 1 <= r.speedup_ci_high:
        return (f"{who} and {base} cannot be told apart at this number of runs{on} at batch size {r.batch_size} "
                f"(speedup {r.speedup:.2f}×, {ci}).")  # fmt: skip
    pace = f"{r.speedup:.2f}× faster than" if r.speedup > 1 else f"at {r.speedup:.2f}× the speed of"
    return f"{who} trained {pace} {base} per epoch{on} at batch size {r.batch_size} ({ci})."


def sentences(report) -> list[str]:
    sp, names, baseline = report.tables.speedup, report.names, report.baseline
    others = sp[sp.device != baseline]
    if others.empty:
        return [f"Only {esc(names[baseline])} was run, so there is no speedup: this report gives its epoch time, "
                "throughput and time to accuracy, which say how fast this one device trains, not how it compares. "
                "Add a second device to `devices` to compare."]  # fmt: skip
    several = len(report.workloads) > 1
    return [_sentence(r, esc(names[r.device]), esc(names[baseline]),
                      f" on {esc(report.workloads[r.workload])}" if several else "")
            for _, r in others.iterrows()]  # fmt: skip


def render(report) -> list[str]:
    return [f"**{line}**" for line in sentences(report)] + [""]
