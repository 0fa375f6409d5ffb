"""Issue 19: workloads - their config, the crossover sentence, the geometric mean."""

import copy

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from crafted import crafted_tables, make_record
from mnist_speedup.analysis import aggregate, scaling
from mnist_speedup.config import parse as config_check
from mnist_speedup.records import run_record as records
from mnist_speedup.records import seal
from mnist_speedup.report import crossover

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
BASE = {
    "mirrors": ["/data/mnist"],
    "devices": {"cpu": {"type": "cpu", "threads": 2}, "cpu1": {"type": "cpu", "threads": 1}},
    "seeds": [1, 2],
    "batch_sizes": [100],
    "epochs": 3,
}


def parsed(**changes) -> dict:
    return config_check.parse(copy.deepcopy(BASE) | changes, None, SCHEMA, gpus=[])


def refused(workloads) -> str:
    with pytest.raises(config_check.ConfigError) as err:
        parsed(workloads=workloads)
    assert "Fix:" in str(err.value)
    return str(err.value)


# ------------------------------------------------------------ config


def test_the_default_is_the_article_network_with_every_key_filled_in():
    assert parsed()["workloads"] == {"mlp": {"type": "mlp", "hidden": [800, 800], "dropout": [0.2, 0.5, 0.5]}}
    cnn = parsed(workloads={"c": {"type": "cnn", "dense": 64}})["workloads"]["c"]
    assert cnn == {"type": "cnn", "filters": [32, 64], "kernel": 5, "pool": 2, "dense": 64, "dropout": 0.5}
    # writing the defaults out is the same workload (so it reruns nothing)
    assert parsed(workloads={"mlp": {"type": "mlp", "dropout": [0.2, 0.5, 0.5]}}) == parsed()
    # dropout follows the hidden layers when it is left out
    assert parsed(workloads={"w": {"type": "mlp", "hidden": [64]}})["workloads"]["w"]["dropout"] == [0.2, 0.5]


@pytest.mark.parametrize(
    "workloads, fragment",
    [
        ({"m": {"type": "rnn"}}, "config key `workloads.m.type`: unknown workload type 'rnn'"),
        ({"m": {"hidden": [8]}}, "has no `type`"),
        ({"m": {"type": "mlp", "hidden": [0]}}, "0 is not a positive width"),
        ({"m": {"type": "mlp", "hidden": [20000]}}, "20000 is wider than 16384"),
        ({"m": {"type": "mlp", "hidden": [1.5]}}, "1.5 is not a positive whole number"),
        ({"m": {"type": "mlp", "hidden": ["wide"]}}, "'wide' is not a positive whole number"),
        ({"m": {"type": "mlp", "hidden": []}}, "is an empty list (an MLP needs at least one hidden layer)"),
        ({"m": {"type": "mlp", "dropout": [0.2, 1.0, 0.5]}}, "is not a dropout rate in [0, 1)"),
        ({"m": {"type": "mlp", "dropout": [-0.1, 0.5, 0.5]}}, "is not a dropout rate in [0, 1)"),
        ({"m": {"type": "mlp", "dropout": [0.2, 0.5]}}, "has 2 rates for 2 hidden layers"),
        ({"m": {"type": "mlp", "dropout": 0.5}}, "0.5 is one rate, and an MLP takes one per layer"),
        ({"m": {"type": "mlp", "filters": [8]}}, "['filters'] is not a key of a mlp workload"),
        ({"c": {"type": "cnn", "filters": [8, 8, 8, 8, 8]}}, "leave no spatial size (28 -> 14 -> 7 -> 3 -> 1 -> 0)"),
        ({"c": {"type": "cnn", "pool": 29}}, "29 is greater than the maximum of 28"),
        ({"c": {"type": "cnn", "dropout": 1}}, "is not a dropout rate in [0, 1)"),
        ({"../x": {"type": "mlp"}}, "label '../x' is not safe in a file path"),
        ({"Wide": {"type": "mlp"}, "wide": {"type": "mlp"}}, "labels 'Wide' and 'wide' differ only in case"),
        ({1060: {"type": "mlp"}}, "label 1060 is a number, not text"),
        ({}, "config key `workloads`: is empty"),
    ],
)
def test_bad_workloads_are_refused_at_parse_time_with_a_fix(workloads, fragment):
    assert fragment in refused(workloads)


# ------------------------------------------------------------ records


