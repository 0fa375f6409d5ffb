"""Frameworks side by side (issue 38.5): every pair of frameworks on the same hardware and precision,
with a paired interval and parity, in the report and in a figure."""

from crafted import crafted_tables, make_record, report_tables
from mnist_speedup.analysis import frameworks as pairs_of
from mnist_speedup.analysis import placing
from mnist_speedup.report import figure, framework_figure, markdown

TIMES = {"tensorflow": 2.0, "jax": 1.6, "pytorch": 2.5}


def _records(**extra):
    recs = []
    for label, fw in (("cpu", "tensorflow"), ("cpu-jax", "jax"), ("cpu-pt", "pytorch")):
        for s in (1, 2, 3):
            t = TIMES[fw] * (1 + 0.01 * s) + 0.004 * ((s * 7 + len(fw)) % 3)  # a shared drift, and some noise
            recs.append(
                make_record(
                    label,
                    100,
                    s,
                    epoch_s=(t, t, t * 1.001),
                    device_spec={"type": "cpu", "threads": 2, "framework": fw},
                    environment={"framework": fw},
                    **extra,
                )
            )
    return recs


def test_every_pair_of_frameworks_gets_a_paired_bounded_interval_and_parity(tmp_path):
    summary, _, _, _ = crafted_tables(tmp_path, _records(), target=0.5)
    assert placing.groups(summary) == [["cpu", "cpu-jax", "cpu-pt"]]
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
    assert placing.groups(summary) == [["cpu", "cpu-jax"]]


def test_the_report_compares_the_frameworks_and_the_figure_draws_them_side_by_side(tmp_path):
    summary, speedup, table, _ = crafted_tables(tmp_path, _records(), target=0.5)
    tables = report_tables(summary, speedup, table, "cpu", 0.5)
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
    from crafted import kept_pairs

    got, pairs, _ = kept_pairs(ROOT / "benchmarks" / "three-frameworks-2026-12-06" / "bundle-vm.tar.gz", tmp_path / "u")
    assert got == {
        ("tf", "jax"): ("0.98", "0.83", "1.15", "PASS"),
        ("tf", "pytorch"): ("0.63", "0.56", "0.70", "PASS"),
        ("jax", "pytorch"): ("0.64", "0.60", "0.70", "PASS"),
    }
    assert pairs.method.str.contains("paired means").all()


def _gpu_and_host(gpu_pt=0.1):
    """JAX and PyTorch on one GPU and on its host's CPU, in the same blocks (the lent GPU's experiment)."""
    times = {("cpu", "jax"): 2.0, ("cpu", "pytorch"): 3.0, ("gpu", "jax"): 0.05, ("gpu", "pytorch"): gpu_pt}
    recs = []
    for (kind, fw), t0 in times.items():
        spec = {"type": kind, "framework": fw, **({"index": 0} if kind == "gpu" else {"threads": 16})}
        for s in (1, 2, 3):
            noise = {1: 0.01, 2: -0.01, 3: 0.0}[s] if kind == "gpu" else 0.0  # the GPU's own, beside a shared drift
            t = t0 * (1 + 0.02 * s) * (1 + noise)
            recs.append(
                make_record(
                    f"{kind}-{fw}",
                    100,
                    s,
                    epoch_s=(t, t, t * 1.001),
                    device_spec=spec,
                    environment={"framework": fw, "gpu_name": "H100" if kind == "gpu" else None},
                )
            )
    return recs


def test_each_framework_s_gpu_is_compared_with_its_own_cpu(tmp_path):
    """Issue 39: with one baseline (cpu-jax), PyTorch's GPU is compared with PyTorch's CPU, not JAX's."""
    summary, speedup, table, _ = crafted_tables(tmp_path, _gpu_and_host(), baseline="cpu-jax", target=0.5)
    within = pairs_of.within(summary, "cpu-jax", 0.5, 0.005).set_index("second")
    assert list(within.index) == ["gpu-jax", "gpu-pytorch"] and list(within["first"]) == ["cpu-jax", "cpu-pytorch"]
    assert abs(within.loc["gpu-pytorch", "speedup"] - 30.0) < 0.5 and abs(within.loc["gpu-jax", "speedup"] - 40) < 1
    assert all(within.low < within.speedup) and all(within.speedup < within.high) and all(within.parity == "PASS")
    tables = report_tables(summary, speedup, table, "cpu-jax", 0.5)
    text = markdown.render(markdown.Report(tables, "cpu-jax", {"target_accuracy": 0.5}, {}, {}))
    section = text[text.index("## Speedup within each framework") : text.index("## Frameworks on the same hardware")]
    assert "| 100 | PyTorch | gpu-pytorch (H100, PyTorch) over cpu-pytorch (16 threads, PyTorch) | 30.00× |" in section


def test_with_one_framework_there_is_no_within_table(tmp_path):
    recs = [r for r in _gpu_and_host() if r["device_spec"]["framework"] == "jax"]
    summary, _, _, _ = crafted_tables(tmp_path, recs, baseline="cpu-jax", target=0.5)
    assert pairs_of.within(summary, "cpu-jax", 0.5, 0.005).empty
