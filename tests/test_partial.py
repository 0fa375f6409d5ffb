"""Issue 39 (3): nothing lost. While a call runs, a verified partial bundle and a partial report are
rewritten after each run lands; a failed write keeps the previous ones (mnist_speedup/partial.py)."""

import json
import os
import subprocess
import sys

from crafted import make_calibration, make_record, write_calibration, write_records

from conftest import ROOT
from mnist_speedup import partial
from mnist_speedup.records import attempts, bundle
from mnist_speedup.spec import run

CONFIG = {
    "experiment": "gpu",
    "baseline": "cpu",
    "target_accuracy": 0.5,
    "parity_margin": 0.005,
    "devices": {"cpu": {"type": "cpu", "threads": 2}, "cpu1": {"type": "cpu", "threads": 1}},
    "workloads": {"mlp": {"type": "mlp"}},
    "mirrors": ["/secret/mirror"],
}


def landed(results, records):
    """Runs that finished as a training job leaves them: each record, then its attempt (records/attempts.py)."""
    paths = write_records(results, records)
    for r in records:
        attempts.write_finished(attempts.attempt_path(results, "mlp", r["device"], r["batch_size"], r["seed"]), 0)
    return paths


def block(seed):
    return [
        make_record("cpu", 100, seed, [2.0, 2.0 + 0.1 * seed, 2.1]),
        make_record("cpu1", 100, seed, [3.0, 3.0 + 0.2 * seed, 3.1], threads=1),
    ]


def test_each_snapshot_holds_every_run_so_far_verified(tmp_path):
    results, out = tmp_path / "results" / "gpu", tmp_path / "out"
    write_calibration(results, make_calibration("cpu"))
    landed(results, block(1))
    partial.snapshot(results, out, CONFIG)
    first = bundle.check(out / "partial-bundle-h.tar.gz")
    assert len(first["files"]) == 3 and first["config"]["partial"] is True and "mirrors" not in first["config"]
    landed(results, block(2) + block(3))
    attempts.write_cut(
        attempts.attempt_path(results, "mlp", "cpu1", 500, 1),
        {"workload": "mlp", "device": "cpu1", "batch_size": 500, "seed": 1},
        0,
        {"budget_s": 60, "left_s": 2, "estimate_s": 30.0, "basis": "b"},
    )
    partial.snapshot(results, out, CONFIG)
    assert len(bundle.check(out / "partial-bundle-h.tar.gz")["files"]) == 7  # 6 runs and the calibration
    report = (out / partial.REPORT).read_text()
    assert report.startswith("# MNIST training speedup report (partial)")
    assert "6 runs finished, 1 cut by the time budget" in report and "## Cut by the time budget" in report
    assert "paired" in report and "/secret/mirror" not in report
    assert sorted(p.name for p in out.iterdir()) == ["partial-bundle-h.tar.gz", partial.REPORT]  # no temporary left


def test_a_failed_write_keeps_the_previous_files(tmp_path):
    results, out = tmp_path / "results" / "gpu", tmp_path / "out"
    landed(results, block(1) + block(2))
    partial.snapshot(results, out, CONFIG)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    [path] = landed(results, [make_record("cpu", 100, 3)])
    path.write_text(path.read_text()[:-40])  # a truncated record
    lines = []
    partial.watch(results, out, CONFIG, every=0.01, while_pid=None, log=lines.append)
    assert "not rewritten" in lines[-1] and "the previous files stay" in lines[-1]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_before_any_run_it_says_so(tmp_path):
    results, out = tmp_path / "results" / "gpu", tmp_path / "out"
    (results / "attempts").mkdir(parents=True)
    assert "no bundle yet" in partial.snapshot(results, out, CONFIG)
    assert "No tables yet: no run records to aggregate" in (out / partial.REPORT).read_text()


def test_it_watches_while_a_process_runs_and_stops_after_it(tmp_path):
    """Through the command line, as gpu_run.sh starts it: a run that lands while the process lives is in
    the files it leaves; it ends on its own once that process has ended."""
    results, out = tmp_path / "results" / "gpu", tmp_path / "out"
    landed(results, block(1))
    cfg = tmp_path / "gpu.yaml"
    cfg.write_text(json.dumps({"experiment": "gpu", "devices": CONFIG["devices"], "baseline": "cpu"}))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnist_speedup.partial",
            str(results),
            str(out),
            "--config",
            str(cfg),
            "--every",
            "0.2",
            "--while-pid",
            str(sleeper.pid),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    landed(results, block(2))
    sleeper.wait()
    _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    assert len(bundle.check(out / "partial-bundle-h.tar.gz")["files"]) == 4
    assert "partial: 4 runs" in err


def test_the_partial_bundle_unpacks_as_another_machine_s_runs(tmp_path):
    results, out = tmp_path / "results" / "gpu", tmp_path / "out"
    landed(results, block(1) + block(2))
    partial.snapshot(results, out, CONFIG)
    meta = bundle.unpack(out / "partial-bundle-h.tar.gz", tmp_path / "unpacked")
    assert len(run.run_files(tmp_path / "unpacked")) == 4 and meta["experiment"] == "gpu"