def test_a_record_from_before_workloads_is_refused_with_the_fix():
    record = make_record()
    record["schema_version"] = 2
    record = seal.seal(record)
    with pytest.raises(
        records.RecordError,
        match="schema_version 2 was written by an earlier version.*before workloads.*Fix: delete it",
    ):
        records.check(record)


def test_a_record_whose_flops_do_not_fit_its_workload_is_refused():
    record = make_record(workload_spec={"type": "mlp", "hidden": [32]})
    record["flops"]["per_step"] = make_record()["flops"]["per_step"]  # the 800-800 network's count
    record = seal.seal(record)
    with pytest.raises(records.RecordError, match="`flops.per_step` is .* but MLP 784-32-10 costs"):
        records.check(record)


def test_one_label_with_two_specs_cannot_be_compared(tmp_path):
    runs = [make_record(d, 100, s) for d in ("cpu", "cpu1") for s in (1, 2)]
    runs[-1] = make_record("cpu1", 100, 2, workload_spec={"type": "mlp", "hidden": [800, 800], "dropout": [0, 0, 0]})
    summary, *_ = crafted_tables(tmp_path, runs)
    with pytest.raises(records.RecordError, match="`workload_spec` is .* \\(workload mlp\\)"):
        aggregate.check_like_with_like(summary, "cpu")


def test_each_workload_is_compared_with_its_own_baseline_runs(tmp_path):
    small = {"type": "mlp", "hidden": [32]}
    runs = [make_record(d, 100, s, epoch_s=(1.0, t, t)) for d, t in (("cpu", 2.0), ("cpu1", 4.0)) for s in (1, 2, 3)]
    runs += [
        make_record(d, 100, s, epoch_s=(1.0, t, t), workload="small", workload_spec=small)
        for d, t in (("cpu", 1.0), ("cpu1", 0.5))
        for s in (1, 2, 3)
    ]
    _, speedup, *_ = crafted_tables(tmp_path, runs)
    by = speedup.set_index(["workload", "device"])
    assert by.loc[("mlp", "cpu1"), "speedup"] == pytest.approx(0.5)
    assert by.loc[("small", "cpu1"), "speedup"] == pytest.approx(2.0)
    assert by.loc[("small", "cpu1"), "workload_words"] == "MLP 784-32-10"
    assert by.loc[("small", "cpu1"), "flops_per_step"] < by.loc[("mlp", "cpu1"), "flops_per_step"]


# ------------------------------------------------------------ the crossover sentence


def _rows(points):
    """(FLOPs per step, low, high) -> speedup rows; the estimate mid-interval."""
    return pd.DataFrame(
        [(f, lo, hi, (lo + hi) / 2) for f, lo, hi in points],
        columns=["flops_per_step", "speedup_ci_low", "speedup_ci_high", "speedup"],
    ).sample(frac=1, random_state=0)  # any order in, sorted by size


def test_faster_from_a_size_up():
    rows = _rows([(1e6, 0.9, 1.1), (3e6, 0.95, 1.2), (12e6, 1.3, 1.5), (50e6, 1.7, 2.1)])
    assert crossover.crossover(rows, "cpu", "cpu1") == (
        "cpu and cpu1 cannot be told apart up to 3 MFLOP per step; "
        "cpu is faster than cpu1 from 12 MFLOP per step up (1.40×-1.90×)."
    )


def test_slower_up_to_a_size():
    rows = _rows([(1e6, 0.5, 0.7), (2e6, 0.6, 0.8), (40e6, 0.9, 1.3)])
    assert crossover.crossover(rows, "gpu", "cpu") == (
        "gpu is slower than cpu up to 2 MFLOP per step (0.60×-0.70×); from 40 MFLOP per step up they cannot be "
        "told apart."
    )


def test_never_told_apart():
    rows = _rows([(1e6, 0.9, 1.1), (1e9, 0.8, 1.3)])
    assert crossover.crossover(rows, "gpu", "cpu") == (
        "gpu and cpu cannot be told apart at any of these sizes (1 MFLOP to 1 GFLOP per step)."
    )


def test_both_slower_then_faster():
    rows = _rows([(1e6, 0.4, 0.6), (5e6, 0.8, 1.2), (2e9, 3.0, 5.0), (8e9, 6.0, 10.0)])
    assert crossover.crossover(rows, "gpu", "cpu") == (
        "gpu is slower than cpu up to 1 MFLOP per step (0.50×); at 5 MFLOP per step they cannot be told apart; "
        "gpu is faster than cpu from 2 GFLOP per step up (4.00×-8.00×)."
    )


