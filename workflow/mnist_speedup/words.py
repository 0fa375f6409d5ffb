"""How the report says a configured fraction: with the digits it needs."""

from __future__ import annotations


def percent(fraction: float) -> str:
    """``95%``, ``99.9%``, ``98.75%``: a fraction as a percentage with as
    many decimals as it needs (up to 4), never rounded to another value."""
    for digits in range(5):
        text = f"{fraction * 100:.{digits}f}"
        if abs(float(text) - fraction * 100) < 1e-9:
            return f"{text}%"
    return f"{fraction * 100:.4f}%"
