"""A record that contradicts itself is refused at the door (issue 40.1), one invariant per test: each case
is a sealed, well-typed record whose fields disagree, as a bug on another machine or a hand could make it.
Seen failing: with records/invariants.py's INVARIANTS emptied, every test below but the first failed."""

import copy

import pytest

from crafted import make_record, record_refusal
from mnist_speedup.records import invariants

_refusal = record_refusal


def _record(**changes) -> dict:
    return copy.deepcopy(make_record(**changes))


def test_a_consistent_record_passes():
    assert _refusal(_record()) is None
    assert invariants.problems(_record()) == []


def test_the_specs_framework_must_be_the_one_that_ran():
    """TensorFlow runs whose spec says framework: jax made a "speedup over its TensorFlow twin" of TensorFlow against itself."""
    r = _record()
    r["device_spec"]["framework"] = "jax"
    assert "`device_spec.framework` is 'jax' but the environment says 'tensorflow' trained" in _refusal(r)
    r["environment"]["framework"] = "jax"  # the forger's next step: the versions still say TensorFlow
    assert "`environment.jax` is missing" in _refusal(r)
    r["environment"]["jax"] = "0.10.2"
    assert "records TensorFlow's versions" in _refusal(r)


def test_the_specs_precision_must_be_the_numerics():
    r = _record(numerics={"precision": "mixed_bfloat16", "compute_dtype": "bfloat16", "jit_compile": False})
    assert "`numerics.precision` is 'mixed_bfloat16' but the device spec asks for 'float32'" in _refusal(r)
    r = _record(numerics={"precision": "float32", "compute_dtype": "bfloat16", "jit_compile": False})
    assert "`numerics.compute_dtype` is 'bfloat16', not float32's float32" in _refusal(r)


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("numerics", "tf32", True),
        ("environment", "tf32", True),
        ("environment", "torch_cudnn_tf32", True),
        ("numerics", "matmul_precision", "tensorfloat32"),
    ],
)
def test_a_float32_record_with_tf32_on_is_refused(section, key, value):
    r = _record(numerics={"precision": "float32", "compute_dtype": "float32", "jit_compile": False})
    r[section][key] = value
    assert f"`{section}.{key}` says TF32 was on" in _refusal(r)


def test_the_final_validation_accuracy_is_the_last_epochs():
    """An edited final accuracy flipped parity from FAIL to PASS (parity reads it)."""
    r = _record(val_accuracy=[0.5, 0.6, 0.7])
    r["quality"]["val_accuracy"] = 0.99
    assert "`quality.val_accuracy` is 0.99 but the last epoch's is 0.7" in _refusal(r)


def test_energy_per_epoch_and_watts_are_the_per_epoch_joules():
    """1e-9 J at 99,999 W was reported as "0.0 J"."""
    joules = {
        "source": "RAPL",
        "reason": None,
        "epoch_joules": [10.0, 12.0],
        "joules_per_epoch": 1e-9,
        "mean_watts": 99_999.0,
    }
    assert "`energy.joules_per_epoch` is 1e-09 but the per-epoch joules average 11.0" in _refusal(
        _record(energy=joules)
    )
    joules["joules_per_epoch"] = 11.0
    assert "`energy.mean_watts` is 99999.0 but the joules over the steady epochs' seconds" in _refusal(
        _record(energy=joules)
    )


def test_no_energy_reading_must_say_why():
    """An NVML source with no reading and no reason borrowed the CPU's reason sentence in the report."""
    r = _record(energy={"source": None, "reason": None, "joules_per_epoch": None, "mean_watts": None})
    assert "`energy.reason` is missing" in _refusal(r)


def test_the_steady_sd_is_the_epochs_sd():
    r = _record()
    r["timing"]["steady_epoch_std_s"] = 0.0001
    assert "`timing.steady_epoch_std_s` is 0.0001 but the steady epochs' SD is" in _refusal(r)


def test_the_steady_cv_is_the_epochs_cv():
    """A survivor of the 2026-12-07 mutation run: no test carried a CV (SD times the mean passed)."""
    import statistics

    r = _record(epoch_s=[2.0, 1.0, 1.2, 1.1])
    steady = r["timing"]["epoch_s"][1:]
    r["timing"]["steady_epoch_cv"] = statistics.stdev(steady) / statistics.fmean(steady)
    assert _refusal(r) is None
    r["timing"]["steady_epoch_cv"] = statistics.stdev(steady) * statistics.fmean(steady)
    assert "`timing.steady_epoch_cv` is" in _refusal(r)


def test_a_derived_field_left_null_beside_a_value_that_exists_is_refused():
    """A survivor of the 2026-12-07 mutation run: one side None and the other a number was not compared."""
    r = _record()
    r["timing"]["steady_epoch_std_s"] = None
    assert "`timing.steady_epoch_std_s` is None but the steady epochs' SD is" in _refusal(r)


def test_the_warm_up_flags_follow_warmup_epochs():
    r = _record()
    r["timing"]["epoch_is_warmup"] = [False, False, False]
    assert "`timing.epoch_is_warmup` is [False, False, False]" in _refusal(r)


def test_every_epoch_ran_its_optimizer_steps():
    r = _record()
    r["loop"]["optimizer_steps_per_epoch"] = [10, 9, 10]
    assert "`loop.optimizer_steps_per_epoch` is [10, 9, 10] but 10 steps per epoch" in _refusal(r)


def test_flops_per_second_are_the_epochs():
    r = _record()
    r["flops"]["achieved_per_s"] *= 3
    assert "`flops.achieved_per_s` is" in _refusal(r)


def test_a_run_cannot_finish_before_it_starts():
    r = _record(finished_at="2026-12-02T09:00:00.000+00:00")
    assert "`finished_at` is 2026-12-02T09:00:00.000+00:00, before the run started" in _refusal(r)


@pytest.mark.parametrize(("key", "value"), [("type", "tpu"), ("framework", "mxnet"), ("precision", "fp8")])
def test_a_word_this_workflow_does_not_know_is_refused_at_the_door(key, value):
    r = _record()
    r["device_spec"][key] = value
    assert f"`device_spec.{key}` is {value!r}, which this workflow does not know" in _refusal(r)


def test_a_warm_up_as_long_as_the_run_is_refused_with_both_numbers():
    """A survivor of the 2026-12-07 mutation run: the message lost its numbers and no test noticed."""
    r = _record()
    r["warmup_epochs"] = r["epochs"]
    assert f"`warmup_epochs` is {r['epochs']} with {r['epochs']} epochs" in _refusal(r)


def test_steps_skipped_by_float16s_loss_scaling_are_taken_from_the_count():
    """A survivor of the 2026-12-07 mutation run: no test had a skipped step, so reading the wrong key passed."""
    r = _record(
        numerics={
            "precision": "float32",
            "compute_dtype": "float32",
            "jit_compile": False,
            "loss_scaling": {"skipped_steps": 1, "final_scale": 16384.0, "skipped_steps_per_epoch": [0, 1, 0]},
        }
    )
    r["loop"]["optimizer_steps_per_epoch"] = [10, 9, 10]
    assert _refusal(r) is None
    r["loop"]["optimizer_steps_per_epoch"] = [10, 10, 10]
    assert "`loop.optimizer_steps_per_epoch` is [10, 10, 10] but 10 steps per epoch" in _refusal(r)
