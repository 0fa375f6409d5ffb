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


DEFAULTS = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """One workflow over the real files (a dead first mirror, then the local copy): TensorFlow's float32 and
    its mixed_bfloat16 twin, one seed each, at the article's batch 500 over the full 50,000-image split,
    3 epochs (1 warm-up): CI's budget (the two tests were 337 s of it with the default epochs and batch 100)."""
    workdir = copy_workflow(tmp_path_factory.mktemp("real") / "wf")
    config = {
        "mirrors": ["https://127.0.0.1:9/unreachable/", str(Path(MIRROR).resolve())],
        "download_timeout": 2,
        "download_retries": 0,  # the dead mirror once, not with its 1 + 2 s of backoff per file (test_mirror_faults)
        "devices": {
            "cpu": {"type": "cpu", "threads": 2},
            "cpu-bf16": {"type": "cpu", "threads": 2, "precision": "mixed_bfloat16"},
        },
        "seeds": [1],
        "batch_sizes": [500],
        "epochs": 3,
        "warmup_epochs": 1,
        "step_samples": 5,
    }
    cfg = workdir / "config" / "real.yaml"
    cfg.write_text(yaml.safe_dump(config))
    files = [f"results/default/runs/mlp/{d}/bs500/seed{s}.json" for d in config["devices"] for s in config["seeds"]]
    targets = [f.replace("/runs/", "/attempts/", 1) for f in files]  # the training jobs' outputs
    snakemake(workdir, *targets, "--cores", "2", "--configfile", str(cfg))  # the runs alone: no calibration or report
    return workdir, {path: records.load(workdir / path) for path in files}


def test_the_full_split_trains_to_90_percent_in_three_epochs_at_batch_500(real_runs):
    """The real files reach training past a dead mirror, the original split is used whole, and the
    article's setting learns: 90% validation accuracy after three epochs."""
    for path, run in real_runs[1].items():
        assert run["samples_per_epoch"] == 50_000 and run["epochs"] == 3, path
        accuracy = run["quality"]["epoch_val_accuracy"]
        print(f"real data, {path}: validation accuracy by epoch {accuracy}")
        assert accuracy[2] >= 0.90, (path, accuracy)


def test_mixed_bfloat16_trains_as_well_as_float32(real_runs):
    """Convergence parity on the real data: float32 and its mixed_bfloat16 twin, one seed each (CI's budget;
    two seeds each of 4 epochs passed too, on 2026-12-07), to 90% validation accuracy (3 epochs at batch 500
    do not reach the default target of 95%): PASS."""
    from mnist_speedup.analysis import aggregate, parity, tta

    workdir, runs = real_runs
    files = list(runs)
    summary, curves = aggregate.load_runs([workdir / f for f in files])
    target = 0.90
    summary = summary.merge(tta.per_run(curves, target), on=["workload", "device", "batch_size", "seed"])
    verdicts = parity.table(summary, "cpu", target, 0.005).set_index("device")
    print(
        f"real data, bf16 against float32 at batch 500: {verdicts.loc['cpu-bf16', 'parity']} "
        f"({verdicts.loc['cpu-bf16', 'parity_reason']})"
    )
    assert verdicts.loc["cpu-bf16", "parity"] == "PASS", verdicts.loc["cpu-bf16", "parity_reason"]
    bf16 = runs["results/default/runs/mlp/cpu-bf16/bs500/seed1.json"]
    assert bf16["numerics"] == {
        "precision": "mixed_bfloat16",
        "compute_dtype": "bfloat16",
        "jit_compile": False,
        "loss_scaling": None,
        "tf32": False,
    }


@pytest.mark.skipif(
    os.environ.get("MNIST_SPEEDUP_CHECK_DEFAULTS") != "1",
    reason="the default epochs on real data, about 2 minutes: MNIST_SPEEDUP_CHECK_DEFAULTS=1",
)
def test_the_default_run_reaches_its_target_at_batch_500(tmp_path):
    """Not in CI (its budget): run it when the default epochs, target or batch sizes change. The default
    epochs and target, at the default's larger batch size (the one that needs the most epochs): the
    target is reached."""
    workdir = copy_workflow(tmp_path / "wf")
    config = {
        "mirrors": [str(Path(MIRROR).resolve())],
        "devices": {"cpu": {"type": "cpu", "threads": 2}},
        "seeds": [1],
        "batch_sizes": [max(DEFAULTS["batch_sizes"])],
        "step_samples": 5,
    }
    cfg = workdir / "config" / "real.yaml"
    cfg.write_text(yaml.safe_dump(config))
    run_file = f"results/default/runs/mlp/cpu/bs{config['batch_sizes'][0]}/seed1.json"
    snakemake(workdir, run_file.replace("/runs/", "/attempts/", 1), "--cores", "2", "--configfile", str(cfg))
    run = records.load(workdir / run_file)
    assert run["epochs"] == DEFAULTS["epochs"]
    accuracy = run["quality"]["epoch_val_accuracy"]
    reached = next((i + 1 for i, a in enumerate(accuracy) if a >= DEFAULTS["target_accuracy"]), None)
    print(f"real data, defaults: target {DEFAULTS['target_accuracy']} reached at epoch {reached}")
    assert reached is not None
