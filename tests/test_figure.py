"""The figure from hand-made tables: single runs, several devices, bounds."""

import math

import pandas as pd

from mnist_speedup import aggregate, figure


def tables(seeds):
    rows = []
    for device, epoch_s in (("cpu", 10.0), ("gpu", 1.0)):
        for seed in seeds:
            rows.append({
                "device": device, "device_type": device, "host": "h", "batch_size": bs, "seed": seed,
                "steady_epoch_mean_s": epoch_s * (1 + 0.01 * seed) * bs / 100, "epoch_cv": 0.01,
                "samples_per_s": 1000 / epoch_s, "achieved_flops_per_s": 1e9,
                "calibrated_flops_per_s": 2e9, "test_accuracy": 0.9,
            } for bs in (100, 500))  # fmt: skip
    summary = pd.DataFrame([r for group in rows for r in group])
    return summary, aggregate.speedup_table(summary, "cpu")


def test_figure_with_single_runs_has_no_band_but_draws(tmp_path):
    summary, speedup = tables([1])
    assert speedup.speedup_ci_low.isna().all()
    fig = figure.draw(summary, speedup, "cpu", {"formats": ["png"]})
    paths = figure.save(fig, tmp_path / "speedup", ["png", "pdf"], 100)
    assert all(p.stat().st_size > 5_000 for p in paths)


def test_figure_shape_labels_and_bounds(tmp_path):
    summary, speedup = tables([1, 2, 3])
    fig = figure.draw(summary, speedup, "cpu", {"width_in": 7.0, "height_in": 3.0})
    assert tuple(fig.get_size_inches()) == (7.0, 3.0)
    ax_a, ax_b = fig.axes[:2]
    assert ax_a.get_xscale() == "log" and ax_a.get_yscale() == "log"
    assert "samples/s" in ax_a.get_ylabel() and "Batch size" in ax_b.get_xlabel()
    assert any(line.get_linestyle() == "--" for line in ax_a.get_lines())  # calibrated bounds
    assert any(math.isclose(line.get_ydata()[0], 1.0) for line in ax_b.get_lines())  # reference at 1
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "(a)" in texts and "(b)" in texts
    figure.save(fig, tmp_path / "s", ["pdf"], 300)
    assert b"/FontFile2" in (tmp_path / "s.pdf").read_bytes()  # TrueType fonts embedded
