"""The measurement design: randomised complete blocks, as job priorities.

A block is one (seed, workload, batch size), seed-major so that a new seed
appends its blocks after the existing ones; every device runs once per
block, in an order shuffled per block with a fixed seed (the same on every
call). Snakemake runs the ready job of highest priority first, and with
one ``timing_slot`` jobs run one at a time in exactly this order; the
calibrations come before every training run.
"""

from __future__ import annotations

import random


def block_order(devices, batch_sizes, seeds, workloads=("mlp",)) -> dict[tuple[str, str, int, int], int]:
    """{(workload, device, batch size, seed): position in the run order}."""
    order = {}
    for seed in seeds:
        for workload in sorted(workloads):
            for batch_size in batch_sizes:
                shuffled = sorted(devices)
                random.Random(f"block {seed} {workload} {batch_size}").shuffle(shuffled)
                for device in shuffled:
                    order[(workload, device, batch_size, seed)] = len(order)
    return order


class Priorities:
    """Job priorities that realise :func:`block_order`: the earlier a run,
    the higher its priority; calibrations above every run."""

    def __init__(self, devices, batch_sizes, seeds, workloads=("mlp",)):
        self.devices, self.workloads = sorted(devices), sorted(workloads)
        self.order = block_order(self.devices, batch_sizes, seeds, self.workloads)
        self.calibration_top = 2 * len(self.order) + len(self.devices) * len(self.workloads) + 10
        #: the downloads and the split come first of all: an offline machine learns that it is offline
        #: before it spends a minute calibrating, not after
        self.data = self.calibration_top + 1

    def train(self, workload: str, device: str, batch_size: int, seed: int) -> int:
        key = (workload, device, int(batch_size), int(seed))
        return 2 * len(self.order) - self.order.get(key, len(self.order))

    def calibration(self, workload: str, device: str) -> int:
        position = self.workloads.index(workload) * len(self.devices) + self.devices.index(device)
        return self.calibration_top - position
