"""Damaged run records, merging, and the per-host timing lock."""

import json
import subprocess
import sys
import time

import pytest

from conftest import ROOT, copy_workflow, make_record, snakemake, tiny_config, write_config
from mnist_speedup import aggregate, records, tfdevice


def record(**changes):
    return make_record(epoch_s=[2.0, 1.0, 1.2], **changes)


def write(tmp_path, obj, name="seed1.json"):
    path = tmp_path / "runs" / "cpu" / "bs100" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test_good_record_loads(tmp_path):
    assert records.load(write(tmp_path, record()))["seed"] == 1


@pytest.mark.parametrize(
    "content, fragment",
    [
        (json.dumps(record())[:200], "is not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (record(schema_version=99), "schema_version 99 is not supported"),
        ({k: v for k, v in record().items() if k != "schema_version"}, "schema_version None is not supported"),
        ({**record(), "batch_size": "100"}, "`batch_size` has the wrong type"),
        ({**record(), "quality": {"test_accuracy": 0.9}}, "`quality.val_accuracy` is missing"),
        (record(schema_version=1), "written by an earlier version of this workflow"),
        (record(quality={"epoch_val_accuracy": [0.5, 7.5, 0.9]}), "accuracies in [0, 1]"),
        (record(timing={**record()["timing"], "epoch_s": [1.0]}), "must hold 3 positive epoch times"),
        (record(timing={**record()["timing"], "steady_epoch_mean_s": -1.0}), "must be positive"),
    ],
)
def test_damaged_records_name_the_file_and_problem(tmp_path, content, fragment):
    path = write(tmp_path, content)
    with pytest.raises(records.RecordError) as err:
        aggregate.load_runs([path])
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_timing_lock_serialises_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("MNIST_SPEEDUP_LOCK_DIR", str(tmp_path))
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]); from mnist_speedup import tfdevice\n"
         "with tfdevice.timing_lock(): print('held', flush=True); time.sleep(1.5)", str(ROOT / "workflow")],
        stdout=subprocess.PIPE, text=True, env={"MNIST_SPEEDUP_LOCK_DIR": str(tmp_path)},
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    messages = []
    start = time.monotonic()
    with tfdevice.timing_lock(messages.append) as waited:
        assert time.monotonic() - start >= 1.0 and waited >= 1.0
    assert messages and "waiting so that timings do not overlap" in messages[0]
    holder.wait(timeout=10)


def test_missing_profile_warns_loudly(tmp_path, mirror):
    folder, sums = mirror
    workdir = copy_workflow(tmp_path / "wf")
    cfg = write_config(workdir, tiny_config(folder, sums))
    proc = snakemake(workdir, "-n", "--cores", "2", "--workflow-profile", "none", "--configfile", str(cfg))
    assert "`timing_slot` resource has no limit" in proc.stdout + proc.stderr
    proc = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg))
    assert "timing_slot` resource has no limit" not in proc.stdout + proc.stderr
