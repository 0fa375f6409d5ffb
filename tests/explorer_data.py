"""Tables shaped as the aggregation writes them, for the explorer's tests: any number of runs, no training."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mnist_speedup.report import explorer


def tables(devices=("cpu", "gpu-jax", "gpu-pytorch"), batches=(100, 500), seeds=3, epochs=5, workload="mlp"):
    """summary, speedup and curves for every device x batch size x seed; the first device is the baseline."""
    rng = np.random.default_rng(0)
    frameworks = {d: ("pytorch" if "pytorch" in d else "jax") for d in devices}
    runs, curves = [], []
    for device in devices:
        for batch in batches:
            for seed in range(1, seeds + 1):
                times = 2.0 / (1 + devices.index(device)) * (1 + 0.05 * rng.standard_normal(epochs))
                path = f"results/x/runs/{device}/{workload}/b{batch}/s{seed}.json"
                runs.append(_run(workload, device, frameworks[device], batch, seed, times, path))
                curves += [_epoch(workload, device, batch, seed, e, t) for e, t in enumerate(times, 1)]
    summary = pd.DataFrame(runs)
    cells = [_cell(workload, d, b, seeds, devices[0], 1 + i) for i, d in enumerate(devices) for b in batches]
    return {"summary": summary, "speedup": pd.DataFrame(cells), "curves": pd.DataFrame(curves)}


def _run(workload, device, framework, batch, seed, times, path) -> dict:
    return {
        "workload": workload, "framework": framework, "precision": "float32", "device": device,
        "batch_size": batch, "seed": seed, "epochs": len(times), "first_epoch_s": times[0],
        "steady_epoch_mean_s": times[1:].mean(), "steady_epoch_std_s": times[1:].std(ddof=1),
        "test_accuracy": 0.97, "path": path,
    }  # fmt: skip


def _epoch(workload, device, batch, seed, epoch, t) -> dict:
    return {"workload": workload, "device": device, "batch_size": batch, "seed": seed, "epoch": epoch, "epoch_s": t}


def _cell(workload, device, batch, n, baseline, speedup) -> dict:
    row = {c: "" for c in explorer.CELL_COLUMNS}
    return row | {
        "workload": workload, "device": device, "batch_size": batch, "n": n, "baseline": baseline, "baseline_n": n,
        "speedup": float(speedup), "speedup_ci_low": speedup * 0.9 if device != baseline else np.nan,
        "speedup_ci_high": speedup * 1.1 if device != baseline else np.nan,
        "speedup_ci_method": "Fieller 95% CI for a ratio of paired means (blocks; n - 1 df)", "parity": "PASS",
        "parity_reason": "11.2 epochs to 90% against 11.0", "bootstrap_ci_low": np.nan, "bootstrap_ci_high": np.nan,
    }  # fmt: skip
