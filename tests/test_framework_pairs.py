"""Frameworks side by side (issue 38.5): every pair of frameworks on the same hardware and precision,
with a paired interval and parity, in the report and in a figure."""

import pandas as pd

from conftest import crafted_tables, make_record
from mnist_speedup.analysis import drift
from mnist_speedup.analysis import frameworks as pairs_of
from mnist_speedup.report import figure, framework_figure, markdown

TIMES = {"tensorflow": 2.0, "jax": 1.6, "pytorch": 2.5}


def _records(**extra):
    recs = []
    for label, fw in (("cpu", "tensorflow"), ("cpu-jax", "jax"), ("cpu-pt", "pytorch")):
        for s in (1, 2, 3):
            t = TIMES[fw] * (1 + 0.01 * s) + 0.004 * ((s * 7 + len(fw)) % 3)  # a shared drift, and some noise
            recs.append(make_record(label, 100, s, epoch_s=(t, t, t * 1.001),
                                    device_spec={"type": "cpu", "threads": 2, "framework": fw},
                                    environment={"framework": fw}, **extra))  # fmt: skip
    return recs


def test_every_pair_of_frameworks_gets_a_paired_bounded_interval_and_parity(tmp_path):
    summary, _, _, _ = crafted_tables(tmp_path, _records(), target=0.5)
    assert pairs_of.groups(summary) == [["cpu", "cpu-jax", "cpu-pt"]]
    pairs = pairs_of.pairs(summary, 0.5, 0.005).set_index(["first", "second"])
    assert sorted(pairs.index) == [("cpu", "cpu-jax"), ("cpu", "cpu-pt"), ("cpu-jax", "cpu-pt")]
    row = pairs.loc[("cpu-jax", "cpu-pt")]
    assert abs(row.speedup - 1.6 / 2.5) < 0.01 and row.low < row.speedup < row.high
    assert "paired" in row.method and row.parity == "PASS"


def test_other_hardware_or_precision_is_no_pair(tmp_path):
    recs = _records()
    for r in recs:
        if r["device"] == "cpu-pt":
            r["device_spec"]["threads"] = 1
    summary, _, _, _ = crafted_tables(tmp_path, recs, target=0.5)
    assert pairs_of.groups(summary) == [["cpu", "cpu-jax"]]


def test_the_report_compares_the_frameworks_and_the_figure_draws_them_side_by_side(tmp_path):
    summary, speedup, table, _ = crafted_tables(tmp_path, _records(), target=0.5)
    tables = markdown.Tables(summary, speedup, table, pd.DataFrame(), drift.table(summary))
    text = markdown.render(
        markdown.Report(tables, "cpu", {"target_accuracy": 0.5}, {"speedup": [], "timeline": []}, {})
    )
    section = text[text.index("## Frameworks on the same hardware") :]
    assert "| PyTorch over JAX |" in section and "| JAX over TensorFlow |" in section
    assert "PASS" in section
    fig = framework_figure.draw(summary, labels={"cpu": "cpu (2 threads)"})
    paths = figure.save(fig, tmp_path / "frameworks", ["png"], 100)
    assert paths[0].stat().st_size > 5_000


def test_the_kept_three_framework_run_has_bounded_paired_intervals_and_parity_for_every_pair(tmp_path):
    """Issue 38's done criterion, kept (benchmarks/three-frameworks-2026-12-06/, config/three-frameworks.yaml on
    real MNIST, 3 seeds, the development VM): every pair of TensorFlow, JAX and PyTorch has a bounded paired
    interval and parity PASS; the figures are pinned to the printed digits."""
    from conftest import ROOT
    from mnist_speedup.analysis import aggregate, tta
    from mnist_speedup.records import bundle

    kept = ROOT / "benchmarks" / "three-frameworks-2026-12-06" / "bundle-vm.tar.gz"
    bundle.unpack(kept, tmp_path / "u")
    summary, curves = aggregate.load_runs([], [tmp_path / "u"], [])
    summary = summary.merge(tta.per_run(curves, 0.9), on=["workload", "device", "batch_size", "seed"])
    pairs = pairs_of.pairs(summary, 0.9, 0.005)
    got = {(a, b): (f"{s:.2f}", f"{lo:.2f}", f"{hi:.2f}", p)
           for a, b, s, lo, hi, p in zip(pairs["first"], pairs.second, pairs.speedup, pairs.low, pairs.high, pairs.parity)}  # fmt: skip
    assert got == {("tf", "jax"): ("0.98", "0.83", "1.15", "PASS"),
                   ("tf", "pytorch"): ("0.63", "0.56", "0.70", "PASS"),
                   ("jax", "pytorch"): ("0.64", "0.60", "0.70", "PASS")}  # fmt: skip
    assert pairs.method.str.contains("paired means").all()
