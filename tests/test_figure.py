"""The figures from crafted run records: 1 device, 2 devices with n = 2,
3 devices with n = 5; legends that cover no data; clipped intervals."""

import numpy as np
import pytest

from crafted import crafted_tables, make_record
from mnist_speedup.analysis import tta
from mnist_speedup.report import figure
from mnist_speedup.spec.devices import labels_of


def records(devices, seeds, batch_sizes=(100, 500), spread=0.01):
    rng = np.random.default_rng(0)
    out = []
    for d, (device, epoch_s) in enumerate(devices.items()):
        for bs in batch_sizes:
            for seed in seeds:
                t = epoch_s * bs / 100 * (1 + spread * rng.standard_normal())
                acc = [min(0.99, 0.8 + 0.05 * i + 0.01 * d) for i in range(4)]
                out.append(make_record(device, bs, seed, [t * 1.5, t, t, t], acc, threads=d + 1))
    return out


def draw(tmp_path, devices, seeds, **kw):
    summary, speedup, _, curves = crafted_tables(tmp_path, records(devices, seeds, **kw), baseline="cpu", target=0.9)
    fig = figure.draw(summary, speedup, "cpu", {"formats": ["png"]}, tta.mean_curves(curves), 0.9, labels_of(summary))
    return fig, summary, speedup


def _data_boxes(fig):
    renderer = fig.canvas.get_renderer()
    return [ax.get_window_extent(renderer) for ax in fig.axes]


def _legend_box(fig):
    return fig.legends[0].get_window_extent(fig.canvas.get_renderer())


@pytest.mark.parametrize(
    "devices, seeds",
    [
        ({"cpu": 10.0}, [1]),
        ({"cpu": 10.0, "gpu": 1.0}, [1, 2]),
        ({"cpu": 10.0, "cpu1": 14.0, "gpu": 1.0}, [1, 2, 3, 4, 5]),
    ],
    ids=["1 device", "2 devices n=2", "3 devices n=5"],
)
def test_figure_draws_every_case_with_the_legend_off_the_data(tmp_path, devices, seeds):
    fig, _, _ = draw(tmp_path, devices, seeds)
    fig.canvas.draw()
    legend = _legend_box(fig)
    boxes = _data_boxes(fig)
    assert not any(legend.overlaps(box) for box in boxes)
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :])
    paths = figure.save(fig, tmp_path / "speedup", ["png", "pdf"], 150)
    assert all(p.stat().st_size > 5_000 for p in paths)


def test_figure_shape_labels_and_reference_lines(tmp_path):
    fig, summary, speedup = draw(tmp_path, {"cpu": 10.0, "gpu": 1.0}, [1, 2, 3])
    assert tuple(fig.get_size_inches()) == (7.0, 3.2)
    ax_a, ax_b, ax_c = fig.axes[:3]
    assert ax_a.get_xscale() == "log" and ax_a.get_yscale() == "log"
    assert "samples/s" in ax_a.get_ylabel() and "Batch size" in ax_b.get_xlabel()
    assert "Validation accuracy" in ax_c.get_ylabel()
    assert any(np.allclose(line.get_ydata(), 1.0) for line in ax_b.get_lines())  # reference at 1
    assert any(np.allclose(line.get_ydata(), 90.0) for line in ax_c.get_lines())  # target
    assert ax_b.get_ylim()[0] == 0  # a speedup axis never goes below 0
    assert len([t for t in ax_a.get_yticklabels() if t.get_text()]) >= 3
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "gpu (2 threads)" in legend
    assert any("1× = no speedup" in t for t in legend) and any("95% CI" in t for t in legend)
    assert fig.legends[0].get_title().get_text() == ""
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert {"(a)", "(b)", "(c)"} <= set(texts)
    figure.save(fig, tmp_path / "s", ["pdf"], 300)
    assert b"/FontFile2" in (tmp_path / "s.pdf").read_bytes()  # TrueType fonts embedded


def test_panels_a_and_b_use_one_estimator(tmp_path):
    """Epoch times [0.05, 0.4, 3.0] s: a mean of per-run rates would show the
    device faster than the baseline while the speedup says slower."""
    recs = [make_record("cpu", 100, s, [1.0, 1.0, 1.0]) for s in (1, 2, 3)]
    recs += [make_record("gpu", 100, s, [t, t, t], threads=2) for s, t in zip((1, 2, 3), (0.05, 0.4, 3.0))]
    _, speedup, _, _ = crafted_tables(tmp_path, recs)
    rows = speedup.set_index("device")
    throughput_ratio = rows.loc["gpu", "samples_per_s"] / rows.loc["cpu", "samples_per_s"]
    assert throughput_ratio == pytest.approx(rows.loc["gpu", "speedup"])


def test_clipped_interval_is_marked_at_the_edge(tmp_path):
    recs = [make_record("cpu", 100, s, [1.0, t, t]) for s, t in zip((1, 2, 3), (1.0, 1.02, 1.01))]
    recs += [
        make_record("gpu", 100, s, [0.5, t, t], threads=2, environment={"machine_id": "other"})
        for s, t in zip((1, 2, 3), (0.1, 0.2, 0.15))
    ]
    summary, speedup, _, curves = crafted_tables(tmp_path, recs)
    gpu = speedup[speedup.device == "gpu"].iloc[0]
    fig = figure.draw(summary, speedup, "cpu", None, tta.mean_curves(curves), 0.9)
    ax_b = fig.axes[1]
    top = ax_b.get_ylim()[1]
    assert np.isfinite(gpu.speedup_ci_high) and gpu.speedup_ci_high > top  # a bounded interval past the axis
    assert any(line.get_marker() == "^" for line in ax_b.get_lines())


