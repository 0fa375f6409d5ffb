"""Issue 39 (4): benchmarks/gpu_run.sh rehearsed whole on a CPU stand-in: config/gpu.yaml with each GPU
device replaced by a one-thread CPU device of the same framework, synthetic MNIST, and a short deadline.
A first call is killed (SIGKILL, as the device tool ends a call at its limit) as soon as its partial
bundle holds the first block (every device's first run: the design's priority order), while its next run
trains, and leaves that verified partial bundle; the next call on the same checkout is not blocked, keeps
the finished runs, stays inside its own short deadline, cuts what does not fit (more runs are left than a
machine 3 times faster than this VM trains in its budget) and says so, and returns at most 8 files.
Each call's timing depends on events and on its own deadline, not on this machine's speed."""

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

from conftest import ROOT, copy_workflow, synthetic_mnist, write_mirror
from mnist_speedup.records import attempts, bundle
from mnist_speedup.spec import run

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # deadlines
pytest.importorskip("jax")
pytest.importorskip("torch")

# the second call's: 20 s for its start and runs (3-7 s each here, one at a time; on a slow machine perhaps
# none), 30 s for the tail (the cuts, about 0.2 s each, then the tables, report and bundle: 8-15 s here)
DEADLINE_S, RESERVE_S = 50, 30
#: the first call's deadline, far enough not to cut its first block (its kill comes first), and the kill's own
#: limit (no first block by then: the test fails)
FIRST_DEADLINE_S, KILL_BY_S = 300, 240


def stand_in(workdir, sums):
    """config/gpu.yaml with one-thread CPU stand-ins for the GPU devices (the TF32 one left out: on a CPU it
    would be a second float32 PyTorch device; the captured one too: on a CPU it compiles for some 40 s a run,
    where a GPU captures a graph), two batch sizes and three seeds (24 runs: 4 in the first call,
    and 20 left, about 60 s of work here, for the second call's 20 s), and a training set that synthetic MNIST has."""
    config = yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text())
    config["devices"] = {
        k: v for k, v in config["devices"].items() if v.get("precision") != "tf32" and v.get("mode") != "captured"
    }
    for spec in config["devices"].values():
        if spec["type"] == "gpu":
            spec.update(type="cpu")
            spec.pop("index")
        spec["threads"] = 1
    config |= {
        "validation_size": 200,
        "target_accuracy": 0.3,
        "mnist_sha256": sums,
        "epochs": 2,
        "seeds": [1, 2, 3],
        "batch_sizes": [500, 100],
        "calibration": {"square_size": 128, "repeats": 3},
    }
    path = workdir / "config" / "gpu-stand-in.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, config


def call(workdir, mirror, out, config, deadline_s=DEADLINE_S, kill_when=None):
    """One call of gpu_run.sh: (exit status, output). ``kill_when()`` true: the whole call is killed
    (SIGKILL), as the device tool ends it."""
    cmd = ["bash", "benchmarks/gpu_run.sh", "-", str(mirror), str(out)]
    env = {
        "PATH": f"{sys.prefix}/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "CONFIG": str(config),
        "DEADLINE_S": str(deadline_s),
        "RESERVE_S": str(RESERVE_S),
        "MNIST_SPEEDUP_LOCK_DIR": str(workdir),
    }
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        t0 = time.time()
        while proc.poll() is None and time.time() - t0 < (KILL_BY_S if kill_when else deadline_s + 60):
            if kill_when and kill_when():
                break
            time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return proc.returncode, log.read_text()


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-rehearsal")
    workdir = copy_workflow(root / "wf")
    shutil.copytree(ROOT / "benchmarks", workdir / "benchmarks", ignore=shutil.ignore_patterns("*.tar.gz", "h200-*"))
    sums = write_mirror(root / "mirror", synthetic_mnist())
    config_path, config = stand_in(workdir, sums)

    def first_block_landed():  # the partial report is written after its bundle
        report = root / "out1" / "partial-report.md"
        held = re.search(r"(\d+) runs finished", report.read_text()) if report.is_file() else None
        return held is not None and int(held[1]) >= len(config["devices"])

    killed = call(workdir, root / "mirror", root / "out1", config_path, FIRST_DEADLINE_S, first_block_landed)
    t0 = time.time()
    rc, output = call(workdir, root / "mirror", root / "out2", config_path)
    return {
        "workdir": workdir,
        "out1": root / "out1",
        "out2": root / "out2",
        "config": config,
        "killed": killed,
        "rc": rc,
        "output": output,
        "elapsed": time.time() - t0,
        "t0": t0,
    }


