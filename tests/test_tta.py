"""Time to accuracy: hand-made accuracy sequences, the censoring rule,
best against best, and cost."""

import math

import numpy as np
import pandas as pd
import pytest

from crafted import crafted_tables, make_record
from mnist_speedup.analysis import tta

EPOCHS = [3.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize(
    "accuracies, expected",
    [
        ([0.90, 0.95, 0.96, 0.97], (True, 2, 5.0)),  # exactly at the threshold counts
        ([0.96, 0.97, 0.98, 0.99], (True, 1, 3.0)),  # reached in epoch 1: the warm-up epoch's clock counts
        ([0.80, 0.90, 0.94, 0.951], (True, 4, 9.0)),  # only in the last epoch
        ([0.80, 0.90, 0.94, 0.949], (False, None, None)),  # never
    ],
    ids=["at threshold", "epoch 1", "last epoch", "never"],
)
def test_time_to_target_by_hand(accuracies, expected):
    assert tta.time_to_target(EPOCHS, accuracies, 0.95) == expected


def test_warmup_epochs_count_in_the_time(tmp_path):
    recs = [make_record("cpu", 100, s, [5.0, 1.0, 1.0], [0.5, 0.96, 0.97], warmup_epochs=1) for s in (1, 2)]
    summary, _, _, _ = crafted_tables(tmp_path, recs)
    assert list(summary.time_to_target_s) == [6.0, 6.0] and list(summary.epochs_to_target) == [2, 2]


def both(tmp_path, dev_acc, base_acc=(0.5, 0.96, 0.97), prices=None):
    recs = [make_record("cpu", 100, s, [2.0, 2.0 + 0.1 * s, 2.0], list(base_acc)) for s in (1, 2, 3)]
    recs += [
        make_record("gpu", 100, s, [1.0, 1.0 + 0.07 * s, 1.0], list(a), threads=4) for s, a in zip((1, 2, 3), dev_acc)
    ]
    return crafted_tables(tmp_path, recs, prices=prices)


def test_censored_pair_gets_no_speedup_and_says_why(tmp_path):
    never = (0.5, 0.6, 0.7)
    ok = (0.5, 0.96, 0.97)
    summary, _, table, _ = both(tmp_path, [ok, never, ok])
    row = table.set_index("device").loc["gpu"]
    assert row.runs_reached == 2 and row.runs == 3
    assert math.isnan(row.tta_speedup) and math.isnan(row.time_to_target_s_mean)  # never averaged over 2 of 3
    assert row.tta_note == (
        "1 of 3 runs of this device did not reach 95% in 3 epochs: add epochs or lower target_accuracy"
    )
    assert not summary[summary.device == "gpu"].target_reached.all()  # the run is kept, marked


def test_reached_pair_gets_paired_speedup(tmp_path):
    ok = (0.5, 0.96, 0.97)
    _, _, table, _ = both(tmp_path, [ok, ok, ok])
    row = table.set_index("device").loc["gpu"]
    assert row.tta_speedup == pytest.approx((4.1 + 4.2 + 4.3) / (2.07 + 2.14 + 2.21))
    assert "paired" in row.tta_ci_method and row.tta_speedup_ci_low < row.tta_speedup < row.tta_speedup_ci_high


def test_best_batch_size_marked_and_best_against_best(tmp_path):
    recs = []
    for bs, base_t, dev_t, dev_acc in ((100, 2.0, 1.0, [0.5, 0.96, 0.97]), (500, 1.5, 0.3, [0.5, 0.6, 0.96])):
        recs += [make_record("cpu", bs, s, [base_t] * 3, [0.5, 0.96, 0.97]) for s in (1, 2, 3)]
        recs += [make_record("gpu", bs, s, [dev_t * (1 + 0.01 * s)] * 3, dev_acc, threads=4) for s in (1, 2, 3)]
    summary, _, table, _ = crafted_tables(tmp_path, recs)
    best = table[table.best_batch_size].set_index("device").batch_size
    assert best["cpu"] == 500  # 3.0 s to target against 4.0 s at batch 100
    assert best["gpu"] == 500  # 3 epochs x 0.3 s against 2 x 1.0 s
    bvb = tta.best_against_best(table, tta.per_run(crafted_tables(tmp_path / "again", recs)[3], 0.95), "cpu")
    assert bvb.iloc[0].device_batch_size == 500 and bvb.iloc[0].tta_speedup == pytest.approx(3.0 / (0.9 * 1.02))


def test_cost_ratio_equals_time_ratio_for_equal_prices(tmp_path):
    ok = (0.5, 0.96, 0.97)
    _, speedup, table, _ = both(tmp_path, [ok, ok, ok], prices={"cpu": 2.0, "gpu": 2.0})
    row = table.set_index("device").loc["gpu"]
    assert (row.cost_ratio, row.cost_ratio_ci_low, row.cost_ratio_ci_high) == pytest.approx(
        (row.tta_speedup, row.tta_speedup_ci_low, row.tta_speedup_ci_high)
    )
    assert row.cost_to_target == pytest.approx(row.time_to_target_s_mean / 3600 * 2.0)
    srow = speedup.set_index("device").loc["gpu"]
    assert srow.cost_ratio == pytest.approx(srow.speedup)
    _, _, dearer, _ = both(tmp_path / "b", [ok, ok, ok], prices={"cpu": 1.0, "gpu": 4.0})
    assert dearer.set_index("device").loc["gpu"].cost_ratio == pytest.approx(row.tta_speedup / 4)


def _fieller(x, y, paired: bool):
    """Fieller's 95% interval for mean(x) / mean(y), written out here from the textbook: paired (n - 1 df) or
    independent (Welch-Satterthwaite df at the estimate)."""
    from scipy import stats as scipy_stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    mx, my, r = x.mean(), y.mean(), x.mean() / y.mean()
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    cov = np.cov(x, y, ddof=1)[0, 1] / len(x) if paired else 0.0
    df = len(x) - 1 if paired else (vx + r**2 * vy) ** 2 / (vx**2 / (len(x) - 1) + (r**2 * vy) ** 2 / (len(y) - 1))
    t2 = scipy_stats.t.ppf(0.975, df) ** 2
    a, b, c = my**2 - t2 * vy, mx * my - t2 * cov, mx**2 - t2 * vx
    return r, (b - np.sqrt(b * b - a * c)) / a, (b + np.sqrt(b * b - a * c)) / a


def test_every_number_of_the_tta_and_best_against_best_tables_against_a_hand_computed_case():
    """Reliability 6 (8): a slip in the time-to-accuracy statistics went uncaught by the fast lane. Means, SDs
    (n - 1), epochs, speedups and both intervals of a case computed here by hand. Planted once: the SD with
    ddof=0 failed here."""
    times = {("cpu", 100): [10.0, 12.0, 14.0], ("gpu", 100): [5.0, 6.0, 7.5],
             ("cpu", 500): [9.0, 10.0, 11.5], ("gpu", 500): [6.0, 7.0, 8.0]}  # fmt: skip
    epochs = {("cpu", 100): [5, 6, 7], ("gpu", 100): [5, 5, 6], ("cpu", 500): [3, 3, 4], ("gpu", 500): [4, 4, 4]}
    runs = pd.DataFrame(
        [
            {"workload": "mlp", "device": d, "batch_size": bs, "seed": s + 1, "target_reached": True,
             "epochs_to_target": epochs[d, bs][s], "time_to_target_s": t}
            for (d, bs), ts in times.items() for s, t in enumerate(ts)
        ]
    )  # fmt: skip
    summary = runs[["workload", "device", "batch_size", "seed"]].assign(
        machine_key="m", origin="local", device_label=runs.device, epochs=8
    )
    table = tta.table(summary, runs, "cpu", 0.9).set_index(["device", "batch_size"])
    gpu = table.loc[("gpu", 100)]
    assert gpu.time_to_target_s_mean == pytest.approx(np.mean(times["gpu", 100]), rel=1e-12)
    assert gpu.time_to_target_s_std == pytest.approx(np.std(times["gpu", 100], ddof=1), rel=1e-12)
    assert gpu.epochs_to_target_mean == pytest.approx(16 / 3, rel=1e-12)
    expected = _fieller(times["cpu", 100], times["gpu", 100], paired=True)
    got = (gpu.tta_speedup, gpu.tta_speedup_ci_low, gpu.tta_speedup_ci_high)
    assert got == pytest.approx(expected, rel=1e-9) and "paired" in gpu.tta_ci_method
    assert set(table[table.best_batch_size].index) == {("cpu", 500), ("gpu", 100)}
    (best,) = tta.best_against_best(table.reset_index(), runs, "cpu").to_dict("records")
    assert (best["device_batch_size"], best["baseline_batch_size"]) == (100, 500)
    assert best["baseline_time_to_target_s_mean"] == pytest.approx(np.mean(times["cpu", 500]), rel=1e-12)
    expected = _fieller(times["cpu", 500], times["gpu", 100], paired=False)
    got = (best["tta_speedup"], best["tta_speedup_ci_low"], best["tta_speedup_ci_high"])
    assert got == pytest.approx(expected, rel=1e-9) and "independent" in best["tta_ci_method"]
