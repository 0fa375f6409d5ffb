"""Every warning at its exact threshold (issue 32): a value at the limit
is not warned of, the next representable value above it is. Planted once:
each comparison turned into >= (or, for single runs, `> 2`) failed here."""

import math

import pandas as pd
import pytest

from mnist_speedup.analysis import checks


def _rows(**columns):
    base = {"workload": "mlp", "batch_size": 100, "device": "cpu1", "seed": 1}
    return pd.DataFrame([base | columns])


def _above(x: float) -> float:
    return math.nextafter(x, math.inf)


@pytest.mark.parametrize(
    "warn, column, limit, extra",
    [
        (checks.noisy, "cv_seeds", checks.CV_WARN, {"cv_epochs": 0.0}),
        (checks.noisy, "cv_epochs", checks.CV_WARN, {"cv_seeds": 0.0}),
        (checks.host_dispatch, "host_share_of_timed_epoch", checks.HOST_OVERHEAD_WARN, {}),
        (checks.interference, "other_cores_max", checks.INTERFERENCE_WARN, {}),
    ],
)
def test_a_value_at_the_threshold_is_not_warned_and_one_above_is(warn, column, limit, extra):
    assert warn(_rows(**{column: limit}, **extra)) == []
    assert len(warn(_rows(**{column: _above(limit)}, **extra))) == 1


def test_an_accuracy_difference_at_the_tolerance_is_not_flagged():
    # binary fractions, so that the difference is exactly the tolerance
    df = pd.concat([_rows(device="cpu", test_accuracy=0.5), _rows(test_accuracy=0.5078125)])
    assert not checks.accuracy_flags(df, "cpu", tolerance=0.0078125).flag.any()
    df.loc[df.device == "cpu1", "test_accuracy"] = _above(0.5078125)
    assert checks.accuracy_flags(df, "cpu", tolerance=0.0078125).set_index("device").flag["cpu1"]


def test_drift_at_its_limit_is_not_warned():
    speedup = _rows(cv_seeds=0.0)
    at = {"epoch_time_drift": checks.MIN_DRIFT_WARN, "epoch_time_drift_ci_low": 0.01, "epoch_time_drift_ci_high": 0.05}
    assert checks.drift(_rows(**at), speedup) == []
    assert len(checks.drift(_rows(**at | {"epoch_time_drift": _above(checks.MIN_DRIFT_WARN)}), speedup)) == 1


def test_exactly_two_runs_per_setting_need_no_single_run_warning():
    two = pd.concat([_rows(seed=1), _rows(seed=2)])
    assert checks.single_runs(two) == []
    assert len(checks.single_runs(pd.concat([two, _rows(device="cpu", seed=1)]))) == 1


def test_a_warning_that_lists_runs_names_a_handful_and_counts_the_rest():
    """Issue 48 (3): at 20,016 runs the interference warning was 1 MB on one line. Planted once: the list
    joined whole failed here."""
    base = {"workload": "mlp", "batch_size": 100, "device": "cpu1", "other_cores_max": 0.9, "machine_cores": 2.0}
    runs = pd.DataFrame([base | {"seed": s, "threads": 2} for s in range(20_016)])
    for warn in (checks.interference, checks.oversubscription):
        (text,) = warn(runs)
        assert len(text) < 1_000 and "and 20,011 more" in text and text.count("seed ") == 5
    assert checks.unsigned([f"f{i}" for i in range(3)])[0].count(", ") == 2  # a few are named whole
