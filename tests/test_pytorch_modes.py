"""PyTorch's modes (issue 50): eager, fused, compiled and captured train the same numbers, the config takes
the mode (``jit_compile: true`` as a synonym of ``compiled``) and refuses what cannot run, and the record
names the mode, its loop and (captured) its graphs."""

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from mnist_speedup.spec import devices, frameworks

PYTORCH = frameworks.declarations()["pytorch"]

#: one seed, a few steps in every mode, in one fresh process (torch.compile's settings are global there)
SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import torch, torch._dynamo, torch._inductor.config
    sys.path.insert(0, {package!r})
    torch._inductor.config.fallback_random = True  # compiled dropout draws eager's masks
    from mnist_speedup.measure import frameworks
    from mnist_speedup.spec import run, workloads
    workload = {{"type": "mlp", "hidden": [64, 64]}}
    rng = np.random.default_rng(0)
    x = rng.random((160, 784), dtype=np.float32)
    data = {{"x_train": x, "y_train": rng.integers(0, 10, 160).astype(np.uint8)}}
    out = {{}}
    for mode in {modes!r}:
        spec_d = {{"type": "cpu", "threads": 2, "framework": "pytorch", "precision": "float32", "mode": mode}}
        fw = frameworks.open_device(spec_d, seed=3)
        spec = run.RunSpec.with_defaults(workload="w", workload_spec=workload, device="cpu", device_spec=spec_d,
                                         batch_size=40, seed=3, epochs=2)
        training = fw.training(spec, data, 4, {{}})
        untimed = training.warm_up()["untimed_steps"]
        training.run_epoch()
        out[mode] = {{"weights": [p.detach().numpy().tolist() for p in training.model.parameters()], "untimed": untimed,
                      "loop": training.loop_words, "graphs": fw.graphs, "env": fw.environment()["torch_mode"]}}
    json.dump(out, sys.stdout)
    """
)


@pytest.mark.slow  # two torch.compile compilations (about 40 s on the 2-core VM); not serial
def test_every_mode_trains_the_same_weights_as_eager(tmp_path):
    """Four steps of one seed in each mode from the same weights, shuffles and (fallback_random) dropout masks:
    every weight within a relative 1e-5 of eager's. Planted once: the captured step without zeroing the gradients."""
    modes = list(PYTORCH.modes)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    script = SCRIPT.format(package=str(ROOT / "workflow"), modes=modes)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    import numpy as np

    for mode in modes[1:]:
        for mine, eager in zip(out[mode]["weights"], out["eager"]["weights"]):
            np.testing.assert_allclose(mine, eager, rtol=1e-5, atol=1e-7, err_msg=mode)
    assert {m: out[m]["env"] for m in modes} == {m: m for m in modes}
    assert "whole step compiled by torch.compile" in out["captured"]["loop"]
    graphs, breaks = out["captured"]["graphs"]
    assert graphs >= 1 and breaks >= 0 and out["eager"]["graphs"] == [None, None]
    assert out["captured"]["untimed"] == 3 and out["eager"]["untimed"] == 1  # the record counts the capture's steps


def _checked(spec):
    failures = []
    PYTORCH.check_spec("gpu", spec, lambda key, problem, fix: failures.append((key, problem, fix)))
    return failures


def test_jit_compile_is_the_compiled_mode_and_the_mode_is_part_of_the_device():
    old = {"type": "cpu", "threads": 2, "framework": "pytorch", "jit_compile": True}
    new = {"type": "cpu", "threads": 2, "framework": "pytorch", "mode": "compiled"}
    for spec in (old, new):
        devices.TYPES["cpu"].check_numerics("cpu", spec)
    assert old == new | {"jit_compile": False} and devices.checked_spec(old) == devices.checked_spec(new)
    eager = {"type": "cpu", "threads": 2, "framework": "pytorch"}
    captured = eager | {"mode": "captured"}
    assert devices.checked_spec(eager)["mode"] == "eager"
    assert devices.checked_spec(captured) != devices.checked_spec(eager)  # another device, like another precision
    assert devices.describe(captured) == "2 threads, PyTorch, captured step" and "XLA" not in devices.describe(old)


