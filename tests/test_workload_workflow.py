"""Issue 19: the real `snakemake` with two workloads on synthetic MNIST, and
what adding or changing a workload plans; every job in PyTorch with the other frameworks unimportable."""

import json

import pandas as pd
import pytest

from conftest import (
    assert_ran_alone,
    only_framework,
    plan_config,
    snakemake,
    synthetic_workdir,
)

pytestmark = pytest.mark.slow

WORKLOADS = {
    "mlp": {"type": "mlp", "hidden": [64]},
    "cnn": {"type": "cnn", "filters": [4], "dense": 16},
}
AFTER_TRAINING = {"check_runs", "aggregate", "figure", "report_markdown", "all"}


DEVICES = {
    "cpu": {"type": "cpu", "threads": 2, "framework": "pytorch"},
    "cpu1": {"type": "cpu", "threads": 1, "framework": "pytorch"},
}


@pytest.fixture(scope="module")
def pytorch_alone(tmp_path_factory):
    """(env, blocked modules): every framework but PyTorch unimportable."""
    return only_framework(tmp_path_factory.mktemp("blocked"), "pytorch")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, pytorch_alone):
    """Both workloads on PyTorch devices, and the bundle, with every other framework unimportable."""
    root = tmp_path_factory.mktemp("workloads")
    workdir, cfg, config = synthetic_workdir(root, workloads=WORKLOADS, devices=DEVICES)
    env = pytorch_alone[0]
    proc = snakemake(workdir, "all", "bundle", "--cores", "2", "--configfile", str(cfg), env=env)
    return workdir, config, proc


def test_every_rule_and_the_bundle_ran_with_pytorch_alone(finished, pytorch_alone):
    assert_ran_alone(finished[0], "pytorch", pytorch_alone[1])


def test_every_workload_runs_and_is_reported_in_words(finished):
    workdir, config, proc = finished
    results = workdir / "results" / "default"
    runs = sorted((results / "runs").glob("*/*/bs100/seed*.json"))
    assert {p.relative_to(results / "runs").parts[0] for p in runs} == {"mlp", "cnn"} and len(runs) == 2 * 2 * 2
    cnn = json.loads((results / "runs/cnn/cpu1/bs100/seed2.json").read_text())
    assert cnn["workload"] == "cnn" and cnn["workload_spec"]["filters"] == [4]
    calibration = json.loads((results / "calibration/cnn/cpu.json").read_text())
    assert {p[0] for p in calibration["workload_shapes"]["100"]["products"]} == {"conv", "conv_filter", "matmul"}
    speedup = pd.read_csv(results / "speedup.csv").set_index(["workload", "device"])
    assert speedup.loc[("cnn", "cpu1"), "flops_per_step"] != speedup.loc[("mlp", "cpu1"), "flops_per_step"]
    assert speedup.calibrated_flops_per_s.notna().all()
    report = (results / "report.md").read_text()
    for words in (
        "### MLP 784-64-10 (`mlp`)",
        "### CNN conv5x5x4-dense16-10 (`cnn`)",
        "## Scaling with the work per step",
    ):
        assert words in report
    # one headline per workload, under its name in words
    assert "**MLP 784-64-10: " in report and "**CNN conv5x5x4-dense16-10: " in report
    assert "geometric mean across these 2 workloads" in report and "figures/scaling.png" in report
    for ext in ("png", "pdf"):
        assert (results / "figures" / f"scaling.{ext}").stat().st_size > 10_000
    out = proc.stdout + proc.stderr
    assert any(line.startswith("cnn, cpu1 (1 thread, PyTorch), batch 100, seed ") for line in out.splitlines())


def test_adding_a_workload_plans_only_its_runs_and_the_presentation(finished):
    workdir, config, _ = finished
    jobs = plan_config(workdir, {**config, "workloads": {**WORKLOADS, "wide": {"type": "mlp", "hidden": [96]}}})
    assert jobs == {"train": 2 * 2, "calibrate": 2, **dict.fromkeys(AFTER_TRAINING, 1)}


def test_changing_a_workload_reruns_only_its_runs(finished):
    workdir, config, _ = finished
    jobs = plan_config(
        workdir, {**config, "workloads": {**WORKLOADS, "cnn": {"type": "cnn", "filters": [4], "dense": 24}}}
    )
    assert jobs == {"train": 2 * 2, "calibrate": 2, **dict.fromkeys(AFTER_TRAINING, 1)}
    # writing a default out, or reordering, is the same workload
    same = {"cnn": {"dense": 16, "type": "cnn", "filters": [4], "kernel": 5}, "mlp": {"type": "mlp", "hidden": [64]}}
    assert plan_config(workdir, {**config, "workloads": same}) == {}
