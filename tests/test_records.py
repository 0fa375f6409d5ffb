"""Damaged run records, merging, and the per-host timing lock."""

import json
import subprocess
import sys
import time

import pytest

from conftest import ROOT, copy_workflow, snakemake, tiny_config, write_config
from crafted import make_record
from mnist_speedup.analysis import aggregate
from mnist_speedup.measure import hostlock
from mnist_speedup.records import run_record as records
from mnist_speedup.records import seal


def record(**changes):
    return make_record(epoch_s=[2.0, 1.0, 1.2], **changes)


def write(tmp_path, obj, name="seed1.json"):
    path = tmp_path / "runs" / "cpu" / "bs100" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(seal.seal(obj) if isinstance(obj, dict) else obj))
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
        (record(timing={**record()["timing"], "epoch_s": [1.0]}), "must hold 3 finite positive epoch times"),
        (record(timing={**record()["timing"], "steady_epoch_mean_s": -1.0}), "but the mean of the epochs"),
        # issue 13: values that make no sense are refused, naming the field
        (record(timing={**record()["timing"], "steady_epoch_mean_s": 0.01}), "`timing.steady_epoch_mean_s` is 0.01"),
        (record(timing={**record()["timing"], "epoch_s": [2.0, 1e308, 1.2]}), "each under a day"),
        (
            json.dumps(record()).replace('"epoch_s": [2.0', '"epoch_s": [Infinity'),
            "`timing.epoch_s` is inf, not a number a measurement can have",
        ),
        (record(timing={**record()["timing"], "samples_per_s": -5}), "`timing.samples_per_s` is -5"),
        (record(quality={"test_accuracy": 7.5}), "`quality.test_accuracy` is 7.5, outside [0, 1]"),
        (record(flops={"achieved_per_s": -1.0}), "`flops.achieved_per_s` must be positive"),
        (record(device="../../x"), "device label '../../x' is not a safe name"),
        (record(environment={"hostname": "<script>alert(1)</script>|x"}), "is not a safe name"),
        (record(environment={"hostname": "evil|host"}), "hostname 'evil|host' is not a safe name"),
        # reliability 6 (5): each gave an exception naming no file (RecursionError, TypeError); planted once each
        ("[" * 100_000 + "]" * 100_000, "it is JSON nested deeper than Python reads"),
        (json.dumps(record(environment={"deep": json.loads('{"a":' * 40 + "1" + "}" * 40)})), "nested 42 levels deep"),
        (
            record(finished_at="2026-12-07T10:00:00"),
            "`finished_at` is '2026-12-07T10:00:00', a time without its offset",
        ),
    ],
)
def test_damaged_records_name_the_file_and_problem(tmp_path, content, fragment):
    path = write(tmp_path, content)
    with pytest.raises(records.RecordError) as err:
        aggregate.load_runs([path])
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_a_record_edited_after_it_was_written_is_refused(tmp_path):
    path = write(tmp_path, record())
    text = path.read_text()
    path.write_text(text.replace('"test_accuracy": 0.91', '"test_accuracy": 0.99'))
    with pytest.raises(records.RecordError, match="edited after it was written") as err:
        aggregate.load_runs([path])
    assert str(path) in str(err.value)


def test_a_record_without_its_digest_is_refused(tmp_path):
    path = tmp_path / "seed1.json"
    path.write_text(json.dumps(record()))
    with pytest.raises(records.RecordError, match="has no `record_sha256`"):
        records.load(path)


def test_timing_lock_serialises_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("MNIST_SPEEDUP_LOCK_DIR", str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; sys.path.insert(0, sys.argv[1]); from mnist_speedup.measure import hostlock\n"
            "with hostlock.timing_lock(): print('held', flush=True); time.sleep(1.5)",
            str(ROOT / "workflow"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={"MNIST_SPEEDUP_LOCK_DIR": str(tmp_path)},
    )
    assert holder.stdout.readline().strip() == "held"
    messages = []
    start = time.monotonic()
    with hostlock.timing_lock(messages.append) as waited:
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


# ------------------------------------------------------------ records from other machines (issue 13)


def test_same_hostname_on_two_machines_is_never_pooled(tmp_path):
    from crafted import write_records

    mine = [make_record("cpu", 100, s, environment={"hostname": "vm", "machine_id": "aaaaaa11"}) for s in (1, 2, 3)]
    theirs = [make_record("cpu", 100, s, environment={"hostname": "vm", "machine_id": "bbbbbb22"}) for s in (1, 2, 3)]
    local = write_records(tmp_path / "local", mine)
    write_records(tmp_path / "other", theirs)
    summary, _ = aggregate.load_runs(local, [tmp_path / "other"])
    assert sorted(summary.device.unique()) == ["cpu@vm-aaaaaa", "cpu@vm-bbbbbb"]
    assert (summary.groupby("device").size() == 3).all()


def test_copies_and_genuine_duplicates_get_different_messages(tmp_path):
    from crafted import write_records

    runs = [make_record("cpu", 100, s) for s in (1, 2)]
    local = write_records(tmp_path / "local", runs)
    write_records(tmp_path / "copy", runs)
    with pytest.raises(records.RecordError, match="the same run record appears more than once"):
        aggregate.load_runs(local, [tmp_path / "copy"])
    write_records(tmp_path / "rerun", [make_record("cpu", 100, s, epoch_s=[2.0, 1.1, 1.3]) for s in (1, 2)])
    with pytest.raises(records.RecordError, match="They are not copies"):
        aggregate.load_runs(local, [tmp_path / "rerun"])


def test_text_from_other_machines_is_escaped_in_the_report(tmp_path):

    from crafted import crafted_tables, report_tables
    from mnist_speedup.report import markdown

    evil = "<script>alert(1)</script>|x"
    recs = [make_record("cpu", 100, s) for s in (1, 2, 3)]
    recs += [
        make_record(
            "cpu1", 100, s, environment={"hostname": "box", "machine_id": "m2", "cpu_model": evil, "tensorflow": evil}
        )
        for s in (1, 2, 3)
    ]
    summary, speedup, table, _ = crafted_tables(tmp_path, recs)
    tables = report_tables(summary, speedup, table, "cpu", 0.95)
    text = markdown.render(
        markdown.Report(tables, "cpu", {}, {"speedup": [], "timeline": []}, {"cpu1": {"cpu_model": evil}})
    )
    outside_code = "".join(part for i, part in enumerate(text.split("```")) if i % 2 == 0)
    assert "<script>" not in outside_code  # fenced code is shown verbatim, never run
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in text
    for line in text.splitlines():
        if line.startswith("<details>"):
            assert "<script>" not in line
