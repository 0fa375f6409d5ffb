"""Opt-in: the real MNIST files through the whole pipeline.

Runs when MNIST_LOCAL_MIRROR names a folder holding the four canonical .gz
files (`.ci/run` sets it to ../shared/data/mnist when that exists)."""

import os
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, copy_workflow, snakemake
from mnist_speedup import records

MIRROR = os.environ.get("MNIST_LOCAL_MIRROR")

pytestmark = [
    pytest.mark.realdata,
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
