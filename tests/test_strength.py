"""Issue 22: unit tests for the code that decides which numbers reach the formulas."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from crafted import crafted_tables, make_record
from mnist_speedup.analysis import compare, stats
from mnist_speedup.config import design

# ------------------------------------------------------------ run order


DEVICES, BATCHES, SEEDS, WORKLOADS = ["cpu", "cpu1", "gpu"], [100, 500], [1, 2, 3], ["cnn", "mlp"]


def _runs_in_order(order):
    return [key for key, _ in sorted(order.items(), key=lambda kv: kv[1])]


def test_blocks_go_by_importance_then_seed_with_every_device_once():
    """The time budget's order (issue 39): the main workload at the article's batch size with 3 seeds, then its
    other batch sizes, then the other workloads, then further seeds; seed-major within each."""
    runs = _runs_in_order(design.block_order(DEVICES, BATCHES, [*SEEDS, 4], WORKLOADS, main_workload="mlp"))
    blocks = [runs[i : i + len(DEVICES)] for i in range(0, len(runs), len(DEVICES))]
    assert [(b[0][3], b[0][0], b[0][2]) for b in blocks] == [
        *((s, "mlp", 500) for s in SEEDS),
        *((s, "mlp", 100) for s in SEEDS),
        *((s, "cnn", bs) for s in SEEDS for bs in BATCHES),
        *((4, w, bs) for w in ["mlp", "cnn"] for bs in BATCHES),
    ]
    for block in blocks:
        assert sorted(d for _, d, _, _ in block) == DEVICES  # every device once
        assert len({(w, bs, s) for w, _, bs, s in block}) == 1  # one workload, batch size and seed per block


def test_the_shuffle_differs_across_blocks_and_is_reproducible():
    order = design.block_order(DEVICES, BATCHES, SEEDS, WORKLOADS)
    runs = _runs_in_order(order)
    shuffles = {tuple(d for _, d, _, _ in runs[i : i + 3]) for i in range(0, len(runs), 3)}
    assert len(shuffles) > 1
    # the order of devices and of the workloads after the main one does not matter
    assert design.block_order(list(reversed(DEVICES)), BATCHES, SEEDS, list(reversed(WORKLOADS)), "cnn") == order


def test_a_new_seed_appends_its_blocks():
    old = design.block_order(DEVICES, BATCHES, SEEDS, WORKLOADS)
    new = design.block_order(DEVICES, BATCHES, [*SEEDS, 4], WORKLOADS)
    assert {k: v for k, v in new.items() if k[3] != 4} == old
    assert min(v for k, v in new.items() if k[3] == 4) == len(old)


def test_priorities_run_calibrations_first_then_the_block_order():
    p = design.Priorities(DEVICES, BATCHES, SEEDS, WORKLOADS)
    runs = _runs_in_order(p.order)
    train = [p.train(*run) for run in runs]
    assert train == sorted(train, reverse=True) and len(set(train)) == len(train)
    calibrations = [p.calibration(w, d) for w in WORKLOADS for d in DEVICES]
    assert min(calibrations) > max(train) and len(set(calibrations)) == len(calibrations)
    assert p.train("cnn", "cpu", "100", "1") == p.train("cnn", "cpu", 100, 1)  # wildcards arrive as text


# ------------------------------------------------------------ pairing


def _frame(device, values, seeds):
    return pd.DataFrame({"device": device, "seed": seeds, "t": values, "machine_key": "m", "origin": "local"})


def test_each_run_is_paired_with_the_baseline_run_of_its_own_block():
    seeds = [3, 1, 2]  # rows not in seed order: a sort of one side only would mispair them
    base = _frame("cpu", [10.0, 12.0, 15.0], seeds)
    device = _frame("gpu", [5.2, 5.9, 7.6], [1, 2, 3])  # seed 1 -> 5.2, 2 -> 5.9, 3 -> 7.6
    r = compare.compare(base, device, "t")
    right = stats.paired_fieller_ratio([12.0, 15.0, 10.0], [5.2, 5.9, 7.6])  # by seed
    wrong = stats.paired_fieller_ratio([10.0, 12.0, 15.0], [5.2, 5.9, 7.6])  # by row
    assert r.method == stats.PAIRED_METHOD
    assert (r.low, r.high) == pytest.approx((right.low, right.high))
    assert abs(right.low - wrong.low) > 0.05 or not wrong.bounded  # the two pairings differ


def test_the_paired_interval_by_hand():
    a, b = np.array([12.0, 15.0, 10.0]), np.array([5.2, 5.9, 7.6])
    n, ma, mb = 3, a.mean(), b.mean()
    cov = np.cov(a, b, ddof=1)
    t2 = 4.302652729911275**2  # t(0.975, 2)
    qa, qb, qc = mb**2 - t2 * cov[1, 1] / n, ma * mb - t2 * cov[0, 1] / n, ma**2 - t2 * cov[0, 0] / n
    low, high = (qb - math.sqrt(qb**2 - qa * qc)) / qa, (qb + math.sqrt(qb**2 - qa * qc)) / qa
    r = stats.paired_fieller_ratio(a, b)
    assert (r.low, r.high) == pytest.approx((low, high), rel=1e-9)


def test_time_to_accuracy_pairs_the_same_seeds(tmp_path):
    # cpu reaches the target at epoch 2 in seeds 1, 3 and epoch 3 in seed 2; cpu1 the other way round
    fast, slow = [0.5, 0.96, 0.97], [0.5, 0.6, 0.96]
    recs = [
        make_record("cpu", 100, s, epoch_s=[1.0, 1.0, 1.0], val_accuracy=fast if s != 2 else slow) for s in (1, 2, 3)
    ]
    recs += [
        make_record("cpu1", 100, s, epoch_s=[2.0, 2.0, 2.0 + 0.1 * s], val_accuracy=slow if s != 2 else fast)
        for s in (1, 2, 3)
    ]
    _, _, table, _ = crafted_tables(tmp_path, recs)
    row = table[table.device == "cpu1"].iloc[0]
    base_t = {1: 2.0, 2: 3.0, 3: 2.0}  # cpu's time to target by seed
    dev_t = {1: 2.0 + 2.0 + 2.1, 2: 4.0, 3: 2.0 + 2.0 + 2.3}
    right = stats.paired_fieller_ratio([base_t[s] for s in (1, 2, 3)], [dev_t[s] for s in (1, 2, 3)])
    assert row.tta_speedup == pytest.approx(right.estimate)
    assert (row.tta_speedup_ci_low, row.tta_speedup_ci_high) == pytest.approx((right.low, right.high))


# ------------------------------------------------------------ best against best


def test_best_against_best_when_the_best_batch_sizes_differ(tmp_path):
    recs = []
    for s in (1, 2, 3):  # cpu is fastest to target at 100, cpu1 at 500
        acc = [0.5, 0.96, 0.97]
        recs.append(make_record("cpu", 100, s, epoch_s=[1.0, 1.0 + 0.01 * s, 1.0], val_accuracy=acc))
        recs.append(make_record("cpu", 500, s, epoch_s=[3.0, 3.0 + 0.01 * s, 3.0], val_accuracy=acc))
        recs.append(make_record("cpu1", 100, s, epoch_s=[4.0, 4.0 + 0.02 * s, 4.0], val_accuracy=acc))
        recs.append(make_record("cpu1", 500, s, epoch_s=[2.0, 2.0 + 0.02 * s, 2.0], val_accuracy=acc))
    _, _, table, _ = crafted_tables(tmp_path, recs)
    from mnist_speedup.analysis import tta

    summary, _, _, curves = crafted_tables(tmp_path / "again", recs)
    per_run = tta.per_run(curves, 0.95)
    best = tta.best_against_best(table, per_run, "cpu")
    row = best.iloc[0]
    assert (row.device, row.device_batch_size, row.baseline_batch_size) == ("cpu1", 500, 100)
    base = [1.0 + 1.0 + 0.01 * s for s in (1, 2, 3)]
    dev = [2.0 + 2.0 + 0.02 * s for s in (1, 2, 3)]
    expected = stats.fieller_ratio(base, dev)  # unpaired: different batch sizes are different blocks
    assert row.tta_speedup == pytest.approx(expected.estimate)
    assert (row.tta_speedup_ci_low, row.tta_speedup_ci_high) == pytest.approx((expected.low, expected.high))
    assert row.tta_ci_method == stats.CI_METHOD.format(level="95%")


# ------------------------------------------------------------ spread (a pure unit test, out of the slow module)


def test_spread_and_seeds_needed_by_hand(tmp_path):
    times = {
        "base": [[10.0, 10.0], [11.0, 11.0], [12.0, 12.0]],  # seed means 10, 11, 12: CV = 1/11
        "fast": [[1.0, 1.2], [1.1, 1.1], [1.2, 1.0]],  # seed means 1.1 each: CV 0; epoch CVs 0.1286, 0, 0.1286
    }
    recs = [
        make_record(d, 100, seed, [5.0, *epochs])
        for d, per_seed in times.items()
        for seed, epochs in enumerate(per_seed, start=1)
    ]
    _, table, _, _ = crafted_tables(tmp_path, recs, baseline="base")
    table = table.set_index("device")
    assert table.loc["base", "cv_seeds"] == pytest.approx(1 / 11)
    assert table.loc["fast", "cv_seeds"] == pytest.approx(0.0)
    epoch_cv = math.sqrt(0.02) / 1.1  # std of (1.0, 1.2) / mean
    assert table.loc["fast", "cv_epochs"] == pytest.approx(2 * epoch_cv / 3)
    assert table.loc["fast", "speedup"] == pytest.approx(11 / 1.1)
    # seeds for +/-5%: need t(2n-2) * sqrt((1/11)^2 / n) <= 0.05, i.e. n >= t^2 * 3.306;
    # n = 14: t(26) = 2.056 -> 13.97 <= 14; n = 13: t(24) = 2.064 -> 14.08 > 13
    assert table.loc["fast", "seeds_for_5pct_ci"] == 14


# ------------------------------------------------------------ every check of the record reader


def _load(tmp_path, record):
    import json

    from mnist_speedup.records import run_record as records
    from mnist_speedup.records import seal
    from mnist_speedup.spec import run

    path = run.run_path(tmp_path, record["workload"], record["device"], record["batch_size"], record["seed"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(seal.seal(record)))
    return records.load(path)


def _change(record, dotted, value):
    node = record
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    return record


@pytest.mark.parametrize(
    "dotted, value, field",
    [
        ("warmup_epochs", -1, "warmup_epochs"),  # the warm-up range alone
        ("quality.epoch_val_accuracy", [0.5, 1.5, 0.7], "quality.epoch_val_accuracy"),
        ("quality.val_accuracy", 1.2, "quality.val_accuracy"),
        ("timing.first_epoch_s", 2.5, "timing.first_epoch_s"),  # first epoch said otherwise
        ("timing.steady_epoch_mean_s", 0.01, "timing.steady_epoch_mean_s"),
        ("timing.samples_per_s", -5, "timing.samples_per_s"),
        ("flops.achieved_per_s", -1.0, "flops.achieved_per_s"),
        ("quality.test_accuracy", 7.5, "quality.test_accuracy"),
    ],
)
def test_each_check_of_the_reader_refuses_a_record_that_only_it_catches(tmp_path, dotted, value, field):
    from mnist_speedup.records import run_record as records

    good = make_record("cpu", 100, 1)
    assert _load(tmp_path / "good", good)  # the same record, unchanged, passes every check
    with pytest.raises(records.RecordError, match=rf"`{field}`"):
        _load(tmp_path / "bad", _change(make_record("cpu", 100, 1), dotted, value))


# ------------------------------------------------------------ survivors of the mutation sample, now caught


def test_the_baseline_against_itself_is_exactly_one(tmp_path):
    recs = [make_record(d, 100, s) for d in ("cpu", "cpu1") for s in (1, 2)]
    _, speedup, table, _ = crafted_tables(tmp_path, recs, target=0.6)
    base, base_tta = speedup.set_index("device").loc["cpu"], table.set_index("device").loc["cpu"]
    assert (base.speedup, base.speedup_ci_low, base.speedup_ci_high) == (1.0, 1.0, 1.0)
    assert (base_tta.tta_speedup, base_tta.tta_speedup_ci_low, base_tta.tta_speedup_ci_high) == (1.0, 1.0, 1.0)


def test_a_record_with_no_samples_per_epoch_is_refused(tmp_path):
    from mnist_speedup.records import run_record as records

    record = make_record("cpu", 100, 1, samples_per_epoch=0, steps_per_epoch=0)
    record["timing"]["samples_per_s"] = 0.0  # consistent, so only the sign check can refuse it
    with pytest.raises(records.RecordError, match=r"`timing.samples_per_s`"):
        _load(tmp_path, record)


def test_the_epoch_times_field_is_named_exactly(tmp_path):
    from mnist_speedup.records import run_record as records

    with pytest.raises(records.RecordError, match=r"`timing\.epoch_s` must hold 3 finite positive epoch times"):
        _load(tmp_path, make_record("cpu", 100, 1, epoch_s=[1.0, 1.0, 90_000.0]))  # one epoch over a day


def test_best_against_best_carries_its_note_column(tmp_path):
    from mnist_speedup.analysis import tta

    acc = [0.5, 0.96, 0.97]
    recs = [
        make_record(d, bs, s, epoch_s=[1.0, 1.0 + 0.01 * s, 1.0], val_accuracy=acc)
        for d in ("cpu", "cpu1")
        for bs in (100, 500)
        for s in (1, 2)
    ]
    _, _, table, curves = crafted_tables(tmp_path, recs)
    best = tta.best_against_best(table, tta.per_run(curves, 0.95), "cpu")
    assert list(best.columns)[-2:] == ["tta_ci_method", "tta_note"]


@pytest.mark.parametrize(
    "changes, field, fragment",
    [
        ({"steps_per_epoch": 11}, "samples_per_epoch", "is not steps_per_epoch (11) times batch_size"),
        ({"energy": {"mean_watts": -3.0}}, "energy.mean_watts", "is -3.0, outside [0, 100000]"),
        (
            {"energy": {"epoch_joules": [1.0, -2.0]}},
            "energy.epoch_joules",
            "holds an item that is -2.0, outside [0, 1e+09]",
        ),
        ({"memory": {"gpu_peak_bytes": -5}}, "memory.gpu_peak_bytes", "is -5, outside [0, 1.1259e+15]"),
    ],
)
def test_each_physical_check_names_its_field(tmp_path, changes, field, fragment):
    from mnist_speedup.records import run_record as records

    with pytest.raises(records.RecordError, match=rf"`{re.escape(field)}` {re.escape(fragment)}.*Fix:"):
        _load(tmp_path, make_record("cpu", 100, 1, **changes))


def test_a_url_that_does_not_parse_to_its_host_says_so():
    from mnist_speedup.data import urls

    with pytest.raises(ValueError, match=r"mirror 'https://alice:\*\*\*@host/' has a user name or password holding"):
        urls.mirror_kind("https://alice:a#b@host/")


def test_the_cost_columns_are_the_same_with_and_without_prices():
    """A survivor of the 2026-12-05 mutation run (re-run alone): a cost key
    misspelt where no price is given passed, and speedup.csv would have
    changed its columns with the config. Planted once: that mutant fails."""
    r = stats.Ratio(2.0, 1.5, 2.5, 4.0)
    priced = compare.cost(30.0, r, 2.0, 1.0, "cost_per_epoch")
    unpriced = compare.cost(30.0, r, None, 1.0, "cost_per_epoch")
    assert set(priced) == set(unpriced) == {"cost_per_epoch", "cost_ratio", "cost_ratio_ci_low", "cost_ratio_ci_high"}
    assert priced["cost_ratio"] == pytest.approx(1.0) and priced["cost_ratio_ci_high"] == pytest.approx(1.25)


def test_two_blocks_are_already_a_paired_design():
    """A survivor of the 2026-12-05 mutation run: `len(base) < 3` (no paired
    interval at exactly 2 seeds) passed. Planted once: it fails here."""
    rows = {"machine_key": "m", "origin": "local", "seed": [1, 2], "steady_epoch_mean_s": [1.0, 1.1]}
    assert compare.paired_design(pd.DataFrame(rows), pd.DataFrame(rows))
    assert not compare.paired_design(
        pd.DataFrame({**rows, "seed": [1]} | {"steady_epoch_mean_s": [1.0]}), pd.DataFrame(rows)
    )  # one block: no interval either way
