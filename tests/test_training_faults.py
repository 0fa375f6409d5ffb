"""Runs that go wrong end with an error naming the run; with --keep-going
the other runs finish. Interrupted runs leave nothing behind."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import (
    ROOT,
    planned_jobs,
    snakemake,
    synthetic_workdir,
)

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {pkg!r})
    from mnist_speedup.measure import frameworks
    from mnist_speedup.spec import run
    from mnist_speedup.measure import trainer
    out = {{}}
    spec = dict(workload="wide", workload_spec={{"type": "mlp", "hidden": [64, 64]}},
                device="cpu", device_spec={{"type": "cpu", "threads": 1}}, batch_size=50, seed=3,
                epochs=2, warmup_epochs=1, step_samples=0)
    try:
        trainer.run(run.RunSpec.with_defaults(**spec), {nan_npz!r}, log=lambda *a: None)
    except trainer.TrainingError as e:
        out["nan"] = str(e)

    import tensorflow as tf
    def oom(*a, **k):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
    real_train, trainer._train = trainer._train, oom
    try:
        trainer.run(run.RunSpec.with_defaults(**{{**spec, "batch_size": 100}}), {nan_npz!r}, log=lambda *a: None)
    except trainer.TrainingError as e:
        out["oom"] = str(e)
    trainer._train = real_train

    try:  # this machine's TensorFlow sees no GPU: real, no mocking
        frameworks.open_device({{"type": "gpu", "index": 0}})
    except frameworks.DeviceError as e:
        out["no_gpu"] = str(e)
    tf.config.list_physical_devices = lambda kind=None: ["GPU:0"]
    try:
        frameworks.open_device({{"type": "gpu", "index": 3}})
    except frameworks.DeviceError as e:
        out["bad_index"] = str(e)
    print("RESULT" + json.dumps(out))
    """
)


def test_divergence_oom_and_missing_gpu_are_named(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.random((200, 784), dtype=np.float32)
    x[7, 3] = np.nan  # poisons the weights through the gradient
    y = rng.integers(0, 10, 200)
    npz = tmp_path / "nan.npz"
    np.savez(npz, x_train=x, y_train=y, x_val=x[:50], y_val=y[:50], x_test=x[:50], y_test=y[:50])
    script = PROBE.format(pkg=str(ROOT / "workflow"), nan_npz=str(npz))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stdout + proc.stderr
    out = json.loads(line[len("RESULT") :])
    # the NaN pixel may be dropped out (dropout selects 0) in some epochs
    assert re.search(
        r"workload wide, device cpu, batch size 50, seed 3: .* in epoch \d+ \(training diverged\)", out["nan"]
    )
    assert "lower learning_rate" in out["nan"]
    # a workload too large for the device: the run names the workload, the device and the batch size
    assert out["oom"].startswith(
        "workload wide, device cpu, batch size 100, seed 3: the device ran out of memory "
        "training MLP 784-64-64-10 at batch size 100"
    )
    assert "smaller batch size or a smaller workload" in out["oom"]
    assert "TensorFlow sees no GPU" in out["no_gpu"] and "tensorflow[and-cuda]" in out["no_gpu"]
    assert "GPU index 3 does not exist" in out["bad_index"] and "indices 0..0" in out["bad_index"]


def test_keep_going_finishes_the_other_runs(tmp_path):
    workdir, cfg, _ = synthetic_workdir(
        tmp_path,
        seeds=[1],
        devices={
            "cpu": {"type": "cpu", "threads": 2, "framework": "jax"},
            "gpu": {"type": "gpu", "index": 0, "framework": "jax"},
        },
    )
    proc = snakemake(workdir, "--cores", "2", "--keep-going", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    assert "JAX sees no GPU" in proc.stderr
    assert (workdir / "results/default/runs/mlp/cpu/bs100/seed1.json").exists()
    assert not (workdir / "results/default/runs/mlp/gpu").exists() or not list(
        (workdir / "results/default/runs/mlp/gpu").rglob("*.json")
    )


def _training_pids(workdir: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if ".train.py" in cmdline and cwd == str(workdir):
            pids.append(int(proc.name))
    return pids


def _log_sizes(workdir: Path) -> dict[Path, tuple[int, int]]:
    return {
        log: (log.stat().st_ino, log.stat().st_size) for log in (workdir / "logs" / "default" / "train").rglob("*.log")
    }


def _wait_mid_training(workdir: Path, since: dict, timeout: float = 120) -> Path:
    """Wait until some run logs epoch 5 in what it wrote after ``since``
    (Snakemake deletes a job's old log when the job starts again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in (workdir / "logs" / "default" / "train").rglob("*.log"):
            inode, size = since.get(log, (None, 0))
            with open(log, "rb") as fh:
                if os.fstat(fh.fileno()).st_ino == inode:
                    fh.seek(size)
                if b"epoch 5/" in fh.read():
                    return log
        time.sleep(0.1)
    raise AssertionError("no training run reached epoch 5")


def _records(workdir: Path) -> dict[Path, tuple[int, bytes]]:
    return {
        p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (workdir / "results" / "default" / "runs").rglob("*.json")
    }


def test_interrupted_runs_leave_nothing_and_rerun_completes_only_them(tmp_path):
    workdir, cfg, _ = synthetic_workdir(
        tmp_path,
        devices={"cpu": {"type": "cpu", "threads": 1, "framework": "jax"}},
        seeds=[1, 2],
        epochs=20,  # killed at epoch 5: 15 epochs (1.5-4 s here) to see it and kill it mid-training
        step_samples=0,
    )
    # the two runs alone (no calibration or report): what is interrupted here is training
    runs = [f"results/default/attempts/mlp/cpu/bs100/seed{seed}.json" for seed in (1, 2)]  # their attempts: the targets
    args = [sys.executable, "-m", "snakemake", *runs, "--cores", "1", "--configfile", str(cfg)]
    env = {**os.environ, "MNIST_SPEEDUP_LOCK_DIR": str(workdir)}

    # 1. SIGTERM to a training process (what a scheduler or `kill` sends)
    first = subprocess.Popen(args, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while not list((workdir / "results" / "default").rglob("seed*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    finished = _records(workdir)
    assert len(finished) == 1, first.communicate(timeout=60)[0]
    victim = _wait_mid_training(workdir, _log_sizes(workdir))
    for pid in _training_pids(workdir):
        os.kill(pid, signal.SIGTERM)
    output = first.communicate(timeout=120)[0]
    assert first.returncode != 0, output
    assert "stopped by signal SIGTERM" in victim.read_text()
    assert set(_records(workdir)) == set(finished)  # nothing new
    finished = _records(workdir)  # as Snakemake left it after the job (it may touch outputs)
    assert not list((workdir / "results" / "default").rglob("*.part"))

    # 2. Ctrl-C: SIGINT to snakemake and its jobs
    sizes = _log_sizes(workdir)
    second = subprocess.Popen(
        args, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    _wait_mid_training(workdir, sizes)
    os.killpg(second.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole foreground group
    output = second.communicate(timeout=120)[0]
    assert _records(workdir) == finished, output
    assert not list((workdir / "results" / "default").rglob("*.part"))

    # 3. the plan is exactly the missing runs; running completes them and leaves the finished one alone
    plan = planned_jobs(snakemake(workdir, *runs, "-n", "--cores", "1", "--configfile", str(cfg)))
    assert plan == {"train": 1}, plan
    snakemake(workdir, *runs, "--cores", "1", "--configfile", str(cfg))
    after = _records(workdir)
    assert len(after) == 2
    for path, state in finished.items():
        assert after[path] == state