def test_faster_everywhere_and_no_interval():
    assert crossover.crossover(_rows([(1e6, 2.0, 3.0), (1e8, 4.0, 6.0)]), "gpu", "cpu") == (
        "gpu is faster than cpu at all 2 sizes, 1 MFLOP to 100 MFLOP per step (2.50×-5.00×)."
    )
    unknown = _rows([(1e6, float("nan"), float("nan"))])
    assert "have no interval at any of these sizes" in crossover.crossover(unknown, "gpu", "cpu")


# ------------------------------------------------------------ the geometric mean


def _summary(rng, workloads, true, seeds=3, drift=0.10, noise=0.03):
    """Runs of cpu (baseline) and gpu on several workloads, in blocks that
    share a drift; ``true`` is each workload's true speedup."""
    rows = []
    for w, speedup in zip(workloads, true):
        for seed in range(1, seeds + 1):
            shared = np.exp(rng.normal(0, drift))
            for device, t in (("cpu", 1.0), ("gpu", 1.0 / speedup)):
                rows.append(
                    {
                        "workload": w,
                        "device": device,
                        "batch_size": 100,
                        "seed": seed,
                        "origin": "local",
                        "machine_key": "m",
                        "steady_epoch_mean_s": t * shared * np.exp(rng.normal(0, noise)),
                    }
                )
    return pd.DataFrame(rows)


def test_geometric_mean_is_exact_without_noise():
    df = _summary(np.random.default_rng(0), ["a", "b"], [2.0, 8.0], drift=0.0, noise=0.0)
    (row,) = scaling.geometric_mean(df, "cpu").itertuples()
    assert row.geomean_speedup == pytest.approx(4.0) and row.workloads == 2
    assert row.geomean_ci_low == pytest.approx(4.0) and row.geomean_ci_high == pytest.approx(4.0)


def test_geometric_mean_interval_covers_the_truth():
    """800 simulated experiments (3 workloads, 3 blocks each, drift shared
    within a block): the 95% interval holds the true geometric mean 2.0 in
    at least 0.927 of them (3 standard errors below a true 0.95). With so
    few blocks the Welch-Satterthwaite interval is a little conservative
    (0.976 seen), so the upper bound only rules out a uselessly wide one."""
    rng = np.random.default_rng(19)
    true = [1.0, 2.0, 4.0]
    hits = 0
    for _ in range(800):
        (row,) = scaling.geometric_mean(_summary(rng, ["a", "b", "c"], true), "cpu").itertuples()
        hits += row.geomean_ci_low <= 2.0 <= row.geomean_ci_high
    assert 0.927 <= hits / 800 <= 0.99


@pytest.mark.parametrize(
    "low, high, side",
    [
        (0.85, 0.95, crossover.BELOW),
        (1.01, 1.2, crossover.ABOVE),
        (1.0, 1.2, crossover.APART),
        (0.8, 1.0, crossover.APART),
        (float("nan"), 2.0, crossover.UNKNOWN),
    ],
)
def test_an_interval_is_above_or_below_1_only_wholly(low, high, side):
    assert crossover.side(low, high) == side


def test_the_unpaired_log_ratio_has_welchs_degrees_of_freedom_by_hand():
    """Survivors of the 2026-12-05 mutation run: the Welch df replaced by
    n_b + n_d - 2, or with n_d + 1 in its denominator, passed. Two machines
    (so no paired design), unequal spreads and sizes; planted once: each of
    those mutants fails here."""
    import math
    import statistics

    b, d = [1.0, 1.2, 1.1], [0.5, 0.52, 0.61, 0.55]
    base = pd.DataFrame({"steady_epoch_mean_s": b, "machine_key": "a", "origin": "local", "seed": [1, 2, 3]})
    runs = pd.DataFrame({"steady_epoch_mean_s": d, "machine_key": "b", "origin": "local", "seed": [1, 2, 3, 4]})
    vb = statistics.variance(b) / (3 * statistics.mean(b) ** 2)
    vd = statistics.variance(d) / (4 * statistics.mean(d) ** 2)
    df = (vb + vd) ** 2 / (vb**2 / 2 + vd**2 / 3)
    got = scaling.log_ratio(base, runs)
    assert got.log == pytest.approx(math.log(statistics.mean(b) / statistics.mean(d)))
    assert got.var == pytest.approx(vb + vd) and got.df == pytest.approx(df)
    assert abs(df - 5) > 0.5  # the mutant's n_b + n_d - 2 differs from it
