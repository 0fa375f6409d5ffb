"""Formatting for the report: numbers, intervals, tables, escaping.

Values are formatted raw; escaping happens exactly once, where text enters
Markdown: :func:`table` escapes every cell, and prose escapes each value
it interpolates with :func:`esc`.
"""

from __future__ import annotations

import html
import math

import pandas as pd

from mnist_speedup import words


def esc(value) -> str:
    """Text safe in a Markdown table cell and in HTML."""
    return html.escape(str(value), quote=False).replace("|", "\\|").replace("\n", " ")


def code_block(text: str) -> str:
    """Text for a fenced code block: Markdown shows it verbatim (no HTML is
    interpreted there); only a fence inside it could end the block."""
    return text.rstrip().replace("`" * 3, "'" * 3)


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def num(x, fmt="{:.3g}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a" if x is None or math.isnan(x) else ("∞" if x > 0 else "-∞")
    return fmt.format(x)


def ci(low, high, note=None) -> str:
    """``[low, high]``, or ``n/a (why)`` where there is no interval."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return f"n/a ({note})" if isinstance(note, str) and note else "n/a"
    return f"[{num(low, '{:.2f}')}, {num(high, '{:.2f}')}]"


def dash_ci(low, high, note=None) -> str:
    """An interval for prose: ``0.61-0.79``."""
    return ci(low, high, note).strip("[]").replace(", ", "-")


def pct(v) -> str:
    return f"{v:.0%}" if finite(v) else "n/a"


def share(v) -> str:
    """A measured share; a negative one is measurement noise around zero."""
    if finite(v) and v < 0.005:
        return "≈0% (within noise)" if v < 0 else "≈0%"
    return pct(v)


def mib(v) -> str:
    return num(v / 2**20, "{:,.0f} MiB") if finite(v) else "n/a"


def gflops(v) -> str:
    return num(v / 1e9, "{:.1f} GFLOP/s")


def times(v) -> str:
    return num(v, "{:.2f}×")


def mean_sd(means, sds, fmt="{:.3f}") -> list[str]:
    return [f"{num(m, fmt)} ± {num(s, fmt)}" for m, s in zip(means, sds)]


def ci_name(levels) -> str:
    """``95% CI``, or the level the intervals were computed at (``97% CI`` under
    replication): from a table's ``ci_level`` column (or one level), never parsed from text."""
    values = [v for v in (levels if hasattr(levels, "__iter__") else [levels]) if v == v]  # NaN: no interval
    return words.ci_name(max(values) if values else words.CI_LEVEL)


def workload_column(report, df: pd.DataFrame) -> dict:
    """A first ``workload`` column (in words) where the report holds several workloads."""
    return {"workload": df.workload.map(report.workloads).map(esc)} if len(report.workloads) > 1 else {}


def table(df: pd.DataFrame) -> str:
    """A Markdown table; every header and cell escaped here, once."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(esc(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(esc(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def _says_nothing(value) -> bool:
    return str(value).startswith("n/a") or str(value) in ("—", "")


def without_empty(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``df`` less the columns that say nothing on any row (every cell n/a or a dash), and their names."""
    empty = [c for c in df.columns if len(df) and all(_says_nothing(v) for v in df[c])]
    return df.drop(columns=empty), empty


def dropped_note(columns: list[str], why: str = "") -> list[str]:
    """A sentence naming the columns left out of a table, and why (empty where none were)."""
    if not columns:
        return []
    named = ", ".join(f"“{esc(c)}”" for c in columns)
    return [f"Left out of the tables above, empty on every row: {named}.{' ' + why if why else ''}", ""]