def test_a_killed_call_leaves_a_verified_partial_bundle(calls):
    out = calls["out1"]
    assert calls["killed"][0] == -signal.SIGKILL, "the first call ended before it was killed"
    partial = list(out.glob("partial-bundle-*.tar.gz"))
    assert partial, f"no run finished before the kill: {calls['killed'][1][-3000:]}"
    meta = bundle.check(partial[0])
    assert any(name.startswith("runs/") for name in meta["files"]), calls["killed"][1]
    assert (out / "partial-report.md").read_text().startswith("# MNIST training speedup report (partial)")


def test_the_next_call_is_not_blocked_and_keeps_inside_its_deadline(calls):
    assert calls["rc"] == 0, calls["output"][-5000:]
    assert calls["elapsed"] <= DEADLINE_S, calls["output"][-3000:]
    assert "LockException" not in calls["output"] and "Directory cannot be locked" not in calls["output"]
    records = [json.loads(p.read_text()) for p in run.run_files(calls["workdir"] / "results" / "gpu")]
    finished = [r for r in records if "finished_at" in r]
    budget_end = calls["t0"] + DEADLINE_S - RESERVE_S + 1.0  # the script starts within a second of t0
    late = [r["finished_at"] for r in finished if dt.datetime.fromisoformat(r["finished_at"]).timestamp() > budget_end]
    assert late == []  # no run ran past the time budget
    frameworks = {r["environment"]["framework"] for r in finished}  # the machine's own versions, recorded
    assert frameworks == {"jax", "pytorch"} and all(
        r["environment"]["torch"] for r in finished if r["environment"]["framework"] == "pytorch"
    )


def test_it_returns_at_most_8_files_and_every_bundle_verifies(calls):
    out = calls["out2"]
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and not [f for f in files if f.startswith(".")], files
    final, partial = bundle.check(next(out.glob("bundle-*.tar.gz"))), bundle.check(next(out.glob("partial-*.tar.gz")))
    assert set(final["files"]) == set(partial["files"])  # the last partial bundle holds every finished run
    assert {"gpu_run.log", "report.md", "speedup.png", "tables-and-logs.tar.gz", "partial-report.md"} <= set(files)
    with tarfile.open(out / "tables-and-logs.tar.gz") as tar:
        assert any(n.endswith("summary.csv") for n in tar.getnames())


def test_the_first_block_ran_each_cut_was_due_and_the_report_names_them(calls):
    config = calls["config"]
    results = calls["workdir"] / "results" / "gpu"
    first_block = [run.run_path(results, "mlp", d, 500, 1) for d in config["devices"]]
    assert all("finished_at" in json.loads(p.read_text()) for p in first_block)
    tried = [attempts.read(p) for p in sorted((results / "attempts").rglob("seed*.json"))]
    notes = [a["cut"] for a in tried if a["outcome"] == attempts.CUT]
    assert all(n["left_s"] <= 0 or n["estimate_s"] is None or n["estimate_s"] > n["left_s"] for n in notes)
    cut_places = [
        attempts.record_path_of(p)
        for p in sorted((results / "attempts").rglob("seed*.json"))
        if attempts.read(p)["outcome"] == attempts.CUT
    ]
    assert not [p for p in cut_places if p.exists()]  # a cut run leaves nothing under runs/
    report = (calls["out2"] / "report.md").read_text()
    assert "## Speedup within each framework" in report and "| PyTorch |" in report
    if "## Cut by the time budget" not in report:
        pytest.fail("nothing was cut: the rehearsal's budget no longer tests the cut (shorten DEADLINE_S)")
    n_cut = int(report.split("s cut ", 1)[1].split(" run", 1)[0])
    assert n_cut == len(notes)
