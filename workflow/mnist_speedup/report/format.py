"""Formatting for the report: numbers, intervals, tables, escaping.

Values are formatted raw; escaping happens exactly once, where text enters
Markdown: :func:`table` escapes every cell, and prose escapes each value
it interpolates with :func:`esc`.
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from mnist_speedup import words

#: characters no reader should meet unseen: C0 and C1 controls, line and paragraph separators, and the
#: bidirectional formatting characters that reorder what is shown (a right-to-left override spoofs a name)
INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
#: what makes Markdown act: escapes, code, emphasis, links and images, strikethrough, table pipes
_ACTIVE = re.compile(r"([\\`*\[\]~|])")
#: `_` opens or closes emphasis at a word's edge only (inside a word, as in mixed_bfloat16, it is text)
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
#: what GitHub's Markdown turns into a link by itself: a scheme's `://`, a `www.`
_BARE_LINK = re.compile(r"(?i)(?<=[a-z])(:)(?=//)|(?<![a-z0-9])(www)(\.)")
#: what starts a block at the start of a text: a heading, a quote, a list item, a setext line
_LEADING_MARK = re.compile(r"^(\s*)([#>+=-])")
_LEADING_NUMBER = re.compile(r"^(\s*\d+)([.)])")


def _visible(match: re.Match) -> str:
    char = match.group()
    return " " if char in "\n\t" else f"<U+{ord(char):04X}>"


def esc(value, line_start: bool = False) -> str:
    """Text from a record or a config, inert in Markdown (GitHub's flavour) and in HTML: no link, autolink,
    image, emphasis, code, raw HTML or table pipe can come out of it, and an invisible or reordering
    character is shown as ``<U+202E>``; with ``line_start`` (a list item's text, say) no heading, quote or
    list either. tests/test_escaping.py renders it with GitHub's own renderer."""
    text = html.escape(INVISIBLE.sub(_visible, str(value)), quote=False)
    text = _EDGE_UNDERSCORE.sub(r"\\_", _ACTIVE.sub(r"\\\1", text))
    text = _BARE_LINK.sub(lambda m: "\\:" if m.group(1) else f"{m.group(2)}\\.", text)
    if line_start:
        text = _LEADING_NUMBER.sub(r"\1\\\2", _LEADING_MARK.sub(r"\1\\\2", text))
    return text


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
