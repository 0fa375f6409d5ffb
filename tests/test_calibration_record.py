"""The calibration record, checked where it enters (issue 31 (4), issue 27 (6)):
each case is a resealed edit that aggregation accepted before, and the
message names the file, the field, both values and the fix."""

import json

import pytest

from crafted import make_calibration, make_record, write_calibration, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.records import calibration, run_record


def aggregate_with(tmp_path, cal_path, device="cpu", threads=2, precision=None):
    spec = {"type": "cpu", "threads": threads} | ({"precision": precision} if precision else {})
    runs = [make_record(device, 100, s, device_spec=spec) for s in (1, 2)]
    runs += [make_record("cpu1", 100, s, device_spec={"type": "cpu", "threads": 1}) for s in (1, 2)]
    return aggregate.load_runs(write_records(tmp_path / "results", runs), [], [cal_path])[0]


def refused(tmp_path, cal_path, **kw) -> str:
    with pytest.raises(run_record.RecordError) as err:
        aggregate_with(tmp_path, cal_path, **kw)
    message = str(err.value)
    assert str(cal_path) in message and "Fix:" in message
    return message


def test_a_valid_calibration_gives_the_device_its_rate(tmp_path):
    path = write_calibration(tmp_path / "results", make_calibration("cpu"))
    summary = aggregate_with(tmp_path, path)
    assert set(summary[summary.device == "cpu"].calibrated_flops_per_s) == {1e10}


def test_a_bfloat16_calibration_for_a_float32_device_is_refused(tmp_path):
    """Planted once: without the spec check against the runs (and the dtype
    check on load) both edits were accepted and the float32 device was
    measured against its bfloat16 rate."""
    bf16 = make_calibration("cpu", device_spec={"precision": "mixed_bfloat16"}, dtype="bfloat16")
    message = refused(tmp_path, write_calibration(tmp_path / "results", bf16))
    assert "device_spec.precision" in message and "mixed_bfloat16" in message and "float32" in message
    # only the dtype edited: a float32 spec cannot hold a bfloat16 rate
    only_dtype = write_calibration(tmp_path / "other", make_calibration("cpu", dtype="bfloat16"))
    assert "dtype is 'bfloat16', but a float32 device computes in float32" in refused(tmp_path, only_dtype)


def test_another_devices_calibration_under_this_devices_name_is_refused(tmp_path):
    """Copied as it is: its own device field names the other device. Planted
    once: without the place check the device's rate became n/a silently."""
    copied = write_calibration(tmp_path / "results", make_calibration("cpu1", threads=1), name="cpu")
    message = refused(tmp_path, copied)
    assert "calibration of device 'cpu1'" in message and "device 'cpu' at workload 'mlp' belongs" in message
    # renamed and resealed: its spec is still the 1-thread device's
    renamed = write_calibration(tmp_path / "other", make_calibration("cpu", threads=1))
    message = refused(tmp_path, renamed)
    assert "device_spec.threads" in message and "1" in message and "2" in message


def test_an_older_calibration_version_is_refused(tmp_path):
    """CALIBRATION_SCHEMA_VERSION was written and never read. Planted once:
    without the version check a version-1 calibration was accepted."""
    old = write_calibration(tmp_path / "results", make_calibration("cpu", schema_version=1))
    message = refused(tmp_path, old)
    assert "schema_version 1" in message and "before workloads" in message


def test_a_calibration_of_another_workload_spec_is_refused(tmp_path):
    """Planted once: without the workload check a calibration at 100-100
    hidden widths gave the 800-800 MLP its rate."""
    other = make_calibration("cpu", workload_spec={"hidden": [100, 100]})
    message = refused(tmp_path, write_calibration(tmp_path / "results", other))
    assert "workload_spec" in message and "[100, 100]" in message and "[800, 800]" in message


@pytest.mark.parametrize("rate", [0.0, -1e10, 1e18, "fast"])
def test_a_rate_out_of_physical_range_is_refused(tmp_path, rate):
    bad = make_calibration("cpu", workload_shapes={"100": {"flops_per_s_median": rate}})
    path = write_calibration(tmp_path / "results", bad)
    with pytest.raises(run_record.RecordError, match="batch size 100|not a readable") as err:
        calibration.load(path)
    assert str(path) in str(err.value)


def test_a_calibration_missing_its_spec_is_refused(tmp_path):
    bad = make_calibration("cpu")
    del bad["device_spec"]
    path = write_calibration(tmp_path / "results", bad)
    with pytest.raises(run_record.RecordError, match="device_spec or workload_spec is missing"):
        calibration.load(path)
    # an edit that is not resealed fails its digest first
    path.write_text(json.dumps(make_calibration("cpu") | {"sha256": "0" * 64}))
    with pytest.raises(run_record.RecordError):
        calibration.load(path)


def test_a_calibration_nested_past_pythons_limit_is_refused_by_name(tmp_path):
    """Reliability 6 (5): a RecursionError naming nothing. Planted once: parse without its guard failed here."""
    path = write_calibration(tmp_path / "results", make_calibration("cpu"))
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "it is JSON nested deeper than Python reads" in refused(tmp_path, path)
