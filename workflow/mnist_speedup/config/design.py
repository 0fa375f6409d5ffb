"""The measurement design: randomised complete blocks, in order of importance, as job priorities.

A block is one (seed, workload, batch size); every device runs once per
block, in an order shuffled per block with a fixed seed (the same on every
call). The blocks go in four tiers, so that a run cut short (a time budget,
a lost machine) has measured what matters most:

0. the main workload (the config's first) at the article's batch size (500),
   with the first :data:`FIRST_SEEDS` seeds;
1. the main workload at its other batch sizes, the same seeds;
2. the other workloads, the same seeds;
3. every further seed.

Within a tier, blocks are seed-major (then workload, then batch size), so a
new seed appends its blocks after the existing ones' of its tier. Snakemake
runs the ready job of highest priority first, and with one ``timing_slot``
jobs run one at a time in exactly this order; the downloads come first of
all, then the calibrations, then every training run.
"""

from __future__ import annotations

import random

from mnist_speedup.spec.workloads import ARTICLE_BATCH_SIZE

#: the seeds of the first three tiers: enough for a paired interval of every cell
FIRST_SEEDS = 3


def tier(workload: str, batch_size: int, seed_position: int, main_workload: str) -> int:
    """The tier of a block (see the module's text)."""
    if seed_position >= FIRST_SEEDS:
        return 3
    if workload != main_workload:
        return 2
    return 0 if int(batch_size) == ARTICLE_BATCH_SIZE else 1


def block_order(devices, batch_sizes, seeds, workloads=("mlp",), main_workload=None) -> dict[tuple, int]:
    """{(workload, device, batch size, seed): position in the run order}; ``main_workload``
    defaults to the first of ``workloads`` in sorted order."""
    others = sorted(workloads)
    main = main_workload if main_workload is not None else others[0]
    ranked = [main, *(w for w in others if w != main)]
    blocks = sorted(
        ((s, w, b) for s in seeds for w in ranked for b in batch_sizes),
        key=lambda blk: (
            tier(blk[1], blk[2], list(seeds).index(blk[0]), main),
            list(seeds).index(blk[0]),
            ranked.index(blk[1]),
            list(batch_sizes).index(blk[2]),
        ),
    )
    order = {}
    for seed, workload, batch_size in blocks:
        shuffled = sorted(devices)
        random.Random(f"block {seed} {workload} {batch_size}").shuffle(shuffled)
        for device in shuffled:
            order[(workload, device, batch_size, seed)] = len(order)
    return order


class Priorities:
    """Job priorities that realise :func:`block_order`: the earlier a run,
    the higher its priority; calibrations above every run."""

    def __init__(self, devices, batch_sizes, seeds, workloads=("mlp",), main_workload=None):
        self.devices, self.workloads = sorted(devices), sorted(workloads)
        self.order = block_order(self.devices, batch_sizes, seeds, self.workloads, main_workload)
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
