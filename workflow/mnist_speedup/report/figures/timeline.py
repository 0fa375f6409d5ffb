"""Each run's epoch times in the order the runs ran (drift and the randomised blocks made visible)."""

from __future__ import annotations

from mnist_speedup.report import figure

FIGURE = {"order": 2, "caption": "timeline", "alt": "timeline"}


def draw(d):
    return figure.draw_timeline(d.summary, d.baseline, d.options, d.labels)
