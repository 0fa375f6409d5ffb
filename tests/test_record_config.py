"""Issue 31 (3): a record that disagrees with its device or workload is refused
(records edited and resealed, as another machine's genuine ones would be)."""

import pytest

from crafted import make_record, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.records import run_record as records

CONFIG_DEVICES = {
    "cpu": {"type": "cpu", "threads": 2, "precision": "float32", "jit_compile": False, "framework": "tensorflow"},
    "cpu1": {"type": "cpu", "threads": 1, "precision": "float32", "jit_compile": False, "framework": "tensorflow"},
}
CONFIG_WORKLOADS = {"mlp": {"type": "mlp", "hidden": [800, 800], "dropout": [0.2, 0.5, 0.5]}}


def _runs(**changes_of_cpu1_seed2):
    out = []
    for seed in (1, 2):
        for device, threads in (("cpu", 2), ("cpu1", 1)):
            changes = {"threads": threads, **(changes_of_cpu1_seed2 if (device, seed) == ("cpu1", 2) else {})}
            out.append(make_record(device, 100, seed, **changes))
    return out


def _check(tmp_path, recs, extra=False):
    paths = write_records(tmp_path / ("imported" if extra else "local"), recs)
    local, extra_dirs = ([], [tmp_path / "imported"]) if extra else (paths, [])
    summary, _ = aggregate.load_runs(local, extra_dirs)
    aggregate.check_against_config(summary, CONFIG_DEVICES, CONFIG_WORKLOADS)


def test_records_that_agree_with_the_config_pass(tmp_path):
    _check(tmp_path, _runs())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"device_spec": {"precision": "mixed_bfloat16"}}, "device_spec.precision"),
        ({"threads": 2}, "device_spec.threads"),
        ({"device_spec": {"framework": "jax"}}, "device_spec.framework"),
    ],
)
def test_a_local_record_unlike_its_devices_config_is_refused(tmp_path, change, field):
    """Planted once: without the check each of these passed and was pooled."""
    with pytest.raises(
        records.RecordError,
        match=rf"cpu1/bs100/seed2\.json: `{field}` is .* but the config's "
        r"device cpu1 says .*Fix: delete it",
    ):
        _check(tmp_path, _runs(**change))


def test_every_run_of_a_workload_with_another_spec_is_refused(tmp_path):
    other = [
        make_record(
            r["device"],
            100,
            r["seed"],
            threads=r["device_spec"]["threads"],
            workload_spec={"type": "mlp", "hidden": [64]},
        )
        for r in _runs()
    ]
    with pytest.raises(records.RecordError, match=r"`workload_spec` is .*64.* but the config's workload mlp says"):
        _check(tmp_path, other)


def test_an_imported_device_whose_runs_differ_among_themselves_is_refused(tmp_path):
    with pytest.raises(
        records.RecordError, match=r"`device_spec.precision` is 'mixed_bfloat16' but 'float32' .*imported device"
    ):
        _check(tmp_path, _runs(device_spec={"precision": "mixed_bfloat16"}), extra=True)
