"""The real `snakemake` command on a tiny synthetic MNIST, end to end."""

import contextlib
import json
import os

import pandas as pd
import pytest

from conftest import copy_workflow, planned_jobs, snakemake, synthetic_workdir, tiny_config, write_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A workflow copy after one complete run of the tiny config."""
    workdir, cfg, config = synthetic_workdir(tmp_path_factory.mktemp("e2e"), seeds=[1, 2, 3], target_accuracy=0.5)
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
    assert len(runs) == 2 * 1 * 3
    for name in ("speedup", "timeline"):
        for ext in ("pdf", "png"):
            assert (workdir / "results" / "figures" / f"{name}.{ext}").stat().st_size > 10_000
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
        assert record["loop"]["optimizer_steps_per_epoch"] == [10, 10] and record["loop"]["calls_per_epoch"] == 1
        assert len(record["quality"]["epoch_val_accuracy"]) == 2
        assert record["energy"]["joules_per_epoch"] is None and record["energy"]["reason"]
        assert record["memory"]["host_peak_rss_bytes"] > 100 * 2**20
        assert row.time_to_target_s == pytest.approx(sum(record["timing"]["epoch_s"][: int(row.epochs_to_target)]))
        first = next(i for i, a in enumerate(record["quality"]["epoch_val_accuracy"]) if a >= 0.5)
        assert row.epochs_to_target == first + 1 and row.target_reached
    cpu1 = speedup[speedup.device == "cpu1"].iloc[0]
    base = summary[summary.device == "cpu"].steady_epoch_mean_s.mean()
    dev = summary[summary.device == "cpu1"].steady_epoch_mean_s.mean()
    assert cpu1.speedup == pytest.approx(base / dev)
    assert cpu1.n == 3 and "paired" in cpu1.ci_method
    assert cpu1.speedup_ci_low < cpu1.speedup < cpu1.speedup_ci_high
    assert f"{cpu1.speedup:.2f}×" in report
    tta = pd.read_csv(workdir / "results" / "time_to_accuracy.csv").set_index("device")
    cpu_runs = summary[summary.device == "cpu"]
    assert tta.loc["cpu", "time_to_target_s_mean"] == pytest.approx(cpu_runs.time_to_target_s.mean())
    assert tta.loc["cpu1", "runs_reached"] == 3
    assert "## Time to accuracy (50% validation accuracy)" in report and "## Drift check" in report
    assert "reached 50% validation accuracy" in report and "cpu1 (1 thread)" in report
    assert "figures/timeline.png" in report and "**Figure 1.**" in report
    assert "No GPU was found" not in report  # devices were named, not auto
    assert "figures/speedup.png" in report
    log = (workdir / "logs" / "train" / "cpu" / "bs100" / "seed1.log").read_text()
    assert "validation accuracy" in log
    assert "epoch 1/2 (warm-up)" in log and "epoch 2/2 (steady)" in log


def test_runs_in_randomised_blocks(finished):
    """Read from the records' start times: each consecutive pair of runs (2
    devices) is one block holding both devices; the in-block order varies."""
    workdir = finished[0]
    records = [json.loads(p.read_text()) for p in (workdir / "results" / "runs").rglob("seed*.json")]
    records.sort(key=lambda r: r["started_at"])
    blocks = [records[i : i + 2] for i in range(0, len(records), 2)]
    assert [sorted(r["device"] for r in b) for b in blocks] == [["cpu", "cpu1"]] * 3
    assert [b[0]["seed"] for b in blocks] == [1, 2, 3] and all(len({r["seed"] for r in b}) == 1 for b in blocks)
    assert len({tuple(r["device"] for r in b) for b in blocks}) > 1  # not the same order in every block
    calibrations = [json.loads(p.read_text()) for p in (workdir / "results" / "calibration").glob("*.json")]
    assert max(c["finished_at"] for c in calibrations) <= records[0]["started_at"]


def test_no_job_runs_beside_another(finished):
    """Snakemake's own log: every job start is followed by its finish before
    the next job starts (timing jobs never share the machine)."""
    workdir = finished[0]
    log = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))[0].read_text().splitlines()
    running, started = 0, []
    for line in log:
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            running += 1
            started.append(line.split()[1].rstrip(":"))
            assert running == 1, f"{started[-1]} started while another job ran"
        elif line.startswith("Finished jobid"):
            running -= 1
    assert started.count("train") == 6 and started.count("calibrate") == 2
    assert max(i for i, r in enumerate(started) if r == "calibrate") < started.index("train")


def test_synthetic_digits_are_learnt(finished):
    workdir = finished[0]
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    assert summary.test_accuracy.min() > 0.5  # 10 classes: chance is 0.1


# ---------------------------------------------------------------- reruns


def plan(workdir, config, name="changed.yaml"):
    cfg = write_config(workdir, config, name)
    return planned_jobs(snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg)))


PRESENTATION = {"aggregate", "figure", "report_markdown", "all"}


@contextlib.contextmanager
def edited(path):
    """Append a comment to a code file, then restore its bytes and mtime
    (Snakemake's code trigger for script rules compares the script's mtime)."""
    original, stat = path.read_bytes(), path.stat()
    path.write_bytes(original + b"\n# an edit\n")
    try:
        yield
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_second_run_does_nothing(finished):
    workdir, _, config, _ = finished
    assert plan(workdir, config) == {}


def test_new_seed_schedules_only_its_runs(finished):
    workdir, _, config, _ = finished
    jobs = plan(workdir, {**config, "seeds": [1, 2, 3, 4]})
    assert jobs == {"train": 2, **dict.fromkeys(PRESENTATION, 1)}  # 2 devices x 1 new seed


def test_new_batch_size_schedules_its_runs_and_calibration(finished):
    workdir, _, config, _ = finished
    jobs = plan(workdir, {**config, "batch_sizes": [100, 50]})
    # calibration covers every configured batch size, so each device's reruns
    assert jobs == {"train": 2 * 3, "calibrate": 2, **dict.fromkeys(PRESENTATION, 1)}


@pytest.mark.parametrize(
    "change",
    [{"epochs": 3}, {"learning_rate": 1e-3}, {"input_pipeline": "host", "steps_per_call": 1}, {"steps_per_call": 7}],
)
def test_hyperparameters_rerun_training(finished, change):
    workdir, _, config, _ = finished
    jobs = plan(workdir, {**config, **change})
    assert jobs["train"] == 6 and "calibrate" not in jobs and "download_mnist" not in jobs


def test_target_accuracy_reruns_only_aggregation_and_after(finished):
    workdir, _, config, _ = finished
    assert plan(workdir, {**config, "target_accuracy": 0.8}) == dict.fromkeys(PRESENTATION, 1)


def test_prices_rerun_no_training(finished):
    workdir, _, config, _ = finished
    devices = {k: {**v, "price_per_hour": 1.5} for k, v in config["devices"].items()}
    assert plan(workdir, {**config, "devices": devices, "currency": "EUR"}) == dict.fromkeys(PRESENTATION, 1)


def test_training_code_reruns_training_only_there(finished):
    workdir, _, config, _ = finished
    with edited(workdir / "workflow" / "mnist_speedup" / "trainer.py"):
        jobs = plan(workdir, config)
    assert jobs == {"train": 6, **dict.fromkeys(PRESENTATION, 1)}


@pytest.mark.parametrize(
    "change", [{"figure": {"formats": ["pdf", "png"], "dpi": 150}}, {"figure": {"palette": "deep", "title": "x"}}]
)
def test_presentation_settings_rerun_only_figure_and_report(finished, change):
    workdir, _, config, _ = finished
    jobs = plan(workdir, {**config, **change})
    assert jobs == {"figure": 1, "report_markdown": 1, "all": 1}


@pytest.mark.parametrize(
    "path",
    ["workflow/mnist_speedup/figure.py", "workflow/scripts/figure.py", "workflow/mnist_speedup/report.py"],
)
def test_figure_and_report_code_rerun_no_training(finished, path):
    workdir, _, config, _ = finished
    with edited(workdir / path):
        jobs = plan(workdir, config)
    assert "train" not in jobs and "calibrate" not in jobs and "aggregate" not in jobs
    assert jobs.get("report_markdown") == 1


def test_readme_and_tests_retrain_nothing(finished):
    workdir, _, config, _ = finished
    (workdir / "README.md").write_text("edited")
    (workdir / "tests").mkdir(exist_ok=True)
    (workdir / "tests" / "test_new.py").write_text("def test_x():\n    pass\n")
    assert plan(workdir, config) == {}


def test_html_report(finished):
    workdir, cfg, _, _ = finished
    for name in ("report.html", "report.zip"):
        snakemake(workdir, "--cores", "2", "--configfile", str(cfg), "--report", f"results/{name}")
        assert (workdir / "results" / name).stat().st_size > 10_000
    html = (workdir / "results" / "report.html").read_text(errors="replace")
    assert "Fieller" in html and "speedup.csv" in html and "speedup.png" in html


def test_runs_from_another_machine_join_the_report(finished, tmp_path):
    workdir, _, config, _ = finished
    other = tmp_path / "other-machine"
    for sub in ("runs", "calibration"):
        for src in (workdir / "results" / sub).rglob("*.json"):
            record = json.loads(src.read_text())
            record["environment"]["hostname"] = "lab-gpu-box"
            record["environment"]["machine_id"] = "another-machine"
            dest = other / sub / src.relative_to(workdir / "results" / sub)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(json.dumps(record))
    cfg = write_config(workdir, {**config, "extra_runs": [str(other)]}, "extra.yaml")
    jobs = planned_jobs(snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg)))
    assert "train" not in jobs and jobs["aggregate"] == 1
    snakemake(workdir, "--cores", "2", "--configfile", str(cfg))
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    local_host = summary[summary.origin == "local"].host.iloc[0]
    assert set(summary.device) == {f"cpu@{local_host}", f"cpu1@{local_host}", "cpu@lab-gpu-box", "cpu1@lab-gpu-box"}
    speedup = pd.read_csv(workdir / "results" / "speedup.csv")
    assert set(speedup.baseline) == {f"cpu@{local_host}"}
    assert summary.calibrated_flops_per_s.notna().all()
    assert "cpu1@lab-gpu-box" in (workdir / "results" / "report.md").read_text()
    # back to this machine's runs only, for the other tests of this module
    snakemake(workdir, "--cores", "2", "--configfile", str(finished[1]))
