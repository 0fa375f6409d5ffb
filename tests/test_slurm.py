"""The workflow on a real (single-node) Slurm cluster through
snakemake-executor-plugin-slurm and profiles/slurm.

Enabled by MNIST_SPEEDUP_SLURM=1, which `.ci/run` sets after
`.ci/start-slurm.sh` has started munged, slurmctld and slurmd on this machine.
"""

import json
import os
import re
import shutil

import pandas as pd
import pytest

from conftest import plan_here, snakemake, synthetic_workdir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("MNIST_SPEEDUP_SLURM") != "1" or shutil.which("sbatch") is None,
        reason="needs a running Slurm (bash .ci/start-slurm.sh, then MNIST_SPEEDUP_SLURM=1)",
    ),
]

OUTPUTS = [
    "results/default/summary.csv",
    "results/default/speedup.csv",
    "results/default/report.md",
    "results/default/figures/speedup.pdf",
    "results/default/figures/speedup.png",
    "results/default/runs/mlp/cpu/bs100/seed1.json",
    "results/default/runs/mlp/cpu1/bs100/seed1.json",
    "results/default/calibration/mlp/cpu.json",
    "results/default/calibration/mlp/cpu1.json",
]


def test_slurm_profile_makes_every_output_and_a_local_plan_then_finds_nothing_to_do(tmp_path):
    """The profile's run is the local run's: every output, records that honour each device's threads inside the
    Slurm job, and a local plan afterwards that finds nothing to do (the same parameters, code and inputs recorded
    for every job). Compared so, not with a second, local run beside it: the local path is test_workflow's."""
    cluster, cluster_cfg, config = synthetic_workdir(tmp_path, "cluster", seeds=[1])
    proc = snakemake(
        cluster,
        "--workflow-profile",
        "profiles/slurm",
        "--configfile",
        str(cluster_cfg),
        "--slurm-status-command",
        "squeue",
        "--slurm-no-account",
        # a one-node test cluster answers at once; the defaults (a first check after 40 s) suit a busy one
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "1",
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    # the two training runs and the two calibrations went to Slurm, the local rules did not
    submitted = re.findall(r"has been submitted with SLURM jobid \d+", out)
    assert len(submitted) == 4, out
    for path in OUTPUTS:
        assert (cluster / path).exists(), path
    summary = pd.read_csv(cluster / "results" / "default" / "summary.csv")
    assert sorted(zip(summary.device, summary.batch_size, summary.seed)) == [("cpu", 100, 1), ("cpu1", 100, 1)]
    for device, spec in config["devices"].items():
        record = json.loads((cluster / f"results/default/runs/mlp/{device}/bs100/seed1.json").read_text())
        assert record["environment"]["threads"] == spec["threads"], device
        assert record["quality"]["test_accuracy"] >= 0.9, device  # it learned (synthetic digits: about 1.0)
    assert set(pd.read_csv(cluster / "results" / "default" / "speedup.csv").device) == {"cpu", "cpu1"}
    assert plan_here(cluster, cluster_cfg) == {}
