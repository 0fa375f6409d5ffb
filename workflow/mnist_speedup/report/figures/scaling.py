"""With several workloads: the speedup and the achieved rate against the FLOPs per training step."""

from __future__ import annotations

import json

from mnist_speedup.report import scaling_figure

FIGURE = {"order": 3, "caption": "scaling", "alt": "scaling", "min_workloads": 2}


def draw(d):
    types = {w: json.loads(spec)["type"] for w, spec in zip(d.summary.workload, d.summary.workload_spec)}
    return scaling_figure.draw(d.speedup, d.baseline, types, d.options, d.labels)
