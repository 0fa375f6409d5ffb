"""The real `snakemake` command on a tiny synthetic MNIST, end to end."""

import json

import pandas as pd
import pytest

from conftest import copy_workflow, planned_jobs, snakemake, synthetic_mnist, tiny_config, write_config, write_mirror

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A workflow copy after one complete run of the tiny config."""
    root = tmp_path_factory.mktemp("e2e")
    sums = write_mirror(root / "mirror", synthetic_mnist())
    workdir = copy_workflow(root / "wf")
    config = tiny_config(root / "mirror", sums)
    cfg = write_config(workdir, config)
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(cfg))
    return workdir, cfg, config, proc


def test_dry_run_plans_devices_x_batch_sizes_x_seeds(tmp_path, mirror):
    folder, sums = mirror
    workdir = copy_workflow(tmp_path / "wf")
    cfg = write_config(
        workdir,
        tiny_config(
            folder,
            sums,
            seeds=[1, 2, 3],
            batch_sizes=[50, 100],
            devices={
                "a": {"type": "cpu", "threads": 1},
                "b": {"type": "cpu", "threads": 2},
                "c": {"type": "gpu", "index": 0},
            },
            baseline="a",
        ),
    )
    jobs = planned_jobs(snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg)))
    assert jobs["train"] == 3 * 2 * 3
    assert jobs["download_mnist"] == 4 and jobs["prepare_mnist"] == 1
    assert jobs["aggregate"] == jobs["figure"] == jobs["report_markdown"] == 1


def test_every_output_exists_and_agrees(finished):
    workdir, _, config, _ = finished
    runs = sorted((workdir / "results" / "runs").glob("*/bs*/seed*.json"))
    assert len(runs) == 2 * 1 * 2
    for ext in ("pdf", "png"):
        assert (workdir / "results" / "figures" / f"speedup.{ext}").stat().st_size > 10_000
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    speedup = pd.read_csv(workdir / "results" / "speedup.csv")
    report = (workdir / "results" / "report.md").read_text()
    assert len(summary) == len(runs)
    for path in runs:
        record = json.loads(path.read_text())
        row = summary[(summary.device == record["device"]) & (summary.seed == record["seed"])].iloc[0]
        assert row.steady_epoch_mean_s == pytest.approx(record["timing"]["steady_epoch_mean_s"])
        assert row.test_accuracy == pytest.approx(record["quality"]["test_accuracy"])
        assert record["environment"]["tensorflow"] and record["environment"]["hostname"]
        assert record["environment"]["threads"] == config["devices"][record["device"]]["threads"]
        assert record["environment"]["gpu_name"] is None
        assert len(record["timing"]["epoch_s"]) == config["epochs"]
        assert record["timing"]["epoch_is_warmup"] == [True, False]
        assert record["samples_per_epoch"] == 1000  # 1200 - 200 validation, batch 100
    cpu1 = speedup[speedup.device == "cpu1"].iloc[0]
    base = summary[summary.device == "cpu"].steady_epoch_mean_s.mean()
    dev = summary[summary.device == "cpu1"].steady_epoch_mean_s.mean()
    assert cpu1.speedup == pytest.approx(base / dev)
    assert cpu1.n == 2 and "Fieller" in cpu1.ci_method
    assert cpu1.speedup_ci_low < cpu1.speedup < cpu1.speedup_ci_high
    assert f"{cpu1.speedup:.2f}×" in report
    assert "No GPU was found" not in report  # devices were named, not auto
    assert "figures/speedup.png" in report
    log = (workdir / "logs" / "train" / "cpu" / "bs100" / "seed1.log").read_text()
    assert "epoch 1/2 (warm-up)" in log and "epoch 2/2 (steady)" in log


def test_synthetic_digits_are_learnt(finished):
    workdir = finished[0]
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    assert summary.test_accuracy.min() > 0.5  # 10 classes: chance is 0.1
