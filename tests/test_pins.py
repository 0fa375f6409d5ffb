"""Issue 32: pins for the places where the second audit's planted bugs
survived, each against a value computed by hand or from first principles."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crafted import make_record, write_records
from mnist_speedup.analysis import replication, scaling
from mnist_speedup.records import run_record as records
from mnist_speedup.spec import workloads


def test_the_widest_row_is_never_narrower_than_any_other_row():
    """A property over random tables with several devices and workloads.
    Planted once: `min` for `max` in replication.widest failed."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(2, 8))
        s = rng.uniform(0.5, 20, n)
        half = rng.uniform(0, 0.5, n) * s
        table = pd.DataFrame(
            {
                "device": [f"d{i}" for i in range(n)],
                "workload": "mlp",
                "batch_size": 100,
                "speedup": s,
                "speedup_ci_low": s - half,
                "speedup_ci_high": s + half,
            }
        )
        table.loc[0, "device"] = "base"
        w = replication.widest(table, "base")
        others = table[table.device != "base"]
        widths = (others.speedup_ci_high - others.speedup_ci_low) / 2 / others.speedup
        assert w["half_width"] == pytest.approx(widths.max()) and w["device"] == others.device[widths.idxmax()]


def test_the_geometric_means_interval_by_hand():
    """Two workloads, unpaired: log ratios with delta-method variances, the
    mean over workloads, its Welch-Satterthwaite df, t at 97.5%, by hand.
    Planted once: df as the sum of the parts' df (not Welch) failed."""
    parts = [scaling.LogRatio(math.log(2.0), 0.01, 4.0), scaling.LogRatio(math.log(8.0), 0.04, 2.0)]
    mean = (math.log(2.0) + math.log(8.0)) / 2  # geometric mean 4
    var = (0.01 + 0.04) / 4
    df = var**2 / ((0.01 / 4) ** 2 / 4.0 + (0.04 / 4) ** 2 / 2.0)  # 2.94...
    half = sps.t.ppf(0.975, df) * math.sqrt(var)
    g, lo, hi = scaling.combine(parts)
    assert g == pytest.approx(4.0)
    assert (lo, hi) == pytest.approx((math.exp(mean - half), math.exp(mean + half)), rel=1e-12)


@pytest.mark.parametrize("factor", [0.5, 2])
def test_a_flop_count_off_either_way_is_refused(tmp_path, factor):
    """The record's FLOPs per step must be the workload's own: an undercount
    is refused as well as an overcount. Planted once: a check of `>` only
    passed the halved count."""
    rec = make_record()
    rec["flops"]["per_step"] = int(rec["flops"]["per_step"] * factor)
    (path,) = write_records(tmp_path, [rec])
    with pytest.raises(records.RecordError, match=r"flops\.per_step"):
        records.load(path)


def test_a_record_of_another_workload_in_a_workloads_folder_is_refused(tmp_path):
    """Its content names workload `cnn`, its folder `mlp`."""
    rec = make_record(workload="cnn", workload_spec={"type": "cnn"})
    (path,) = write_records(tmp_path, [rec])
    moved = path.parents[3] / "mlp" / path.relative_to(path.parents[3] / "cnn")
    moved.parent.mkdir(parents=True)
    path.rename(moved)
    with pytest.raises(records.RecordError, match=r"says workload 'cnn' but lies in the folder of workload mlp"):
        records.load(moved)


def test_the_calibrated_rate_divides_by_the_products_flops(monkeypatch):
    """The calibration times the products of one step, so its rate is their
    FLOPs over the time: for the MLP at batch 100, by hand, 2 x 100 x (784 x
    800 + 800 x 800 + 800 x 10) forward, the same for the weight gradients,
    and the input gradients of the second and third layers: 639,680,000, not
    the whole step's 656,125,520 (the element-wise rest is not timed there).
    Planted once: training_step_flops in calibrate.workload_rate failed."""
    from mnist_speedup.measure import calibrate

    seen = {}

    def fake_rate(fn, flops, repeats, min_seconds=0.2, sync=None):
        seen["flops"] = flops
        return {"flops_per_s_median": 1.0, "flops_per_s_all": [1.0], "inner_iterations": 1}

    class Framework:
        def product_rate_function(self, products, dtype):
            return (lambda: None), (lambda _r: None)

    monkeypatch.setattr(calibrate, "_rate", fake_rate)
    calibrate.workload_rate(Framework(), workloads.of({"type": "mlp"}), 100, 1)
    forward = 2 * 100 * (784 * 800 + 800 * 800 + 800 * 10)
    assert seen["flops"] == 2 * forward + 2 * 100 * (800 * 800 + 800 * 10) == 639_680_000
