"""Coverage of the speedup's two intervals on simulated paired timings with a drift shared within blocks.

    python benchmarks/bootstrap_coverage.py [TRIALS]

Each trial: n blocks; in block i both devices' epoch times share a drift u_i ~ N(0, 0.10) on the log scale,
and each has its own noise (SD 0.05 for the baseline, 0.10 for the device) around 10 s and 1 s; the true
ratio of means is known. Prints, for 10 and 20 blocks, how often Fieller's paired 95% interval
(analysis/stats.py) and the paired BCa bootstrap (analysis/bootstrap.py) cover it, with a 95% binomial
interval for each coverage. docs/method.md quotes the result.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from mnist_speedup.analysis import bootstrap, stats  # noqa: E402


def _bca(b, d) -> tuple[float, float]:
    found = sps.bootstrap(
        (b, d),
        bootstrap._ratio,
        paired=True,
        vectorized=True,
        n_resamples=bootstrap.RESAMPLES,
        method="BCa",
        rng=np.random.default_rng(bootstrap.SEED),
    )
    return found.confidence_interval


def coverage(n_blocks: int, trials: int, seed: int = 1) -> dict[str, float]:
    rng = np.random.default_rng(seed + n_blocks)
    sigma_b, sigma_d, sigma_u = 0.05, 0.10, 0.10
    true = 10.0 * math.exp(sigma_b**2 / 2) / math.exp(sigma_d**2 / 2)
    hits = {"Fieller (paired)": 0, "BCa bootstrap (paired blocks)": 0}
    for _ in range(trials):
        u = rng.normal(0, sigma_u, n_blocks)
        b = np.exp(math.log(10.0) + u + rng.normal(0, sigma_b, n_blocks))
        d = np.exp(u + rng.normal(0, sigma_d, n_blocks))
        f = stats.paired_fieller_ratio(b, d)
        hits["Fieller (paired)"] += f.low <= true <= f.high
        low, high = _bca(b, d)
        hits["BCa bootstrap (paired blocks)"] += low <= true <= high
    return {name: k / trials for name, k in hits.items()}


def main(trials: int) -> None:
    print(f"coverage of a nominal 95% interval, {trials} simulated experiments each")
    for n in (10, 20):
        for name, p in coverage(n, trials).items():
            half = 1.96 * math.sqrt(p * (1 - p) / trials)
            print(f"  {n} blocks  {name:<32} {p:.3f}  [{p - half:.3f}, {p + half:.3f}]")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
