"""The headline: one sentence per workload, naming its largest speedup and the article's setting,
each with its interval, worded from the aggregation's headline table (the choice and the verdicts are made
there, analysis/headline.py); the per-cell detail is in the speedup tables below."""

from __future__ import annotations

from mnist_speedup.report.format import ci_name, esc, num


def _runs(r) -> str:
    """``3 seeds each``, ``1 seed each``, ``3 and 2 runs``: the counts behind a speedup, in words."""
    n, base = int(r.n), int(r.baseline_n)
    if n != base:
        return f"{n} and {base} runs"
    return f"{n} seed{'s' if n != 1 else ''} each"


def _sentence(r, who: str, base: str) -> str:
    """Row ``r`` of the headline table in words, as its verdict (analysis/headline.py) allows."""
    at = f"at batch size {r.batch_size}"
    if r.verdict == "parity_fail":
        return (
            f"{who} did not train to the same quality as {base} {at} ({esc(r.parity_reason)}), so no training "
            f"speedup is quoted for it (per epoch alone it ran {num(r.speedup, '{:.2f}')}× as fast)."
        )
    n = _runs(r)
    if r.verdict == "no_interval":
        note = r.speedup_ci_note if isinstance(r.speedup_ci_note, str) else "no interval"
        return (
            f"{who} ran {num(r.speedup, '{:.2f}')}× as fast as {base} per epoch {at} ({n}), but with no "
            f"confidence interval ({esc(note)})."
        )
    ci = f"{ci_name(r.ci_level)} {r.speedup_ci_low:.2f}-{r.speedup_ci_high:.2f}, {n}"
    if r.verdict == "indistinct":
        return f"{who} and {base} cannot be told apart at this number of runs {at} (speedup {r.speedup:.2f}×, {ci})."
    pace = f"{r.speedup:.2f}× faster than" if r.verdict == "faster" else f"at {r.speedup:.2f}× the speed of"
    return f"{who} trained {pace} {base} per epoch {at} ({ci})."


def _opening(r, workload: str | None) -> str:
    """``Wide, largest of 4 settings: ``: where a workload's sentence starts."""
    if r.role == "article":
        return "At the article's batch size 500: "
    largest = f"largest of {r.settings} settings: " if r.settings > 1 else ""
    where = (f"{workload}, " if largest else f"{workload}: ") if workload else ""
    prefix = f"{where}{largest}"
    return prefix[:1].upper() + prefix[1:]  # a sentence that opens on a device label keeps the label as written


def sentences(report) -> list[str]:
    """One headline per workload (its best setting, then the article's batch size where that differs), as the
    aggregation chose them (its headline table)."""
    chosen, names, baseline = report.tables.headline, report.names, report.baseline
    if chosen.empty:
        return [
            f"Only {esc(names[baseline])} was run, so there is no speedup: this report gives its epoch time, "
            "throughput and time to accuracy, which say how fast this one device trains, not how it compares. "
            "Add a second device to `devices` to compare."
        ]
    several = len(report.workloads) > 1
    return [
        _opening(r, esc(report.workloads[r.workload]) if several else None)
        + _sentence(r, esc(names[r.device]), esc(names[baseline]))
        for r in chosen.itertuples()
    ]


def render(report) -> list[str]:
    return [part for line in sentences(report) for part in (f"**{line}**", "")]
