"""The measurement design: randomised complete blocks, as job priorities.

A block is one (seed, batch size), seed-major so that a new seed appends
its blocks after the existing ones; every device runs once per block, in
an order shuffled per block with a fixed seed (the same on every call).
Snakemake runs the ready job of highest priority first, and with one
``timing_slot`` jobs run one at a time in exactly this order; the
calibrations come before every training run.
"""

from __future__ import annotations

import random


def block_order(devices, batch_sizes, seeds) -> dict[tuple[str, int, int], int]:
    """{(device, batch size, seed): position in the run order}."""
    order = {}
    for seed in seeds:
        for batch_size in batch_sizes:
            shuffled = sorted(devices)
            random.Random(f"block {seed} {batch_size}").shuffle(shuffled)
            for device in shuffled:
                order[(device, batch_size, seed)] = len(order)
    return order


class Priorities:
    """Job priorities that realise :func:`block_order`: the earlier a run,
    the higher its priority; calibrations above every run."""

    def __init__(self, devices, batch_sizes, seeds):
        self.devices = sorted(devices)
        self.order = block_order(self.devices, batch_sizes, seeds)
        self.calibration_top = 2 * len(self.order) + len(self.devices) + 10

    def train(self, device: str, batch_size: int, seed: int) -> int:
        return 2 * len(self.order) - self.order.get((device, int(batch_size), int(seed)), len(self.order))

    def calibration(self, device: str) -> int:
        return self.calibration_top - self.devices.index(device)
