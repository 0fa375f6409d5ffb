"""Opt-in: the real MNIST files through the whole pipeline.

Runs when MNIST_LOCAL_MIRROR names a folder holding the four canonical .gz
files (`.ci/run` sets it to ../shared/data/mnist when that exists)."""

import os
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, copy_workflow, snakemake
from mnist_speedup.records import run_record as records

MIRROR = os.environ.get("MNIST_LOCAL_MIRROR")

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR, reason="set MNIST_LOCAL_MIRROR to a folder with the real MNIST .gz files"),
]


def test_the_default_run_reaches_its_target_at_batch_500(tmp_path):
    """The default epochs and target, at the default's larger batch size
    (the one that needs the most epochs): the target is reached, and
    three epochs already give 90% validation accuracy."""
    defaults = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    workdir = copy_workflow(tmp_path / "wf")
    config = {
        "mirrors": ["https://127.0.0.1:9/unreachable/", str(Path(MIRROR).resolve())],
        "download_timeout": 2,
        "devices": {"cpu": {"type": "cpu", "threads": 2}},
        "seeds": [1],
        "batch_sizes": [max(defaults["batch_sizes"])],
        "step_samples": 5,
    }
    cfg = workdir / "config" / "real.yaml"
    cfg.write_text(yaml.safe_dump(config))
    bs = config["batch_sizes"][0]
    run_file = f"results/default/runs/mlp/cpu/bs{bs}/seed1.json"  # the run alone: no calibration or report
    snakemake(workdir, run_file, "--cores", "2", "--configfile", str(cfg))
    run = records.load(workdir / run_file)
    assert run["samples_per_epoch"] == 50_000 and run["epochs"] == defaults["epochs"]  # original split, default epochs
    accuracy = run["quality"]["epoch_val_accuracy"]
    assert accuracy[2] >= 0.90
    reached = next((i + 1 for i, a in enumerate(accuracy) if a >= defaults["target_accuracy"]), None)
    print(f"real data, batch {bs}: target {defaults['target_accuracy']} reached at epoch {reached}, "
          f"test accuracy {run['quality']['test_accuracy']:.4f}")  # fmt: skip
    assert reached is not None


def test_mixed_bfloat16_trains_as_well_as_float32(tmp_path):
    """Convergence parity on the real data: float32 and its mixed_bfloat16
    twin, two seeds each at batch 100, to the default target: PASS."""
    from mnist_speedup.analysis import aggregate, parity, tta

    defaults = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    workdir = copy_workflow(tmp_path / "wf")
    config = {
        "mirrors": [str(Path(MIRROR).resolve())],
        "devices": {"cpu": {"type": "cpu", "threads": 2},
                    "cpu-bf16": {"type": "cpu", "threads": 2, "precision": "mixed_bfloat16"}},
        "seeds": [1, 2],
        "batch_sizes": [100],
        "epochs": 5,  # the default target is reached at epoch 4 at batch 100
        "step_samples": 5,
    }  # fmt: skip
    cfg = workdir / "config" / "bf16.yaml"
    cfg.write_text(yaml.safe_dump(config))
    files = [f"results/default/runs/mlp/{d}/bs100/seed{s}.json" for d in config["devices"] for s in config["seeds"]]
    snakemake(workdir, *files, "--cores", "2", "--configfile", str(cfg))
    summary, curves = aggregate.load_runs([workdir / f for f in files])
    target = defaults["target_accuracy"]
    summary = summary.merge(tta.per_run(curves, target), on=["workload", "device", "batch_size", "seed"])
    verdicts = parity.table(summary, "cpu", target, 0.005).set_index("device")
    print(f"real data, bf16 against float32 at batch 100: {verdicts.loc['cpu-bf16', 'parity']} "
          f"({verdicts.loc['cpu-bf16', 'parity_reason']})")  # fmt: skip
    assert verdicts.loc["cpu-bf16", "parity"] == "PASS", verdicts.loc["cpu-bf16", "parity_reason"]
    bf16 = records.load(workdir / files[2])
    assert bf16["numerics"] == {"precision": "mixed_bfloat16", "compute_dtype": "bfloat16", "jit_compile": False,
                                "loss_scaling": None, "tf32": False}  # fmt: skip
