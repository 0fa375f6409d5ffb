"""With several frameworks: the frameworks side by side on each hardware."""

from __future__ import annotations

from mnist_speedup.report import framework_figure

FIGURE = {"order": 4, "caption": "frameworks", "alt": "frameworks side by side", "min_frameworks": 2}


def draw(d):
    return framework_figure.draw(d.summary, d.options, d.labels)