@pytest.mark.parametrize(
    ("spec", "key", "words"),
    [
        ({"mode": "warp"}, "mode", "'warp' is not a PyTorch mode"),
        ({"mode": "captured", "jit_compile": True}, "jit_compile", "beside mode 'captured'"),
        ({"mode": "eager", "jit_compile": True}, "jit_compile", "jit_compile: true means mode: compiled"),
        ({"mode": "captured", "precision": "mixed_float16"}, "mode", "loss scaling decides on the host"),
    ],
)
def test_a_mode_that_cannot_run_is_refused_with_the_fix(spec, key, words):
    [(found, problem, fix)] = _checked({"type": "gpu", "index": 0, "framework": "pytorch", **spec})
    assert found == f"devices.gpu.{key}" and words in problem + fix


def test_a_mode_on_a_framework_without_modes_is_refused():
    failures = []
    frameworks.declarations()["jax"].check_spec("c", {"mode": "fused"}, lambda *a: failures.append(a))
    assert failures and failures[0][0] == "devices.c.mode" and "has no training modes" in failures[0][1]


def test_the_loop_words_come_from_the_mode_also_for_the_host_input_pipeline():
    """An eager run with the host input pipeline was described as "one compiled call per step"."""
    from types import SimpleNamespace

    from mnist_speedup.measure import measurements
    from mnist_speedup.measure.frameworks.pytorch import training

    cpu, gpu = SimpleNamespace(type="cpu"), SimpleNamespace(type="cuda")
    host = measurements.loop_description(
        "host", 1, 100, "Python loop", f"one {training.step_words('eager', cpu)} per call"
    )
    assert host.startswith("one eager step per call, each batch sliced in host memory") and "compiled" not in host
    assert "CUDA graph" in training.step_words("captured", gpu) and "torch.compile" in training.step_words(
        "captured", cpu
    )
    assert training.adam_options("fused", cpu) == {"fused": True}
    assert (
        training.adam_options("captured", gpu) == {"capturable": True} and training.adam_options("captured", cpu) == {}
    )
    assert set(training.STEP_WORDS) == set(PYTORCH.modes)


def _mode_records(captured_s=1.5, eager_s=2.5):
    from crafted import make_record

    recs = []
    for label, mode, t in (("cpu-pt", "eager", eager_s), ("cpu-pt-captured", "captured", captured_s)):
        for s in (1, 2, 3):
            t_s = t * (1 + 0.01 * s) + 0.004 * ((s * 7 + len(mode)) % 3)  # a shared drift, and some noise
            spec = {"type": "cpu", "threads": 2, "framework": "pytorch", "mode": mode}
            recs.append(
                make_record(
                    label,
                    100,
                    s,
                    epoch_s=(t_s, t_s, t_s * 1.001),
                    device_spec=spec,
                    environment={"framework": "pytorch"},
                )
            )
    return recs


def test_a_mode_is_compared_with_its_eager_twin_paired_with_parity_in_the_report(tmp_path):
    """Devices that differ only in mode: the table of modes (captured over eager), not a framework pair.
    Planted once: the eager twin looked for at another precision (no row)."""
    from crafted import crafted_tables, report_tables
    from mnist_speedup.analysis import twins
    from mnist_speedup.report import markdown

    summary, speedup, table, _ = crafted_tables(tmp_path, _mode_records(), baseline="cpu-pt", target=0.5)
    assert set(summary["mode"]) == {"eager", "captured"}
    rows = twins.table(summary, 0.5, 0.005)
    [row] = rows[rows.kind == twins.MODE].itertuples()
    assert (row.device, row.twin) == ("cpu-pt-captured", "cpu-pt") and abs(row.speedup - 2.5 / 1.5) < 0.02
    assert row.low < row.speedup < row.high and "paired" in row.method and row.parity == "PASS"
    tables = report_tables(summary, speedup, table, "cpu-pt", 0.5)
    text = markdown.render(markdown.Report(tables, "cpu-pt", {"target_accuracy": 0.5}, {"speedup": []}, {}))
    section = text[text.index("## PyTorch modes on the same hardware") :]
    assert "| captured |" in section and f"{row.speedup:.2f}×" in section and "PASS (" in section
