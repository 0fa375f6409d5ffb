"""House 4 (1): one record model. A record stores raw measurements; every derived value is computed when
it is read (records/derived.py). Version 4 stores none; version 3 (every record before, both kept bundles)
is read through one migration: its seal checked over its own content, its stored values against their
source, then computed again. The record as read is read-only."""

import json
import math

import pytest

from crafted import make_record, write_records
from mnist_speedup.records import derived, seal
from mnist_speedup.records import run_record as records
from mnist_speedup.spec import run


def as_version_4(record: dict) -> dict:
    """``record`` (version 3, as make_record writes it) as the trainer writes it today: raw values only."""
    return derived.strip(record) | {"schema_version": 4}


def _flat(value, prefix=""):
    if isinstance(value, dict):
        return {k2: v2 for k, v in value.items() for k2, v2 in _flat(v, f"{prefix}{k}.").items()}
    return {prefix.rstrip("."): value}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_the_current_version_stores_raw_values_only():
    assert run.SCHEMA_VERSION == 4
    assert derived.stored(as_version_4(make_record())) == []
    assert set(derived.stored(make_record())) >= {
        "timing.steady_epoch_mean_s",
        "flops.achieved_per_s",
        "quality.val_accuracy",
    }


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {
            "energy": {
                "source": "rapl",
                "reason": None,
                "epoch_joules": [30.0, 36.0],
                "joules_per_epoch": 33.0,
                "mean_watts": 66.0 / 2.2,
            }
        },
    ],
)
def test_a_version_3_record_and_its_version_4_twin_read_the_same(tmp_path, changes):
    """Every field, derived ones included, the same (the version and the seal aside). Planted once: the steady
    mean taken over every epoch (the warm-up too) in derived.py failed here and in test_records."""
    v3 = make_record("cpu", 100, 1, epoch_s=(2.0, 1.0, 1.2), **changes)
    (p3,) = write_records(tmp_path / "a", [v3])
    (p4,) = write_records(tmp_path / "b", [as_version_4(v3)])
    read3, read4 = _flat(records.load(p3)), _flat(records.load(p4))
    skip = {"schema_version", seal.DIGEST_FIELD}
    assert set(read3) == set(read4)
    assert [k for k in read3 if k not in skip and not _same(read3[k], read4[k])] == []
    assert read4["timing.steady_epoch_mean_s"] == pytest.approx(1.1)
    assert read4["flops.achieved_per_s"] == pytest.approx(read4["flops.per_epoch"] / 1.1)


def test_a_version_4_record_that_stores_a_derived_value_is_refused(tmp_path):
    """A stored copy could disagree with its source: version 4 has none to check."""
    record = as_version_4(make_record())
    record["timing"] = record["timing"] | {"steady_epoch_mean_s": 0.001}
    (path,) = write_records(tmp_path, [record])
    with pytest.raises(records.RecordError, match=r"`timing.steady_epoch_mean_s` is stored, but a version-4 record"):
        records.load(path)


def test_a_version_3_record_whose_stored_value_disagrees_is_refused_before_its_migration(tmp_path):
    record = make_record()
    record["timing"]["steady_epoch_mean_s"] *= 2
    (path,) = write_records(tmp_path, [record])
    with pytest.raises(records.RecordError, match=r"timing.steady_epoch_mean_s"):
        records.load(path)


def test_the_seal_is_checked_over_the_record_as_written(tmp_path):
    (path,) = write_records(tmp_path, [as_version_4(make_record())])
    data = json.loads(path.read_text())
    data["timing"]["epoch_s"][1] = 0.5
    path.write_text(json.dumps(data))
    with pytest.raises(records.RecordError, match="was edited after it was written"):
        records.load(path)


def test_a_record_as_read_is_read_only_and_a_copy_is_not(tmp_path):
    (path,) = write_records(tmp_path, [as_version_4(make_record())])
    record = records.load(path)
    with pytest.raises(TypeError, match="read-only"):
        record["seed"] = 9
    with pytest.raises(TypeError, match="read-only"):
        record["timing"]["steady_epoch_mean_s"] = 1.0
    changed = record | {"seed": 9}
    assert changed["seed"] == 9 and record["seed"] == 1
    import copy

    deep = copy.deepcopy(record)
    deep["timing"]["epoch_s"] = []
    assert record["timing"]["epoch_s"] and json.loads(json.dumps(record))["seed"] == 1
