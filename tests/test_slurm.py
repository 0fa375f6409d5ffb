"""The workflow on a real (single-node) Slurm cluster through
snakemake-executor-plugin-slurm and profiles/slurm.

Enabled by MNIST_SPEEDUP_SLURM=1, which `.ci/run` sets after
`.ci/start-slurm.sh` has started munged, slurmctld and slurmd on this machine.
"""

import os
import re
import shutil

import pandas as pd
import pytest

from conftest import snakemake, synthetic_workdir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("MNIST_SPEEDUP_SLURM") != "1" or shutil.which("sbatch") is None,
        reason="needs a running Slurm (bash .ci/start-slurm.sh, then MNIST_SPEEDUP_SLURM=1)",
    ),
]

OUTPUTS = ["results/default/summary.csv", "results/default/speedup.csv", "results/default/report.md", "results/default/figures/speedup.pdf",
           "results/default/figures/speedup.png", "results/default/runs/mlp/cpu/bs100/seed1.json", "results/default/runs/mlp/cpu1/bs100/seed1.json",
           "results/default/calibration/mlp/cpu.json", "results/default/calibration/mlp/cpu1.json"]  # fmt: skip


def test_slurm_profile_gives_the_same_outputs_as_a_local_run(tmp_path):
    local, local_cfg, _ = synthetic_workdir(tmp_path, "local", seeds=[1])
    cluster, cluster_cfg, _ = synthetic_workdir(tmp_path, "cluster", seeds=[1])
    snakemake(local, "--cores", "2", "--configfile", str(local_cfg))
    proc = snakemake(
        cluster,
        "--workflow-profile", "profiles/slurm",
        "--configfile", str(cluster_cfg),
        "--slurm-status-command", "squeue",
        "--slurm-no-account",
        # a one-node test cluster answers at once; the defaults (a first check after 40 s) suit a busy one
        "--slurm-init-seconds-before-status-checks", "1",
        "--seconds-between-status-checks", "1",
        timeout=900,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    # the two training runs and the two calibrations went to Slurm, the local rules did not
    submitted = re.findall(r"has been submitted with SLURM jobid \d+", out)
    assert len(submitted) == 4, out
    for path in OUTPUTS:
        assert (local / path).exists() and (cluster / path).exists(), path
    a = pd.read_csv(local / "results" / "default" / "summary.csv")
    b = pd.read_csv(cluster / "results" / "default" / "summary.csv")
    key = ["device", "batch_size", "seed"]
    assert a[key].equals(b[key])
    assert list(a.columns) == list(b.columns)
    assert (a.test_accuracy - b.test_accuracy).abs().max() < 0.05
    assert set(pd.read_csv(cluster / "results" / "default" / "speedup.csv").device) == {"cpu", "cpu1"}
