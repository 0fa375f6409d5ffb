"""Every warning of ``checks.warnings``, escaped once."""

from __future__ import annotations


def render(report) -> list[str]:
    if not report.warnings:
        return []
    return ["## Warnings", ""] + [f"- {w}" for w in report.warnings] + [""]
