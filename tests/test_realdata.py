"""Opt-in: the real MNIST files through the whole pipeline.

Runs when MNIST_LOCAL_MIRROR names a folder holding the four canonical .gz
files (`.ci/run` sets it to ../shared/data/mnist when that exists)."""

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import copy_workflow, snakemake

MIRROR = os.environ.get("MNIST_LOCAL_MIRROR")

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not MIRROR, reason="set MNIST_LOCAL_MIRROR to a folder with the real MNIST .gz files"),
]


def test_three_epochs_at_batch_500_reach_90_percent(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    config = {
        "mirrors": ["https://127.0.0.1:9/unreachable/", str(Path(MIRROR).resolve())],
        "download_timeout": 2,
        "devices": {"cpu": {"type": "cpu", "threads": 2}},
        "seeds": [1],
        "batch_sizes": [500],
        "epochs": 3,
        "step_samples": 5,
    }
    cfg = workdir / "config" / "real.yaml"
    cfg.write_text(yaml.safe_dump(config))
    snakemake(workdir, "--cores", "2", "--configfile", str(cfg))
    summary = pd.read_csv(workdir / "results" / "default" / "summary.csv")
    assert summary.samples_per_epoch.iloc[0] == 50_000  # the original split
    assert summary.test_accuracy.iloc[0] >= 0.90