def test_a_speedup_without_interval_is_drawn_hollow(tmp_path):
    recs = [make_record("cpu", 100, s, [1.0, t, t]) for s, t in zip((1, 2), (1.0, 1.02))]
    recs += [make_record("gpu", 100, s, [0.5, t, t], threads=2) for s, t in zip((1, 2), (0.1, 0.4))]
    summary, speedup, _, curves = crafted_tables(tmp_path, recs)
    assert not np.isfinite(speedup[speedup.device == "gpu"].speedup_ci_high).any()
    fig = figure.draw(summary, speedup, "cpu", None, tta.mean_curves(curves), 0.9)
    assert any(line.get_markerfacecolor() == "white" for line in fig.axes[1].get_lines())


def test_dollar_in_title_is_plain_text(tmp_path):
    summary, speedup, _, _ = crafted_tables(tmp_path, records({"cpu": 10.0, "gpu": 1.0}, [1, 2]))
    fig = figure.draw(summary, speedup, "cpu", {"title": "costs $5 and $6"})
    assert fig.texts[-1].get_text() == r"costs \$5 and \$6"
    figure.save(fig, tmp_path / "fig", ["png"], 80)  # mathtext would fail on an odd number of $


def test_twelve_devices_get_twelve_colours():
    """Reliability round 6 (7): the colorblind palette has ten colours and seaborn starts it again past ten,
    so two of twelve devices shared a colour in every panel and the legend. Planted once: seaborn's own
    `n_colors` back in figure._setup failed here."""
    import pandas as pd

    summary = pd.DataFrame({"device": [f"d{i:02d}" for i in range(12)]})
    _, colours, _ = figure._setup(summary, "d00", {"palette": "colorblind"}, None)
    assert len(set(colours.values())) == 12
    assert figure.distinct_colours("colorblind", 3) == list(figure.sns.color_palette("colorblind"))[:3]


def _labelled(axis) -> dict[float, str]:
    """Each major tick within the axis's view, with its label."""
    lo, hi = sorted(axis.get_view_interval())
    formatter = axis.get_major_formatter()
    return {v: formatter(v, i) for i, v in enumerate(axis.get_majorticklocs()) if lo <= v <= hi}


def _readable(point: float, ticks) -> bool:
    """Between two labelled ticks, or beyond the outermost by no more than labelled ticks are apart."""
    ticks = sorted(ticks)
    widest = max(b / a for a, b in zip(ticks, ticks[1:]))
    return ticks[0] <= point <= ticks[-1] or max(point / ticks[-1], ticks[0] / point) <= widest


@pytest.mark.parametrize("batch_sizes", [(500,), (100, 200, 500)], ids=["one batch size", "three"])
def test_every_log_axis_labels_ticks_each_point_can_be_read_against_and_no_label_twice(tmp_path, batch_sizes):
    """Issue 49 (5): on whole figures, with one and with three batch sizes, every log axis labels distinct
    ticks that each point can be read against (the kept figure's two broken axes are reproduced below)."""
    devices = {"cpu": 0.0065, "cpu1": 0.009, "cpu2": 0.0125}
    fig, _, _ = draw(tmp_path, devices, [1, 2, 3], batch_sizes=batch_sizes)
    throughput, _, accuracy = fig.axes[:3]
    for axis, points in (
        (
            throughput.yaxis,
            [y for line in throughput.lines if line.get_transform() == throughput.transData for y in line.get_ydata()],
        ),
        (
            accuracy.xaxis,
            [x for line in accuracy.lines if line.get_transform() == accuracy.transData for x in line.get_xdata()],
        ),
    ):
        labelled = _labelled(axis)
        labels = [label for label in labelled.values() if label]
        assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
        assert all(_readable(float(p), labelled) for p in points if np.isfinite(p)), (labels, sorted(points)[-3:])


@pytest.mark.parametrize(
    "limits, points",
    [((7_000, 16_000), [8_600, 13_500, 15_200]), ((1.4, 11.0), [1.6, 2.4, 5.0, 10.5]), ((150, 390), [170, 380])],
    ids=["the kept panel (a)", "the kept panel (c)", "narrow"],
)
def test_the_kept_figures_log_axes_are_readable_now(limits, points):
    """The kept three-framework figure's two axes, reproduced: panel (a) from 7,000 to 16,000 samples/s with
    points above 10,000, panel (c) from 1.4 to 11 s. Planted once: the old locator and formatter failed the
    first two cases (no label above 10,000; "2" twice)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot(points, points, "o")
    ax.set_xscale("log")
    ax.set_xlim(*limits)
    figure._log_axis(ax.xaxis, *limits)
    fig.canvas.draw()
    labelled = _labelled(ax.xaxis)
    labels = [label for label in labelled.values() if label]
    plt.close(fig)
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all(_readable(p, labelled) for p in points), (labels, points)
