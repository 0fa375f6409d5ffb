"""How the report says a configured fraction (with the digits it needs), an interval's level, and a list that
a line can hold: words only, which the report and the figures may import (they compute no statistic)."""

from __future__ import annotations


def percent(fraction: float) -> str:
    """``95%``, ``99.9%``, ``98.75%``: a fraction as a percentage with as
    many decimals as it needs (up to 4), never rounded to another value."""
    for digits in range(5):
        text = f"{fraction * 100:.{digits}f}"
        if abs(float(text) - fraction * 100) < 1e-9:
            return f"{text}%"
    return f"{fraction * 100:.4f}%"


#: the confidence level of every interval unless replication widens it
CI_LEVEL = 0.95


def ci_name(level: float) -> str:
    """``95% CI``, ``97% CI``: derived from the level, never parsed from text."""
    return f"{percent(level)} CI"


#: the most items a warning names before it counts the rest
NAMED = 5


def listed(items, limit: int = NAMED) -> str:
    """``a, b, c`` or, past ``limit`` items, ``a, b, c, d, e and 7 more``: a list a line can hold."""
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown} and {len(items) - limit:,} more"
